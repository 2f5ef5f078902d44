package contracttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// queueInspectorCases pin the Inspector every backing implements: counts,
// rotation, recent turns, live leases, one item's state, health, all
// read-only.
func queueInspectorCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"Implemented", func(t *testing.T, f QueueFactory) {
			q, _ := newQueue(t, f, testPolicy())
			inspectorOf(t, q)
		}},
		{"TenantCounts", testInspectorTenants},
		{"RotationOrderPredictsClaims", testInspectorRotation},
		{"RotationOrderDelayedLast", testInspectorRotationDelayed},
		{"RecentTurns", testInspectorRecent},
		{"Leases", testInspectorLeases},
		{"Item", testInspectorItem},
		{"QueuesAndHealth", testInspectorQueuesHealth},
		{"CancelledContext", testInspectorCancelled},
	}
}

func statsByTenant(t *testing.T, ins contract.Inspector, queue string) map[string]contract.TenantStats {
	t.Helper()
	st, err := ins.Tenants(t.Context(), queue)
	mustNoErr(t, err, "Inspector.Tenants(%q)", queue)
	out := map[string]contract.TenantStats{}
	for _, s := range st {
		if _, dup := out[s.Tenant]; dup {
			t.Errorf("Inspector.Tenants(%q) lists tenant %q twice", queue, s.Tenant)
		}
		out[s.Tenant] = s
	}
	return out
}

func testInspectorTenants(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	ins := inspectorOf(t, q)
	// t1: 1 leased, 1 dead (both claimed), then 2 ready and 1 later.
	enqueue(t, q, item("t1", "leased"), item("t1", "dead"))
	ls := drain(t, q, "", "w", 10)
	for _, l := range ls {
		if l.Item.ID == "dead" {
			_, err := q.Fail(t.Context(), l, policy.Permanent(errors.New("x")))
			mustNoErr(t, err, "Fail")
		}
	}
	t1 := clock.Advance(time.Second)
	later := item("t1", "later")
	later.NotBefore = t1.Add(time.Hour)
	enqueue(t, q, item("t1", "ready-1"), later)
	clock.Advance(time.Second)
	enqueue(t, q, item("t1", "ready-2"), item("t2", "ready"))
	other := item("t3", "elsewhere")
	other.Queue = "other"
	enqueue(t, q, other)

	got := statsByTenant(t, ins, contract.DefaultQueue)
	for tenant, want := range map[string]contract.TenantStats{
		"t1": {Tenant: "t1", Ready: 2, Later: 1, Leased: 1, Dead: 1, Served: 2, OldestReady: t1},
		"t2": {Tenant: "t2", Ready: 1, OldestReady: t1.Add(time.Second)},
	} {
		g, ok := got[tenant]
		if !ok {
			t.Errorf("Inspector.Tenants does not list %s", tenant)
			continue
		}
		if g.Ready != want.Ready || g.Later != want.Later || g.Leased != want.Leased || g.Dead != want.Dead || g.Served != want.Served {
			t.Errorf("Inspector.Tenants %s: ready=%d later=%d leased=%d dead=%d served=%d, want %d/%d/%d/%d/%d", tenant,
				g.Ready, g.Later, g.Leased, g.Dead, g.Served, want.Ready, want.Later, want.Leased, want.Dead, want.Served)
		}
		sameTime(t, "OldestReady of "+tenant, g.OldestReady, want.OldestReady)
	}
	if s, ok := got["t3"]; ok && (s.Ready+s.Later+s.Leased+s.Dead) != 0 {
		t.Errorf("Inspector.Tenants(default) counts t3's item of another queue: %+v", s)
	}
	if s := statsByTenant(t, ins, "other")["t3"]; s.Ready != 1 {
		t.Errorf("Inspector.Tenants(other) t3 ready = %d, want 1", s.Ready)
	}
	// Time moves the delayed item to ready.
	clock.Set(t1.Add(time.Hour))
	if s := statsByTenant(t, ins, contract.DefaultQueue)["t1"]; s.Ready != 3 || s.Later != 0 {
		t.Errorf("after its NotBefore, t1 ready=%d later=%d, want 3 and 0", s.Ready, s.Later)
	}
}

