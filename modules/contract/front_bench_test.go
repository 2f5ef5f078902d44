package contract_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// nullDriver answers a claim with the leases it was built with and
// accepts every complete, so BenchmarkFrontClaimPath times the front
// door's own work: what it adds to every backing's claim path.
type nullDriver struct {
	contract.QueueDriver
	leases []contract.Lease
}

func (d nullDriver) Claim(context.Context, contract.ClaimRequest) ([]contract.Lease, error) {
	return d.leases, nil
}

func (d nullDriver) Complete(context.Context, ...contract.Lease) error { return nil }

// BenchmarkFrontClaimPath claims and completes through a front door over
// a driver that does nothing ("front") and calls that driver directly
// ("driver"), taking turns in one loop; the difference per op is the
// front door's cost on a claim of Max items, to be set beside a
// backing's own claim (memstore's BenchmarkFrontDoor).
func BenchmarkFrontClaimPath(b *testing.B) {
	for _, max := range []int{1, 100} {
		b.Run(fmt.Sprintf("Max%d", max), func(b *testing.B) {
			leases := make([]contract.Lease, max)
			for i := range leases {
				leases[i] = contract.Lease{Item: contract.Item{Tenant: fmt.Sprintf("tenant-%d", i), ID: fmt.Sprintf("item-%d", i), Queue: contract.DefaultQueue}, Worker: "worker-1", Token: int64(i + 1)}
			}
			d := nullDriver{leases: leases}
			front := contract.NewQueueFront(d, 0, "null")
			sides := [2]contract.WorkQueue{front, d}
			var elapsed [2]time.Duration
			ctx := context.Background()
			req := contract.ClaimRequest{Worker: "worker-1", LeaseFor: time.Minute, Max: max}
			for b.Loop() {
				for k := range sides {
					start := time.Now()
					for range 64 {
						ls, err := sides[k].Claim(ctx, req)
						if err != nil {
							b.Fatal(err)
						}
						if err := sides[k].Complete(ctx, ls...); err != nil {
							b.Fatal(err)
						}
					}
					elapsed[k] += time.Since(start)
				}
			}
			ops := float64(b.N) * 64
			b.ReportMetric(float64(elapsed[0].Nanoseconds())/ops, "front-ns/op")
			b.ReportMetric(float64(elapsed[1].Nanoseconds())/ops, "driver-ns/op")
			b.ReportMetric(float64((elapsed[0]-elapsed[1]).Nanoseconds())/ops, "added-ns/op")
		})
	}
}
