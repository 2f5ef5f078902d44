package contracttest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// queueBasicCases pin the life of an item: enqueue, claim, complete,
// delays, idempotent enqueue and the batch forms.
func queueBasicCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"EnqueueClaimComplete", testEnqueueClaimComplete},
		{"ClaimTakesWhatIsDue", testClaimTakesWhatIsDue},
		{"DelayedNotClaimedEarly", testDelayed},
		{"IdempotentEnqueueQueued", testIdempotentQueued},
		{"IdempotentEnqueueLeased", testIdempotentLeased},
		{"IdempotentEnqueueDead", testIdempotentDead},
		{"ReenqueueAfterComplete", testReenqueueAfterComplete},
		{"BatchEnqueue", testBatchEnqueue},
		{"BatchComplete", testBatchComplete},
		{"BatchCompletePartialLoss", testBatchCompletePartialLoss},
		{"DefaultQueueName", testDefaultQueueName},
	}
}

// sameLeaseItem fails unless the lease carries the enqueued item intact.
func sameLeaseItem(t *testing.T, what string, got contract.Lease, want contract.Item) {
	t.Helper()
	if got.Item.Tenant != want.Tenant || got.Item.ID != want.ID || contract.QueueName(got.Item.Queue) != contract.QueueName(want.Queue) {
		t.Errorf("%s: lease is for %q/%q/%q, want %q/%q/%q", what, got.Item.Tenant, got.Item.Queue, got.Item.ID,
			want.Tenant, contract.QueueName(want.Queue), want.ID)
	}
	if !bytes.Equal(got.Item.Payload, want.Payload) {
		t.Errorf("%s: Payload = %s, want %s", what, clip(got.Item.Payload), clip(want.Payload))
	}
	sameMetadata(t, what, got.Item.Metadata, want.Metadata)
}

func testEnqueueClaimComplete(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	t0 := clock.Now()
	in := contract.Item{Tenant: "acme", ID: "job-1", Payload: []byte{0, 1, 2, 0xff, 'x'},
		Metadata: map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "k": "v"}}
	enqueue(t, q, in)
	wantItemState(t, q, in.Key(), string(contract.StateQueued), "after Enqueue")
	t1 := clock.Advance(2 * time.Second)
	l := claimOne(t, q, "worker-1")
	sameLeaseItem(t, "claimed lease", l, in)
	if l.Item.State != contract.StateLeased {
		t.Errorf("claimed lease's Item.State = %q, want %q", l.Item.State, contract.StateLeased)
	}
	if l.Item.Attempts != 0 || l.Item.LastError != "" {
		t.Errorf("first claim: Attempts=%d LastError=%q, want 0 and empty", l.Item.Attempts, l.Item.LastError)
	}
	if l.Worker != "worker-1" {
		t.Errorf("lease Worker = %q, want worker-1", l.Worker)
	}
	if l.Token == 0 {
		t.Error("lease Token is 0; a claim must issue a fencing token")
	}
	sameTime(t, "lease ExpiresAt", l.ExpiresAt, t1.Add(lease))
	sameTime(t, "lease Item.EnqueuedAt", l.Item.EnqueuedAt, t0)
	wantItemState(t, q, in.Key(), string(contract.StateLeased), "after Claim")
	wantEmpty(t, q, "", "a second claim while the only item is leased")
	mustNoErr(t, q.Complete(t.Context(), l), "Complete")
	wantItemState(t, q, in.Key(), "gone", "after Complete")
	clock.Advance(time.Hour)
	wantEmpty(t, q, "", "a claim after Complete, even an hour later")
}

func testClaimTakesWhatIsDue(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	enqueue(t, q, items("acme", "a", 3)...)
	ls, err := q.Claim(t.Context(), claimReq("w", 10))
	mustNoErr(t, err, "Claim(Max 10) with 3 due")
	if len(ls) != 3 {
		t.Fatalf("Claim(Max 10) with 3 due items returned %d leases, want 3", len(ls))
	}
	seen := map[string]bool{}
	for _, l := range ls {
		if seen[l.Item.ID] {
			t.Errorf("one claim returned item %s twice", l.Item.ID)
		}
		seen[l.Item.ID] = true
	}
	wantEmpty(t, q, "", "after claiming all three")
}

