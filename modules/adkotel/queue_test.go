package adkotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

func TestEnqueueSendSpanInjectsContext(t *testing.T) {
	r := newRig(t, policy.Policy{})
	ctx, parent := r.tp.Tracer("test").Start(context.Background(), "request")
	md := map[string]string{"k": "v"}
	item := contract.Item{Tenant: "acme", ID: "i1", Queue: "jobs", Payload: []byte("abc"), Metadata: md}
	if err := r.queue.Enqueue(ctx, item); err != nil {
		t.Fatal(err)
	}
	parent.End()

	s := r.one(t, "send jobs")
	wantKind(t, s, trace.SpanKindProducer)
	wantAttrs(t, s,
		semconv.MessagingSystemKey.String(adkotel.SystemMemory), // inferred from Health
		semconv.MessagingDestinationName("jobs"),
		semconv.MessagingOperationName("send"),
		semconv.MessagingOperationTypeSend,
		semconv.MessagingMessageID("i1"),
		semconv.MessagingMessageBodySize(3),
		adkotel.TenantKey.String("acme"),
	)
	if s.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("send span is not a child of the caller's span")
	}
	if len(md) != 1 {
		t.Errorf("caller's Metadata was changed: %v", md)
	}
	info, err := r.store.Item(context.Background(), item.Key())
	if err != nil {
		t.Fatal(err)
	}
	got := info.Item.Metadata
	if got["k"] != "v" {
		t.Errorf("stored Metadata lost the caller's key: %v", got)
	}
	want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
	if got["traceparent"] != want {
		t.Errorf("stored traceparent = %q, want %q", got["traceparent"], want)
	}
}

func TestEnqueueBatchIsOneSpan(t *testing.T) {
	r := newRig(t, policy.Policy{})
	items := []contract.Item{{Tenant: "a", ID: "1"}, {Tenant: "b", ID: "2"}, {Tenant: "a", ID: "3"}}
	if err := r.queue.Enqueue(context.Background(), items...); err != nil {
		t.Fatal(err)
	}
	s := r.one(t, "send default")
	wantAttrs(t, s, semconv.MessagingBatchMessageCount(3), semconv.MessagingDestinationName("default"))
	if _, ok := attrOf(s, adkotel.TenantKey); ok {
		t.Errorf("a batch of several tenants must not name one")
	}
	for _, it := range items {
		info, err := r.store.Item(context.Background(), it.Key())
		if err != nil {
			t.Fatal(err)
		}
		if info.Item.Metadata["traceparent"] == "" {
			t.Errorf("item %s has no traceparent", it.ID)
		}
	}

	// Items of several queues: the span names no destination.
	if err := r.queue.Enqueue(context.Background(), contract.Item{Tenant: "a", ID: "x", Queue: "q1"}, contract.Item{Tenant: "a", ID: "y", Queue: "q2"}); err != nil {
		t.Fatal(err)
	}
	s = r.one(t, "send")
	if _, ok := attrOf(s, semconv.MessagingDestinationNameKey); ok {
		t.Errorf("a batch over two queues must not name a destination")
	}
}

func TestEnqueueErrorRecorded(t *testing.T) {
	r := newRig(t, policy.Policy{})
	err := r.queue.Enqueue(context.Background(), contract.Item{Tenant: "", ID: "x"})
	if !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("err = %v, want a validation error", err)
	}
	s := r.one(t, "send default")
	if s.Status().Code != codes.Error {
		t.Errorf("status %v, want Error", s.Status())
	}
	wantAttrs(t, s, semconv.ErrorTypeKey.String("*contract.ValidationError"))
	if len(s.Events()) == 0 || s.Events()[0].Name != semconv.ExceptionEventName {
		t.Errorf("no exception event: %v", s.Events())
	}
}

