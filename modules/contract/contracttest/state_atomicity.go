package contracttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// stateAtomicityCases pin that a write is one step: a patch that would
// overflow a counter is refused whole, and a conflict reports the version
// the failed check saw, never one read later.
func stateAtomicityCases() []subtest[StateFactory] {
	return []subtest[StateFactory]{
		{"OverflowRefusedWhole", testOverflowRefusedWhole},
		{"OverflowBelowRefused", testOverflowBelowRefused},
		{"OverflowFirstCounterNamed", testOverflowFirstCounterNamed},
		{"CountersReachTheEdge", testCountersReachTheEdge},
		{"ConflictReportsStoredVersion", testConflictReportsStoredVersion},
	}
}

// wantOverflow fails unless err is a *contract.CounterOverflowError with
// the given numbers that matches contract.ErrInvalid.
func wantOverflow(t *testing.T, err error, tenant, id, counter string, stored, delta int64) {
	t.Helper()
	var oe *contract.CounterOverflowError
	if !errors.As(err, &oe) {
		t.Fatalf("a patch past the int64 range: got %v (%T), want *contract.CounterOverflowError", err, err)
	}
	if !errors.Is(err, contract.ErrInvalid) || contract.Retryable(err) {
		t.Errorf("an overflow must match ErrInvalid and not be retryable: %v", err)
	}
	if oe.Tenant != tenant || oe.ID != id || oe.Counter != counter || oe.Stored != stored || oe.Delta != delta {
		t.Errorf("overflow reports %q/%q %s stored %d delta %d, want %q/%q %s stored %d delta %d",
			oe.Tenant, oe.ID, oe.Counter, oe.Stored, oe.Delta, tenant, id, counter, stored, delta)
	}
}

// unchanged fails unless the run is still as before.
func unchanged(t *testing.T, s contract.StateStore, before *contract.Run, what string) {
	t.Helper()
	got := getOK(t, s, before.Tenant, before.ID)
	if got.Version != before.Version || got.Counters != before.Counters || got.Status != before.Status || !got.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("%s wrote something: the run is version %d, counters %+v, status %q, updated %v; it was version %d, counters %+v, status %q, updated %v",
			what, got.Version, got.Counters, got.Status, got.UpdatedAt, before.Version, before.Counters, before.Status, before.UpdatedAt)
	}
}

func testOverflowRefusedWhole(t *testing.T, f StateFactory) {
	s, clock := newState(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`{}`)})
	before := patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{Cursor: math.MaxInt64 - 1}, Status: "before"})
	clock.Advance(time.Second)
	// Every counter but the last takes its delta; the last would pass the
	// top. A backing that adds the counters one by one and stops at the
	// failure has written the first four.
	_, err := s.PatchRun(t.Context(), "acme", "r", contract.Patch{
		Counters: contract.Counters{InputTokens: 5, OutputTokens: 6, CostMicros: 7, Iterations: 1, Cursor: 2}, Status: "after"})
	wantOverflow(t, err, "acme", "r", "Cursor", math.MaxInt64-1, 2)
	unchanged(t, s, before, "a refused patch")
	// The run takes patches that fit as before.
	r := patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: 5, Cursor: 1}})
	if want := (contract.Counters{InputTokens: 5, Cursor: math.MaxInt64}); r.Counters != want || r.Version != before.Version+1 {
		t.Errorf("the next patch left counters %+v at version %d, want %+v at %d", r.Counters, r.Version, want, before.Version+1)
	}
}

func testOverflowBelowRefused(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r"})
	before := patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{CostMicros: math.MinInt64 + 2, Iterations: 3}})
	_, err := s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1, CostMicros: -3}})
	wantOverflow(t, err, "acme", "r", "CostMicros", math.MinInt64+2, -3)
	unchanged(t, s, before, "a patch below the int64 range")
}

