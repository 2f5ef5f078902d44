package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// The state scenario (issue 19) measures PutRun and PatchRun at a fixed
// worker count on each of our backings' state stores, in interleaved
// pairs of four variants: unfenced against fenced writes (the target:
// fenced ≥ 0.95×), and no history against KeepVersions 10 (the target:
// history on ≥ 0.75×).
const (
	// stateRunsPerWorker is how many runs each worker writes, in turn.
	stateRunsPerWorker = 4
	// stateBlobBytes is about the size of every PutRun's Data.
	stateBlobBytes = 1024
	// stateKeep is the KeepVersions of the history side.
	stateKeep = 10
	// stateFenceBase is the fence of worker 0's runs on the fenced side
	// (worker i writes under stateFenceBase+i, as an execution writes
	// under its lease's token).
	stateFenceBase = 1000
)

// stateInstance is one freshly opened state store of one of our backings.
type stateInstance struct {
	s     contract.StateStore
	close func(ctx context.Context) error
}

// stateOp is the call the state scenario times.
type stateOp string

const (
	opPut   stateOp = "PutRun"
	opPatch stateOp = "PatchRun"
)

// stateVariant is one side of a pair: whether writes carry a fence, and
// the policy the store is opened with.
type stateVariant struct {
	label  string
	fenced bool
	policy contract.RunPolicy
}

// The four variants.
var (
	stateUnfenced    = stateVariant{label: "unfenced"}
	stateFenced      = stateVariant{label: "fenced", fenced: true}
	stateHistoryOff  = stateVariant{label: "history off"}
	stateHistoryKeep = stateVariant{label: fmt.Sprintf("KeepVersions %d", stateKeep), policy: contract.RunPolicy{KeepVersions: stateKeep}}
)

// stateSupport is what a backing's state store does of issue 19, as
// probed on a fresh store: a backing whose fences or versions have not
// landed yet gets a row saying so instead of a ratio that measures
// nothing.
type stateSupport struct {
	fences, versions bool
	// why says what the probe saw of each missing part.
	whyFences, whyVersions string
}

// probeState opens the backing's state store once, keeping versions, and
// checks that a write under a lower fence is refused and that the run's
// earlier version can be read back.
func probeState(ctx context.Context, b *ourBacking) (stateSupport, error) {
	var sup stateSupport
	inst, err := b.openState(ctx, 1, contract.RunPolicy{KeepVersions: stateKeep})
	if err != nil {
		return sup, err
	}
	defer func() { _ = inst.close(context.Background()) }()
	run, err := inst.s.PutRun(ctx, contract.Run{Tenant: tenantName(0), ID: "probe", Data: []byte(`{"v":1}`), Fence: 5})
	if err != nil {
		return sup, fmt.Errorf("probe: fenced create: %w", err)
	}
	stale := *run
	stale.Data, stale.Fence = []byte(`{"v":2}`), 4
	switch _, err := inst.s.PutRun(ctx, stale); {
	case errors.Is(err, contract.ErrFenced):
		sup.fences = true
	case err == nil:
		sup.whyFences = "no fences on this backing yet: a PutRun under fence 4 landed on a run fence 5 wrote"
		run.Version++ // it landed
	default:
		return sup, fmt.Errorf("probe: stale put: %w", err)
	}
	k, ok := contract.AsRunKeeper(inst.s)
	if !ok {
		sup.whyVersions = "no versions on this backing yet: its state store has no RunKeeper (contract.AsRunKeeper)"
		return sup, nil
	}
	run.Data, run.Fence = []byte(`{"v":3}`), 5
	if _, err := inst.s.PutRun(ctx, *run); err != nil {
		return sup, fmt.Errorf("probe: second put: %w", err)
	}
	if v, err := k.GetRunVersion(ctx, tenantName(0), "probe", 1); err != nil || string(v.Data) != `{"v":1}` {
		sup.whyVersions = fmt.Sprintf("versions not kept on this backing yet: version 1 of a run written twice under KeepVersions %d reads back as %v, %v", stateKeep, v, err)
		return sup, nil
	}
	sup.versions = true
	return sup, nil
}

// stateScenario runs the state scenario on one of our backings.
func (h *harness) stateScenario(ctx context.Context, b *ourBacking, conc int) {
	sup, err := probeState(ctx, b)
	if err != nil {
		h.add(row{Scenario: "state", Backing: b.name(), Concurrency: conc, Metric: "probe", Error: err.Error()})
		return
	}
	for _, op := range []stateOp{opPut, opPatch} {
		if sup.fences {
			h.statePairs(ctx, b, conc, op, stateUnfenced, stateFenced, "vs unfenced", 0.95)
		} else {
			h.unsupported(b, conc, fmt.Sprintf("%s %s", op, stateFenced.label), sup.whyFences)
		}
		if sup.versions {
			h.statePairs(ctx, b, conc, op, stateHistoryOff, stateHistoryKeep, "vs history off", 0.75)
		} else {
			h.unsupported(b, conc, fmt.Sprintf("%s %s", op, stateHistoryKeep.label), sup.whyVersions)
		}
	}
}

