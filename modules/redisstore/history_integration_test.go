//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

func historyQueue(t *testing.T, client redis.UniversalClient, p policy.Policy) (*redisstore.RedisWorkQueue, *contracttest.FakeClock) {
	t.Helper()
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	q, err := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: redistest.Namespace(t, client), Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	if !q.Capabilities().History {
		t.Fatal("Capabilities().History is false")
	}
	return q, clock
}

func claimOne(t *testing.T, q contract.WorkQueue, worker string) contract.Lease {
	t.Helper()
	ls, err := q.Claim(context.Background(), contract.ClaimRequest{Worker: worker, LeaseFor: time.Minute, Max: 1})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Claim = %v, %v", ls, err)
	}
	return ls[0]
}

func kinds(es []contract.Event) string {
	s := ""
	for i, e := range es {
		if i > 0 {
			s += ","
		}
		s += string(e.Kind)
	}
	return s
}

// TestHistoryEventsAndRetention walks one item through enqueue, a failed
// attempt, a completed one, and reads its kept record, its events, the
// queue's log, Find and Finished.
func TestHistoryEventsAndRetention(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	q, clock := historyQueue(t, client, policy.Policy{MaxAttempts: 3, BaseDelay: time.Second, Jitter: policy.Fixed(1)})
	if err := q.SetRetention(ctx, "", contract.Retention{Age: time.Hour, Events: 50}); err != nil {
		t.Fatal(err)
	}
	if r, err := q.Retention(ctx, ""); err != nil || r != (contract.Retention{Age: time.Hour, Events: 50}) {
		t.Fatalf("Retention = %+v, %v", r, err)
	}
	res, err := q.EnqueueReport(ctx, contract.Item{Tenant: "a", ID: "x"}, contract.Item{Tenant: "a", ID: "x"})
	if err != nil || len(res) != 2 || res[0].Duplicate || !res[1].Duplicate || res[1].State != contract.StateQueued {
		t.Fatalf("EnqueueReport = %+v, %v", res, err)
	}
	l := claimOne(t, q, "w1")
	if _, err := q.Fail(ctx, l, errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	l = claimOne(t, q, "w2")
	l, err = q.Heartbeat(ctx, l, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Second)
	l, err = q.Heartbeat(ctx, l, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Complete(ctx, l); err != nil {
		t.Fatal(err)
	}
	h, err := q.History(ctx, contract.ItemKey{Tenant: "a", ID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if h.Item.State != contract.StateCompleted || !h.Item.FinishedAt.Equal(clock.Now()) {
		t.Fatalf("item = %+v", h.Item)
	}
	if got := kinds(h.Events); got != "enqueued,claimed,failed,claimed,completed" {
		t.Fatalf("events = %s", got)
	}
	if h.Heartbeats != 2 {
		t.Fatalf("heartbeats = %d", h.Heartbeats)
	}
	c := h.Events[4]
	if c.Worker != "w2" || c.Attempt != 2 || c.RunTime != 3*time.Second || !c.At.Equal(clock.Now()) {
		t.Fatalf("completed = %+v", c)
	}
	f := h.Events[2]
	if f.Attempt != 1 || f.Error != "boom" || f.Worker != "w1" || f.NextDue.IsZero() {
		t.Fatalf("failed = %+v", f)
	}
	if h.Events[1].Token == 0 || h.Events[1].Attempt != 1 || h.Events[1].Worker != "w1" {
		t.Fatalf("claimed = %+v", h.Events[1])
	}
	info, err := q.Item(ctx, contract.ItemKey{Tenant: "a", ID: "x"})
	if err != nil || info.Item.State != contract.StateCompleted {
		t.Fatalf("Item = %+v, %v", info, err)
	}
	// Completed: not claimed again, replaced by a new enqueue.
	if _, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 5}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("Claim after complete = %v", err)
	}
	page, err := q.QueueEvents(ctx, "", "", 100)
	if err != nil || len(page.Events) != 5 || page.Events[0].Tenant != "a" || page.Events[0].ID != "x" || page.Gap {
		t.Fatalf("QueueEvents = %+v, %v", page, err)
	}
	more, err := q.QueueEvents(ctx, "", page.Next, 100)
	if err != nil || len(more.Events) != 0 || more.Next != page.Next {
		t.Fatalf("QueueEvents after = %+v, %v", more, err)
	}
	if _, err := q.QueueEvents(ctx, "", "zz", 10); !isValidation(err, "cursor") {
		t.Fatalf("bad cursor = %v", err)
	}
	found, err := q.Find(ctx, "", "x")
	if err != nil || len(found) != 1 || found[0].State != contract.StateCompleted {
		t.Fatalf("Find = %+v, %v", found, err)
	}
	fp, err := q.Finished(ctx, contract.FinishedQuery{})
	if err != nil || len(fp.Items) != 1 || fp.Next != "" || fp.Prev != "" {
		t.Fatalf("Finished = %+v, %v", fp, err)
	}
	// Past the age: pruned with its events.
	clock.Advance(time.Hour)
	if n, err := q.Prune(ctx, ""); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	if _, err := q.History(ctx, contract.ItemKey{Tenant: "a", ID: "x"}); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("History after prune = %v", err)
	}
	if found, _ := q.Find(ctx, "", "x"); len(found) != 0 {
		t.Fatalf("Find after prune = %+v", found)
	}
}

func isValidation(err error, field string) bool {
	var ve *contract.ValidationError
	return errors.As(err, &ve) && ve.Field == field
}

// TestHistoryUniqueWindow: on a queue without retention, an item with a
// window stays completed until it closes; its ID is a duplicate until
// then and is replaced after.
func TestHistoryUniqueWindow(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	q, clock := historyQueue(t, client, policy.Default())
	it := contract.Item{Tenant: "a", ID: "u", UniqueFor: time.Minute}
	if err := q.Enqueue(ctx, it); err != nil {
		t.Fatal(err)
	}
	if err := q.Complete(ctx, claimOne(t, q, "w")); err != nil {
		t.Fatal(err)
	}
	done := clock.Now()
	res, err := q.EnqueueReport(ctx, it)
	if err != nil || len(res) != 1 || !res[0].Duplicate || res[0].State != contract.StateCompleted || !res[0].UniqueUntil.Equal(done.Add(time.Minute)) {
		t.Fatalf("within window = %+v, %v", res, err)
	}
	if n, err := q.Prune(ctx, ""); err != nil || n != 0 {
		t.Fatalf("Prune within window = %d, %v", n, err)
	}
	clock.Advance(time.Minute)
	res, err = q.EnqueueReport(ctx, it)
	if err != nil || res[0].Duplicate {
		t.Fatalf("after window = %+v, %v", res, err)
	}
	l := claimOne(t, q, "w")
	if l.Item.ID != "u" {
		t.Fatalf("claimed %+v", l.Item)
	}
	// A plain item on this queue is not kept.
	if err := q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "p"}); err != nil {
		t.Fatal(err)
	}
	if err := q.Complete(ctx, l, claimOne(t, q, "w")); err != nil {
		t.Fatal(err)
	}
	if _, err := q.History(ctx, contract.ItemKey{Tenant: "a", ID: "p"}); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("plain item kept: %v", err)
	}
	clock.Advance(time.Minute)
	if n, err := q.Prune(ctx, ""); err != nil || n != 1 {
		t.Fatalf("Prune after window = %d, %v", n, err)
	}
}

