package runner_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
)

// fencing keeps the fence rule of contract.RunPolicy over the runs of a
// StateStore (the highest fence that wrote each run, and a refusal,
// writing nothing, for a lower one) and records the fence of every write
// that lands, which a store does not tell.
type fencing struct {
	contract.StateStore
	mu     sync.Mutex
	fences map[[2]string]int64
	// writes records the fence of every write that landed.
	writes []int64
}

func newFencing(s contract.StateStore) *fencing {
	return &fencing{StateStore: s, fences: map[[2]string]int64{}}
}

// admit checks fence against the run's and, when the write may go on,
// returns the fence the run will hold after it.
func (f *fencing) admit(tenant, id string, fence int64) (int64, error) {
	stored := f.fences[[2]string{tenant, id}]
	if fence != 0 && fence < stored {
		return 0, &contract.StaleFenceError{Tenant: tenant, ID: id, Fence: fence, Stored: stored}
	}
	return max(stored, fence), nil
}

func (f *fencing) GetRun(ctx context.Context, tenant, id string) (*contract.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.StateStore.GetRun(ctx, tenant, id)
	if err == nil {
		r.Fence = f.fences[[2]string{tenant, id}]
	}
	return r, err
}

func (f *fencing) PutRun(ctx context.Context, run contract.Run) (*contract.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	next := run.Fence
	if _, err := f.StateStore.GetRun(ctx, run.Tenant, run.ID); err == nil {
		var err error
		if next, err = f.admit(run.Tenant, run.ID, run.Fence); err != nil {
			return nil, err
		}
	}
	out, err := f.StateStore.PutRun(ctx, run)
	if err != nil {
		return nil, err
	}
	f.fences[[2]string{run.Tenant, run.ID}] = next
	f.writes = append(f.writes, run.Fence)
	out.Fence = next
	return out, nil
}

func (f *fencing) PatchRun(ctx context.Context, tenant, id string, p contract.Patch) (*contract.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.StateStore.GetRun(ctx, tenant, id); err != nil {
		return nil, err
	}
	next, err := f.admit(tenant, id, p.Fence)
	if err != nil {
		return nil, err
	}
	out, err := f.StateStore.PatchRun(ctx, tenant, id, p)
	if err != nil {
		return nil, err
	}
	f.fences[[2]string{tenant, id}] = next
	f.writes = append(f.writes, p.Fence)
	out.Fence = next
	return out, nil
}

func (f *fencing) DeleteRunFenced(ctx context.Context, tenant, id string, fence int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.StateStore.GetRun(ctx, tenant, id); err != nil {
		return err
	}
	if _, err := f.admit(tenant, id, fence); err != nil {
		return err
	}
	delete(f.fences, [2]string{tenant, id})
	f.writes = append(f.writes, fence)
	return f.StateStore.DeleteRun(ctx, tenant, id)
}

func (f *fencing) DeleteRun(ctx context.Context, tenant, id string) error {
	return f.DeleteRunFenced(ctx, tenant, id, 0)
}

func (f *fencing) ListRunVersions(context.Context, string, string, contract.PageRequest) (contract.RunVersionPage, error) {
	return contract.RunVersionPage{}, errors.ErrUnsupported
}

func (f *fencing) GetRunVersion(context.Context, string, string, int64) (*contract.Run, error) {
	return nil, errors.ErrUnsupported
}

func (f *fencing) ForkRun(context.Context, string, string, int64, string) (*contract.Run, error) {
	return nil, errors.ErrUnsupported
}

func (f *fencing) landed() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.writes...)
}

// plainState is a StateStore with no RunKeeper.
type plainState struct{ contract.StateStore }

// handlerResult is what a test's handler saw, sent back to the test.
type handlerResult struct {
	lease contract.Lease
	fence int64 // Fence(ctx) when the handler wrote
	run   *contract.Run
	err   error
}