// unsupported adds the row of a variant the backing cannot run yet.
func (h *harness) unsupported(b backing, conc int, metric, why string) {
	h.logf("  state     %-9s %s: %s", b.name(), metric, why)
	h.rows = append(h.rows, row{Scenario: "state", Backing: b.name(), Concurrency: conc, Metric: metric, Unit: "ops/s", Note: why})
}

// statePairs measures base and alt in cfg.pairs interleaved pairs, the
// order swapped in every other pair (base, alt; alt, base; ...) so a
// drift of the machine's load favours neither, and adds both rows: each
// the median of its sides, alt with the median of the pairs' ratios
// (alt / base) and its target.
func (h *harness) statePairs(ctx context.Context, b *ourBacking, conc int, op stateOp, base, alt stateVariant, ratioOf string, target float64) {
	pairs := max(1, h.cfg.pairs)
	var bases, alts []row
	var ratios []float64
	for i := range pairs {
		one, two := pairInTurn(i,
			func() row { return h.measureState(ctx, b, conc, op, base) },
			func() row { return h.measureState(ctx, b, conc, op, alt) })
		if one.Error != "" || two.Error != "" || one.Value == 0 {
			if one.Error != "" {
				h.add(one)
			}
			if two.Error != "" {
				h.add(two)
			}
			return
		}
		bases, alts = append(bases, one), append(alts, two)
		ratios = append(ratios, two.Value/one.Value)
	}
	median := func(rs []row) row {
		var vals []float64
		for _, r := range rs {
			vals = append(vals, r.Value)
		}
		sorted := slices.Clone(rs)
		slices.SortFunc(sorted, func(a, b row) int { return compareFloat(a.Value, b.Value) })
		m := sorted[len(sorted)/2]
		m.Rounds = vals
		return m
	}
	rb, ra := median(bases), median(alts)
	var shown []string
	for _, x := range ratios {
		shown = append(shown, fmt.Sprintf("%.2f", x))
	}
	slices.Sort(ratios)
	ra.Ratio, ra.RatioOf = ratios[len(ratios)/2], ratioOf
	ra.Target, ra.Met = fmt.Sprintf("≥ %.2f× %s", target, strings.TrimPrefix(ratioOf, "vs ")), ptr(ra.Ratio >= target)
	ra.Note = fmt.Sprintf("median of %d interleaved pairs (%s); %s", len(ratios), strings.Join(shown, ", "), ra.Note)
	rb.Note = fmt.Sprintf("median of %d; %s", len(bases), rb.Note)
	h.add(rb)
	h.add(ra)
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// stateRun is one run a worker writes and what it knows of it.
type stateRun struct {
	run   *contract.Run
	fence int64
}

// measureState opens a fresh store under v's policy, has conc workers
// create stateRunsPerWorker runs each and write each of them stateKeep+2
// times (so the history side starts with full histories, pruning as it
// goes), then times op for cfg.stateDuration: each worker writes its runs
// in turn, a PutRun with a new ~1 KiB blob at the version it holds, or a
// PatchRun that changes the status (so every patch keeps a version when
// history is on) and adds to a counter. Fenced writes carry the worker's
// fence. Afterwards it checks that the store did what the variant says:
// the runs carry the fence (or none), and the history side lists the run
// and its stateKeep earlier versions.
func (h *harness) measureState(ctx context.Context, b *ourBacking, conc int, op stateOp, v stateVariant) row {
	r := row{Scenario: "state", Backing: b.name(), Concurrency: conc, Metric: fmt.Sprintf("%s %s", op, v.label), Unit: "ops/s",
		Items: conc * stateRunsPerWorker}
	what := "the run's blob (~1 KiB) rewritten at its version"
	if op == opPatch {
		what = "the status changed and a counter added to"
	}
	r.Note = fmt.Sprintf("%d runs (%d per worker), %s", r.Items, stateRunsPerWorker, what)
	h.logf("state %s conc=%d %s %s", b.name(), conc, op, v.label)
	fail := func(err error) row {
		r.Error = err.Error()
		h.logf("  state %s %s: %v", b.name(), r.Metric, err)
		return r
	}
	inst, err := b.openState(ctx, conc, v.policy)
	if err != nil {
		return fail(fmt.Errorf("open: %w", err))
	}
	defer func() { _ = inst.close(context.Background()) }()

	blob := strings.Repeat("x", stateBlobBytes-40)
	runs := make([][]stateRun, conc)
	write := func(ctx context.Context, w int, sr *stateRun, step int) error {
		var out *contract.Run
		var err error
		switch op {
		case opPut:
			next := *sr.run
			next.Data = fmt.Appendf(nil, `{"step":%d,"pad":%q}`, step, blob)
			next.Fence = sr.fence
			out, err = inst.s.PutRun(ctx, next)
		case opPatch:
			out, err = inst.s.PatchRun(ctx, sr.run.Tenant, sr.run.ID, contract.Patch{
				Status: fmt.Sprintf("step-%d", step%2), Counters: contract.Counters{Iterations: 1}, Fence: sr.fence})
		}
		if err != nil {
			return err
		}
		sr.run = out
		return nil
	}
	// Create and warm up, untimed: every variant the same way.
	err = parallel(conc, func(w int) error {
		var fence int64
		if v.fenced {
			fence = int64(stateFenceBase + w)
		}
		for i := range stateRunsPerWorker {
			run, err := inst.s.PutRun(ctx, contract.Run{Tenant: tenantName(w), ID: fmt.Sprintf("run-%d", i), Session: "bench",
				Status: "step-1", Data: fmt.Appendf(nil, `{"step":0,"pad":%q}`, blob), Fence: fence})
			if err != nil {
				return err
			}
			runs[w] = append(runs[w], stateRun{run: run, fence: fence})
		}
		for step := range stateKeep + 2 {
			for i := range runs[w] {
				if err := write(ctx, w, &runs[w][i], step); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fail(fmt.Errorf("warm-up: %w", err))
	}
	runtime.GC()

	var ops atomic.Int64
	stop := make(chan struct{})
	t0 := time.Now()
	time.AfterFunc(h.cfg.stateDuration, func() { close(stop) })
	err = parallel(conc, func(w int) error {
		for step := stateKeep + 2; ; step++ {
			for i := range runs[w] {
				select {
				case <-stop:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				default:
				}
				if err := write(ctx, w, &runs[w][i], step); err != nil {
					return err
				}
				ops.Add(1)
			}
		}
	})
	elapsed := time.Since(t0)
	r.Processed, r.Seconds = ops.Load(), elapsed.Seconds()
	if err != nil {
		r.Errors = 1
		return fail(fmt.Errorf("%s: %w", op, err))
	}
	r.Value = float64(ops.Load()) / elapsed.Seconds()
	if err := checkState(ctx, inst.s, runs[0][0].run, v); err != nil {
		return fail(err)
	}
	return r
}

// checkState checks that the store kept what the variant says of one of
// the runs written: its fence, and (history on) its stateKeep earlier
// versions behind it, newest first.
func checkState(ctx context.Context, s contract.StateStore, last *contract.Run, v stateVariant) error {
	got, err := s.GetRun(ctx, last.Tenant, last.ID)
	if err != nil {
		return fmt.Errorf("read back %s/%s: %w", last.Tenant, last.ID, err)
	}
	if got.Version != last.Version {
		return fmt.Errorf("run %s/%s reads back at version %d, want %d, the last written", last.Tenant, last.ID, got.Version, last.Version)
	}
	if want := last.Fence; got.Fence != want || (v.fenced && want != stateFenceBase) || (!v.fenced && want != 0) {
		return fmt.Errorf("run %s/%s reads back with fence %d (the last write returned %d), want %d: the fence every write carried",
			last.Tenant, last.ID, got.Fence, want, map[bool]int64{true: stateFenceBase, false: 0}[v.fenced])
	}
	if !v.policy.KeepsVersions() {
		return nil
	}
	k, ok := contract.AsRunKeeper(s)
	if !ok {
		return errors.New("the history side's store has no RunKeeper")
	}
	page, err := k.ListRunVersions(ctx, last.Tenant, last.ID, contract.PageRequest{Limit: 2 * stateKeep})
	if err != nil {
		return fmt.Errorf("versions of %s/%s: %w", last.Tenant, last.ID, err)
	}
	var vs []int64
	for _, r := range page.Versions {
		vs = append(vs, r.Version)
	}
	want := make([]int64, 0, stateKeep+1)
	for i := range int64(stateKeep + 1) {
		want = append(want, last.Version-i)
	}
	if !slices.Equal(vs, want) {
		return fmt.Errorf("run %s/%s lists versions %v, want %v: the run and its %d earlier versions", last.Tenant, last.ID, vs, want, stateKeep)
	}
	return nil
}

// parallel runs f(0) … f(n-1) at once and returns the first error.
func parallel(n int, f func(int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
