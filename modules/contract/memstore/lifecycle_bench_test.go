package memstore_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
)

// BenchmarkLifecycleDrain drains 20,000 items of one tenant by claims of
// 10 and their Complete, as adkbench's lifecycle scenario does: plain,
// and with a priority from -5 to 5 on every item (out of step with the
// enqueue order) and every 100th item snoozing 10ms once. The fake clock
// moves 1µs a claim, so the snoozers come due while the drain goes on.
// The ratio of the two is what priorities and snoozes cost in the store
// (go test -bench LifecycleDrain -count 6).
func BenchmarkLifecycleDrain(b *testing.B) {
	const n = 20_000
	for _, controls := range []bool{false, true} {
		name := "plain"
		if controls {
			name = "lifecycle"
		}
		b.Run(name, func(b *testing.B) {
			ctx := b.Context()
			items := make([]contract.Item, n)
			for i := range items {
				items[i] = contract.Item{Tenant: "t", ID: strconv.Itoa(i), Payload: []byte("{}")}
				if controls {
					items[i].Priority = i*7%11 - 5
				}
			}
			req := contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
				s := memstore.New(clock, memstore.Settings{})
				for i := 0; i < n; i += 1000 {
					if err := s.Enqueue(ctx, items[i:i+1000]...); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				done := make([]contract.Lease, 0, 10)
				for left := n; left > 0; {
					clock.Advance(time.Microsecond)
					ls, err := s.Claim(ctx, req)
					if errors.Is(err, contract.ErrEmpty) {
						clock.Advance(10 * time.Millisecond)
						continue
					}
					if err != nil {
						b.Fatal(err)
					}
					done = done[:0]
					for _, l := range ls {
						if controls && l.Item.Snoozes == 0 && snoozer(l.Item.ID) {
							if _, err := s.Snooze(ctx, l, 10*time.Millisecond); err != nil {
								b.Fatal(err)
							}
							continue
						}
						done = append(done, l)
					}
					if err := s.Complete(ctx, done...); err != nil {
						b.Fatal(err)
					}
					left -= len(done)
				}
			}
		})
	}
}

// snoozer is whether the drain snoozes item id: every 100th, the first
// included.
func snoozer(id string) bool {
	i, err := strconv.Atoi(id)
	return err == nil && i%100 == 0
}
