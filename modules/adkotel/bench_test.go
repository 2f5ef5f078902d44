package adkotel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// The cost the decorator adds to one enqueue → claim → complete cycle on
// the in-memory backing (the cheapest backing, so the overhead shows).
func BenchmarkCycle(b *testing.B) {
	type setup struct {
		name string
		wrap func(contract.WorkQueue) contract.WorkQueue
	}
	prop := adkotel.WithPropagators(propagation.TraceContext{})
	setups := []setup{
		{"bare", func(q contract.WorkQueue) contract.WorkQueue { return q }},
		{"noop_providers", func(q contract.WorkQueue) contract.WorkQueue {
			return adkotel.WrapQueue(q, adkotel.WithTracerProvider(tracenoop.NewTracerProvider()),
				adkotel.WithMeterProvider(noop.NewMeterProvider()), prop, adkotel.WithSystem("memory"))
		}},
		{"sdk_sampled", func(q contract.WorkQueue) contract.WorkQueue {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discard{}))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			return adkotel.WrapQueue(q, adkotel.WithTracerProvider(tp), adkotel.WithMeterProvider(mp), prop, adkotel.WithSystem("memory"))
		}},
	}
	for _, s := range setups {
		b.Run(s.name, func(b *testing.B) {
			q := s.wrap(memstore.New(nil, memstore.Settings{}))
			ctx := context.Background()
			req := contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1}
			i := 0
			for b.Loop() {
				i++
				if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: fmt.Sprint(i)}); err != nil {
					b.Fatal(err)
				}
				leases, err := q.Claim(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if err := q.Complete(ctx, leases...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// discard is a span processor that drops every span once ended, so the
// benchmark measures span creation rather than an exporter.
type discard struct{}

func (discard) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discard) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discard) Shutdown(context.Context) error                  { return nil }
func (discard) ForceFlush(context.Context) error                { return nil }
