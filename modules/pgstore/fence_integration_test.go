//go:build integration

package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func stateWith(t *testing.T, d *testDB, clock contract.Clock, p contract.RunPolicy) *pgstore.PostgresStateStore {
	t.Helper()
	s, err := pgstore.NewState(d.pool, clock, pgstore.Settings{Runs: p})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustPut(t *testing.T, s contract.StateStore, r contract.Run) *contract.Run {
	t.Helper()
	out, err := s.PutRun(context.Background(), r)
	if err != nil {
		t.Fatalf("PutRun %+v: %v", r, err)
	}
	return out
}

// Fenced writes on both statement shapes (without versions, and with
// them, where the row is locked first): a lower fence is refused with a
// *StaleFenceError naming both fences and changes nothing; equal and
// higher land, higher raises the fence; unfenced lands and leaves it; the
// checks come in the contract's order.
func TestFencedWrites(t *testing.T) {
	for _, p := range []contract.RunPolicy{{}, {KeepVersions: 3}} {
		t.Run(fmt.Sprintf("keep=%d", p.KeepVersions), func(t *testing.T) {
			ctx := ctxT(t, time.Minute)
			d := newTestDB(t)
			s := stateWith(t, d, contracttest.NewFakeClock(t0), p)
			r := mustPut(t, s, contract.Run{Tenant: "acme", ID: "r", Fence: 10, Data: []byte(`{"by":10}`)})
			if r.Fence != 10 {
				t.Fatalf("fenced create: fence %d, want 10", r.Fence)
			}
			read := func() *contract.Run {
				t.Helper()
				got, err := s.GetRun(ctx, "acme", "r")
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			before := read()
			stale := func(what string, err error) {
				t.Helper()
				var sf *contract.StaleFenceError
				if !errors.As(err, &sf) || sf.Fence != 9 || sf.Stored != 10 || sf.Tenant != "acme" || sf.ID != "r" || contract.Retryable(err) {
					t.Fatalf("%s under fence 9: %v, want a *StaleFenceError 9 < 10", what, err)
				}
				if after := read(); after.Version != before.Version || string(after.Data) != string(before.Data) || after.Counters != before.Counters || after.Fence != 10 {
					t.Fatalf("%s refused but the run changed: %+v -> %+v", what, before, after)
				}
			}
			_, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version, Fence: 9, Data: []byte(`{"by":9}`)})
			stale("PutRun", err)
			// The fence comes before the version and the counters.
			_, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version + 5, Fence: 9})
			stale("PutRun at a wrong version", err)
			_, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Fence: 9})
			stale("PutRun create over it", err)
			_, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Fence: 9, Status: "x", Counters: contract.Counters{Iterations: 1}})
			stale("PatchRun", err)
			_, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Fence: 9, Counters: contract.Counters{Iterations: 1}})
			stale("PatchRun of counters", err)
			_, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Fence: 9, Counters: contract.Counters{Iterations: 1 << 62}})
			stale("PatchRun past the range", err)
			stale("DeleteRunFenced", s.DeleteRunFenced(ctx, "acme", "r", 9))
			if _, err := s.PatchRun(ctx, "nobody", "r", contract.Patch{Fence: 1}); !errors.Is(err, contract.ErrNotFound) {
				t.Fatalf("fenced patch of a missing run: %v, want ErrNotFound", err)
			}
			if err := s.DeleteRunFenced(ctx, "nobody", "r", 1); !errors.Is(err, contract.ErrNotFound) {
				t.Fatalf("fenced delete of a missing run: %v, want ErrNotFound", err)
			}
			if r, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version, Fence: 10, Data: []byte(`{"by":10}`)}); err != nil || r.Fence != 10 {
				t.Fatalf("put at an equal fence: %+v, %v", r, err)
			}
			if r, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}}); err != nil || r.Fence != 10 {
				t.Fatalf("unfenced patch: %+v, %v; want it to land and keep fence 10", r, err)
			}
			if r, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Fence: 12, Status: "on", Counters: contract.Counters{Iterations: 1}}); err != nil || r.Fence != 12 {
				t.Fatalf("patch at a higher fence: %+v, %v; want fence 12", r, err)
			}
			if r, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version, Data: []byte(`{"by":0}`)}); err != nil || r.Fence != 12 {
				t.Fatalf("unfenced put: %+v, %v; want fence 12 kept", r, err)
			}
			var co *contract.CounterOverflowError
			if _, err := s.PatchRun(ctx, "acme", "r", contract.Patch{Fence: 12, Counters: contract.Counters{Iterations: 1<<63 - 1}}); !errors.As(err, &co) || co.Counter != "Iterations" {
				t.Fatalf("fenced overflowing patch: %v, want a *CounterOverflowError naming Iterations", err)
			}
			if err := s.DeleteRunFenced(ctx, "acme", "r", 13); err != nil {
				t.Fatalf("delete at a higher fence: %v", err)
			}
			if _, err := s.GetRun(ctx, "acme", "r"); !errors.Is(err, contract.ErrNotFound) {
				t.Fatalf("after the fenced delete: %v", err)
			}
			// The fence went with the run.
			if r = mustPut(t, s, contract.Run{Tenant: "acme", ID: "r", Fence: 1}); r.Fence != 1 {
				t.Fatalf("create after the delete: fence %d, want 1", r.Fence)
			}
		})
	}
}

