//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/integration/internal/oracle"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
	"github.com/adkit/adk/modules/policy"
)

// K is the size of each fault test's load: small enough that the whole
// suite stays within minutes on two cores, large enough that every fault
// lands while items are in flight.
const K = 300

// atExit runs f after every test of the package (the shared private
// servers' shutdowns, the figures table).
func atExit(f func()) {
	stopsMu.Lock()
	stops = append(stops, f)
	stopsMu.Unlock()
}

// privatePG is the PostgreSQL cluster the fault suite starts once and
// breaks on purpose; each test works in its own schema.
var (
	pgOnce sync.Once
	pgSrv  *pgstoretest.Server
	pgErr  error
)

func privatePG(t *testing.T) *pgstoretest.Server {
	t.Helper()
	pgOnce.Do(func() {
		pgSrv, pgErr = pgstoretest.NewServer()
		if pgErr == nil {
			atExit(pgSrv.Remove)
		}
	})
	if pgErr != nil {
		t.Fatalf("starting a private PostgreSQL: %v", pgErr)
	}
	// A previous test may have left it stopped.
	if err := pgSrv.Start(); err != nil {
		t.Fatal(err)
	}
	return pgSrv
}

// workerDefaults are the workers' settings unless a test says otherwise:
// short leases and fast reaping so a dead holder's items come back in
// seconds.
func workerDefaults(target oracle.Target, name string) oracle.WorkerConfig {
	return oracle.WorkerConfig{
		Target: target, Worker: name, Concurrency: 8,
		LeaseFor: 2 * time.Second, ReapInterval: 250 * time.Millisecond, PollInterval: 200 * time.Millisecond,
		HandlerDelay: 15 * time.Millisecond, MaxAttempts: 10,
	}
}

// load is one fault test: a target, its workers, and the fault.
type load struct {
	target  oracle.Target // what the workers connect to (maybe via a proxy)
	direct  oracle.Target // what the parent seeds and judges through
	workers []oracle.WorkerConfig
	k       int
	// settle waits after seeding, before the workers start.
	settle time.Duration
	// firstWave, when set, is how many of the planned items are enqueued
	// before the workers start; inject enqueues the rest.
	firstWave int
	// inject runs while the load runs and returns the faults it caused.
	inject func(t *testing.T, ctx context.Context, e *env) []string
	// allowance, when set, is asked after the load for the window of
	// acknowledged writes the fault may lose.
	allowance func() *oracle.Allowance
	drain     time.Duration
	// lifecycle mixes waits and cancels into the load: the parent signals
	// every wait (twice at once) and cancels the planned items once a
	// quarter of the load is done.
	lifecycle bool
	// fenced has every execution write its item's fenced run through
	// runner.Runs, and judges the fences after (oracle.JudgeFences). Every
	// backing's state store has a RunKeeper; one without fails the test.
	fenced bool
}

// env is what a fault injection can reach.
type env struct {
	fleet  *oracle.Fleet
	procs  []*oracle.Proc
	parent *oracle.Stores
	specs  []oracle.Spec
}

// outcome is what a load run produced, for the test to check further.
type outcome struct {
	report oracle.Report
	faults []string
	fleet  *oracle.Fleet
}

