package adkotel

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/messagingconv"
	"go.opentelemetry.io/otel/trace"
)

// detectTimeout bounds the one Health call WrapQueue makes to learn the
// backing's name when WithSystem is not given.
const detectTimeout = 2 * time.Second

// queue traces and measures every call to the WorkQueue it wraps.
//
// The embedded Passthrough forwards the Inspector, Waker and StatsSource of
// the wrapped queue untraced and reports its Capabilities, so one type
// serves every combination of them.
type queue struct {
	contract.Passthrough
	inner   contract.WorkQueue
	cfg     config
	tracer  trace.Tracer
	system  string
	sys     attribute.KeyValue
	metrics queueMetrics
}

// WrapQueue returns q with every call traced and measured.
//
// Enqueue starts a "send <queue>" PRODUCER span and writes its context
// (W3C traceparent and tracestate, with the default propagator of [Setup])
// into a copy of each item's Metadata, so the caller's items are left as
// they were. Claim is a "receive <queue>" CLIENT span with one link per
// claimed item to the context its producer wrote; Complete and Fail are
// CLIENT settle spans ("complete", "fail", or "dead" when the policy
// dead-letters the item), linked the same way. The process span around
// the handler comes from [ProcessMiddleware].
//
// The returned queue has every optional method and reports the
// [contract.Capabilities] of q (ask [contract.AsWaker] and its siblings,
// not a type assertion, what it can do). It forwards the Inspector, Waker
// and StatsSource untraced, and traces CompleteAndClaim as a complete,
// the HistoryKeeper's EnqueueReport as an Enqueue and its Prune as
// upkeep, like Reap (its reads and settings are forwarded untraced);
// through the Inspector it reports per-tenant gauges and through the
// StatsSource the backing's counters (see the package documentation for
// the metric names). Those observable instruments stay registered for the
// life of the meter provider.
//
// messaging.system is the [WithSystem] value; without it, the Backing of
// q's [contract.Capabilities] (which the kit's backings and wrappers
// report), else q's Inspector Health, read once, here, with a short
// timeout, for its Backing ([SystemADK] when q has no Inspector or the
// call fails).
//
// It panics when q is nil: that is a wiring mistake, not a runtime state.
func WrapQueue(q contract.WorkQueue, opts ...Option) contract.WorkQueue {
	if q == nil {
		panic("adkotel: WrapQueue needs a queue, got nil")
	}
	cfg := newConfig(opts)
	system := cfg.system
	if system == "" {
		system = detectSystem(q)
	}
	w := &queue{
		Passthrough: contract.NewPassthrough(q),
		inner:       q,
		cfg:         cfg,
		tracer:      cfg.tracer(),
		system:      system,
		sys:         systemAttr(system),
	}
	m := cfg.meter()
	w.metrics = newQueueMetrics(m)

	if ins, ok := contract.AsInspector(q); ok {
		registerInspectorGauges(m, ins, system, cfg.tenantLimit)
	}
	if st, ok := contract.AsStatsSource(q); ok {
		registerStatsCounters(m, st, system)
	}
	return w
}

func detectSystem(q contract.WorkQueue) string {
	// A backing of the kit (also behind the kit's wrappers) names itself,
	// which costs no round trip; anything else is asked through its
	// Inspector.
	if b := contract.CapabilitiesOf(q).Backing; b != "" {
		return b
	}
	ins, ok := contract.AsInspector(q)
	if !ok {
		return SystemADK
	}
	ctx, cancel := context.WithTimeout(context.Background(), detectTimeout)
	defer cancel()
	h, err := ins.Health(ctx)
	if err != nil || h.Backing == "" {
		return SystemADK
	}
	return h.Backing
}

// Unwrap returns the queue that was wrapped.
func (w *queue) Unwrap() contract.WorkQueue { return w.inner }

// Enqueue implements [contract.WorkQueue]. One span covers the whole call,
// as one call is one round trip to the backing; each item carries that
// span's context.
func (w *queue) Enqueue(ctx context.Context, items ...contract.Item) error {
	_, err := w.send(ctx, items, func(ctx context.Context, out []contract.Item) ([]contract.EnqueueResult, error) {
		return nil, w.inner.Enqueue(ctx, out...)
	})
	return err
}

