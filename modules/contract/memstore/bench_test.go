package memstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

// dashboardStore fills a store the size of the dashboard benchmark:
// 100,000 dead letters and 10,000 live leases over 100 tenants, plus
// 10,000 queued items.
func dashboardStore(b *testing.B) *memstore.Store {
	b.Helper()
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	s := memstore.New(clock, memstore.Settings{Policy: policy.Policy{MaxAttempts: 1}})
	ctx := b.Context()
	const tenants = 100
	batch := make([]contract.Item, 0, 1000)
	flush := func() {
		if err := s.Enqueue(ctx, batch...); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := range 100_000 {
		batch = append(batch, contract.Item{Tenant: fmt.Sprintf("t%03d", i%tenants), ID: fmt.Sprintf("dead-%d", i), Payload: []byte("{}")})
		if len(batch) == cap(batch) {
			flush()
		}
	}
	for {
		ls, err := s.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1000})
		if errors.Is(err, contract.ErrEmpty) {
			break
		}
		for _, l := range ls {
			if _, err := s.Fail(ctx, l, errors.New("poison")); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range 20_000 {
		batch = append(batch, contract.Item{Tenant: fmt.Sprintf("t%03d", i%tenants), ID: fmt.Sprintf("live-%d", i)})
		if len(batch) == cap(batch) {
			flush()
		}
	}
	for range 10 {
		clock.Advance(time.Millisecond)
		if _, err := s.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1000}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func BenchmarkDashboard(b *testing.B) {
	s := dashboardStore(b)
	ctx := b.Context()
	b.Run("Tenants", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Tenants(ctx, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Rotation", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Rotation(ctx, "", 100); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("LeasesPage", func(b *testing.B) {
		p, _ := s.Leases(ctx, "", contract.PageRequest{Limit: 50})
		for b.Loop() {
			if _, err := s.Leases(ctx, "", contract.PageRequest{Limit: 50, Cursor: p.Next}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DeadLettersPage", func(b *testing.B) {
		p, _ := s.DeadLetters(ctx, contract.DeadLetterQuery{Page: contract.PageRequest{Limit: 50}})
		for b.Loop() {
			if _, err := s.DeadLetters(ctx, contract.DeadLetterQuery{Page: contract.PageRequest{Limit: 50, Cursor: p.Next}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DeadLettersPageOneTenant", func(b *testing.B) {
		f := contract.DeadLetterFilter{Tenant: "t042"}
		for b.Loop() {
			if _, err := s.DeadLetters(ctx, contract.DeadLetterQuery{DeadLetterFilter: f, Page: contract.PageRequest{Limit: 50}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Health", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Health(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkClaimComplete measures one claim of a batch and its complete
// against a queue of 1,000 tenants, 100 items each.
func BenchmarkClaimComplete(b *testing.B) {
	for _, max := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("Max%d", max), func(b *testing.B) {
			s := memstore.New(contracttest.NewFakeClock(contracttest.FakeEpoch), memstore.Settings{})
			memstore.BenchClaimComplete(b, s, max)
		})
	}
}

func BenchmarkPatchRunParallel(b *testing.B) {
	s := memstore.New(nil, memstore.Settings{})
	ctx := b.Context()
	if _, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "hot"}); err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.PatchRun(ctx, "acme", "hot", contract.Patch{Counters: contract.Counters{Iterations: 1}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
