package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

// A session against a queue with two dead letters: list them, try a bulk
// requeue without --yes (nothing changes, exit 1), then requeue one.
func Example() {
	ctx := context.Background()
	clock := contracttest.NewFakeClock(time.Time{})
	s := memstore.New(clock, memstore.Settings{})
	_ = s.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-1"}, contract.Item{Tenant: "acme", ID: "run-2"})
	leases, _ := s.Claim(ctx, contract.ClaimRequest{Worker: "w1", LeaseFor: time.Minute, Max: 2})
	for _, l := range leases {
		_, _ = s.Fail(ctx, l, policy.Permanent(errors.New("model rate limited")))
	}
	clock.Advance(90 * time.Second)

	// In a shell the backing comes from ADK_REDIS_DSN or ADK_POSTGRES_DSN;
	// here it is the memstore above.
	a := &app{stdout: os.Stdout, stderr: os.Stdout, getenv: func(string) string { return "" }, clock: clock,
		open: func(context.Context, backing.Config) (*backing.Backing, error) {
			return &backing.Backing{Name: backing.Memory, Queue: s, Inspector: s, State: s}, nil
		}}
	a.run(ctx, []string{"dead", "list"})
	a.run(ctx, []string{"dead", "requeue", "--error", "rate limited"})
	a.run(ctx, []string{"dead", "requeue", "--tenant", "acme", "--id", "run-1"})
	// Output:
	// TENANT  ITEM   ATTEMPTS  DEAD       LAST ERROR          PAYLOAD
	// acme    run-1  1         1m30s ago  model rate limited
	// acme    run-2  1         1m30s ago  model rate limited
	// 2 dead letters match --queue default --error "rate limited"
	// adkctl dead requeue: nothing changed: a bulk requeue needs --yes; rerun with --yes to requeue the 2 letters
	// requeued dead letter acme / run-1 (queue default)
}
