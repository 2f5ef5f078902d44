package contracttest

import (
	"errors"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// queueCompleteClaimerCases pin the optional CompleteClaimer: the
// completes land as Complete's would, the claim is Claim's, a lost lease
// is named without stopping the claim, Max 0 only completes, and bad
// input changes nothing.
func queueCompleteClaimerCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"CompletesThenClaims", testCompleteAndClaim},
		{"LostLeaseNamedClaimGoesAhead", testCompleteAndClaimLost},
		{"MaxZeroEmptyAndBadInput", testCompleteAndClaimEdges},
	}
}

// completeClaimerOf returns q's CompleteClaimer, or nil when q does not
// offer the optional interface (logged).
func completeClaimerOf(t *testing.T, q contract.WorkQueue) contract.CompleteClaimer {
	t.Helper()
	cc, ok := contract.AsCompleteClaimer(q)
	if !ok {
		t.Logf("%T does not implement the optional contract.CompleteClaimer", q)
		return nil
	}
	return cc
}

// held counts the items of the default queue that are queued or leased.
func held(t *testing.T, q contract.WorkQueue) int64 {
	t.Helper()
	ts, err := inspectorOf(t, q).Tenants(t.Context(), contract.DefaultQueue)
	mustNoErr(t, err, "Tenants")
	var n int64
	for _, s := range ts {
		n += s.Ready + s.Later + s.Leased
	}
	return n
}

func testCompleteAndClaim(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	cc := completeClaimerOf(t, q)
	if cc == nil {
		return
	}
	enqueue(t, q, items("acme", "i", 6)...)
	first, err := q.Claim(t.Context(), claimReq("w", 2))
	mustNoErr(t, err, "Claim")
	next, err := cc.CompleteAndClaim(t.Context(), first, claimReq("w", 2))
	mustNoErr(t, err, "CompleteAndClaim")
	if len(next) != 2 {
		t.Fatalf("CompleteAndClaim claimed %d leases, want 2", len(next))
	}
	for _, l := range next {
		if l.Item.ID == first[0].Item.ID || l.Item.ID == first[1].Item.ID || l.Worker != "w" || l.Item.State != contract.StateLeased {
			t.Errorf("claimed %v (worker %q, state %q): a completed item again, or not leased to w", l.Key(), l.Worker, l.Item.State)
		}
	}
	if n := held(t, q); n != 4 {
		t.Errorf("%d items left after completing 2 of 6, want 4", n)
	}
	mustNoErr(t, q.Complete(t.Context(), next...), "Complete of the leases CompleteAndClaim returned")
}

func testCompleteAndClaimLost(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	cc := completeClaimerOf(t, q)
	if cc == nil {
		return
	}
	enqueue(t, q, items("acme", "i", 5)...)
	leases, err := q.Claim(t.Context(), claimReq("w", 2))
	mustNoErr(t, err, "Claim")
	stale := leases[0]
	stale.Token-- // a token the item no longer carries, as after a reap and reclaim
	next, err := cc.CompleteAndClaim(t.Context(), []contract.Lease{stale, leases[1]}, claimReq("w", 2))
	wantLeaseLost(t, err, "CompleteAndClaim with a stale lease", stale.Key())
	if len(next) != 2 {
		t.Fatalf("%d leases claimed beside the lost one, want 2", len(next))
	}
	if n := held(t, q); n != 4 {
		t.Errorf("%d items left, want 4: the fenced complete lands, the stale one does not", n)
	}
	mustNoErr(t, q.Complete(t.Context(), leases[0]), "Complete of the stale item's real lease")
}

func testCompleteAndClaimEdges(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	cc := completeClaimerOf(t, q)
	if cc == nil {
		return
	}
	enqueue(t, q, items("acme", "i", 3)...)
	leases, err := q.Claim(t.Context(), claimReq("w", 2))
	mustNoErr(t, err, "Claim")
	bad := leases[0]
	bad.Item.Tenant = ""
	_, err = cc.CompleteAndClaim(t.Context(), []contract.Lease{leases[1], bad}, claimReq("w", 1))
	wantInvalid(t, err, "CompleteAndClaim with a lease without a tenant")
	if n := held(t, q); n != 3 {
		t.Fatalf("refused input changed the queue: %d items left, want 3", n)
	}
	ls, err := cc.CompleteAndClaim(t.Context(), leases, contract.ClaimRequest{})
	if err != nil || ls != nil {
		t.Fatalf("Max 0: %d leases, %v; want nothing claimed and no error", len(ls), err)
	}
	if n := held(t, q); n != 1 {
		t.Fatalf("after Max 0 %d items left, want 1: it completes", n)
	}
	last, err := cc.CompleteAndClaim(t.Context(), nil, claimReq("w", 1))
	mustNoErr(t, err, "CompleteAndClaim with nothing to complete")
	if len(last) != 1 {
		t.Fatalf("claimed %d, want the last item", len(last))
	}
	ls, err = cc.CompleteAndClaim(t.Context(), last, claimReq("w", 1))
	if !errors.Is(err, contract.ErrEmpty) || len(ls) != 0 {
		t.Errorf("completing the last item with nothing due: %d leases, %v; want ErrEmpty", len(ls), err)
	}
	if n := held(t, q); n != 0 {
		t.Errorf("%d items left, want none", n)
	}
}