func testOverflowFirstCounterNamed(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r"})
	before := patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: math.MaxInt64, Iterations: math.MaxInt64}})
	_, err := s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: 1, Iterations: 1}})
	wantOverflow(t, err, "acme", "r", "InputTokens", math.MaxInt64, 1)
	unchanged(t, s, before, "a patch overflowing two counters")
	_, err = s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: -1, Iterations: math.MaxInt64}})
	wantOverflow(t, err, "acme", "r", "Iterations", math.MaxInt64, math.MaxInt64)
	unchanged(t, s, before, "a patch overflowing its fourth counter")
}

// testCountersReachTheEdge pins that a backing's overflow check is exact:
// sums that land on the int64 range's ends, or step back from them, are
// taken (a check done in floating point refuses some of them).
func testCountersReachTheEdge(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r"})
	steps := []contract.Counters{
		{InputTokens: math.MaxInt64 - 1, OutputTokens: math.MinInt64 + 1, CostMicros: 1 << 53, Cursor: -(1 << 53)},
		{InputTokens: 1, OutputTokens: -1, CostMicros: 1, Cursor: -1},
		{InputTokens: -3, OutputTokens: 3, CostMicros: math.MaxInt64 - (1<<53 + 1), Cursor: math.MinInt64 + (1<<53 + 1)},
	}
	var want contract.Counters
	for i, d := range steps {
		want = want.Add(d)
		r := patchOK(t, s, "acme", "r", contract.Patch{Counters: d})
		if r.Counters != want {
			t.Fatalf("patch %d: counters %+v, want %+v", i+1, r.Counters, want)
		}
	}
	if got := getOK(t, s, "acme", "r"); got.Counters != want || got.Version != 4 {
		t.Errorf("stored counters %+v at version %d, want %+v at 4", got.Counters, got.Version, want)
	}
	if want.CostMicros != math.MaxInt64 || want.Cursor != math.MinInt64 {
		t.Fatalf("the case lost its edges: %+v", want)
	}
}

// testConflictReportsStoredVersion races creates, puts, patches and
// deletes of one run and checks every conflict: its Actual is the version
// stored when the check failed, so it is never the version the caller
// held (a store that reads the version in a second step after the failed
// check can find a run deleted and created again, or written back to the
// same version, in between).
func testConflictReportsStoredVersion(t *testing.T, f StateFactory) {
	const workers, each = 8, 150
	s, _ := newState(t, f)
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		conflicts int
		bad       []string
		errs      []error
	)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var seen int64
			for n := range each {
				var err error
				switch p := rng.IntN(100); {
				case p < 25:
					_, err = s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "churn", Data: json.RawMessage(fmt.Sprint(n))})
				case p < 60:
					var r *contract.Run
					r, err = s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "churn", Version: max(seen, 1)})
					if err == nil {
						seen = r.Version
					}
				case p < 75:
					var r *contract.Run
					if r, err = s.PatchRun(t.Context(), "acme", "churn", contract.Patch{Counters: contract.Counters{Iterations: 1}}); err == nil {
						seen = r.Version
					}
				default:
					err = s.DeleteRun(t.Context(), "acme", "churn")
				}
				var ce *contract.StateConflictError
				switch {
				case errors.As(err, &ce):
					seen = ce.Actual
					mu.Lock()
					conflicts++
					if ce.Expected == ce.Actual || ce.Actual < 0 {
						bad = append(bad, ce.Error())
					}
					mu.Unlock()
				case err != nil && !errors.Is(err, contract.ErrNotFound):
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs[:min(len(errs), 3)] {
		t.Errorf("a write failed: %v", err)
	}
	if len(bad) > 0 {
		t.Errorf("%d of %d conflicts report a stored version that cannot have failed the check, e.g. %v",
			len(bad), conflicts, bad[:min(len(bad), 3)])
	}
	if conflicts < workers {
		t.Errorf("only %d conflicts in %d racing writes; the case did not race", conflicts, workers*each)
	}
}
