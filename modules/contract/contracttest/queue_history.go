package contracttest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// queueHistoryCases pin the history a backing keeps: the events of every
// transition, the per-item cap, retention and pruning, uniqueness
// windows, Find, the finished listing and the queue's event log.
func queueHistoryCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"EventsRetryAndComplete", testHistoryRetryComplete},
		{"EventsDeadRequeueCompleteAndClaim", testHistoryDeadRequeue},
		{"EventsSnoozeWaitSignal", testHistorySnoozeWait},
		{"EventsCancel", testHistoryCancel},
		{"EventsReap", testHistoryReap},
		{"EventCapAndHeartbeats", testHistoryCap},
		{"KeepsCompleted", testHistoryKeepsCompleted},
		{"ZeroRetentionKeepsNothing", testHistoryZeroRetention},
		{"PruneByAge", testHistoryPruneAge},
		{"PruneByCount", testHistoryPruneCount},
		{"PruneBatchBound", testHistoryPruneBatch},
		{"UniqueWindowHoldsAndExpires", testHistoryUniqueWindow},
		{"DuplicatesReported", testHistoryDuplicates},
		{"FindAcrossTenants", testHistoryFind},
		{"FinishedFilters", testHistoryFinishedFilters},
		{"FinishedPagingStable", testHistoryFinishedPaging},
		{"QueueEventsFollow", testHistoryQueueEvents},
		{"QueueEventsGap", testHistoryQueueEventsGap},
		{"BadInputChangesNothing", testHistoryBadInput},
	}
}

// runHistoryGroup runs the History area; a queue that keeps no history
// fails it once, naming the backing: every backing must keep one.
func runHistoryGroup(t *testing.T, f QueueFactory) {
	t.Helper()
	t.Run("History", func(t *testing.T) {
		q, _ := newQueue(t, f, testPolicy())
		if caps := contract.CapabilitiesOf(q); !caps.History {
			t.Fatalf("backing %q (%T) has no HistoryKeeper (contract.HistoryKeeper, Capabilities().History): every backing must", caps.Backing, q)
		}
		for _, c := range queueHistoryCases() {
			t.Run(c.name, func(t *testing.T) { c.run(t, f) })
		}
	})
}

// historyOf returns q's HistoryKeeper.
func historyOf(t *testing.T, q contract.WorkQueue) contract.HistoryKeeper {
	t.Helper()
	hk, ok := contract.AsHistoryKeeper(q)
	if !ok {
		t.Fatalf("%T has no contract.HistoryKeeper", q)
	}
	return hk
}

// newHistoryQueue returns a fresh queue whose default queue has retention r.
func newHistoryQueue(t *testing.T, f QueueFactory, p policy.Policy, r contract.Retention) (contract.WorkQueue, contract.HistoryKeeper, *FakeClock) {
	t.Helper()
	q, clock := newQueue(t, f, p)
	hk := historyOf(t, q)
	mustNoErr(t, hk.SetRetention(t.Context(), "", r), "SetRetention(%+v)", r)
	return q, hk, clock
}

// allEvents keeps everything for a day and records every event.
var allEvents = contract.Retention{Age: 24 * time.Hour, Events: 100}

func historyOfItem(t *testing.T, hk contract.HistoryKeeper, k contract.ItemKey) contract.History {
	t.Helper()
	h, err := hk.History(t.Context(), k)
	mustNoErr(t, err, "History(%s/%s)", k.Tenant, k.ID)
	return h
}

