package adkotel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
	"github.com/adkit/adk/modules/policy"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// enqueueAndClaim enqueues one item under a producer span and claims it.
func enqueueAndClaim(t *testing.T, r *rig, item contract.Item) (trace.SpanContext, contract.Lease) {
	t.Helper()
	ctx, producer := r.tp.Tracer("producer").Start(context.Background(), "produce")
	if err := r.queue.Enqueue(ctx, item); err != nil {
		t.Fatal(err)
	}
	producer.End()
	send := r.one(t, "send "+contract.QueueName(item.Queue)).SpanContext()
	return send, claimOne(t, r.queue, item.Queue)
}

func TestProcessSpanLinkedByDefault(t *testing.T) {
	r := newRig(t, policy.Policy{})
	send, lease := enqueueAndClaim(t, r, contract.Item{Tenant: "acme", ID: "r1", Queue: "runs", Payload: []byte("12345")})

	var inHandler trace.SpanContext
	h := adkotel.ProcessMiddleware(append(r.opts, adkotel.WithSystem(adkotel.SystemMemory))...)("runs",
		func(ctx context.Context, l contract.Lease) error {
			inHandler = trace.SpanContextFromContext(ctx)
			return nil
		})
	if err := h(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	p := r.one(t, "process runs")
	wantKind(t, p, trace.SpanKindConsumer)
	wantAttrs(t, p,
		semconv.MessagingSystemKey.String("memory"),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
		semconv.MessagingDestinationName("runs"),
		semconv.MessagingMessageID("r1"),
		semconv.MessagingMessageBodySize(5),
		adkotel.TenantKey.String("acme"),
		adkotel.AttemptKey.Int(1),
	)
	if p.SpanContext().TraceID() == send.TraceID() {
		t.Errorf("linked process span shares the producer's trace")
	}
	if p.Parent().IsValid() {
		t.Errorf("process span has a parent %v; want a root", p.Parent())
	}
	if len(p.Links()) != 1 || p.Links()[0].SpanContext.SpanID() != send.SpanID() || p.Links()[0].SpanContext.TraceID() != send.TraceID() {
		t.Errorf("process span links %v, want the send span %v", p.Links(), send)
	}
	if inHandler.SpanID() != p.SpanContext().SpanID() {
		t.Errorf("the handler's context does not carry the process span")
	}
	if p.Status().Code == codes.Error {
		t.Errorf("status %v", p.Status())
	}
	if n := histCount(t, r.collect(t), "messaging.process.duration", semconv.MessagingDestinationName("runs")); n != 1 {
		t.Errorf("process duration has %d measurements, want 1", n)
	}
}

func TestProcessSpanChildWithParentFromMessage(t *testing.T) {
	r := newRig(t, policy.Policy{BaseDelay: time.Second, Jitter: policy.Fixed(1)})
	send, lease := enqueueAndClaim(t, r, contract.Item{Tenant: "acme", ID: "r1"})
	mw := adkotel.ProcessMiddleware(append(r.opts, adkotel.WithParentFromMessage())...)
	fail := errors.New("model timeout")
	h := mw("default", func(context.Context, contract.Lease) error { return fail })

	if err := h(context.Background(), lease); !errors.Is(err, fail) {
		t.Fatalf("handler error not passed through: %v", err)
	}
	p := r.one(t, "process default")
	if p.SpanContext().TraceID() != send.TraceID() || p.Parent().SpanID() != send.SpanID() {
		t.Errorf("first attempt: parent %v, want the send span %v", p.Parent(), send)
	}
	if len(p.Links()) != 0 {
		t.Errorf("a child needs no link: %v", p.Links())
	}
	if p.Status().Code != codes.Error || p.Status().Description != "model timeout" {
		t.Errorf("status %v, want the handler's error", p.Status())
	}
	wantAttrs(t, p, semconv.ErrorTypeKey.String("*errors.errorString"))

	// The retry is linked, even with the option.
	if _, err := r.queue.Fail(context.Background(), lease, fail); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	lease = claimOne(t, r.queue, "")
	_ = h(context.Background(), lease)
	retry := r.ended("process default")[1]
	wantAttrs(t, retry, adkotel.AttemptKey.Int(2))
	if retry.SpanContext().TraceID() == send.TraceID() {
		t.Errorf("retry joined the producer's trace")
	}
	if len(retry.Links()) != 1 || retry.Links()[0].SpanContext.SpanID() != send.SpanID() {
		t.Errorf("retry not linked to the producer: %v", retry.Links())
	}
}

func TestProcessSpanPanic(t *testing.T) {
	r := newRig(t, policy.Policy{})
	_, lease := enqueueAndClaim(t, r, contract.Item{Tenant: "acme", ID: "r1"})
	h := adkotel.ProcessMiddleware(r.opts...)("default", func(context.Context, contract.Lease) error { panic("tool crashed") })
	func() {
		defer func() {
			if v := recover(); v != "tool crashed" {
				t.Errorf("recovered %v, want the handler's panic", v)
			}
		}()
		_ = h(context.Background(), lease)
	}()
	p := r.one(t, "process default")
	if p.Status().Code != codes.Error {
		t.Errorf("status %v", p.Status())
	}
	wantAttrs(t, p, semconv.ErrorTypeKey.String("panic"), semconv.MessagingSystemKey.String(adkotel.SystemADK))
}

func TestProcessWithoutContext(t *testing.T) {
	r := newRig(t, policy.Policy{})
	if err := r.store.Enqueue(context.Background(), contract.Item{Tenant: "a", ID: "1"}); err != nil {
		t.Fatal(err)
	}
	lease := claimOne(t, r.store, "")
	h := adkotel.ProcessMiddleware(r.opts...)("default", func(context.Context, contract.Lease) error { return nil })
	if err := h(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	if p := r.one(t, "process default"); len(p.Links()) != 0 {
		t.Errorf("an item without trace context got links: %v", p.Links())
	}
}

// Through the real runner: the middleware wraps the handler, the runner's
// settles go through the wrapped queue.
func TestProcessMiddlewareInRunner(t *testing.T) {
	r := newRig(t, policy.Policy{MaxAttempts: 1})
	ctx := context.Background()
	items := []contract.Item{{Tenant: "a", ID: "ok1"}, {Tenant: "b", ID: "ok2"}, {Tenant: "c", ID: "poison"}}
	if err := r.queue.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int32
	run, err := runner.New(r.queue, func(ctx context.Context, l contract.Lease) error {
		defer handled.Add(1)
		if !trace.SpanContextFromContext(ctx).IsValid() {
			t.Errorf("handler of %s runs without a span", l.Item.ID)
		}
		if l.Item.ID == "poison" {
			return errors.New("bad input")
		}
		return nil
	}, runner.Config{
		Worker:       "w1",
		Clock:        r.clock,
		PollInterval: 10 * time.Millisecond,
		ReapInterval: -1,
		Middleware:   []runner.Middleware{adkotel.ProcessMiddleware(r.opts...)},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run.Run(runCtx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		settled := len(r.ended("dead default")) == 1 && completedIDs(r) == 2
		if settled {
			break
		}
		if time.Now().After(deadline) {
			stop()
			<-done
			t.Fatalf("runner did not settle all items in time (handled %d)", handled.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	send := r.one(t, "send default").SpanContext()
	procs := r.ended("process default")
	if len(procs) != 3 {
		t.Fatalf("%d process spans, want 3", len(procs))
	}
	for _, p := range procs {
		if len(p.Links()) != 1 || p.Links()[0].SpanContext.SpanID() != send.SpanID() {
			t.Errorf("process span %v not linked to the send span", p.Attributes())
		}
	}
	if recv := r.ended("receive default"); len(recv) == 0 {
		t.Errorf("no receive span")
	}
	rm := r.collect(t)
	if n := sumInt(t, rm, adkotel.MetricCompleted); n != 2 {
		t.Errorf("completed = %d, want 2", n)
	}
	if n := sumInt(t, rm, adkotel.MetricDead); n != 1 {
		t.Errorf("dead = %d, want 1", n)
	}
}

// completedIDs counts the items the complete spans settled.
func completedIDs(r *rig) int {
	n := 0
	for _, s := range r.ended("complete default") {
		if s.Status().Code == codes.Error {
			continue
		}
		if v, ok := attrOf(s, semconv.MessagingBatchMessageCountKey); ok {
			n += int(v.AsInt64())
		} else {
			n++
		}
	}
	return n
}
