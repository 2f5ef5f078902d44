// Package sqlitestore is the embedded durable backing: a
// contract.StateStore ([SQLiteStateStore]), a fair, leased
// contract.WorkQueue ([SQLiteWorkQueue], also an Inspector, a Waker, a
// CompleteClaimer, a FlowController and a LifecycleController) and a
// claim-check blob store ([BlobStore]) on one
// SQLite file, through database/sql and the pure-Go driver
// modernc.org/sqlite. An agent that runs on one host keeps its runs
// without a server.
//
// Open the file with [OpenDB], which asks every connection for WAL mode,
// a busy timeout and synchronous=FULL, then build the backings on it:
//
//	db, err := sqlitestore.OpenDB("adk.db", sqlitestore.Settings{})
//	...
//	runs, err := sqlitestore.OpenState(ctx, db, nil, sqlitestore.Settings{})
//	work, err := sqlitestore.OpenQueue(ctx, db, nil, sqlitestore.Settings{})
//
// # Schema
//
// The Open functions create the schema ([ExpectedSchema]) in a file that
// holds no table, in one transaction, and verify any other file: a
// schema version other than [SchemaVersion], a missing table, a journal
// mode other than WAL, a busy timeout of zero or a synchronous level
// below what Settings.Durability asks for are each refused with a
// *contract.SchemaError or *contract.PreflightError that names the fix.
// A file that holds a schema is never altered: a file of an earlier
// version is refused, naming the published up-migrations ([Migrations],
// schema/migrations/) that its owner applies. Version 5 added fenced
// run writes and run versions; version 6 keeps the data of kept versions
// in a table of its own, and its migration from version 5 moves the data
// of existing versions there; version 7 (this release) keeps tenants
// whose queued items are all delayed out of the claims' walk until one is
// due.
//
// # Fences and versions
//
// The state store is a contract.RunKeeper. A run's fence is a column of
// its row, checked by the statement that writes the run (or in Go inside
// the same transaction, where the write reads the run first), so a
// refused write has written nothing. With Settings.Runs keeping
// versions, a put and a patch that changes the status copy the row as it
// was into adk_run_versions in the write's transaction, a put's data into
// a row of adk_run_blobs (a patch's copy holds no data, which a read
// takes from the next newer version that holds it, or from the run). A
// put whose run's oldest version is past the bounds turns that version
// into the one it keeps, writing the data over its blob row in place,
// and once in eight writes of a run the same transaction deletes at most
// contract.VersionPruneBatch versions past the policy's bounds, oldest
// first. ForkRun on a store given to Bound commits with the work
// enqueued in the same transaction.
//
// # Flow control
//
// The queue is a contract.FlowController: tenant limits (cap, rate,
// weight, budget) are rows in the file, and every rule is decided inside
// the claim's write transaction, where SQLite's single writer makes the
// counts exact. A queue with no limits claims exactly as before.
//
// # Lifecycle controls
//
// The queue is a contract.LifecycleController: pauses, cancels, snoozes,
// waits for a signal and priorities within a tenant are rows and columns
// of the file, so they survive a reopen. A claim that uses none of them
// runs the statements it ran before: the queue's row it reads anyway says
// whether anything is paused or any wait is due to time out, and a tenant
// whose items all have priority 0 is served by its first item by due
// time, as before. A queue with paused tenants claims on the flow path,
// which passes them over keeping their place.
//
// # Writes and processes
//
// Every write is one BEGIN IMMEDIATE transaction: it holds the file's
// write lock from its first statement, so a claim's read of the rotation
// and its leases are one step, in this process or across several that
// share the file. Writers of one backing take turns in process before
// they ask for the lock; writers of other processes wait on the busy
// timeout. Reads run beside writes (WAL).
//
// # Durability
//
// With the default DurabilityFull every commit syncs the write-ahead log,
// so a write that returned survives a power cut, and a fencing token,
// taken from a counter in the file inside the claim's transaction, is
// never issued twice. DurabilityNormal skips that sync: nothing is lost
// when the process dies, but a power cut may roll back the last commits,
// tokens included.
//
// # Bound
//
// Bound(tx) runs a store's or queue's calls inside the caller's
// transaction, so a run and the work it enqueues commit together or not
// at all. A bound queue refuses Claim, Heartbeat and CompleteAndClaim: a
// rolled-back transaction leaves no trace in the file, token counter
// included.
package sqlitestore
