package memstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
)

// BenchmarkStateFencesVersions writes runs from 10 workers (each its own
// run) on three stores in turn every iteration — plain, fenced writes, and
// KeepVersions 10 — and reports each side's ops/s and its ratio to the
// plain side. Taking turns within one run puts the load of a shared
// machine on every side alike, so the ratios hold where separate runs
// scatter.
func BenchmarkStateFencesVersions(b *testing.B) {
	const workers, opsPerWorker = 10, 20
	for _, op := range []string{"PutRun", "PatchRun"} {
		b.Run(op, func(b *testing.B) {
			sides := []*stateSide{
				{name: "plain", s: memstore.New(nil, memstore.Settings{})},
				{name: "fenced", s: memstore.New(nil, memstore.Settings{}), fence: 1},
				{name: "history", s: memstore.New(nil, memstore.Settings{Runs: contract.RunPolicy{KeepVersions: 10}})},
			}
			for _, sd := range sides {
				sd.create(b, workers)
			}
			turn := 0
			for b.Loop() {
				for k := range sides {
					sides[(turn+k)%len(sides)].round(b, op, workers, opsPerWorker)
				}
				turn++
			}
			plain := sides[0].opsPerSec()
			for _, sd := range sides {
				b.ReportMetric(sd.opsPerSec(), sd.name+"-ops/s")
				if sd != sides[0] {
					b.ReportMetric(sd.opsPerSec()/plain, sd.name+"/plain")
				}
			}
		})
	}
}

// stateSide is one store of BenchmarkStateFencesVersions and the time its
// rounds took.
type stateSide struct {
	name    string
	s       *memstore.Store
	fence   int64 // the fence of every write, 0 for unfenced
	runs    []*contract.Run
	elapsed time.Duration
	ops     int
}

func (sd *stateSide) create(b *testing.B, n int) {
	for i := range n {
		r, err := sd.s.PutRun(context.Background(), contract.Run{Tenant: "acme", ID: fmt.Sprint("run-", i), Data: json.RawMessage(`{"step":0}`), Fence: sd.fence})
		if err != nil {
			b.Fatal(err)
		}
		sd.runs = append(sd.runs, r)
	}
}

// round runs ops writes from each worker, at once, and adds the time
// the round took.
func (sd *stateSide) round(b *testing.B, op string, workers, ops int) {
	ctx := context.Background()
	data := json.RawMessage(`{"step":1,"notes":"a few hundred bytes of agent state would sit here"}`)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			r := sd.runs[w]
			for range ops {
				var err error
				switch op {
				case "PutRun":
					next := *r
					next.Data, next.Fence = data, sd.fence
					r, err = sd.s.PutRun(ctx, next)
				default:
					_, err = sd.s.PatchRun(ctx, r.Tenant, r.ID, contract.Patch{Counters: contract.Counters{InputTokens: 10, Iterations: 1}, Fence: sd.fence})
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
			sd.runs[w] = r
		})
	}
	wg.Wait()
	sd.elapsed += time.Since(start)
	sd.ops += workers * ops
}

func (sd *stateSide) opsPerSec() float64 { return float64(sd.ops) / sd.elapsed.Seconds() }