// EnqueueReport implements [contract.HistoryKeeper]: traced and measured
// as Enqueue is, one "send <queue>" span with each item carrying its
// context, and the items the queue reports as duplicates counted in
// adk.enqueue.duplicates and, on the span, in adk.duplicates. Every item
// counts as sent, as with Enqueue, duplicates included.
func (w *queue) EnqueueReport(ctx context.Context, items ...contract.Item) ([]contract.EnqueueResult, error) {
	return w.send(ctx, items, func(ctx context.Context, out []contract.Item) ([]contract.EnqueueResult, error) {
		return w.Passthrough.EnqueueReport(ctx, out...)
	})
}

// send is Enqueue and EnqueueReport: the span, the context written into
// each item, the call, and its measurements.
func (w *queue) send(ctx context.Context, items []contract.Item,
	call func(context.Context, []contract.Item) ([]contract.EnqueueResult, error)) ([]contract.EnqueueResult, error) {
	qn, tenant := commonQueue(items), commonTenant(items)
	attrs := w.attrs(opSend, qn, tenant)
	attrs = append(attrs, semconv.MessagingOperationTypeSend)
	if len(items) == 1 {
		attrs = append(attrs, semconv.MessagingMessageID(items[0].ID), semconv.MessagingMessageBodySize(len(items[0].Payload)))
	} else {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(len(items)))
	}
	start := time.Now()
	ctx, span := w.tracer.Start(ctx, spanName(opSend, qn),
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	defer span.End()

	out := make([]contract.Item, len(items))
	for i, it := range items {
		md := make(map[string]string, len(it.Metadata)+2)
		maps.Copy(md, it.Metadata)
		w.cfg.propagator.Inject(ctx, propagation.MapCarrier(md))
		if len(md) > 0 || it.Metadata != nil {
			it.Metadata = md
		}
		out[i] = it
	}
	res, err := call(ctx, out)
	if err != nil {
		recordError(span, err)
	}
	w.recordOp(ctx, opSend, messagingconv.OperationTypeSend, qn, start, err)
	for q, n := range countByQueue(items) {
		mattrs := []attribute.KeyValue{semconv.MessagingDestinationName(q)}
		if err != nil {
			mattrs = append(mattrs, semconv.ErrorType(err))
		}
		w.metrics.sent.Add(ctx, n, opSend, messagingSystem(w.system), mattrs...)
	}
	if err == nil && res != nil {
		dups := make(map[string]int64, 1)
		total := 0
		for i, r := range res {
			if r.Duplicate && i < len(items) {
				dups[contract.QueueName(items[i].Queue)]++
				total++
			}
		}
		span.SetAttributes(DuplicatesKey.Int(total))
		for q, n := range dups {
			w.metrics.duplicates.Add(ctx, n, metric.WithAttributes(w.sys, semconv.MessagingDestinationName(q)))
		}
	}
	return res, err
}

