package adkotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// historyQ is a memstore that keeps history as far as the wrapper can
// tell: EnqueueReport reports a duplicate for an ID the store holds or
// that came earlier in the batch, Prune answers what prune says, and
// History returns the stored item.
type historyQ struct {
	*memstore.Store
	prune   func() (int, error)
	history int // History calls
}

func (h *historyQ) Capabilities() contract.Capabilities {
	c := h.Store.Capabilities()
	c.History = true
	return c
}

func (h *historyQ) EnqueueReport(ctx context.Context, items ...contract.Item) ([]contract.EnqueueResult, error) {
	out := make([]contract.EnqueueResult, len(items))
	seen := map[contract.ItemKey]bool{}
	for i, it := range items {
		k := it.Key()
		k.Queue = contract.QueueName(k.Queue)
		if info, err := h.Item(ctx, k); seen[k] || err == nil {
			out[i] = contract.EnqueueResult{Duplicate: true, State: info.Item.State}
			continue
		}
		seen[k] = true
		if err := h.Enqueue(ctx, it); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (h *historyQ) Prune(context.Context, string) (int, error) { return h.prune() }

func (h *historyQ) History(ctx context.Context, key contract.ItemKey) (contract.History, error) {
	h.history++
	info, err := h.Item(ctx, key)
	return contract.History{Item: info.Item}, err
}

func newHistoryRig(t *testing.T) (*rig, *historyQ) {
	t.Helper()
	r := newRig(t, policy.Policy{})
	hq := &historyQ{Store: r.store, prune: func() (int, error) { return 0, nil }}
	r.queue = adkotel.WrapQueue(hq, r.opts...)
	return r, hq
}

// EnqueueReport is a send span like Enqueue's, with each stored item
// carrying its context; the duplicates are counted on the span and in
// adk.enqueue.duplicates, by queue.
func TestEnqueueReportSpanCountsDuplicates(t *testing.T) {
	r, _ := newHistoryRig(t)
	hk, ok := contract.AsHistoryKeeper(r.queue)
	if !ok {
		t.Fatal("the wrapper of a queue that keeps history is no HistoryKeeper")
	}
	ctx := context.Background()
	if err := r.queue.Enqueue(ctx, contract.Item{Tenant: "a", ID: "live", Queue: "jobs"}); err != nil {
		t.Fatal(err)
	}
	res, err := hk.EnqueueReport(ctx,
		contract.Item{Tenant: "a", ID: "live", Queue: "jobs"},
		contract.Item{Tenant: "a", ID: "new", Queue: "jobs"},
		contract.Item{Tenant: "a", ID: "new", Queue: "jobs"},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || !res[0].Duplicate || res[1].Duplicate || !res[2].Duplicate {
		t.Fatalf("report %+v; want duplicate, new, duplicate", res)
	}
	spans := r.ended("send jobs")
	if len(spans) != 2 {
		t.Fatalf("%d send spans, want one for the Enqueue and one for the EnqueueReport", len(spans))
	}
	s := spans[1]
	wantKind(t, s, trace.SpanKindProducer)
	wantAttrs(t, s,
		semconv.MessagingOperationName("send"),
		semconv.MessagingOperationTypeSend,
		semconv.MessagingBatchMessageCount(3),
		adkotel.TenantKey.String("a"),
		adkotel.DuplicatesKey.Int(2),
	)
	if _, ok := attrOf(spans[0], adkotel.DuplicatesKey); ok {
		t.Error("Enqueue's span counts duplicates it cannot know of")
	}
	info, err := r.store.Item(ctx, contract.ItemKey{Tenant: "a", Queue: "jobs", ID: "new"})
	if err != nil {
		t.Fatal(err)
	}
	want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
	if got := info.Item.Metadata["traceparent"]; got != want {
		t.Errorf("stored traceparent = %q, want the EnqueueReport span's %q", got, want)
	}
	rm := r.collect(t)
	if got := sumInt(t, rm, adkotel.MetricDuplicates, semconv.MessagingDestinationName("jobs")); got != 2 {
		t.Errorf("%s = %d, want 2", adkotel.MetricDuplicates, got)
	}
	if got := sumInt(t, rm, "messaging.client.sent.messages", semconv.MessagingDestinationName("jobs")); got != 4 {
		t.Errorf("sent = %d, want 4 (every item sent, duplicates included)", got)
	}
}

// Over a queue without history EnqueueReport fails with ErrUnsupported,
// recorded on its span.
func TestEnqueueReportWithoutHistory(t *testing.T) {
	r := newRig(t, policy.Policy{})
	w := adkotel.WrapQueue(plainQ{r.store}, r.opts...).(contract.HistoryKeeper)
	if _, err := w.EnqueueReport(context.Background(), contract.Item{Tenant: "a", ID: "1"}); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("EnqueueReport = %v, want ErrUnsupported", err)
	}
	if s := r.one(t, "send default"); s.Status().Code != codes.Error {
		t.Errorf("the failed send span has status %v", s.Status())
	}
}

// Prune is upkeep: untraced and uneventful it leaves no span; one that
// removes something or fails does, and what it removed is counted in
// adk.pruned. History is forwarded untraced.
func TestPruneUpkeepSpanAndHistoryForwarded(t *testing.T) {
	r, hq := newHistoryRig(t)
	hk, _ := contract.AsHistoryKeeper(r.queue)
	ctx := context.Background()
	if n, err := hk.Prune(ctx, "jobs"); n != 0 || err != nil {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	if got := len(r.ended("prune jobs")); got != 0 {
		t.Errorf("an untraced prune that removed nothing made %d spans", got)
	}
	tctx, parent := r.tp.Tracer("test").Start(ctx, "job")
	if _, err := hk.Prune(tctx, "jobs"); err != nil {
		t.Fatal(err)
	}
	parent.End()
	if s := r.one(t, "prune jobs"); s.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Error("a prune inside a trace is not under the caller's span")
	}
	hq.prune = func() (int, error) { return 7, nil }
	if n, err := hk.Prune(ctx, "jobs"); n != 7 || err != nil {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	spans := r.ended("prune jobs")
	if len(spans) != 2 {
		t.Fatalf("%d prune spans, want 2", len(spans))
	}
	wantKind(t, spans[1], trace.SpanKindClient)
	wantAttrs(t, spans[1], semconv.MessagingBatchMessageCount(7), semconv.MessagingOperationName("prune"), semconv.MessagingDestinationName("jobs"))
	boom := errors.New("prune failed")
	hq.prune = func() (int, error) { return 0, boom }
	if _, err := hk.Prune(ctx, "jobs"); !errors.Is(err, boom) {
		t.Fatalf("Prune = %v, want the queue's error", err)
	}
	if spans := r.ended("prune jobs"); len(spans) != 3 || spans[2].Status().Code != codes.Error {
		t.Error("a failed prune left no error span")
	}
	if got := sumInt(t, r.collect(t), adkotel.MetricPruned, semconv.MessagingDestinationName("jobs")); got != 7 {
		t.Errorf("%s = %d, want 7", adkotel.MetricPruned, got)
	}

	if err := r.queue.Enqueue(ctx, contract.Item{Tenant: "a", ID: "1"}); err != nil {
		t.Fatal(err)
	}
	before := len(r.spans.Ended())
	h, err := hk.History(ctx, contract.ItemKey{Tenant: "a", Queue: contract.DefaultQueue, ID: "1"})
	if err != nil || h.Item.ID != "1" || hq.history != 1 {
		t.Fatalf("History = %+v, %v (%d calls); want the item from the wrapped queue", h.Item, err, hq.history)
	}
	if got := len(r.spans.Ended()); got != before {
		t.Errorf("History made %d spans, want none (forwarded as the Inspector is)", got-before)
	}
}

// Over memstore's own HistoryKeeper: an ID completed within its
// uniqueness window is counted as a duplicate.
func TestEnqueueReportOverMemstore(t *testing.T) {
	r := newRig(t, policy.Policy{})
	hk, ok := contract.AsHistoryKeeper(r.queue)
	if !ok {
		t.Fatal("the wrapped memstore is no HistoryKeeper")
	}
	ctx := context.Background()
	it := contract.Item{Tenant: "a", ID: "u", UniqueFor: time.Hour}
	if _, err := hk.EnqueueReport(ctx, it); err != nil {
		t.Fatal(err)
	}
	if err := r.queue.Complete(ctx, claimOne(t, r.queue, "")); err != nil {
		t.Fatal(err)
	}
	res, err := hk.EnqueueReport(ctx, it)
	if err != nil || !res[0].Duplicate || res[0].State != contract.StateCompleted {
		t.Fatalf("EnqueueReport = %+v, %v; want a completed duplicate", res, err)
	}
	wantAttrs(t, r.ended("send default")[1], adkotel.DuplicatesKey.Int(1))
	if got := sumInt(t, r.collect(t), adkotel.MetricDuplicates, semconv.MessagingDestinationName("default")); got != 1 {
		t.Errorf("%s = %d, want 1", adkotel.MetricDuplicates, got)
	}
}
