package memstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
)

// BenchmarkFrontDoor measures the claim path with and without the
// contract's front door in one run: "front" claims and completes through
// the Store's exported methods, "driver" calls the store behind them
// directly with the input already normalised. Their ratio is what the
// checks and the one interface call cost.
func BenchmarkFrontDoor(b *testing.B) {
	for _, max := range []int{1, 100} {
		for _, way := range []string{"front", "driver"} {
			b.Run(fmt.Sprintf("Max%d/%s", max, way), func(b *testing.B) {
				st := New(contracttest.NewFakeClock(contracttest.FakeEpoch), Settings{})
				var q contract.WorkQueue = st
				if way == "driver" {
					q = st.s
				}
				BenchClaimComplete(b, q, max)
			})
		}
	}
}

// BenchClaimComplete claims up to max items of q and completes them on
// every iteration, refilling q with 100,000 items of 1,000 tenants (the
// timer stopped) whenever it runs dry. It is exported for the package's
// external tests (BenchmarkClaimComplete) and lives here because
// BenchmarkFrontDoor needs the driver behind a Store.
func BenchClaimComplete(b *testing.B, q contract.WorkQueue, max int) {
	ctx := context.Background()
	n := 0
	refill := func() {
		items := make([]contract.Item, 0, 100_000)
		for range 100_000 {
			items = append(items, contract.Item{Tenant: fmt.Sprintf("t%d", n%1000), ID: fmt.Sprint(n), Queue: contract.DefaultQueue})
			n++
		}
		if err := q.Enqueue(ctx, items...); err != nil {
			b.Fatal(err)
		}
	}
	refill()
	req := contract.ClaimRequest{Queue: contract.DefaultQueue, Worker: "w", LeaseFor: time.Minute, Max: max}
	for b.Loop() {
		ls, err := q.Claim(ctx, req)
		if errors.Is(err, contract.ErrEmpty) {
			b.StopTimer()
			refill()
			b.StartTimer()
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := q.Complete(ctx, ls...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFrontDoorPaired claims and completes through the front door
// and through the driver on every iteration, taking turns at going first,
// and reports each side's mean time per claim and complete and their
// ratio (front/driver). Load from elsewhere on a shared machine falls on
// both sides alike, so the ratio holds where BenchmarkFrontDoor's
// separate runs scatter.
func BenchmarkFrontDoorPaired(b *testing.B) {
	for _, max := range []int{1, 100} {
		b.Run(fmt.Sprintf("Max%d", max), func(b *testing.B) {
			clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
			st, other := New(clock, Settings{}), New(clock, Settings{})
			sides := [2]pairedSide{{q: st}, {q: other.s}}
			for i := range sides {
				sides[i].refill(b)
			}
			ctx := context.Background()
			req := contract.ClaimRequest{Queue: contract.DefaultQueue, Worker: "w", LeaseFor: time.Minute, Max: max}
			turn := 0
			for b.Loop() {
				for k := range 2 {
					sides[(turn+k)%2].claimComplete(ctx, b, req)
				}
				turn++
			}
			f, d := sides[0].mean(), sides[1].mean()
			b.ReportMetric(f, "front-ns/op")
			b.ReportMetric(d, "driver-ns/op")
			b.ReportMetric(f/d, "front/driver")
		})
	}
}

// pairedSide is one side of BenchmarkFrontDoorPaired: a queue, the items
// put in it so far, and the time its claims and completes took.
type pairedSide struct {
	q       contract.WorkQueue
	n       int
	elapsed time.Duration
	ops     int
}

func (s *pairedSide) refill(b *testing.B) {
	items := make([]contract.Item, 0, 100_000)
	for range 100_000 {
		items = append(items, contract.Item{Tenant: fmt.Sprintf("t%d", s.n%1000), ID: fmt.Sprint(s.n), Queue: contract.DefaultQueue})
		s.n++
	}
	if err := s.q.Enqueue(context.Background(), items...); err != nil {
		b.Fatal(err)
	}
}

func (s *pairedSide) claimComplete(ctx context.Context, b *testing.B, req contract.ClaimRequest) {
	for {
		start := time.Now()
		ls, err := s.q.Claim(ctx, req)
		if errors.Is(err, contract.ErrEmpty) {
			b.StopTimer()
			s.refill(b)
			b.StartTimer()
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := s.q.Complete(ctx, ls...); err != nil {
			b.Fatal(err)
		}
		s.elapsed += time.Since(start)
		s.ops++
		return
	}
}

func (s *pairedSide) mean() float64 { return float64(s.elapsed.Nanoseconds()) / float64(s.ops) }
