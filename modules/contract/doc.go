// Package contract defines what an agent run loop needs from durable
// storage, and nothing about how a backing provides it.
//
// # Two interfaces
//
// A [StateStore] keeps the state of each run: a JSON blob the worker last
// wrote ([Run.Data]) plus five [Counters] that only accumulate (tokens,
// cost, iterations, cursor). Writes are optimistic: [StateStore.PutRun]
// must hold the stored [Run.Version] and is refused with a
// [*StateConflictError] otherwise, while [StateStore.PatchRun] adds counter
// deltas and never conflicts, so workers patching the same run at once
// all land. Runs page by [Run.Seq], a number the store gives a run when it
// is created and never rewrites, so a listing neither skips nor repeats a
// run that changes while it is read. A store is linearizable, a lost reply
// included: a write that a backing sends again after its reply was lost
// answers with its first application's outcome instead of applying twice
// (see [StateStore]).
//
// A [WorkQueue] holds [Item]s: units of work per tenant, leased to one
// worker at a time. [WorkQueue.Claim] takes up to N due items, one tenant
// per turn in rotation, so a tenant with a backlog cannot starve the tenant
// beside it. Each claimed item comes back as a [Lease] carrying a fencing
// [Lease.Token]; every settle ([WorkQueue.Complete], [WorkQueue.Fail],
// [WorkQueue.Heartbeat]) presents it, and a token that no longer matches
// is a [*LeaseLostError] that changed nothing. A lease that is not
// heartbeated expires; [WorkQueue.Reap] hands it to the queue's
// [policy.Policy], which retries it later or moves it to the dead letter,
// where [WorkQueue.Requeue] and [WorkQueue.Purge] act on it.
//
// # Optional interfaces
//
// [Inspector] gives the dashboard and the metrics read-only snapshots:
// per-tenant counts, the rotation, live leases, one item, backing health.
// [Waker] signals that work may be ready, so claimers sleep instead of
// polling hard; a wake is a hint and claimers re-poll regardless.
// [StatsSource] exposes plain counters (pool waits, listener reconnects).
// [CompleteClaimer] settles finished leases and claims the next batch in
// one round trip. [ClaimCheck] keeps blobs that are too large to travel
// inline.
//
// Which of these a queue can serve is a method, [Capabilities], not a
// question for a type assertion: a wrapper (adkotel's tracing, a claim
// check) has every optional method, forwards them all through an embedded
// [Passthrough], and reports the capabilities of what it wraps. Callers
// ask [AsInspector], [AsWaker], [AsStatsSource] or [AsCompleteClaimer];
// a queue of your own that makes no report has a capability exactly when
// it has the interface.
//
// # Flow control in the claim
//
// [FlowController] sets per-tenant [Limits] on a queue (and a default for
// the tenants without their own): a cap on live leases, a token-bucket
// rate, a weight in the rotation, and a [Budget] on the usage handlers
// [FlowController.Charge] over a rolling window. Every backing decides
// them inside its one claim script or statement: a tenant held back is
// passed over within the same claim, keeps its place, and is charged no
// attempt. A [ClaimReport] in the claim's context learns who was held and
// until when; [AsFlowController] finds the capability behind a wrapper.
//
// # Lifecycle controls
//
// [LifecycleController] pauses and resumes a queue or one of its tenants
// (a paused tenant is passed over like a held one, keeping its place),
// cancels items (at once when queued, waiting or dead; a leased one is
// marked, and its holder's next call gets a [*CancelledError] and writes
// nothing), snoozes a lease without charging an attempt, and parks one
// until a [LifecycleController.Signal] (delivered exactly once; a second
// gets a [*NotWaitingError]) or its timeout resumes it with
// [Item.Resumed]. [Item.Priority] orders a tenant's due items without
// changing the turns across tenants. [AsLifecycleController] finds the
// capability behind a wrapper.
//
// # Time, secrets and errors
//
// Lease arithmetic uses an injected [Clock], never the server's time, so
// the conformance suites can move time. DSNs and tokens are [Secret]s,
// which print as [redacted] however they are formatted. Errors are typed:
// sentinels for states ([ErrNotFound], [ErrEmpty]), structs for causes,
// and [Retryable] for the question "may the same call succeed later?".
// Bad input is a [*ValidationError] (matching [ErrInvalid]) returned before
// anything is sent.
//
// # One front door for every backing
//
// Every backing's exported queue and state methods are a [QueueFront] and
// a [StateFront], which the backing embeds. The front checks and
// normalises each call once (names, an empty queue name made
// [DefaultQueue], lease and batch bounds, payload sizes, page limits made
// effective) and only then calls the backing's [QueueDriver] or
// [StateDriver], the backing's own type with the same method set, which
// trusts what it is given. Adding an operation means one method on the
// front, where its input is checked, one on the driver interface, and its
// body in each backing; none of them checks the input again.
//
// This is River's shape (a client that validates, over a driver that
// executes) rather than a validating helper each backing calls: a helper
// leaves every backing one forgotten call away from taking bad input,
// while the front door is the only way in, so a backing cannot skip it.
// It costs one interface call per operation, far below one round trip.
// Unlike River's client, the front keeps the backings' own constructors
// and types, so backing-specific methods (a pgstore queue bound to a
// transaction, a Redis layout migration) stay on the value the caller
// holds.
//
// # Backings
//
// Package memstore is the in-process reference; modules redisstore and
// pgstore are the durable ones. Every backing passes the suites of package
// contracttest unchanged, which is what lets a loop not care which it got.
// Package runner is the worker loop most users run on top of a WorkQueue.
package contract
