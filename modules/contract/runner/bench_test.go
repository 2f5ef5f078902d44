package runner_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/contract/runner"
)

// BenchmarkRunnerNoop measures claim→handle→complete throughput over
// memstore with a handler that does nothing: the runner's own overhead.
func BenchmarkRunnerNoop(b *testing.B) {
	for _, conc := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			store := memstore.New(nil, memstore.Settings{})
			ctx := context.Background()
			items := make([]contract.Item, 0, 1000)
			for i := range b.N {
				items = append(items, contract.Item{Tenant: fmt.Sprint("t", i%10), ID: fmt.Sprint(i)})
				if len(items) == cap(items) || i == b.N-1 {
					if err := store.Enqueue(ctx, items...); err != nil {
						b.Fatal(err)
					}
					items = items[:0]
				}
			}
			var done atomic.Int64
			all := make(chan struct{})
			r, err := runner.New(store, func(context.Context, contract.Lease) error {
				if done.Add(1) == int64(b.N) {
					close(all)
				}
				return nil
			}, runner.Config{Concurrency: conc, PollInterval: 10 * time.Millisecond, CompleteDelay: time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			rctx, stop := context.WithCancel(ctx)
			ran := make(chan error, 1)
			b.ResetTimer()
			go func() { ran <- r.Run(rctx) }()
			<-all
			stop()
			if err := <-ran; err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}
