//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// BenchmarkFlowLimits measures what checking limits in the claim costs
// when they bind nobody: 10 workers claiming batches of 10 from 1,000
// busy tenants, with no limits, and with a cap and a rate on every tenant
// that never bind. server-µs/item (the scripts' own time on a private
// server) is the figure to compare; items/s swings with the machine.
func BenchmarkFlowLimits(b *testing.B) {
	srv := redistest.StartServer(b)
	client := srv.Client(b, nil)
	loose := contract.Limits{MaxLeased: 10_000, Rate: contract.MaxRate, Burst: contract.MaxLimitLeased}
	for _, limited := range []bool{false, true} {
		b.Run("limits="+strconv.FormatBool(limited), func(b *testing.B) {
			ctx := context.Background()
			q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Namespace: redistest.Namespace(b, client), Volatile: true})
			if err != nil {
				b.Fatal(err)
			}
			defer q.Close()
			const tenants = 1000
			if limited {
				for i := range tenants {
					if err := q.SetLimits(ctx, "", "t"+strconv.Itoa(i), loose); err != nil {
						b.Fatal(err)
					}
				}
			}
			items := make([]contract.Item, 0, 500)
			for i := range b.N {
				items = append(items, contract.Item{Tenant: "t" + strconv.Itoa(i%tenants), ID: strconv.Itoa(i), Payload: []byte(`{"run":"r"}`)})
				if len(items) == cap(items) || i == b.N-1 {
					if err := q.Enqueue(ctx, items...); err != nil {
						b.Fatal(err)
					}
					items = items[:0]
				}
			}
			var done atomic.Int64
			var wg sync.WaitGroup
			before := scriptTime(b, client)
			b.ResetTimer()
			start := time.Now()
			for w := range 10 {
				wg.Go(func() {
					worker := "w" + strconv.Itoa(w)
					for done.Load() < int64(b.N) {
						ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: worker, LeaseFor: time.Minute, Max: 10})
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
			if got := done.Load(); got != int64(b.N) {
				b.Fatalf("completed %d of %d items", got, b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "items/s")
			b.ReportMetric(float64(scriptTime(b, client)-before)/float64(b.N), "server-µs/item")
		})
	}
}
