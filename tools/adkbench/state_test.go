package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
)

// unfencing forwards every write without its fence: a store on which
// fences have not landed.
type unfencing struct{ contract.StateStore }

func (u unfencing) PutRun(ctx context.Context, run contract.Run) (*contract.Run, error) {
	run.Fence = 0
	return u.StateStore.PutRun(ctx, run)
}

func (u unfencing) PatchRun(ctx context.Context, tenant, id string, p contract.Patch) (*contract.Run, error) {
	p.Fence = 0
	return u.StateStore.PatchRun(ctx, tenant, id, p)
}

// memBackingWith is the memstore backing whose state stores are wrap of
// a memstore.
func memBackingWith(wrap func(contract.StateStore) contract.StateStore) *ourBacking {
	b := newMemBacking(1, 1).(*ourBacking)
	b.openState = func(_ context.Context, _ int, p contract.RunPolicy) (*stateInstance, error) {
		return &stateInstance{s: wrap(memstore.New(nil, memstore.Settings{Runs: p})), close: func(context.Context) error { return nil }}, nil
	}
	return b
}

func testHarness() *harness {
	return &harness{cfg: config{pairs: 2, stateDuration: 20 * time.Millisecond}, log: io.Discard}
}

// A store that drops fences, or has no versions, is told apart by the
// probe: its rows say so rather than give a ratio that measures nothing.
func TestStateProbe(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name             string
		wrap             func(contract.StateStore) contract.StateStore
		fences, versions bool
	}{
		{"memstore", func(s contract.StateStore) contract.StateStore { return s }, true, true},
		{"fences dropped", func(s contract.StateStore) contract.StateStore { return unfencing{s} }, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := memBackingWith(c.wrap)
			sup, err := probeState(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			if sup.fences != c.fences || sup.versions != c.versions {
				t.Fatalf("probe: fences %v versions %v (%q, %q), want %v %v", sup.fences, sup.versions, sup.whyFences, sup.whyVersions, c.fences, c.versions)
			}
			if !c.fences {
				h := testHarness()
				h.stateScenario(ctx, b, 2)
				if len(h.rows) != 4 {
					t.Fatalf("%d rows, want 4 saying what is missing", len(h.rows))
				}
				for _, r := range h.rows {
					if r.Value != 0 || r.Error != "" || !strings.Contains(r.Note, "yet") {
						t.Errorf("%s: value %v, error %q, note %q: want no figure and a note saying what is missing", r.Metric, r.Value, r.Error, r.Note)
					}
				}
			}
		})
	}
}

// On memstore, the reference, the scenario measures all four pairs:
// two rows each (the base, then the variant with its ratio and target),
// every side having written, with nothing left unsupported.
func TestStateScenarioMemstore(t *testing.T) {
	h := testHarness()
	h.stateScenario(context.Background(), newMemBacking(1, 1).(*ourBacking), 3)
	var got []string
	for _, r := range h.rows {
		got = append(got, r.Metric)
		if r.Error != "" {
			t.Errorf("%s: %s", r.Metric, r.Error)
			continue
		}
		if r.Value <= 0 || r.Processed <= 0 || r.Unit != "ops/s" || r.Concurrency != 3 || r.Items != 3*stateRunsPerWorker {
			t.Errorf("%s: value %v %s, %d ops, conc %d, %d runs: want writes measured at conc 3 over %d runs", r.Metric, r.Value, r.Unit, r.Processed, r.Concurrency, r.Items, 3*stateRunsPerWorker)
		}
		if len(r.Rounds) != 2 {
			t.Errorf("%s: %d rounds, want one per pair (2)", r.Metric, len(r.Rounds))
		}
		isVariant := strings.HasSuffix(r.Metric, " fenced") || strings.HasSuffix(r.Metric, " KeepVersions 10")
		if isVariant != (r.Ratio > 0 && r.Met != nil && r.Target != "") {
			t.Errorf("%s: ratio %v, target %q, met %v: want them on the variant rows only", r.Metric, r.Ratio, r.Target, r.Met)
		}
	}
	want := []string{"PutRun unfenced", "PutRun fenced", "PutRun history off", "PutRun KeepVersions 10",
		"PatchRun unfenced", "PatchRun fenced", "PatchRun history off", "PatchRun KeepVersions 10"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("rows %q, want %q", got, want)
	}
	if r := h.rows[1]; r.Target != "≥ 0.95× unfenced" {
		t.Errorf("fenced target %q", r.Target)
	}
	if r := h.rows[3]; r.Target != "≥ 0.75× history off" {
		t.Errorf("history target %q", r.Target)
	}
}

// checkState fails a side whose store did not keep what its variant says.
func TestCheckState(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(nil, memstore.Settings{Runs: contract.RunPolicy{KeepVersions: 3}})
	run, err := s.PutRun(ctx, contract.Run{Tenant: "t", ID: "r", Fence: stateFenceBase})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkState(ctx, s, run, stateFenced); err != nil {
		t.Errorf("fenced run: %v", err)
	}
	if err := checkState(ctx, s, run, stateUnfenced); err == nil {
		t.Errorf("a fenced run passes as unfenced")
	}
	// One version kept behind the run, not stateKeep.
	plain, err := s.PutRun(ctx, contract.Run{Tenant: "t", ID: "r2"})
	if err != nil {
		t.Fatal(err)
	}
	if plain, err = s.PutRun(ctx, *plain); err != nil {
		t.Fatal(err)
	}
	if err := checkState(ctx, s, plain, stateHistoryKeep); err == nil || !strings.Contains(err.Error(), "lists versions") {
		t.Errorf("a run with one earlier version passes the history side: %v", err)
	}
	stale := *run
	stale.Version--
	if err := checkState(ctx, s, &stale, stateFenced); err == nil {
		t.Errorf("a run at another version than the last written passes")
	}
}