// TestHistoryPruneCountAndPaging keeps the newest 5 of 12, pages through
// them both ways, and checks the cancel and CompleteAndClaim events.
func TestHistoryPruneCountAndPaging(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	q, clock := historyQueue(t, client, policy.Default())
	if err := q.SetRetention(ctx, "", contract.Retention{Count: 5, Events: 2}); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if err := q.Enqueue(ctx, contract.Item{Tenant: fmt.Sprintf("t%d", i%3), ID: fmt.Sprintf("i%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var prev []contract.Lease
	for range 11 {
		clock.Advance(time.Second)
		ls, err := q.CompleteAndClaim(ctx, prev, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
		if err != nil {
			t.Fatal(err)
		}
		prev = ls
	}
	if _, err := q.Cancel(ctx, prev[0].Key(), "stop"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if err := q.Complete(ctx, prev...); !errors.As(err, new(*contract.CancelledError)) {
		t.Fatalf("Complete of a marked lease = %v", err)
	}
	h, err := q.History(ctx, prev[0].Key())
	if err != nil || h.Item.State != contract.StateCancelled || kinds(h.Events) != "claimed,cancelled" || h.Dropped != 1 || h.Events[1].Reason != "stop" {
		t.Fatalf("cancelled history = %+v (%s), %v", h, kinds(h.Events), err)
	}
	var all []contract.Item
	fp, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 5}})
	for err == nil {
		all = append(all, fp.Items...)
		if fp.Next == "" {
			break
		}
		fp, err = q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 5, Cursor: fp.Next}})
	}
	if err != nil || len(all) != 11 {
		t.Fatalf("Finished = %d items, %v", len(all), err)
	}
	for i := 1; i < len(all); i++ {
		if all[i].FinishedAt.After(all[i-1].FinishedAt) {
			t.Fatalf("not newest first at %d", i)
		}
	}
	if all[0].State != contract.StateCancelled || all[0].ID != "i10" {
		t.Fatalf("newest = %+v", all[0])
	}
	back, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 5, Cursor: fp.Prev}})
	if err != nil || len(back.Items) != 5 || back.Items[0].ID != all[5].ID {
		t.Fatalf("Prev page = %+v, %v", back, err)
	}
	cp, err := q.Finished(ctx, contract.FinishedQuery{State: contract.StateCancelled})
	if err != nil || len(cp.Items) != 1 {
		t.Fatalf("cancelled only = %+v, %v", cp, err)
	}
	tp, err := q.Finished(ctx, contract.FinishedQuery{Tenant: "t1", ID: "i04"})
	if err != nil || len(tp.Items) != 1 {
		t.Fatalf("tenant and id = %+v, %v", tp, err)
	}
	if _, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Cursor: "nope"}}); !isValidation(err, "cursor") {
		t.Fatalf("bad cursor = %v", err)
	}
	if n, err := q.Prune(ctx, ""); err != nil || n != 6 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	left, _ := q.Finished(ctx, contract.FinishedQuery{})
	if len(left.Items) != 5 || left.Items[4].ID != "i06" {
		t.Fatalf("kept = %+v", left.Items)
	}
}