// Claim implements [contract.WorkQueue]. ErrEmpty is an answer, not a
// failure: its span has no error status.
func (w *queue) Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	qn := contract.QueueName(req.Queue)
	attrs := append(w.attrs(opReceive, qn, ""), semconv.MessagingOperationTypeReceive)
	if req.Worker != "" {
		attrs = append(attrs, semconv.MessagingClientID(req.Worker))
	}
	name := spanName(opReceive, qn)
	start := time.Now()
	var span trace.Span
	if !w.cfg.skipEmptyReceive {
		ctx, span = w.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	}
	ctx, report := claimReport(ctx)
	leases, err := w.inner.Claim(ctx, req)
	elapsed := time.Since(start)
	empty := errors.Is(err, contract.ErrEmpty)

	links := w.links(leases)
	if span == nil && !empty {
		// Started late on purpose: the links are known at creation, which
		// is what samplers see.
		_, span = w.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attrs...), trace.WithTimestamp(start), trace.WithLinks(links...))
		links = nil
	}
	if span != nil {
		for _, l := range links {
			span.AddLink(l)
		}
		span.SetAttributes(semconv.MessagingBatchMessageCount(len(leases)))
		if report.PassedOver > 0 {
			span.SetAttributes(PassedOverKey.Int(report.PassedOver))
		}
		if len(leases) == 1 {
			span.SetAttributes(semconv.MessagingMessageID(leases[0].Item.ID), TenantKey.String(leases[0].Item.Tenant))
		}
		if err != nil && !empty {
			recordError(span, err)
		}
		span.End()
	}

	mattrs := []attribute.KeyValue{w.sys, semconv.MessagingDestinationName(qn), ClaimEmptyKey.Bool(empty)}
	if err != nil && !empty {
		mattrs = append(mattrs, semconv.ErrorType(err))
	}
	w.metrics.claimDuration.Record(ctx, elapsed.Seconds(), metric.WithAttributes(mattrs...))
	w.recordHeld(ctx, qn, report)
	var opErr error
	if !empty {
		opErr = err
	}
	w.recordOp(ctx, opReceive, messagingconv.OperationTypeReceive, qn, start, opErr)
	if len(leases) > 0 {
		w.metrics.consumed.Add(ctx, int64(len(leases)), opReceive, messagingSystem(w.system), semconv.MessagingDestinationName(qn))
	}
	return leases, err
}

// claimReport returns ctx carrying a report of the claim: the caller's,
// when it asked for one, or a new one.
func claimReport(ctx context.Context) (context.Context, *contract.ClaimReport) {
	if r := contract.ClaimReportFrom(ctx); r != nil {
		return ctx, r
	}
	r := &contract.ClaimReport{}
	return contract.WithClaimReport(ctx, r), r
}

// recordHeld counts the tenants the claim passed over, by reason.
func (w *queue) recordHeld(ctx context.Context, qn string, r *contract.ClaimReport) {
	for why, n := range r.Held {
		w.metrics.held.Add(ctx, int64(n), metric.WithAttributes(w.sys, semconv.MessagingDestinationName(qn), HeldReasonKey.String(string(why))))
	}
}

// Heartbeat implements [contract.WorkQueue]. Heartbeats and reaps are
// background upkeep: called on a context without a span (as the runner
// does), they are traced only when they fail or, for Reap, reclaim
// something, so a long lease does not leave a root trace per heartbeat.
// Called inside a trace they always get a span.
func (w *queue) Heartbeat(ctx context.Context, lease contract.Lease, extend time.Duration) (contract.Lease, error) {
	qn := contract.QueueName(lease.Item.Queue)
	attrs := append(w.attrs(opHeartbeat, qn, lease.Item.Tenant),
		semconv.MessagingMessageID(lease.Item.ID), AttemptKey.Int(lease.Item.Attempts+1))
	ctx, span := w.startUpkeep(ctx, spanName(opHeartbeat, qn), attrs)
	out, err := w.inner.Heartbeat(ctx, lease, extend)
	span.end(ctx, err != nil, func(s trace.Span) {
		if err != nil {
			recordError(s, err)
		}
	})
	return out, err
}

// upkeep is the span of a background call: real when the caller's context
// is traced, otherwise started after the call only if it is worth one.
type upkeep struct {
	w     *queue
	name  string
	attrs []attribute.KeyValue
	start time.Time
	span  trace.Span // nil until known to be wanted
}

func (w *queue) startUpkeep(ctx context.Context, name string, attrs []attribute.KeyValue) (context.Context, *upkeep) {
	u := &upkeep{w: w, name: name, attrs: attrs, start: time.Now()}
	if trace.SpanContextFromContext(ctx).IsValid() {
		ctx, u.span = w.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	}
	return ctx, u
}

// end finishes the span, creating it first when the call was untraced but
// notable; annotate adds the outcome.
func (u *upkeep) end(ctx context.Context, notable bool, annotate func(trace.Span)) {
	if u.span == nil {
		if !notable {
			return
		}
		_, u.span = u.w.tracer.Start(ctx, u.name, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(u.attrs...), trace.WithTimestamp(u.start))
	}
	annotate(u.span)
	u.span.End()
}

