// Package pgstoretest gives tests of code over PostgreSQL the databases
// and servers they run against, once, so that no module writes its own
// schema set-up or initdb:
//
//   - the shared server named by ADK_TEST_POSTGRES_DSN ([DSN]), with a
//     throwaway schema per test, holding pgstore's tables or empty, and
//     dropped when the test ends ([TestSchema]);
//   - a PostgreSQL cluster of the test's own, initdb'd into a temporary
//     directory and run on a free loopback port, which the test may stop
//     (cleanly or as a crash would) and start again ([StartServer],
//     [NewServer]);
//   - a PgBouncer of the test's own in front of a server ([StartPgBouncer]),
//     with a throwaway login role that carries its settings ([NewRole]).
//
// A private server needs the PostgreSQL server binaries (apt-get install
// postgresql); run as root, the servers run as the postgres user (they
// refuse root), through runuser. Nothing here stops, reconfigures or
// writes outside its own schemas and roles on the shared server.
//
// It plays the part pgx's pgxtest and River's riverdbtest play for
// theirs; [github.com/adkit/adk/modules/redisstore/redistest] is its
// Redis twin. Like them it is for tests: its API may change in any
// release.
package pgstoretest
