package contracttest

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// queueLifecycleCases pin the lifecycle controls: pause and resume, cancel
// in every state, priorities inside a tenant, snoozes, and waits that a
// signal (or a timeout) ends exactly once.
func queueLifecycleCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"PauseQueue", testLifecyclePauseQueue},
		{"PauseTenantKeepsPlace", testLifecyclePauseTenant},
		{"CancelQueuedAndDelayed", testLifecycleCancelQueued},
		{"CancelDeadAndWaiting", testLifecycleCancelDeadWaiting},
		{"CancelLeasedComplete", testLifecycleCancelLeasedComplete},
		{"CancelLeasedHeartbeatAndReap", testLifecycleCancelLeasedHeartbeat},
		{"CancelMatching", testLifecycleCancelMatching},
		{"PurgeCancelled", testLifecyclePurgeCancelled},
		{"Priority", testLifecyclePriority},
		{"PriorityWaitsForDue", testLifecyclePriorityDue},
		{"Snooze", testLifecycleSnooze},
		{"SnoozeCap", testLifecycleSnoozeCap},
		{"WaitSignal", testLifecycleWaitSignal},
		{"ConcurrentSignals", testLifecycleConcurrentSignals},
		{"WaitTimeout", testLifecycleWaitTimeout},
		{"SignalAndResumeWake", testLifecycleWakes},
		{"Inspector", testLifecycleInspector},
		{"BadInputChangesNothing", testLifecycleBadInput},
	}
}

// lifecycleOf returns q's LifecycleController; every backing must have one.
func lifecycleOf(t *testing.T, q contract.WorkQueue) contract.LifecycleController {
	t.Helper()
	lc, ok := contract.AsLifecycleController(q)
	if !ok {
		t.Fatalf("%T has no lifecycle controls (contract.LifecycleController, Capabilities().Lifecycle): every backing must", q)
	}
	return lc
}

func key(tenant, id string) contract.ItemKey {
	return contract.ItemKey{Tenant: tenant, Queue: contract.DefaultQueue, ID: id}
}

// itemOf returns the item's info, failing when it is gone.
func itemOf(t *testing.T, q contract.WorkQueue, k contract.ItemKey) contract.ItemInfo {
	t.Helper()
	info, err := inspectorOf(t, q).Item(t.Context(), k)
	mustNoErr(t, err, "Inspector.Item(%s/%s)", k.Tenant, k.ID)
	return info
}

func wantCancelled(t *testing.T, err error, what string, keys ...contract.ItemKey) {
	t.Helper()
	var ce *contract.CancelledError
	if !errors.As(err, &ce) || !errors.Is(err, contract.ErrCancelled) {
		t.Errorf("%s: got error %v (%T), want *contract.CancelledError", what, err, err)
		return
	}
	if len(ce.Items) != len(keys) {
		t.Errorf("%s: CancelledError names %v, want %v", what, ce.Items, keys)
		return
	}
	for i := range keys {
		if normKey(ce.Items[i]) != normKey(keys[i]) {
			t.Errorf("%s: CancelledError names %v, want %v", what, ce.Items, keys)
		}
	}
}

func wantNotWaiting(t *testing.T, err error, what string) {
	t.Helper()
	var nw *contract.NotWaitingError
	if !errors.As(err, &nw) || !errors.Is(err, contract.ErrNotWaiting) {
		t.Errorf("%s: got error %v (%T), want *contract.NotWaitingError", what, err, err)
	}
}

func wantCancelledItem(t *testing.T, q contract.WorkQueue, k contract.ItemKey, reason, what string) {
	t.Helper()
	info := itemOf(t, q, k)
	if info.Item.State != contract.StateCancelled || info.Item.CancelReason != reason || info.Item.CancelledAt.IsZero() || info.Lease != nil {
		t.Errorf("%s: item %s = state %q, reason %q, cancelled at %v, lease %v; want cancelled, reason %q, a time, no lease",
			what, k.ID, info.Item.State, info.Item.CancelReason, info.Item.CancelledAt, info.Lease, reason)
	}
}

