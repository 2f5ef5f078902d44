package memstore_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// edit is one change a mutant makes to a file of the package: the text
// old, which must stand in the file exactly once, becomes new.
type edit struct{ file, old, new string }

// mutants is the mutation table: each row breaks memstore on purpose in one
// way and names the conformance-suite point that must catch it. The faults
// live here, as edits to the source, and never in the package itself, so
// memstore reads as the plain reference. TestMutantsAreCaught builds each
// mutant with go test -overlay (the edited files standing in for the
// originals, plus any file of testdata/mutants it adds), runs that point
// against it and requires it to fail, which proves the point can fail; the
// control row runs every listed point against the intact store and
// requires them to pass, which proves the failures come from the edits.
var mutants = []struct {
	mutation string
	caughtBy string // the test that must fail, as TestX/Group/Point for a suite point
	why      string // what the mutant gets wrong, and so what the point pins
	edits    []edit
	adds     []string // files of testdata/mutants the mutant adds to the package
}{
	// The four points the issue asks to see fail.
	{"no-fencing", "TestWorkQueue/Lease/CompletedOrForgedTokenLost",
		"settles ignore the token, so a forged or spent lease completes the item (also caught by Lease/StaleTokenAfterReclaim, Lease/HeartbeatKeepsLease, Basic/BatchCompletePartialLoss)",
		[]edit{{"queue.go", "e := s.live[l.Token]", "e := s.item(l.Key())"}}, nil},
	{"no-rotation", "TestWorkQueue/Fairness/SmallTenantsServedEarly",
		"a claim serves the head tenant until it runs dry, so a backlog starves its neighbours (also caught by the other Fairness points but DelayedTenantDoesNotBlock)",
		[]edit{{"queue.go", "\t\tif q.served(tq, now) {\n\t\t\tq.turn++\n\t\t\ttq.stamp = q.turn\n\t\t}\n", "\t\tq.served(tq, now)\n"}}, nil},
	{"lost-patch", "TestStateStore/Concurrency/ConcurrentPatchesAllLand",
		"PatchRun reads and writes in two critical sections, so concurrent deltas overwrite each other (also caught by Concurrency/PatchesDuringPuts)",
		[]edit{{"state.go", "patch contract.Patch) (*contract.Run, error) {\n", "patch contract.Patch) (*contract.Run, error) {\n\treturn s.patchUnlocked(ctx, tenant, id, patch)\n"}},
		[]string{"racy.go"}},
	{"reseq-on-write", "TestStateStore/Paging/StableWhileUpdating",
		"every write gives the run a new Seq, so a listing repeats the runs updated while it pages (also caught by CRUD/PutIgnoresCountersAndSeq)",
		[]edit{{"state.go", "\tr.UpdatedAt = now\n", "\tr.UpdatedAt = now\n\ts.unindex(r)\n\ts.runSeq++\n\tr.Seq = s.runSeq\n\ts.index(r)\n"}}, nil},

	// Further points, one mutant each.
	{"reap-ignores-heartbeat", "TestWorkQueue/Lease/ReaperLosesToHeartbeat",
		"Reap judges a lease by the expiry its claim set, so it takes a lease a heartbeat extended (also caught by Lease/HeartbeatKeepsLease)",
		[]edit{
			{"rotation.go", "\tworker  string\n\texpires time.Time\n", "\tworker  string\n\texpires time.Time\n\tclaimExpires time.Time\n"},
			{"queue.go", "\t\te.expires = now.Add(req.LeaseFor)\n", "\t\te.expires = now.Add(req.LeaseFor)\n\t\te.claimExpires = e.expires\n"},
			{"queue.go", "\t\tif k.expires.After(now) {\n\t\t\treturn false\n\t\t}\n\t\texpired = append(expired, e)\n",
				"\t\t_ = k\n\t\tif !e.claimExpires.After(now) {\n\t\t\texpired = append(expired, e)\n\t\t}\n"},
		}, nil},
	{"attempt-token", "TestWorkQueue/Lease/TokensNeverReused",
		"the token is the attempt number, so a completed item's old lease fences its re-enqueued successor",
		[]edit{
			{"queue.go", "\ts.tokens++\n\treturn s.tokens\n", "\treturn int64(e.item.Attempts) + 1\n"},
			{"queue.go", "\tdelete(s.live, e.token)\n\te.token = s.newToken(e)\n", "\tdelete(s.live, e.token)\n"},
			{"lifecycle.go", "\te.worker, e.expires, e.token = \"\", time.Time{}, 0\n", "\te.worker, e.expires = \"\", time.Time{}\n"},
		}, nil},
	{"racy-claim", "TestWorkQueue/Concurrency/ConcurrentClaimsMax1",
		"a claim picks its item, lets go of the lock, then leases it, so two concurrent claimers get the same item",
		[]edit{{"queue.go", "Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {\n", "Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {\n\treturn s.claimRacy(ctx, req)\n"}},
		[]string{"racy.go"}},
	{"all-or-nothing-complete", "TestWorkQueue/Basic/BatchCompletePartialLoss",
		"one lost lease fails the whole batch, so the live leases beside it are not completed",
		[]edit{{"queue.go", "\tvar lost, cancelled []contract.ItemKey\n",
			"\tvar lost, cancelled []contract.ItemKey\n\tfor _, l := range leases {\n\t\tif s.leased(l) == nil {\n\t\t\tlost = append(lost, l.Key())\n\t\t}\n\t}\n\tif lost != nil {\n\t\treturn &contract.LeaseLostError{Items: lost}\n\t}\n"}}, nil},
	{"joined-keys", "TestStateStore/Isolation/HostileNamesNeverCollide",
		`runs are keyed by tenant+":"+id, so tenant "a" run "b:x" is tenant "a:b" run "x" (also caught by Isolation/WritesStayInTenant)`,
		[]edit{{"state.go", "\treturn runKey{tenant, id}\n", "\treturn runKey{tenant: tenant + \":\" + id}\n"}}, nil},
	{"ignore-not-before", "TestWorkQueue/Basic/DelayedNotClaimedEarly",
		"delayed items are claimable at once (also caught by Retry/BackoffSchedule, Fairness/DelayedTenantDoesNotBlock)",
		[]edit{{"queue.go", "\treturn maxTime(notBefore, now)\n", "\treturn now\n"}}, nil},
	{"enqueue-replaces", "TestWorkQueue/Basic/IdempotentEnqueueQueued",
		"enqueueing a live ID replaces the item (also caught by IdempotentEnqueueLeased and IdempotentEnqueueDead)",
		[]edit{{"queue.go", "if old.item.State != contract.StateCompleted || old.windowOpen(now) {", "if false {"}}, nil},
	{"requeue-ignores-error", "TestWorkQueue/DeadLetter/BulkActionsStayInFilter",
		"Requeue drops the ErrorContains part of its filter and revives dead letters it should leave",
		[]edit{{"queue.go", "\tvar matched []*entry\n\ts.deadMatching(f, false, nil, func(e *entry) bool { matched = append(matched, e); return true })\n\tif len(matched) == 0 {\n\t\treturn 0, nil\n\t}\n\tnow := s.clock.Now()\n",
			"\tf.ErrorContains = \"\"\n\tvar matched []*entry\n\ts.deadMatching(f, false, nil, func(e *entry) bool { matched = append(matched, e); return true })\n\tif len(matched) == 0 {\n\t\treturn 0, nil\n\t}\n\tnow := s.clock.Now()\n"}}, nil},
	{"dead-paging-repeats", "TestWorkQueue/DeadLetter/Paging",
		"a dead-letter page's cursor points one before its last item, so the next page repeats it",
		[]edit{{"queue.go", "\t\tlast = e.deadSeq\n", "\t\tif len(out.Items) == limit {\n\t\t\treturn true\n\t\t}\n\t\tlast = e.deadSeq\n"}}, nil},
	{"ignore-context", "TestStateStore/Context/CancelledContextChangesNothing",
		"calls go ahead with a cancelled context",
		[]edit{{"store.go", "if err := ctx.Err(); err != nil {", "if err := ctx.Err(); err != nil && ctx == nil {"}}, nil},
	{"wrap-counters", "TestStateStore/Atomicity/OverflowRefusedWhole",
		"a patch past the int64 range wraps the counter to the other end instead of being refused whole (also caught by OverflowBelowRefused and OverflowFirstCounterNamed)",
		[]edit{{"state.go", "patch.Counters); err != nil {", "patch.Counters); err != nil && tenant == \"\" {"}}, nil},

	// Flow control, one mutant per rule.
	{"no-cap", "TestWorkQueue/Flow/CapHolds",
		"the claim ignores MaxLeased, so a capped tenant takes the whole batch (also caught by the other Cap points and DefaultApplies)",
		[]edit{{"flow.go", "if l.MaxLeased > 0 && tq.leased >= l.MaxLeased", "if false && l.MaxLeased > 0"}}, nil},
	{"cap-counts-expired", "TestWorkQueue/Flow/CapFreesAtExpiry",
		"an expired lease counts against the cap until it is reaped",
		[]edit{{"flow.go", "\t\tif e.item.Tenant == tq.name {\n\t\t\tlive--\n", "\t\tif false {\n\t\t\tlive--\n"}}, nil},
	{"cap-blocks-batch", "TestWorkQueue/Flow/CapHolds",
		"a held tenant at the head ends the claim instead of being passed over (head-of-line blocking; also caught by HeldKeepsPlace)",
		[]edit{{"flow.go", "\t\tp.pass(head, why, until)\n", "\t\tp.pass(head, why, until)\n\t\treturn nil\n"}}, nil},
	{"held-loses-place", "TestWorkQueue/Flow/HeldKeepsPlace",
		"a tenant passed over for its cap is sent to the back of the rotation",
		[]edit{{"flow.go", "\t\tp.pass(head, why, until)\n", "\t\tq.turn++\n\t\tq.due.Delete(head.stamp)\n\t\thead.stamp = q.turn\n\t\tq.due.Put(head.stamp, head)\n\t\tp.pass(head, why, until)\n"}}, nil},
	{"held-passed-per-item", "TestWorkQueue/Flow/ManyHeldAhead",
		"a claim walks past the held tenants again for every item, passing and reporting each of them once per item",
		[]edit{{"flow.go", "p.last, p.any = tq.stamp, true", "p.last, p.any = tq.stamp, false"}}, nil},
	{"no-cap-wake", "TestWorkQueue/Flow/CapFreesOnSettle",
		"ending a capped tenant's lease wakes no claimer, so they wait for their poll",
		[]edit{{"flow.go", "return q.limited && tq != nil && tq.queued() > 0", "return false && tq != nil && tq.queued() > 0"}}, nil},
	{"no-rate", "TestWorkQueue/Flow/Rate",
		"the claim ignores Rate, so a rated tenant is served as fast as it is claimed",
		[]edit{{"flow.go", "if l.Rate > 0 && !tq.flow.bucket.Allows(", "if false && !tq.flow.bucket.Allows("}}, nil},
	{"no-weight", "TestWorkQueue/Flow/Weights",
		"every tenant goes to the back after one item, whatever its weight",
		[]edit{{"flow.go", "\tif tq.flow.credit < l.EffectiveWeight() {\n", "\tif tq.flow.credit < 1 {\n"}}, nil},
	{"no-budget", "TestWorkQueue/Flow/Budget",
		"the claim ignores the budget, so a tenant over it is still served",
		[]edit{{"flow.go", "if !l.Budget.IsZero() && contract.OverBudget(", "if false && contract.OverBudget("}}, nil},
	{"budget-fixed-window", "TestWorkQueue/Flow/Budget",
		"usage counts only in the current slot, so a budget frees a slot after the charge instead of a window after it",
		[]edit{{"flow.go", "\t\tif k >= slot-contract.BudgetSlots && k <= slot {\n", "\t\tif k == slot {\n"}}, nil},

	// Promises no suite point pins yet, caught by this package's own tests.
	{"delayed-loses-place", "TestDelayedTenantKeepsItsPlace",
		"a tenant whose items were all delayed rejoins at the back when one falls due, instead of keeping its place (the suites' DelayedTenantDoesNotBlock only checks that it does not block the others)",
		[]edit{{"rotation.go", "\t\tq.unplace(tq)\n\t\tq.place(tq, now)\n\t}\n\t_, tq, ok := q.due.Min()\n", "\t\tq.unplace(tq)\n\t\tq.turn++\n\t\ttq.stamp = q.turn\n\t\tq.place(tq, now)\n\t}\n\t_, tq, ok := q.due.Min()\n"}}, nil},

	// Lifecycle controls: pause, cancel, priority, snooze, wait and signal.
	{"tenant-pause-ignored", "TestWorkQueue/Lifecycle/PauseTenantKeepsPlace",
		"a paused tenant is served like any other",
		[]edit{{"flow.go", "\tif tq.paused {\n\t\treturn contract.HeldPaused", "\tif false {\n\t\treturn contract.HeldPaused"}}, nil},
	{"queue-pause-ignored", "TestWorkQueue/Lifecycle/PauseQueue",
		"a paused queue is still claimed",
		[]edit{{"queue.go", "\tif q.paused {\n\t\tif r :=", "\tif false {\n\t\tif r :="}}, nil},
	{"cancel-mark-ignored", "TestWorkQueue/Lifecycle/CancelLeasedHeartbeatAndReap",
		"a heartbeat or settle of a lease cancelled meanwhile goes through as if nothing were asked",
		[]edit{{"lifecycle.go", "\tif !e.item.CancelledAt.IsZero() {\n\t\ts.settleCancelled(s.queues[e.item.Queue], e, now)\n", "\tif false {\n\t\ts.settleCancelled(s.queues[e.item.Queue], e, now)\n"}}, nil},
	{"complete-ignores-cancel", "TestWorkQueue/Lifecycle/CancelLeasedComplete",
		"Complete of a lease cancelled meanwhile completes the item instead of cancelling it",
		[]edit{{"queue.go", "\t\tif !e.item.CancelledAt.IsZero() {\n\t\t\ts.settleCancelled(q, e, now)\n\t\t\tcancelled", "\t\tif false {\n\t\t\ts.settleCancelled(q, e, now)\n\t\t\tcancelled"}}, nil},
	{"reap-retries-cancelled", "TestWorkQueue/Lifecycle/CancelLeasedHeartbeatAndReap",
		"an expired lease of a cancelled item is retried by the reaper instead of cancelled",
		[]edit{{"queue.go", "\t\tif !e.item.CancelledAt.IsZero() {\n\t\t\ts.settleCancelled(q, e, now)\n\t\t\tcontinue", "\t\tif false {\n\t\t\ts.settleCancelled(q, e, now)\n\t\t\tcontinue"}}, nil},
	{"bulk-cancel-overreach", "TestWorkQueue/Lifecycle/CancelMatching",
		"a bulk cancel touches every item of the queue, not only those its filter selects",
		[]edit{{"lifecycle.go", "if !f.Matches(e.item) {", "if e == nil {"}}, nil},
	{"purge-every-cancelled", "TestWorkQueue/Lifecycle/PurgeCancelled",
		"PurgeCancelled deletes cancelled items whenever they were cancelled",
		[]edit{{"lifecycle.go", "\t\tif !k.due.Before(before) {\n", "\t\tif false {\n"}}, nil},
	{"priority-ignored", "TestWorkQueue/Lifecycle/Priority",
		"a tenant's items are served in due order whatever their priority",
		[]edit{{"rotation.go", "e.ready = readyKey{rank: -e.item.Priority,", "e.ready = readyKey{rank: 0,"}}, nil},
	{"priority-before-due", "TestWorkQueue/Lifecycle/PriorityWaitsForDue",
		"a delayed item of high priority is served before it is due",
		[]edit{{"rotation.go", "\tif due.After(now) {\n\t\te.isLater = true\n", "\tif false {\n\t\te.isLater = true\n"}}, nil},
	{"snooze-charges-attempt", "TestWorkQueue/Lifecycle/Snooze",
		"a snooze is charged as an attempt",
		[]edit{{"lifecycle.go", "\t\te.item.Snoozes++\n", "\t\te.item.Snoozes++\n\t\te.item.Attempts++\n"}}, nil},
	{"snooze-uncapped", "TestWorkQueue/Lifecycle/SnoozeCap",
		"an item may be snoozed forever, whatever the policy's MaxSnoozes",
		[]edit{{"lifecycle.go", "dec := s.policy.DecideSnooze(e.item.Snoozes, d, now)", "dec := policy.Policy{MaxSnoozes: 1 << 30}.DecideSnooze(e.item.Snoozes, d, now)"}}, nil},
	{"signal-twice", "TestWorkQueue/Lifecycle/WaitSignal",
		"a signal resumes an item that is no longer waiting, so a second signal runs it again",
		[]edit{{"lifecycle.go", "if e.item.State != contract.StateWaiting || e.item.Waiting.Signal != signal {", "if e.item.Waiting != nil && e.item.Waiting.Signal != signal {"}}, nil},
	{"wait-never-times-out", "TestWorkQueue/Lifecycle/WaitTimeout",
		"a wait outlives its timeout: the item stays parked until a signal",
		[]edit{{"lifecycle.go", "\t\tif !ok || k.due.After(now) {\n\t\t\treturn\n\t\t}\n\t\tw := e.item.Waiting", "\t\tif true || !ok || k.due.After(now) {\n\t\t\treturn\n\t\t}\n\t\tw := e.item.Waiting"}}, nil},

	// History: events, retention and Prune, uniqueness windows, Find, the
	// finished listing and the queue's event log.
	{"no-completed-event", "TestWorkQueue/History/EventsRetryAndComplete",
		"Complete records no completed event (also caught by EventsDeadRequeueCompleteAndClaim)",
		[]edit{{"history.go", "\t\ts.record(q, e, ev, now)\n", "\t\t_ = ev\n"}}, nil},
	{"retention-not-kept", "TestWorkQueue/History/EventsRetryAndComplete",
		"Retention reads back the zero Retention whatever was set",
		[]edit{{"history.go", "\t\treturn q.ret, nil\n", "\t\treturn contract.Retention{}, nil\n"}}, nil},
	{"reap-names-worker", "TestWorkQueue/History/EventsReap",
		"a failed event of an expired lease names the worker that let it expire",
		[]edit{{"queue.go", "\tif cause == contract.ErrLeaseExpired {\n\t\tworker = \"\"\n\t}\n", ""}}, nil},
	{"no-requeued-event", "TestWorkQueue/History/EventsDeadRequeueCompleteAndClaim",
		"Requeue from the dead letter records nothing",
		[]edit{{"queue.go", "Kind: contract.EventRequeued}", "Kind: contract.EventEnqueued}"}}, nil},
	{"no-cancelled-event", "TestWorkQueue/History/EventsCancel",
		"an item that becomes cancelled records no cancelled event",
		[]edit{{"lifecycle.go", "\t\ts.record(q, e, contract.Event{Kind: contract.EventCancelled, Reason: e.item.CancelReason}, now)\n", ""}}, nil},
	{"no-timed-out-event", "TestWorkQueue/History/EventsSnoozeWaitSignal",
		"a wait that times out records no timed_out event",
		[]edit{{"lifecycle.go", "\t\t\ts.record(q, e, contract.Event{Kind: contract.EventTimedOut, Signal: w.Signal}, now)\n", ""}}, nil},
	{"no-event-cap", "TestWorkQueue/History/EventCapAndHeartbeats",
		"an item keeps every event, whatever Retention.Events says",
		[]edit{{"history.go", "if n := q.ret.Events; len(h.events) >= n {", "if n := q.ret.Events; false && len(h.events) >= n {"}}, nil},
	{"no-heartbeat-count", "TestWorkQueue/History/EventCapAndHeartbeats",
		"heartbeats are not counted",
		[]edit{{"queue.go", "\t\te.history().heartbeats++\n", ""}}, nil},
	{"complete-drops-kept", "TestWorkQueue/History/KeepsCompleted",
		"Complete deletes the item though the retention keeps it (also caught by the Prune and Finished points)",
		[]edit{{"history.go", "if !q.ret.Keeps() && e.item.UniqueFor <= 0 {", "if e.item.UniqueFor <= 0 {"}}, nil},
	{"zero-retention-keeps", "TestWorkQueue/History/ZeroRetentionKeepsNothing",
		"a queue without retention keeps its completed items",
		[]edit{
			{"history.go", "if !q.ret.Keeps() && e.item.UniqueFor <= 0 {", "if false {"},
			{"queue.go", "\t\tif q.keeping || e.item.UniqueFor > 0 {\n", "\t\tif true {\n"},
		}, nil},
	{"prune-ignores-age", "TestWorkQueue/History/PruneByAge",
		"Prune removes every finished item, whatever its age",
		[]edit{{"history.go", "byAge := r.Expired(e.item.FinishedAt, now)", "byAge := !e.item.FinishedAt.IsZero()"}}, nil},
	{"prune-count-off-by-one", "TestWorkQueue/History/PruneByCount",
		"Prune keeps one finished item fewer than Count",
		[]edit{{"history.go", "idx < total-r.Count", "idx <= total-r.Count"}}, nil},
	{"prune-unbounded", "TestWorkQueue/History/PruneBatchBound",
		"one Prune removes everything due, past PruneBatch",
		[]edit{{"history.go", "if len(gone) == contract.PruneBatch || visits > pruneVisits {", "if visits > 2*pruneVisits {"}}, nil},
	{"prune-ignores-window", "TestWorkQueue/History/UniqueWindowHoldsAndExpires",
		"Prune removes a completed item whose uniqueness window is still open",
		[]edit{{"history.go", "if e.item.State == contract.StateCompleted && !e.windowOpen(now) {", "if e.item.State == contract.StateCompleted {"}}, nil},
	{"window-ignored", "TestWorkQueue/History/UniqueWindowHoldsAndExpires",
		"an Enqueue within a completed item's uniqueness window replaces it",
		[]edit{{"queue.go", "if old.item.State != contract.StateCompleted || old.windowOpen(now) {", "if old.item.State != contract.StateCompleted {"}}, nil},
	{"duplicate-state-wrong", "TestWorkQueue/History/DuplicatesReported",
		"EnqueueReport says every duplicate was queued",
		[]edit{{"queue.go", "contract.EnqueueResult{Duplicate: true, State: old.item.State}", "contract.EnqueueResult{Duplicate: true, State: contract.StateQueued}"}}, nil},
	{"find-one-tenant", "TestWorkQueue/History/FindAcrossTenants",
		"Find returns one item of the ID, not those of every tenant",
		[]edit{{"history.go", "for e := q.ids[id]; e != nil; e = e.nextID {", "for e := q.ids[id]; e != nil; e = nil {"}}, nil},
	{"finished-ignores-until", "TestWorkQueue/History/FinishedFilters",
		"the finished listing ignores Until",
		[]edit{{"history.go", "case !fq.Until.IsZero() && !it.FinishedAt.Before(fq.Until):", "case false:"}}, nil},
	{"finished-paging-repeats", "TestWorkQueue/History/FinishedPagingStable",
		"a finished page's Next points one before its last item, so the next page repeats it",
		[]edit{{"history.go", "out.Next = finCursor(\"o\", got[len(got)-1].finKey())", "out.Next = finCursor(\"o\", got[len(got)-2].finKey())"}}, nil},
	{"events-next-empty", "TestWorkQueue/History/QueueEventsFollow",
		"QueueEvents hands out an empty Next when it returns no events",
		[]edit{{"history.go", "\tout.Next = strconv.FormatInt(after, 10)\n", "\tif len(out.Events) > 0 {\n\t\tout.Next = strconv.FormatInt(after, 10)\n\t}\n"}}, nil},
	{"events-gap-hidden", "TestWorkQueue/History/QueueEventsGap",
		"a read past dropped events does not say so",
		[]edit{{"history.go", "\t\tout.Gap = true\n", "\t\tout.Gap = false\n"}}, nil},
	{"events-bad-cursor-accepted", "TestWorkQueue/History/BadInputChangesNothing",
		"QueueEvents reads a cursor it never handed out as the log's start",
		[]edit{{"history.go", "\t\tif err != nil || n < 0 {\n\t\t\treturn contract.EventPage{}, badEventCursor()\n", "\t\tif false && err != nil {\n\t\t\treturn contract.EventPage{}, badEventCursor()\n"}}, nil},

	// Fenced run writes, one mutant per rule.
	{"put-ignores-fence", "TestStateStore/Fencing/StalePutRefused",
		"PutRun never compares the fence, so a stale execution overwrites the run (also caught by TwoExecutionsInterleave)",
		[]edit{{"state.go", "if err := fenced(stored, run.Fence); err != nil {", "if err := fenced(stored, run.Fence); err != nil && false {"}}, nil},
	{"patch-ignores-fence", "TestStateStore/Fencing/StalePatchRefused",
		"PatchRun never compares the fence, so a stale execution's counters and status land",
		[]edit{{"state.go", "if err := fenced(stored, patch.Fence); err != nil {", "if err := fenced(stored, patch.Fence); err != nil && false {"}}, nil},
	{"delete-ignores-fence", "TestStateStore/Fencing/StaleDeleteRefused",
		"DeleteRunFenced never compares the fence, so a stale execution deletes the run",
		[]edit{{"state.go", "if err := fenced(r, fence); err != nil {", "if err := fenced(r, fence); err != nil && false {"}}, nil},
	{"equal-fence-refused", "TestStateStore/Fencing/EqualAndHigherLand",
		"a write under the run's own fence is refused as stale",
		[]edit{{"state.go", "if fence != 0 && fence < stored.Fence {", "if fence != 0 && fence <= stored.Fence {"}}, nil},
	{"unfenced-refused", "TestStateStore/Fencing/UnfencedLandsKeepsFence",
		"fence 0 is taken as the lowest fence, so an unfenced write of a fenced run is refused",
		[]edit{{"state.go", "if fence != 0 && fence < stored.Fence {", "if fence < stored.Fence {"}}, nil},
	{"fence-not-raised", "TestStateStore/Fencing/EqualAndHigherLand",
		"a higher fence lands but the run keeps the fence it was created with, so a fence between the two still lands",
		[]edit{{"state.go", "\tr.Fence = max(r.Fence, fence)\n", "\t_ = fence\n"}}, nil},
	{"unfenced-clears-fence", "TestStateStore/Fencing/UnfencedLandsKeepsFence",
		"a write stores its own fence, so an unfenced one clears the run's and a stale execution gets through after it",
		[]edit{{"state.go", "\tr.Fence = max(r.Fence, fence)\n", "\tr.Fence = fence\n"}}, nil},
	{"create-drops-fence", "TestStateStore/Fencing/FencedCreate",
		"a fenced create stores no fence, so a stale execution can overwrite the run it created",
		[]edit{{"state.go", "Data: bytes.Clone(run.Data), Fence: run.Fence}", "Data: bytes.Clone(run.Data)}"}}, nil},
	{"version-before-fence", "TestStateStore/Fencing/CheckOrder",
		"PutRun checks the version before the fence, so a stale execution holding an old version hears of a conflict, not of its lost fence",
		[]edit{{"state.go", "\t\tif err := fenced(stored, run.Fence); err != nil {\n",
			"\t\tif run.Version != stored.Version {\n\t\t\treturn nil, &contract.StateConflictError{Tenant: run.Tenant, ID: run.ID, Expected: run.Version, Actual: stored.Version}\n\t\t}\n\t\tif err := fenced(stored, run.Fence); err != nil {\n"}}, nil},
	{"overflow-before-fence", "TestStateStore/Fencing/CheckOrder",
		"PatchRun checks the counters before the fence",
		[]edit{{"state.go", "\tif err := fenced(stored, patch.Fence); err != nil {\n",
			"\tif err := contract.CheckPatch(tenant, id, stored.Counters, patch.Counters); err != nil {\n\t\treturn nil, err\n\t}\n\tif err := fenced(stored, patch.Fence); err != nil {\n"}}, nil},
	{"delete-keeps-fence", "TestStateStore/Fencing/DeleteForgetsFence",
		"a deleted run's fence is remembered and given to the run created next under its id",
		[]edit{
			{"store.go", "\tkept        map[runKey]*runVersions", "\tgone        map[runKey]int64\n\tkept        map[runKey]*runVersions"},
			{"state.go", "\tdelete(s.runs, k)\n", "\tif s.gone == nil {\n\t\ts.gone = map[runKey]int64{}\n\t}\n\ts.gone[k] = r.Fence\n\tdelete(s.runs, k)\n"},
			{"state.go", "\tstored := &r\n", "\tr.Fence = max(r.Fence, s.gone[k])\n\tstored := &r\n"},
		}, nil},
	{"tokens-decrease", "TestWorkQueue/Lease/TokensIncrease",
		"tokens are unique but count down, so a newer execution holds a lower fence than the one it replaced",
		[]edit{{"queue.go", "\ts.tokens++\n\treturn s.tokens\n", "\ts.tokens--\n\treturn 1<<50 + s.tokens\n"}}, nil},

	// Run versions, one mutant per rule.
	{"put-keeps-no-version", "TestStateStore/History/VersionsHoldTheRunAsItWas",
		"PutRun keeps no version (also caught by KeepsExactlyN and the other History points)",
		[]edit{{"state.go", "\ts.keep(k, stored, now)\n\tif stored.Session != run.Session {", "\tif stored.Session != run.Session {"}}, nil},
	{"keeps-the-new-run", "TestStateStore/History/VersionsHoldTheRunAsItWas",
		"PutRun keeps the run as the write left it instead of as it was before",
		[]edit{{"state.go", "\ts.keep(k, stored, now)\n\tif stored.Session != run.Session {", "\tdefer s.keep(k, stored, now)\n\tif stored.Session != run.Session {"}}, nil},
	{"status-patch-keeps-none", "TestStateStore/History/CounterPatchKeepsNoVersion",
		"a patch that changes the status keeps no version",
		[]edit{{"state.go", "if patch.Status != \"\" && patch.Status != stored.Status {\n\t\ts.keep(k, stored, now)\n\t}\n", ""}}, nil},
	{"counter-patch-keeps-version", "TestStateStore/History/CounterPatchKeepsNoVersion",
		"every patch keeps a version, counter-only ones too",
		[]edit{{"state.go", "if patch.Status != \"\" && patch.Status != stored.Status {", "if true {"}}, nil},
	{"same-status-patch-keeps-version", "TestStateStore/History/CounterPatchKeepsNoVersion",
		"a patch that names the status the run already has keeps a version, though it changes neither status nor blob",
		[]edit{{"state.go", "if patch.Status != \"\" && patch.Status != stored.Status {", "if patch.Status != \"\" {"}}, nil},
	{"fork-conflict-first", "TestStateStore/History/ForkMissingVersionNotFound",
		"ForkRun looks for a run at the new ID before the version, so a fork of a version not kept onto an existing ID answers a conflict instead of ErrNotFound",
		[]edit{{"versions.go", "\tv := s.version(k, r, version, now)\n\tif v == nil {\n\t\treturn nil, contract.ErrNotFound\n\t}\n\tnk := s.runKey(tenant, newID)\n\tif taken, ok := s.runs[nk]; ok {\n\t\treturn nil, &contract.StateConflictError{Tenant: tenant, ID: newID, Expected: 0, Actual: taken.Version}\n\t}\n",
			"\tnk := s.runKey(tenant, newID)\n\tif taken, ok := s.runs[nk]; ok {\n\t\treturn nil, &contract.StateConflictError{Tenant: tenant, ID: newID, Expected: 0, Actual: taken.Version}\n\t}\n\tv := s.version(k, r, version, now)\n\tif v == nil {\n\t\treturn nil, contract.ErrNotFound\n\t}\n"}}, nil},
	{"keeps-one-fewer", "TestStateStore/History/KeepsExactlyN",
		"a run keeps KeepVersions-1 earlier versions",
		[]edit{{"versions.go", "if len(vs)-i > s.runPolicy.MaxKept() {", "if len(vs)-i >= s.runPolicy.MaxKept() {"}}, nil},
	{"count-ignored", "TestStateStore/History/KeepsExactlyN",
		"KeepVersions is not a bound: every version younger than the age is kept",
		[]edit{{"versions.go", "if len(vs)-i > s.runPolicy.MaxKept() {", "if len(vs)-i > contract.MaxRunVersions {"}}, nil},
	{"age-ignored", "TestStateStore/History/AgePruning",
		"VersionAge is not a bound",
		[]edit{{"versions.go", "return age <= 0 || vs[i].UpdatedAt.Add(age).After(now)", "return true || age <= 0"}}, nil},
	{"age-inclusive", "TestStateStore/History/AgePruning",
		"a version exactly VersionAge old is still shown",
		[]edit{{"versions.go", "return age <= 0 || vs[i].UpdatedAt.Add(age).After(now)", "return age <= 0 || !vs[i].UpdatedAt.Add(age).Before(now)"}}, nil},
	{"get-version-ignores-bounds", "TestStateStore/History/AgePruning",
		"GetRunVersion and ForkRun find a version past the bounds that no write has pruned yet",
		[]edit{{"versions.go", "if vs[i].Version == v && s.within(vs, i, now) {", "if vs[i].Version == v {"}}, nil},
	{"no-version-prune", "TestVersionsPrunedOnWrite",
		"writes never delete versions past the bounds (reads hide them), so a run's history grows without end",
		[]edit{{"versions.go", "n < contract.VersionPruneBatch && !s.within(vs, n, now)", "n < 0 && !s.within(vs, n, now)"}}, nil},
	{"version-prune-unbounded", "TestVersionsPrunedOnWrite",
		"one write deletes every version past the bounds, however many",
		[]edit{{"versions.go", "n < contract.VersionPruneBatch && !s.within(vs, n, now)", "!s.within(vs, n, now)"}}, nil},
	{"current-not-listed", "TestStateStore/History/CurrentListedFirst",
		"ListRunVersions lists only the kept versions, not the run as it is",
		[]edit{{"versions.go", "if r.Version < before && !add(r) {", "if false && !add(r) {"}}, nil},
	{"version-cursor-inclusive", "TestStateStore/History/PagingStableWhileWritten",
		"a page starts at its cursor's version instead of below it, so it repeats the last of the page before",
		[]edit{{"versions.go", "if vs[i].Version >= before || !s.within(vs, i, now) {", "if vs[i].Version > before || !s.within(vs, i, now) {"}}, nil},
	{"get-version-missing-is-current", "TestStateStore/History/GetRunVersion",
		"GetRunVersion answers the run as it is for a version not kept",
		[]edit{{"versions.go", "\tif v == nil {\n\t\treturn nil, contract.ErrNotFound\n\t}\n\treturn copyRun(v), nil\n", "\tif v == nil {\n\t\tv = r\n\t}\n\treturn copyRun(v), nil\n"}}, nil},
	{"fork-copies-current", "TestStateStore/History/ForkCopiesVersion",
		"ForkRun copies the run as it is, whatever version it was given",
		[]edit{{"versions.go", "\tnk := s.runKey(tenant, newID)\n", "\tv = r\n\tnk := s.runKey(tenant, newID)\n"}}, nil},
	{"fork-keeps-fence", "TestStateStore/History/ForkCopiesVersion",
		"a fork carries its version's fence, so the new run's first fenced writes are refused",
		[]edit{{"versions.go", "Counters: v.Counters}, now)", "Counters: v.Counters, Fence: v.Fence}, now)"}}, nil},
	{"fork-keeps-versions", "TestStateStore/History/ForkCopiesVersion",
		"a fork lists its source's versions as its own",
		[]edit{{"versions.go", "\treturn copyRun(forked), nil\n", "\ts.kept[nk] = s.kept[k]\n\treturn copyRun(forked), nil\n"}}, nil},
	{"fork-overwrites", "TestStateStore/History/ForkOntoExistingConflicts",
		"ForkRun onto an existing id replaces that run",
		[]edit{{"versions.go", "if taken, ok := s.runs[nk]; ok {", "if taken, ok := s.runs[nk]; ok && false {"}}, nil},
	{"fork-conflict-wrong-version", "TestStateStore/History/ForkOntoExistingConflicts",
		"the conflict of a fork onto an existing id reports that run's Seq as its version",
		[]edit{{"versions.go", "Expected: 0, Actual: taken.Version}", "Expected: 0, Actual: taken.Seq}"}}, nil},
	{"fork-missing-forks-current", "TestStateStore/History/ForkMissingVersionNotFound",
		"ForkRun of a version not kept forks the run as it is",
		[]edit{{"versions.go", "\tv := s.version(k, r, version, now)\n\tif v == nil {\n\t\treturn nil, contract.ErrNotFound\n\t}\n", "\tv := s.version(k, r, version, now)\n\tif v == nil {\n\t\tv = r\n\t}\n"}}, nil},
	{"delete-keeps-versions", "TestStateStore/History/DeleteRemovesVersions",
		"DeleteRun leaves the run's versions, and a run created under its id lists them",
		[]edit{{"state.go", "\tdelete(s.kept, k)\n", ""}}, nil},
}