func eventKinds(evs []contract.Event) []contract.EventKind {
	out := make([]contract.EventKind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

// wantKinds fails unless the item's events are of exactly these kinds, in
// order, and returns them.
func wantKinds(t *testing.T, hk contract.HistoryKeeper, k contract.ItemKey, kinds ...contract.EventKind) []contract.Event {
	t.Helper()
	h := historyOfItem(t, hk, k)
	if !slices.Equal(eventKinds(h.Events), kinds) {
		t.Fatalf("History(%s/%s) events = %v, want %v", k.Tenant, k.ID, eventKinds(h.Events), kinds)
	}
	for i, e := range h.Events {
		if e.Tenant != "" || e.ID != "" {
			t.Errorf("History event %d (%s) names tenant %q id %q; an item's own events leave them empty", i, e.Kind, e.Tenant, e.ID)
		}
	}
	return h.Events
}

// wantEvent fails unless ev matches want in every field but At, and its
// At is at.
func wantEvent(t *testing.T, what string, ev, want contract.Event, at time.Time) {
	t.Helper()
	sameTime(t, what+" At", ev.At, at)
	sameTime(t, what+" NextDue", ev.NextDue, want.NextDue)
	if ev.NextDue.IsZero() != want.NextDue.IsZero() {
		t.Errorf("%s NextDue = %v, want %v", what, ev.NextDue, want.NextDue)
	}
	ev.At, ev.NextDue, want.At, want.NextDue = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if d := ev.RunTime - want.RunTime; d < -timeSlack || d > timeSlack {
		t.Errorf("%s RunTime = %v, want %v", what, ev.RunTime, want.RunTime)
	}
	ev.RunTime, want.RunTime = 0, 0
	if ev != want {
		t.Errorf("%s = %+v, want %+v", what, ev, want)
	}
}

func testHistoryRetryComplete(t *testing.T, f QueueFactory) {
	q, hk, clock := newHistoryQueue(t, f, testPolicy(), allEvents)
	t0 := clock.Now()
	it := item("acme", "x")
	it.NotBefore = t0.Add(time.Minute)
	enqueue(t, q, it)
	clock.Advance(time.Minute)
	t1 := clock.Now()
	l1 := claimOne(t, q, "w1")
	clock.Advance(time.Second)
	t2 := clock.Now()
	d, err := q.Fail(t.Context(), l1, errors.New("boom"))
	mustNoErr(t, err, "Fail")
	if !d.Retry {
		t.Fatalf("Fail decision = %+v, want a retry", d)
	}
	clock.Set(d.At)
	t3 := clock.Now()
	l2 := claimOne(t, q, "w2")
	clock.Advance(5 * time.Second)
	t4 := clock.Now()
	mustNoErr(t, q.Complete(t.Context(), l2), "Complete")
	evs := wantKinds(t, hk, l1.Key(), contract.EventEnqueued, contract.EventClaimed, contract.EventFailed, contract.EventClaimed, contract.EventCompleted)
	wantEvent(t, "enqueued", evs[0], contract.Event{Kind: contract.EventEnqueued, NextDue: it.NotBefore}, t0)
	wantEvent(t, "claimed 1", evs[1], contract.Event{Kind: contract.EventClaimed, Worker: "w1", Attempt: 1, Token: l1.Token}, t1)
	info := itemOf(t, q, l1.Key())
	wantEvent(t, "failed", evs[2], contract.Event{Kind: contract.EventFailed, Worker: "w1", Attempt: 1, Error: info.Item.LastError, NextDue: d.At}, t2)
	if info.Item.LastError == "" {
		t.Errorf("the completed item has no LastError; the failure's error should stay")
	}
	wantEvent(t, "claimed 2", evs[3], contract.Event{Kind: contract.EventClaimed, Worker: "w2", Attempt: 2, Token: l2.Token}, t3)
	wantEvent(t, "completed", evs[4], contract.Event{Kind: contract.EventCompleted, Worker: "w2", Attempt: 2, RunTime: 5 * time.Second}, t4)
	r, err := hk.Retention(t.Context(), contract.DefaultQueue)
	mustNoErr(t, err, "Retention")
	if r != allEvents {
		t.Errorf("Retention() = %+v, want the %+v set", r, allEvents)
	}
	if r, err := hk.Retention(t.Context(), "other"); err != nil || r != (contract.Retention{}) {
		t.Errorf("Retention(other) = %+v, %v; want the zero Retention", r, err)
	}
}

func testHistoryDeadRequeue(t *testing.T, f QueueFactory) {
	q, hk, clock := newHistoryQueue(t, f, policy.Policy{MaxAttempts: 1, Jitter: policy.Fixed(1)}, allEvents)
	enqueue(t, q, item("acme", "d"))
	l := claimOne(t, q, "w")
	clock.Advance(time.Second)
	tDead := clock.Now()
	d, err := q.Fail(t.Context(), l, errors.New("fatal"))
	mustNoErr(t, err, "Fail")
	if d.Retry {
		t.Fatalf("Fail with MaxAttempts 1 = %+v, want the dead letter", d)
	}
	clock.Advance(time.Second)
	tReq := clock.Now()
	n, err := q.Requeue(t.Context(), contract.DeadLetterFilter{Queue: contract.DefaultQueue})
	mustNoErr(t, err, "Requeue")
	if n != 1 {
		t.Fatalf("Requeue = %d, want 1", n)
	}
	l2 := claimOne(t, q, "w2")
	clock.Advance(2 * time.Second)
	tDone := clock.Now()
	if cc, ok := contract.AsCompleteClaimer(q); ok {
		_, err = cc.CompleteAndClaim(t.Context(), []contract.Lease{l2}, claimReq("w2", 1))
		if err != nil && !errors.Is(err, contract.ErrEmpty) {
			t.Fatalf("CompleteAndClaim: %v", err)
		}
	} else {
		mustNoErr(t, q.Complete(t.Context(), l2), "Complete")
	}
	evs := wantKinds(t, hk, l.Key(), contract.EventEnqueued, contract.EventClaimed, contract.EventDead, contract.EventRequeued, contract.EventClaimed, contract.EventCompleted)
	wantEvent(t, "dead", evs[2], contract.Event{Kind: contract.EventDead, Worker: "w", Attempt: 1, Error: contract.ErrorText(errors.New("fatal"))}, tDead)
	wantEvent(t, "requeued", evs[3], contract.Event{Kind: contract.EventRequeued}, tReq)
	wantEvent(t, "claimed after requeue", evs[4], contract.Event{Kind: contract.EventClaimed, Worker: "w2", Attempt: 1, Token: l2.Token}, tReq)
	wantEvent(t, "completed by CompleteAndClaim", evs[5], contract.Event{Kind: contract.EventCompleted, Worker: "w2", Attempt: 1, RunTime: 2 * time.Second}, tDone)
	if info := itemOf(t, q, l.Key()); info.Item.State != contract.StateCompleted {
		t.Errorf("after CompleteAndClaim the item is %q, want completed (kept by the retention)", info.Item.State)
	}
}

func testHistorySnoozeWait(t *testing.T, f QueueFactory) {
	q, hk, clock := newHistoryQueue(t, f, testPolicy(), allEvents)
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "s"))
	tS := clock.Now()
	_, err := lc.Snooze(t.Context(), claimOne(t, q, "ws"), time.Minute)
	mustNoErr(t, err, "Snooze")
	clock.Advance(time.Minute)
	tW := clock.Now()
	mustNoErr(t, lc.Wait(t.Context(), claimOne(t, q, "ww"), contract.WaitRequest{Signal: "go", Timeout: time.Hour}), "Wait")
	clock.Advance(time.Second)
	tSig := clock.Now()
	mustNoErr(t, lc.Signal(t.Context(), key("acme", "s"), "go", []byte("p")), "Signal")
	l := claimOne(t, q, "ww")
	mustNoErr(t, lc.Wait(t.Context(), l, contract.WaitRequest{Signal: "late", Timeout: time.Minute}), "the second Wait")
	clock.Advance(time.Minute)
	tOut := clock.Now()
	claimOne(t, q, "wt") // the timed-out wait is due again
	evs := wantKinds(t, hk, key("acme", "s"), contract.EventEnqueued, contract.EventClaimed, contract.EventSnoozed,
		contract.EventClaimed, contract.EventWaiting, contract.EventSignalled, contract.EventClaimed, contract.EventWaiting,
		contract.EventTimedOut, contract.EventClaimed)
	wantEvent(t, "snoozed", evs[2], contract.Event{Kind: contract.EventSnoozed, Worker: "ws", NextDue: tS.Add(time.Minute)}, tS)
	wantEvent(t, "waiting", evs[4], contract.Event{Kind: contract.EventWaiting, Worker: "ww", Signal: "go", NextDue: tW.Add(time.Hour)}, tW)
	wantEvent(t, "signalled", evs[5], contract.Event{Kind: contract.EventSignalled, Signal: "go"}, tSig)
	if evs[8].Signal != "late" || evs[8].At.Before(tOut.Add(-timeSlack)) {
		t.Errorf("timed_out = %+v, want signal late, at or after %v", evs[8], tOut)
	}
	if evs[9].Attempt != 1 || evs[9].Worker != "wt" {
		t.Errorf("the claim after the timeout = %+v, want worker wt, attempt 1 (no attempt charged)", evs[9])
	}
}

