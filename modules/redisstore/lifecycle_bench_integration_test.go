//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// BenchmarkLifecycleClaim measures the server's time per item of one
// client claiming 10 and completing them, over 100 busy tenants: with no
// lifecycle control in use (plain), and with a priority on every item
// (priority). It uses only what every release has, so the same file
// built against an earlier release gives the figures to compare with;
// server-µs/item (the scripts' own time on a private server) is the
// figure, items/s swings with the machine.
func BenchmarkLifecycleClaim(b *testing.B) {
	srv := redistest.StartServer(b)
	client := srv.Client(b, nil)
	for _, prio := range []bool{false, true} {
		name := "plain"
		if prio {
			name = "priority"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Namespace: redistest.Namespace(b, client), Volatile: true})
			if err != nil {
				b.Fatal(err)
			}
			defer q.Close()
			items := make([]contract.Item, 0, 500)
			for i := range b.N {
				it := contract.Item{Tenant: "t" + strconv.Itoa(i%100), ID: strconv.Itoa(i), Payload: []byte(`{"run":"r"}`)}
				if prio {
					it.Priority = i%21 - 10
				}
				items = append(items, it)
				if len(items) == cap(items) || i == b.N-1 {
					if err := q.Enqueue(ctx, items...); err != nil {
						b.Fatal(err)
					}
					items = items[:0]
				}
			}
			done := 0
			before := scriptTime(b, client)
			b.ResetTimer()
			start := time.Now()
			for done < b.N {
				ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
				if errors.Is(err, contract.ErrEmpty) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				if err := q.Complete(ctx, ls...); err != nil {
					b.Fatal(err)
				}
				done += len(ls)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			if done != b.N {
				b.Fatalf("completed %d of %d items", done, b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "items/s")
			b.ReportMetric(float64(scriptTime(b, client)-before)/float64(b.N), "server-µs/item")
		})
	}
}