func testInspectorRotation(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	ins := inspectorOf(t, q)
	kill(t, q, item("deadonly", "d"), "x") // no queued work: not in the order
	for _, tn := range []string{"A", "B", "C"} {
		enqueue(t, q, items(tn, "job", 4)...)
		clock.Advance(time.Millisecond)
	}
	for i := range 9 {
		r, err := ins.Rotation(t.Context(), contract.DefaultQueue, 10)
		mustNoErr(t, err, "Inspector.Rotation")
		order := slices.Clone(r.Order)
		if len(order) != 3 || !slices.Contains(order, "A") || !slices.Contains(order, "B") || !slices.Contains(order, "C") {
			t.Fatalf("Rotation.Order = %v, want A, B and C (the tenants with queued work) in some order", order)
		}
		l := claimOne(t, q, "w")
		if l.Item.Tenant != order[0] {
			t.Errorf("claim %d served %s; Rotation.Order %v said %s was next", i+1, l.Item.Tenant, order, order[0])
		}
		// The served tenant goes to the back of the order.
		want := append(order[1:], order[0])
		r2, err := ins.Rotation(t.Context(), contract.DefaultQueue, 1)
		mustNoErr(t, err, "Inspector.Rotation")
		if !slices.Equal(r2.Order, want) {
			t.Errorf("after serving %s, Rotation.Order = %v, want %v", l.Item.Tenant, r2.Order, want)
		}
	}
}

// A tenant whose items are all delayed cannot be served next, however
// early its turn: Rotation.Order lists the tenants with due work first, in
// the order claims will serve them, then the others in the order their
// first items fall due.
func testInspectorRotationDelayed(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	ins := inspectorOf(t, q)
	t0 := clock.Now()
	delayed := func(tenant, id string, d time.Duration) contract.Item {
		it := item(tenant, id)
		it.NotBefore = t0.Add(d)
		return it
	}
	// Turns in the order of first enqueue: B, A, D, C.
	enqueue(t, q, delayed("B", "b", 10*time.Second))
	clock.Advance(time.Millisecond)
	enqueue(t, q, item("A", "a"))
	clock.Advance(time.Millisecond)
	enqueue(t, q, delayed("D", "d", 5*time.Second))
	clock.Advance(time.Millisecond)
	enqueue(t, q, item("C", "c"))
	order := func() []string {
		t.Helper()
		r, err := ins.Rotation(t.Context(), contract.DefaultQueue, 0)
		mustNoErr(t, err, "Inspector.Rotation")
		return r.Order
	}
	if got, want := order(), []string{"A", "C", "D", "B"}; !slices.Equal(got, want) {
		t.Fatalf("Rotation.Order = %v, want %v: A and C have due work (in turn order), D falls due in 5s, B in 10s", got, want)
	}
	if l := claimOne(t, q, "w"); l.Item.Tenant != "A" {
		t.Fatalf("claim served %s, want A", l.Item.Tenant)
	}
	clock.Set(t0.Add(6 * time.Second)) // D is due now, B is not
	for i := range 2 {
		got := order()
		if len(got) != 3-i || got[len(got)-1] != "B" {
			t.Fatalf("claim %d: Rotation.Order = %v, want the %d tenants with queued work and B, still delayed, last", i+2, got, 3-i)
		}
		if l := claimOne(t, q, "w"); l.Item.Tenant != got[0] {
			t.Errorf("claim %d served %s; Rotation.Order %v said %s was next", i+2, l.Item.Tenant, got, got[0])
		}
	}
	if got := order(); !slices.Equal(got, []string{"B"}) {
		t.Errorf("Rotation.Order = %v, want [B]: a tenant with only delayed work is still listed", got)
	}
}

func testInspectorRecent(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	ins := inspectorOf(t, q)
	enqueue(t, q, items("A", "a", 3)...)
	enqueue(t, q, items("B", "b", 3)...)
	var claimed []contract.Lease
	var at []time.Time
	for i := range 5 {
		at = append(at, clock.Advance(time.Second))
		claimed = append(claimed, claimOne(t, q, fmt.Sprintf("w%d", i)))
	}
	r, err := ins.Rotation(t.Context(), contract.DefaultQueue, 3)
	mustNoErr(t, err, "Inspector.Rotation(n 3)")
	if len(r.Recent) != 3 {
		t.Fatalf("Rotation(n 3).Recent holds %d turns, want 3", len(r.Recent))
	}
	for i, turn := range r.Recent {
		l := claimed[2+i]
		if turn.Tenant != l.Item.Tenant || turn.ID != l.Item.ID || turn.Worker != l.Worker {
			t.Errorf("Recent[%d] = %+v, want the turn of claim %d (%s/%s by %s); most recent last", i, turn, 3+i, l.Item.Tenant, l.Item.ID, l.Worker)
		}
		sameTime(t, fmt.Sprintf("Recent[%d].At", i), turn.At, at[2+i])
	}
	r, err = ins.Rotation(t.Context(), contract.DefaultQueue, 100)
	mustNoErr(t, err, "Inspector.Rotation(n 100)")
	if len(r.Recent) != 5 {
		t.Errorf("Rotation(n 100).Recent holds %d turns after 5 claims, want 5", len(r.Recent))
	}
}

