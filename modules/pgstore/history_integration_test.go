//go:build integration

package pgstore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
)

var histStart = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func histQueue(t *testing.T, d *testDB, clock contract.Clock) *pgstore.PostgresWorkQueue {
	t.Helper()
	q, err := pgstore.NewQueue(d.pool, clock, d.settings(pgstore.Settings{}))
	if err != nil {
		t.Fatal(err)
	}
	if !contract.CapabilitiesOf(q).History {
		t.Fatal("the queue does not report Capabilities.History")
	}
	return q
}

func kinds(evs []contract.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, string(e.Kind))
	}
	return strings.Join(s, ",")
}

func claimOne(t *testing.T, q contract.WorkQueue, worker string) contract.Lease {
	t.Helper()
	ls, err := q.Claim(ctxT(t, time.Minute), contract.ClaimRequest{Worker: worker, LeaseFor: time.Minute, Max: 1})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v, %v", ls, err)
	}
	return ls[0]
}

// A retention set by one process holds at once for another on the same
// database: the second keeps its completed item and records events.
func TestHistoryRetentionAcrossProcesses(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	clock := contracttest.NewFakeClock(histStart)
	a, b := histQueue(t, d, clock), histQueue(t, d, clock)
	if err := b.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x1"}); err != nil {
		t.Fatal(err)
	}
	l := claimOne(t, b, "w1") // b has claimed before the retention exists
	if err := a.SetRetention(ctx, "", contract.Retention{Age: time.Hour, Events: 10}); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Retention(ctx, ""); err != nil || r != (contract.Retention{Age: time.Hour, Events: 10}) {
		t.Fatalf("Retention from the other process: %+v, %v", r, err)
	}
	clock.Advance(3 * time.Second)
	if err := b.Complete(ctx, l); err != nil {
		t.Fatal(err)
	}
	h, err := b.History(ctx, contract.ItemKey{Tenant: "acme", ID: "x1"})
	if err != nil {
		t.Fatal(err)
	}
	if h.Item.State != contract.StateCompleted || !h.Item.FinishedAt.Equal(clock.Now()) || kinds(h.Events) != "completed" {
		t.Fatalf("history: %+v", h)
	}
	if e := h.Events[0]; e.Worker != "w1" || e.Attempt != 1 || e.RunTime != 3*time.Second {
		t.Errorf("completed event: %+v, want worker w1, attempt 1, run time 3s", e)
	}
	if it, err := a.Item(ctx, contract.ItemKey{Tenant: "acme", ID: "x1"}); err != nil || it.Item.State != contract.StateCompleted {
		t.Errorf("Inspector.Item of the completed item: %+v, %v", it, err)
	}
	if _, err := a.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 5}); !errors.Is(err, contract.ErrEmpty) {
		t.Errorf("claim after the completion: %v, want ErrEmpty", err)
	}
}

