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
