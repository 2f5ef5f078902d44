package contracttest

import (
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// queueFairnessCases pin tenant rotation: one tenant per turn, so a
// backlog cannot starve a neighbour, whether claims take one item or a
// batch.
func queueFairnessCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"SmallTenantsServedEarly", func(t *testing.T, f QueueFactory) { testSmallTenantsEarly(t, f, 1) }},
		{"SmallTenantsServedEarlyBatch10", func(t *testing.T, f QueueFactory) { testSmallTenantsEarly(t, f, 10) }},
		{"OncePerRotation", func(t *testing.T, f QueueFactory) { testOncePerRotation(t, f, 1) }},
		{"OncePerRotationBatch7", func(t *testing.T, f QueueFactory) { testOncePerRotation(t, f, 7) }},
		{"DelayedTenantDoesNotBlock", testDelayedTenantDoesNotBlock},
		{"BusyTenantFillsBatch", testBusyTenantFillsBatch},
		{"TenantJoiningIsServed", testTenantJoining},
	}
}

// claimSequence claims n items max at a time and returns the tenants in
// claim order (within a batch, in the order the claim returned them).
func claimSequence(t *testing.T, q contract.WorkQueue, n, max int) []contract.Lease {
	t.Helper()
	var out []contract.Lease
	for len(out) < n {
		ls, err := q.Claim(t.Context(), claimReq("w", min(max, n-len(out))))
		mustNoErr(t, err, "Claim (Max %d) after %d claims", max, len(out))
		if len(ls) == 0 {
			t.Fatalf("Claim returned no leases and no error")
		}
		out = append(out, ls...)
	}
	return out
}

func tenantsOf(ls []contract.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Item.Tenant
	}
	return out
}

func testSmallTenantsEarly(t *testing.T, f QueueFactory, max int) {
	q, clock := newQueue(t, f, testPolicy())
	enqueue(t, q, items("A", "a", 1000)...)
	clock.Advance(time.Millisecond)
	enqueue(t, q, items("B", "b", 5)...)
	clock.Advance(time.Millisecond)
	enqueue(t, q, items("C", "c", 5)...)
	ls := claimSequence(t, q, 20, max)
	small := 0
	for i, l := range ls[:15] {
		if l.Item.Tenant != "A" {
			small++
		}
		if i > 0 && l.Item.Tenant == ls[i-1].Item.Tenant && l.Item.Tenant == "A" && small < 10 {
			t.Errorf("claim %d served A twice in a row while B or C had ready work (claims: %v)", i+1, tenantsOf(ls[:15]))
			break
		}
	}
	if small != 10 {
		t.Errorf("with A holding 1000 items and B, C 5 each, the first 15 claims (Max %d) served %d of B's and C's 10: %v",
			max, small, tenantsOf(ls[:15]))
	}
	for _, l := range ls[15:] {
		if l.Item.Tenant != "A" {
			t.Errorf("claims after the 15th served %s; only A should have work left", l.Item.Tenant)
		}
	}
}

func testOncePerRotation(t *testing.T, f QueueFactory, max int) {
	const tenants, each = 4, 30
	q, clock := newQueue(t, f, testPolicy())
	for i := range tenants {
		enqueue(t, q, items(fmt.Sprintf("T%d", i), "job", each)...)
		clock.Advance(time.Millisecond)
	}
	ls := claimSequence(t, q, tenants*each, max)
	seq := tenantsOf(ls)
	for i := 0; i+tenants <= len(seq); i++ {
		window := map[string]bool{}
		for _, tn := range seq[i : i+tenants] {
			window[tn] = true
		}
		if len(window) != tenants {
			t.Fatalf("claims %d..%d (Max %d) served %v: with %d tenants holding ready work, every %d consecutive claims must serve all of them",
				i+1, i+tenants, max, seq[i:i+tenants], tenants, tenants)
		}
	}
	wantEmpty(t, q, "", "after claiming everything")
}

func testDelayedTenantDoesNotBlock(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	t0 := clock.Now()
	delayed := items("A", "a", 5)
	for i := range delayed {
		delayed[i].NotBefore = t0.Add(time.Hour)
	}
	enqueue(t, q, delayed...)
	enqueue(t, q, items("B", "b", 3)...)
	enqueue(t, q, items("C", "c", 3)...)
	one := claimOne(t, q, "w")
	if one.Item.Tenant == "A" {
		t.Fatalf("claimed a delayed item of A")
	}
	ls, err := q.Claim(t.Context(), claimReq("w", 10))
	mustNoErr(t, err, "Claim(Max 10) while A's items are all delayed")
	if len(ls) != 5 {
		t.Errorf("Claim(Max 10) with 5 ready items besides A's delayed ones returned %d: %v", len(ls), leaseIDs(ls))
	}
	for _, l := range ls {
		if l.Item.Tenant == "A" {
			t.Errorf("claimed A's delayed item %s", l.Item.ID)
		}
	}
	wantEmpty(t, q, "", "with only delayed items left")
	clock.Set(t0.Add(time.Hour))
	if got := drain(t, q, "", "w", 2); len(got) != 5 {
		t.Errorf("after A's delay passed, claimed %d of its 5 items", len(got))
	}
}

func testBusyTenantFillsBatch(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	enqueue(t, q, items("busy", "x", 50)...)
	ls, err := q.Claim(t.Context(), claimReq("w", 10))
	mustNoErr(t, err, "Claim(Max 10) with one busy tenant")
	if len(ls) != 10 {
		t.Errorf("Claim(Max 10) with one tenant holding 50 items returned %d leases, want 10", len(ls))
	}
	enqueue(t, q, item("small", "s"))
	ls, err = q.Claim(t.Context(), claimReq("w", 10))
	mustNoErr(t, err, "Claim(Max 10) with a busy and a small tenant")
	small := 0
	for _, l := range ls {
		if l.Item.Tenant == "small" {
			small++
		}
	}
	if len(ls) != 10 || small != 1 {
		t.Errorf("Claim(Max 10) with one busy tenant and one holding 1 item returned %d leases (%d of the small tenant), want 10 with 1",
			len(ls), small)
	}
}

func testTenantJoining(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	enqueue(t, q, items("A", "a", 100)...)
	claimSequence(t, q, 10, 5)
	enqueue(t, q, item("late", "l"))
	ls := claimSequence(t, q, 2, 1)
	if ls[0].Item.Tenant != "late" && ls[1].Item.Tenant != "late" {
		t.Errorf("a tenant that got work while A had a backlog was not served within 2 claims: %v", tenantsOf(ls))
	}
}
