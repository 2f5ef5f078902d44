//go:build integration

package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
)

func newCompleteClaimQueue(t *testing.T, n int) *pgstore.PostgresWorkQueue {
	t.Helper()
	d := newTestDB(t)
	q, err := pgstore.NewWorkQueue(d.pool, contracttest.NewFakeClock(time.Time{}), d.settings(pgstore.Settings{}))
	if err != nil {
		t.Fatal(err)
	}
	items := make([]contract.Item, n)
	for i := range items {
		items[i] = contract.Item{Tenant: "acme", ID: fmt.Sprintf("i%02d", i)}
	}
	if err := q.Enqueue(context.Background(), items...); err != nil {
		t.Fatal(err)
	}
	return q
}

// held counts the items the queue still holds, queued or leased.
func held(t *testing.T, q *pgstore.PostgresWorkQueue) int64 {
	t.Helper()
	ts, err := q.Tenants(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, s := range ts {
		n += s.Ready + s.Later + s.Leased
	}
	return n
}

// The completes and the claim go in one transaction: the completed items
// are gone, the claimed ones are new and live.
func TestCompleteAndClaim(t *testing.T) {
	ctx := context.Background()
	q := newCompleteClaimQueue(t, 6)
	req := contract.ClaimRequest{LeaseFor: time.Minute, Max: 2, Worker: "w"}
	first, err := q.Claim(ctx, req)
	if err != nil || len(first) != 2 {
		t.Fatalf("claim: %d leases, %v", len(first), err)
	}
	next, err := q.CompleteAndClaim(ctx, first, req)
	if err != nil || len(next) != 2 {
		t.Fatalf("complete and claim: %d leases, %v", len(next), err)
	}
	for _, l := range next {
		if l.Item.ID == first[0].Item.ID || l.Item.ID == first[1].Item.ID || l.Worker != "w" || l.Item.State != contract.StateLeased {
			t.Errorf("claimed %+v again or wrongly", l.Key())
		}
	}
	if n := held(t, q); n != 4 {
		t.Errorf("%d items left, want 4 (2 completed)", n)
	}
	if err := q.Complete(ctx, next...); err != nil {
		t.Errorf("completing the claimed leases: %v", err)
	}
}

// A stale lease among the completes is named lost; the others complete
// and the claim goes ahead.
func TestCompleteAndClaimLostLease(t *testing.T) {
	ctx := context.Background()
	q := newCompleteClaimQueue(t, 5)
	req := contract.ClaimRequest{LeaseFor: time.Minute, Max: 2, Worker: "w"}
	leases, err := q.Claim(ctx, req)
	if err != nil || len(leases) != 2 {
		t.Fatalf("claim: %d leases, %v", len(leases), err)
	}
	stale := leases[0]
	stale.Token-- // a token the item no longer carries, as after a reap and reclaim
	next, err := q.CompleteAndClaim(ctx, []contract.Lease{stale, leases[1]}, req)
	lle, ok := errors.AsType[*contract.LeaseLostError](err)
	if !ok || len(lle.Items) != 1 || lle.Items[0] != stale.Key() {
		t.Fatalf("got %v, want a LeaseLostError naming only %v", err, stale.Key())
	}
	if len(next) != 2 {
		t.Fatalf("%d leases claimed beside the lost one, want 2", len(next))
	}
	if n := held(t, q); n != 4 {
		t.Errorf("%d items left, want 4 (the fenced complete landed, the stale one did not)", n)
	}
	if err := q.Complete(ctx, leases[0]); err != nil {
		t.Errorf("the real lease of the stale item: %v", err)
	}
}

// Max 0 only completes; with nothing to complete it is a Claim, ErrEmpty
// included; bad input is refused before anything runs.
func TestCompleteAndClaimEdges(t *testing.T) {
	ctx := context.Background()
	q := newCompleteClaimQueue(t, 3)
	leases, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 2, Worker: "w"})
	if err != nil {
		t.Fatal(err)
	}
	bad := leases[0]
	bad.Item.Tenant = ""
	if _, err := q.CompleteAndClaim(ctx, []contract.Lease{leases[1], bad}, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1, Worker: "w"}); !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("a lease without a tenant: %v, want a ValidationError", err)
	}
	if n := held(t, q); n != 3 {
		t.Fatalf("after refused input %d items left, want all 3", n)
	}
	ls, err := q.CompleteAndClaim(ctx, leases, contract.ClaimRequest{})
	if err != nil || ls != nil {
		t.Fatalf("max 0: %v, %v; want nothing claimed and no error", ls, err)
	}
	if n := held(t, q); n != 1 {
		t.Fatalf("after max 0 %d items left, want 1", n)
	}
	last, err := q.CompleteAndClaim(ctx, nil, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1, Worker: "w"})
	if err != nil || len(last) != 1 {
		t.Fatalf("claiming the last item: %v, %v", last, err)
	}
	if _, err := q.CompleteAndClaim(ctx, last, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1, Worker: "w"}); !errors.Is(err, contract.ErrEmpty) {
		t.Errorf("completing the last item with nothing left to claim: %v, want ErrEmpty", err)
	}
	if n := held(t, q); n != 0 {
		t.Errorf("%d items left, want none", n)
	}
}