func testLifecyclePauseQueue(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	lc := lifecycleOf(t, q)
	enqueue(t, q, items("acme", "a", 3)...)
	held := claimOne(t, q, "w")
	mustNoErr(t, lc.Pause(t.Context(), "", ""), "Pause of the queue")
	mustNoErr(t, lc.Pause(t.Context(), contract.DefaultQueue, ""), "Pause of a paused queue")
	ps, err := lc.Paused(t.Context(), "")
	mustNoErr(t, err, "Paused")
	if !ps.Paused || ps.Queue != contract.DefaultQueue || len(ps.Tenants) != 0 {
		t.Fatalf("Paused = %+v, want the default queue paused, no tenants", ps)
	}
	ls, r, err := claimReported(t, q, 10)
	if !errors.Is(err, contract.ErrEmpty) || len(ls) != 0 || !r.QueuePaused {
		t.Fatalf("a claim of a paused queue = %d leases, %v, report %+v; want ErrEmpty and QueuePaused", len(ls), err, r)
	}
	enqueue(t, q, item("acme", "late"))
	mustNoErr(t, q.Complete(t.Context(), held), "Complete of a lease taken before the pause")
	other := contract.ClaimRequest{Queue: "other", Worker: "w", LeaseFor: lease, Max: 1}
	mustNoErr(t, q.Enqueue(t.Context(), contract.Item{Tenant: "acme", ID: "x", Queue: "other"}), "Enqueue to another queue")
	if ls, err := q.Claim(t.Context(), other); err != nil || len(ls) != 1 {
		t.Fatalf("a claim of another queue while the default is paused = %d leases, %v; want 1", len(ls), err)
	}
	mustNoErr(t, lc.Resume(t.Context(), "", ""), "Resume")
	mustNoErr(t, lc.Resume(t.Context(), "", ""), "Resume of a running queue")
	got := leaseIDs(drain(t, q, "", "w", 10))
	want := []string{"acme/a-0001", "acme/a-0002", "acme/late"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("after Resume the queue served %v, want %v in order", got, want)
	}
	if ps, _ := lc.Paused(t.Context(), ""); ps.Paused {
		t.Fatalf("Paused after Resume = %+v", ps)
	}
}

// testLifecyclePauseTenant: a paused tenant is passed over in the claim,
// keeps its place at the head, and is served first when resumed.
func testLifecyclePauseTenant(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	lc := lifecycleOf(t, q)
	for _, tn := range []string{"a", "b", "c"} {
		enqueue(t, q, items(tn, tn, 3)...)
	}
	if l := claimOne(t, q, "w"); l.Item.Tenant != "a" {
		t.Fatalf("the first claim served %s, want tenant a", l.Item.Tenant)
	}
	mustNoErr(t, lc.Pause(t.Context(), "", "b"), "Pause of tenant b")
	ls, r, err := claimReported(t, q, 2)
	mustNoErr(t, err, "a claim with b paused")
	if ids := leaseIDs(ls); len(ids) != 2 || ls[0].Item.Tenant != "c" || ls[1].Item.Tenant != "a" {
		t.Fatalf("a claim of 2 with b paused served %v, want c then a", ids)
	}
	if r.Held[contract.HeldPaused] != 1 || r.PassedOver != 1 || r.QueuePaused {
		t.Fatalf("the claim's report = %+v, want b passed over once for its pause", r)
	}
	ps, err := lc.Paused(t.Context(), "")
	mustNoErr(t, err, "Paused")
	if ps.Paused || len(ps.Tenants) != 1 || ps.Tenants[0] != "b" || !ps.TenantPaused("b") || ps.TenantPaused("a") {
		t.Fatalf("Paused = %+v, want tenant b only", ps)
	}
	// Resuming the queue leaves the tenant's own pause.
	mustNoErr(t, lc.Pause(t.Context(), "", ""), "Pause of the queue")
	mustNoErr(t, lc.Resume(t.Context(), "", ""), "Resume of the queue")
	if ps, _ := lc.Paused(t.Context(), ""); len(ps.Tenants) != 1 || ps.Paused {
		t.Fatalf("Paused after the queue's resume = %+v, want tenant b still paused", ps)
	}
	mustNoErr(t, lc.Resume(t.Context(), "", "b"), "Resume of b")
	if l := claimOne(t, q, "w"); l.Item.Tenant != "b" || l.Item.ID != "b-0000" {
		t.Fatalf("after resuming b the claim served %s/%s, want b/b-0000: a paused tenant keeps its place", l.Item.Tenant, l.Item.ID)
	}
}

