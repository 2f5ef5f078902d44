package adkotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// plainState is a state store with no RunKeeper methods at all.
type plainState struct{ contract.StateStore }

// keeperRig is a rig whose memstore keeps versions of runs.
func keeperRig(t *testing.T) (*rig, contract.StateStore) {
	t.Helper()
	r := newRig(t, defaultPolicy)
	r.store = memstore.New(r.clock, memstore.Settings{Runs: contract.RunPolicy{KeepVersions: 10}})
	return r, adkotel.WrapState(r.store, r.opts...)
}

// AsRunKeeper answers through the wrapper what it answers without it.
func TestWrapStateReportsRunKeeper(t *testing.T) {
	ms := memstore.New(nil, memstore.Settings{Runs: contract.RunPolicy{KeepVersions: 10}})
	if _, ok := contract.AsRunKeeper(ms); !ok {
		t.Fatal("memstore has no RunKeeper: the wrapper's forwarding cannot be checked")
	}
	for _, c := range []struct {
		name  string
		inner contract.StateStore
		want  bool
	}{
		{"memstore", ms, true},
		{"a store without the methods", plainState{ms}, false},
		{"a front whose driver has none", contract.NewStateFront(plainState{ms}, 0, contract.RunPolicy{}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := contract.AsRunKeeper(c.inner); ok != c.want {
				t.Fatalf("unwrapped AsRunKeeper = %v, want %v", ok, c.want)
			}
			r := newRig(t, defaultPolicy)
			w := adkotel.WrapState(c.inner, r.opts...)
			_, ok := contract.AsRunKeeper(w)
			if ok != c.want {
				t.Fatalf("wrapped AsRunKeeper = %v, want %v", ok, c.want)
			}
			if ok {
				return
			}
			// Called anyway, the methods answer ErrUnsupported, in an
			// error span.
			k, _ := w.(contract.RunKeeper)
			if _, err := k.GetRunVersion(context.Background(), "acme", "r1", 1); !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("GetRunVersion of a store without versions: %v, want ErrUnsupported", err)
			}
			if s := r.one(t, "get_run_version"); s.Status().Code != codes.Error {
				t.Errorf("an unsupported call is not an error span")
			}
		})
	}
}

