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
				benchClaimComplete(b, q, max)
			})
		}
	}
}

func benchClaimComplete(b *testing.B, q contract.WorkQueue, max int) {
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