func testDelayed(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	t0 := clock.Now()
	later := item("acme", "later")
	later.NotBefore = t0.Add(10 * time.Second)
	past := item("acme", "past")
	past.NotBefore = t0.Add(-time.Hour)
	enqueue(t, q, later, past)
	ls, err := q.Claim(t.Context(), claimReq("w", 10))
	mustNoErr(t, err, "Claim with one due and one delayed item")
	if len(ls) != 1 || ls[0].Item.ID != "past" {
		t.Fatalf("Claim returned %v, want only the item whose NotBefore has passed", leaseIDs(ls))
	}
	clock.Set(t0.Add(10*time.Second - time.Millisecond))
	wantEmpty(t, q, "", "1ms before NotBefore")
	clock.Set(t0.Add(10 * time.Second))
	l := claimOne(t, q, "w")
	if l.Item.ID != "later" {
		t.Errorf("at NotBefore claimed %s, want later", l.Item.ID)
	}
}

func testIdempotentQueued(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	first := contract.Item{Tenant: "acme", ID: "x", Payload: []byte("first"), Metadata: map[string]string{"v": "1"}}
	enqueue(t, q, first)
	clock.Advance(time.Second)
	second := contract.Item{Tenant: "acme", ID: "x", Payload: []byte("second"), Metadata: map[string]string{"v": "2"}}
	enqueue(t, q, second)
	enqueue(t, q, second)
	ls := drain(t, q, "", "w", 10)
	if len(ls) != 1 {
		t.Fatalf("an ID enqueued three times was claimed %d times, want once", len(ls))
	}
	sameLeaseItem(t, "the claimed item (the first enqueue wins)", ls[0], first)
}

func testIdempotentLeased(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	first := contract.Item{Tenant: "acme", ID: "x", Payload: []byte("first")}
	enqueue(t, q, first)
	l := claimOne(t, q, "w")
	enqueue(t, q, contract.Item{Tenant: "acme", ID: "x", Payload: []byte("second")})
	wantEmpty(t, q, "", "after enqueueing the ID of a leased item")
	wantItemState(t, q, first.Key(), string(contract.StateLeased), "after enqueueing the ID of a leased item")
	mustNoErr(t, q.Complete(t.Context(), l), "Complete with the original lease after a duplicate enqueue")
	wantEmpty(t, q, "", "after Complete")
}

func testIdempotentDead(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	first := contract.Item{Tenant: "acme", ID: "x", Payload: []byte("first")}
	enqueue(t, q, first)
	l := claimOne(t, q, "w")
	_, err := q.Fail(t.Context(), l, policy.Permanent(errors.New("poison")))
	mustNoErr(t, err, "Fail(Permanent)")
	enqueue(t, q, contract.Item{Tenant: "acme", ID: "x", Payload: []byte("second")})
	clock.Advance(time.Hour)
	wantEmpty(t, q, "", "after enqueueing the ID of a dead item")
	dead := deadLetters(t, q, contract.DeadLetterFilter{})
	if len(dead) != 1 || dead[0].ID != "x" || !bytes.Equal(dead[0].Payload, first.Payload) || dead[0].State != contract.StateDead {
		t.Errorf("dead letters after a duplicate enqueue = %+v, want only x, dead, with the first payload", dead)
	}
}

func testReenqueueAfterComplete(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	enqueue(t, q, contract.Item{Tenant: "acme", ID: "x", Payload: []byte("first")})
	mustNoErr(t, q.Complete(t.Context(), claimOne(t, q, "w")), "Complete")
	again := contract.Item{Tenant: "acme", ID: "x", Payload: []byte("third"), Metadata: map[string]string{"round": "2"}}
	enqueue(t, q, again)
	l := claimOne(t, q, "w")
	sameLeaseItem(t, "the re-enqueued item", l, again)
	if l.Item.Attempts != 0 {
		t.Errorf("re-enqueued item has Attempts %d, want 0", l.Item.Attempts)
	}
}