// Complete implements [contract.WorkQueue]. Leases named by a
// *LeaseLostError are not counted as completed.
func (w *queue) Complete(ctx context.Context, leases ...contract.Lease) error {
	ctx, span, c := w.startComplete(ctx, leases)
	defer span.End()
	err := w.inner.Complete(ctx, leases...)
	w.endComplete(ctx, span, c, err)
	return err
}

// CompleteAndClaim implements [contract.CompleteClaimer]: one "complete
// <queue>" span for the round trip, as Complete's, with a link to the
// producer of each lease it claims. The claimed items count as consumed.
func (w *queue) CompleteAndClaim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest) ([]contract.Lease, error) {
	ctx, span, c := w.startComplete(ctx, done)
	defer span.End()
	ctx, report := claimReport(ctx)
	leases, err := w.Passthrough.CompleteAndClaim(ctx, done, req)
	w.recordHeld(ctx, contract.QueueName(req.Queue), report)
	if report.PassedOver > 0 {
		span.SetAttributes(PassedOverKey.Int(report.PassedOver))
	}
	settleErr := err
	if errors.Is(err, contract.ErrEmpty) {
		settleErr = nil
	}
	w.endComplete(ctx, span, c, settleErr)
	for _, l := range w.links(leases) {
		span.AddLink(l)
	}
	if len(leases) > 0 {
		qn := contract.QueueName(req.Queue)
		span.SetAttributes(ClaimedKey.Int(len(leases)))
		w.metrics.consumed.Add(ctx, int64(len(leases)), opReceive, messagingSystem(w.system), semconv.MessagingDestinationName(qn))
	}
	return leases, err
}

// completion is what endComplete needs of a complete's start.
type completion struct {
	items []contract.Item
	qn    string
	start time.Time
}

func (w *queue) startComplete(ctx context.Context, leases []contract.Lease) (context.Context, trace.Span, completion) {
	items := make([]contract.Item, len(leases))
	for i, l := range leases {
		items[i] = l.Item
	}
	qn, tenant := commonQueue(items), commonTenant(items)
	attrs := append(w.attrs(opComplete, qn, tenant), semconv.MessagingOperationTypeSettle)
	if len(leases) == 1 {
		attrs = append(attrs, semconv.MessagingMessageID(leases[0].Item.ID), AttemptKey.Int(leases[0].Item.Attempts+1))
	} else {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(len(leases)))
	}
	start := time.Now()
	ctx, span := w.tracer.Start(ctx, spanName(opComplete, qn), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrs...), trace.WithLinks(w.links(leases)...))
	return ctx, span, completion{items: items, qn: qn, start: start}
}

// endComplete records the outcome of the completes: err nil, a
// *contract.LeaseLostError naming the lost, or any other error (nothing
// known to have completed).
func (w *queue) endComplete(ctx context.Context, span trace.Span, c completion, err error) {
	w.recordOp(ctx, opComplete, messagingconv.OperationTypeSettle, c.qn, c.start, err)
	done := countByQueue(c.items)
	if err != nil {
		recordError(span, err)
		if lost, ok := errors.AsType[*contract.LeaseLostError](err); ok {
			span.SetAttributes(LostKey.Int(len(lost.Items)))
			for _, k := range lost.Items {
				done[k.Queue]--
			}
		} else {
			clear(done) // nothing is known to have completed
		}
	}
	for q, n := range done {
		if n > 0 {
			w.metrics.completed.Add(ctx, n, metric.WithAttributes(w.sys, semconv.MessagingDestinationName(q)))
		}
	}
}

