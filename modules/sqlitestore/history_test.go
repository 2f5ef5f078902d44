package sqlitestore_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/sqlitestore"
)

// historyQueue is a queue on a new file under a fake clock.
func historyQueue(t *testing.T, p policy.Policy) (*sqlitestore.SQLiteWorkQueue, *contracttest.FakeClock) {
	t.Helper()
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	s := sqlitestore.Settings{Policy: p}
	q, err := sqlitestore.NewQueue(newFile(t, s), clock, s)
	if err != nil {
		t.Fatal(err)
	}
	if !q.Capabilities().History {
		t.Fatal("the queue does not report Capabilities.History")
	}
	return q, clock
}

func claimOne(t *testing.T, q *sqlitestore.SQLiteWorkQueue, worker string) contract.Lease {
	t.Helper()
	ls, err := q.Claim(t.Context(), contract.ClaimRequest{Worker: worker, LeaseFor: time.Minute, Max: 1})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Claim = %v, %v", ls, err)
	}
	return ls[0]
}

func kinds(evs []contract.Event) []contract.EventKind {
	var out []contract.EventKind
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

// Every transition of an item's life is recorded with its fields, in the
// item's history and in the queue's log; the completed item is kept.
func TestHistoryRecordsALife(t *testing.T) {
	ctx := t.Context()
	q, clock := historyQueue(t, policy.Policy{MaxAttempts: 5, BaseDelay: time.Second, MaxDelay: time.Second})
	if err := q.SetRetention(ctx, "", contract.Retention{Count: 100, Events: 50}); err != nil {
		t.Fatal(err)
	}
	if r, err := q.Retention(ctx, ""); err != nil || r != (contract.Retention{Count: 100, Events: 50}) {
		t.Fatalf("Retention = %+v, %v", r, err)
	}
	key := contract.ItemKey{Tenant: "acme", Queue: contract.DefaultQueue, ID: "j1"}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "j1", Payload: []byte("p")}); err != nil {
		t.Fatal(err)
	}
	l := claimOne(t, q, "w1")
	for range 2 {
		var err error
		if l, err = q.Heartbeat(ctx, l, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Fail(ctx, l, errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	l = claimOne(t, q, "w2")
	clock.Advance(3 * time.Second)
	if err := q.Complete(ctx, l); err != nil {
		t.Fatal(err)
	}
	h, err := q.History(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	want := []contract.EventKind{contract.EventEnqueued, contract.EventClaimed, contract.EventFailed, contract.EventClaimed, contract.EventCompleted}
	if got := kinds(h.Events); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if h.Heartbeats != 2 || h.Dropped != 0 {
		t.Fatalf("heartbeats %d dropped %d, want 2 and 0", h.Heartbeats, h.Dropped)
	}
	c1, f, c2, done := h.Events[1], h.Events[2], h.Events[3], h.Events[4]
	if c1.Worker != "w1" || c1.Attempt != 1 || c1.Token == 0 || f.Worker != "w1" || f.Attempt != 1 || f.Error != "boom" || f.NextDue.IsZero() {
		t.Fatalf("claimed %+v failed %+v", c1, f)
	}
	if c2.Worker != "w2" || c2.Attempt != 2 || done.Worker != "w2" || done.Attempt != 2 || done.RunTime != 3*time.Second || c1.Tenant != "" || c1.ID != "" {
		t.Fatalf("claimed %+v completed %+v", c2, done)
	}
	if h.Item.State != contract.StateCompleted || !h.Item.FinishedAt.Equal(clock.Now()) || string(h.Item.Payload) != "p" {
		t.Fatalf("item %+v", h.Item)
	}
	info, err := q.Item(ctx, key)
	if err != nil || info.Item.State != contract.StateCompleted || info.Lease != nil {
		t.Fatalf("Item = %+v, %v", info, err)
	}
	// Kept, not claimable, not counted as ready.
	if _, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 5}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("Claim after the complete = %v, want ErrEmpty", err)
	}
	page, err := q.QueueEvents(ctx, "", "", 100)
	if err != nil || len(page.Events) != 5 || page.Gap || page.Next == "" {
		t.Fatalf("QueueEvents = %+v, %v", page, err)
	}
	if e := page.Events[4]; e.Kind != contract.EventCompleted || e.Tenant != "acme" || e.ID != "j1" {
		t.Fatalf("the log's last event %+v", e)
	}
	again, err := q.QueueEvents(ctx, "", page.Next, 100)
	if err != nil || len(again.Events) != 0 || again.Next != page.Next {
		t.Fatalf("QueueEvents at the end = %+v, %v; want none and the same cursor", again, err)
	}
	found, err := q.Find(ctx, "", "j1")
	if err != nil || len(found) != 1 || found[0].State != contract.StateCompleted {
		t.Fatalf("Find = %+v, %v", found, err)
	}
	fin, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 10}})
	if err != nil || len(fin.Items) != 1 || fin.Items[0].ID != "j1" || fin.Next != "" || fin.Prev != "" {
		t.Fatalf("Finished = %+v, %v", fin, err)
	}
}

