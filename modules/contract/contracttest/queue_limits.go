package contracttest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// queueLimitsCases pin the payload cap (refused before sending, never
// retryable, nothing enqueued) and the name length cap.
func queueLimitsCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"TooLargePayloadRefused", testTooLargePayload},
		{"ExactlyMaxPayloadAccepted", testExactlyMaxPayload},
		{"LongestNamesAccepted", testQueueLongestNames},
	}
}

func testTooLargePayload(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	big := contract.Item{Tenant: "acme", ID: "big", Payload: bytes.Repeat([]byte{'p'}, contract.DefaultMaxValueBytes+1)}
	wantTooLarge(t, q.Enqueue(t.Context(), big), "Enqueue with a payload of DefaultMaxValueBytes+1")
	wantEmpty(t, q, "", "after a refused oversized enqueue")
	wantTooLarge(t, q.Enqueue(t.Context(), item("acme", "small-1"), big, item("acme", "small-2")),
		"Enqueue of a batch holding one oversized payload")
	wantEmpty(t, q, "", "after a refused batch (the batch is checked before anything is sent)")
	wantItemState(t, q, big.Key(), "gone", "the oversized item")
}

func testExactlyMaxPayload(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	payload := bytes.Repeat([]byte{0, 'x', 0xff}, contract.DefaultMaxValueBytes/3+1)[:contract.DefaultMaxValueBytes]
	in := contract.Item{Tenant: "acme", ID: "max", Payload: payload}
	mustNoErr(t, q.Enqueue(t.Context(), in), "Enqueue with a payload of exactly DefaultMaxValueBytes")
	sameLeaseItem(t, "the item with the largest payload", claimOne(t, q, "w"), in)
}

func testQueueLongestNames(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	in := contract.Item{
		Tenant: strings.Repeat("t", contract.MaxNameBytes),
		ID:     strings.Repeat("é", contract.MaxNameBytes/2),
		Queue:  strings.Repeat("q", contract.MaxNameBytes),
	}
	enqueue(t, q, in)
	ls, err := q.Claim(t.Context(), contract.ClaimRequest{Queue: in.Queue, Worker: strings.Repeat("w", contract.MaxNameBytes), LeaseFor: lease, Max: 1})
	mustNoErr(t, err, "Claim with names of MaxNameBytes")
	if len(ls) != 1 {
		t.Fatalf("Claim returned %d leases", len(ls))
	}
	sameLeaseItem(t, "item with names of MaxNameBytes", ls[0], in)
	mustNoErr(t, q.Complete(t.Context(), ls[0]), "Complete with names of MaxNameBytes")
}
