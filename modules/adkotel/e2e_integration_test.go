//go:build integration

package adkotel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/adkotel/internal/otlpreceiver"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/contract/runner"
	"github.com/adkit/adk/modules/policy"
)

// backing opens queues on one fresh, shared set of data: the producer and
// the consumer each open their own, as two processes would.
type backing struct {
	name   string
	system string
	// fresh prepares empty data and returns the func that opens a queue
	// on it, its database client traced with tp where the backing has one.
	fresh func(t *testing.T, p policy.Policy) func(t *testing.T, tp trace.TracerProvider) contract.WorkQueue
}

func memoryBacking() backing {
	return backing{name: "memory", system: adkotel.SystemMemory,
		fresh: func(t *testing.T, p policy.Policy) func(*testing.T, trace.TracerProvider) contract.WorkQueue {
			s := memstore.New(nil, memstore.Settings{Policy: p})
			return func(*testing.T, trace.TracerProvider) contract.WorkQueue { return s }
		}}
}

// otlpProvider is a tracer provider of its own for one side, exporting
// over OTLP/HTTP to the receiver.
func otlpProvider(t *testing.T, recv *otlpreceiver.Receiver, service string) *sdktrace.TracerProvider {
	t.Helper()
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpoint(recv.HTTPAddr), otlptracehttp.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewSchemaless(semconv.ServiceName(service))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(50*time.Millisecond)), sdktrace.WithResource(res))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

func TestEndToEndOTLP(t *testing.T) {
	for _, b := range e2eBackings() {
		t.Run(b.name, func(t *testing.T) {
			t.Run("linked", func(t *testing.T) { runE2E(t, b, false) })
			t.Run("parent_from_message", func(t *testing.T) { runE2E(t, b, true) })
		})
	}
}