// Every transition records its event in its own statement; the per-item
// cap keeps the newest; CompleteAndClaim's completes keep and record as
// Complete does.
func TestHistoryEvents(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	clock := contracttest.NewFakeClock(histStart)
	q := histQueue(t, d, clock)
	if err := q.SetRetention(ctx, "", contract.Retention{Count: 100, Events: 4}); err != nil {
		t.Fatal(err)
	}
	key := contract.ItemKey{Queue: contract.DefaultQueue, Tenant: "acme", ID: "e1"}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "e1"}, contract.Item{Tenant: "acme", ID: "e2"}); err != nil {
		t.Fatal(err)
	}
	l := claimOne(t, q, "w1")
	l, err := q.Heartbeat(ctx, l, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Fail(ctx, l, errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	l = claimOne(t, q, "w2")
	if l.Item.ID != "e1" {
		l2 := claimOne(t, q, "w2")
		l, l2 = l2, l
		if err := q.Complete(ctx, l2); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Snooze(ctx, l, time.Minute); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	l = claimOne(t, q, "w3")
	if err := q.Wait(ctx, l, contract.WaitRequest{Signal: "go", Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := q.Signal(ctx, key, "go", nil); err != nil {
		t.Fatal(err)
	}
	l = claimOne(t, q, "w4")
	if _, err := q.CompleteAndClaim(ctx, []contract.Lease{l}, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("CompleteAndClaim: %v", err)
	}
	h, err := q.History(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// enqueued, claimed, failed, claimed, snoozed, claimed, waiting,
	// signalled, claimed, completed: the newest 4 are kept.
	if got := kinds(h.Events); got != "waiting,signalled,claimed,completed" || h.Dropped != 6 || h.Heartbeats != 1 {
		t.Fatalf("events %s dropped %d heartbeats %d; want waiting,signalled,claimed,completed, 6, 1", got, h.Dropped, h.Heartbeats)
	}
	if h.Item.State != contract.StateCompleted || h.Events[3].Worker != "w4" || h.Events[2].Attempt != 2 || h.Events[1].Signal != "go" {
		t.Errorf("history: %+v", h)
	}
	page, err := q.QueueEvents(ctx, "", "", 100)
	if err != nil || len(page.Events) < 10 || page.Events[0].Kind != contract.EventEnqueued || page.Events[0].ID == "" || page.Gap {
		t.Fatalf("QueueEvents: %+v, %v", page, err)
	}
	var failed contract.Event
	for _, e := range page.Events {
		if e.Kind == contract.EventFailed {
			failed = e
		}
	}
	if failed.Error != "boom" || failed.Worker != "w1" || failed.Attempt != 1 || failed.NextDue.IsZero() {
		t.Errorf("failed event: %+v", failed)
	}
	next, err := q.QueueEvents(ctx, "", page.Next, 100)
	if err != nil || len(next.Events) != 0 || next.Next != page.Next {
		t.Errorf("QueueEvents after the end: %+v, %v; want none, same cursor", next, err)
	}
	if _, err := q.Cancel(ctx, contract.ItemKey{Tenant: "acme", ID: "e2"}, "no"); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "e3"}); err != nil {
		t.Fatal(err)
	}
	if n, err := q.CancelMatching(ctx, contract.CancelFilter{Tenant: "acme", IDPrefix: "e3"}, "bulk"); err != nil || n != 1 {
		t.Fatalf("CancelMatching: %d, %v", n, err)
	}
	h3, err := q.History(ctx, contract.ItemKey{Tenant: "acme", ID: "e3"})
	if err != nil || kinds(h3.Events) != "enqueued,cancelled" || h3.Events[1].Reason != "bulk" || h3.Item.FinishedAt.IsZero() {
		t.Errorf("cancelled history: %+v, %v", h3, err)
	}
}

// A queue without retention records nothing and deletes completed items,
// except one that asked for a uniqueness window; a duplicate within the
// window is reported, one after it replaces the record.
func TestHistoryUniqueFor(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	clock := contracttest.NewFakeClock(histStart)
	q := histQueue(t, d, clock)
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "u1", UniqueFor: time.Hour}, contract.Item{Tenant: "acme", ID: "p1"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := q.Complete(ctx, claimOne(t, q, "w")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.History(ctx, contract.ItemKey{Tenant: "acme", ID: "p1"}); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("History of an item completed without retention: %v, want ErrNotFound", err)
	}
	h, err := q.History(ctx, contract.ItemKey{Tenant: "acme", ID: "u1"})
	if err != nil || h.Item.State != contract.StateCompleted || len(h.Events) != 0 {
		t.Fatalf("History of the unique item: %+v, %v", h, err)
	}
	res, err := q.EnqueueReport(ctx, contract.Item{Tenant: "acme", ID: "u1"}, contract.Item{Tenant: "acme", ID: "n1"}, contract.Item{Tenant: "acme", ID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []contract.EnqueueResult{{Duplicate: true, State: contract.StateCompleted, UniqueUntil: histStart.Add(time.Hour)}, {}, {Duplicate: true, State: contract.StateQueued}}
	if fmt.Sprint(res) != fmt.Sprint(want) {
		t.Fatalf("EnqueueReport: %+v, want %+v", res, want)
	}
	if n, err := q.Prune(ctx, ""); err != nil || n != 0 {
		t.Errorf("Prune within the window: %d, %v", n, err)
	}
	clock.Advance(time.Hour)
	res, err = q.EnqueueReport(ctx, contract.Item{Tenant: "acme", ID: "u1", Payload: []byte("again")})
	if err != nil || res[0].Duplicate {
		t.Fatalf("EnqueueReport after the window: %+v, %v", res, err)
	}
	it, err := q.Item(ctx, contract.ItemKey{Tenant: "acme", ID: "u1"})
	if err != nil || it.Item.State != contract.StateQueued || string(it.Item.Payload) != "again" || !it.Item.FinishedAt.IsZero() {
		t.Errorf("the replaced item: %+v, %v", it, err)
	}
	found, err := q.Find(ctx, "", "u1")
	if err != nil || len(found) != 1 {
		t.Errorf("Find: %+v, %v", found, err)
	}
}

// Prune removes by age and by count, oldest first, never a live item;
// Finished pages newest first, stable while items finish.
func TestHistoryPruneAndFinished(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	clock := contracttest.NewFakeClock(histStart)
	q := histQueue(t, d, clock)
	if err := q.SetRetention(ctx, "", contract.Retention{Age: time.Hour, Count: 5, Events: 2}); err != nil {
		t.Fatal(err)
	}
	var items []contract.Item
	for i := range 8 {
		items = append(items, contract.Item{Tenant: fmt.Sprintf("t%d", i%3), ID: fmt.Sprintf("f%02d", i)})
	}
	items = append(items, contract.Item{Tenant: "t0", ID: "live"})
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		l := claimOne(t, q, "w")
		if l.Item.ID == "live" {
			l = claimOne(t, q, "w")
		}
		clock.Advance(time.Second)
		if err := q.Complete(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	p1, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 3}})
	if err != nil || len(p1.Items) != 3 || p1.Next == "" || p1.Prev != "" {
		t.Fatalf("first page: %+v, %v", p1, err)
	}
	p2, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 3, Cursor: p1.Next}})
	if err != nil || len(p2.Items) != 3 || p2.Prev == "" || !p2.Items[0].FinishedAt.Before(p1.Items[2].FinishedAt) {
		t.Fatalf("second page: %+v, %v", p2, err)
	}
	back, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 3, Cursor: p2.Prev}})
	if err != nil || fmt.Sprint(ids(back.Items)) != fmt.Sprint(ids(p1.Items)) || back.Prev != "" {
		t.Fatalf("back to the first page: %v (prev %q), want %v", ids(back.Items), back.Prev, ids(p1.Items))
	}
	if _, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 3, Cursor: "nonsense"}}); !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("bad cursor: %v", err)
	}
	only, err := q.Finished(ctx, contract.FinishedQuery{Tenant: "t1", Page: contract.PageRequest{Limit: 10}})
	if err != nil || len(only.Items) != 3 {
		t.Errorf("tenant filter: %v, %v", ids(only.Items), err)
	}
	if n, err := q.Prune(ctx, ""); err != nil || n != 3 {
		t.Fatalf("Prune by count: %d, %v; want the 3 oldest", n, err)
	}
	clock.Advance(time.Hour)
	if n, err := q.Prune(ctx, ""); err != nil || n != 5 {
		t.Fatalf("Prune by age: %d, %v; want 5", n, err)
	}
	if it, err := q.Item(ctx, contract.ItemKey{Tenant: "t0", ID: "live"}); err != nil || it.Item.State != contract.StateQueued {
		t.Errorf("the live item after Prune: %+v, %v", it, err)
	}
	var left int
	if err := d.pool.QueryRow(ctx, "SELECT count(*) FROM adk_work_events WHERE id <> 'live'").Scan(&left); err != nil || left != 0 {
		t.Errorf("events of pruned items left: %d, %v", left, err)
	}
}