func runLoad(t *testing.T, l load) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if l.k == 0 {
		l.k = K
	}
	if l.drain == 0 {
		l.drain = 90 * time.Second
	}
	start := time.Now()
	parent, err := oracle.Open(ctx, l.direct, oracle.OpenOptions{Policy: policy.Policy{MaxAttempts: 10}})
	if err != nil {
		t.Fatalf("open %s: %v", l.direct.Backing, err)
	}
	defer parent.Close()
	// Where the backing keeps history, every item's is kept and judged.
	history, err := oracle.KeepHistory(ctx, parent)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := contract.AsRunKeeper(parent.State); l.fenced && !ok {
		t.Fatalf("FENCES %s: the %s state store has no RunKeeper (contract.AsRunKeeper): its fenced writes cannot be judged", t.Name(), l.direct.Backing)
	}
	if l.fenced {
		l.workers = slices.Clone(l.workers)
		for i := range l.workers {
			l.workers[i].FencedRuns = true
		}
	}
	specs := oracle.Plan(l.k)
	var lc *oracle.Lifecycle
	if l.lifecycle {
		specs = oracle.PlanLifecycle(l.k)
		lc = oracle.NewLifecycle()
	}
	first := specs
	if l.firstWave > 0 {
		first = specs[:l.firstWave]
	}
	if err := oracle.SeedRuns(ctx, parent, specs); err != nil {
		t.Fatal(err)
	}
	if err := oracle.Enqueue(ctx, parent, first); err != nil {
		t.Fatal(err)
	}
	if l.settle > 0 {
		time.Sleep(l.settle)
	}

	fleet := oracle.NewFleet()
	var procs []*oracle.Proc
	for _, cfg := range l.workers {
		p, err := fleet.Start(cfg)
		if err != nil {
			fleet.Stop(10 * time.Second)
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	var lifeWG sync.WaitGroup
	sigCtx, stopSignals := context.WithCancel(ctx)
	defer stopSignals()
	if lc != nil {
		lifeWG.Go(func() { lc.Signal(sigCtx, parent, specs) })
		lifeWG.Go(func() {
			if waitProgress(sigCtx, fleet, l.k/4) {
				if err := lc.Cancel(sigCtx, parent, specs); err != nil && sigCtx.Err() == nil {
					t.Errorf("cancelling the planned items: %v", err)
				}
			}
		})
	}
	var faults []string
	injected := make(chan struct{})
	go func() {
		defer close(injected)
		if l.inject != nil {
			faults = l.inject(t, ctx, &env{fleet: fleet, procs: procs, parent: parent, specs: specs})
		}
	}()
	// The queue counts as drained only after the fault: a server that
	// loses writes can bring finished items back.
	<-injected
	drainErr := oracle.WaitDrained(ctx, parent.Inspector, l.drain)
	stopSignals()
	lifeWG.Wait()
	if problems := fleet.Stop(15 * time.Second); len(problems) > 0 {
		t.Errorf("workers: %s", strings.Join(problems, "; "))
	}
	if drainErr != nil {
		t.Error(drainErr)
	}
	var allow *oracle.Allowance
	if l.allowance != nil {
		allow = l.allowance()
	}
	rep, err := oracle.Judge(ctx, parent, specs, fleet.Acks(), allow, lc)
	if err != nil {
		t.Fatal(err)
	}
	if lc != nil {
		waits := 0
		for _, sp := range specs {
			if sp.Waits {
				waits++
			}
		}
		t.Logf("lifecycle load: %d of %d waits resumed by one signal (%d twin signals refused, %d failed calls), %d items cancelled as planned",
			rep.Resumed, waits, lc.Refused, lc.Failed, rep.Cancelled)
		if rep.Cancelled == 0 {
			t.Errorf("the lifecycle load cancelled nothing: the cancels came too late to test anything")
		}
	}
	if slices.ContainsFunc(l.workers, func(w oracle.WorkerConfig) bool { return w.StateLoad }) {
		st, err := oracle.JudgeState(ctx, parent, specs, fleet.Acks(), fleet.StateEvents())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("state load: %d acknowledged appends to the logs, %d hand-ons of the slots, %d state violations", st.Appends, st.Handoffs, len(st.Violations))
		if st.Appends == 0 || st.Handoffs == 0 {
			t.Errorf("the state load did nothing: %d appends, %d hand-ons", st.Appends, st.Handoffs)
		}
		rep.Violations = append(rep.Violations, st.Violations...)
		rep.Forgiven = append(rep.Forgiven, st.Forgiven...)
	}
	if l.fenced {
		fr, err := oracle.JudgeFences(ctx, parent, specs, fleet.FenceEvents())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("FENCES %s %s", t.Name(), fr.Summary())
		if fr.Landed == 0 || fr.Completed == 0 {
			t.Errorf("the fenced writes did nothing: %d landed, %d completed items judged", fr.Landed, fr.Completed)
		}
		rep.Violations = append(rep.Violations, fr.Violations...)
	}
	if history {
		hr, err := oracle.JudgeHistory(ctx, parent, specs, fleet.Leases(), fleet.Acks(), allow)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("HISTORY %s %s", t.Name(), hr.Summary())
		rep.Violations = append(rep.Violations, hr.Violations...)
		rep.Forgiven = append(rep.Forgiven, hr.Forgiven...)
	} else {
		t.Logf("HISTORY %s: the %s queue keeps no history (contract.AsHistoryKeeper): not judged", t.Name(), l.direct.Backing)
	}
	t.Logf("%s on %s: %d items, %d worker processes, %v", t.Name(), l.direct.Backing, l.k, len(l.workers), time.Since(start).Round(time.Millisecond))
	t.Logf("faults injected (%d): %s", len(faults), strings.Join(faults, "; "))
	t.Logf("worker error counts: %v", fleet.Counts())
	for i, f := range rep.Forgiven {
		if i == 25 {
			t.Logf("within the allowance: ... and %d more", len(rep.Forgiven)-25)
			break
		}
		t.Logf("within the allowance: %s", f)
	}
	for i, v := range rep.Violations {
		if i == 40 {
			t.Errorf("... and %d more violations", len(rep.Violations)-40)
			break
		}
		t.Errorf("violation: %s", v)
	}
	t.Logf("ORACLE %s %s faults=%d", t.Name(), rep.Summary(), len(faults))
	recordFigures(t.Name(), l.direct.Backing, rep, len(faults), time.Since(start))
	return outcome{report: rep, faults: faults, fleet: fleet}
}

// waitProgress blocks until n items have an acknowledged execution, or
// the context ends.
func waitProgress(ctx context.Context, f *oracle.Fleet, n int) bool {
	for f.Acked() < n {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// waitHolding blocks until worker has just acknowledged an effect it has
// not completed yet: its last ack is younger than within, which is less
// than the handler's delay after the effect. A kill at that moment lands
// while the victim holds at least one item whose effect is in the store,
// however the claims of the fleet happen to interleave.
func waitHolding(ctx context.Context, f *oracle.Fleet, worker string, within time.Duration) bool {
	for {
		acks := f.Acks()
		for i := len(acks) - 1; i >= 0; i-- {
			if acks[i].Worker == worker {
				if time.Since(time.Unix(0, acks[i].At)) < within {
					return true
				}
				break
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// figures collects each fault test's verdict for the summary printed at
// the end of the run (and pasted into docs/reliability.md).
var (
	figuresMu sync.Mutex
	figures   []string
)

func recordFigures(name, backing string, r oracle.Report, faults int, took time.Duration) {
	figuresMu.Lock()
	defer figuresMu.Unlock()
	figures = append(figures, fmt.Sprintf("| %s | %s | %d | %d | %d | %d | %d | %d | %d | %s |",
		name, backing, r.Items, faults, r.Completed, r.Dead+r.DeadOther, r.Reexecuted, len(r.Forgiven), len(r.Violations), took.Round(100*time.Millisecond)))
}

// FiguresEnv names a file the fault suite writes its figures table to
// (markdown), for docs/reliability.md.
const FiguresEnv = "ADK_FAULT_FIGURES"

func init() {
	atExit(func() {
		figuresMu.Lock()
		defer figuresMu.Unlock()
		if len(figures) == 0 {
			return
		}
		table := "| test | backing | items | faults | completed | dead | re-executed | forgiven | lost/duplicated | time |\n|---|---|---|---|---|---|---|---|---|---|\n" +
			strings.Join(figures, "\n") + "\n"
		fmt.Print(table)
		if path := os.Getenv(FiguresEnv); path != "" {
			if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "writing figures:", err)
			}
		}
	})
}
