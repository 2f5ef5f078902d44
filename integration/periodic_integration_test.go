//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
)

// offsetClock is a backing's clock as another host reads it.
type offsetClock struct {
	base contract.Clock
	off  time.Duration
}

func (c offsetClock) Now() time.Time { return c.base.Now().Add(c.off) }

// TestPeriodicExactlyOncePerTick: ten processes run the same hundred
// schedules of one second for a minute of the backing's clock, their own
// clocks up to a second apart, each process's pass concurrent with the
// others' and some passes missed; workers complete every item as soon
// as it is due. Every tick of every schedule runs exactly once.
func TestPeriodicExactlyOncePerTick(t *testing.T) {
	const processes, schedules, seconds = 10, 100, 60
	for _, b := range backingsUnderTest(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			queue := "periodic-" + fmt.Sprint(time.Now().UnixNano())
			scheds := make([]runner.Schedule, schedules)
			for i := range scheds {
				scheds[i] = runner.Schedule{Name: fmt.Sprintf("s%03d", i), Every: time.Second, Queue: queue, Tenant: fmt.Sprintf("t%d", i%7)}
			}
			procs := make([]*runner.Periodic, processes)
			for i := range procs {
				off := time.Duration(i%5-2) * 450 * time.Millisecond // -0.9s .. +0.9s
				p, err := runner.NewPeriodic(b.queue, runner.PeriodicConfig{Clock: offsetClock{b.clock, off}, Schedules: scheds})
				if err != nil {
					t.Fatal(err)
				}
				procs[i] = p
			}
			start := b.clock.Now()
			seen := map[string]int{}
			drain := func() {
				for {
					leases, err := b.queue.Claim(ctx, contract.ClaimRequest{Queue: queue, Worker: "w", LeaseFor: time.Minute, Max: contract.MaxClaimBatch})
					if errors.Is(err, contract.ErrEmpty) {
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					for _, l := range leases {
						seen[l.Item.ID]++
					}
					if err := b.queue.Complete(ctx, leases...); err != nil {
						t.Fatal(err)
					}
				}
			}
			for step := range seconds {
				var wg sync.WaitGroup
				for i, p := range procs {
					if (i+step)%4 == 0 {
						continue
					}
					wg.Go(func() {
						if err := p.Pass(ctx); err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
				b.clock.Advance(time.Second)
				drain()
			}
			end := b.clock.Now()
			// The first tick enqueued is the first more than the Lead ahead
			// of the slowest clock that passed at the start (process 5's,
			// 0.9s behind).
			first := start.Add(-900*time.Millisecond + runner.DefaultPeriodicLead).Truncate(time.Second).Add(time.Second)
			ticks := int(end.Sub(first)/time.Second) + 1
			missing, twice := 0, 0
			for _, s := range scheds {
				for tick := first; !tick.After(end); tick = tick.Add(time.Second) {
					switch n := seen[s.Name+"@"+tick.UTC().Format(time.RFC3339)]; {
					case n == 0:
						missing++
					case n > 1:
						twice++
					}
				}
			}
			total := 0
			for _, n := range seen {
				total += n
			}
			if missing != 0 || twice != 0 || total != schedules*ticks {
				t.Fatalf("%d processes x %d schedules over %ds: %d items ran, want %d; %d ticks missing, %d ran more than once", processes, schedules, seconds, total, schedules*ticks, missing, twice)
			}
			t.Logf("%d items, one per schedule per tick", total)
		})
	}
}
