//go:build integration

package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

// BenchmarkClaimComplete measures items/s through enqueue → batch claim →
// batch complete, with the items enqueued up front (untimed) and workers
// claiming batches of 100 and completing each batch in one statement.
//
// The limits rows run the same loads on a queue with flow-control limits
// (claim_flow.sql instead of claim.sql): "loose" gives every busy tenant
// its own cap and rate that never bind, "other" sets a cap on one tenant
// that holds no work, so the busy ones are walked without limits of
// their own. Compare each with the row of the same load without.
//
// The rows with small batches (claims of 10 by 10 workers, the shape of
// adkbench's lifecycle scenario) come in pairs: plain, and with every
// item given a priority from -5 to 5 out of step with the enqueue order,
// so that the claims reorder the tenant's items. Compare the two.
func BenchmarkClaimComplete(b *testing.B) {
	for _, tc := range []struct {
		tenants, idle int
		limits        string
		small         bool // claims of 10 by 10 workers
		priorities    bool
	}{{1, 0, "", false, false}, {1, 49, "", false, false}, {50, 0, "", false, false}, {1, 999, "", false, false},
		{1, 0, "loose", false, false}, {50, 0, "loose", false, false}, {50, 0, "other", false, false},
		{1, 0, "", true, false}, {1, 0, "", true, true}} {
		name := fmt.Sprintf("busy=%d/idle=%d", tc.tenants, tc.idle)
		if tc.limits != "" {
			name += "/limits=" + tc.limits
		}
		workers, batch := 4, 100
		if tc.small {
			workers, batch = 10, 10
			name += "/batch=10"
		}
		if tc.priorities {
			name += "/priorities"
		}
		b.Run(name, func(b *testing.B) {
			benchClaimComplete(b, tc.tenants, tc.idle, workers, batch, tc.limits, tc.priorities)
		})
	}
}

func benchClaimComplete(b *testing.B, tenants, idle, workers, batch int, limits string, priorities bool) {
	d := newTestDB(b, withMaxConns(int32(workers+2)))
	q, err := pgstore.NewQueue(d.pool, contract.SystemClock{}, d.settings(pgstore.Settings{}))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	switch limits {
	case "loose":
		for i := range tenants {
			if err := q.SetLimits(ctx, "", fmt.Sprintf("busy-%02d", i), contract.Limits{MaxLeased: 1_000_000, Rate: 1_000_000}); err != nil {
				b.Fatal(err)
			}
		}
	case "other":
		if err := q.SetLimits(ctx, "", "elsewhere", contract.Limits{MaxLeased: 2}); err != nil {
			b.Fatal(err)
		}
	}
	// Idle tenants hold a turn row but no ready work.
	for i := range idle {
		it := contract.Item{Tenant: fmt.Sprintf("idle-%02d", i), ID: "x", NotBefore: time.Now().Add(time.Hour)}
		if err := q.Enqueue(ctx, it); err != nil {
			b.Fatal(err)
		}
	}
	n := max(b.N, 1)
	items := make([]contract.Item, 0, 1000)
	for i := range n {
		it := contract.Item{Tenant: fmt.Sprintf("busy-%02d", i%tenants), ID: fmt.Sprint("i", i), Payload: []byte("{}")}
		if priorities {
			it.Priority = i*7%11 - 5
		}
		items = append(items, it)
		if len(items) == cap(items) || i == n-1 {
			if err := q.Enqueue(ctx, items...); err != nil {
				b.Fatal(err)
			}
			items = items[:0]
		}
	}
	if _, err := d.pool.Exec(ctx, "ANALYZE adk_work"); err != nil {
		b.Fatal(err)
	}
	var done atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			for done.Load() < int64(n) {
				ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: fmt.Sprint("w", w), LeaseFor: time.Minute, Max: batch})
				if errors.Is(err, contract.ErrEmpty) && limits != "" {
					// Another worker holds every gated tenant: they are
					// served one claim at a time.
					runtime.Gosched()
					continue
				}
				if errors.Is(err, contract.ErrEmpty) {
					return
				}
				if err != nil {
					b.Error(err)
					return
				}
				if err := q.Complete(ctx, ls...); err != nil {
					b.Error(err)
					return
				}
				done.Add(int64(len(ls)))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if got := done.Load(); got != int64(n) {
		b.Fatalf("completed %d of %d", got, n)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "items/s")
}

// BenchmarkWakeLatency measures enqueue commit → claim for a claimer that
// sleeps on Subscribe: LISTEN/NOTIFY against poll-only at 50 ms.
func BenchmarkWakeLatency(b *testing.B) {
	b.Run("listen", func(b *testing.B) { benchWake(b, true) })
	b.Run("poll-50ms", func(b *testing.B) { benchWake(b, false) })
}

func benchWake(b *testing.B, listen bool) {
	d := newTestDB(b)
	s := pgstore.Settings{PollInterval: 50 * time.Millisecond}
	if listen {
		s.Listener = d.listener(b, pgstore.ListenerSettings{})
	}
	q, err := pgstore.NewQueue(d.pool, contract.SystemClock{}, d.settings(s))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	wake, stop := q.Subscribe("")
	defer stop()
	claimed := make(chan time.Time)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-quit:
				return
			case <-wake:
			}
			ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
			if errors.Is(err, contract.ErrEmpty) {
				continue
			}
			if err != nil {
				b.Error(err)
				return
			}
			at := time.Now()
			if err := q.Complete(ctx, ls...); err != nil {
				b.Error(err)
				return
			}
			select {
			case claimed <- at:
			case <-quit:
				return
			}
		}
	})
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		// Enqueue at a random phase of the poll ticks, so poll-only
		// latency is not an artefact of the loop's own rhythm.
		time.Sleep(time.Duration(rand.Int64N(int64(50 * time.Millisecond))))
		if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: fmt.Sprint("i", i)}); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		select {
		case at := <-claimed:
			lat = append(lat, at.Sub(t0))
		case <-time.After(10 * time.Second):
			b.Fatal("no claim within 10s")
		}
	}
	b.StopTimer()
	close(quit)
	wg.Wait()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkClaimDepth measures the latency of a one-item claim with 1,000
// and with 1,000,000 items queued (across 50 tenants): an index scan keeps
// it flat in depth. Each op claims, completes and enqueues a replacement,
// so the depth stays put; claim-us is the median claim alone.
func BenchmarkClaimDepth(b *testing.B) {
	for _, depth := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprint("depth=", depth), func(b *testing.B) {
			d := newTestDB(b)
			ctx := context.Background()
			if _, err := d.pool.Exec(ctx, fmt.Sprintf(`
				INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at)
				SELECT 'default', 'tenant-' || (g %% 50), 'seed-' || g, 'queued', now() - interval '1 hour', now()
				FROM generate_series(1, %d) g;
				INSERT INTO adk_queue_turns (queue, tenant) SELECT 'default', 'tenant-' || g FROM generate_series(0, 49) g;
				ANALYZE adk_queue_turns`, depth)); err != nil {
				b.Fatal(err)
			}
			if _, err := d.pool.Exec(ctx, "VACUUM ANALYZE adk_work"); err != nil {
				b.Fatal(err)
			}
			q, err := pgstore.NewQueue(d.pool, contract.SystemClock{}, d.settings(pgstore.Settings{}))
			if err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				if err := q.Complete(ctx, ls...); err != nil {
					b.Fatal(err)
				}
				if err := q.Enqueue(ctx, contract.Item{Tenant: ls[0].Item.Tenant, ID: fmt.Sprint("new-", i)}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "claim-us")
		})
	}
}
