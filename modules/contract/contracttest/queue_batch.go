package contracttest

import (
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// queueBatchCases pin what a batch call means. A Complete batch settles
// its leases in order, as that many Complete calls one after another
// would, so an item named twice completes once and the other entry is
// reported lost. An Enqueue batch sent again after an error (some of it
// may have landed) adds what is missing and leaves what is there.
func queueBatchCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"CompleteNamesItemTwice", testCompleteNamesItemTwice},
		{"CompleteStaleBesideLive", testCompleteStaleBesideLive},
		{"EnqueueResentBatch", testEnqueueResentBatch},
	}
}

func testCompleteNamesItemTwice(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	enqueue(t, q, item("acme", "a"), item("acme", "b"))
	ls, err := q.Claim(t.Context(), claimReq("w", 2))
	mustNoErr(t, err, "Claim(Max 2)")
	if len(ls) != 2 {
		t.Fatalf("Claim(Max 2) returned %d leases", len(ls))
	}
	a, b := ls[0], ls[1]
	wantLeaseLost(t, q.Complete(t.Context(), a, a, b),
		"Complete(a, a, b): the second a finds its item completed by the first", a.Key())
	wantItemState(t, q, a.Key(), "gone", "an item named twice in a Complete")
	wantItemState(t, q, b.Key(), "gone", "the item beside it")
	wantEmpty(t, q, "", "after Complete(a, a, b)")
	wantLeaseLost(t, q.Complete(t.Context(), a), "Complete(a) again", a.Key())
}

// testCompleteStaleBesideLive gives one batch an item's stale lease and
// its live one, in both orders, as a runner does whose first handler
// outlived its lease while the item, reclaimed, ran again.
func testCompleteStaleBesideLive(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	for _, order := range []string{"stale first", "live first"} {
		id := "x " + order
		enqueue(t, q, item("acme", id))
		stale := claimOne(t, q, "w")
		_, err := q.Fail(t.Context(), stale, errors.New("try again"))
		mustNoErr(t, err, "Fail")
		clock.Advance(time.Second) // the policy's first backoff
		live := claimOne(t, q, "w")
		if live.Item.ID != id || live.Token == stale.Token {
			t.Fatalf("reclaim: got %s token %d, want %s under a new token (was %d)", live.Item.ID, live.Token, id, stale.Token)
		}
		batch := []contract.Lease{stale, live}
		if order == "live first" {
			batch = []contract.Lease{live, stale}
		}
		wantLeaseLost(t, q.Complete(t.Context(), batch...), "Complete of the stale and the live lease of one item, "+order, stale.Key())
		wantItemState(t, q, live.Key(), "gone", "the item after its live lease completed, "+order)
		wantEmpty(t, q, "", "after completing the live lease, "+order)
	}
}

// testEnqueueResentBatch sends a batch, claims part of it, and sends the
// whole batch again with one more item, as a producer does that got an
// error and cannot tell how much landed.
func testEnqueueResentBatch(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	first := []contract.Item{
		{Tenant: "acme", ID: "a", Payload: []byte("first a")},
		{Tenant: "acme", ID: "b", Payload: []byte("first b")},
		{Tenant: "acme", ID: "c", Payload: []byte("first c")},
	}
	mustNoErr(t, q.Enqueue(t.Context(), first...), "Enqueue(a, b, c)")
	t0 := clock.Now()
	la := claimOne(t, q, "w")
	if la.Item.ID != "a" {
		t.Fatalf("first claim took %q, want a (items due together are claimed in batch order)", la.Item.ID)
	}
	clock.Advance(time.Second)
	again := []contract.Item{
		{Tenant: "acme", ID: "a", Payload: []byte("second a")},
		{Tenant: "acme", ID: "b", Payload: []byte("second b")},
		{Tenant: "acme", ID: "c", Payload: []byte("second c")},
		{Tenant: "acme", ID: "d", Payload: []byte("second d")},
	}
	mustNoErr(t, q.Enqueue(t.Context(), again...), "Enqueue(a, b, c, d) resent")
	wantItemState(t, q, la.Key(), string(contract.StateLeased), "a leased item whose ID was sent again")
	ls := drain(t, q, "", "w", 10)
	if got := leaseIDs(ls); len(got) != 3 || got[0] != "acme/b" || got[1] != "acme/c" || got[2] != "acme/d" {
		t.Fatalf("after the resent batch the queue held %v, want acme/b, acme/c, acme/d in that order", got)
	}
	sameLeaseItem(t, "b (the first send wins)", ls[0], first[1])
	sameLeaseItem(t, "c (the first send wins)", ls[1], first[2])
	sameLeaseItem(t, "d (added by the resend)", ls[2], again[3])
	if info, state, ok := itemState(t, q, ls[0].Key()); ok && state == string(contract.StateLeased) {
		sameTime(t, "b's EnqueuedAt (kept from the first send)", info.Item.EnqueuedAt, t0)
	}
	mustNoErr(t, q.Complete(t.Context(), append(ls, la)...), "Complete of every lease")
}
