//go:build integration

package redisstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

func newCompleteClaimQueue(t *testing.T, n int) (*RedisWorkQueue, *contracttest.FakeClock) {
	t.Helper()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	clock := contracttest.NewFakeClock(time.Time{})
	q, err := NewQueue(client, clock, Settings{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	items := make([]contract.Item, n)
	for i := range items {
		items[i] = contract.Item{Tenant: "acme", ID: fmt.Sprintf("i%02d", i)}
	}
	if err := q.Enqueue(context.Background(), items...); err != nil {
		t.Fatal(err)
	}
	return q, clock
}

// remaining counts the items still held by the queue (queued or leased).
func remaining(t *testing.T, q *RedisWorkQueue) int {
	t.Helper()
	ts, err := q.Tenants(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range ts {
		n += int(s.Ready + s.Later + s.Leased)
	}
	return n
}

func TestCompleteAndClaim(t *testing.T) {
	ctx := context.Background()
	q, _ := newCompleteClaimQueue(t, 6)
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
	if n := remaining(t, q); n != 4 {
		t.Errorf("%d items left, want 4 (2 completed)", n)
	}
	// The claimed leases are live: a plain Complete accepts their tokens.
	if err := q.Complete(ctx, next...); err != nil {
		t.Errorf("completing the claimed leases: %v", err)
	}
}

func TestCompleteAndClaimLostLease(t *testing.T) {
	ctx := context.Background()
	q, _ := newCompleteClaimQueue(t, 5)
	req := contract.ClaimRequest{LeaseFor: time.Minute, Max: 2}
	held, err := q.Claim(ctx, req)
	if err != nil || len(held) != 2 {
		t.Fatalf("claim: %d leases, %v", len(held), err)
	}
	stale := held[0]
	stale.Token-- // a token the item no longer carries, as after a reap and reclaim
	next, err := q.CompleteAndClaim(ctx, []contract.Lease{stale, held[1]}, req)
	var lle *contract.LeaseLostError
	if !errors.As(err, &lle) || len(lle.Items) != 1 || lle.Items[0] != stale.Key() {
		t.Fatalf("got %v, want a LeaseLostError naming only %v", err, stale.Key())
	}
	if len(next) != 2 {
		t.Fatalf("%d leases claimed alongside the lost one, want 2", len(next))
	}
	if n := remaining(t, q); n != 4 {
		t.Errorf("%d items left, want 4 (the fenced complete landed, the stale one did not)", n)
	}
	// The stale lease's item is still leased under its real token.
	if err := q.Complete(ctx, held[0]); err != nil {
		t.Errorf("the real lease of the stale item: %v", err)
	}
}

func TestCompleteAndClaimMaxZero(t *testing.T) {
	ctx := context.Background()
	q, _ := newCompleteClaimQueue(t, 3)
	held, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 2})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := q.CompleteAndClaim(ctx, held, contract.ClaimRequest{})
	if err != nil || ls != nil {
		t.Fatalf("max 0: %v, %v; want nothing claimed and no error", ls, err)
	}
	ts, err := q.Tenants(ctx, "")
	if err != nil || len(ts) != 1 || ts[0].Ready != 1 || ts[0].Leased != 0 {
		t.Errorf("after max 0: %+v, %v; want 1 queued, 0 leased", ts, err)
	}
	// Nothing left to complete and nothing due: ErrEmpty, as Claim says.
	if _, err := q.CompleteAndClaim(ctx, nil, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1}); err != nil {
		t.Fatalf("claiming the last item: %v", err)
	}
	if _, err := q.CompleteAndClaim(ctx, nil, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1}); !errors.Is(err, contract.ErrEmpty) {
		t.Errorf("empty queue: %v, want ErrEmpty", err)
	}
}

// TestRetriedCompleteAndClaim sends one call twice with its nonce, as a
// retry after a lost reply does: the second neither reports the leases the
// first completed as lost nor claims more.
func TestRetriedCompleteAndClaim(t *testing.T) {
	ctx := context.Background()
	q, _ := newCompleteClaimQueue(t, 6)
	// The driver is called with the queue named, as the front door does.
	req := contract.ClaimRequest{Queue: contract.DefaultQueue, LeaseFor: time.Minute, Max: 2}
	held, err := q.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	first, err := q.d.completeAndClaim(ctx, held, req, "cc-nonce-0000001")
	if err != nil || len(first) != 2 {
		t.Fatalf("first: %d leases, %v", len(first), err)
	}
	again, err := q.d.completeAndClaim(ctx, held, req, "cc-nonce-0000001")
	if err != nil || len(again) != 2 {
		t.Fatalf("retry: %d leases, %v; want the same 2 and no lost leases", len(again), err)
	}
	for i := range first {
		if again[i].Key() != first[i].Key() || again[i].Token != first[i].Token {
			t.Errorf("retry returned %v/%d, first %v/%d", again[i].Key(), again[i].Token, first[i].Key(), first[i].Token)
		}
	}
	if n := remaining(t, q); n != 4 {
		t.Errorf("%d items left, want 4", n)
	}
	// A new call with the stale leases does report them lost.
	_, err = q.CompleteAndClaim(ctx, held, contract.ClaimRequest{})
	var lle *contract.LeaseLostError
	if !errors.As(err, &lle) || len(lle.Items) != 2 {
		t.Errorf("completing twice under a new nonce: %v, want both lost", err)
	}
}