func testLifecycleCancelQueued(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	lc := lifecycleOf(t, q)
	delayed := item("acme", "later")
	delayed.NotBefore = clock.Now().Add(time.Hour)
	enqueue(t, q, item("acme", "now"), delayed, item("acme", "keep"))
	for _, id := range []string{"now", "later"} {
		was, err := lc.Cancel(t.Context(), key("acme", id), "not needed")
		mustNoErr(t, err, "Cancel of queued %s", id)
		if was != contract.StateQueued {
			t.Errorf("Cancel of queued %s returned %q, want queued", id, was)
		}
		wantCancelledItem(t, q, key("acme", id), "not needed", "Cancel of a queued item")
	}
	was, err := lc.Cancel(t.Context(), key("acme", "now"), "again")
	mustNoErr(t, err, "Cancel of a cancelled item")
	if was != contract.StateCancelled {
		t.Errorf("Cancel of a cancelled item returned %q, want cancelled", was)
	}
	wantCancelledItem(t, q, key("acme", "now"), "not needed", "a second Cancel")
	// Enqueue of a cancelled ID leaves it cancelled.
	enqueue(t, q, item("acme", "now"))
	wantCancelledItem(t, q, key("acme", "now"), "not needed", "Enqueue of a cancelled ID")
	clock.Advance(2 * time.Hour)
	if got := leaseIDs(drain(t, q, "", "w", 10)); len(got) != 1 || got[0] != "acme/keep" {
		t.Fatalf("claims served %v, want acme/keep only: cancelled items are never claimed", got)
	}
	if _, err := lc.Cancel(t.Context(), key("acme", "nobody"), ""); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("Cancel of an unknown key = %v, want ErrNotFound", err)
	}
}

func testLifecycleCancelDeadWaiting(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, policy.Policy{MaxAttempts: 1, Jitter: policy.Fixed(1)})
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "dead"), item("acme", "waits"))
	l := claimOne(t, q, "w")
	if _, err := q.Fail(t.Context(), l, errors.New("boom")); err != nil {
		t.Fatalf("Fail: %v", err)
	}
	w := claimOne(t, q, "w")
	mustNoErr(t, lc.Wait(t.Context(), w, contract.WaitRequest{Signal: "approve", Timeout: time.Hour}), "Wait")
	for id, st := range map[string]contract.ItemState{"dead": contract.StateDead, "waits": contract.StateWaiting} {
		was, err := lc.Cancel(t.Context(), key("acme", id), "by the operator")
		mustNoErr(t, err, "Cancel of %s", id)
		if was != st {
			t.Errorf("Cancel of %s returned %q, want %q", id, was, st)
		}
		wantCancelledItem(t, q, key("acme", id), "by the operator", "Cancel of a "+string(st)+" item")
	}
	if got := deadLetters(t, q, contract.DeadLetterFilter{Queue: contract.DefaultQueue}); len(got) != 0 {
		t.Errorf("dead letters after cancelling the only one: %d", len(got))
	}
	wantNotWaiting(t, lc.Signal(t.Context(), key("acme", "waits"), "approve", nil), "Signal of a cancelled wait")
	wantEmpty(t, q, "", "after cancelling the dead and the waiting items")
}

func testLifecycleCancelLeasedComplete(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	lc := lifecycleOf(t, q)
	enqueue(t, q, items("acme", "a", 3)...)
	ls, err := q.Claim(t.Context(), claimReq("w", 3))
	mustNoErr(t, err, "Claim")
	was, err := lc.Cancel(t.Context(), ls[1].Key(), "stop it")
	mustNoErr(t, err, "Cancel of a leased item")
	if was != contract.StateLeased {
		t.Fatalf("Cancel of a leased item returned %q, want leased", was)
	}
	info := itemOf(t, q, ls[1].Key())
	if info.Item.State != contract.StateLeased || info.Item.CancelledAt.IsZero() {
		t.Fatalf("a leased item after Cancel = %q, cancelled at %v; want still leased, marked", info.Item.State, info.Item.CancelledAt)
	}
	// The batch completes the others and names the cancelled one.
	err = q.Complete(t.Context(), ls...)
	wantCancelled(t, err, "Complete of a batch holding a cancelled lease", ls[1].Key())
	wantItemState(t, q, ls[0].Key(), "gone", "the batch's other items")
	wantItemState(t, q, ls[2].Key(), "gone", "the batch's other items")
	wantCancelledItem(t, q, ls[1].Key(), "stop it", "the cancelled lease's Complete")
	// Its lease is now lost.
	wantLeaseLost(t, q.Complete(t.Context(), ls[1]), "Complete again", ls[1].Key())
	if _, err := q.Fail(t.Context(), ls[1], errors.New("x")); err == nil {
		t.Errorf("Fail of a cancelled item's lease succeeded")
	}
	wantEmpty(t, q, "", "after the cancel")
}