// runE2E enqueues three items from a producer and works them in a
// separate consumer through the runner: one succeeds, one fails once and
// succeeds on its retry, one is poison and dead-letters. Both sides export
// to a real OTLP/HTTP receiver, and the test reads the spans it decoded.
func runE2E(t *testing.T, b backing, parentFromMessage bool) {
	ctx := context.Background()
	recv := otlpreceiver.Start(t)
	pol := policy.Policy{MaxAttempts: 3, BaseDelay: 20 * time.Millisecond, MaxDelay: 20 * time.Millisecond, Jitter: policy.Fixed(1)}
	open := b.fresh(t, pol)
	prop := propagation.TraceContext{}
	noMetrics := noop.NewMeterProvider()

	// Producer.
	producerTP := otlpProvider(t, recv, "producer")
	pq := adkotel.WrapQueue(open(t, producerTP), adkotel.WithTracerProvider(producerTP), adkotel.WithPropagators(prop), adkotel.WithMeterProvider(noMetrics))
	reqCtx, req := producerTP.Tracer("app").Start(ctx, "POST /runs", trace.WithSpanKind(trace.SpanKindServer))
	items := []contract.Item{
		{Tenant: "acme", ID: "ok", Queue: "agent", Payload: []byte(`{"step":1}`)},
		{Tenant: "beta", ID: "flaky", Queue: "agent"},
		{Tenant: "gamma", ID: "poison", Queue: "agent"},
	}
	if err := pq.Enqueue(reqCtx, items...); err != nil {
		t.Fatal(err)
	}
	req.End()

	// Consumer, with its own provider and its own queue.
	consumerTP := otlpProvider(t, recv, "consumer")
	copts := []adkotel.Option{adkotel.WithTracerProvider(consumerTP), adkotel.WithPropagators(prop), adkotel.WithMeterProvider(noMetrics)}
	cq := adkotel.WrapQueue(open(t, consumerTP), copts...)
	mwOpts := append(copts, adkotel.WithSystem(b.system))
	if parentFromMessage {
		mwOpts = append(mwOpts, adkotel.WithParentFromMessage())
	}
	var flakyTries, handled atomic.Int32
	run, err := runner.New(cq, func(ctx context.Context, l contract.Lease) error {
		defer handled.Add(1)
		switch l.Item.ID {
		case "flaky":
			if flakyTries.Add(1) == 1 {
				return errors.New("rate limited")
			}
		case "poison":
			return policy.Permanent(errors.New("bad input"))
		}
		return nil
	}, runner.Config{
		Queue: "agent", Worker: "consumer-1",
		PollInterval: 20 * time.Millisecond, CompleteDelay: time.Millisecond, ReapInterval: -1,
		Middleware: []runner.Middleware{adkotel.ProcessMiddleware(mwOpts...)},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run.Run(runCtx) }()
	waitSettled(t, cq.(contract.Inspector), "agent", func() bool { return handled.Load() == 4 }, stop, done)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := producerTP.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := consumerTP.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	spans := recv.Spans()
	t.Logf("span tree (%s, parent_from_message=%v):\n%s", b.name, parentFromMessage, otlpreceiver.SpanTree(spans))
	checkE2E(t, b, spans, parentFromMessage)
}

// waitSettled waits until every handler call has happened (first, so no
// claim can move an item while the Inspector reads: its snapshot is not
// atomic on every backing), then polls the Inspector until nothing is
// queued or leased and the poison item is dead; it fails after a bounded
// wait.
func waitSettled(t *testing.T, ins contract.Inspector, queue string, handledAll func() bool, stop func(), done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if !handledAll() {
			if time.Now().After(deadline) {
				stop()
				<-done
				t.Fatal("the handler was not called for every attempt in time")
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		stats, err := ins.Tenants(context.Background(), queue)
		var live, dead int64
		for _, s := range stats {
			live += s.Ready + s.Later + s.Leased
			dead += s.Dead
		}
		if err == nil && live == 0 && dead == 1 {
			return
		}
		if time.Now().After(deadline) {
			stop()
			<-done
			t.Fatalf("items not settled in time: %+v %v", stats, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func checkE2E(t *testing.T, b backing, spans []otlpreceiver.Span, parentFromMessage bool) {
	t.Helper()
	find := func(service, name string) []otlpreceiver.Span {
		var out []otlpreceiver.Span
		for _, s := range spans {
			if s.Service == service && s.Name == name {
				out = append(out, s)
			}
		}
		return out
	}
	attr := func(s otlpreceiver.Span, key string) string { return otlpreceiver.AttrString(s.Attributes, key) }
	sysKey := string(semconv.MessagingSystemKey)
	destKey := string(semconv.MessagingDestinationNameKey)
	idKey := string(semconv.MessagingMessageIDKey)
	attemptKey := string(adkotel.AttemptKey)
	tenantKey := string(adkotel.TenantKey)

	reqs := find("producer", "POST /runs")
	sends := find("producer", "send agent")
	if len(reqs) != 1 || len(sends) != 1 {
		t.Fatalf("producer spans: %d request, %d send; want 1 and 1", len(reqs), len(sends))
	}
	send := sends[0]
	if send.Kind != tracepb.Span_SPAN_KIND_PRODUCER {
		t.Errorf("send kind %v", send.Kind)
	}
	if otlpreceiver.HexID(send.ParentSpanId) != otlpreceiver.HexID(reqs[0].SpanId) {
		t.Errorf("send span is not a child of the request span")
	}
	if attr(send, sysKey) != b.system || attr(send, destKey) != "agent" || attr(send, string(semconv.MessagingBatchMessageCountKey)) != "3" {
		t.Errorf("send attributes: %v", send.Attributes)
	}
	sendTrace, sendSpan := otlpreceiver.HexID(send.TraceId), otlpreceiver.HexID(send.SpanId)
	linksToSend := func(s otlpreceiver.Span) bool {
		for _, l := range s.Links {
			if otlpreceiver.HexID(l.TraceId) == sendTrace && otlpreceiver.HexID(l.SpanId) == sendSpan {
				return true
			}
		}
		return false
	}

	// Every span of ours names the backing.
	for _, s := range spans {
		if s.Scope == adkotel.ScopeName && attr(s, sysKey) != b.system {
			t.Errorf("consumer span %q: messaging.system %q, want %q", s.Name, attr(s, sysKey), b.system)
		}
	}

	receives := find("consumer", "receive agent")
	links := 0
	for _, r := range receives {
		if r.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("receive kind %v", r.Kind)
		}
		for _, l := range r.Links {
			links++
			if otlpreceiver.HexID(l.TraceId) != sendTrace || otlpreceiver.HexID(l.SpanId) != sendSpan {
				t.Errorf("receive link to %s/%s, want the send span", otlpreceiver.HexID(l.TraceId), otlpreceiver.HexID(l.SpanId))
			}
		}
	}
	if links != 4 {
		t.Errorf("receive spans carry %d links, want 4 (ok, flaky twice, poison)", links)
	}

	procs := find("consumer", "process agent")
	if len(procs) != 4 {
		t.Fatalf("%d process spans, want 4", len(procs))
	}
	seen := map[string]int{}
	for _, p := range procs {
		id, attempt := attr(p, idKey), attr(p, attemptKey)
		seen[id+"#"+attempt]++
		if p.Kind != tracepb.Span_SPAN_KIND_CONSUMER {
			t.Errorf("process %s kind %v", id, p.Kind)
		}
		if attr(p, destKey) != "agent" || attr(p, tenantKey) == "" {
			t.Errorf("process %s attributes: %v", id, p.Attributes)
		}
		child := parentFromMessage && attempt == "1"
		switch {
		case child:
			if otlpreceiver.HexID(p.TraceId) != sendTrace || otlpreceiver.HexID(p.ParentSpanId) != sendSpan {
				t.Errorf("process %s attempt 1: parent %s in trace %s, want the send span", id, otlpreceiver.HexID(p.ParentSpanId), otlpreceiver.HexID(p.TraceId))
			}
		default:
			if otlpreceiver.HexID(p.TraceId) == sendTrace {
				t.Errorf("process %s attempt %s shares the producer's trace; want a linked trace of its own", id, attempt)
			}
			if !linksToSend(p) {
				t.Errorf("process %s attempt %s: link trace id does not match the producer's", id, attempt)
			}
		}
		wantErr := id == "poison" || id == "flaky" && attempt == "1"
		if gotErr := p.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR; gotErr != wantErr {
			t.Errorf("process %s attempt %s: error status %v, want %v", id, attempt, gotErr, wantErr)
		}
	}
	for _, k := range []string{"ok#1", "flaky#1", "flaky#2", "poison#1"} {
		if seen[k] != 1 {
			t.Errorf("process spans by item#attempt: %v; want one %s", seen, k)
		}
	}

	fails := find("consumer", "fail agent")
	if len(fails) != 1 || attr(fails[0], idKey) != "flaky" || attr(fails[0], string(adkotel.DecisionKey)) != policy.ReasonRetry || !linksToSend(fails[0]) {
		t.Errorf("fail spans: %v", fails)
	}
	deads := find("consumer", "dead agent")
	if len(deads) != 1 || attr(deads[0], idKey) != "poison" || attr(deads[0], string(adkotel.DecisionKey)) != policy.ReasonPermanent || !linksToSend(deads[0]) {
		t.Errorf("dead spans: %v", deads)
	}
	completed := 0
	for _, c := range find("consumer", "complete agent") {
		if c.Kind != tracepb.Span_SPAN_KIND_CLIENT || !linksToSend(c) {
			t.Errorf("complete span %v", c)
		}
		completed += len(c.Links)
	}
	if completed != 2 {
		t.Errorf("complete spans link %d items, want 2", completed)
	}

	// The database client's spans (redisotel, otelpgx) nest under ours.
	if b.system == adkotel.SystemMemory {
		return
	}
	ours := map[string]string{} // span id -> name
	for _, s := range spans {
		if s.Scope == adkotel.ScopeName {
			ours[otlpreceiver.HexID(s.SpanId)] = s.Name
		}
	}
	nested := map[string]int{} // our span name -> database children
	for _, s := range spans {
		if s.Scope == adkotel.ScopeName || s.Scope == "app" {
			continue
		}
		if name, ok := ours[otlpreceiver.HexID(s.ParentSpanId)]; ok {
			nested[name]++
		}
	}
	t.Logf("database spans under ours: %v", nested)
	for _, name := range []string{"send agent", "receive agent", "complete agent", "fail agent", "dead agent"} {
		if nested[name] == 0 {
			t.Errorf("no database span under %q: %v", name, nested)
		}
	}
}