func testHistoryCancel(t *testing.T, f QueueFactory) {
	q, hk, clock := newHistoryQueue(t, f, testPolicy(), allEvents)
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "leased"), item("acme", "queued"), item("acme", "m1"), item("acme", "m2"), item("acme", "keep"))
	l := claimOne(t, q, "w")
	clock.Advance(time.Second)
	tC := clock.Now()
	if _, err := lc.Cancel(t.Context(), key("acme", "queued"), "no longer needed"); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.Cancel(t.Context(), l.Key(), "stop it"); err != nil {
		t.Fatal(err)
	}
	wantKinds(t, hk, l.Key(), contract.EventEnqueued, contract.EventClaimed) // only marked so far
	clock.Advance(time.Second)
	tL := clock.Now()
	wantCancelled(t, q.Complete(t.Context(), l), "Complete of a cancelled lease", l.Key())
	n, err := lc.CancelMatching(t.Context(), contract.CancelFilter{Queue: contract.DefaultQueue, IDPrefix: "m"}, "bulk")
	mustNoErr(t, err, "CancelMatching")
	if n != 2 {
		t.Fatalf("CancelMatching = %d, want 2", n)
	}
	evs := wantKinds(t, hk, key("acme", "queued"), contract.EventEnqueued, contract.EventCancelled)
	wantEvent(t, "cancelled queued", evs[1], contract.Event{Kind: contract.EventCancelled, Reason: "no longer needed"}, tC)
	evs = wantKinds(t, hk, l.Key(), contract.EventEnqueued, contract.EventClaimed, contract.EventCancelled)
	wantEvent(t, "cancelled leased", evs[2], contract.Event{Kind: contract.EventCancelled, Reason: "stop it"}, tL)
	for _, id := range []string{"m1", "m2"} {
		evs = wantKinds(t, hk, key("acme", id), contract.EventEnqueued, contract.EventCancelled)
		wantEvent(t, "cancelled by CancelMatching", evs[1], contract.Event{Kind: contract.EventCancelled, Reason: "bulk"}, tL)
	}
	wantKinds(t, hk, key("acme", "keep"), contract.EventEnqueued)
	h := historyOfItem(t, hk, l.Key())
	sameTime(t, "a leased item's FinishedAt (when it became cancelled)", h.Item.FinishedAt, tL)
	sameTime(t, "its CancelledAt (when the cancel was asked)", h.Item.CancelledAt, tC)
}

func testHistoryReap(t *testing.T, f QueueFactory) {
	q, hk, clock := newHistoryQueue(t, f, testPolicy(), allEvents)
	enqueue(t, q, item("acme", "r"))
	ls, err := q.Claim(t.Context(), contract.ClaimRequest{Worker: "w", LeaseFor: time.Second, Max: 1})
	mustNoErr(t, err, "Claim")
	clock.Advance(2 * time.Second)
	tR := clock.Now()
	n, err := q.Reap(t.Context(), contract.DefaultQueue)
	mustNoErr(t, err, "Reap")
	if n != 1 {
		t.Fatalf("Reap = %d, want 1", n)
	}
	info := itemOf(t, q, ls[0].Key())
	evs := wantKinds(t, hk, ls[0].Key(), contract.EventEnqueued, contract.EventClaimed, contract.EventFailed)
	wantEvent(t, "failed by Reap", evs[2], contract.Event{Kind: contract.EventFailed, Worker: "", Attempt: 1, Error: info.Item.LastError, NextDue: info.Item.NotBefore}, tR)
	if info.Item.LastError == "" || info.Item.NotBefore.IsZero() {
		t.Errorf("the reaped item = %+v, want a LastError and a retry time", info.Item)
	}
}

func testHistoryCap(t *testing.T, f QueueFactory) {
	q, hk, _ := newHistoryQueue(t, f, testPolicy(), contract.Retention{Age: time.Hour, Events: 3})
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "c"))
	l := claimOne(t, q, "w")
	for range 3 {
		var err error
		l, err = q.Heartbeat(t.Context(), l, lease)
		mustNoErr(t, err, "Heartbeat")
	}
	_, err := lc.Snooze(t.Context(), l, 0)
	mustNoErr(t, err, "Snooze")
	l = claimOne(t, q, "w")
	mustNoErr(t, q.Complete(t.Context(), l), "Complete")
	// enqueued, claimed, snoozed, claimed, completed: the cap keeps 3.
	h := historyOfItem(t, hk, l.Key())
	if !slices.Equal(eventKinds(h.Events), []contract.EventKind{contract.EventSnoozed, contract.EventClaimed, contract.EventCompleted}) || h.Dropped != 2 {
		t.Fatalf("History = events %v, dropped %d; want the newest 3 [snoozed claimed completed], 2 dropped", eventKinds(h.Events), h.Dropped)
	}
	if h.Heartbeats != 3 {
		t.Fatalf("History.Heartbeats = %d, want 3", h.Heartbeats)
	}
}