// Fail implements [contract.WorkQueue]. The span is renamed "dead <queue>"
// when the policy sends the item to the dead letter. The cause is recorded
// as an exception event; the span's status is an error only when Fail
// itself failed.
func (w *queue) Fail(ctx context.Context, lease contract.Lease, cause error) (policy.Decision, error) {
	ctx, span := w.startItemSpan(ctx, opFail, lease, []attribute.KeyValue{semconv.MessagingOperationTypeSettle})
	defer span.End()
	if cause != nil {
		span.RecordError(cause)
	}
	start := time.Now()
	dec, err := w.inner.Fail(ctx, lease, cause)
	qn := contract.QueueName(lease.Item.Queue)
	op := opFail
	if err == nil && !dec.Retry {
		op = opDead
	}
	w.recordOp(ctx, op, messagingconv.OperationTypeSettle, qn, start, err)
	if err != nil {
		recordError(span, err)
		return dec, err
	}
	span.SetAttributes(DecisionKey.String(dec.Reason))
	opt := metric.WithAttributes(w.sys, semconv.MessagingDestinationName(qn))
	w.metrics.failed.Add(ctx, 1, opt)
	if !dec.Retry {
		span.SetName(spanName(opDead, qn))
		span.SetAttributes(semconv.MessagingOperationName(opDead))
		w.metrics.dead.Add(ctx, 1, opt)
	}
	return dec, nil
}

// Reap implements [contract.WorkQueue]. The backing does not say which
// leases it reaped nor where they went, so they appear only in the
// adk.reaped counter, not in adk.failed or adk.dead. Like Heartbeat, an
// untraced Reap that reaps nothing leaves no span.
func (w *queue) Reap(ctx context.Context, q string) (int, error) {
	qn := contract.QueueName(q)
	ctx, span := w.startUpkeep(ctx, spanName(opReap, qn), w.attrs(opReap, qn, ""))
	n, err := w.inner.Reap(ctx, q)
	span.end(ctx, err != nil || n > 0, func(s trace.Span) {
		s.SetAttributes(semconv.MessagingBatchMessageCount(n))
		if err != nil {
			recordError(s, err)
		}
	})
	if n > 0 {
		w.metrics.reaped.Add(ctx, int64(n), metric.WithAttributes(w.sys, semconv.MessagingDestinationName(qn)))
	}
	return n, err
}

// Prune implements [contract.HistoryKeeper]. It is upkeep, as Reap is
// (the runner's reaper calls it): untraced it leaves a "prune <queue>"
// span only when it fails or removes something. What it removes is
// counted in adk.pruned. The other HistoryKeeper methods are reads and
// settings, forwarded untraced as the Inspector's are.
func (w *queue) Prune(ctx context.Context, q string) (int, error) {
	qn := contract.QueueName(q)
	ctx, span := w.startUpkeep(ctx, spanName(opPrune, qn), w.attrs(opPrune, qn, ""))
	n, err := w.Passthrough.Prune(ctx, q)
	span.end(ctx, err != nil || n > 0, func(s trace.Span) {
		s.SetAttributes(semconv.MessagingBatchMessageCount(n))
		if err != nil {
			recordError(s, err)
		}
	})
	if n > 0 {
		w.metrics.pruned.Add(ctx, int64(n), metric.WithAttributes(w.sys, semconv.MessagingDestinationName(qn)))
	}
	return n, err
}

// DeadLetters implements [contract.WorkQueue].
func (w *queue) DeadLetters(ctx context.Context, q contract.DeadLetterQuery) (contract.ItemPage, error) {
	qn := contract.QueueName(q.Queue)
	ctx, span := w.tracer.Start(ctx, spanName(opDeadLetters, qn), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(w.attrs(opDeadLetters, qn, q.Tenant)...))
	defer span.End()
	page, err := w.inner.DeadLetters(ctx, q)
	span.SetAttributes(semconv.MessagingBatchMessageCount(len(page.Items)))
	if err != nil {
		recordError(span, err)
	}
	return page, err
}

// Requeue implements [contract.WorkQueue]. The requeued items keep their
// Metadata, so their next process span still links to the producer.
func (w *queue) Requeue(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	return w.bulk(ctx, opRequeue, f, w.inner.Requeue)
}

