// Package redisstore keeps agent runs and their work queue in Redis: a
// [RedisStateStore] and a [RedisWorkQueue] that pass the conformance suites
// of package contracttest unchanged, over any redis.UniversalClient
// (standalone, Sentinel or Redis Cluster).
//
// # Opening
//
// [OpenState] and [OpenQueue] run [Preflight] first: it reads CONFIG GET
// maxmemory-policy, appendonly and save, and INFO, and refuses a server
// that would lose a run (an allkeys-* or volatile-ttl eviction policy; no
// AOF and no RDB save points unless [Settings].Volatile is set; CONFIG hidden,
// unless [Settings].AssumeDurable), and a namespace whose queues still
// hold data in the key layout of a release before declared keys, which
// [RedisWorkQueue.MigrateLayout] (or adkctl redis migrate-layout) moves.
// It never changes the server.
// [NewState] and [NewQueue] skip the check, for tests and for callers that
// checked the server themselves.
//
// # Layout
//
// A run is a JSON string key plus a small hash (version, the five counters,
// seq, status, session, timestamps). Keys are length-prefixed per segment,
// with the tenant as the cluster hash tag:
//
//	adk:state:{4:acme}:run:5:run_1
//	adk:state:{4:acme}:session:2:s1
//
// so a tenant named "a:b" and a tenant named "a" holding id "b:x" can never
// share a key, and a run, its counters and its indexes share one slot.
// PutRun, PatchRun and DeleteRun are Lua scripts (scripts/*.lua, run as
// Redis functions, or by SHA where functions are refused; see
// Settings.Scripts): the version check and the write are one step, and counters are
// HINCRBY, so concurrent patches all land. Every script declares the keys
// it touches and checks everything before its first write (a patch checks
// all five sums before the first HINCRBY), so one refused or stopped
// midway has written nothing.
//
// A queue namespace is one hash tag ({adk:queue}) because one claim script
// reads several tenants' ready items to take turns between them; a
// deployment that outgrows one slot runs several namespaces. A queue's
// ready items share one sorted set ordered by tenant, then due time, so
// that every key a script touches is a fixed one it can declare; a
// tenant's items are one lex range of it. Tenants with a due item sit
// in a rotation sorted by the turn they were last given, tenants whose
// items are all delayed wait aside and keep their place, and idle tenants
// are nowhere, so they cost nothing per claim. One script claims a whole
// batch across tenants, issues the batch a fencing token (one more than the
// last, and never below the server clock in microseconds, so not even a
// server that comes back with less than it acknowledged issues one twice
// for an item), and writes the leases in the same step.
// Every settle is fenced on the token; a reaper's write is also fenced on
// the lease score it saw, so a reaper that lost the race to a heartbeat
// writes nothing.
//
// # History
//
// The queue implements [contract.HistoryKeeper]. A queue's Retention
// lives in its lifecycle hash, next to a flag that says whether the
// queue keeps anything; the claim and complete scripts read that flag
// in the lifecycle read they already make, so a queue without retention
// whose items ask for no uniqueness window pays no extra call on the
// claim and one ZREM per completed batch (the ID index Find reads). A
// completed item the retention keeps, or that asked for a uniqueness
// window, stays as StateCompleted in a finished index (a sorted set by
// finish time, then tenant, then ID, which Finished pages by keyset
// cursors); Prune trims at most PruneBatch of it per call, oldest first,
// reading at most four times that many. Events are written by the
// script of the transition they record: into a capped per-item string
// in one hash (with the time of the last claim, for the completed
// event's run time) and into a capped list that is the queue's log. The
// enqueue script checks uniqueness windows. All these keys are the
// queue's, in its slot, and declared by every script.
//
// # Failures
//
// Lease arithmetic uses the injected [contract.Clock], never the server's
// time. An outage or a failover is waited out under [Settings].RetryBudget
// (doubling delays with full jitter, 45s by default: a Sentinel failover
// at Sentinel's defaults); past it a call returns a retryable
// *contract.StatePersistenceError (reason unavailable) or
// *contract.QueueUnavailableError. Replication is asynchronous: writes a
// crashed master had not sent on are lost when a replica is promoted,
// unless [Settings].WaitReplicas makes each write wait for replicas (a
// write they did not acknowledge in time fails with a [ReplicaWaitError]).
// A queue lives in one hash slot unless [Settings].Shards spreads it over
// several (one per cluster master, typically): each tenant then belongs to
// one shard, every script stays within one slot, and a claim takes from
// the shards least recently served first (README, Sharding a queue).
// On Redis Cluster every queue and state script declares all its keys and
// reads before it writes, so a reshard of the queue's slot or of a
// tenant's state slot refuses a script whole (TRYAGAIN, ASK) and the
// retry is safe. A pool timeout is a
// *contract.PoolExhaustedError at once. Values over [Settings].MaxValueBytes
// are refused before anything is sent. No key this package writes carries a
// TTL.
//
// A script whose reply was lost is retried. Claim, PutRun, PatchRun,
// DeleteRun, Heartbeat and Fail carry a nonce the server remembers, so
// their retries replay the first outcome instead of applying twice: a
// retried Claim gets the same leases back, a retried CompleteAndClaim also
// gets the lost leases its first try found, and the state writes' records
// are the tenant's, so they outlive a deleted run and a resent delete
// neither reports its own deletion as not found nor removes a run created
// since. Enqueue is idempotent by item ID. A retried
// Complete may name an item the first try completed as lost: it is gone
// either way. Items whose worker died holding them come back when their
// lease expires and [RedisWorkQueue.Reap] runs, with the attempt counted.
// Nothing the server keeps is lost and no item is held by two workers at
// once.
//
// # Not provided
//
// A transactional outbox: writing a run and enqueueing its next step are two
// round trips with no shared transaction. Enqueue after the state write and
// make the consumer idempotent (see the README), or use pgstore, where both
// commit together.
package redisstore
