package adkotel

import (
	"context"
	"errors"
	"fmt"
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
	opDeleteRunFenced = "delete_run_fenced"
	opListRunVersions = "list_run_versions"
	opGetRunVersion   = "get_run_version"
	opForkRun         = "fork_run"
)

// state traces and measures every call to the StateStore it wraps.
type state struct {
	inner    contract.StateStore
	tracer   trace.Tracer
	duration metric.Float64Histogram
	fenced   metric.Int64Counter
}

// WrapState returns s with every call traced as a CLIENT span named after
// its operation (get_run, put_run, patch_run, list_runs,
// list_session_runs, delete_run) and timed in the adk.state.duration
// histogram. Spans carry db.operation.name, adk.tenant and adk.run.id,
// and adk.run.version after a write. ErrNotFound from GetRun is an answer,
// not an error; a *contract.StateConflictError is. It panics when s is nil.
//
// The returned store has the [contract.RunKeeper] methods too, traced the
// same way (delete_run_fenced, list_run_versions, get_run_version,
// fork_run), and [contract.AsRunKeeper] finds them exactly when it finds
// those of s: through the wrapper as without it. A fenced write (a
// non-zero Run.Fence, Patch.Fence or DeleteRunFenced fence) carries its
// fence in adk.run.fence. A write fenced out (a *contract.StaleFenceError)
// is treated as a conflict is, an error span with its error.type, and
// says more: the run's fence in adk.run.fence.stored, and one more in the
// adk.run.fenced_out counter (by db.operation.name). GetRunVersion and
// ListRunVersions answer ErrNotFound as GetRun does: an answer, not an
// error.
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
	fenced, err := m.Int64Counter(MetricFencedOut,
		metric.WithDescription("Run writes refused because a newer execution had written the run (its fence was higher)."),
		metric.WithUnit("{write}"))
	if err != nil {
		otel.Handle(err)
		fenced = noop.Int64Counter{}
	}
	return &state{inner: s, tracer: cfg.tracer(), duration: h, fenced: fenced}
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
	ctx, end := w.start(ctx, opPutRun, fenceAttrs(run.Fence, TenantKey.String(run.Tenant), RunIDKey.String(run.ID))...)
	out, err := w.inner.PutRun(ctx, run)
	end(out, err)
	return out, err
}

// PatchRun implements [contract.StateStore].
func (w *state) PatchRun(ctx context.Context, tenant, id string, patch contract.Patch) (*contract.Run, error) {
	ctx, end := w.start(ctx, opPatchRun, fenceAttrs(patch.Fence, TenantKey.String(tenant), RunIDKey.String(id))...)
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

// KeepsRuns reports whether the wrapped store's [contract.RunKeeper]
// methods answer, so that [contract.AsRunKeeper] says of the wrapper what
// it says of the store it wraps.
func (w *state) KeepsRuns() bool {
	_, ok := contract.AsRunKeeper(w.inner)
	return ok
}

// keeper returns the wrapped store's RunKeeper methods. A store without
// them gets an error wrapping errors.ErrUnsupported, as a StateFront whose
// driver has none answers.
func (w *state) keeper() (contract.RunKeeper, error) {
	if k, ok := w.inner.(contract.RunKeeper); ok {
		return k, nil
	}
	return nil, fmt.Errorf("adkotel: the wrapped state store (%T) has no RunKeeper: %w", w.inner, errors.ErrUnsupported)
}

// DeleteRunFenced implements [contract.RunKeeper].
func (w *state) DeleteRunFenced(ctx context.Context, tenant, id string, fence int64) error {
	ctx, end := w.start(ctx, opDeleteRunFenced, fenceAttrs(fence, TenantKey.String(tenant), RunIDKey.String(id))...)
	k, err := w.keeper()
	if err == nil {
		err = k.DeleteRunFenced(ctx, tenant, id, fence)
	}
	end(nil, err)
	return err
}

// ListRunVersions implements [contract.RunKeeper].
func (w *state) ListRunVersions(ctx context.Context, tenant, id string, page contract.PageRequest) (contract.RunVersionPage, error) {
	ctx, end := w.start(ctx, opListRunVersions, TenantKey.String(tenant), RunIDKey.String(id))
	k, err := w.keeper()
	var out contract.RunVersionPage
	if err == nil {
		out, err = k.ListRunVersions(ctx, tenant, id, page)
	}
	end(nil, err)
	return out, err
}

// GetRunVersion implements [contract.RunKeeper].
func (w *state) GetRunVersion(ctx context.Context, tenant, id string, version int64) (*contract.Run, error) {
	ctx, end := w.start(ctx, opGetRunVersion, TenantKey.String(tenant), RunIDKey.String(id), RunVersionKey.Int64(version))
	k, err := w.keeper()
	var out *contract.Run
	if err == nil {
		out, err = k.GetRunVersion(ctx, tenant, id, version)
	}
	end(nil, err)
	return out, err
}

// ForkRun implements [contract.RunKeeper]. Its span carries the version
// forked in adk.run.version and the new run's id in adk.run.new_id.
func (w *state) ForkRun(ctx context.Context, tenant, id string, version int64, newID string) (*contract.Run, error) {
	ctx, end := w.start(ctx, opForkRun, TenantKey.String(tenant), RunIDKey.String(id), RunVersionKey.Int64(version), RunNewIDKey.String(newID))
	k, err := w.keeper()
	var out *contract.Run
	if err == nil {
		out, err = k.ForkRun(ctx, tenant, id, version, newID)
	}
	end(nil, err)
	return out, err
}

// fenceAttrs appends the write's fence to attrs when it has one.
func fenceAttrs(fence int64, attrs ...attribute.KeyValue) []attribute.KeyValue {
	if fence != 0 {
		attrs = append(attrs, FenceKey.Int64(fence))
	}
	return attrs
}

// start opens the span of one call and returns the func that closes it
// and records its duration. A run passed to that func sets adk.run.version
// (the writes pass the run they stored, the reads nil).
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
		case isRead(op) && errors.Is(err, contract.ErrNotFound):
			// a miss is an answer
		default:
			recordError(span, err)
			mattrs = append(mattrs, semconv.ErrorType(err))
			if stale, ok := errors.AsType[*contract.StaleFenceError](err); ok {
				span.SetAttributes(StoredFenceKey.Int64(stale.Stored))
				w.fenced.Add(ctx, 1, metric.WithAttributes(opAttr))
			}
		}
		span.End()
		w.duration.Record(ctx, time.Since(begin).Seconds(), metric.WithAttributes(mattrs...))
	}
}

// isRead reports whether op reads one run or its versions, for which
// ErrNotFound is an answer.
func isRead(op string) bool {
	return op == opGetRun || op == opGetRunVersion || op == opListRunVersions
}