func testHistoryKeepsCompleted(t *testing.T, f QueueFactory) {
	q, hk, clock := newHistoryQueue(t, f, testPolicy(), contract.Retention{Age: time.Hour})
	it := item("acme", "k")
	it.Metadata = map[string]string{"trace": "t1"}
	enqueue(t, q, it, item("acme", "live"))
	l := claimOne(t, q, "w")
	clock.Advance(time.Second)
	tDone := clock.Now()
	mustNoErr(t, q.Complete(t.Context(), l), "Complete")
	info := itemOf(t, q, l.Key())
	if info.Item.State != contract.StateCompleted || info.Lease != nil || string(info.Item.Payload) != "payload of k" {
		t.Fatalf("the kept item = state %q, lease %v, payload %q; want completed, no lease, its payload", info.Item.State, info.Lease, info.Item.Payload)
	}
	sameMetadata(t, "the kept item", info.Item.Metadata, it.Metadata)
	sameTime(t, "FinishedAt", info.Item.FinishedAt, tDone)
	h := historyOfItem(t, hk, l.Key())
	if h.Item.State != contract.StateCompleted || len(h.Events) != 0 {
		t.Errorf("History of a kept item on a queue without events = %+v, want it completed, no events", h)
	}
	if got := leaseIDs(drain(t, q, "", "w", 10)); len(got) != 1 || got[0] != "acme/live" {
		t.Fatalf("claims after the complete served %v, want acme/live only (a completed item is never claimed)", got)
	}
	wantLeaseLost(t, q.Complete(t.Context(), l), "a second Complete of the kept item", l.Key())
	ts, err := inspectorOf(t, q).Tenants(t.Context(), contract.DefaultQueue)
	mustNoErr(t, err, "Tenants")
	if len(ts) != 1 || ts[0].Ready != 0 || ts[0].Leased != 1 || ts[0].Later != 0 {
		t.Errorf("Tenants = %+v, want acme with the one live lease (a completed item counts as neither ready nor leased)", ts)
	}
}

func testHistoryZeroRetention(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	hk := historyOf(t, q)
	enqueue(t, q, item("acme", "z"))
	l := claimOne(t, q, "w")
	mustNoErr(t, q.Complete(t.Context(), l), "Complete")
	_, err := hk.History(t.Context(), l.Key())
	wantIs(t, err, contract.ErrNotFound, "History of an item completed without retention")
	_, err = inspectorOf(t, q).Item(t.Context(), l.Key())
	wantIs(t, err, contract.ErrNotFound, "Inspector.Item of an item completed without retention")
	p, err := hk.Finished(t.Context(), contract.FinishedQuery{Page: contract.PageRequest{Limit: 10}})
	mustNoErr(t, err, "Finished")
	if len(p.Items) != 0 {
		t.Errorf("Finished without retention = %d items, want none", len(p.Items))
	}
	ev, err := hk.QueueEvents(t.Context(), "", "", 10)
	mustNoErr(t, err, "QueueEvents")
	if len(ev.Events) != 0 || ev.Next == "" {
		t.Errorf("QueueEvents without events = %d events, Next %q; want none and a cursor", len(ev.Events), ev.Next)
	}
	clock.Advance(time.Hour)
	if n, err := hk.Prune(t.Context(), ""); err != nil || n != 0 {
		t.Errorf("Prune without retention = %d, %v; want 0", n, err)
	}
	enqueue(t, q, item("acme", "z"))
	if got := claimOne(t, q, "w"); got.Item.ID != "z" {
		t.Fatalf("re-enqueue of a completed ID served %s", got.Item.ID)
	}
}

// finishSeq completes fresh items of tenant, one per step, claiming each
// alone (nothing else is queued).
func finishSeq(t *testing.T, q contract.WorkQueue, clock *FakeClock, step time.Duration, tenant string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		enqueue(t, q, item(tenant, id))
		mustNoErr(t, q.Complete(t.Context(), claimOne(t, q, "w")), "Complete of %s", id)
		clock.Advance(step)
	}
}

func finishedIDs(t *testing.T, hk contract.HistoryKeeper, fq contract.FinishedQuery) []string {
	t.Helper()
	if fq.Page.Limit == 0 {
		fq.Page.Limit = contract.MaxPageSize
	}
	p, err := hk.Finished(t.Context(), fq)
	mustNoErr(t, err, "Finished(%+v)", fq)
	out := []string{}
	for _, it := range p.Items {
		out = append(out, it.Tenant+"/"+it.ID)
	}
	return out
}

func wantFinished(t *testing.T, hk contract.HistoryKeeper, fq contract.FinishedQuery, what string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := finishedIDs(t, hk, fq); !slices.Equal(got, want) {
		t.Errorf("%s: Finished = %v, want %v", what, got, want)
	}
}

func testHistoryPruneAge(t *testing.T, f QueueFactory) {
	q, hk, clock := newHistoryQueue(t, f, testPolicy(), contract.Retention{Age: 10 * time.Minute})
	lc := lifecycleOf(t, q)
	finishSeq(t, q, clock, time.Minute, "acme", "a", "b", "c")
	// A cancelled item goes by the same age; a live one never.
	enqueue(t, q, item("acme", "cx"), item("acme", "live"))
	if _, err := lc.Cancel(t.Context(), key("acme", "cx"), ""); err != nil {
		t.Fatal(err)
	}
	// a at 0, b at 1m, c at 2m, cx at 3m. At 11m a and b are past 10m.
	clock.Set(FakeEpoch.Add(11 * time.Minute))
	n, err := hk.Prune(t.Context(), "")
	mustNoErr(t, err, "Prune")
	if n != 2 {
		t.Fatalf("Prune at 11m = %d, want 2 (a and b)", n)
	}
	wantFinished(t, hk, contract.FinishedQuery{}, "after the first prune", "acme/cx", "acme/c")
	_, err = hk.History(t.Context(), key("acme", "a"))
	wantIs(t, err, contract.ErrNotFound, "History of a pruned item")
	clock.Set(FakeEpoch.Add(13*time.Minute - time.Millisecond))
	if n, err := hk.Prune(t.Context(), ""); err != nil || n != 1 {
		t.Fatalf("Prune just before 13m = %d, %v; want 1 (c)", n, err)
	}
	clock.Set(FakeEpoch.Add(time.Hour))
	if n, err := hk.Prune(t.Context(), ""); err != nil || n != 1 {
		t.Fatalf("Prune at 1h = %d, %v; want 1 (cx)", n, err)
	}
	wantFinished(t, hk, contract.FinishedQuery{}, "after every prune")
	if info := itemOf(t, q, key("acme", "live")); info.Item.State != contract.StateQueued {
		t.Fatalf("the live item after Prune is %q, want queued", info.Item.State)
	}
	if n, err := hk.Prune(t.Context(), ""); err != nil || n != 0 {
		t.Fatalf("Prune with nothing due = %d, %v", n, err)
	}
}

