package contracttest

import (
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// queueInputCases pin that bad input to the queue is a
// *contract.ValidationError (matching contract.ErrInvalid) and changes
// nothing.
func queueInputCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"EnqueueBadInputRefused", testEnqueueBadInput},
		{"ClaimBadRequestRefused", testClaimBadRequest},
		{"SettleBadInputRefused", testSettleBadInput},
		{"FilterBadInputRefused", testFilterBadInput},
	}
}

func testEnqueueBadInput(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	ctx := t.Context()
	for what, bad := range badNames {
		wantInvalid(t, q.Enqueue(ctx, contract.Item{Tenant: bad, ID: "x"}), "Enqueue with %s tenant", what)
		wantInvalid(t, q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: bad}), "Enqueue with %s id", what)
		if bad != "" {
			wantInvalid(t, q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x", Queue: bad}), "Enqueue with %s queue", what)
		}
		wantInvalid(t, q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x", Metadata: map[string]string{bad: "v"}}), "Enqueue with %s metadata key", what)
	}
	for _, bad := range []string{"a\x00b", "a\xffb"} {
		wantInvalid(t, q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x", Metadata: map[string]string{"k": bad}}), "Enqueue with metadata value %q", bad)
	}
	wantInvalid(t, q.Enqueue(ctx), "Enqueue of no items")
	wantInvalid(t, q.Enqueue(ctx, item("acme", "good-1"), contract.Item{Tenant: "acme", ID: ""}, item("acme", "good-2")),
		"Enqueue of a batch holding one item without an id")
	wantEmpty(t, q, "", "after refused enqueues (a refused batch enqueues none of its items)")
}

func testClaimBadRequest(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	enqueue(t, q, item("acme", "x"))
	for what, req := range map[string]contract.ClaimRequest{
		"Max 0":               {Worker: "w", LeaseFor: lease, Max: 0},
		"Max -1":              {Worker: "w", LeaseFor: lease, Max: -1},
		"Max MaxClaimBatch+1": {Worker: "w", LeaseFor: lease, Max: contract.MaxClaimBatch + 1},
		"Max 1_000_000":       {Worker: "w", LeaseFor: lease, Max: 1_000_000},
		"LeaseFor 0":          {Worker: "w", LeaseFor: 0, Max: 1},
		"LeaseFor -1s":        {Worker: "w", LeaseFor: -time.Second, Max: 1},
		"queue with NUL":      {Queue: "q\x00", Worker: "w", LeaseFor: lease, Max: 1},
		"worker with NUL":     {Worker: "w\x00", LeaseFor: lease, Max: 1},
	} {
		ls, err := q.Claim(t.Context(), req)
		wantInvalid(t, err, "Claim with %s", what)
		if len(ls) != 0 {
			t.Errorf("Claim with %s returned %d leases along with its error", what, len(ls))
		}
	}
	l := claimOne(t, q, "w")
	if l.Item.ID != "x" || l.Item.Attempts != 0 {
		t.Errorf("after refused claims, claimed %s with %d attempts, want x with 0", l.Item.ID, l.Item.Attempts)
	}
}

func testSettleBadInput(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	enqueue(t, q, item("acme", "x"))
	l := claimOne(t, q, "w")
	ctx := t.Context()
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := q.Heartbeat(ctx, l, d)
		wantInvalid(t, err, "Heartbeat extending by %v", d)
	}
	for what, bad := range badNames {
		broken := l
		broken.Item.Tenant = bad
		wantInvalid(t, q.Complete(ctx, broken), "Complete of a lease with %s tenant", what)
		_, err := q.Fail(ctx, broken, errors.New("x"))
		wantInvalid(t, err, "Fail of a lease with %s tenant", what)
		_, err = q.Heartbeat(ctx, broken, lease)
		wantInvalid(t, err, "Heartbeat of a lease with %s tenant", what)
		broken = l
		broken.Item.ID = bad
		wantInvalid(t, q.Complete(ctx, l, broken), "Complete of a batch holding a lease with %s id", what)
	}
	if info, state, ok := itemState(t, q, l.Key()); ok && (state != string(contract.StateLeased) || info.Lease == nil || info.Lease.Token != l.Token) {
		t.Errorf("after refused settles the item is %s with lease %+v, want still leased with token %d", state, info.Lease, l.Token)
	}
	mustNoErr(t, q.Complete(ctx, l), "Complete after refused settles (a refused batch completes none of its leases)")
}

func testFilterBadInput(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	enqueue(t, q, item("acme", "x"))
	_, err := q.Fail(t.Context(), claimOne(t, q, "w"), policy.Permanent(errors.New("dead")))
	mustNoErr(t, err, "Fail")
	ctx := t.Context()
	for what, fl := range map[string]contract.DeadLetterFilter{
		"tenant with NUL":     {Tenant: "a\x00"},
		"id of invalid UTF-8": {ID: "\xff"},
		"queue with NUL":      {Queue: "q\x00"},
		"error of bad UTF-8":  {ErrorContains: "\xff"},
	} {
		_, err := q.DeadLetters(ctx, contract.DeadLetterQuery{DeadLetterFilter: fl})
		wantInvalid(t, err, "DeadLetters with %s", what)
		_, err = q.Requeue(ctx, fl)
		wantInvalid(t, err, "Requeue with %s", what)
		_, err = q.Purge(ctx, fl)
		wantInvalid(t, err, "Purge with %s", what)
	}
	_, err = q.DeadLetters(ctx, contract.DeadLetterQuery{Page: contract.PageRequest{Limit: -1}})
	wantInvalid(t, err, "DeadLetters with Limit -1")
	_, err = q.Reap(ctx, "q\x00")
	wantInvalid(t, err, "Reap of a queue name with NUL")
	if dead := deadLetters(t, q, contract.DeadLetterFilter{}); len(dead) != 1 {
		t.Errorf("after refused bulk actions, %d dead letters, want 1", len(dead))
	}
}