// Dead letters, requeues, snoozes, waits, signals, timeouts and cancels
// record their events; the per-item cap keeps the newest.
func TestHistoryLifecycleEvents(t *testing.T) {
	ctx := t.Context()
	q, clock := historyQueue(t, policy.Policy{MaxAttempts: 1})
	if err := q.SetRetention(ctx, "", contract.Retention{Events: 100}); err != nil {
		t.Fatal(err)
	}
	key := contract.ItemKey{Tenant: "t", Queue: contract.DefaultQueue, ID: "x"}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	l := claimOne(t, q, "w")
	if d, err := q.Fail(ctx, l, errors.New("bad")); err != nil || d.Retry {
		t.Fatalf("Fail = %+v, %v", d, err)
	}
	if n, err := q.Requeue(ctx, contract.DeadLetterFilter{Queue: ""}); err != nil || n != 1 {
		t.Fatalf("Requeue = %d, %v", n, err)
	}
	l = claimOne(t, q, "w")
	if _, err := q.Snooze(ctx, l, time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	l = claimOne(t, q, "w")
	if err := q.Wait(ctx, l, contract.WaitRequest{Signal: "go", Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := q.Signal(ctx, key, "go", nil); err != nil {
		t.Fatal(err)
	}
	l = claimOne(t, q, "w")
	if err := q.Wait(ctx, l, contract.WaitRequest{Signal: "again", Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	l = claimOne(t, q, "w") // the claim ends the timed-out wait first
	if _, err := q.Cancel(ctx, key, "stop"); err != nil {
		t.Fatal(err)
	}
	if err := q.Complete(ctx, l); !errors.Is(err, contract.ErrCancelled) {
		t.Fatalf("Complete of a marked lease = %v", err)
	}
	h, err := q.History(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	want := []contract.EventKind{contract.EventEnqueued, contract.EventClaimed, contract.EventDead, contract.EventRequeued,
		contract.EventClaimed, contract.EventSnoozed, contract.EventClaimed, contract.EventWaiting, contract.EventSignalled,
		contract.EventClaimed, contract.EventWaiting, contract.EventTimedOut, contract.EventClaimed, contract.EventCancelled}
	if got := kinds(h.Events); !slices.Equal(got, want) {
		t.Fatalf("events %v\nwant   %v", got, want)
	}
	if e := h.Events[2]; e.Error != "bad" || e.Attempt != 1 || e.Worker != "w" {
		t.Fatalf("dead %+v", e)
	}
	if e := h.Events[7]; e.Signal != "go" || e.NextDue.IsZero() || e.Worker != "w" {
		t.Fatalf("waiting %+v", e)
	}
	if e := h.Events[11]; e.Signal != "again" {
		t.Fatalf("timed_out %+v", e)
	}
	if e := h.Events[13]; e.Reason != "stop" || h.Item.State != contract.StateCancelled || !h.Item.FinishedAt.Equal(clock.Now()) {
		t.Fatalf("cancelled %+v, item %+v", e, h.Item)
	}

	// The cap keeps the newest and counts the rest.
	if err := q.SetRetention(ctx, "capped", contract.Retention{Events: 2}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: "y", Queue: "capped"}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Queue: "capped", Worker: "w", LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.CancelMatching(ctx, contract.CancelFilter{Queue: "capped"}, "bulk"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Heartbeat(ctx, ls[0], time.Minute); !errors.Is(err, contract.ErrCancelled) {
		t.Fatalf("Heartbeat of a marked lease = %v", err)
	}
	h, err = q.History(ctx, contract.ItemKey{Tenant: "t", Queue: "capped", ID: "y"})
	if err != nil || !slices.Equal(kinds(h.Events), []contract.EventKind{contract.EventClaimed, contract.EventCancelled}) || h.Dropped != 1 {
		t.Fatalf("capped history %+v, %v", h, err)
	}
}

// A queue without a retention keeps nothing and records nothing; an item
// with a uniqueness window is kept until it closes, its ID a duplicate
// meanwhile, then replaced or pruned.
func TestHistoryUniquenessWindow(t *testing.T) {
	ctx := t.Context()
	q, clock := historyQueue(t, policy.Policy{})
	if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: "plain"}, contract.Item{Tenant: "t", ID: "u", UniqueFor: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 2})
	if err != nil || len(ls) != 2 {
		t.Fatalf("Claim = %v, %v", ls, err)
	}
	if _, err := q.CompleteAndClaim(ctx, ls, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.History(ctx, contract.ItemKey{Tenant: "t", Queue: contract.DefaultQueue, ID: "plain"}); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("History of a completed item not kept = %v, want ErrNotFound", err)
	}
	uk := contract.ItemKey{Tenant: "t", Queue: contract.DefaultQueue, ID: "u"}
	h, err := q.History(ctx, uk)
	if err != nil || h.Item.State != contract.StateCompleted || len(h.Events) != 0 {
		t.Fatalf("History of the unique item = %+v, %v", h, err)
	}
	res, err := q.EnqueueReport(ctx, contract.Item{Tenant: "t", ID: "u"}, contract.Item{Tenant: "t", ID: "new"}, contract.Item{Tenant: "t", ID: "new"})
	if err != nil {
		t.Fatal(err)
	}
	want := []contract.EnqueueResult{{Duplicate: true, State: contract.StateCompleted, UniqueUntil: clock.Now().Add(time.Hour)}, {}, {Duplicate: true, State: contract.StateQueued}}
	if !slices.Equal(res, want) {
		t.Fatalf("EnqueueReport = %+v, want %+v", res, want)
	}
	if n, err := q.Prune(ctx, ""); err != nil || n != 0 {
		t.Fatalf("Prune within the window = %d, %v", n, err)
	}
	clock.Advance(time.Hour)
	if n, err := q.Prune(ctx, ""); err != nil || n != 1 {
		t.Fatalf("Prune after the window = %d, %v", n, err)
	}
	// And a closed window's completed record is replaced by a new life.
	if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: "u2", UniqueFor: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
		if errors.Is(err, contract.ErrEmpty) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Complete(ctx, ls...); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Minute)
	res, err = q.EnqueueReport(ctx, contract.Item{Tenant: "t", ID: "u2"})
	if err != nil || res[0].Duplicate {
		t.Fatalf("EnqueueReport after the window = %+v, %v", res, err)
	}
	info, err := q.Item(ctx, contract.ItemKey{Tenant: "t", Queue: contract.DefaultQueue, ID: "u2"})
	if err != nil || info.Item.State != contract.StateQueued || info.Item.UniqueFor != 0 || !info.Item.FinishedAt.IsZero() {
		t.Fatalf("the new life = %+v, %v", info, err)
	}
}

// finishN completes n items of tenant t one second apart.
func finishN(t *testing.T, q *sqlitestore.SQLiteWorkQueue, clock *contracttest.FakeClock, queue string, n int) {
	t.Helper()
	for i := range n {
		if err := q.Enqueue(t.Context(), contract.Item{Tenant: "t", Queue: queue, ID: fmt.Sprintf("i%02d", i)}); err != nil {
			t.Fatal(err)
		}
		ls, err := q.Claim(t.Context(), contract.ClaimRequest{Queue: queue, Worker: "w", LeaseFor: time.Minute, Max: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Complete(t.Context(), ls...); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
}

func ids(items []contract.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

// Prune by count removes the oldest beyond the newest Count, by age those
// past it, never a live item; Finished pages newest first both ways.
func TestHistoryPruneAndFinished(t *testing.T) {
	ctx := t.Context()
	q, clock := historyQueue(t, policy.Policy{})
	if err := q.SetRetention(ctx, "", contract.Retention{Count: 3}); err != nil {
		t.Fatal(err)
	}
	finishN(t, q, clock, "", 5)
	if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: "live"}); err != nil {
		t.Fatal(err)
	}
	p1, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 2}})
	if err != nil || !slices.Equal(ids(p1.Items), []string{"i04", "i03"}) || p1.Next == "" || p1.Prev != "" {
		t.Fatalf("page 1 = %v %+v, %v", ids(p1.Items), p1, err)
	}
	// An item finishing meanwhile does not move the pages read on.
	finishN(t, q, clock, "other", 1)
	p2, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 2, Cursor: p1.Next}})
	if err != nil || !slices.Equal(ids(p2.Items), []string{"i02", "i01"}) || p2.Next == "" || p2.Prev == "" {
		t.Fatalf("page 2 = %v %+v, %v", ids(p2.Items), p2, err)
	}
	back, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 2, Cursor: p2.Prev}})
	if err != nil || !slices.Equal(ids(back.Items), []string{"i04", "i03"}) {
		t.Fatalf("back = %v %+v, %v", ids(back.Items), back, err)
	}
	since, err := q.Finished(ctx, contract.FinishedQuery{Since: contracttest.FakeEpoch.Add(time.Second), Until: contracttest.FakeEpoch.Add(3 * time.Second), Page: contract.PageRequest{Limit: 10}})
	if err != nil || !slices.Equal(ids(since.Items), []string{"i02", "i01"}) {
		t.Fatalf("since/until = %v, %v", ids(since.Items), err)
	}
	if _, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 2, Cursor: "nope"}}); err == nil {
		t.Fatal("a bad cursor was taken")
	} else if ve, ok := errors.AsType[*contract.ValidationError](err); !ok || ve.Field != "cursor" {
		t.Fatalf("bad cursor = %v, want a ValidationError naming cursor", err)
	}
	if n, err := q.Prune(ctx, ""); err != nil || n != 2 {
		t.Fatalf("Prune by count = %d, %v", n, err)
	}
	all, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 10}})
	if err != nil || !slices.Equal(ids(all.Items), []string{"i04", "i03", "i02"}) {
		t.Fatalf("after Prune = %v, %v", ids(all.Items), err)
	}
	if n, err := q.Prune(ctx, ""); err != nil || n != 0 {
		t.Fatalf("Prune again = %d, %v", n, err)
	}
	// By age: everything finished more than 2s ago goes.
	if err := q.SetRetention(ctx, "", contract.Retention{Age: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Prune(ctx, ""); err != nil || n != 3 {
		t.Fatalf("Prune by age = %d, %v", n, err)
	}
	if info, err := q.Item(ctx, contract.ItemKey{Tenant: "t", Queue: contract.DefaultQueue, ID: "live"}); err != nil || info.Item.State != contract.StateQueued {
		t.Fatalf("the live item after Prune = %+v, %v", info, err)
	}
	// A cancelled item is pruned under a retention that keeps, never
	// under one that does not.
	if _, err := q.Cancel(ctx, contract.ItemKey{Tenant: "t", Queue: contract.DefaultQueue, ID: "live"}, "x"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if err := q.SetRetention(ctx, "", contract.Retention{}); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Prune(ctx, ""); err != nil || n != 0 {
		t.Fatalf("Prune of a cancelled item without retention = %d, %v", n, err)
	}
	if err := q.SetRetention(ctx, "", contract.Retention{Age: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Prune(ctx, ""); err != nil || n != 1 {
		t.Fatalf("Prune of a cancelled item under a retention = %d, %v", n, err)
	}
}
