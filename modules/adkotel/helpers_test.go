package adkotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// rig is one wrapped memstore with in-memory exporters.
type rig struct {
	clock  *contracttest.FakeClock
	store  *memstore.Store
	queue  contract.WorkQueue
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	opts   []adkotel.Option
	tp     *sdktrace.TracerProvider
}

func newRig(t *testing.T, p policy.Policy, extra ...adkotel.Option) *rig {
	t.Helper()
	r := &rig{clock: contracttest.NewFakeClock(time.Time{})}
	r.spans = tracetest.NewSpanRecorder()
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	r.reader = sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		_ = r.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	r.opts = append([]adkotel.Option{
		adkotel.WithTracerProvider(r.tp),
		adkotel.WithMeterProvider(mp),
		adkotel.WithPropagators(propagation.TraceContext{}),
	}, extra...)
	r.store = memstore.New(r.clock, memstore.Settings{Policy: p})
	r.queue = adkotel.WrapQueue(r.store, r.opts...)
	return r
}

// ended returns the ended spans with the given name.
func (r *rig) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// one returns the only ended span with the given name.
func (r *rig) one(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	got := r.ended(name)
	if len(got) != 1 {
		var names []string
		for _, s := range r.spans.Ended() {
			names = append(names, s.Name())
		}
		t.Fatalf("want one %q span, got %d (all: %q)", name, len(got), names)
	}
	return got[0]
}

func (r *rig) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect: %v", err)
	}
	return rm
}

func attrOf(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// wantAttrs checks that the span carries each attribute with its value.
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want ...attribute.KeyValue) {
	t.Helper()
	for _, kv := range want {
		got, ok := attrOf(s, kv.Key)
		if !ok {
			t.Errorf("span %q: no attribute %s (have %v)", s.Name(), kv.Key, s.Attributes())
			continue
		}
		if got.String() != kv.Value.String() {
			t.Errorf("span %q: %s = %s, want %s", s.Name(), kv.Key, got.String(), kv.Value.String())
		}
	}
}

func wantKind(t *testing.T, s sdktrace.ReadOnlySpan, k trace.SpanKind) {
	t.Helper()
	if s.SpanKind() != k {
		t.Errorf("span %q: kind %v, want %v", s.Name(), s.SpanKind(), k)
	}
}

// findMetric returns the metric with the given name.
func findMetric(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// sumInt adds the int64 points of a sum or gauge whose attributes include
// every one of match.
func sumInt(t *testing.T, rm metricdata.ResourceMetrics, name string, match ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := findMetric(rm, name)
	if !ok {
		t.Fatalf("no metric %q", name)
	}
	var pts []metricdata.DataPoint[int64]
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		pts = d.DataPoints
	case metricdata.Gauge[int64]:
		pts = d.DataPoints
	default:
		t.Fatalf("metric %q is %T, not an int64 sum or gauge", name, m.Data)
	}
	var total int64
	for _, p := range pts {
		if hasAll(p.Attributes, match) {
			total += p.Value
		}
	}
	return total
}

// histCount counts the measurements of a float64 histogram whose
// attributes include every one of match.
func histCount(t *testing.T, rm metricdata.ResourceMetrics, name string, match ...attribute.KeyValue) uint64 {
	t.Helper()
	m, ok := findMetric(rm, name)
	if !ok {
		t.Fatalf("no metric %q", name)
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("metric %q is %T, not a float64 histogram", name, m.Data)
	}
	if m.Unit != "s" {
		t.Errorf("metric %q unit %q, want s", name, m.Unit)
	}
	var n uint64
	for _, p := range h.DataPoints {
		if hasAll(p.Attributes, match) {
			n += p.Count
		}
	}
	return n
}

func hasAll(set attribute.Set, match []attribute.KeyValue) bool {
	for _, kv := range match {
		v, ok := set.Value(kv.Key)
		if !ok || v.String() != kv.Value.String() {
			return false
		}
	}
	return true
}

func claimOne(t *testing.T, q contract.WorkQueue, queue string) contract.Lease {
	t.Helper()
	leases, err := q.Claim(context.Background(), contract.ClaimRequest{Queue: queue, Worker: "w1", LeaseFor: 30e9, Max: 1})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if len(leases) != 1 {
		t.Fatalf("claim: %d leases, want 1", len(leases))
	}
	return leases[0]
}
