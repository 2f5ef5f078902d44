package claimcheck_test

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/claimcheck"
	"github.com/adkit/adk/modules/contract/memstore"
)

// historyQueue is a memstore that keeps history as far as the wrapper can
// tell: EnqueueReport reports a duplicate for an ID the store holds (or
// that came earlier in the batch), and History, Find and Finished return
// the stored items of the keys it enqueued. openErr, when set, is
// returned after the enqueue happened, an error that leaves the outcome
// open.
type historyQueue struct {
	*memstore.Store
	keys    []contract.ItemKey
	openErr error
}

func (h *historyQueue) Capabilities() contract.Capabilities {
	c := h.Store.Capabilities()
	c.History = true
	return c
}

func (h *historyQueue) EnqueueReport(ctx context.Context, items ...contract.Item) ([]contract.EnqueueResult, error) {
	out := make([]contract.EnqueueResult, len(items))
	seen := map[contract.ItemKey]bool{}
	for i, it := range items {
		k := it.Key()
		k.Queue = contract.QueueName(k.Queue)
		if seen[k] {
			out[i] = contract.EnqueueResult{Duplicate: true, State: contract.StateQueued}
			continue
		}
		seen[k] = true
		if info, err := h.Item(ctx, k); err == nil {
			out[i] = contract.EnqueueResult{Duplicate: true, State: info.Item.State}
			continue
		}
		if err := h.Enqueue(ctx, it); err != nil {
			return nil, err
		}
		h.keys = append(h.keys, k)
	}
	if h.openErr != nil {
		return nil, h.openErr
	}
	return out, nil
}

func (h *historyQueue) History(ctx context.Context, key contract.ItemKey) (contract.History, error) {
	info, err := h.Item(ctx, key)
	return contract.History{Item: info.Item}, err
}

func (h *historyQueue) items(ctx context.Context) []contract.Item {
	var out []contract.Item
	for _, k := range h.keys {
		if info, err := h.Item(ctx, k); err == nil {
			out = append(out, info.Item)
		}
	}
	return out
}

func (h *historyQueue) Find(ctx context.Context, queue, id string) ([]contract.Item, error) {
	var out []contract.Item
	for _, it := range h.items(ctx) {
		if it.ID == id {
			out = append(out, it)
		}
	}
	return out, nil
}

func (h *historyQueue) Finished(ctx context.Context, q contract.FinishedQuery) (contract.FinishedPage, error) {
	return contract.FinishedPage{Items: h.items(ctx)}, nil
}

func newHistoryFixture(t *testing.T) (*fixture, *historyQueue, contract.HistoryKeeper) {
	t.Helper()
	f := newFixture(t)
	hq := &historyQueue{Store: f.store}
	f.q = claimcheck.Wrap(hq, f.cc, threshold)
	hk, ok := contract.AsHistoryKeeper(f.q)
	if !ok {
		t.Fatal("the wrapper of a queue that keeps history is no HistoryKeeper")
	}
	return f, hq, hk
}

