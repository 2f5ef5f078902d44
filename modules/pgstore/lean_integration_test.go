//go:build integration

package pgstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
)

// A process claims with the lean claim until the queue needs the full
// one: another process gave it priorities, or turned its events on. The
// lean claim then claims nothing and says so, and the same Claim call
// claims with the full statement: priority order and the claimed event
// hold as if the lean claim did not exist.
func TestLeanClaimHandsOverToFullClaim(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	clock := contracttest.NewFakeClock(histStart)
	a := histQueue(t, d, clock)
	if err := a.Enqueue(ctx, contract.Item{Tenant: "t", ID: "plain"}); err != nil {
		t.Fatal(err)
	}
	claimPriorities(t, a, histQueue(t, d, clock))
	// Events, turned on by a: c, which never saw a priority, records the
	// claimed event.
	if err := a.SetRetention(ctx, "", contract.Retention{Age: time.Hour, Events: 10}); err != nil {
		t.Fatal(err)
	}
	if err := a.Enqueue(ctx, contract.Item{Tenant: "u", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	c := histQueue(t, d, clock)
	if l := claimOne(t, c, "w2"); l.Item.ID != "x" {
		t.Fatalf("claim after another process turned events on: %s, want x", l.Item.ID)
	}
	h, err := a.History(ctx, contract.ItemKey{Tenant: "u", ID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if kinds(h.Events) != "enqueued,claimed" || h.Events[1].Worker != "w2" {
		t.Fatalf("events of an item claimed by a process that had not seen events on: %+v", h.Events)
	}
}

// A queue that records no events and holds no priorities is claimed with
// the lean claim: its plan has no events' CTEs and one range per tenant's
// pick; once it holds priorities, its plan has their ranges.
func TestPlainQueueRunsLeanClaim(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	conn, q := newExplainedQueue(t, ctx, d, nil)
	if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: "1"}, contract.Item{Tenant: "t", ID: "2"}); err != nil {
		t.Fatal(err)
	}
	conn.explain(t, ctx, false)
	if _, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1}); err != nil {
		t.Fatal(err)
	}
	wantClaimPlan(t, conn, false, false, "a plain queue's claim (the lean claim)")
	if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: "3", Priority: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1}); err != nil {
		t.Fatal(err)
	}
	wantClaimPlan(t, conn, false, true, "a claim after priorities were enqueued (the priorities claim)")
	seen := map[string]string{}
	for name, sql := range map[string]string{"full": pgstore.ClaimSQL(pgstore.StateTables{}), "lean": pgstore.ClaimLeanSQL(pgstore.StateTables{}),
		"events": pgstore.ClaimEventsSQL(pgstore.StateTables{}), "priorities": pgstore.ClaimPrioSQL(pgstore.StateTables{})} {
		if strings.Contains(sql, "{") {
			t.Errorf("the %s claim holds a placeholder left unrendered", name)
		}
		if other, ok := seen[sql]; ok {
			t.Errorf("the %s claim is the %s claim", name, other)
		}
		seen[sql] = name
	}
}

// wantClaimPlan checks the plan of the connection's last claim: whether
// it has the events' CTEs and whether it has the priority ranges, as the
// rendering named in what does.
func wantClaimPlan(t *testing.T, conn *explainedConn, events, priorities bool, what string) {
	t.Helper()
	plan := conn.plan(t, "WITH RECURSIVE")
	if strings.Contains(plan, "adk_work_events") != events || strings.Contains(plan, "adk_work_ready_pri") != priorities {
		t.Errorf("%s: want a plan with events' CTEs %v, priority ranges %v:\n%s", what, events, priorities, plan)
	}
}

// A queue that records events and holds no queued item with a priority
// is claimed with the events claim: its plan records the claimed event
// and has one range per tenant's pick. A process that had not seen the
// events turned on meets them in its lean claim and hands over to the
// events claim; one that had not seen priorities meets them there and
// hands over to the full claim, which serves them in priority order.
func TestEventsQueueRunsEventsClaim(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	conn, q := newExplainedQueue(t, ctx, d, nil)
	other := histQueue(t, d, contract.SystemClock{})
	if err := other.SetRetention(ctx, "", contract.Retention{Age: time.Hour, Events: 10}); err != nil {
		t.Fatal(err)
	}
	if err := other.Enqueue(ctx, contract.Item{Tenant: "t", ID: "1"}, contract.Item{Tenant: "t", ID: "2"}); err != nil {
		t.Fatal(err)
	}
	conn.explain(t, ctx, false)
	if l := claimOne(t, q, "w"); l.Item.ID != "1" {
		t.Fatalf("claim: %s, want 1", l.Item.ID)
	}
	wantClaimPlan(t, conn, true, false, "the claim of a queue that records events and has no priorities (the events claim)")
	h, err := other.History(ctx, contract.ItemKey{Tenant: "t", ID: "1"})
	if err != nil || kinds(h.Events) != "enqueued,claimed" {
		t.Fatalf("events of an item claimed by the events claim: %+v, %v", h.Events, err)
	}
	if err := other.Enqueue(ctx, contract.Item{Tenant: "t", ID: "high", Priority: 5}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 2 || ls[0].Item.ID != "high" || ls[1].Item.ID != "2" {
		t.Fatalf("claim after another process enqueued a priority: %v, %v; want high, 2", ls, err)
	}
	wantClaimPlan(t, conn, true, true, "a claim after a priority was enqueued (the full claim)")
}

// A queue that holds queued items with priorities and records no events
// is claimed with the priorities claim: its plan has the priority ranges
// and no events' CTEs. When another process turns events on, the
// priorities claim meets them and hands over to the full claim, which
// records the claimed event.
func TestPriorityQueueRunsPrioClaim(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	conn, q := newExplainedQueue(t, ctx, d, nil)
	other := histQueue(t, d, contract.SystemClock{})
	if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: "low", Priority: -1}, contract.Item{Tenant: "t", ID: "zero"},
		contract.Item{Tenant: "t", ID: "high", Priority: 5}); err != nil {
		t.Fatal(err)
	}
	conn.explain(t, ctx, false)
	if l := claimOne(t, q, "w"); l.Item.ID != "high" {
		t.Fatalf("claim: %s, want high", l.Item.ID)
	}
	wantClaimPlan(t, conn, false, true, "the claim of a queue with priorities that records no events (the priorities claim)")
	if err := other.SetRetention(ctx, "", contract.Retention{Age: time.Hour, Events: 10}); err != nil {
		t.Fatal(err)
	}
	if l := claimOne(t, q, "w2"); l.Item.ID != "zero" {
		t.Fatalf("claim after another process turned events on: %s, want zero", l.Item.ID)
	}
	wantClaimPlan(t, conn, true, true, "a claim after events were turned on (the full claim)")
	h, err := other.History(ctx, contract.ItemKey{Tenant: "t", ID: "zero"})
	if err != nil || len(h.Events) == 0 || h.Events[len(h.Events)-1].Kind != contract.EventClaimed || h.Events[len(h.Events)-1].Worker != "w2" {
		t.Fatalf("events of an item claimed after another process turned events on: %+v, %v", h.Events, err)
	}
}