func ids(items []contract.Item) []string {
	var s []string
	for _, it := range items {
		s = append(s, it.Tenant+"/"+it.ID)
	}
	return s
}

// Verify meets a version 3 database and names 004_history.sql; a version
// 3 database with data, migrated, passes Verify, keeps its items (a
// cancelled one gets its finished time), matches ExpectedSchema, and runs
// the suite.
func TestSchemaMigrationFromV3(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	v3 := func(t *testing.T) *testDB { return atSchema(t, pgstore.SchemaV3(pgstore.StateTables{})) }
	d := v3(t)
	err := pgstore.Verify(ctx, d.pool, pgstore.StateTables{})
	var se *contract.SchemaError
	if !errors.As(err, &se) || se.Found != "3" || !strings.Contains(se.Fix, pgstore.MigrationFile) {
		t.Fatalf("Verify on version 3 = %v, want a SchemaError naming %s", err, pgstore.MigrationFile)
	}
	if _, err := d.pool.Exec(ctx, `
		INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at) VALUES ('default', 'acme', 'q1', 'queued', now() - interval '1 minute', now());
		INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at, cancelled_at, cancel_reason) VALUES ('default', 'acme', 'c1', 'cancelled', now(), now(), now(), 'old');
		INSERT INTO adk_queue_turns (queue, tenant) VALUES ('default', 'acme')`); err != nil {
		t.Fatal(err)
	}
	migrateFrom(t, d, 3)
	m, _ := pgstore.Migration(pgstore.StateTables{}, 3)
	if err := pgstore.Verify(ctx, d.pool, pgstore.StateTables{}); err != nil {
		t.Fatalf("Verify after the migration: %v", err)
	}
	if _, err := d.pool.Exec(ctx, m); err == nil {
		t.Error("the migration ran twice")
	}
	q := histQueue(t, d, nil)
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 5})
	if err != nil || len(ls) != 1 || ls[0].Item.ID != "q1" {
		t.Fatalf("claim after the migration: %+v, %v; want q1", ls, err)
	}
	fin, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 10}})
	if err != nil || len(fin.Items) != 1 || fin.Items[0].ID != "c1" || fin.Items[0].FinishedAt.IsZero() {
		t.Fatalf("Finished after the migration: %+v, %v; want c1 with its finished time", fin, err)
	}
	fresh := newTestDB(t)
	if got, want := catalog(t, d), catalog(t, fresh); got != want {
		t.Errorf("migrated schema differs from ExpectedSchema:\nmigrated:\n%s\nexpected:\n%s", got, want)
	}
	t.Run("suite", func(t *testing.T) {
		contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p contractPolicy) contract.WorkQueue {
			d := v3(t)
			migrateFrom(t, d, 3)
			q, err := pgstore.NewQueue(d.pool, clock, d.settings(pgstore.Settings{Policy: p, Listener: d.listener(t, pgstore.ListenerSettings{})}))
			if err != nil {
				t.Fatal(err)
			}
			return q
		})
	})
}
