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
// [ClaimCheck] keeps blobs that are too large to travel inline.
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
// # Backings
//
// Package memstore is the in-process reference; modules redisstore and
// pgstore are the durable ones. Every backing passes the suites of package
// contracttest unchanged, which is what lets a loop not care which it got.
// Package runner is the worker loop most users run on top of a WorkQueue.
package contract