// Purge implements [contract.WorkQueue].
func (w *queue) Purge(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	return w.bulk(ctx, opPurge, f, w.inner.Purge)
}

func (w *queue) bulk(ctx context.Context, op string, f contract.DeadLetterFilter,
	call func(context.Context, contract.DeadLetterFilter) (int, error)) (int, error) {
	qn := contract.QueueName(f.Queue)
	ctx, span := w.tracer.Start(ctx, spanName(op, qn), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(w.attrs(op, qn, f.Tenant)...))
	defer span.End()
	n, err := call(ctx, f)
	span.SetAttributes(semconv.MessagingBatchMessageCount(n))
	if err != nil {
		recordError(span, err)
	}
	return n, err
}

// recordOp adds one measurement to messaging.client.operation.duration.
// qn may be "" for a call spanning several queues.
func (w *queue) recordOp(ctx context.Context, op string, typ messagingconv.OperationTypeAttr, qn string, start time.Time, err error) {
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, w.metrics.opDuration.AttrOperationType(typ))
	if qn != "" {
		attrs = append(attrs, semconv.MessagingDestinationName(qn))
	}
	if err != nil {
		attrs = append(attrs, semconv.ErrorType(err))
	}
	w.metrics.opDuration.Record(ctx, time.Since(start).Seconds(), op, messagingSystem(w.system), attrs...)
}

// attrs are the attributes every span of the queue carries.
func (w *queue) attrs(op, qn, tenant string) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 8)
	a = append(a, w.sys, semconv.MessagingOperationName(op))
	if qn != "" {
		a = append(a, semconv.MessagingDestinationName(qn))
	}
	if tenant != "" {
		a = append(a, TenantKey.String(tenant))
	}
	return a
}

// startItemSpan starts a CLIENT span about one leased item, linked to the
// context its producer wrote.
func (w *queue) startItemSpan(ctx context.Context, op string, lease contract.Lease, extra []attribute.KeyValue) (context.Context, trace.Span) {
	qn := contract.QueueName(lease.Item.Queue)
	attrs := append(w.attrs(op, qn, lease.Item.Tenant),
		semconv.MessagingMessageID(lease.Item.ID), AttemptKey.Int(lease.Item.Attempts+1))
	attrs = append(attrs, extra...)
	return w.tracer.Start(ctx, spanName(op, qn), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrs...), trace.WithLinks(w.links([]contract.Lease{lease})...))
}

// links returns one link per lease whose Metadata carries a valid context.
func (w *queue) links(leases []contract.Lease) []trace.Link {
	var links []trace.Link
	for _, l := range leases {
		sc := messageContext(w.cfg.propagator, l.Item)
		if !sc.IsValid() {
			continue
		}
		links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
			semconv.MessagingMessageID(l.Item.ID), TenantKey.String(l.Item.Tenant),
		}})
	}
	return links
}

// messageContext reads the producer's span context from the item.
func messageContext(p propagation.TextMapPropagator, it contract.Item) trace.SpanContext {
	if len(it.Metadata) == 0 {
		return trace.SpanContext{}
	}
	ctx := p.Extract(context.Background(), propagation.MapCarrier(it.Metadata))
	return trace.SpanContextFromContext(ctx)
}

func recordError(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(semconv.ErrorType(err))
}

// commonQueue returns the queue all items share, "" when they differ.
func commonQueue(items []contract.Item) string {
	if len(items) == 0 {
		return ""
	}
	q := contract.QueueName(items[0].Queue)
	for _, it := range items[1:] {
		if contract.QueueName(it.Queue) != q {
			return ""
		}
	}
	return q
}

// commonTenant returns the tenant all items share, "" when they differ.
func commonTenant(items []contract.Item) string {
	if len(items) == 0 {
		return ""
	}
	t := items[0].Tenant
	for _, it := range items[1:] {
		if it.Tenant != t {
			return ""
		}
	}
	return t
}

func countByQueue(items []contract.Item) map[string]int64 {
	n := make(map[string]int64, 1)
	for _, it := range items {
		n[contract.QueueName(it.Queue)]++
	}
	return n
}