func testHistoryPruneCount(t *testing.T, f QueueFactory) {
	q, hk, clock := newHistoryQueue(t, f, testPolicy(), contract.Retention{Count: 3})
	lc := lifecycleOf(t, q)
	finishSeq(t, q, clock, time.Second, "acme", "f1", "f2", "f3")
	enqueue(t, q, item("beta", "c4"))
	if _, err := lc.Cancel(t.Context(), key("beta", "c4"), ""); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	finishSeq(t, q, clock, time.Second, "acme", "f5")
	// Two leased items beside them, which count for nothing.
	enqueue(t, q, item("beta", "held"), item("acme", "leased"))
	if ls, err := q.Claim(t.Context(), claimReq("w", 10)); err != nil || len(ls) != 2 {
		t.Fatalf("Claim = %d leases, %v; want 2", len(ls), err)
	}
	clock.Advance(time.Hour)
	n, err := hk.Prune(t.Context(), "")
	mustNoErr(t, err, "Prune")
	if n != 2 {
		t.Fatalf("Prune with Count 3 of 5 finished = %d, want 2 (f1 and f2)", n)
	}
	wantFinished(t, hk, contract.FinishedQuery{}, "after the prune", "acme/f5", "beta/c4", "acme/f3")
	if n, err := hk.Prune(t.Context(), ""); err != nil || n != 0 {
		t.Fatalf("a second Prune = %d, %v; want 0", n, err)
	}
	// A smaller Count applies to what is already kept.
	mustNoErr(t, hk.SetRetention(t.Context(), "", contract.Retention{Count: 1}), "SetRetention(Count 1)")
	if n, err := hk.Prune(t.Context(), ""); err != nil || n != 2 {
		t.Fatalf("Prune after lowering Count to 1 = %d, %v; want 2", n, err)
	}
	wantFinished(t, hk, contract.FinishedQuery{}, "after Count 1", "acme/f5")
	for _, k := range []contract.ItemKey{key("beta", "held"), key("acme", "leased")} {
		if info := itemOf(t, q, k); info.Item.State != contract.StateLeased {
			t.Fatalf("%s after Prune is %q, want leased", k.ID, info.Item.State)
		}
	}
}

func testHistoryPruneBatch(t *testing.T, f QueueFactory) {
	q, hk, clock := newHistoryQueue(t, f, testPolicy(), contract.Retention{Age: time.Minute})
	n := contract.PruneBatch + 1
	its := items("acme", "p", n)
	for len(its) > 0 {
		k := min(len(its), 500)
		mustNoErr(t, q.Enqueue(t.Context(), its[:k]...), "Enqueue")
		its = its[k:]
	}
	for done := 0; done < n; {
		ls, err := q.Claim(t.Context(), claimReq("w", contract.MaxClaimBatch))
		mustNoErr(t, err, "Claim")
		mustNoErr(t, q.Complete(t.Context(), ls...), "Complete")
		done += len(ls)
	}
	enqueue(t, q, item("acme", "live"))
	clock.Advance(time.Minute)
	got, err := hk.Prune(t.Context(), "")
	mustNoErr(t, err, "Prune")
	if got != contract.PruneBatch {
		t.Fatalf("Prune of %d expired items = %d, want PruneBatch (%d)", n, got, contract.PruneBatch)
	}
	got, err = hk.Prune(t.Context(), "")
	mustNoErr(t, err, "the second Prune")
	if got != 1 {
		t.Fatalf("the second Prune = %d, want the 1 left", got)
	}
	if l := claimOne(t, q, "w"); l.Item.ID != "live" {
		t.Fatalf("after the prunes the claim served %s, want live", l.Item.ID)
	}
}

func testHistoryUniqueWindow(t *testing.T, f QueueFactory) {
	q, hk, clock := newHistoryQueue(t, f, testPolicy(), contract.Retention{Events: 10})
	it := item("acme", "u")
	it.UniqueFor = time.Hour
	enqueue(t, q, it)
	l := claimOne(t, q, "w")
	tDone := clock.Now()
	mustNoErr(t, q.Complete(t.Context(), l), "Complete")
	info := itemOf(t, q, l.Key())
	if info.Item.State != contract.StateCompleted || info.Item.UniqueFor != time.Hour {
		t.Fatalf("an item with a uniqueness window after Complete = %q (UniqueFor %v), want completed and kept for its window", info.Item.State, info.Item.UniqueFor)
	}
	clock.Advance(time.Hour - time.Millisecond)
	again := item("acme", "u")
	again.Payload = []byte("second life")
	rep, err := hk.EnqueueReport(t.Context(), again)
	mustNoErr(t, err, "EnqueueReport within the window")
	if len(rep) != 1 || !rep[0].Duplicate || rep[0].State != contract.StateCompleted {
		t.Fatalf("EnqueueReport within the window = %+v, want a completed duplicate", rep)
	}
	sameTime(t, "UniqueUntil", rep[0].UniqueUntil, tDone.Add(time.Hour))
	mustNoErr(t, q.Enqueue(t.Context(), again), "plain Enqueue within the window")
	wantEmpty(t, q, "", "a duplicate within the window")
	if n, err := hk.Prune(t.Context(), ""); err != nil || n != 0 {
		t.Fatalf("Prune within the window = %d, %v; want 0", n, err)
	}
	clock.Advance(time.Millisecond)
	rep, err = hk.EnqueueReport(t.Context(), again)
	mustNoErr(t, err, "EnqueueReport after the window")
	if len(rep) != 1 || rep[0].Duplicate {
		t.Fatalf("EnqueueReport after the window = %+v, want a new item", rep)
	}
	wantKinds(t, hk, l.Key(), contract.EventEnqueued) // a new life: the old events went
	got := claimOne(t, q, "w")
	if string(got.Item.Payload) != "second life" || got.Item.Attempts != 0 {
		t.Fatalf("the re-enqueued item = %+v, want the new payload", got.Item)
	}
	// No uniqueness window this time and no retention that keeps: gone.
	mustNoErr(t, q.Complete(t.Context(), got), "Complete of the second life")
	_, err = hk.History(t.Context(), l.Key())
	wantIs(t, err, contract.ErrNotFound, "History of an item without window or retention, completed")

	// A window that closes is pruned even though the queue keeps nothing.
	w := item("acme", "w")
	w.UniqueFor = time.Minute
	enqueue(t, q, w)
	mustNoErr(t, q.Complete(t.Context(), claimOne(t, q, "w")), "Complete of w")
	clock.Advance(time.Minute)
	if n, err := hk.Prune(t.Context(), ""); err != nil || n != 1 {
		t.Fatalf("Prune after w's window = %d, %v; want 1", n, err)
	}
	_, err = hk.History(t.Context(), key("acme", "w"))
	wantIs(t, err, contract.ErrNotFound, "History of w after its prune")
}