func testLifecycleCancelLeasedHeartbeat(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "hb"), item("acme", "reaped"), item("acme", "failed"), item("acme", "snoozed"), item("acme", "waited"))
	ls, err := q.Claim(t.Context(), claimReq("w", 5))
	mustNoErr(t, err, "Claim")
	for _, l := range ls {
		if _, err := lc.Cancel(t.Context(), l.Key(), "cancelled "+l.Item.ID); err != nil {
			t.Fatalf("Cancel of %s: %v", l.Item.ID, err)
		}
	}
	_, err = q.Heartbeat(t.Context(), ls[0], lease)
	wantCancelled(t, err, "Heartbeat of a cancelled lease", ls[0].Key())
	_, err = q.Fail(t.Context(), ls[2], errors.New("boom"))
	wantCancelled(t, err, "Fail of a cancelled lease", ls[2].Key())
	_, err = lc.Snooze(t.Context(), ls[3], time.Minute)
	wantCancelled(t, err, "Snooze of a cancelled lease", ls[3].Key())
	err = lc.Wait(t.Context(), ls[4], contract.WaitRequest{Signal: "s", Timeout: time.Minute})
	wantCancelled(t, err, "Wait of a cancelled lease", ls[4].Key())
	for _, i := range []int{0, 2, 3, 4} {
		wantCancelledItem(t, q, ls[i].Key(), "cancelled "+ls[i].Item.ID, "after the holder's call")
		if info := itemOf(t, q, ls[i].Key()); info.Item.Attempts != 0 {
			t.Errorf("%s was charged %d attempts by its cancel", ls[i].Item.ID, info.Item.Attempts)
		}
	}
	// The one nobody touched expires and is cancelled by the reaper, not
	// retried.
	clock.Advance(lease + time.Second)
	n, err := q.Reap(t.Context(), "")
	mustNoErr(t, err, "Reap")
	if n != 1 {
		t.Errorf("Reap = %d, want the one expired cancelled lease", n)
	}
	wantCancelledItem(t, q, ls[1].Key(), "cancelled reaped", "a cancelled lease that expired")
	wantEmpty(t, q, "", "after the reap")
	if got := deadLetters(t, q, contract.DeadLetterFilter{Queue: contract.DefaultQueue}); len(got) != 0 {
		t.Errorf("cancelled items went to the dead letter: %d", len(got))
	}
}

func testLifecycleCancelMatching(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, policy.Policy{MaxAttempts: 1, Jitter: policy.Fixed(1)})
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "run:1:dead"))
	if _, err := q.Fail(t.Context(), claimOne(t, q, "w"), errors.New("boom")); err != nil {
		t.Fatalf("Fail: %v", err)
	}
	enqueue(t, q, item("acme", "run:1:b"))
	leased := claimOne(t, q, "w")
	enqueue(t, q, item("acme", "run:1:w"))
	mustNoErr(t, lc.Wait(t.Context(), claimOne(t, q, "w"), contract.WaitRequest{Signal: "s", Timeout: time.Hour}), "Wait")
	enqueue(t, q, item("acme", "run:1:a"), item("acme", "run:2:a"), item("globex", "run:1:a"))

	live := contract.CancelFilter{Tenant: "acme", IDPrefix: "run:1:"}
	n, err := lc.CountMatching(t.Context(), live)
	mustNoErr(t, err, "CountMatching")
	if n != 3 {
		t.Fatalf("CountMatching(acme, run:1:) = %d, want 3: the queued, the leased and the waiting item (not the dead one)", n)
	}
	n, err = lc.CancelMatching(t.Context(), live, "run 1 stopped")
	mustNoErr(t, err, "CancelMatching")
	if n != 3 {
		t.Fatalf("CancelMatching = %d, want 3", n)
	}
	if n, _ := lc.CountMatching(t.Context(), live); n != 0 {
		t.Errorf("CountMatching after the cancel = %d, want 0 (a marked lease is not counted again)", n)
	}
	wantCancelledItem(t, q, key("acme", "run:1:a"), "run 1 stopped", "the bulk cancel's queued item")
	wantCancelledItem(t, q, key("acme", "run:1:w"), "run 1 stopped", "the bulk cancel's waiting item")
	wantItemState(t, q, key("acme", "run:1:dead"), string(contract.StateDead), "a dead letter outside State \"\"")
	wantCancelled(t, q.Complete(t.Context(), leased), "Complete of the bulk-cancelled lease", leased.Key())
	dead := live
	dead.State = contract.StateDead
	if n, err := lc.CancelMatching(t.Context(), dead, ""); err != nil || n != 1 {
		t.Fatalf("CancelMatching(State dead) = %d, %v; want 1", n, err)
	}
	got := leaseIDs(drain(t, q, "", "w", 10))
	if len(got) != 2 || got[0] != "acme/run:2:a" || got[1] != "globex/run:1:a" {
		t.Fatalf("after the bulk cancels the queue served %v, want acme/run:2:a and globex/run:1:a: nothing outside the filter is touched", got)
	}
}

