package adkotel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

func TestWrapStateSpans(t *testing.T) {
	r := newRig(t, policy.Policy{})
	st := adkotel.WrapState(r.store, r.opts...)
	ctx := context.Background()

	run, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r1", Session: "s", Data: []byte(`{"a":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	put := r.one(t, "put_run")
	wantKind(t, put, trace.SpanKindClient)
	wantAttrs(t, put, semconv.DBOperationName("put_run"), adkotel.TenantKey.String("acme"),
		adkotel.RunIDKey.String("r1"), adkotel.RunVersionKey.Int64(run.Version))

	if _, err := st.PatchRun(ctx, "acme", "r1", contract.Patch{Counters: contract.Counters{Iterations: 1}}); err != nil {
		t.Fatal(err)
	}
	wantAttrs(t, r.one(t, "patch_run"), adkotel.RunVersionKey.Int64(run.Version+1))

	// A stale put is an error span with the conflict's type.
	if _, err := st.PutRun(ctx, *run); !errors.As(err, new(*contract.StateConflictError)) {
		t.Fatalf("stale put: %v", err)
	}
	stale := r.ended("put_run")[1]
	if stale.Status().Code != codes.Error {
		t.Errorf("conflict not an error span")
	}
	wantAttrs(t, stale, semconv.ErrorTypeKey.String("*contract.StateConflictError"))

	// A miss is an answer.
	if _, err := st.GetRun(ctx, "acme", "nope"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatal(err)
	}
	if g := r.one(t, "get_run"); g.Status().Code == codes.Error {
		t.Errorf("a GetRun miss is not an error")
	}
	if _, err := st.ListRuns(ctx, "acme", contract.PageRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ListSessionRuns(ctx, "acme", "s", contract.PageRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteRun(ctx, "acme", "r1"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"list_runs", "list_session_runs", "delete_run"} {
		wantAttrs(t, r.one(t, name), semconv.DBOperationName(name), adkotel.TenantKey.String("acme"))
	}
	if err := st.DeleteRun(ctx, "acme", "r1"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatal(err)
	}
	if r.ended("delete_run")[1].Status().Code != codes.Error {
		t.Errorf("deleting a missing run is an error span")
	}

	rm := r.collect(t)
	if n := histCount(t, rm, adkotel.MetricStateDuration, semconv.DBOperationName("put_run")); n != 2 {
		t.Errorf("state duration has %d put_run points, want 2", n)
	}
	if n := histCount(t, rm, adkotel.MetricStateDuration, semconv.DBOperationName("put_run"), semconv.ErrorTypeKey.String("*contract.StateConflictError")); n != 1 {
		t.Errorf("state duration has %d failed put_run points, want 1", n)
	}
	u, ok := st.(interface{ Unwrap() contract.StateStore })
	if !ok || u.Unwrap() != contract.StateStore(r.store) {
		t.Errorf("Unwrap does not return the store")
	}
}