// A Complete whose batch keeps nothing runs the lean statement, one
// DELETE; a queue with a retention row runs the full one, which keeps
// the item. TestHistoryRetentionAcrossProcesses covers a retention set by
// another process, which the lean Complete meets and hands over.
func TestPlainQueueRunsLeanComplete(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	conn, q := newExplainedQueue(t, ctx, d, nil)
	completeOne := func(id string) string {
		t.Helper()
		if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: id}); err != nil {
			t.Fatal(err)
		}
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
		if err != nil || len(ls) != 1 {
			t.Fatalf("claim: %v, %v", ls, err)
		}
		conn.explain(t, ctx, false)
		if err := q.Complete(ctx, ls...); err != nil {
			t.Fatal(err)
		}
		return conn.plan(t, "Complete a batch")
	}
	if plan := completeOne("1"); strings.Contains(plan, "Insert on adk_work") || strings.Contains(plan, "adk_work_events") {
		t.Errorf("a plain queue's Complete ran a plan that keeps items or records events:\n%s", plan)
	}
	if err := q.SetRetention(ctx, "", contract.Retention{Count: 10}); err != nil {
		t.Fatal(err)
	}
	if plan := completeOne("2"); !strings.Contains(plan, "Insert on adk_work") {
		t.Errorf("a Complete on a queue that keeps items did not run the full statement:\n%s", plan)
	}
	if it, err := q.Item(ctx, contract.ItemKey{Tenant: "t", ID: "2"}); err != nil || it.Item.State != contract.StateCompleted {
		t.Errorf("the completed item of a queue that keeps 10: %+v, %v", it, err)
	}
}

// The flow claim and Complete (a queue with limits) are lean as well, and
// hand over the same way when another process enqueued priorities or set
// a retention.
func TestLeanFlowClaimHandsOverToFullClaim(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	clock := contracttest.NewFakeClock(histStart)
	a := histQueue(t, d, clock)
	if err := a.SetLimits(ctx, "", "", contract.Limits{MaxLeased: 100}); err != nil {
		t.Fatal(err)
	}
	if err := a.Enqueue(ctx, contract.Item{Tenant: "t", ID: "plain"}); err != nil {
		t.Fatal(err)
	}
	b := histQueue(t, d, clock)
	ls := claimPriorities(t, a, b)
	if err := a.SetRetention(ctx, "", contract.Retention{Count: 10}); err != nil {
		t.Fatal(err)
	}
	if err := b.Complete(ctx, ls...); err != nil {
		t.Fatal(err)
	}
	if it, err := a.Item(ctx, contract.ItemKey{Tenant: "t", ID: "high"}); err != nil || it.Item.State != contract.StateCompleted {
		t.Errorf("an item completed by a process that had not seen the retention: %+v, %v; want it kept, completed", it, err)
	}
}

// claimPriorities has b, a process that has seen no priority, claim the
// queue's one item ("plain", enqueued by the caller), then items of
// three priorities that a enqueues: b's lean claim meets them and hands
// over, and the claim serves them in priority order. It returns their
// leases.
func claimPriorities(t *testing.T, a, b *pgstore.PostgresWorkQueue) []contract.Lease {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	if l := claimOne(t, b, "w"); l.Item.ID != "plain" {
		t.Fatalf("first claim: %s, want plain", l.Item.ID)
	}
	if err := a.Enqueue(ctx, contract.Item{Tenant: "t", ID: "low", Priority: -1}, contract.Item{Tenant: "t", ID: "zero"},
		contract.Item{Tenant: "t", ID: "high", Priority: 5}); err != nil {
		t.Fatal(err)
	}
	ls, err := b.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	var ids []string
	for _, l := range ls {
		ids = append(ids, l.Item.ID)
	}
	if err != nil || strings.Join(ids, ",") != "high,zero,low" {
		t.Fatalf("claim after another process enqueued priorities: %v, %v; want high, zero, low", ids, err)
	}
	return ls
}