func TestMutantsAreCaught(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the mutants are built with the go command, which is not on PATH: %v", err)
	}
	var all []string
	for _, m := range mutants {
		all = append(all, m.caughtBy)
		t.Run(m.mutation, func(t *testing.T) {
			// Each mutant is its own go test run, mostly compiling and
			// linking: two at a time keep both cores busy.
			t.Parallel()
			overlay := writeOverlay(t, m.edits, m.adds)
			out, err := runSuitePoint(t, gotool, overlay, m.caughtBy)
			if !bytes.Contains(out, []byte("=== RUN   "+m.caughtBy+"\n")) {
				t.Fatalf("suite point %s did not run: renamed or removed, or the mutant does not build? Its output:\n%s", m.caughtBy, out)
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("mutant %s survived %s (%s); its output:\n%s", m.mutation, m.caughtBy, m.why, out)
			}
			if !bytes.Contains(out, []byte("--- FAIL: "+m.caughtBy+" ")) {
				t.Fatalf("mutant %s made the run fail, but not at %s; its output:\n%s", m.mutation, m.caughtBy, out)
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		t.Parallel()
		out, err := runSuitePoint(t, gotool, "", all...)
		if err != nil {
			t.Fatalf("the intact store fails the points of the mutation table: %v\n%s", err, out)
		}
		for _, p := range all {
			if !bytes.Contains(out, []byte("--- PASS: "+p+" ")) {
				t.Errorf("the control run did not pass %s; its output:\n%s", p, out)
			}
		}
	})
}

// writeOverlay writes the mutant's files to a temporary folder and returns
// the go build overlay that puts them in place of the package's own.
func writeOverlay(t *testing.T, edits []edit, adds []string) string {
	t.Helper()
	dir := t.TempDir()
	pkg, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range edits {
		src, ok := files[e.file]
		if !ok {
			b, err := os.ReadFile(e.file)
			if err != nil {
				t.Fatal(err)
			}
			src = string(b)
		}
		if n := strings.Count(src, e.old); n != 1 {
			t.Fatalf("the edit of %s expects its text once in the file, found it %d times: update the mutation table to the code\n%s", e.file, n, e.old)
		}
		files[e.file] = strings.Replace(src, e.old, e.new, 1)
	}
	replace := map[string]string{}
	for name, src := range files {
		mutated := filepath.Join(dir, name)
		if err := os.WriteFile(mutated, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		replace[filepath.Join(pkg, name)] = mutated
	}
	for _, name := range adds {
		replace[filepath.Join(pkg, "mutant_"+name)] = filepath.Join(pkg, "testdata", "mutants", name)
	}
	b, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlay, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return overlay
}

// runSuitePoint runs the given suite points in a go test of this package,
// built with the overlay when one is given.
func runSuitePoint(t *testing.T, gotool, overlay string, points ...string) ([]byte, error) {
	t.Helper()
	args := []string{"test", "-count=1", "-vet=off", "-v", "-run=" + runPattern(points)}
	if overlay != "" {
		args = append(args, "-overlay="+overlay)
	}
	cmd := exec.CommandContext(t.Context(), gotool, append(args, ".")...)
	return cmd.CombinedOutput()
}

// runPattern turns suite points into one -test.run pattern. The testing
// package splits a pattern at top-level bars before it splits at slashes,
// so each point stays a path of its own.
func runPattern(points []string) string {
	alts := make([]string, len(points))
	for i, p := range points {
		alts[i] = "^" + strings.ReplaceAll(p, "/", "$/^") + "$"
	}
	return strings.Join(alts, "|")
}
