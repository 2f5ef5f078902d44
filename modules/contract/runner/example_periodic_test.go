package runner_test

import (
	"context"
	"fmt"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/contract/runner"
)

// Two processes run the same schedule; each tick is enqueued once, ahead
// of time, and becomes due at the tick.
func ExamplePeriodic() {
	ctx := context.Background()
	clock := contracttest.NewFakeClock(time.Date(2026, 12, 1, 8, 59, 50, 0, time.UTC))
	q := memstore.New(clock, memstore.Settings{})
	berlin, _ := time.LoadLocation("Europe/Berlin")
	sched := runner.Schedule{Name: "digest", Cron: "0 10 * * *", Location: berlin, Tenant: "ops"}

	for range 2 { // two processes
		p, err := runner.NewPeriodic(q, runner.PeriodicConfig{Clock: clock, Schedules: []runner.Schedule{sched}})
		if err != nil {
			fmt.Println(err)
			return
		}
		_ = p.Pass(ctx) // Run calls this every Interval
	}
	clock.Advance(10 * time.Second) // 10:00 in Berlin
	leases, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range leases {
		fmt.Println(l.Item.ID, l.Item.Metadata[runner.MetaTick])
	}
	// Output: digest@2026-12-01T09:00:00Z 2026-12-01T09:00:00Z
}