// TestHistoryLifecycleEvents: snooze, wait and signal, a wait that times
// out, a reaped lease that dead-letters, its requeue, and a cancel of a
// queued item each record their event, in the queue's log too.
func TestHistoryLifecycleEvents(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	q, clock := historyQueue(t, client, policy.Policy{MaxAttempts: 1})
	if err := q.SetRetention(ctx, "", contract.Retention{Events: 100}); err != nil {
		t.Fatal(err)
	}
	key := contract.ItemKey{Tenant: "a", ID: "x"}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Snooze(ctx, claimOne(t, q, "w"), time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if err := q.Wait(ctx, claimOne(t, q, "w"), contract.WaitRequest{Signal: "go", Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := q.Signal(ctx, key, "go", nil); err != nil {
		t.Fatal(err)
	}
	if err := q.Wait(ctx, claimOne(t, q, "w"), contract.WaitRequest{Signal: "later", Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	claimOne(t, q, "w") // ends the timed-out wait, then claims it
	clock.Advance(2 * time.Minute)
	if n, err := q.Reap(ctx, ""); err != nil || n != 1 {
		t.Fatalf("Reap = %d, %v", n, err)
	}
	if n, err := q.Requeue(ctx, contract.DeadLetterFilter{}); err != nil || n != 1 {
		t.Fatalf("Requeue = %d, %v", n, err)
	}
	if st, err := q.Cancel(ctx, key, "enough"); err != nil || st != contract.StateQueued {
		t.Fatalf("Cancel = %s, %v", st, err)
	}
	h, err := q.History(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	want := "enqueued,claimed,snoozed,claimed,waiting,signalled,claimed,waiting,timed_out,claimed,dead,requeued,cancelled"
	if got := kinds(h.Events); got != want {
		t.Fatalf("events = %s\nwant     %s", got, want)
	}
	if e := h.Events[10]; e.Worker != "" || e.Error == "" || e.Attempt != 1 {
		t.Fatalf("dead by reap = %+v", e)
	}
	if e := h.Events[4]; e.Signal != "go" || e.Worker != "w" || e.NextDue.IsZero() {
		t.Fatalf("waiting = %+v", e)
	}
	if h.Item.State != contract.StateCancelled || h.Item.FinishedAt.IsZero() {
		t.Fatalf("item = %+v", h.Item)
	}
	page, err := q.QueueEvents(ctx, "", "", 5)
	if err != nil || len(page.Events) != 5 {
		t.Fatalf("QueueEvents = %+v, %v", page, err)
	}
	rest, err := q.QueueEvents(ctx, "", page.Next, 100)
	if err != nil || kinds(append(page.Events, rest.Events...)) != want {
		t.Fatalf("QueueEvents rest = %+v, %v", rest, err)
	}
	// Cancelled items stay under a retention that keeps nothing.
	if n, err := q.Prune(ctx, ""); err != nil || n != 0 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	if n, err := q.PurgeCancelled(ctx, "", clock.Now().Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("PurgeCancelled = %d, %v", n, err)
	}
	if found, _ := q.Find(ctx, "", "x"); len(found) != 0 {
		t.Fatalf("Find after purge = %+v", found)
	}
	if fp, _ := q.Finished(ctx, contract.FinishedQuery{}); len(fp.Items) != 0 {
		t.Fatalf("Finished after purge = %+v", fp)
	}
}

// TestHistoryQueueLogGap: the log keeps its latest QueueEventLog events; a
// cursor from before them reads on with Gap set.
func TestHistoryQueueLogGap(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	q, _ := historyQueue(t, client, policy.Default())
	if err := q.SetRetention(ctx, "", contract.Retention{Events: 1}); err != nil {
		t.Fatal(err)
	}
	first, err := q.QueueEvents(ctx, "", "", 10)
	if err != nil || first.Next == "" || len(first.Events) != 0 {
		t.Fatalf("empty log = %+v, %v", first, err)
	}
	items := make([]contract.Item, 0, 500)
	for i := range contract.QueueEventLog + 10 {
		items = append(items, contract.Item{Tenant: "a", ID: fmt.Sprint(i)})
		if len(items) == cap(items) {
			if err := q.Enqueue(ctx, items...); err != nil {
				t.Fatal(err)
			}
			items = items[:0]
		}
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	page, err := q.QueueEvents(ctx, "", first.Next, 10)
	if err != nil || !page.Gap || len(page.Events) != 10 || page.Events[0].ID != "10" {
		t.Fatalf("after the cut = gap %v, %d events, %v", page.Gap, len(page.Events), err)
	}
	all, err := q.QueueEvents(ctx, "", "", 10)
	if err != nil || all.Gap || all.Events[0].ID != "10" {
		t.Fatalf("from the oldest = %+v, %v", all.Events[:1], err)
	}
}

// TestQueuesListsKeptFinishedItems: a queue whose only items are
// completed ones kept for the record is still listed by Queues (it holds
// items, and the dashboard pages its finished items), and stops being
// listed once they are pruned.
func TestQueuesListsKeptFinishedItems(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	q, clock := historyQueue(t, client, policy.Policy{})
	if err := q.SetRetention(ctx, "kept", contract.Retention{Age: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, contract.Item{Queue: "kept", Tenant: "a", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Queue: "kept", Worker: "w", Max: 1, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Claim = %v, %v", ls, err)
	}
	if err := q.Complete(ctx, ls[0]); err != nil {
		t.Fatal(err)
	}
	if names, err := q.Queues(ctx); err != nil || !slices.Equal(names, []string{"kept"}) {
		t.Fatalf("Queues with one kept completed item = %v, %v; want [kept]", names, err)
	}
	clock.Advance(2 * time.Hour)
	if n, err := q.Prune(ctx, "kept"); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1", n, err)
	}
	if names, err := q.Queues(ctx); err != nil || len(names) != 0 {
		t.Fatalf("Queues after the prune = %v, %v; want none", names, err)
	}
}

// TestIDIndexFollowsItems: the ID index Find reads holds a member for
// each item the queue has and loses it when the item completes, whether
// the completion came alone or carried into the next claim.
func TestIDIndexFollowsItems(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	q, err := redisstore.NewQueue(client, contracttest.NewFakeClock(contracttest.FakeEpoch), redisstore.Settings{Namespace: ns})
	must(t, err)
	defer q.Close()
	index := func() []string {
		ms, err := client.ZRange(ctx, "{"+ns+":queue}:q:"+lp("default")+":ids", 0, -1).Result()
		must(t, err)
		return ms
	}
	must(t, q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "i1"}, contract.Item{Tenant: "globex", ID: "i1"},
		contract.Item{Tenant: "acme", ID: "job-22"}))
	want := []string{"", lp("i1") + lp("acme"), lp("i1") + lp("globex"), lp("job-22") + lp("acme")}
	if got := index(); !slices.Equal(got, want) {
		t.Fatalf("ID index after the enqueue %q; want %q", got, want)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 2})
	must(t, err)
	must(t, q.Complete(ctx, ls...))
	left := map[string]bool{lp("i1") + lp("acme"): true, lp("i1") + lp("globex"): true, lp("job-22") + lp("acme"): true}
	for _, l := range ls {
		delete(left, lp(l.Item.ID)+lp(l.Item.Tenant))
	}
	if got := index(); len(got) != 2 || got[0] != "" || !left[got[1]] {
		t.Fatalf("ID index after completing %d items %q; want the placeholder and the one left", len(ls), got)
	}
	rest, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
	must(t, err)
	if _, err := q.CompleteAndClaim(ctx, rest, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1}); err != nil && !errors.Is(err, contract.ErrEmpty) {
		t.Fatal(err)
	}
	if got := index(); !slices.Equal(got, []string{""}) {
		t.Fatalf("ID index once every item completed %q; want the placeholder alone", got)
	}
}

// TestUniqueWindowsCompletedTogether: items completed in one call whose
// records carry the same extension (the same uniqueness window) each keep
// their window, the later ones too.
func TestUniqueWindowsCompletedTogether(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	q, _ := historyQueue(t, client, policy.Policy{})
	items := []contract.Item{{Tenant: "a", ID: "1", UniqueFor: time.Hour}, {Tenant: "a", ID: "2", UniqueFor: time.Hour},
		{Tenant: "b", ID: "1", UniqueFor: time.Hour}}
	must(t, q.Enqueue(ctx, items...))
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	must(t, err)
	if len(ls) != len(items) {
		t.Fatalf("claimed %d; want %d", len(ls), len(items))
	}
	must(t, q.Complete(ctx, ls...))
	res, err := q.EnqueueReport(ctx, items...)
	must(t, err)
	for i, r := range res {
		if !r.Duplicate || r.State != contract.StateCompleted {
			t.Errorf("enqueue again of %s/%s: %+v; want a duplicate, completed within its window", items[i].Tenant, items[i].ID, r)
		}
	}
}

// TestCompletedEventsOfSeveralClaims completes, in one call, the leases of
// two claims by different workers at different times, one of whose items
// had failed before: each item's completed event names its own claim's
// worker, its own attempt and the run time since its own claim, although
// the script makes the event once per lease value and attempts count.
func TestCompletedEventsOfSeveralClaims(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	q, clock := historyQueue(t, client, policy.Policy{MaxAttempts: 3, BaseDelay: time.Second, Jitter: policy.Fixed(1)})
	must(t, q.SetRetention(ctx, "", contract.Retention{Age: time.Hour, Events: 10}))
	must(t, q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "r"}))
	if _, err := q.Fail(ctx, claimOne(t, q, "w0"), errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second) // r is due again
	must(t, q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "1"}, contract.Item{Tenant: "a", ID: "2"}, contract.Item{Tenant: "a", ID: "3"}))
	first, err := q.Claim(ctx, contract.ClaimRequest{Worker: "wA", LeaseFor: time.Minute, Max: 2})
	must(t, err)
	clock.Advance(4 * time.Second)
	second, err := q.Claim(ctx, contract.ClaimRequest{Worker: "wB", LeaseFor: time.Minute, Max: 2})
	must(t, err)
	if len(first) != 2 || len(second) != 2 {
		t.Fatalf("claimed %d and %d; want 2 and 2", len(first), len(second))
	}
	clock.Advance(3 * time.Second)
	must(t, q.Complete(ctx, append(append([]contract.Lease{}, second[1], first[0]), append(second[:1:1], first[1])...)...))
	want := map[string]contract.Event{}
	for _, l := range first {
		want[l.Item.ID] = contract.Event{Worker: "wA", Attempt: l.Item.Attempts + 1, RunTime: 7 * time.Second}
	}
	for _, l := range second {
		want[l.Item.ID] = contract.Event{Worker: "wB", Attempt: l.Item.Attempts + 1, RunTime: 3 * time.Second}
	}
	if want["r"].Attempt != 2 {
		t.Fatalf("item r served with attempt %d; want its second", want["r"].Attempt)
	}
	for id, w := range want {
		h, err := q.History(ctx, contract.ItemKey{Tenant: "a", ID: id})
		must(t, err)
		ev := h.Events[len(h.Events)-1]
		if ev.Kind != contract.EventCompleted || ev.Worker != w.Worker || ev.Attempt != w.Attempt || ev.RunTime != w.RunTime {
			t.Errorf("item %s: last event %+v; want completed by %s, attempt %d, run time %v", id, ev, w.Worker, w.Attempt, w.RunTime)
		}
	}
}
