package sqlitestore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/sqlitestore"
)

// BenchmarkRunWritesPaired measures what fences and versions cost as
// ratios of interleaved blocks, the shape of adkbench's state scenario:
// ten writers with four runs each (a ~1 KiB blob), on files of the
// default durability (DurabilityFull, an fsync a commit). Each of b.N
// rounds runs a block of writes with versions off and unfenced (plain),
// then fenced, then keeping versions (KeepVersions 10, unfenced), each on
// a file of its own, in an order that turns round every round, and takes
// the throughput of fenced and versions10 against plain in that round.
// Every run is written twelve times before the first round, so the
// versions side starts with full histories and prunes as it goes. A put
// replaces the blob at the version the writer holds; a patch changes the
// status (alternately) and adds to a counter, so with versions every
// patch keeps one. It reports the minimum, median and maximum ratio of
// the rounds (run it with -benchtime 15x for fifteen rounds), and each
// mode's median µs a write, the process's CPU time a write
// (cpu-µs/write) and the bytes the process wrote a write
// (written-B/write: the log's frames, mostly).
func BenchmarkRunWritesPaired(b *testing.B) {
	const writers, perWriter, block = 10, 4, 400
	ctx := context.Background()
	pad := strings.Repeat("x", 1024-40)
	blob := func(step int) []byte { return fmt.Appendf(nil, `{"step":%d,"pad":%q}`, step, pad) }
	type mode struct {
		name  string
		fence int64
		p     contract.RunPolicy
	}
	modes := []mode{{"plain", 0, contract.RunPolicy{}}, {"fenced", 1000, contract.RunPolicy{}}, {"versions10", 0, contract.RunPolicy{KeepVersions: 10}}}
	for _, op := range []string{"PutRun", "PatchRun"} {
		b.Run(op, func(b *testing.B) {
			stores := make([]*sqlitestore.SQLiteStateStore, len(modes))
			runs := make([][][]*contract.Run, len(modes))
			steps := make([][]int, len(modes))
			write := func(m, w, i int) error {
				r := runs[m][w][i]
				step := steps[m][w]
				var err error
				if op == "PutRun" {
					r, err = stores[m].PutRun(ctx, contract.Run{Tenant: r.Tenant, ID: r.ID, Session: r.Session, Status: r.Status,
						Data: blob(step), Version: r.Version, Fence: modes[m].fence})
				} else {
					r, err = stores[m].PatchRun(ctx, r.Tenant, r.ID, contract.Patch{Status: fmt.Sprintf("step-%d", step%2),
						Counters: contract.Counters{Iterations: 1}, Fence: modes[m].fence})
				}
				if err == nil {
					runs[m][w][i] = r
				}
				return err
			}
			// writes runs n writes of mode m from the writers, each
			// writing its runs in turn.
			writes := func(m, n int) error {
				var wg sync.WaitGroup
				errs := make(chan error, writers)
				for w := range writers {
					wg.Go(func() {
						for k := range n / writers {
							i := k % perWriter
							if i == 0 {
								steps[m][w]++
							}
							if err := write(m, w, i); err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				return <-errs
			}
			for m, md := range modes {
				s := sqlitestore.Settings{Runs: md.p}
				st, err := sqlitestore.NewState(newFile(b, s), nil, s)
				if err != nil {
					b.Fatal(err)
				}
				stores[m] = st
				runs[m] = make([][]*contract.Run, writers)
				steps[m] = make([]int, writers)
				for w := range writers {
					for i := range perWriter {
						r, err := st.PutRun(ctx, contract.Run{Tenant: fmt.Sprintf("t%02d", w), ID: fmt.Sprintf("run-%d", i), Session: "bench",
							Status: "step-1", Data: blob(0), Fence: md.fence})
						if err != nil {
							b.Fatal(err)
						}
						runs[m][w] = append(runs[m][w], r)
					}
				}
				if err := writes(m, writers*perWriter*12); err != nil {
					b.Fatal(err)
				}
			}
			us := make([][]float64, len(modes))
			wrote := make([][]float64, len(modes))
			cpu := make([][]float64, len(modes))
			var fenced, versions []float64
			b.ResetTimer()
			for round := range b.N {
				got := make([]float64, len(modes))
				for k := range modes {
					m := k
					if round%2 == 1 {
						m = len(modes) - 1 - k
					}
					w0, c0, start := written(), cpuTime(b), time.Now()
					if err := writes(m, block); err != nil {
						b.Fatal(err)
					}
					got[m] = float64(time.Since(start).Microseconds()) / block
					us[m] = append(us[m], got[m])
					wrote[m] = append(wrote[m], float64(written()-w0)/block)
					cpu[m] = append(cpu[m], float64((cpuTime(b)-c0).Microseconds())/block)
				}
				fenced = append(fenced, got[0]/got[1])
				versions = append(versions, got[0]/got[2])
			}
			b.StopTimer()
			for m, md := range modes {
				b.ReportMetric(medianOf(us[m]), md.name+"-µs/write")
				b.ReportMetric(medianOf(wrote[m]), md.name+"-written-B/write")
				b.ReportMetric(medianOf(cpu[m]), md.name+"-cpu-µs/write")
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
