// Package pgstore keeps adk runs and work items in PostgreSQL, through
// pgx v5.
//
// [PostgresStateStore] is a [contract.StateStore] and [PostgresWorkQueue]
// a [contract.WorkQueue] (with [contract.Inspector], [contract.Waker],
// [contract.StatsSource] and [contract.CompleteClaimer], whose
// CompleteAndClaim commits a batch's completes with the next claim: one
// commit instead of two); both pass the conformance suites of package
// contracttest unchanged. Pick PostgreSQL when the state change of a run
// and the work it queues must commit in one transaction: [PostgresStateStore.Bound]
// and [PostgresWorkQueue.Bound] run inside a pgx.Tx the caller opened, so
// both commit or neither does. A bound adapter retries nothing, because a
// failed statement has already aborted the caller's transaction.
//
// # Executors and settings
//
// The backings run on an [Executor]: *pgxpool.Pool, *pgx.Conn and pgx.Tx
// all qualify. On a pool, each call acquires a connection within
// [Settings].AcquireTimeout; one that cannot be had in time is a
// *contract.PoolExhaustedError at once, never retried into. Size the pool
// to the worker count.
//
// # The schema is the deployment's
//
// [ExpectedSchema] is the SQL of the tables the backings read, published
// for the migration tool the deployment already runs; `adkctl schema
// apply` applies it in development. The library never creates or alters
// a table. [OpenState] and [OpenQueue] run [Verify] first: it
// reads adk_schema and refuses a version this release was not written
// for ([SchemaVersion]), refuses missing tables, and refuses a connection
// whose statement_timeout is 0 (behind a pooler: whose server connections
// start with 0). The New* constructors skip it. Table
// names come from [StateTables] and must be plain identifiers, because
// they are written into the SQL: a placeholder cannot name a relation.
//
// # Claims
//
// A claim batch is one statement. It walks the tenant rotation (one row
// per tenant per queue in the turns table, ordered by the turn last
// given): one item per tenant per round, in turn order, round after round
// until the batch is full, so a single busy tenant still fills a batch and
// a tenant with a backlog cannot starve its neighbours. Each item is
// locked where it is found with FOR UPDATE SKIP LOCKED by a query that
// restates every predicate on the locked relation, which is what keeps
// two claimers from taking one row under READ COMMITTED. Claims lock
// items, never tenants, and never wait for a lock, so concurrent batch
// claims neither serialise behind a busy tenant nor deadlock. Lease
// tokens come from a sequence, so no token is issued twice, not even
// after a rolled-back claim; every settle compares it. [PostgresWorkQueue.Complete]
// settles a whole batch in one statement and names the leases it lost.
//
// A tenant with nothing due is parked until its earliest item is due, so
// claims do not probe it. Each queue runs a park pass at most once a
// second, after a Complete or a claim that found nothing, under a per-tenant advisory lock whose shared side every
// enqueue, retry and requeue holds while it makes an item due and wakes
// the tenant; the README says why neither side can miss the other.
//
// # Lifecycle controls
//
// [PostgresWorkQueue] is a [contract.LifecycleController]: pauses,
// cancels, priorities, snoozes and waits for a signal are rows and
// columns of the schema (version 3, schema/migrations/003_lifecycle.sql
// brings a version 2 database there). Since version 6 ([MigrationFile])
// the claim's index of priority-0 items holds nothing else, so items with
// a priority cost a claim no walk past them. The README describes each
// statement and its cost.
//
// # History
//
// [PostgresWorkQueue] is a [contract.HistoryKeeper]: retention per queue
// is a row of the schema (version 4, schema/migrations/004_history.sql
// brings a version 3 database there), read by every statement that
// records a transition, so it holds for every process; events are written
// by the transition's own statement; completed items are kept by the
// Complete statement itself.
//
// # Fenced runs and run versions
//
// [PostgresStateStore] is a [contract.RunKeeper]. A run's fence is a
// column of its row and each write checks it in its own statement; kept
// versions are rows of {runs}_versions, written by the statement of the
// write that replaces them and pruned once in eight writes of a run
// (schema version 5). ForkRun is one statement, so inside Bound(tx) a fork commits
// with the work it enqueues. The README says why each statement holds
// under concurrent writers.
//
// # Flow control
//
// [PostgresWorkQueue] is a [contract.FlowController]. Limits are rows of
// the schema (version 2, schema/migrations/002_flow_control.sql brings a version 1 database
// there), so they survive restarts and hold for every process on the
// database. A queue without limits is claimed by the same statement as
// before; a queue with limits by one that checks each tenant's cap, rate
// and budget, and its weight, when the tenant comes up in the walk. A
// tenant with limits is served by one claim at a time (its turn row is
// locked, SKIP LOCKED) and its live leases are counted after the lock,
// by a volatile function with a snapshot of its own, which is what keeps
// the cap exact under READ COMMITTED; the README gives the argument.
//
// # Wake-ups
//
// Enqueue, Requeue and retries send pg_notify in the same statement, so a
// bound enqueue wakes claimers only when the caller commits. A [Listener]
// receives the notifications on a dedicated connection outside the pool
// (budget pool size + 1), fans them out without ever blocking, reconnects
// at once and then with backoff from 50 ms to 2 s, LISTENs every channel
// again and sends a synthetic wake after each reconnect, because what was
// sent while it was away is lost. Without a listener, Subscribe falls
// back to polling. Payloads over [MaxNotifyPayload] are refused by
// [Notify] before the round trip with a *[PayloadTooLargeError].
//
// Every connection the listener makes is probed before it counts as
// connected: a NOTIFY on the listener's own channel, sent from a second,
// short-lived connection, must come back within
// [ListenerSettings].ProbeTimeout, or Start fails with a
// *[ListenerProbeError] (and after a reconnect the listener says so in
// its Stats and the queue's Health, and retries).
//
// # Behind PgBouncer
//
// PgBouncer in transaction mode runs each transaction on any free server
// connection. Give the pool an exec mode that keeps no prepared statement
// between round trips (pgx.QueryExecModeExec; SimpleProtocol and
// CacheDescribe work too), set statement_timeout and search_path on the
// role (ALTER ROLE ... SET, then RECONNECT in PgBouncer's console), and
// point the listener at PostgreSQL itself. [Verify] recognises a pooler
// (the backend pid it reports differs from the one given at start-up)
// and checks what every server connection starts with; what a pooler
// breaks comes back as a *[PoolerError] that names the fix, from every
// call path, and matches *contract.PreflightError.
//
// # Vacuum
//
// The work table is rewritten on every claim, heartbeat and settle. The
// schema sets autovacuum_vacuum_scale_factor = 0.01 and
// autovacuum_vacuum_cost_delay = 0 on it and leaves room on each page for
// HOT updates; heartbeats touch no indexed column. [PostgresWorkQueue.Health]
// reports dead and live tuples, the last autovacuum, whether those
// settings are still in place, and index sizes.
//
// # Claim checks
//
// [BlobStore] is a [contract.ClaimCheck] on the schema's bytea table, for
// payloads too large to travel inline; it works beside any queue.
package pgstore