// Writers holding different fences patch one run at once. Each refusal
// is decided on the row the statement writes, so a refused patch adds
// nothing, the counters are the sum of the patches that landed, the
// stored fence never goes down, and once a fence is stored no lower one
// lands. With versions, every status patch keeps the row it replaced:
// consecutive kept versions differ by exactly one landed patch.
func TestFencedWritesConcurrent(t *testing.T) {
	for _, p := range []contract.RunPolicy{{}, {KeepVersions: 1000}} {
		t.Run(fmt.Sprintf("keep=%d", p.KeepVersions), func(t *testing.T) {
			ctx := ctxT(t, 2*time.Minute)
			d := newTestDB(t)
			s := stateWith(t, d, nil, p)
			mustPut(t, s, contract.Run{Tenant: "acme", ID: "r"})
			const writers, each = 8, 40
			var mu sync.Mutex
			landed := 0
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Go(func() {
					fence := int64(w + 1)
					for i := range each {
						r, err := s.PatchRun(ctx, "acme", "r", contract.Patch{Fence: fence, Status: fmt.Sprintf("w%d-%d", w, i), Counters: contract.Counters{Iterations: 1, InputTokens: fence}})
						var sf *contract.StaleFenceError
						switch {
						case errors.As(err, &sf):
							if sf.Stored <= fence {
								errs <- fmt.Errorf("refused %d with stored %d", fence, sf.Stored)
								return
							}
							return // fenced out for good: a newer writer has the run
						case err != nil:
							errs <- err
							return
						case r.Fence != fence:
							errs <- fmt.Errorf("landed under %d but the run reads fence %d", fence, r.Fence)
							return
						}
						mu.Lock()
						landed++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			r, err := s.GetRun(ctx, "acme", "r")
			if err != nil {
				t.Fatal(err)
			}
			if r.Counters.Iterations != int64(landed) || r.Version != int64(landed)+1 {
				t.Fatalf("run after the race: %+v; %d patches landed", r, landed)
			}
			if r.Fence != writers {
				// The highest fence lands at least once: nobody above it.
				t.Fatalf("stored fence %d, want %d", r.Fence, writers)
			}
			if !p.KeepsVersions() {
				return
			}
			page, err := s.ListRunVersions(ctx, "acme", "r", contract.PageRequest{Limit: contract.MaxPageSize})
			if err != nil {
				t.Fatal(err)
			}
			vs := page.Versions
			if len(vs) != landed+1 {
				t.Fatalf("%d versions listed, want the run and %d kept", len(vs), landed)
			}
			for i := 0; i+1 < len(vs); i++ {
				newer, older := vs[i], vs[i+1]
				if newer.Version != older.Version+1 || newer.Counters.Iterations != older.Counters.Iterations+1 ||
					newer.Counters.InputTokens-older.Counters.InputTokens != newer.Fence || newer.Fence < older.Fence {
					t.Fatalf("versions %d and %d are not one patch apart: %+v / %+v", newer.Version, older.Version, newer, older)
				}
			}
		})
	}
}

// A delete racing writers that keep versions leaves none behind: the
// versions a writer kept just before the delete took the row lock are
// deleted with the run (by a snapshot taken after the lock), so a run
// created again under the same id starts without versions.
func TestDeleteTakesEveryVersion(t *testing.T) {
	ctx := ctxT(t, 2*time.Minute)
	d := newTestDB(t)
	s := stateWith(t, d, nil, contract.RunPolicy{KeepVersions: 50})
	for round := range 30 {
		mustPut(t, s, contract.Run{Tenant: "acme", ID: "r"})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					_, err := s.PatchRun(ctx, "acme", "r", contract.Patch{Status: fmt.Sprintf("%d-%d-%d", round, w, i)})
					if errors.Is(err, contract.ErrNotFound) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		// Let the writers keep a few versions first (none, in some rounds).
		for {
			r, err := s.GetRun(ctx, "acme", "r")
			if err != nil {
				t.Fatal(err)
			}
			if r.Version > int64(round%5) {
				break
			}
		}
		if err := s.DeleteRun(ctx, "acme", "r"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		var n int
		if err := d.pool.QueryRow(ctx, `SELECT count(*) FROM adk_runs_versions WHERE tenant = 'acme' AND id = 'r'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("round %d: %d versions left after the delete", round, n)
		}
	}
}

// Writers put one run at once, each from the version it last read, with
// versions kept: every put that lands keeps exactly the row it replaced,
// so the kept versions and the run form one chain, each a put apart (the
// data names the put that wrote it and the version it was written over).
func TestPutVersionsConcurrent(t *testing.T) {
	ctx := ctxT(t, 2*time.Minute)
	d := newTestDB(t)
	s := stateWith(t, d, nil, contract.RunPolicy{KeepVersions: 1000})
	mustPut(t, s, contract.Run{Tenant: "acme", ID: "r", Data: []byte(`{"over":0}`)})
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for range 30 {
				r, err := s.GetRun(ctx, "acme", "r")
				if err != nil {
					t.Error(err)
					return
				}
				_, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version, Status: fmt.Sprint(w), Data: []byte(fmt.Sprintf(`{"over":%d}`, r.Version))})
				var sc *contract.StateConflictError
				if err != nil && !errors.As(err, &sc) {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	vs := listAll(t, s, "acme", "r", contract.MaxPageSize)
	for i := 0; i+1 < len(vs); i++ {
		if vs[i].Version != vs[i+1].Version+1 || string(vs[i].Data) != fmt.Sprintf(`{"over":%d}`, vs[i+1].Version) {
			t.Fatalf("version %d (%s) does not follow version %d", vs[i].Version, vs[i].Data, vs[i+1].Version)
		}
	}
	if last := vs[len(vs)-1]; last.Version != 1 || len(vs) < 2 {
		t.Fatalf("the chain ends at version %d after %d versions, want it to reach version 1", last.Version, len(vs))
	}
}