func testLifecyclePurgeCancelled(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "old"), item("acme", "new"))
	if _, err := lc.Cancel(t.Context(), key("acme", "old"), ""); err != nil {
		t.Fatal(err)
	}
	cut := clock.Advance(time.Minute)
	clock.Advance(time.Minute)
	if _, err := lc.Cancel(t.Context(), key("acme", "new"), ""); err != nil {
		t.Fatal(err)
	}
	n, err := lc.PurgeCancelled(t.Context(), "", cut)
	mustNoErr(t, err, "PurgeCancelled")
	if n != 1 {
		t.Fatalf("PurgeCancelled(before the second cancel) = %d, want 1", n)
	}
	wantItemState(t, q, key("acme", "old"), "gone", "a purged cancelled item")
	wantCancelledItem(t, q, key("acme", "new"), "", "a cancelled item after the cut")
	enqueue(t, q, item("acme", "old"))
	if l := claimOne(t, q, "w"); l.Item.ID != "old" {
		t.Fatalf("after the purge the claim served %s, want old enqueued again", l.Item.ID)
	}
}

// testLifecyclePriority: higher priorities first inside a tenant, the
// rotation across tenants untouched.
func testLifecyclePriority(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	pri := func(tenant, id string, p int) contract.Item {
		it := item(tenant, id)
		it.Priority = p
		return it
	}
	enqueue(t, q, pri("a", "a0", 0), pri("a", "a1", 5), pri("a", "a2", 1), pri("a", "a3", 5), pri("a", "a4", -3))
	enqueue(t, q, pri("b", "b0", 0), pri("b", "b1", contract.MaxPriority))
	var got []string
	for range 7 {
		l := claimOne(t, q, "w")
		got = append(got, l.Item.ID)
		if l.Item.ID == "a1" && l.Item.Priority != 5 {
			t.Errorf("lease of a1 has Priority %d, want 5", l.Item.Priority)
		}
	}
	want := []string{"a1", "b1", "a3", "b0", "a2", "a0", "a4"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("claims served %v, want %v: priority orders a tenant's items, turns alternate across tenants", got, want)
		}
	}
}

func testLifecyclePriorityDue(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	high := item("a", "high")
	high.Priority = 10
	high.NotBefore = clock.Now().Add(time.Minute)
	enqueue(t, q, item("a", "low"), high)
	if l := claimOne(t, q, "w"); l.Item.ID != "low" {
		t.Fatalf("the claim served %s before high was due, want low", l.Item.ID)
	}
	enqueue(t, q, item("a", "low2"))
	clock.Advance(time.Minute)
	if got := leaseIDs(drain(t, q, "", "w", 10)); len(got) != 2 || got[0] != "a/high" || got[1] != "a/low2" {
		t.Fatalf("once due the claims served %v, want a/high before a/low2", got)
	}
}

