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

// A person in the loop: an agent run waits for an approval; the operator
// sees what waits, sends the wrong signal (refused, exit 1, nothing
// changes), then the right one, and counts what a bulk cancel would touch.
func Example_lifecycle() {
	ctx := context.Background()
	clock := contracttest.NewFakeClock(time.Time{})
	s := memstore.New(clock, memstore.Settings{})
	_ = s.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-1"}, contract.Item{Tenant: "acme", ID: "run-2"})
	leases, _ := s.Claim(ctx, contract.ClaimRequest{Worker: "w1", LeaseFor: time.Minute, Max: 1})
	_ = s.Wait(ctx, leases[0], contract.WaitRequest{Signal: "approval", Timeout: time.Hour})
	clock.Advance(5 * time.Minute)

	a := &app{stdout: os.Stdout, stderr: os.Stdout, getenv: func(string) string { return "" }, clock: clock,
		open: func(context.Context, backing.Config) (*backing.Backing, error) {
			return &backing.Backing{Name: backing.Memory, Queue: s, Inspector: s, State: s}, nil
		}}
	a.run(ctx, []string{"waiting"})
	a.run(ctx, []string{"signal", "--tenant", "acme", "--id", "run-1", "--signal", "approved"})
	a.run(ctx, []string{"signal", "--tenant", "acme", "--id", "run-1", "--signal", "approval", "--payload", `{"ok":true}`})
	a.run(ctx, []string{"cancel", "--match", "--tenant", "acme", "--dry-run"})
	// Output:
	// TENANT  ITEM   SIGNAL    WAITING SINCE  TIMES OUT
	// acme    run-1  approval  5m00s ago      in 55m00s
	// adkctl signal: nothing changed: item acme / run-1 in queue default waits for signal approval, not approved
	// item acme / run-1 in queue default resumed by signal approval (11 bytes): due now
	// 2 items match --queue default --tenant acme
}
