package adkotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// TestLifecycleSpans: each lifecycle control through the wrapper is a
// CLIENT span "<op> <queue>" with what it acted on and what it found;
// the reads leave no span; a refused control is an error span.
func TestLifecycleSpans(t *testing.T) {
	r := newRig(t, defaultPolicy)
	ctx := context.Background()
	lc, ok := contract.AsLifecycleController(r.queue)
	if !ok {
		t.Fatal("the wrapper over memstore has no LifecycleController")
	}
	var items []contract.Item
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		items = append(items, contract.Item{Queue: "jobs", Tenant: "acme", ID: id})
	}
	if err := r.queue.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(lc.Pause(ctx, "jobs", "acme"))
	must(lc.Resume(ctx, "jobs", "acme"))
	if _, err := lc.Paused(ctx, "jobs"); err != nil {
		t.Fatal(err)
	}
	ls, err := r.queue.Claim(ctx, contract.ClaimRequest{Queue: "jobs", Worker: "w", LeaseFor: time.Minute, Max: 2})
	if err != nil || len(ls) != 2 {
		t.Fatalf("claim: %v %v", ls, err)
	}
	if _, err := lc.Snooze(ctx, ls[0], 30*time.Second); err != nil {
		t.Fatal(err)
	}
	must(lc.Wait(ctx, ls[1], contract.WaitRequest{Signal: "approved", Timeout: time.Hour}))
	must(lc.Signal(ctx, ls[1].Key(), "approved", []byte(`{"ok":true}`)))
	found, err := lc.Cancel(ctx, contract.ItemKey{Queue: "jobs", Tenant: "acme", ID: "c"}, "not needed")
	if err != nil || found != contract.StateQueued {
		t.Fatalf("Cancel = %v, %v", found, err)
	}
	n, err := lc.CancelMatching(ctx, contract.CancelFilter{Queue: "jobs", Tenant: "acme", IDPrefix: "d"}, "bulk")
	if err != nil || n != 1 {
		t.Fatalf("CancelMatching = %d, %v", n, err)
	}
	if _, err := lc.CountMatching(ctx, contract.CancelFilter{Queue: "jobs"}); err != nil {
		t.Fatal(err)
	}
	purged, err := lc.PurgeCancelled(ctx, "jobs", r.clock.Now().Add(time.Hour))
	if err != nil || purged != 2 {
		t.Fatalf("PurgeCancelled = %d, %v", purged, err)
	}
	sys := semconv.MessagingSystemKey.String(adkotel.SystemMemory)
	for _, c := range []struct {
		name string
		want []attribute.KeyValue
	}{
		{"pause jobs", []attribute.KeyValue{adkotel.TenantKey.String("acme")}},
		{"resume jobs", []attribute.KeyValue{adkotel.TenantKey.String("acme")}},
		{"snooze jobs", []attribute.KeyValue{semconv.MessagingMessageID(ls[0].Item.ID), adkotel.DelayKey.Float64(30), adkotel.DecisionKey.String("snooze")}},
		{"wait jobs", []attribute.KeyValue{semconv.MessagingMessageID(ls[1].Item.ID), adkotel.SignalKey.String("approved")}},
		{"signal jobs", []attribute.KeyValue{semconv.MessagingMessageID(ls[1].Item.ID), adkotel.SignalKey.String("approved")}},
		{"cancel jobs", []attribute.KeyValue{semconv.MessagingMessageID("c"), adkotel.StateFoundKey.String("queued")}},
		{"cancel_matching jobs", []attribute.KeyValue{semconv.MessagingBatchMessageCount(1)}},
		{"purge_cancelled jobs", []attribute.KeyValue{semconv.MessagingBatchMessageCount(2)}},
	} {
		s := r.one(t, c.name)
		wantKind(t, s, trace.SpanKindClient)
		wantAttrs(t, s, sys, semconv.MessagingDestinationName("jobs"))
		wantAttrs(t, s, c.want...)
		if s.Status().Code == codes.Error {
			t.Errorf("span %q is an error: %v", c.name, s.Status())
		}
	}
	for _, read := range []string{"paused jobs", "count_matching jobs"} {
		if got := r.ended(read); len(got) != 0 {
			t.Errorf("a read left %d %q spans", len(got), read)
		}
	}
	// A signal no item waits for is refused: an error span.
	err = lc.Signal(ctx, contract.ItemKey{Queue: "jobs", Tenant: "acme", ID: "e"}, "approved", nil)
	if !errors.Is(err, contract.ErrNotWaiting) {
		t.Fatalf("Signal of an item that does not wait = %v, want ErrNotWaiting", err)
	}
	if got := r.ended("signal jobs"); len(got) != 2 || got[1].Status().Code != codes.Error {
		t.Errorf("the refused signal's span: %d signal spans, last status %v", len(got), got[len(got)-1].Status())
	}
}