func testLifecycleSnooze(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "s"))
	l := claimOne(t, q, "w")
	now := clock.Now()
	d, err := lc.Snooze(t.Context(), l, time.Minute)
	mustNoErr(t, err, "Snooze")
	if !d.Retry || d.Reason != policy.ReasonSnooze {
		t.Fatalf("Snooze decision = %+v, want a retry for the snooze", d)
	}
	sameTime(t, "the snooze's At", d.At, now.Add(time.Minute))
	info := itemOf(t, q, l.Key())
	if info.Item.State != contract.StateQueued || info.Item.Snoozes != 1 || info.Item.Attempts != 0 || info.Lease != nil {
		t.Fatalf("a snoozed item = state %q, snoozes %d, attempts %d, lease %v; want queued, 1, 0, none",
			info.Item.State, info.Item.Snoozes, info.Item.Attempts, info.Lease)
	}
	wantLeaseLost(t, q.Complete(t.Context(), l), "Complete of the snoozed lease", l.Key())
	clock.Advance(time.Minute - time.Millisecond)
	wantEmpty(t, q, "", "before the snooze ends")
	clock.Advance(time.Millisecond)
	l2 := claimOne(t, q, "w")
	if l2.Item.ID != "s" || l2.Item.Snoozes != 1 || l2.Item.Attempts != 0 {
		t.Fatalf("after the snooze the claim served %s with snoozes %d attempts %d, want s, 1, 0", l2.Item.ID, l2.Item.Snoozes, l2.Item.Attempts)
	}
	// A snooze of 0 is due at once.
	if _, err := lc.Snooze(t.Context(), l2, 0); err != nil {
		t.Fatalf("Snooze(0): %v", err)
	}
	if l3 := claimOne(t, q, "w"); l3.Item.Snoozes != 2 {
		t.Fatalf("after Snooze(0) the item has %d snoozes, want 2", l3.Item.Snoozes)
	}
}

func testLifecycleSnoozeCap(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, policy.Policy{MaxAttempts: 5, MaxSnoozes: 2, Jitter: policy.Fixed(1)})
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "s"))
	for i := range 2 {
		if d, err := lc.Snooze(t.Context(), claimOne(t, q, "w"), 0); err != nil || !d.Retry {
			t.Fatalf("snooze %d = %+v, %v; want a retry", i+1, d, err)
		}
	}
	d, err := lc.Snooze(t.Context(), claimOne(t, q, "w"), 0)
	mustNoErr(t, err, "the snooze past the cap")
	if d.Retry || d.Reason != policy.ReasonMaxSnoozes {
		t.Fatalf("the snooze past MaxSnoozes = %+v, want the dead letter for max_snoozes", d)
	}
	dl := deadLetters(t, q, contract.DeadLetterFilter{Queue: contract.DefaultQueue})
	if len(dl) != 1 || dl[0].LastError != contract.SnoozeLimitText(2) || dl[0].Attempts != 0 || dl[0].Snoozes != 2 {
		t.Fatalf("dead letters = %+v, want s with LastError %q, no attempts, 2 snoozes", dl, contract.SnoozeLimitText(2))
	}
}

