// Package contracttest holds the conformance suites every backing of package
// contract passes unchanged, and the [FakeClock] they move time with.
//
// # Running the suites
//
// A backing calls [StateStore] and [WorkQueue] from its own tests, with a
// factory that returns a fresh, empty instance on every call. Each subtest
// calls the factory itself, with a new [FakeClock] (and, for queues, the
// [policy.Policy] the subtest pins), so subtests share nothing and may run
// in any order. The factory registers its own clean-up with t.Cleanup:
//
//	func TestStateStore(t *testing.T) {
//		contracttest.StateStore(t, func(t *testing.T, clock contract.Clock, p contract.RunPolicy) contract.StateStore {
//			return mystore.NewState(clock, p, mystore.Namespace(t.Name()))
//		})
//	}
//
//	func TestWorkQueue(t *testing.T) {
//		contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
//			q := mystore.NewQueue(clock, p, mystore.Namespace(t.Name()))
//			t.Cleanup(func() { q.Drop(context.Background()) })
//			return q
//		})
//	}
//
// A server-backed factory gives each call its own key prefix, schema or
// database, because the suites count everything they see. The suites use
// plain testing (no assertion library), take every time from the clock
// they pass (so a backing must read lease and retry times from its injected
// Clock, never from the server), and only wait in real time where a real
// goroutine must be awaited (a Waker's wake: at most 5s). Subtests are
// named Group/Point, so one point runs alone with
// `go test -run 'TestWorkQueue/Lease/TokensNeverReused'`; the names are
// stable, and a backing's mutation tests may refer to them.
//
// # What StateStore pins
//
//   - CRUD: create, get, put and patch round trips; Version 1 at creation
//     and one more per write; Seq assigned at creation and never rewritten;
//     CreatedAt and UpdatedAt read from the clock; PutRun ignores Counters
//     and Seq; creating an existing run, and a put holding a stale (or
//     future, or missing run's) version, are *StateConflictError with
//     Expected and Actual right and nothing written; a patch moves the
//     version so a put holding the old one is refused; GetRun, PatchRun and
//     DeleteRun of a missing run are ErrNotFound; a deleted run recreated
//     starts afresh.
//   - Concurrency: 16 goroutines × 25 patches land exactly (sums, final
//     version, each patch returning its own version); optimistic
//     read-modify-write loops lose nothing; racing creates have one winner;
//     puts never overwrite counters patched meanwhile.
//   - Atomicity: a patch that would take any counter past the int64
//     range (the last of five, or below the bottom) is refused whole with a
//     *CounterOverflowError naming the counter, its value and the delta,
//     and nothing is written; sums landing exactly on the range's ends are
//     taken (the check is exact, not floating point); eight clients racing
//     creates, puts, patches and deletes of one run never see a conflict
//     whose Actual equals its Expected (the stored version is read in the
//     same step as the failed check).
//   - Paging: 250 runs paged 7 at a time while runs are rewritten (between
//     pages, and concurrently) are each listed once, in ascending Seq;
//     pages short of the limit are last; listed runs equal GetRun's;
//     ListSessionRuns lists one session, follows a run moved between
//     sessions; Limit 0 means DefaultPageSize, above MaxPageSize or
//     negative is ErrInvalid.
//   - Isolation: tenants and ids built to collide under naive encodings
//     ("a:b"/"x" against "a"/"b:x", hash tags, glob and LIKE wildcards,
//     Unicode in two normal forms, spaces, newlines) keep distinct runs,
//     listings and sessions; writes and deletes stay in their tenant; two
//     stores from the factory share nothing.
//   - Limits: Data of DefaultMaxValueBytes+1 is a non-retryable
//     *StatePersistenceError with Reason too_large and nothing is stored;
//     exactly DefaultMaxValueBytes, and names of MaxNameBytes, are accepted.
//   - Input: empty, NUL-bearing, invalid UTF-8 or over-long names in every
//     method, malformed JSON, negative versions and bad statuses are
//     *ValidationError (errors.Is ErrInvalid) and change nothing.
//   - Context: a cancelled or expired context is returned as such
//     (errors.Is context.Canceled / DeadlineExceeded) and changes nothing.
//   - Fencing (needs the store's contract.RunKeeper): a put, patch or
//     delete whose fence is below the run's is a *StaleFenceError
//     (errors.Is ErrFenced, Fence and Stored right) and changes nothing,
//     versions included; equal and higher fences land and the highest is
//     kept; unfenced writes land and keep the fence, unless RequireFence
//     refuses them with a *ValidationError; a missing run is ErrNotFound
//     before the fence is looked at, and the fence is checked before the
//     version and the counters; a fenced create stores its fence and a
//     delete forgets it; two executions of one item (tokens t1 < t2)
//     interleaved end with only the second's writes after the hand-over.
//   - History (needs the store's contract.RunKeeper): every put and every
//     status-changing patch keeps the run as it was (Data, Status,
//     Session, Counters, Fence, Version, UpdatedAt), counter-only patches
//     keep none; exactly KeepVersions are kept, the newest; VersionAge
//     drops versions on the FakeClock, on reads before any write prunes;
//     the current run is listed first, and pages are stable while the run
//     is written; GetRunVersion answers the current and kept versions and
//     ErrNotFound otherwise; ForkRun copies that version's blob, status,
//     session and counters (not later ones) into a new run with Version 1,
//     Fence 0, a new Seq and no versions, listed like any run; a fork onto
//     an existing id is a *StateConflictError and of a version not kept
//     ErrNotFound; a deleted run's versions go with it.
//
// Fencing and History fail a store without a RunKeeper, naming it: every
// backing has one.
//
// # What StateReplay pins
//
// [StateReplay] runs against a store whose test can lose a reply
// ([LoseReply]: the write lands, its answer does not come back). A put,
// patch or delete whose reply was lost, with other clients' writes landing
// before the store hears of the loss, takes effect once and answers with
// its own outcome or a retryable error: a resent create or put is not a
// conflict with itself and returns the run as it wrote it (not as it is
// now), and writes nothing over a run deleted and created again meanwhile;
// a resent patch is added once and returns its own version and counters,
// even when the run was deleted since (never ErrNotFound, never a
// re-created run); a resent delete answers nil and leaves alone a run
// created after it landed.
//
// # What WorkQueue pins
//
//   - Basic: enqueue, claim, complete; a lease carries the item intact
//     (Payload, Metadata), State leased, the Worker, ExpiresAt = now +
//     LeaseFor and a non-zero Token; delayed items are due exactly at
//     NotBefore; enqueueing a queued, leased or dead ID is a no-op, and
//     after Complete the ID may be used again; batch Enqueue and batch
//     Complete, where a lost lease in a batch is named alone and the rest
//     complete; "" and DefaultQueue are one queue.
//   - Batch: Complete settles a batch's leases in order, as one call
//     each would: Complete(a, a, b) completes a and b and names the second
//     a lost; a stale and the live lease of one item, in either order,
//     complete the item and name the stale one. Enqueue of a batch sent
//     again (part of it landed, then an error) leaves the items already
//     there as they are, leased or queued, and adds the rest, in batch
//     order.
//   - Concurrency: 10 workers claiming 200 items (Max 1, Max 5, with and
//     without completing) never share an item and claim every one;
//     producers and consumers running at once complete each item once.
//   - Lease: a heartbeat extends a lease with a new token and ExpiresAt;
//     silence loses it to Reap, which counts what it reaped and hands it
//     to the policy (back to the queue with Attempts 1 and an expiry
//     error, or dead at MaxAttempts 1); settles and heartbeats holding a
//     stale, forged or spent token are *LeaseLostError naming the item and
//     change nothing; a Reap that lost to a heartbeat writes nothing; a
//     token is never issued twice for an item, across fail-and-reclaim in
//     the same instant, heartbeats, reaps and complete-and-re-enqueue,
//     and each token is greater than every earlier one for its item (what
//     fenced run writes rely on).
//   - Retry: with BaseDelay 1s and jitter pinned, failed items are due
//     after 1s then 2s and not a millisecond sooner; Fail returns the
//     policy's Decision; Attempts and LastError are kept; the last attempt
//     or a policy.Permanent cause dead-letters the item with DeadAt;
//     Metadata survives claim, retry, heartbeat, reap, dead letter and
//     requeue.
//   - Fairness: with A holding 1,000 items and B, C 5 each, B's and C's
//     are all claimed within the first 15 claims (one at a time and in
//     batches of 10); with 4 busy tenants every 4 consecutive claims serve
//     4 tenants (one at a time and in batches of 7); a tenant whose items
//     are all delayed blocks nobody; one busy tenant fills a whole batch; a
//     tenant joining behind a backlog is served within one rotation.
//   - DeadLetter: dead letters show the item (State dead, DeadAt,
//     Attempts, LastError, Payload, Metadata); they page oldest first, or
//     newest first, with no repeats, and a cursor from either order turns
//     the listing around; filters by tenant, id and error text (ASCII
//     case ignored, nothing else folded) select exactly what they say;
//     Requeue (one, or all matching) makes items due with Attempts 0;
//     Purge removes them; bulk actions never touch rows outside the
//     filter, other queues, or live items; DeadLetterSummary counts what
//     the listing of the same filter shows and groups it by the first
//     ErrorGroupRunes characters of the error, largest first.
//   - Isolation: hostile tenant names never collide in the queue, in
//     dead-letter filters or in bulk actions; the same ID in two tenants is
//     two items; queues are separate for Claim and Reap; two queues from
//     the factory share nothing.
//   - Limits: a payload of DefaultMaxValueBytes+1, alone or in a batch, is
//     a non-retryable too_large error and nothing is enqueued; exactly
//     DefaultMaxValueBytes, and names of MaxNameBytes, are accepted.
//   - Input: bad names, metadata, empty batches, ClaimRequest Max outside
//     1..MaxClaimBatch, LeaseFor ≤ 0, heartbeat extensions ≤ 0, bad
//     leases and bad filters are *ValidationError and change nothing.
//   - Context: an empty queue answers ErrEmpty at once; a cancelled or
//     expired context is honoured by every method and changes nothing.
//   - Inspector (every backing implements it; the suite fails otherwise):
//     per-tenant ready, later, leased, dead and served counts and
//     OldestReady; Rotation.Order names the next tenant served, moves
//     the served one to the back and lists tenants with only delayed
//     work last, by when it falls due; Recent lists the last turns, most recent
//     last; Leases pages live leases soonest expiry first; Item finds
//     queued, leased and dead items and answers ErrNotFound otherwise;
//     Queues and Health answer; reading changes nothing.
//   - Waker (optional; skipped when not implemented): an enqueue wakes a
//     subscriber within 5s; ending one subscription leaves the others
//     working and never blocks an enqueue.
//   - CompleteClaimer (optional; skipped when not implemented): the
//     completes land as Complete's would and the claim is Claim's; a lost
//     lease is named in a *LeaseLostError beside the claimed leases; Max
//     0 only completes; nothing due is ErrEmpty; bad input changes
//     nothing.
//   - Flow (every backing enforces limits; the suite fails otherwise):
//     limits set, read back and removed by the zero Limits, per tenant and
//     as the queue's default; bad limits and charges are *ValidationError
//     naming the field and change nothing; a tenant capped at N gets at
//     most N live leases, within one claim and under ten concurrent
//     claimers, while the batch fills from the others; an expired lease
//     stops counting at its expiry, before any reap; a settle frees the
//     slot at once and wakes the claimers; a rate of R per second serves
//     R×60 ± the burst over a simulated minute and reports when the next
//     token accrues; weights 3:1 give 300:100 ± 4 over 400 claims in
//     batches of 1, 4 and 7; a tenant charged up to its budget is parked
//     until the window slides (not at half of it) while the others drain,
//     and comes back with no attempt charged; a held tenant keeps its
//     place at the head of the rotation; FlowStatus and the claim's
//     ClaimReport say who is held and why.
//   - History (a queue that keeps no history fails it, once):
//     every transition appends its event with its fields (enqueued,
//     claimed, failed, dead, requeued, snoozed, waiting, signalled,
//     timed_out, cancelled, completed, by Complete, CompleteAndClaim,
//     CancelMatching and Reap alike); the per-item cap keeps the newest N
//     and counts the dropped; heartbeats are counted; a retention by age
//     (on the FakeClock) or by count prunes exactly the oldest items it
//     lets go, never a live one, at most PruneBatch per call; without
//     retention a completed item is gone; a uniqueness window holds and
//     expires (the re-enqueue is a new life); duplicates are reported
//     with their state; Find spans tenants and states; the finished
//     listing filters, orders newest first and pages both ways, stable
//     while items finish; the queue's log follows with cursors that are
//     never "", and reports a gap past QueueEventLog; bad input is a
//     *ValidationError and changes nothing.
package contracttest
