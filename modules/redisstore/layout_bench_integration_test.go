//go:build integration

package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkPreflightLayout measures Preflight over a namespace of one
// queue with 0, 10,000 and 100,000 tenants in the current layout: the
// layout check reads the tenant set a thousand at a time and checks each
// tenant's two old keys, so its cost grows with the tenants; tenants=0 is
// the baseline the others are a ratio of.
func BenchmarkPreflightLayout(b *testing.B) {
	ctx := context.Background()
	client := redistest.Client(b)
	for _, n := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprintf("tenants=%d", n), func(b *testing.B) {
			ns := redistest.Namespace(b, client)
			key := "{" + ns + ":queue}:q:" + lp("default") + ":tenants"
			for start := 0; start < n; start += 10_000 {
				members := make([]any, 0, 10_000)
				for i := start; i < min(start+10_000, n); i++ {
					members = append(members, "tenant-"+strconv.Itoa(i))
				}
				must(b, client.SAdd(ctx, key, members...).Err())
			}
			if n > 0 {
				must(b, client.SAdd(ctx, "{"+ns+":queue}:queues", "default").Err())
				must(b, client.ZAdd(ctx, "{"+ns+":queue}:q:"+lp("default")+":ready", redis.Z{Member: ""}).Err())
			}
			settings := redisstore.Settings{Namespace: ns, Volatile: true}
			b.ResetTimer()
			for b.Loop() {
				if _, err := redisstore.Preflight(ctx, client, settings); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMigrateLayout measures the migration of a namespace the
// earlier release wrote: 20,000 queued items and 5,000 dead letters over
// 1,000 tenants, in items (entries) moved per second.
func BenchmarkMigrateLayout(b *testing.B) {
	ctx := context.Background()
	client := redistest.Client(b)
	t0 := contracttest.FakeEpoch
	const tenants, per, deadPer = 1000, 25, 5
	for range b.N {
		b.StopTimer()
		ns := redistest.Namespace(b, client)
		o := newEarlierRelease(b, client, ns)
		var items []oldItem
		for i := range tenants {
			for j := range per {
				items = append(items, oldItem{tenant: "t" + strconv.Itoa(i), id: "i" + strconv.Itoa(j)})
			}
			if len(items) >= 500 {
				o.Enqueue("default", t0, items...)
				items = items[:0]
			}
		}
		for range tenants * deadPer / 500 {
			for _, l := range o.Claim("default", "w", t0, time.Minute, 500) {
				o.Bury("default", t0, l, "boom")
			}
		}
		q, err := redisstore.NewQueue(client, contracttest.NewFakeClock(t0), redisstore.Settings{Namespace: ns})
		must(b, err)
		b.StartTimer()
		start := time.Now()
		rep, err := q.MigrateLayout(ctx)
		must(b, err)
		elapsed := time.Since(start)
		b.StopTimer()
		if got := rep.Queues[0].Ready + rep.Queues[0].Dead; got != tenants*per {
			b.Fatalf("moved %d entries; want %d", got, tenants*per)
		}
		b.ReportMetric(float64(tenants*per)/elapsed.Seconds(), "entries/s")
		_ = q.Close()
		redistest.DeleteNamespace(b, client, ns)
		b.StartTimer()
	}
}