func testHistoryDuplicates(t *testing.T, f QueueFactory) {
	q, hk, _ := newHistoryQueue(t, f, policy.Policy{MaxAttempts: 1, Jitter: policy.Fixed(1)}, allEvents)
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "dead"))
	if _, err := q.Fail(t.Context(), claimOne(t, q, "w"), errors.New("x")); err != nil {
		t.Fatal(err)
	}
	enqueue(t, q, item("acme", "leased"))
	claimOne(t, q, "w")
	enqueue(t, q, item("acme", "queued"), item("acme", "cancelled"))
	if _, err := lc.Cancel(t.Context(), key("acme", "cancelled"), ""); err != nil {
		t.Fatal(err)
	}
	rep, err := hk.EnqueueReport(t.Context(), item("acme", "queued"), item("acme", "leased"), item("acme", "dead"),
		item("acme", "cancelled"), item("acme", "new"), item("acme", "new"), item("other", "queued"))
	mustNoErr(t, err, "EnqueueReport")
	want := []contract.EnqueueResult{
		{Duplicate: true, State: contract.StateQueued}, {Duplicate: true, State: contract.StateLeased},
		{Duplicate: true, State: contract.StateDead}, {Duplicate: true, State: contract.StateCancelled},
		{}, {Duplicate: true, State: contract.StateQueued}, {},
	}
	if !slices.Equal(rep, want) {
		t.Fatalf("EnqueueReport = %+v, want %+v", rep, want)
	}
	wantKinds(t, hk, key("acme", "queued"), contract.EventEnqueued) // a duplicate records nothing
	wantKinds(t, hk, key("acme", "new"), contract.EventEnqueued)
}

func testHistoryFind(t *testing.T, f QueueFactory) {
	q, hk, _ := newHistoryQueue(t, f, testPolicy(), contract.Retention{Age: time.Hour})
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("c-tenant", "job"))
	mustNoErr(t, q.Complete(t.Context(), claimOne(t, q, "w")), "Complete")
	enqueue(t, q, item("a-tenant", "job"), item("b-tenant", "job"), item("a-tenant", "other"))
	if _, err := lc.Cancel(t.Context(), key("b-tenant", "job"), ""); err != nil {
		t.Fatal(err)
	}
	mustNoErr(t, q.Enqueue(t.Context(), contract.Item{Tenant: "d-tenant", ID: "job", Queue: "elsewhere"}), "Enqueue elsewhere")
	got, err := hk.Find(t.Context(), "", "job")
	mustNoErr(t, err, "Find")
	var desc []string
	for _, it := range got {
		desc = append(desc, fmt.Sprintf("%s:%s:%s", it.Tenant, it.ID, it.State))
	}
	want := []string{"a-tenant:job:queued", "b-tenant:job:cancelled", "c-tenant:job:completed"}
	if !slices.Equal(desc, want) {
		t.Fatalf("Find(job) = %v, want %v", desc, want)
	}
	if got, err := hk.Find(t.Context(), "", "nobody"); err != nil || len(got) != 0 {
		t.Fatalf("Find of an unknown ID = %v, %v; want none", got, err)
	}
	if got, err := hk.Find(t.Context(), "elsewhere", "job"); err != nil || len(got) != 1 || got[0].Tenant != "d-tenant" {
		t.Fatalf("Find in the other queue = %v, %v; want d-tenant's", got, err)
	}
}

func testHistoryFinishedFilters(t *testing.T, f QueueFactory) {
	q, hk, clock := newHistoryQueue(t, f, testPolicy(), contract.Retention{Age: time.Hour})
	lc := lifecycleOf(t, q)
	finishSeq(t, q, clock, time.Second, "a", "x1") // 0s
	finishSeq(t, q, clock, time.Second, "b", "x1") // 1s
	finishSeq(t, q, clock, time.Second, "a", "x2") // 2s
	enqueue(t, q, item("b", "c1"))                 // cancelled at 3s
	if _, err := lc.Cancel(t.Context(), key("b", "c1"), ""); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	enqueue(t, q, item("a", "live"))
	wantFinished(t, hk, contract.FinishedQuery{}, "all, newest first", "b/c1", "a/x2", "b/x1", "a/x1")
	wantFinished(t, hk, contract.FinishedQuery{Queue: contract.DefaultQueue, Tenant: "a"}, "tenant a", "a/x2", "a/x1")
	wantFinished(t, hk, contract.FinishedQuery{State: contract.StateCancelled}, "cancelled", "b/c1")
	wantFinished(t, hk, contract.FinishedQuery{State: contract.StateCompleted, Tenant: "b"}, "completed of b", "b/x1")
	wantFinished(t, hk, contract.FinishedQuery{ID: "x1"}, "id x1", "b/x1", "a/x1")
	wantFinished(t, hk, contract.FinishedQuery{Since: FakeEpoch.Add(time.Second), Until: FakeEpoch.Add(3 * time.Second)}, "1s ≤ FinishedAt < 3s", "a/x2", "b/x1")
	wantFinished(t, hk, contract.FinishedQuery{Until: FakeEpoch.Add(time.Second)}, "before 1s", "a/x1")
	wantFinished(t, hk, contract.FinishedQuery{Queue: "other"}, "another queue")
	// Ties on FinishedAt go by tenant, then ID, descending.
	enqueue(t, q, item("a", "t1"), item("b", "t1"), item("a", "t2"))
	ls, err := q.Claim(t.Context(), claimReq("w", 10))
	mustNoErr(t, err, "Claim")
	var mine []contract.Lease
	for _, l := range ls {
		if l.Item.ID != "live" {
			mine = append(mine, l)
		}
	}
	mustNoErr(t, q.Complete(t.Context(), mine...), "Complete of three at once")
	wantFinished(t, hk, contract.FinishedQuery{Since: clock.Now()}, "three finished together", "b/t1", "a/t2", "a/t1")
}