func testLifecycleWaitSignal(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "x"), item("acme", "y"))
	l := claimOne(t, q, "w")
	since := clock.Now()
	mustNoErr(t, lc.Wait(t.Context(), l, contract.WaitRequest{Signal: "approve", Timeout: time.Hour}), "Wait")
	info := itemOf(t, q, l.Key())
	if info.Item.State != contract.StateWaiting || info.Lease != nil || info.Item.Waiting == nil || info.Item.Attempts != 0 {
		t.Fatalf("a waiting item = %+v, lease %v; want state waiting, no lease, Waiting set, no attempt", info.Item, info.Lease)
	}
	if w := info.Item.Waiting; w.Signal != "approve" || !w.Since.Equal(since) || !w.Until.Equal(since.Add(time.Hour)) {
		t.Fatalf("Waiting = %+v, want approve since %v until an hour later", w, since)
	}
	_, err := q.Heartbeat(t.Context(), l, lease)
	wantLeaseLost(t, err, "Heartbeat of the lease that waits", l.Key())
	if got := leaseIDs(drain(t, q, "", "w", 10)); len(got) != 1 || got[0] != "acme/y" {
		t.Fatalf("claims while x waits served %v, want acme/y only", got)
	}
	page, err := lc.Waiting(t.Context(), "", contract.PageRequest{Limit: 10})
	mustNoErr(t, err, "Waiting")
	if len(page.Items) != 1 || page.Items[0].ID != "x" || page.Items[0].Waiting == nil || page.Next != "" {
		t.Fatalf("Waiting = %+v, want x only", page)
	}
	wantNotWaiting(t, lc.Signal(t.Context(), l.Key(), "reject", []byte("no")), "a signal the item does not wait for")
	if st := itemOf(t, q, l.Key()).Item.State; st != contract.StateWaiting {
		t.Fatalf("after a wrong signal the item is %q, want still waiting", st)
	}
	clock.Advance(time.Minute)
	mustNoErr(t, lc.Signal(t.Context(), l.Key(), "approve", []byte(`{"ok":true}`)), "Signal")
	wantNotWaiting(t, lc.Signal(t.Context(), l.Key(), "approve", []byte("twice")), "a second signal")
	got := claimOne(t, q, "w")
	r := got.Item.Resumed
	if got.Item.ID != "x" || r == nil || r.Signal != "approve" || !bytes.Equal(r.Payload, []byte(`{"ok":true}`)) || r.TimedOut || !r.At.Equal(since.Add(time.Minute)) {
		t.Fatalf("the claim after the signal = %s, Resumed %+v; want x resumed by approve with its payload at the signal's time", got.Item.ID, r)
	}
	if got.Item.Attempts != 0 || got.Item.Waiting != nil {
		t.Fatalf("the resumed item has attempts %d, Waiting %+v; want 0 and nil", got.Item.Attempts, got.Item.Waiting)
	}
	if page, _ := lc.Waiting(t.Context(), "", contract.PageRequest{Limit: 10}); len(page.Items) != 0 {
		t.Fatalf("Waiting after the resume = %d items", len(page.Items))
	}
	if err := lc.Signal(t.Context(), key("acme", "nobody"), "approve", nil); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("Signal of an unknown key = %v, want ErrNotFound", err)
	}
	wantNotWaiting(t, lc.Signal(t.Context(), l.Key(), "approve", nil), "a signal for a leased item")
}

func testLifecycleConcurrentSignals(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "x"))
	l := claimOne(t, q, "w")
	mustNoErr(t, lc.Wait(t.Context(), l, contract.WaitRequest{Signal: "go", Timeout: time.Hour}), "Wait")
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = lc.Signal(t.Context(), l.Key(), "go", []byte{byte('a' + i)}) })
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("signals %d and %d both resumed the wait", winner, i)
		case err == nil:
			winner = i
		default:
			wantNotWaiting(t, err, "a losing concurrent signal")
		}
	}
	if winner < 0 {
		t.Fatalf("no signal of %d resumed the wait: %v", n, errs)
	}
	got := claimOne(t, q, "w")
	if r := got.Item.Resumed; r == nil || !bytes.Equal(r.Payload, []byte{byte('a' + winner)}) {
		t.Fatalf("the resumed item carries %+v, want the winning signal's payload %q", r, string(rune('a'+winner)))
	}
	wantEmpty(t, q, "", "after the one resume")
}

func testLifecycleWaitTimeout(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "x"))
	l := claimOne(t, q, "w")
	until := clock.Now().Add(time.Minute)
	mustNoErr(t, lc.Wait(t.Context(), l, contract.WaitRequest{Signal: "go", Timeout: time.Minute}), "Wait")
	clock.Advance(time.Minute - time.Millisecond)
	wantEmpty(t, q, "", "before the wait times out")
	clock.Advance(time.Millisecond)
	wantNotWaiting(t, lc.Signal(t.Context(), l.Key(), "go", []byte("late")), "a signal after the timeout")
	got := claimOne(t, q, "w")
	if r := got.Item.Resumed; r == nil || !r.TimedOut || r.Payload != nil || r.Signal != "go" || !r.At.Equal(until) {
		t.Fatalf("the claim after the timeout carries Resumed %+v, want go timed out at %v with no payload", r, until)
	}
	if got.Item.Attempts != 0 {
		t.Fatalf("a timed-out wait charged %d attempts", got.Item.Attempts)
	}
}

