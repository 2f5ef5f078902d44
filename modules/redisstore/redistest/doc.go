// Package redistest gives tests of code over Redis the servers they run
// against, once, so that no module writes its own redis-server start-up:
//
//   - the shared server named by ADK_TEST_REDIS_URL ([URL], [Client]),
//     with a key namespace per test that is deleted when the test ends
//     ([Namespace]);
//   - a redis-server of the test's own on a free loopback port, with any
//     settings (an append-only file, a memory limit, an eviction policy),
//     which the test may kill and start again ([StartServer]);
//   - a Redis Cluster of masters, with the steps of a slot move
//     ([StartCluster], [Cluster.NewSlotMove]), or of masters with
//     replicas, whose masters a test may kill and see failed over and
//     bring back as replicas ([StartClusterWith], [Cluster.Failover],
//     [Cluster.Rejoin]);
//   - a master, its replica and three Sentinels ([StartReplicated]).
//
// The servers run as the user running the tests and need redis-server
// (and, for a cluster, redis-cli) on PATH: apt-get install redis-server
// redis-tools. Each is killed and its directory removed when the test
// that started it ends. Nothing here stops, reconfigures or flushes the
// shared server.
//
// It plays the part pgx's pgxtest and River's riverdbtest play for
// theirs; [github.com/adkit/adk/modules/pgstore/pgstoretest] is its
// PostgreSQL twin. Like them it is for tests: its API may change in any
// release.
package redistest