func testInspectorLeases(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	ins := inspectorOf(t, q)
	enqueue(t, q, items("acme", "a", 4)...)
	enqueue(t, q, item("other", "o"))
	var ls []contract.Lease
	for i, d := range []time.Duration{50 * time.Second, 10 * time.Second, 30 * time.Second, 20 * time.Second} {
		got, err := q.Claim(t.Context(), contract.ClaimRequest{Worker: fmt.Sprintf("w%d", i), LeaseFor: d, Max: 1})
		mustNoErr(t, err, "Claim")
		ls = append(ls, got...)
	}
	clock.Advance(time.Second)
	mustNoErr(t, q.Complete(t.Context(), ls[3]), "Complete") // the 20s lease
	var listed []contract.Lease
	cursor := ""
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("Inspector.Leases paging never ended")
		}
		p, err := ins.Leases(t.Context(), contract.DefaultQueue, contract.PageRequest{Cursor: cursor, Limit: 2})
		mustNoErr(t, err, "Inspector.Leases")
		if len(p.Leases) > 2 {
			t.Errorf("Inspector.Leases page of limit 2 holds %d", len(p.Leases))
		}
		listed = append(listed, p.Leases...)
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	want := []contract.Lease{ls[1], ls[2], ls[0]} // soonest expiry first
	if len(listed) != len(want) {
		t.Fatalf("Inspector.Leases lists %v, want the 3 live leases %v", leaseIDs(listed), leaseIDs(want))
	}
	for i, l := range listed {
		w := want[i]
		if normKey(l.Key()) != normKey(w.Key()) || l.Token != w.Token || l.Worker != w.Worker {
			t.Errorf("Leases[%d] = %v token %d by %s, want %v token %d by %s (soonest expiry first)",
				i, l.Key(), l.Token, l.Worker, w.Key(), w.Token, w.Worker)
		}
		sameTime(t, fmt.Sprintf("Leases[%d].ExpiresAt", i), l.ExpiresAt, w.ExpiresAt)
	}
	_, err := ins.Leases(t.Context(), contract.DefaultQueue, contract.PageRequest{Limit: contract.MaxPageSize + 1})
	wantInvalid(t, err, "Inspector.Leases with Limit MaxPageSize+1")
}

