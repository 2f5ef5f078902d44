package runner_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/runner"
)

// A handler's Charge counts against its tenant's budget at once: a tenant
// over budget is not served again, while the others are.
func TestChargeHoldsTenantOverBudget(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := newStore(clock)
	ctx := context.Background()
	budget := contract.Limits{Budget: contract.Budget{CostMicros: 100, Window: time.Hour}}
	if err := store.SetLimits(ctx, "", "", budget); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ran := map[string]int{}
	h := func(ctx context.Context, l contract.Lease) error {
		mu.Lock()
		ran[l.Item.Tenant]++
		mu.Unlock()
		cost := int64(10)
		if l.Item.Tenant == "spender" {
			cost = 100 // one call spends the whole budget
		}
		return runner.Charge(ctx, contract.Usage{CostMicros: cost, Tokens: 1})
	}
	cfg := fastConfig(clock)
	cfg.Concurrency = 1
	r, err := runner.New(store, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var items []contract.Item
	for i := range 3 {
		items = append(items, contract.Item{Tenant: "spender", ID: string(rune('a' + i))}, contract.Item{Tenant: "thrifty", ID: string(rune('a' + i))})
	}
	if err := store.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitFor(t, "thrifty's three items", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ran["thrifty"] == 3
	})
	st, err := store.FlowStatus(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tf := range st {
		if tf.Tenant == "spender" && (tf.Held != contract.HeldBudget || tf.BudgetUsed.CostMicros != 100) {
			t.Errorf("spender's standing = %+v, want held by its budget at 100 micros", tf)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if ran["spender"] != 1 {
		t.Errorf("spender ran %d items, want 1: its first spent the budget", ran["spender"])
	}
}

func TestChargeOutsideAHandler(t *testing.T) {
	if err := runner.Charge(context.Background(), contract.Usage{Tokens: 1}); !errors.Is(err, runner.ErrNoItem) {
		t.Fatalf("Charge outside a handler = %v, want ErrNoItem", err)
	}
}

// A claim that found only a rate-held tenant wakes the runner when its
// next token accrues, not at the next poll.
func TestRateHoldEndsBeforeThePoll(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := newStore(clock)
	ctx := context.Background()
	if err := store.SetLimits(ctx, "", "acme", contract.Limits{Rate: 20, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ran := 0
	h := func(ctx context.Context, l contract.Lease) error {
		mu.Lock()
		ran++
		mu.Unlock()
		return nil
	}
	cfg := fastConfig(clock)
	cfg.PollInterval = time.Hour // only a wake or the hold's end brings a claim
	r, err := runner.New(store, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "1"}, contract.Item{Tenant: "acme", ID: "2"}); err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitFor(t, "the first item", func() bool { mu.Lock(); defer mu.Unlock(); return ran >= 1 })
	// The bucket refills in 50 ms of the store's clock; move it on, and
	// the runner's hold timer (50 ms of real time) brings the next claim.
	clock.Advance(time.Second)
	waitFor(t, "the second item, at the end of the rate hold", func() bool { mu.Lock(); defer mu.Unlock(); return ran == 2 })
}
