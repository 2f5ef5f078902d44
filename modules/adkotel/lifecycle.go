package adkotel

import (
	"context"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The lifecycle controls (contract.LifecycleController) are traced as
// CLIENT spans named "<op> <queue>": pause and resume (of the queue, or
// of one tenant: adk.tenant), cancel (with the state it found),
// cancel_matching and purge_cancelled (with how many items they took),
// and, about one leased item, snooze and wait (the delay, the wait's
// signal, and for snooze the policy's decision) and signal. Paused,
// CountMatching and Waiting are reads, forwarded untraced as the
// Inspector's are. A queue without the controls answers each with the
// error Passthrough gives (errors.ErrUnsupported), recorded on its span.

// Pause implements [contract.LifecycleController].
func (w *queue) Pause(ctx context.Context, q, tenant string) error {
	return w.control(ctx, opPause, q, tenant, nil, func(ctx context.Context) error { return w.Passthrough.Pause(ctx, q, tenant) })
}

// Resume implements [contract.LifecycleController].
func (w *queue) Resume(ctx context.Context, q, tenant string) error {
	return w.control(ctx, opResume, q, tenant, nil, func(ctx context.Context) error { return w.Passthrough.Resume(ctx, q, tenant) })
}

// Cancel implements [contract.LifecycleController].
func (w *queue) Cancel(ctx context.Context, key contract.ItemKey, reason string) (contract.ItemState, error) {
	var found contract.ItemState
	err := w.control(ctx, opCancel, key.Queue, key.Tenant, []attribute.KeyValue{semconv.MessagingMessageID(key.ID)}, func(ctx context.Context) error {
		var err error
		found, err = w.Passthrough.Cancel(ctx, key, reason)
		if found != "" {
			trace.SpanFromContext(ctx).SetAttributes(StateFoundKey.String(string(found)))
		}
		return err
	})
	return found, err
}

// CancelMatching implements [contract.LifecycleController].
func (w *queue) CancelMatching(ctx context.Context, f contract.CancelFilter, reason string) (int, error) {
	return w.counted(ctx, opCancelMatching, f.Queue, f.Tenant, func(ctx context.Context) (int, error) {
		return w.Passthrough.CancelMatching(ctx, f, reason)
	})
}

// PurgeCancelled implements [contract.LifecycleController].
func (w *queue) PurgeCancelled(ctx context.Context, q string, before time.Time) (int, error) {
	return w.counted(ctx, opPurgeCancelled, q, "", func(ctx context.Context) (int, error) {
		return w.Passthrough.PurgeCancelled(ctx, q, before)
	})
}

// Snooze implements [contract.LifecycleController].
func (w *queue) Snooze(ctx context.Context, lease contract.Lease, d time.Duration) (policy.Decision, error) {
	ctx, span := w.startItemSpan(ctx, opSnooze, lease, []attribute.KeyValue{DelayKey.Float64(d.Seconds())})
	defer span.End()
	dec, err := w.Passthrough.Snooze(ctx, lease, d)
	if err != nil {
		recordError(span, err)
		return dec, err
	}
	span.SetAttributes(DecisionKey.String(dec.Reason))
	return dec, nil
}

// Wait implements [contract.LifecycleController].
func (w *queue) Wait(ctx context.Context, lease contract.Lease, req contract.WaitRequest) error {
	ctx, span := w.startItemSpan(ctx, opWait, lease, []attribute.KeyValue{SignalKey.String(req.Signal), DelayKey.Float64(req.Timeout.Seconds())})
	defer span.End()
	err := w.Passthrough.Wait(ctx, lease, req)
	if err != nil {
		recordError(span, err)
	}
	return err
}

// Signal implements [contract.LifecycleController].
func (w *queue) Signal(ctx context.Context, key contract.ItemKey, signal string, payload []byte) error {
	return w.control(ctx, opSignal, key.Queue, key.Tenant, []attribute.KeyValue{semconv.MessagingMessageID(key.ID), SignalKey.String(signal)},
		func(ctx context.Context) error { return w.Passthrough.Signal(ctx, key, signal, payload) })
}

// control runs call in a CLIENT span "<op> <queue>".
func (w *queue) control(ctx context.Context, op, q, tenant string, extra []attribute.KeyValue, call func(context.Context) error) error {
	qn := contract.QueueName(q)
	ctx, span := w.tracer.Start(ctx, spanName(op, qn), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(w.attrs(op, qn, tenant), extra...)...))
	defer span.End()
	err := call(ctx)
	if err != nil {
		recordError(span, err)
	}
	return err
}

// counted is control for a call that reports how many items it took.
func (w *queue) counted(ctx context.Context, op, q, tenant string, call func(context.Context) (int, error)) (int, error) {
	var n int
	err := w.control(ctx, op, q, tenant, nil, func(ctx context.Context) error {
		var err error
		n, err = call(ctx)
		trace.SpanFromContext(ctx).SetAttributes(semconv.MessagingBatchMessageCount(n))
		return err
	})
	return n, err
}
