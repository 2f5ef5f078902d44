package adkotel

import (
	"context"
	"errors"
	"time"

	"github.com/adkit/adk/modules/contract"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Operation names of the state store, reported as db.operation.name and
// used as span names.
const (
	opGetRun          = "get_run"
	opPutRun          = "put_run"
	opPatchRun        = "patch_run"
	opListRuns        = "list_runs"
	opListSessionRuns = "list_session_runs"
	opDeleteRun       = "delete_run"
)

// state traces and measures every call to the StateStore it wraps.
type state struct {
	inner    contract.StateStore
	tracer   trace.Tracer
	duration metric.Float64Histogram
}

// WrapState returns s with every call traced as a CLIENT span named after
// its operation (get_run, put_run, patch_run, list_runs,
// list_session_runs, delete_run) and timed in the adk.state.duration
// histogram. Spans carry db.operation.name, adk.tenant and adk.run.id,
// and adk.run.version after a write. ErrNotFound from GetRun is an answer,
// not an error; a *contract.StateConflictError is. It panics when s is nil.
func WrapState(s contract.StateStore, opts ...Option) contract.StateStore {
	if s == nil {
		panic("adkotel: WrapState needs a store, got nil")
	}
	cfg := newConfig(opts)
	m := cfg.meter()
	h, err := m.Float64Histogram(MetricStateDuration,
		metric.WithDescription("Duration of state store calls."), metric.WithUnit("s"))
	if err != nil {
		otel.Handle(err)
		h = noop.Float64Histogram{}
	}
	return &state{inner: s, tracer: cfg.tracer(), duration: h}
}

// Unwrap returns the store that was wrapped.
func (w *state) Unwrap() contract.StateStore { return w.inner }

// GetRun implements [contract.StateStore].
func (w *state) GetRun(ctx context.Context, tenant, id string) (*contract.Run, error) {
	ctx, end := w.start(ctx, opGetRun, TenantKey.String(tenant), RunIDKey.String(id))
	run, err := w.inner.GetRun(ctx, tenant, id)
	end(run, err)
	return run, err
}

// PutRun implements [contract.StateStore].
func (w *state) PutRun(ctx context.Context, run contract.Run) (*contract.Run, error) {
	ctx, end := w.start(ctx, opPutRun, TenantKey.String(run.Tenant), RunIDKey.String(run.ID))
	out, err := w.inner.PutRun(ctx, run)
	end(out, err)
	return out, err
}

// PatchRun implements [contract.StateStore].
func (w *state) PatchRun(ctx context.Context, tenant, id string, patch contract.Patch) (*contract.Run, error) {
	ctx, end := w.start(ctx, opPatchRun, TenantKey.String(tenant), RunIDKey.String(id))
	out, err := w.inner.PatchRun(ctx, tenant, id, patch)
	end(out, err)
	return out, err
}

// ListRuns implements [contract.StateStore].
func (w *state) ListRuns(ctx context.Context, tenant string, page contract.PageRequest) (contract.RunPage, error) {
	ctx, end := w.start(ctx, opListRuns, TenantKey.String(tenant))
	out, err := w.inner.ListRuns(ctx, tenant, page)
	end(nil, err)
	return out, err
}

// ListSessionRuns implements [contract.StateStore].
func (w *state) ListSessionRuns(ctx context.Context, tenant, session string, page contract.PageRequest) (contract.RunPage, error) {
	ctx, end := w.start(ctx, opListSessionRuns, TenantKey.String(tenant))
	out, err := w.inner.ListSessionRuns(ctx, tenant, session, page)
	end(nil, err)
	return out, err
}

// DeleteRun implements [contract.StateStore].
func (w *state) DeleteRun(ctx context.Context, tenant, id string) error {
	ctx, end := w.start(ctx, opDeleteRun, TenantKey.String(tenant), RunIDKey.String(id))
	err := w.inner.DeleteRun(ctx, tenant, id)
	end(nil, err)
	return err
}

// start opens the span of one call and returns the func that closes it
// and records its duration.
func (w *state) start(ctx context.Context, op string, attrs ...attribute.KeyValue) (context.Context, func(*contract.Run, error)) {
	begin := time.Now()
	opAttr := semconv.DBOperationName(op)
	ctx, span := w.tracer.Start(ctx, op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(attrs, opAttr)...))
	return ctx, func(run *contract.Run, err error) {
		mattrs := []attribute.KeyValue{opAttr}
		switch {
		case err == nil:
			if run != nil && op != opGetRun {
				span.SetAttributes(RunVersionKey.Int64(run.Version))
			}
		case op == opGetRun && errors.Is(err, contract.ErrNotFound):
			// a miss is an answer
		default:
			recordError(span, err)
			mattrs = append(mattrs, semconv.ErrorType(err))
		}
		span.End()
		w.duration.Record(ctx, time.Since(begin).Seconds(), metric.WithAttributes(mattrs...))
	}
}