func testLifecycleInspector(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	lc := lifecycleOf(t, q)
	enqueue(t, q, item("acme", "w"), item("acme", "c"), item("acme", "r"))
	mustNoErr(t, lc.Wait(t.Context(), claimOne(t, q, "w"), contract.WaitRequest{Signal: "s", Timeout: time.Hour}), "Wait")
	if _, err := lc.Cancel(t.Context(), key("acme", "c"), ""); err != nil {
		t.Fatal(err)
	}
	mustNoErr(t, lc.Pause(t.Context(), "", "acme"), "Pause")
	ts, err := inspectorOf(t, q).Tenants(t.Context(), contract.DefaultQueue)
	mustNoErr(t, err, "Tenants")
	if len(ts) != 1 {
		t.Fatalf("Tenants = %+v, want acme only", ts)
	}
	if a := ts[0]; a.Waiting != 1 || a.Cancelled != 1 || !a.Paused || a.Ready != 1 || a.Later != 0 || a.Leased != 0 {
		t.Fatalf("Tenants(acme) = %+v, want 1 waiting, 1 cancelled, paused, 1 ready", a)
	}
}

func testLifecycleBadInput(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	lc := lifecycleOf(t, q)
	bad := item("acme", "bad")
	bad.Priority = contract.MaxPriority + 1
	err := q.Enqueue(t.Context(), item("acme", "fine"), bad)
	var ve *contract.ValidationError
	if !errors.As(err, &ve) || ve.Field != "Item.Priority" {
		t.Fatalf("Enqueue with Priority %d = %v, want a *ValidationError naming Item.Priority", bad.Priority, err)
	}
	wantEmpty(t, q, "", "after a refused Enqueue")
	enqueue(t, q, item("acme", "x"))
	l := claimOne(t, q, "w")
	_, err = lc.Snooze(t.Context(), l, -time.Second)
	wantInvalid(t, err, "a negative snooze")
	wantInvalid(t, lc.Wait(t.Context(), l, contract.WaitRequest{Signal: "", Timeout: time.Minute}), "a wait without a signal name")
	wantInvalid(t, lc.Wait(t.Context(), l, contract.WaitRequest{Signal: "s"}), "a wait without a timeout")
	wantInvalid(t, lc.Signal(t.Context(), l.Key(), "", nil), "a signal without a name")
	_, err = lc.Cancel(t.Context(), l.Key(), "bad\x00reason")
	wantInvalid(t, err, "a cancel reason with a NUL byte")
	_, err = lc.CancelMatching(t.Context(), contract.CancelFilter{State: "bogus"}, "")
	wantInvalid(t, err, "a bulk cancel of an unknown state")
	_, err = lc.CountMatching(t.Context(), contract.CancelFilter{State: contract.StateCancelled})
	wantInvalid(t, err, "a count of cancelled items")
	wantInvalid(t, lc.Pause(t.Context(), "", "a\x00b"), "Pause of a tenant with a NUL byte")
	wantTooLarge(t, lc.Signal(t.Context(), l.Key(), "s", make([]byte, contract.DefaultMaxValueBytes+1)), "a signal payload over the size limit")
	if info := itemOf(t, q, l.Key()); info.Item.State != contract.StateLeased || !info.Item.CancelledAt.IsZero() || info.Item.Snoozes != 0 {
		t.Fatalf("after refused calls the lease's item = %+v, want it leased and unchanged", info.Item)
	}
	mustNoErr(t, q.Complete(t.Context(), l), "Complete after the refused calls")
	if ps, _ := lc.Paused(t.Context(), ""); ps.Paused || len(ps.Tenants) != 0 {
		t.Fatalf("after a refused Pause: %+v", ps)
	}
}

// testLifecycleWakes: a signal and a resume free work, so they wake the
// queue's claimers.
func testLifecycleWakes(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	lc := lifecycleOf(t, q)
	w := wakerOf(t, q)
	if w == nil {
		t.Fatalf("%T has no Waker: a signal and a resume must wake claimers", q)
	}
	enqueue(t, q, item("acme", "x"))
	mustNoErr(t, lc.Wait(t.Context(), claimOne(t, q, "w"), contract.WaitRequest{Signal: "go", Timeout: time.Hour}), "Wait")
	mustNoErr(t, lc.Pause(t.Context(), "", ""), "Pause")
	ch, stop := w.Subscribe(contract.DefaultQueue)
	defer stop()
	wantWake := func(what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(wakeWait):
			t.Fatalf("no wake within %v of %s", wakeWait, what)
		}
	}
	drainWakes(ch)
	mustNoErr(t, lc.Resume(t.Context(), "", ""), "Resume")
	wantWake("a resume")
	drainWakes(ch)
	mustNoErr(t, lc.Signal(t.Context(), key("acme", "x"), "go", nil), "Signal")
	wantWake("a signal")
	claimOne(t, q, "w")
}