func testInspectorItem(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	ins := inspectorOf(t, q)
	t0 := clock.Now()
	enqueue(t, q, contract.Item{Tenant: "acme", ID: "l", Payload: []byte("pl")}, contract.Item{Tenant: "acme", ID: "d", Payload: []byte("pd")})
	var leased contract.Lease
	for _, l := range drain(t, q, "", "w", 10) {
		if l.Item.ID == "d" {
			clock.Advance(time.Second)
			_, err := q.Fail(t.Context(), l, policy.Permanent(errors.New("dead on arrival")))
			mustNoErr(t, err, "Fail")
		} else {
			leased = l
		}
	}
	delayed := contract.Item{Tenant: "acme", ID: "q", Payload: []byte("pq"), NotBefore: t0.Add(time.Hour), Metadata: map[string]string{"m": "1"}}
	enqueue(t, q, delayed)
	ctx := t.Context()
	key := func(id string) contract.ItemKey {
		return contract.ItemKey{Tenant: "acme", Queue: contract.DefaultQueue, ID: id}
	}

	info, err := ins.Item(ctx, key("q"))
	mustNoErr(t, err, "Inspector.Item of a queued item")
	if info.Item.State != contract.StateQueued || info.Lease != nil || string(info.Item.Payload) != "pq" {
		t.Errorf("queued item: state %q lease %+v payload %q, want queued, no lease, pq", info.Item.State, info.Lease, info.Item.Payload)
	}
	sameTime(t, "queued item NotBefore", info.Item.NotBefore, delayed.NotBefore)
	sameMetadata(t, "Inspector.Item", info.Item.Metadata, delayed.Metadata)

	info, err = ins.Item(ctx, key("l"))
	mustNoErr(t, err, "Inspector.Item of a leased item")
	if info.Item.State != contract.StateLeased || info.Lease == nil || info.Lease.Token != leased.Token || info.Lease.Worker != "w" {
		t.Errorf("leased item: state %q lease %+v, want leased with token %d by w", info.Item.State, info.Lease, leased.Token)
	} else {
		sameTime(t, "leased item ExpiresAt", info.Lease.ExpiresAt, leased.ExpiresAt)
	}

	info, err = ins.Item(ctx, key("d"))
	mustNoErr(t, err, "Inspector.Item of a dead item")
	if info.Item.State != contract.StateDead || info.Lease != nil || info.Item.LastError != "dead on arrival" || info.Item.Attempts != 1 {
		t.Errorf("dead item: state %q lease %+v error %q attempts %d, want dead, no lease, the cause, 1",
			info.Item.State, info.Lease, info.Item.LastError, info.Item.Attempts)
	}
	sameTime(t, "dead item DeadAt", info.Item.DeadAt, t0.Add(time.Second))

	_, err = ins.Item(ctx, key("missing"))
	wantIs(t, err, contract.ErrNotFound, "Inspector.Item of a missing item")
	_, err = ins.Item(ctx, contract.ItemKey{Tenant: "other", Queue: contract.DefaultQueue, ID: "l"})
	wantIs(t, err, contract.ErrNotFound, "Inspector.Item of another tenant's id")
	_, err = ins.Item(ctx, contract.ItemKey{Tenant: "acme", Queue: "other", ID: "l"})
	wantIs(t, err, contract.ErrNotFound, "Inspector.Item of another queue's id")
	mustNoErr(t, q.Complete(ctx, leased), "Complete")
	_, err = ins.Item(ctx, key("l"))
	wantIs(t, err, contract.ErrNotFound, "Inspector.Item of a completed item")
}

func testInspectorQueuesHealth(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	ins := inspectorOf(t, q)
	other := item("acme", "y")
	other.Queue = "reports"
	enqueue(t, q, item("acme", "x"), other)
	qs, err := ins.Queues(t.Context())
	mustNoErr(t, err, "Inspector.Queues")
	if !slices.Contains(qs, contract.DefaultQueue) || !slices.Contains(qs, "reports") {
		t.Errorf("Inspector.Queues = %v, want %q and reports among them", qs, contract.DefaultQueue)
	}
	h, err := ins.Health(t.Context())
	mustNoErr(t, err, "Inspector.Health")
	if h.Backing == "" {
		t.Error("Inspector.Health names no backing")
	}
	for _, c := range h.Checks {
		if c.Name == "" || (c.Status != contract.HealthOK && c.Status != contract.HealthWarn && c.Status != contract.HealthFail) {
			t.Errorf("health check %+v: want a name and a status of ok, warn or fail", c)
		}
	}
	// Reading changes nothing: both items are still there to claim.
	if ls := drain(t, q, "", "w", 10); len(ls) != 1 {
		t.Errorf("after inspecting, the default queue serves %v, want acme/x", leaseIDs(ls))
	}
	if ls := drain(t, q, "reports", "w", 10); len(ls) != 1 {
		t.Errorf("after inspecting, queue reports serves %v, want acme/y", leaseIDs(ls))
	}
}

func testInspectorCancelled(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	ins := inspectorOf(t, q)
	enqueue(t, q, item("acme", "x"))
	ctx := cancelled(t)
	_, err := ins.Queues(ctx)
	wantIs(t, err, context.Canceled, "Inspector.Queues with a cancelled context")
	_, err = ins.Tenants(ctx, contract.DefaultQueue)
	wantIs(t, err, context.Canceled, "Inspector.Tenants with a cancelled context")
	_, err = ins.Rotation(ctx, contract.DefaultQueue, 10)
	wantIs(t, err, context.Canceled, "Inspector.Rotation with a cancelled context")
	_, err = ins.Leases(ctx, contract.DefaultQueue, contract.PageRequest{})
	wantIs(t, err, context.Canceled, "Inspector.Leases with a cancelled context")
	_, err = ins.Item(ctx, contract.ItemKey{Tenant: "acme", Queue: contract.DefaultQueue, ID: "x"})
	wantIs(t, err, context.Canceled, "Inspector.Item with a cancelled context")
	_, err = ins.Health(ctx)
	wantIs(t, err, context.Canceled, "Inspector.Health with a cancelled context")
}