func testHistoryFinishedPaging(t *testing.T, f QueueFactory) {
	q, hk, clock := newHistoryQueue(t, f, testPolicy(), contract.Retention{Age: time.Hour})
	finishSeq(t, q, clock, time.Second, "acme", "i1", "i2", "i3", "i4", "i5", "i6", "i7")
	page := func(cursor string) contract.FinishedPage {
		t.Helper()
		p, err := hk.Finished(t.Context(), contract.FinishedQuery{Page: contract.PageRequest{Cursor: cursor, Limit: 3}})
		mustNoErr(t, err, "Finished(cursor %q)", cursor)
		return p
	}
	ids := func(p contract.FinishedPage) []string {
		out := []string{}
		for _, it := range p.Items {
			out = append(out, it.ID)
		}
		return out
	}
	p1 := page("")
	if !slices.Equal(ids(p1), []string{"i7", "i6", "i5"}) || p1.Prev != "" || p1.Next == "" {
		t.Fatalf("page 1 = %v (prev %q, next %q), want i7 i6 i5, no prev, a next", ids(p1), p1.Prev, p1.Next)
	}
	// More items finish while the listing pages.
	finishSeq(t, q, clock, time.Second, "acme", "n1", "n2")
	p2 := page(p1.Next)
	if !slices.Equal(ids(p2), []string{"i4", "i3", "i2"}) || p2.Next == "" || p2.Prev == "" {
		t.Fatalf("page 2 = %v (prev %q, next %q), want i4 i3 i2 with both cursors", ids(p2), p2.Prev, p2.Next)
	}
	p3 := page(p2.Next)
	if !slices.Equal(ids(p3), []string{"i1"}) || p3.Next != "" {
		t.Fatalf("page 3 = %v (next %q), want i1 and no next", ids(p3), p3.Next)
	}
	back := page(p2.Prev)
	if !slices.Equal(ids(back), []string{"i7", "i6", "i5"}) || back.Prev == "" {
		t.Fatalf("the page before page 2 = %v (prev %q), want i7 i6 i5 and a prev (n1 n2 finished since)", ids(back), back.Prev)
	}
	top := page(back.Prev)
	if !slices.Equal(ids(top), []string{"n2", "n1"}) || top.Prev != "" || top.Next == "" {
		t.Fatalf("the newest page = %v (prev %q, next %q), want n2 n1, no prev, a next", ids(top), top.Prev, top.Next)
	}
	if again := page(top.Next); !slices.Equal(ids(again), []string{"i7", "i6", "i5"}) {
		t.Fatalf("forward from the newest page = %v, want i7 i6 i5", ids(again))
	}
}

func testHistoryQueueEvents(t *testing.T, f QueueFactory) {
	q, hk, _ := newHistoryQueue(t, f, testPolicy(), allEvents)
	empty, err := hk.QueueEvents(t.Context(), "", "", 10)
	mustNoErr(t, err, "QueueEvents of an empty log")
	if len(empty.Events) != 0 || empty.Next == "" || empty.Gap {
		t.Fatalf("QueueEvents of an empty log = %+v, want no events and a cursor", empty)
	}
	enqueue(t, q, item("acme", "e1"), item("beta", "e2"))
	l := claimOne(t, q, "w")
	mustNoErr(t, q.Complete(t.Context(), l), "Complete")
	p, err := hk.QueueEvents(t.Context(), "", empty.Next, 3)
	mustNoErr(t, err, "QueueEvents from the empty log's cursor")
	got := []string{}
	for _, e := range p.Events {
		got = append(got, fmt.Sprintf("%s/%s:%s", e.Tenant, e.ID, e.Kind))
	}
	want := []string{"acme/e1:enqueued", "beta/e2:enqueued", "acme/e1:claimed"}
	if !slices.Equal(got, want) || p.Next == "" || p.Gap {
		t.Fatalf("QueueEvents = %v (next %q gap %v), want %v", got, p.Next, p.Gap, want)
	}
	p2, err := hk.QueueEvents(t.Context(), contract.DefaultQueue, p.Next, 10)
	mustNoErr(t, err, "QueueEvents from Next")
	if len(p2.Events) != 1 || p2.Events[0].Kind != contract.EventCompleted || p2.Events[0].ID != "e1" || p2.Next == "" {
		t.Fatalf("the next stretch = %+v, want e1's completed", p2)
	}
	p3, err := hk.QueueEvents(t.Context(), "", p2.Next, 10)
	mustNoErr(t, err, "QueueEvents at the end")
	if len(p3.Events) != 0 || p3.Next == "" || p3.Gap {
		t.Fatalf("QueueEvents at the end = %+v, want none and a cursor", p3)
	}
	enqueue(t, q, item("acme", "e3"))
	p4, err := hk.QueueEvents(t.Context(), "", p3.Next, 10)
	mustNoErr(t, err, "QueueEvents after a new event")
	if len(p4.Events) != 1 || p4.Events[0].ID != "e3" || p4.Events[0].Kind != contract.EventEnqueued {
		t.Fatalf("following the log after a new event = %+v, want e3's enqueued", p4)
	}
	all, err := hk.QueueEvents(t.Context(), "", "", contract.MaxPageSize)
	mustNoErr(t, err, "QueueEvents from the start")
	if len(all.Events) != 5 {
		t.Fatalf("QueueEvents from \"\" = %d events, want 5", len(all.Events))
	}
	other, err := hk.QueueEvents(t.Context(), "other", "", 10)
	mustNoErr(t, err, "QueueEvents of another queue")
	if len(other.Events) != 0 {
		t.Fatalf("another queue's log holds %d events, want none", len(other.Events))
	}
}