// EnqueueReport offloads as Enqueue does and forwards the report; the
// blobs of the duplicates (of a live item, or of an earlier entry of the
// batch) are deleted, those of the items enqueued kept and restored on
// claim.
func TestWrapEnqueueReportOffloadsAndDropsDuplicateBlobs(t *testing.T) {
	f, _, hk := newHistoryFixture(t)
	first, two := big("first "), big("two ")
	res, err := hk.EnqueueReport(f.ctx, contract.Item{Tenant: "a", ID: "1", Payload: first})
	if err != nil || len(res) != 1 || res[0].Duplicate {
		t.Fatalf("EnqueueReport = %+v, %v; want one new item", res, err)
	}
	if f.cc.Len() != 1 {
		t.Fatalf("%d blobs, want 1", f.cc.Len())
	}
	if st := f.stored(t, "a", "1"); len(st.Payload) != 0 || st.Metadata[claimcheck.MetadataKey] == "" {
		t.Fatalf("stored item: %d payload bytes, metadata %v; want the reference only", len(st.Payload), st.Metadata)
	}
	res, err = hk.EnqueueReport(f.ctx,
		contract.Item{Tenant: "a", ID: "1", Payload: big("again ")}, // live already
		contract.Item{Tenant: "a", ID: "2", Payload: two},
		contract.Item{Tenant: "a", ID: "2", Payload: big("later ")}, // the batch's first wins
		contract.Item{Tenant: "a", ID: "3", Payload: []byte("small")},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, false, true, false}
	for i, r := range res {
		if r.Duplicate != want[i] {
			t.Fatalf("report %d: %+v; want duplicate %v (all: %+v)", i, r, want[i], res)
		}
	}
	if f.cc.Len() != 2 {
		t.Fatalf("%d blobs after the batch, want 2 (items 1 and 2; the duplicates' deleted)", f.cc.Len())
	}
	leases := f.claim(t, 10)
	got := map[string][]byte{}
	for _, l := range leases {
		got[l.Item.ID] = l.Item.Payload
	}
	if !bytes.Equal(got["1"], first) || !bytes.Equal(got["2"], two) || string(got["3"]) != "small" {
		t.Fatalf("claimed payloads: 1 %d bytes, 2 %d bytes, 3 %q; want each item's own", len(got["1"]), len(got["2"]), got["3"])
	}
}

// A batch EnqueueReport refuses writes no blob; a queue that keeps no
// history gets errors.ErrUnsupported and no blob either.
func TestWrapEnqueueReportRefusals(t *testing.T) {
	f, _, hk := newHistoryFixture(t)
	_, err := hk.EnqueueReport(f.ctx,
		contract.Item{Tenant: "a", ID: "1", Payload: big("x")},
		contract.Item{Tenant: "a", ID: "2", Metadata: map[string]string{claimcheck.MetadataKey: "forged"}},
	)
	if !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("EnqueueReport with a reserved key: %v; want a validation error", err)
	}
	_, err = hk.EnqueueReport(f.ctx, contract.Item{Tenant: "", ID: "1", Payload: big("x")})
	if !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("EnqueueReport without a tenant: %v; want a validation error", err)
	}
	plain := claimcheck.Wrap(plainQueue{f.store}, f.cc, threshold).(*claimcheck.Queue)
	if _, err := plain.EnqueueReport(f.ctx, contract.Item{Tenant: "a", ID: "1", Payload: big("x")}); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("EnqueueReport over a queue without history: %v; want ErrUnsupported", err)
	}
	if f.cc.Len() != 0 {
		t.Fatalf("refused batches left %d blobs", f.cc.Len())
	}
}

// When the enqueue's outcome is open, each blob is kept exactly when its
// item refers to it, as for Enqueue.
func TestWrapEnqueueReportOpenOutcomeKeepsReferencedBlobs(t *testing.T) {
	f, hq, hk := newHistoryFixture(t)
	if err := f.q.Enqueue(f.ctx, contract.Item{Tenant: "a", ID: "live", Payload: big("live ")}); err != nil {
		t.Fatal(err)
	}
	hq.openErr = errors.New("connection reset after the write")
	_, err := hk.EnqueueReport(f.ctx,
		contract.Item{Tenant: "a", ID: "live", Payload: big("dup ")},
		contract.Item{Tenant: "a", ID: "new", Payload: big("new ")},
	)
	if !errors.Is(err, hq.openErr) {
		t.Fatalf("EnqueueReport = %v; want the queue's error", err)
	}
	if f.cc.Len() != 2 {
		t.Fatalf("%d blobs, want 2: the live item's and the new one's", f.cc.Len())
	}
}