func TestClaimReceiveSpanLinksEachItem(t *testing.T) {
	r := newRig(t, policy.Policy{})
	ctx := context.Background()
	for _, id := range []string{"1", "2"} {
		if err := r.queue.Enqueue(ctx, contract.Item{Tenant: "t" + id, ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	sends := r.ended("send default")
	leases, err := r.queue.Claim(ctx, contract.ClaimRequest{Worker: "w7", LeaseFor: time.Minute, Max: 10})
	if err != nil || len(leases) != 2 {
		t.Fatalf("claim: %d leases, %v", len(leases), err)
	}
	s := r.one(t, "receive default")
	wantKind(t, s, trace.SpanKindClient)
	wantAttrs(t, s,
		semconv.MessagingSystemKey.String("memory"),
		semconv.MessagingOperationTypeReceive,
		semconv.MessagingOperationName("receive"),
		semconv.MessagingDestinationName("default"),
		semconv.MessagingClientID("w7"),
		semconv.MessagingBatchMessageCount(2),
	)
	links := s.Links()
	if len(links) != 2 {
		t.Fatalf("%d links, want 2", len(links))
	}
	for i, l := range links {
		if l.SpanContext.SpanID() != sends[i].SpanContext().SpanID() || l.SpanContext.TraceID() != sends[i].SpanContext().TraceID() {
			t.Errorf("link %d points at %v, want the send span %v", i, l.SpanContext, sends[i].SpanContext())
		}
	}
}

func TestEmptyClaim(t *testing.T) {
	r := newRig(t, policy.Policy{})
	_, err := r.queue.Claim(context.Background(), contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
	if !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("err = %v, want ErrEmpty", err)
	}
	s := r.one(t, "receive default")
	if s.Status().Code == codes.Error {
		t.Errorf("an empty claim is not an error: %v", s.Status())
	}
	wantAttrs(t, s, semconv.MessagingBatchMessageCount(0))
	rm := r.collect(t)
	if n := histCount(t, rm, adkotel.MetricClaimDuration, adkotel.ClaimEmptyKey.Bool(true)); n != 1 {
		t.Errorf("claim duration counted %d empty claims, want 1", n)
	}
}

func TestWithoutEmptyReceiveSpans(t *testing.T) {
	r := newRig(t, policy.Policy{}, adkotel.WithoutEmptyReceiveSpans())
	ctx := context.Background()
	req := contract.ClaimRequest{LeaseFor: time.Minute, Max: 1}
	if _, err := r.queue.Claim(ctx, req); !errors.Is(err, contract.ErrEmpty) {
		t.Fatal(err)
	}
	if got := r.ended("receive default"); len(got) != 0 {
		t.Fatalf("empty claim made %d spans", len(got))
	}
	if err := r.queue.Enqueue(ctx, contract.Item{Tenant: "a", ID: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.queue.Claim(ctx, req); err != nil {
		t.Fatal(err)
	}
	s := r.one(t, "receive default")
	if len(s.Links()) != 1 || s.Links()[0].SpanContext.TraceID() != r.one(t, "send default").SpanContext().TraceID() {
		t.Errorf("late receive span lacks its link: %v", s.Links())
	}
	if !s.StartTime().Before(s.EndTime()) && !s.StartTime().Equal(s.EndTime()) {
		t.Errorf("start %v after end %v", s.StartTime(), s.EndTime())
	}
	if n := histCount(t, r.collect(t), adkotel.MetricClaimDuration); n != 2 {
		t.Errorf("claim duration counted %d claims, want 2", n)
	}
}

func TestSettleSpans(t *testing.T) {
	r := newRig(t, policy.Policy{MaxAttempts: 2, BaseDelay: time.Second, Jitter: policy.Fixed(1)})
	ctx := context.Background()
	if err := r.queue.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "ok"}, contract.Item{Tenant: "acme", ID: "bad"}); err != nil {
		t.Fatal(err)
	}
	producer := r.one(t, "send default").SpanContext()

	ok := claimOne(t, r.queue, "")
	if err := r.queue.Complete(ctx, ok); err != nil {
		t.Fatal(err)
	}
	c := r.one(t, "complete default")
	wantKind(t, c, trace.SpanKindClient)
	wantAttrs(t, c,
		semconv.MessagingOperationTypeSettle, semconv.MessagingOperationName("complete"),
		semconv.MessagingMessageID("ok"), adkotel.TenantKey.String("acme"), adkotel.AttemptKey.Int(1))
	if len(c.Links()) != 1 || c.Links()[0].SpanContext.TraceID() != producer.TraceID() {
		t.Errorf("complete span not linked to the producer: %v", c.Links())
	}

	bad := claimOne(t, r.queue, "")
	dec, err := r.queue.Fail(ctx, bad, errors.New("boom"))
	if err != nil || !dec.Retry {
		t.Fatalf("fail: %+v %v", dec, err)
	}
	f := r.one(t, "fail default")
	wantKind(t, f, trace.SpanKindClient)
	wantAttrs(t, f, semconv.MessagingOperationTypeSettle, semconv.MessagingOperationName("fail"),
		adkotel.DecisionKey.String(policy.ReasonRetry), adkotel.AttemptKey.Int(1), semconv.MessagingMessageID("bad"))
	if f.Status().Code == codes.Error {
		t.Errorf("a Fail that worked is not an error span")
	}
	if len(f.Events()) != 1 || f.Events()[0].Name != semconv.ExceptionEventName {
		t.Errorf("the cause is not recorded: %v", f.Events())
	}

	r.clock.Advance(time.Second)
	bad = claimOne(t, r.queue, "")
	dec, err = r.queue.Fail(ctx, bad, errors.New("boom again"))
	if err != nil || dec.Retry {
		t.Fatalf("second fail: %+v %v", dec, err)
	}
	d := r.one(t, "dead default")
	wantAttrs(t, d, semconv.MessagingOperationName("dead"), adkotel.DecisionKey.String(policy.ReasonMaxAttempts), adkotel.AttemptKey.Int(2))
	if len(d.Links()) != 1 || d.Links()[0].SpanContext.TraceID() != producer.TraceID() {
		t.Errorf("dead span not linked to the producer: %v", d.Links())
	}

	// A settle with a stale token: error status, lost count, nothing counted.
	if err := r.queue.Complete(ctx, ok); err == nil {
		t.Fatal("completing twice worked")
	}
	stale := r.ended("complete default")[1]
	if stale.Status().Code != codes.Error {
		t.Errorf("lost lease not an error")
	}
	wantAttrs(t, stale, adkotel.LostKey.Int(1))

	rm := r.collect(t)
	q := semconv.MessagingDestinationName("default")
	if n := sumInt(t, rm, adkotel.MetricCompleted, q); n != 1 {
		t.Errorf("completed = %d, want 1", n)
	}
	if n := sumInt(t, rm, adkotel.MetricFailed, q); n != 2 {
		t.Errorf("failed = %d, want 2", n)
	}
	if n := sumInt(t, rm, adkotel.MetricDead, q); n != 1 {
		t.Errorf("dead = %d, want 1", n)
	}
	if n := sumInt(t, rm, "messaging.client.sent.messages", q, semconv.MessagingSystemKey.String("memory")); n != 2 {
		t.Errorf("sent = %d, want 2", n)
	}
	if n := sumInt(t, rm, "messaging.client.consumed.messages", q); n != 3 {
		t.Errorf("consumed = %d, want 3", n)
	}
	if n := histCount(t, rm, adkotel.MetricClaimDuration, adkotel.ClaimEmptyKey.Bool(false)); n != 3 {
		t.Errorf("claim duration has %d claims, want 3", n)
	}
	for _, c := range []struct {
		op   string
		typ  string
		want uint64
	}{{"send", "send", 1}, {"receive", "receive", 3}, {"complete", "settle", 2}, {"fail", "settle", 1}, {"dead", "settle", 1}} {
		n := histCount(t, rm, "messaging.client.operation.duration", semconv.MessagingOperationName(c.op),
			semconv.MessagingOperationTypeKey.String(c.typ), semconv.MessagingSystemKey.String("memory"))
		if n != c.want {
			t.Errorf("operation duration of %s: %d measurements, want %d", c.op, n, c.want)
		}
	}
	if n := histCount(t, rm, "messaging.client.operation.duration", semconv.MessagingOperationName("complete"),
		semconv.ErrorTypeKey.String("*contract.LeaseLostError")); n != 1 {
		t.Errorf("the lost complete is not measured with its error.type")
	}
}

// The producer's context survives a retry, the dead letter and a requeue:
// every receive after them still links to the same send span.
func TestContextSurvivesRetryDeadAndRequeue(t *testing.T) {
	r := newRig(t, policy.Policy{MaxAttempts: 2, BaseDelay: time.Second, Jitter: policy.Fixed(1)})
	ctx := context.Background()
	if err := r.queue.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x", Metadata: map[string]string{"own": "1"}}); err != nil {
		t.Fatal(err)
	}
	producer := r.one(t, "send default").SpanContext()
	check := func(step string, l contract.Lease) {
		t.Helper()
		recv := r.ended("receive default")
		last := recv[len(recv)-1]
		if len(last.Links()) != 1 || last.Links()[0].SpanContext.SpanID() != producer.SpanID() {
			t.Errorf("%s: receive span does not link to the producer: %v", step, last.Links())
		}
		if l.Item.Metadata["own"] != "1" {
			t.Errorf("%s: caller's metadata lost: %v", step, l.Item.Metadata)
		}
	}
	l := claimOne(t, r.queue, "")
	check("first claim", l)
	if _, err := r.queue.Fail(ctx, l, errors.New("x")); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	l = claimOne(t, r.queue, "")
	check("after retry", l)
	if _, err := r.queue.Fail(ctx, l, errors.New("x")); err != nil {
		t.Fatal(err)
	}
	page, err := r.queue.DeadLetters(ctx, contract.DeadLetterQuery{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("dead letters: %v %v", page, err)
	}
	if page.Items[0].Metadata["traceparent"] == "" {
		t.Errorf("dead letter lost its traceparent")
	}
	wantAttrs(t, r.one(t, "dead_letters default"), semconv.MessagingBatchMessageCount(1))
	n, err := r.queue.Requeue(ctx, contract.DeadLetterFilter{})
	if err != nil || n != 1 {
		t.Fatalf("requeue: %d %v", n, err)
	}
	wantAttrs(t, r.one(t, "requeue default"), semconv.MessagingBatchMessageCount(1))
	l = claimOne(t, r.queue, "")
	check("after requeue", l)
}

func TestHeartbeatReapPurgeSpans(t *testing.T) {
	r := newRig(t, policy.Policy{MaxAttempts: 1})
	ctx := context.Background()
	if err := r.queue.Enqueue(ctx, contract.Item{Tenant: "a", ID: "1"}); err != nil {
		t.Fatal(err)
	}
	l := claimOne(t, r.queue, "")

	// Background upkeep that goes well leaves no root span...
	l, err := r.queue.Heartbeat(ctx, l, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.queue.Reap(ctx, ""); err != nil || n != 0 {
		t.Fatalf("reap: %d %v", n, err)
	}
	if got := len(r.ended("heartbeat default")) + len(r.ended("reap default")); got != 0 {
		t.Errorf("untraced, uneventful upkeep made %d spans", got)
	}
	// ...but inside a trace it gets one.
	tctx, parent := r.tp.Tracer("test").Start(ctx, "job")
	l, err = r.queue.Heartbeat(tctx, l, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	parent.End()
	hb := r.one(t, "heartbeat default")
	wantKind(t, hb, trace.SpanKindClient)
	wantAttrs(t, hb, semconv.MessagingMessageID("1"), adkotel.TenantKey.String("a"), adkotel.AttemptKey.Int(1))
	if hb.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("heartbeat span not under the caller's span")
	}

	// A reap that reclaims, and a heartbeat that finds its lease lost, are
	// worth a span even untraced.
	r.clock.Advance(2 * time.Minute)
	n, err := r.queue.Reap(ctx, "")
	if err != nil || n != 1 {
		t.Fatalf("reap: %d %v", n, err)
	}
	reap := r.one(t, "reap default")
	wantAttrs(t, reap, semconv.MessagingBatchMessageCount(1))
	if !reap.StartTime().Before(reap.EndTime()) && !reap.StartTime().Equal(reap.EndTime()) {
		t.Errorf("reap span ends before it starts")
	}
	if _, err := r.queue.Heartbeat(ctx, l, time.Minute); err == nil {
		t.Fatal("heartbeat of a reaped lease worked")
	}
	if hbs := r.ended("heartbeat default"); len(hbs) != 2 || hbs[1].Status().Code != codes.Error {
		t.Errorf("lost heartbeat is not an error span")
	}
	n, err = r.queue.Purge(ctx, contract.DeadLetterFilter{Tenant: "a"})
	if err != nil || n != 1 {
		t.Fatalf("purge: %d %v", n, err)
	}
	wantAttrs(t, r.one(t, "purge default"), semconv.MessagingBatchMessageCount(1), adkotel.TenantKey.String("a"))
	if got := sumInt(t, r.collect(t), adkotel.MetricReaped); got != 1 {
		t.Errorf("reaped = %d, want 1", got)
	}
}

func TestWithSystemOverrides(t *testing.T) {
	r := newRig(t, policy.Policy{}, adkotel.WithSystem(adkotel.SystemRedis))
	if err := r.queue.Enqueue(context.Background(), contract.Item{Tenant: "a", ID: "1"}); err != nil {
		t.Fatal(err)
	}
	wantAttrs(t, r.one(t, "send default"), semconv.MessagingSystemKey.String("redis"))
}

func TestClaimCountsHeldTenants(t *testing.T) {
	r := newRig(t, policy.Policy{})
	ctx := context.Background()
	fc, ok := contract.AsFlowController(r.queue)
	if !ok {
		t.Fatal("the wrapped memstore queue does not forward flow control")
	}
	if err := fc.SetLimits(ctx, "", "capped", contract.Limits{MaxLeased: 1}); err != nil {
		t.Fatal(err)
	}
	for _, it := range []contract.Item{{Tenant: "capped", ID: "1"}, {Tenant: "capped", ID: "2"}, {Tenant: "free", ID: "3"}} {
		if err := r.queue.Enqueue(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.queue.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1}); err != nil {
		t.Fatal(err)
	}
	// The capped tenant holds its one lease: the next claims pass it over.
	mine := &contract.ClaimReport{}
	ls, err := r.queue.Claim(contract.WithClaimReport(ctx, mine), contract.ClaimRequest{LeaseFor: time.Minute, Max: 5})
	if err != nil || len(ls) != 1 || ls[0].Item.Tenant != "free" {
		t.Fatalf("claim with the capped tenant held: %v, %v", ls, err)
	}
	if mine.Held[contract.HeldCap] != 1 {
		t.Errorf("the caller's own report = %+v, want the cap hold the backing saw", mine)
	}
	if _, err := r.queue.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 5}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("third claim: %v, want ErrEmpty", err)
	}
	spans := r.ended("receive default")
	if len(spans) != 3 {
		t.Fatalf("%d receive spans, want 3", len(spans))
	}
	if _, ok := attrOf(spans[0], adkotel.PassedOverKey); ok {
		t.Error("the first claim passed nobody over, but its span says it did")
	}
	for _, s := range spans[1:] {
		wantAttrs(t, s, adkotel.PassedOverKey.Int(1))
	}
	rm := r.collect(t)
	if n := sumInt(t, rm, adkotel.MetricHeld, adkotel.HeldReasonKey.String("cap")); n != 2 {
		t.Errorf("held-back counter for cap = %d, want 2", n)
	}
}