// Fenced writes carry their fence; a fenced-out write is an error span
// like a conflict, names the run's fence and is counted.
func TestWrapStateFencedWrites(t *testing.T) {
	r, st := keeperRig(t)
	ctx := context.Background()

	run, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r1", Data: []byte(`{"a":1}`), Fence: 7})
	if err != nil {
		t.Fatal(err)
	}
	wantAttrs(t, r.one(t, "put_run"), adkotel.FenceKey.Int64(7), adkotel.RunVersionKey.Int64(run.Version))
	if _, err := st.PatchRun(ctx, "acme", "r1", contract.Patch{Status: "running", Fence: 9}); err != nil {
		t.Fatal(err)
	}
	wantAttrs(t, r.one(t, "patch_run"), adkotel.FenceKey.Int64(9), adkotel.RunVersionKey.Int64(run.Version+1))

	// An unfenced write says nothing of fences.
	if _, err := st.PatchRun(ctx, "acme", "r1", contract.Patch{Counters: contract.Counters{Iterations: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := attrOf(r.ended("patch_run")[1], adkotel.FenceKey); ok {
		t.Errorf("an unfenced patch carries %s", adkotel.FenceKey)
	}

	// Stale: fence 8 after 9 wrote the run, a put, a patch and a delete.
	cur, err := st.GetRun(ctx, "acme", "r1")
	if err != nil {
		t.Fatal(err)
	}
	stale := *cur
	stale.Fence = 8
	if _, err := st.PutRun(ctx, stale); !errors.Is(err, contract.ErrFenced) {
		t.Fatalf("stale put: %v, want ErrFenced", err)
	}
	if _, err := st.PatchRun(ctx, "acme", "r1", contract.Patch{Status: "late", Fence: 8}); !errors.Is(err, contract.ErrFenced) {
		t.Fatalf("stale patch: %v, want ErrFenced", err)
	}
	k, ok := contract.AsRunKeeper(st)
	if !ok {
		t.Fatal("the wrapped memstore has no RunKeeper")
	}
	if err := k.DeleteRunFenced(ctx, "acme", "r1", 8); !errors.Is(err, contract.ErrFenced) {
		t.Fatalf("stale delete: %v, want ErrFenced", err)
	}
	for _, s := range []struct {
		name string
		i    int
	}{{"put_run", 1}, {"patch_run", 2}, {"delete_run_fenced", 0}} {
		span := r.ended(s.name)[s.i]
		if span.Status().Code != codes.Error {
			t.Errorf("%s fenced out: status %v, want an error, as a conflict is", s.name, span.Status().Code)
		}
		wantAttrs(t, span, adkotel.FenceKey.Int64(8), adkotel.StoredFenceKey.Int64(9),
			semconv.ErrorTypeKey.String("*contract.StaleFenceError"))
	}
	// A conflict is not a fenced-out write: it names no stored fence.
	old := *run
	old.Fence = 9
	if _, err := st.PutRun(ctx, old); !errors.As(err, new(*contract.StateConflictError)) {
		t.Fatalf("old version: %v, want a conflict", err)
	}
	if _, ok := attrOf(r.ended("put_run")[2], adkotel.StoredFenceKey); ok {
		t.Errorf("a conflict carries %s", adkotel.StoredFenceKey)
	}
	if err := k.DeleteRunFenced(ctx, "acme", "r1", 9); err != nil {
		t.Fatalf("delete under the run's fence: %v", err)
	}
	wantAttrs(t, r.ended("delete_run_fenced")[1], adkotel.FenceKey.Int64(9))

	rm := r.collect(t)
	for op, want := range map[string]int64{"put_run": 1, "patch_run": 1, "delete_run_fenced": 1} {
		if n := sumInt(t, rm, adkotel.MetricFencedOut, semconv.DBOperationName(op)); n != want {
			t.Errorf("%s: %s = %d, want %d", adkotel.MetricFencedOut, op, n, want)
		}
	}
	if n := histCount(t, rm, adkotel.MetricStateDuration, semconv.DBOperationName("delete_run_fenced")); n != 2 {
		t.Errorf("state duration has %d delete_run_fenced points, want 2", n)
	}
}

// The version reads and the fork are traced; a version not kept is an
// answer, as a GetRun miss is; forking onto an existing run is an error.
func TestWrapStateVersions(t *testing.T) {
	r, st := keeperRig(t)
	ctx := context.Background()
	run, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r1", Data: []byte(`{"step":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	run.Data = []byte(`{"step":2}`)
	if run, err = st.PutRun(ctx, *run); err != nil {
		t.Fatal(err)
	}
	k, ok := contract.AsRunKeeper(st)
	if !ok {
		t.Fatal("the wrapped memstore has no RunKeeper")
	}
	page, err := k.ListRunVersions(ctx, "acme", "r1", contract.PageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Versions) != 2 || page.Versions[0].Version != run.Version {
		t.Fatalf("versions through the wrapper: %+v, want the current run then the first", page.Versions)
	}
	wantAttrs(t, r.one(t, "list_run_versions"), semconv.DBOperationName("list_run_versions"),
		adkotel.TenantKey.String("acme"), adkotel.RunIDKey.String("r1"))

	first := page.Versions[1].Version
	v, err := k.GetRunVersion(ctx, "acme", "r1", first)
	if err != nil || string(v.Data) != `{"step":1}` {
		t.Fatalf("GetRunVersion(%d): %v %v", first, v, err)
	}
	if _, err := k.GetRunVersion(ctx, "acme", "r1", run.Version+5); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("a version never written: %v, want ErrNotFound", err)
	}
	if _, err := k.ListRunVersions(ctx, "acme", "nope", contract.PageRequest{}); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("versions of a missing run: %v, want ErrNotFound", err)
	}
	gets := r.ended("get_run_version")
	wantAttrs(t, gets[0], adkotel.RunVersionKey.Int64(first))
	for _, s := range append(gets, r.ended("list_run_versions")[1]) {
		if s.Status().Code == codes.Error {
			t.Errorf("%s: a miss is an answer, not an error span", s.Name())
		}
	}

	fork, err := k.ForkRun(ctx, "acme", "r1", first, "r2")
	if err != nil || string(fork.Data) != `{"step":1}` || fork.Version != 1 {
		t.Fatalf("fork: %+v %v", fork, err)
	}
	if _, err := k.ForkRun(ctx, "acme", "r1", first, "r1"); !errors.As(err, new(*contract.StateConflictError)) {
		t.Fatalf("fork onto an existing run: %v, want a conflict", err)
	}
	forks := r.ended("fork_run")
	wantAttrs(t, forks[0], adkotel.RunIDKey.String("r1"), adkotel.RunVersionKey.Int64(first),
		adkotel.RunNewIDKey.String("r2"))
	if forks[0].Status().Code == codes.Error || forks[1].Status().Code != codes.Error {
		t.Errorf("fork statuses %v, %v: want ok, then an error", forks[0].Status().Code, forks[1].Status().Code)
	}
	rm := r.collect(t)
	for _, c := range []struct {
		op   string
		want uint64
		more []attribute.KeyValue
	}{
		{"get_run_version", 2, nil},
		{"list_run_versions", 2, nil},
		{"fork_run", 2, nil},
		{"fork_run", 1, []attribute.KeyValue{semconv.ErrorTypeKey.String("*contract.StateConflictError")}},
	} {
		if n := histCount(t, rm, adkotel.MetricStateDuration, append(c.more, semconv.DBOperationName(c.op))...); n != c.want {
			t.Errorf("state duration has %d %s points %v, want %d", n, c.op, c.more, c.want)
		}
	}
}