// History, Find and Finished show what DeadLetters and Item show: the
// reference and the payload's size, never the bytes.
func TestWrapHistoryReadsShowReferences(t *testing.T) {
	f, _, hk := newHistoryFixture(t)
	if _, err := hk.EnqueueReport(f.ctx,
		contract.Item{Tenant: "a", ID: "1", Payload: big("a ")},
		contract.Item{Tenant: "b", ID: "1", Payload: big("b ")},
	); err != nil {
		t.Fatal(err)
	}
	check := func(what string, it contract.Item) {
		t.Helper()
		if len(it.Payload) != 0 || it.Metadata[claimcheck.MetadataKey] == "" || it.Metadata[claimcheck.MetadataSizeKey] == "" {
			t.Errorf("%s: item %s/%s has %d payload bytes, metadata %v; want the reference and size only", what, it.Tenant, it.ID, len(it.Payload), it.Metadata)
		}
	}
	h, err := hk.History(f.ctx, contract.ItemKey{Tenant: "a", Queue: contract.DefaultQueue, ID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	check("History", h.Item)
	found, err := hk.Find(f.ctx, contract.DefaultQueue, "1")
	if err != nil || len(found) != 2 {
		t.Fatalf("Find = %d items, %v; want 2", len(found), err)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Tenant < found[j].Tenant })
	for _, it := range found {
		check("Find", it)
	}
	page, err := hk.Finished(f.ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 10}})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("Finished = %d items, %v; want 2", len(page.Items), err)
	}
	for _, it := range page.Items {
		check("Finished", it)
	}
}

// Over memstore's own HistoryKeeper: an item completed within its
// uniqueness window is a duplicate whose new blob is deleted; the kept
// record shows its reference, its blob gone with the Complete; once the
// window closes the ID is enqueued afresh, with a blob of its own.
func TestWrapEnqueueReportOverMemstore(t *testing.T) {
	f := newFixture(t)
	hk, ok := contract.AsHistoryKeeper(f.q)
	if !ok {
		t.Fatal("the wrapped memstore is no HistoryKeeper")
	}
	item := contract.Item{Tenant: "a", ID: "u", Payload: big("first "), UniqueFor: time.Hour}
	if res, err := hk.EnqueueReport(f.ctx, item); err != nil || res[0].Duplicate {
		t.Fatalf("EnqueueReport = %+v, %v", res, err)
	}
	if err := f.q.Complete(f.ctx, f.claim(t, 1)...); err != nil {
		t.Fatal(err)
	}
	if f.cc.Len() != 0 {
		t.Fatalf("%d blobs after Complete, want 0", f.cc.Len())
	}
	item.Payload = big("second ")
	res, err := hk.EnqueueReport(f.ctx, item)
	if err != nil || !res[0].Duplicate || res[0].State != contract.StateCompleted || res[0].UniqueUntil.IsZero() {
		t.Fatalf("EnqueueReport within the window = %+v, %v; want a completed duplicate", res, err)
	}
	if f.cc.Len() != 0 {
		t.Fatalf("the duplicate left %d blobs", f.cc.Len())
	}
	h, err := hk.History(f.ctx, contract.ItemKey{Tenant: "a", Queue: contract.DefaultQueue, ID: "u"})
	if err != nil || h.Item.State != contract.StateCompleted || len(h.Item.Payload) != 0 || h.Item.Metadata[claimcheck.MetadataKey] == "" {
		t.Fatalf("History = %+v, %v; want the completed record with its reference", h.Item, err)
	}
	f.clock.Advance(2 * time.Hour)
	if res, err := hk.EnqueueReport(f.ctx, item); err != nil || res[0].Duplicate {
		t.Fatalf("EnqueueReport after the window = %+v, %v; want a new item", res, err)
	}
	if f.cc.Len() != 1 {
		t.Fatalf("%d blobs, want the new item's", f.cc.Len())
	}
	if l := f.claim(t, 1); !bytes.Equal(l[0].Item.Payload, big("second ")) {
		t.Fatal("the new item's payload was not restored")
	}
}
