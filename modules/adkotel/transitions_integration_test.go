//go:build integration

package adkotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// On every backing, the producer's context and the caller's own keys ride
// the item through a retry, the dead letter and a requeue: each receive
// span links to the one send span.
func TestContextSurvivesTransitionsOnBackings(t *testing.T) {
	for _, b := range e2eBackings() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			t.Cleanup(func() { _ = tp.Shutdown(ctx) })
			// Jitter 0: a retry is due at once, so the wall clock the
			// backings read needs no waiting.
			pol := policy.Policy{MaxAttempts: 2, Jitter: policy.Fixed(0)}
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { _ = mp.Shutdown(ctx) })
			backing := b.fresh(t, pol)(t, tp)
			q := adkotel.WrapQueue(backing, adkotel.WithTracerProvider(tp),
				adkotel.WithMeterProvider(mp), adkotel.WithPropagators(propagation.TraceContext{}))

			if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x", Queue: "t", Metadata: map[string]string{"own": "kept"}}); err != nil {
				t.Fatal(err)
			}
			var send sdktrace.ReadOnlySpan
			for _, s := range spans.Ended() {
				if s.Name() == "send t" {
					send = s
				}
			}
			if send == nil {
				t.Fatal("no send span")
			}
			claim := func(step string) contract.Lease {
				t.Helper()
				var leases []contract.Lease
				var err error
				for deadline := time.Now().Add(5 * time.Second); ; {
					leases, err = q.Claim(ctx, contract.ClaimRequest{Queue: "t", Worker: "w", LeaseFor: time.Minute, Max: 1})
					if !errors.Is(err, contract.ErrEmpty) || time.Now().After(deadline) {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				if err != nil || len(leases) != 1 {
					t.Fatalf("%s: claim: %v %v", step, leases, err)
				}
				ended := spans.Ended()
				recv := ended[len(ended)-1]
				if recv.Name() != "receive t" || len(recv.Links()) != 1 || recv.Links()[0].SpanContext.SpanID() != send.SpanContext().SpanID() {
					t.Errorf("%s: receive span %q links %v, want the send span", step, recv.Name(), recv.Links())
				}
				if got := leases[0].Item.Metadata["own"]; got != "kept" {
					t.Errorf("%s: own metadata %q", step, got)
				}
				return leases[0]
			}

			l := claim("first claim")
			if d, err := q.Fail(ctx, l, errors.New("transient")); err != nil || !d.Retry {
				t.Fatalf("fail: %+v %v", d, err)
			}
			l = claim("after retry")
			if d, err := q.Fail(ctx, l, errors.New("again")); err != nil || d.Retry {
				t.Fatalf("fail to dead: %+v %v", d, err)
			}
			page, err := q.DeadLetters(ctx, contract.DeadLetterQuery{DeadLetterFilter: contract.DeadLetterFilter{Queue: "t"}})
			if err != nil || len(page.Items) != 1 || page.Items[0].Metadata["traceparent"] == "" || page.Items[0].Metadata["own"] != "kept" {
				t.Fatalf("dead letter: %+v %v", page, err)
			}
			if n, err := q.Requeue(ctx, contract.DeadLetterFilter{Queue: "t"}); err != nil || n != 1 {
				t.Fatalf("requeue: %d %v", n, err)
			}
			l = claim("after requeue")

			// The gauges and the backing's counters read through the
			// Inspector and Stats of this backing.
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(ctx, &rm); err != nil {
				t.Fatal(err)
			}
			sys := semconv.MessagingSystemKey.String(b.system)
			if got := sumInt(t, rm, adkotel.MetricQueueLeased, sys, semconv.MessagingDestinationName("t"), adkotel.TenantKey.String("acme")); got != 1 {
				t.Errorf("leased gauge = %d, want 1", got)
			}
			if src, ok := backing.(contract.StatsSource); ok {
				want := src.Stats()
				t.Logf("%s stats: %+v", b.name, want)
				if got := sumInt(t, rm, adkotel.MetricPoolAcquires, sys); got > want.PoolAcquires || want.PoolAcquires > 0 && got == 0 {
					t.Errorf("pool acquires metric %d, backing says %d", got, want.PoolAcquires)
				}
			}
			if err := q.Complete(ctx, l); err != nil {
				t.Fatal(err)
			}
		})
	}
}
