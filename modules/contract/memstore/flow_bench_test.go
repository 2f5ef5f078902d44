package memstore_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
)

// BenchmarkClaimLimits is a claim of 10 and its Complete over 1,000 busy
// tenants, without limits and with a cap and a rate on every tenant that
// never bind: the ratio of the two is what checking limits in the claim
// costs. Compare the sub-benchmarks of one run
// (go test -bench ClaimLimits -count 6).
func BenchmarkClaimLimits(b *testing.B) {
	loose := contract.Limits{MaxLeased: 10_000, Rate: contract.MaxRate, Burst: contract.MaxLimitLeased}
	for _, c := range []struct {
		name   string
		limits bool
	}{{"none", false}, {"loose", true}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := b.Context()
			s := memstore.New(contracttest.NewFakeClock(contracttest.FakeEpoch), memstore.Settings{})
			const tenants = 1000
			if c.limits {
				for t := range tenants {
					if err := s.SetLimits(ctx, "", fmt.Sprintf("t%04d", t), loose); err != nil {
						b.Fatal(err)
					}
				}
			}
			items := make([]contract.Item, 0, tenants)
			for t := range tenants {
				items = append(items, contract.Item{Tenant: fmt.Sprintf("t%04d", t), ID: "x"})
			}
			if err := s.Enqueue(ctx, items...); err != nil {
				b.Fatal(err)
			}
			claimCompleteRequeue(b, s)
		})
	}
}

// BenchmarkClaimTenantsScale is a claim of 10 and its Complete with 100
// and with 10,000 busy tenants, each with limits that never bind and
// three items: adkbench's limits-scale row, without the harness. The
// ratio of the two sub-benchmarks is what the count of tenants costs a
// claim (go test -bench ClaimTenantsScale -count 6). The tenants get
// their limits in a shuffled order, as adkbench sets them (from a map)
// and as tenants of a real queue arrive: in no order related to the
// rotation's, so with many tenants each one a claim serves lies
// somewhere else in memory.
func BenchmarkClaimTenantsScale(b *testing.B) {
	loose := contract.Limits{MaxLeased: 10_000, Rate: contract.MaxRate, Burst: contract.MaxLimitLeased}
	for _, tenants := range []int{100, 10_000} {
		b.Run(fmt.Sprint(tenants), func(b *testing.B) {
			ctx := b.Context()
			s := memstore.New(contracttest.NewFakeClock(contracttest.FakeEpoch), memstore.Settings{})
			for _, t := range rand.New(rand.NewPCG(1, 2)).Perm(tenants) {
				if err := s.SetLimits(ctx, "", fmt.Sprintf("t%05d", t), loose); err != nil {
					b.Fatal(err)
				}
			}
			items := make([]contract.Item, 0, 3*tenants)
			for t := range tenants {
				name := fmt.Sprintf("t%05d", t)
				for i := range 3 {
					items = append(items, contract.Item{Tenant: name, ID: fmt.Sprint(i)})
				}
			}
			if err := s.Enqueue(ctx, items...); err != nil {
				b.Fatal(err)
			}
			claimCompleteRequeue(b, s)
		})
	}
}

// BenchmarkClaimPastHeld is a claim of 10 from one tenant behind 10,
// 1,000 and 10,000 tenants held at their cap (each capped at 1 with its
// one lease live and an item queued). A claim passes each held tenant
// once, not once per item it serves (go test -bench ClaimPastHeld).
func BenchmarkClaimPastHeld(b *testing.B) {
	for _, held := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprint(held), func(b *testing.B) {
			ctx := b.Context()
			s := memstore.New(contracttest.NewFakeClock(contracttest.FakeEpoch), memstore.Settings{})
			var items []contract.Item
			for t := range held {
				name := fmt.Sprintf("h%05d", t)
				if err := s.SetLimits(ctx, "", name, contract.Limits{MaxLeased: 1}); err != nil {
					b.Fatal(err)
				}
				items = append(items, contract.Item{Tenant: name, ID: "a"}, contract.Item{Tenant: name, ID: "b"})
			}
			if err := s.Enqueue(ctx, items...); err != nil {
				b.Fatal(err)
			}
			for { // lease one item of every held tenant
				ls, err := s.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Hour, Max: 100})
				if err != nil || len(ls) == 0 {
					break
				}
			}
			free := []contract.Item{}
			for i := range 10 {
				free = append(free, contract.Item{Tenant: "free", ID: fmt.Sprint(i)})
			}
			req := contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10}
			for b.Loop() {
				if err := s.Enqueue(ctx, free...); err != nil {
					b.Fatal(err)
				}
				ls, err := s.Claim(ctx, req)
				if err != nil || len(ls) != 10 {
					b.Fatal(err, len(ls))
				}
				if err := s.Complete(ctx, ls...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// claimCompleteRequeue is the loop of the claim benchmarks: a claim of
// 10, its Complete, and the same items enqueued again, so that the queue
// stays the same size and every tenant busy.
func claimCompleteRequeue(b *testing.B, s *memstore.Store) {
	ctx := b.Context()
	req := contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10}
	back := make([]contract.Item, 0, req.Max)
	b.ReportAllocs()
	for b.Loop() {
		ls, err := s.Claim(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Complete(ctx, ls...); err != nil {
			b.Fatal(err)
		}
		back = back[:0]
		for _, l := range ls {
			back = append(back, contract.Item{Tenant: l.Item.Tenant, ID: l.Item.ID})
		}
		if err := s.Enqueue(ctx, back...); err != nil {
			b.Fatal(err)
		}
	}
}