func TestFenceOutsideAHandler(t *testing.T) {
	if tok, ok := runner.Fence(context.Background()); ok || tok != 0 {
		t.Errorf("Fence outside a handler = %d, %v; want 0, false", tok, ok)
	}
	s := newStore(newClock())
	if got := runner.Runs(context.Background(), s); got != contract.StateStore(s) {
		t.Errorf("Runs outside a handler = %T; want the store itself", got)
	}
}

// A handler's writes through Runs carry the claim's token, and a fence
// the caller set goes as it is.
func TestRunsFencesWithTheLease(t *testing.T) {
	clock := newClock()
	q := newStore(clock)
	state := newFencing(newStore(clock))
	ctx := context.Background()
	if _, err := state.PutRun(ctx, contract.Run{Tenant: "t", ID: "run-a", Status: "new"}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, item("t", "a")); err != nil {
		t.Fatal(err)
	}
	got := make(chan handlerResult, 1)
	cfg := fastConfig(clock)
	cfg.LeaseFor, cfg.HeartbeatEvery = 3*time.Hour, time.Hour // no heartbeat during the test
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		fence, ok := runner.Fence(ctx)
		if !ok {
			t.Error("Fence in a handler: not ok")
		}
		runs := runner.Runs(ctx, state)
		if _, ok := contract.AsRunKeeper(runs); !ok {
			t.Error("Runs over a RunKeeper: AsRunKeeper finds none")
		}
		run, err := runs.PatchRun(ctx, "t", "run-a", contract.Patch{Status: "patched", Counters: contract.Counters{Iterations: 1}})
		if err == nil {
			run, err = runs.PutRun(ctx, contract.Run{Tenant: "t", ID: "run-a", Version: run.Version, Status: "put"})
		}
		if err == nil {
			// An explicit fence is the caller's: sent unchanged.
			_, err = runs.PutRun(ctx, contract.Run{Tenant: "t", ID: "run-b", Fence: fence + 100})
		}
		got <- handlerResult{lease: l, fence: fence, run: run, err: err}
		return err
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	res := <-got
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.fence != res.lease.Token || res.fence <= 0 {
		t.Errorf("Fence = %d; want the claim's token %d", res.fence, res.lease.Token)
	}
	if res.run.Fence != res.lease.Token || res.run.Status != "put" {
		t.Errorf("run after the handler's writes: fence %d, status %q; want fence %d, status put", res.run.Fence, res.run.Status, res.lease.Token)
	}
	if w, want := state.landed(), []int64{0, res.lease.Token, res.lease.Token, res.lease.Token + 100}; !equal(w, want) {
		t.Errorf("fences of the writes that landed = %v; want %v (the seed unfenced, two by the view, one explicit)", w, want)
	}
}

// After a heartbeat, Fence and Runs use the token it issued.
func TestRunsUsesTheHeartbeatedToken(t *testing.T) {
	clock := newClock()
	q := newStore(clock)
	state := newStore(clock) // memstore keeps fences itself
	ctx := context.Background()
	if _, err := state.PutRun(ctx, contract.Run{Tenant: "t", ID: "run-a"}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, item("t", "a")); err != nil {
		t.Fatal(err)
	}
	got := make(chan handlerResult, 1)
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		fence, err := nextToken(ctx, l.Token)
		var run *contract.Run
		if err == nil {
			run, err = runner.Runs(ctx, state).PatchRun(ctx, "t", "run-a", contract.Patch{Status: "after a heartbeat"})
		}
		if err == nil {
			// The claim's token is below the run's fence now.
			_, err = state.PatchRun(ctx, "t", "run-a", contract.Patch{Status: "claim token", Fence: l.Token})
			if _, ok := errors.AsType[*contract.StaleFenceError](err); ok {
				err = nil
			} else {
				err = errors.New("a write under the claim's token landed after one under the heartbeat's")
			}
		}
		got <- handlerResult{lease: l, fence: fence, run: run, err: err}
		return nil
	}, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	res := <-got
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.fence <= res.lease.Token {
		t.Errorf("Fence after a heartbeat = %d; want above the claim's token %d", res.fence, res.lease.Token)
	}
	if res.run.Fence != res.fence {
		t.Errorf("run fence = %d; want the heartbeated token %d", res.run.Fence, res.fence)
	}
}

