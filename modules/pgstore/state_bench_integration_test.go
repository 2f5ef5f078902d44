//go:build integration

package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

// BenchmarkStateWrites measures one client's state calls, one at a time:
// GetRun is the baseline the writes compare with (one indexed read of the
// same row), PatchRun and PutRun each one statement that checks and
// writes (and on a refusal reads the stored row in the same statement),
// CreateDelete an insert and a delete.
func BenchmarkStateWrites(b *testing.B) {
	ctx := context.Background()
	d := newTestDB(b)
	st, err := pgstore.NewState(d.pool, nil, pgstore.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(`{"messages":[{"role":"user","content":"hello"}],"step":1}`)
	r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Session: "s", Data: data})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("GetRun", func(b *testing.B) {
		for range b.N {
			if _, err := st.GetRun(ctx, "acme", "r"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PatchRun", func(b *testing.B) {
		for range b.N {
			if r, err = st.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: 120, OutputTokens: 40, Iterations: 1}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutRun", func(b *testing.B) {
		for range b.N {
			if r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Session: "s", Version: r.Version, Data: data}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CreateDelete", func(b *testing.B) {
		for range b.N {
			if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "tmp", Session: "s", Data: data}); err != nil {
				b.Fatal(err)
			}
			if err := st.DeleteRun(ctx, "acme", "tmp"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("StalePut", func(b *testing.B) {
		for range b.N {
			if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: 1, Data: data}); err == nil {
				b.Fatal("a stale put succeeded")
			}
		}
	})
}

// BenchmarkStateConcurrent measures PutRun and PatchRun from ten clients
// at once (one connection each), every client writing a run of its own:
// unfenced, fenced (every write carries the client's fence, so each
// lands), and keeping versions (KeepVersions 10, unfenced). The patches
// set the status, alternately, as well as adding to the counters, so
// with versions each one keeps a version; without them the same patch
// keeps none. Compare the three of one operation in one run (run it with
// -count to interleave them); the README quotes the ratios.
func BenchmarkStateConcurrent(b *testing.B) {
	const clients = 10
	ctx := context.Background()
	d := newTestDB(b, withMaxConns(clients))
	data := []byte(`{"messages":[{"role":"user","content":"hello"}],"step":1}`)
	calls := 0
	for _, op := range []string{"PutRun", "PatchRun"} {
		for _, v := range []struct {
			name  string
			fence int64
			p     contract.RunPolicy
		}{{"unfenced", 0, contract.RunPolicy{}}, {"fenced", 7, contract.RunPolicy{}}, {"versions10", 0, contract.RunPolicy{KeepVersions: 10}}} {
			b.Run(op+"/"+v.name, func(b *testing.B) {
				st, err := pgstore.NewState(d.pool, nil, pgstore.Settings{Runs: v.p})
				if err != nil {
					b.Fatal(err)
				}
				calls++
				runs := make([]*contract.Run, clients)
				for c := range runs {
					if runs[c], err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: fmt.Sprintf("%s-%s-%d-%d", op, v.name, calls, c), Fence: v.fence, Data: data}); err != nil {
						b.Fatal(err)
					}
				}
				var next atomic.Int64
				var wg sync.WaitGroup
				errs := make(chan error, clients)
				b.ResetTimer()
				for c := range clients {
					wg.Go(func() {
						r := runs[c]
						for i := 0; next.Add(1) <= int64(b.N); i++ {
							var err error
							if op == "PutRun" {
								r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: r.ID, Version: r.Version, Fence: v.fence, Data: data})
							} else {
								_, err = st.PatchRun(ctx, "acme", r.ID, contract.Patch{Fence: v.fence, Status: [2]string{"thinking", "acting"}[i%2],
									Counters: contract.Counters{InputTokens: 120, OutputTokens: 40, Iterations: 1}})
							}
							if err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			})
		}
	}
}

// BenchmarkStateWritesPaired measures what fences and versions cost as
// ratios of interleaved pairs: each of b.N rounds runs a block of 500
// writes from ten clients (one connection and one run each) with
// versions off and unfenced (plain), then fenced, then keeping versions
// (KeepVersions 10, unfenced), in an order that turns round every round,
// and takes the throughput of fenced and versions10 against plain in that
// round. Blocks of a fraction of a second follow the load of a shared
// machine closely enough that a round's ratio is fair where whole rows a
// second apart are not. PatchRun patches set the status (alternately)
// and add to the counters, so with versions every patch keeps one. It
// reports the minimum, median and maximum ratio of the rounds (run it
// with -benchtime 20x for 20 rounds) and each mode's median µs a write.
func BenchmarkStateWritesPaired(b *testing.B) {
	const clients, block = 10, 500
	ctx := context.Background()
	d := newTestDB(b, withMaxConns(clients))
	data := []byte(`{"messages":[{"role":"user","content":"hello"}],"step":1}`)
	type mode struct {
		name  string
		fence int64
		p     contract.RunPolicy
	}
	modes := []mode{{"plain", 0, contract.RunPolicy{}}, {"fenced", 7, contract.RunPolicy{}}, {"versions10", 0, contract.RunPolicy{KeepVersions: 10}}}
	calls := 0
	for _, op := range []string{"PutRun", "PatchRun"} {
		b.Run(op, func(b *testing.B) {
			calls++
			stores := make([]*pgstore.PostgresStateStore, len(modes))
			runs := make([][]*contract.Run, len(modes))
			for m, md := range modes {
				st, err := pgstore.NewState(d.pool, nil, pgstore.Settings{Runs: md.p})
				if err != nil {
					b.Fatal(err)
				}
				stores[m] = st
				runs[m] = make([]*contract.Run, clients)
				for c := range clients {
					if runs[m][c], err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: fmt.Sprintf("paired-%s-%s-%d-%d", op, md.name, calls, c), Fence: md.fence, Data: data}); err != nil {
						b.Fatal(err)
					}
				}
			}
			// writes runs one block of mode m and returns its µs a write.
			writes := func(m int) float64 {
				var next atomic.Int64
				var wg sync.WaitGroup
				errs := make(chan error, clients)
				start := time.Now()
				for c := range clients {
					wg.Go(func() {
						r := runs[m][c]
						for i := 0; next.Add(1) <= block; i++ {
							var err error
							if op == "PutRun" {
								r, err = stores[m].PutRun(ctx, contract.Run{Tenant: "acme", ID: r.ID, Version: r.Version, Fence: modes[m].fence, Data: data})
							} else {
								_, err = stores[m].PatchRun(ctx, "acme", r.ID, contract.Patch{Fence: modes[m].fence, Status: [2]string{"thinking", "acting"}[i%2],
									Counters: contract.Counters{InputTokens: 120, OutputTokens: 40, Iterations: 1}})
							}
							if err != nil {
								errs <- err
								return
							}
						}
						runs[m][c] = r
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
				return float64(time.Since(start).Microseconds()) / block
			}
			us := make([][]float64, len(modes))
			var fenced, versions []float64
			b.ResetTimer()
			for round := range b.N {
				got := make([]float64, len(modes))
				for k := range modes {
					m := k
					if round%2 == 1 {
						m = len(modes) - 1 - k
					}
					got[m] = writes(m)
					us[m] = append(us[m], got[m])
				}
				fenced = append(fenced, got[0]/got[1])
				versions = append(versions, got[0]/got[2])
			}
			b.StopTimer()
			for m, md := range modes {
				b.ReportMetric(medianOf(us[m]), md.name+"-µs/write")
			}
			for _, r := range []struct {
				name string
				xs   []float64
			}{{"fenced", fenced}, {"versions10", versions}} {
				s := slices.Sorted(slices.Values(r.xs))
				b.ReportMetric(s[0], r.name+"-ratio-min")
				b.ReportMetric(medianOf(s), r.name+"-ratio-median")
				b.ReportMetric(s[len(s)-1], r.name+"-ratio-max")
			}
		})
	}
}

// medianOf returns the median of xs (the upper one of an even count).
func medianOf(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}
