package contracttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// queueContextCases pin that an empty queue answers at once, and that a
// cancelled or expired context is honoured and changes nothing.
func queueContextCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"EmptyQueueQuickly", testEmptyQuickly},
		{"CancelledContextChangesNothing", testQueueCancelled},
		{"ExpiredDeadline", testQueueDeadline},
	}
}

func testEmptyQuickly(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	for _, max := range []int{1, 10, contract.MaxClaimBatch} {
		start := time.Now()
		ls, err := q.Claim(t.Context(), claimReq("w", max))
		took := time.Since(start)
		if !errors.Is(err, contract.ErrEmpty) || len(ls) != 0 {
			t.Errorf("Claim(Max %d) of an empty queue = %d leases, %v; want ErrEmpty", max, len(ls), err)
		}
		if took > 2*time.Second {
			t.Errorf("Claim(Max %d) of an empty queue took %v; it must answer ErrEmpty at once, not wait for work", max, took)
		}
	}
	n, err := q.Reap(t.Context(), contract.DefaultQueue)
	if err != nil || n != 0 {
		t.Errorf("Reap of an empty queue = %d, %v; want 0, nil", n, err)
	}
	p, err := q.DeadLetters(t.Context(), contract.DeadLetterQuery{})
	if err != nil || len(p.Items) != 0 || p.Next != "" {
		t.Errorf("DeadLetters of an empty queue = %d items, next %q, %v; want an empty last page", len(p.Items), p.Next, err)
	}
}

func testQueueCancelled(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	enqueue(t, q, item("acme", "x"), item("acme", "dead"))
	var l contract.Lease
	for _, c := range drain(t, q, "", "w", 10) {
		if c.Item.ID == "dead" {
			_, err := q.Fail(t.Context(), c, policy.Permanent(errors.New("poison")))
			mustNoErr(t, err, "Fail")
		} else {
			l = c
		}
	}
	enqueue(t, q, item("acme", "queued"))
	ctx := cancelled(t)
	wantIs(t, q.Enqueue(ctx, item("acme", "new")), context.Canceled, "Enqueue with a cancelled context")
	_, err := q.Claim(ctx, claimReq("w", 10))
	wantIs(t, err, context.Canceled, "Claim with a cancelled context")
	_, err = q.Heartbeat(ctx, l, lease)
	wantIs(t, err, context.Canceled, "Heartbeat with a cancelled context")
	wantIs(t, q.Complete(ctx, l), context.Canceled, "Complete with a cancelled context")
	_, err = q.Fail(ctx, l, errors.New("x"))
	wantIs(t, err, context.Canceled, "Fail with a cancelled context")
	_, err = q.DeadLetters(ctx, contract.DeadLetterQuery{})
	wantIs(t, err, context.Canceled, "DeadLetters with a cancelled context")
	_, err = q.Requeue(ctx, contract.DeadLetterFilter{})
	wantIs(t, err, context.Canceled, "Requeue with a cancelled context")
	_, err = q.Purge(ctx, contract.DeadLetterFilter{})
	wantIs(t, err, context.Canceled, "Purge with a cancelled context")
	clock.Advance(2 * lease)
	_, err = q.Reap(ctx, contract.DefaultQueue)
	wantIs(t, err, context.Canceled, "Reap with a cancelled context")
	clock.Advance(-2 * lease)

	// Nothing changed: x is still leased under its token, "queued" is
	// still due, "dead" is still dead and "new" was never enqueued.
	ls := drain(t, q, "", "w", 10)
	if len(ls) != 1 || ls[0].Item.ID != "queued" {
		t.Errorf("after calls with a cancelled context the queue serves %v, want only acme/queued", leaseIDs(ls))
	}
	if dead := deadLetters(t, q, contract.DeadLetterFilter{}); len(dead) != 1 {
		t.Errorf("after calls with a cancelled context, %d dead letters, want 1", len(dead))
	}
	mustNoErr(t, q.Complete(t.Context(), l), "Complete with the lease held through cancelled calls")
}

func testQueueDeadline(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	enqueue(t, q, item("acme", "x"))
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := q.Claim(ctx, claimReq("w", 1))
	wantIs(t, err, context.DeadlineExceeded, "Claim with an expired deadline")
	wantIs(t, q.Enqueue(ctx, item("acme", "y")), context.DeadlineExceeded, "Enqueue with an expired deadline")
	ls := drain(t, q, "", "w", 10)
	if len(ls) != 1 || ls[0].Item.ID != "x" {
		t.Errorf("after calls with an expired deadline the queue serves %v, want only acme/x", leaseIDs(ls))
	}
}