func testBatchEnqueue(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	batch := append(items("t1", "a", 3), items("t2", "b", 2)...)
	mustNoErr(t, q.Enqueue(t.Context(), batch...), "Enqueue of a batch of 5")
	ls := drain(t, q, "", "w", 10)
	if len(ls) != len(batch) {
		t.Fatalf("a batch of %d claimed as %d leases", len(batch), len(ls))
	}
	byKey := map[contract.ItemKey]contract.Item{}
	for _, it := range batch {
		byKey[it.Key()] = it
	}
	for _, l := range ls {
		want, ok := byKey[normKey(l.Key())]
		if !ok {
			t.Errorf("claimed %v, which was not enqueued (or twice)", l.Key())
			continue
		}
		sameLeaseItem(t, "batch item", l, want)
		delete(byKey, normKey(l.Key()))
	}
}

func testBatchComplete(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	enqueue(t, q, items("acme", "a", 5)...)
	enqueue(t, q, item("acme", "rest"))
	ls, err := q.Claim(t.Context(), claimReq("w", 5))
	mustNoErr(t, err, "Claim(Max 5)")
	if len(ls) != 5 {
		t.Fatalf("Claim(Max 5) of 6 items of one tenant returned %d leases, want 5", len(ls))
	}
	mustNoErr(t, q.Complete(t.Context(), ls...), "Complete of a batch of 5")
	for _, l := range ls {
		wantItemState(t, q, l.Key(), "gone", "after batch Complete")
	}
	rest := claimOne(t, q, "w")
	if rest.Item.ID == ls[0].Item.ID {
		t.Errorf("claimed %s again after completing it", rest.Item.ID)
	}
	wantEmpty(t, q, "", "after completing all but one and claiming the last")
}

func testBatchCompletePartialLoss(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	enqueue(t, q, items("acme", "a", 3)...)
	ls, err := q.Claim(t.Context(), claimReq("w", 3))
	mustNoErr(t, err, "Claim(Max 3)")
	if len(ls) != 3 {
		t.Fatalf("Claim(Max 3) returned %d leases", len(ls))
	}
	clock.Advance(time.Second)
	renewed, err := q.Heartbeat(t.Context(), ls[1], lease)
	mustNoErr(t, err, "Heartbeat")
	err = q.Complete(t.Context(), ls[0], ls[1], ls[2])
	wantLeaseLost(t, err, "Complete of three leases, one superseded by a heartbeat", ls[1].Key())
	wantItemState(t, q, ls[0].Key(), "gone", "first lease of a partly lost batch")
	wantItemState(t, q, ls[2].Key(), "gone", "third lease of a partly lost batch")
	wantItemState(t, q, ls[1].Key(), string(contract.StateLeased), "the lost lease's item")
	mustNoErr(t, q.Complete(t.Context(), renewed), "Complete with the renewed lease")
	wantEmpty(t, q, "", "after completing everything")
	wantLeaseLost(t, q.Complete(t.Context(), ls[0], ls[2]), "Complete of already completed items", ls[0].Key(), ls[2].Key())
}

func testDefaultQueueName(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	enqueue(t, q, contract.Item{Tenant: "acme", ID: "x", Payload: []byte("one")})
	enqueue(t, q, contract.Item{Tenant: "acme", ID: "x", Queue: contract.DefaultQueue, Payload: []byte("two")})
	enqueue(t, q, contract.Item{Tenant: "acme", ID: "y", Queue: contract.DefaultQueue})
	ls, err := q.Claim(t.Context(), contract.ClaimRequest{Queue: contract.DefaultQueue, Worker: "w", LeaseFor: lease, Max: 10})
	mustNoErr(t, err, "Claim of queue %q", contract.DefaultQueue)
	if len(ls) != 2 {
		t.Fatalf("Item.Queue \"\" and %q must be one queue: claimed %v, want x and y", contract.DefaultQueue, leaseIDs(ls))
	}
	for _, l := range ls {
		if contract.QueueName(l.Item.Queue) != contract.DefaultQueue {
			t.Errorf("lease Item.Queue = %q, want %q", l.Item.Queue, contract.DefaultQueue)
		}
		if l.Item.ID == "x" && string(l.Item.Payload) != "one" {
			t.Errorf("x has payload %q, want the first enqueue's", l.Item.Payload)
		}
	}
}
