//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkLifecycleOneTenant measures the server's time per item of one
// client claiming 10 and completing them from one busy tenant, as
// adkbench's lifecycle scenario loads it: plain, and with a priority on
// every item (-5..5, out of step with the enqueue order), and with
// those priorities and every 100th item snoozed once. With -v it
// logs the server time per item each command took.
func BenchmarkLifecycleOneTenant(b *testing.B) {
	srv := redistest.StartServer(b)
	client := srv.Client(b, nil)
	for _, mode := range []string{"plain", "priority", "priority+snooze"} {
		name, prio, snooze := mode, mode != "plain", mode == "priority+snooze"
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Namespace: redistest.Namespace(b, client), Volatile: true})
			if err != nil {
				b.Fatal(err)
			}
			defer q.Close()
			items := make([]contract.Item, 0, 500)
			for i := range b.N {
				it := contract.Item{Tenant: "t", ID: strconv.Itoa(i), Payload: []byte(`{"run":"r"}`)}
				if prio {
					it.Priority = i*7%11 - 5
				}
				items = append(items, it)
				if len(items) == cap(items) || i == b.N-1 {
					if err := q.Enqueue(ctx, items...); err != nil {
						b.Fatal(err)
					}
					items = items[:0]
				}
			}
			done, snoozes, snoozeUs := 0, 0, int64(0)
			before := scriptTime(b, client)
			time0 := commandTime(b, client)
			b.ResetTimer()
			start := time.Now()
			for done < b.N {
				ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
				if errors.Is(err, contract.ErrEmpty) && snooze && done < b.N {
					time.Sleep(time.Millisecond)
					continue
				}
				if errors.Is(err, contract.ErrEmpty) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				if snooze {
					keep := ls[:0]
					for _, l := range ls {
						n, _ := strconv.Atoi(l.Item.ID)
						if n%100 == 0 && l.Item.Snoozes == 0 {
							t0 := scriptTime(b, client)
							if _, err := q.Snooze(ctx, l, time.Millisecond); err != nil {
								b.Fatal(err)
							}
							snoozeUs += scriptTime(b, client) - t0
							snoozes++
							continue
						}
						keep = append(keep, l)
					}
					ls = keep
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
			if snoozes > 0 {
				b.ReportMetric(float64(snoozeUs)/float64(snoozes), "server-µs/snooze")
			}
			if testing.Verbose() && b.N >= 1000 {
				time1 := commandTime(b, client)
				var sb strings.Builder
				for _, c := range slices.Sorted(maps.Keys(time1)) {
					if d := time1[c] - time0[c]; d > 0 {
						sb.WriteString(c + "=" + strconv.FormatFloat(float64(d)/float64(b.N), 'f', 3, 64) + " ")
					}
				}
				b.Logf("N=%d server µs (#: calls) per item by command: %s", b.N, sb.String())
			}
		})
	}
}

// commandTime reads the time (µs) of every command from INFO commandstats,
// and under "#" and the command's name how many calls it had.
func commandTime(b testing.TB, c redis.UniversalClient) map[string]int64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				out[strings.TrimPrefix(name, "cmdstat_")] = n
			}
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				out["#"+strings.TrimPrefix(name, "cmdstat_")] = n
			}
		}
	}
	return out
}