// A handler whose lease was lost (the clock passed its expiry without a
// heartbeat, the queue reaped it and another worker claimed the item and
// wrote the run) has its later writes refused, and they change nothing.
func TestRunsRefusesALostLeasesWrites(t *testing.T) {
	clock := newClock()
	q := newStore(clock)
	state := newStore(clock) // memstore keeps fences itself
	ctx := context.Background()
	if err := q.Enqueue(ctx, item("t", "a")); err != nil {
		t.Fatal(err)
	}
	wrote, resume := make(chan contract.Lease, 1), make(chan struct{})
	var resumeOnce sync.Once
	release := func() { resumeOnce.Do(func() { close(resume) }) }
	got := make(chan handlerResult, 1)
	cfg := fastConfig(clock)
	cfg.Concurrency = 1                                       // the stalled handler's slot is the only one: no claim of the item again
	cfg.LeaseFor, cfg.HeartbeatEvery = 3*time.Hour, time.Hour // a stalled worker: no heartbeat
	var errs errorLog
	cfg.OnError = errs.add
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		runs := runner.Runs(ctx, state)
		if _, err := runs.PutRun(ctx, contract.Run{Tenant: "t", ID: "run-a", Status: "first"}); err != nil {
			got <- handlerResult{err: err}
			return err
		}
		wrote <- l
		<-resume
		res := handlerResult{lease: l}
		res.run, res.err = runs.PatchRun(ctx, "t", "run-a", contract.Patch{Status: "stale", Counters: contract.Counters{Iterations: 1}})
		if derr := runs.DeleteRun(ctx, "t", "run-a"); !errors.Is(derr, contract.ErrFenced) {
			t.Errorf("the lost lease's DeleteRun: %v; want a *contract.StaleFenceError", derr)
		}
		got <- res
		return res.err
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	t.Cleanup(release) // before the runner's stop, which waits for the handler
	first := <-wrote

	clock.Advance(cfg.LeaseFor + time.Second)
	if n, err := q.Reap(ctx, contract.DefaultQueue); err != nil || n != 1 {
		t.Fatalf("Reap = %d, %v; want the stalled lease", n, err)
	}
	clock.Advance(time.Minute) // past the retry's backoff
	other, err := q.Claim(ctx, contract.ClaimRequest{Worker: "other", LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	newer := other[0].Token
	if newer <= first.Token {
		t.Fatalf("the new claim's token %d is not above the lost lease's %d", newer, first.Token)
	}
	if _, err := runner.Runs(ctx, state).PatchRun(ctx, "t", "run-a", contract.Patch{Status: "by other", Fence: newer}); err != nil {
		t.Fatal(err)
	}

	release()
	res := <-got
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	se, ok := errors.AsType[*contract.StaleFenceError](res.err)
	if !ok {
		t.Fatalf("the lost lease's PatchRun: %v, %v; want a *contract.StaleFenceError", res.run, res.err)
	}
	if se.Fence != first.Token || se.Stored != newer {
		t.Errorf("StaleFenceError{Fence: %d, Stored: %d}; want {%d, %d}", se.Fence, se.Stored, first.Token, newer)
	}
	run, err := state.GetRun(ctx, "t", "run-a")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "by other" || run.Counters.Iterations != 0 || run.Fence != newer {
		t.Errorf("run after the refused writes: status %q, iterations %d, fence %d; want the other worker's (by other, 0, %d)", run.Status, run.Counters.Iterations, run.Fence, newer)
	}
	// Settling the lost lease is refused too; the runner reports it.
	waitFor(t, "the refused settle's report", func() bool {
		for _, e := range errs.all() {
			if _, ok := errors.AsType[*contract.LeaseLostError](e); ok {
				return true
			}
		}
		return false
	})
}

// stalling refuses the first fenced patch it is sent as a write of a
// newer fence would: it waits for the handler's next heartbeat, lands a
// patch under that token itself (another goroutine of the same handler),
// then passes the old one on.
type stalling struct {
	*fencing
	once sync.Once
	ctx  context.Context // the handler's
	t    *testing.T
	sent []int64
	mu   sync.Mutex
}

func (s *stalling) PatchRun(ctx context.Context, tenant, id string, p contract.Patch) (*contract.Run, error) {
	s.mu.Lock()
	s.sent = append(s.sent, p.Fence)
	s.mu.Unlock()
	s.once.Do(func() {
		tok, err := nextToken(s.ctx, p.Fence)
		if err == nil {
			_, err = s.fencing.PatchRun(ctx, tenant, id, contract.Patch{Status: "other goroutine", Fence: tok})
		}
		if err != nil {
			s.t.Error(err)
		}
	})
	return s.fencing.PatchRun(ctx, tenant, id, p)
}

// A write refused under the lease's own newer token (a heartbeat came
// between reading the fence and the write, and another write of the
// handler carried the new one) is sent again with the latest token.
func TestRunsSendsAgainPastItsOwnNewerFence(t *testing.T) {
	clock := newClock()
	q := newStore(clock)
	inner := newFencing(newStore(clock))
	ctx := context.Background()
	if _, err := inner.PutRun(ctx, contract.Run{Tenant: "t", ID: "run-a"}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, item("t", "a")); err != nil {
		t.Fatal(err)
	}
	got := make(chan handlerResult, 1)
	var st *stalling
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		st = &stalling{fencing: inner, ctx: ctx, t: t}
		run, err := runner.Runs(ctx, st).PatchRun(ctx, "t", "run-a", contract.Patch{Status: "handler"})
		fence, _ := runner.Fence(ctx)
		got <- handlerResult{lease: l, fence: fence, run: run, err: err}
		return err
	}, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	res := <-got
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if res.err != nil {
		t.Fatalf("the handler's patch: %v; want it sent again and landed", res.err)
	}
	if len(st.sent) != 2 || st.sent[0] != res.lease.Token || st.sent[1] <= st.sent[0] {
		t.Errorf("fences sent = %v; want the claim's %d, then a newer one", st.sent, res.lease.Token)
	}
	if res.run.Status != "handler" || res.run.Fence != st.sent[1] {
		t.Errorf("run: status %q fence %d; want the handler's patch under %d", res.run.Status, res.run.Fence, st.sent[1])
	}
}

// Over a store without a RunKeeper the view has none either: DeleteRun
// is the store's, the RunKeeper methods answer errors.ErrUnsupported.
func TestRunsOverAStoreWithoutRunKeeper(t *testing.T) {
	clock := newClock()
	q := newStore(clock)
	state := plainState{newStore(clock)}
	ctx := context.Background()
	if _, err := state.PutRun(ctx, contract.Run{Tenant: "t", ID: "run-a"}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, item("t", "a")); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		runs := runner.Runs(ctx, state)
		if _, ok := contract.AsRunKeeper(runs); ok {
			t.Error("AsRunKeeper finds one in a view of a store without")
		}
		if _, err := runs.(contract.RunKeeper).GetRunVersion(ctx, "t", "run-a", 1); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("GetRunVersion: %v; want errors.ErrUnsupported", err)
		}
		got <- runs.DeleteRun(ctx, "t", "run-a")
		return nil
	}, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	derr := <-got
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if derr != nil {
		t.Fatalf("DeleteRun: %v", derr)
	}
	if _, err := state.GetRun(ctx, "t", "run-a"); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("run after DeleteRun: %v; want ErrNotFound", err)
	}
}

// nextToken waits, in a handler, for a heartbeat to issue a token above
// after, and returns it.
func nextToken(ctx context.Context, after int64) (int64, error) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if tok, _ := runner.Fence(ctx); tok > after {
			return tok, nil
		}
	}
	return 0, fmt.Errorf("no heartbeat issued a token above %d in 10s", after)
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
