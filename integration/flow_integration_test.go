//go:build integration

package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/contract/runner"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/adkit/adk/modules/sqlitestore"
)

// flowWorkers opens n queues of one backing over the same data, each as a
// separate worker process would: its own client, pool or database handle.
type flowWorkers struct {
	name string
	open func(t *testing.T, n int) []contract.WorkQueue
}

// flowBackings are the backings whose queues enforce limits.
var flowBackings = []flowWorkers{
	{"memstore", func(t *testing.T, n int) []contract.WorkQueue {
		// One process's store: every worker shares it.
		s := memstore.New(contract.SystemClock{}, memstore.Settings{})
		out := make([]contract.WorkQueue, n)
		for i := range out {
			out[i] = s
		}
		return out
	}},
	{"redisstore", func(t *testing.T, n int) []contract.WorkQueue {
		opt, err := redis.ParseURL(RedisURL(t))
		if err != nil {
			t.Fatal(err)
		}
		first := redis.NewClient(opt)
		t.Cleanup(func() { _ = first.Close() })
		ns := redistest.Namespace(t, first)
		out := make([]contract.WorkQueue, n)
		for i := range out {
			c := redis.NewClient(opt)
			t.Cleanup(func() { _ = c.Close() })
			q, err := redisstore.NewQueue(c, nil, redisstore.Settings{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = q.Close() })
			out[i] = q
		}
		return out
	}},
	{"pgstore", func(t *testing.T, n int) []contract.WorkQueue {
		schema := pgstoretest.TestSchema(t, PostgresDSN(t), nil)
		out := make([]contract.WorkQueue, n)
		for i := range out {
			pool := schema.Pool(t, func(c *pgxpool.Config) { c.MaxConns = 4 })
			q, err := pgstore.NewQueue(pool, nil, pgstore.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			out[i] = q
		}
		return out
	}},
	{"sqlitestore", func(t *testing.T, n int) []contract.WorkQueue {
		path := filepath.Join(t.TempDir(), "adk.db")
		out := make([]contract.WorkQueue, n)
		for i := range out {
			db, err := sqlitestore.OpenDB(path, sqlitestore.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			if i == 0 {
				if err := sqlitestore.Prepare(t.Context(), db, sqlitestore.Settings{}); err != nil {
					t.Fatal(err)
				}
			}
			q, err := sqlitestore.NewQueue(db, nil, sqlitestore.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			out[i] = q
		}
		return out
	}},
}

// TestFlowCapAcrossWorkers: four workers, each with its own connection to
// the backing and a runner of five handlers, drain a tenant capped at two
// leases beside an uncapped one. The capped tenant's handlers never run
// three at once anywhere (a handler runs while its lease is live, so the
// queue's count is at least the handlers'), and every item runs exactly
// once.
func TestFlowCapAcrossWorkers(t *testing.T) {
	const workers, conc, perTenant, capLeases = 4, 5, 120, 2
	for _, fb := range flowBackings {
		t.Run(fb.name, func(t *testing.T) {
			qs := fb.open(t, workers)
			ctx := t.Context()
			fc, ok := contract.AsFlowController(qs[0])
			if !ok {
				t.Fatalf("%s does not enforce limits", fb.name)
			}
			queue := "flow"
			if err := fc.SetLimits(ctx, queue, "capped", contract.Limits{MaxLeased: capLeases}); err != nil {
				t.Fatal(err)
			}
			var items []contract.Item
			for i := range perTenant {
				items = append(items,
					contract.Item{Tenant: "capped", ID: fmt.Sprint("c", i), Queue: queue},
					contract.Item{Tenant: "free", ID: fmt.Sprint("f", i), Queue: queue})
			}
			for i := 0; i < len(items); i += 100 {
				if err := qs[0].Enqueue(ctx, items[i:min(i+100, len(items))]...); err != nil {
					t.Fatal(err)
				}
			}
			var inFlight, peak atomic.Int64
			var mu sync.Mutex
			ran := map[string]int{}
			allDone := make(chan struct{})
			var left atomic.Int64
			left.Store(2 * perTenant)
			h := func(ctx context.Context, l contract.Lease) error {
				if l.Item.Tenant == "capped" {
					n := inFlight.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					// Hold the slot a moment, so the handlers overlap.
					for range 50 {
						runtime.Gosched()
					}
					inFlight.Add(-1)
				}
				mu.Lock()
				ran[l.Item.Tenant+"/"+l.Item.ID]++
				mu.Unlock()
				if left.Add(-1) == 0 {
					close(allDone)
				}
				return nil
			}
			runCtx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for i, q := range qs {
				r, err := runner.New(q, h, runner.Config{
					Worker: fmt.Sprint("w", i), Queue: queue, Concurrency: conc, BatchSize: 4,
					LeaseFor: time.Minute, PollInterval: 20 * time.Millisecond, ReapInterval: -1,
				})
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() { _ = r.Run(runCtx) })
			}
			select {
			case <-allDone:
			case <-time.After(2 * time.Minute):
				t.Errorf("the workers did not finish: %d items left", left.Load())
			}
			stop()
			wg.Wait()
			if p := peak.Load(); p > capLeases {
				t.Errorf("the capped tenant ran %d handlers at once across the workers; its cap is %d", p, capLeases)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, it := range items {
				if n := ran[it.Tenant+"/"+it.ID]; n != 1 {
					t.Errorf("%s/%s ran %d times, want once", it.Tenant, it.ID, n)
				}
			}
		})
	}
}