func testHistoryQueueEventsGap(t *testing.T, f QueueFactory) {
	q, hk, _ := newHistoryQueue(t, f, testPolicy(), contract.Retention{Events: 1})
	mustNoErr(t, q.Enqueue(t.Context(), item("acme", "first")), "Enqueue")
	start, err := hk.QueueEvents(t.Context(), "", "", 1)
	mustNoErr(t, err, "QueueEvents")
	if len(start.Events) != 1 || start.Events[0].ID != "first" {
		t.Fatalf("the log's first event = %+v, want first's enqueued", start.Events)
	}
	its := items("acme", "g", contract.QueueEventLog)
	for len(its) > 0 {
		n := min(len(its), 500)
		mustNoErr(t, q.Enqueue(t.Context(), its[:n]...), "Enqueue of %d", n)
		its = its[n:]
	}
	// 10001 events logged, 10000 kept: reading from before the first
	// drops nothing, reading from after it likewise; one more drops g-0000.
	mustNoErr(t, q.Enqueue(t.Context(), item("acme", "last")), "Enqueue of last")
	p, err := hk.QueueEvents(t.Context(), "", start.Next, 2)
	mustNoErr(t, err, "QueueEvents past the log's end")
	if !p.Gap || len(p.Events) != 2 || p.Events[0].ID != "g-0001" || p.Next == "" {
		t.Fatalf("QueueEvents from a cursor whose next events were dropped = gap %v, %d events (first %+v); want a gap, then g-0001", p.Gap, len(p.Events), p.Events)
	}
	p, err = hk.QueueEvents(t.Context(), "", p.Next, 2)
	mustNoErr(t, err, "QueueEvents after the gap")
	if p.Gap || len(p.Events) != 2 || p.Events[0].ID != "g-0003" {
		t.Fatalf("the read after the gap = gap %v, %+v; want no gap, g-0003 next", p.Gap, p.Events)
	}
	fromStart, err := hk.QueueEvents(t.Context(), "", "", 1)
	mustNoErr(t, err, "QueueEvents from \"\"")
	if fromStart.Gap || len(fromStart.Events) != 1 || fromStart.Events[0].ID != "g-0001" {
		t.Fatalf("QueueEvents from \"\" = gap %v, %+v; want the oldest kept (g-0001) and no gap", fromStart.Gap, fromStart.Events)
	}
}

func testHistoryBadInput(t *testing.T, f QueueFactory) {
	q, hk, _ := newHistoryQueue(t, f, testPolicy(), allEvents)
	for _, r := range []contract.Retention{{Age: -time.Second}, {Age: contract.MaxRetentionAge + time.Hour}, {Count: -1}, {Events: contract.MaxItemEvents + 1}} {
		wantInvalid(t, hk.SetRetention(t.Context(), "", r), "SetRetention(%+v)", r)
	}
	if r, err := hk.Retention(t.Context(), ""); err != nil || r != allEvents {
		t.Fatalf("Retention after refused sets = %+v, %v; want %+v unchanged", r, err, allEvents)
	}
	bad := item("acme", "bad")
	bad.UniqueFor = -time.Second
	_, err := hk.EnqueueReport(t.Context(), item("acme", "fine"), bad)
	var ve *contract.ValidationError
	if !errors.As(err, &ve) || ve.Field != "item.unique_for" {
		t.Fatalf("EnqueueReport with UniqueFor -1s = %v, want a *ValidationError naming item.unique_for", err)
	}
	bad.UniqueFor = contract.MaxUniqueFor + time.Hour
	wantInvalid(t, q.Enqueue(t.Context(), item("acme", "fine"), bad), "Enqueue with UniqueFor past MaxUniqueFor")
	wantEmpty(t, q, "", "after refused enqueues")
	if ev, err := hk.QueueEvents(t.Context(), "", "", 10); err != nil || len(ev.Events) != 0 {
		t.Fatalf("the log after refused enqueues = %+v, %v; want empty", ev, err)
	}
	_, err = hk.Finished(t.Context(), contract.FinishedQuery{State: contract.StateQueued})
	if !errors.As(err, &ve) || ve.Field != "state" {
		t.Errorf("Finished(State queued) = %v, want a *ValidationError naming state", err)
	}
	_, err = hk.Finished(t.Context(), contract.FinishedQuery{Page: contract.PageRequest{Cursor: "not a cursor!", Limit: 10}})
	if !errors.As(err, &ve) || ve.Field != "cursor" {
		t.Errorf("Finished with a bad cursor = %v, want a *ValidationError naming cursor", err)
	}
	_, err = hk.QueueEvents(t.Context(), "", "not a cursor!", 10)
	if !errors.As(err, &ve) || ve.Field != "cursor" {
		t.Errorf("QueueEvents with a bad cursor = %v, want a *ValidationError naming cursor", err)
	}
	_, err = hk.QueueEvents(t.Context(), "", "", 0)
	wantInvalid(t, err, "QueueEvents with limit 0")
	_, err = hk.Find(t.Context(), "", "")
	wantInvalid(t, err, "Find of an empty ID")
	_, err = hk.History(t.Context(), contract.ItemKey{Tenant: "acme", ID: ""})
	wantInvalid(t, err, "History of an empty ID")
}
