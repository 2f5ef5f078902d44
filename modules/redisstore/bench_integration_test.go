//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkClaimComplete measures claim+complete throughput with 10
// workers against the shared server: one busy tenant alone, and the same
// with 49 idle tenants beside it (tenants that had work and have none
// now), which must cost nothing. Each worker claims a batch, completes it
// in one call, and repeats.
func BenchmarkClaimComplete(b *testing.B) {
	for _, idle := range []int{0, 49} {
		for _, batch := range []int{1, 10, 50, 200} {
			b.Run(fmt.Sprintf("workers=10/idle=%d/batch=%d", idle, batch), func(b *testing.B) {
				benchClaimComplete(b, 10, idle, batch)
			})
		}
	}
}

// BenchmarkClaimCompleteHistory is the batch-10 loop of
// BenchmarkClaimComplete on a queue without retention, then on one that
// keeps every completed item, one that records ten events per item, one
// that does both (the
// claimed and completed events, written by the claim and complete
// scripts), then with items that ask for a uniqueness window.
func BenchmarkClaimCompleteHistory(b *testing.B) {
	for _, c := range []struct {
		name   string
		r      contract.Retention
		unique time.Duration
	}{
		{"off", contract.Retention{}, 0},
		{"keep", contract.Retention{Age: time.Hour}, 0},
		{"events", contract.Retention{Events: 10}, 0},
		{"keep+events", contract.Retention{Age: time.Hour, Events: 10}, 0},
		{"unique", contract.Retention{}, time.Hour},
	} {
		b.Run(c.name, func(b *testing.B) { benchClaimCompleteWith(b, 10, 0, 10, c.r, c.unique) })
	}
}

// BenchmarkScriptModes is the batch-10 loop of BenchmarkClaimComplete
// with the scripts run as Redis functions and by EVALSHA
// (Settings.Scripts), on a server of its own, so that server-µs/item is
// the loop's alone: the difference is the helpers an EVALSHA builds
// again on every call.
func BenchmarkScriptModes(b *testing.B) {
	client := redistest.StartServer(b).Client(b, nil)
	for _, m := range []redisstore.ScriptMode{redisstore.ScriptsFunctions, redisstore.ScriptsEval} {
		b.Run(string(m), func(b *testing.B) {
			benchClaimCompleteOn(b, client, redisstore.Settings{Scripts: m, Volatile: true}, 10, 0, 10, contract.Retention{}, 0)
		})
	}
}

func benchClaimComplete(b *testing.B, workers, idle, batch int) {
	benchClaimCompleteWith(b, workers, idle, batch, contract.Retention{}, 0)
}

func benchClaimCompleteWith(b *testing.B, workers, idle, batch int, r contract.Retention, unique time.Duration) {
	benchClaimCompleteOn(b, redistest.Client(b), redisstore.Settings{}, workers, idle, batch, r, unique)
}

func benchClaimCompleteOn(b *testing.B, client redis.UniversalClient, s redisstore.Settings, workers, idle, batch int, r contract.Retention, unique time.Duration) {
	ctx := context.Background()
	s.Namespace = redistest.Namespace(b, client)
	q, err := redisstore.NewQueue(client, nil, s)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	if r != (contract.Retention{}) {
		if err := q.SetRetention(ctx, "", r); err != nil {
			b.Fatal(err)
		}
	}
	// Idle tenants: each had one item, claimed and completed.
	for i := range idle {
		if err := q.Enqueue(ctx, contract.Item{Tenant: "idle-" + strconv.Itoa(i), ID: "once"}); err != nil {
			b.Fatal(err)
		}
	}
	for {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "setup", LeaseFor: time.Minute, Max: 100})
		if errors.Is(err, contract.ErrEmpty) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := q.Complete(ctx, ls...); err != nil {
			b.Fatal(err)
		}
	}
	items := make([]contract.Item, 0, 500)
	for i := range b.N {
		items = append(items, contract.Item{Tenant: "busy", ID: strconv.Itoa(i), Payload: []byte(`{"run":"r"}`), UniqueFor: unique})
		if len(items) == cap(items) || i == b.N-1 {
			if err := q.Enqueue(ctx, items...); err != nil {
				b.Fatal(err)
			}
			items = items[:0]
		}
	}
	var done atomic.Int64
	var wg sync.WaitGroup
	before := scriptTime(b, client)
	b.ResetTimer()
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := "w" + strconv.Itoa(w)
			for done.Load() < int64(b.N) {
				ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: worker, LeaseFor: time.Minute, Max: batch})
				if errors.Is(err, contract.ErrEmpty) {
					return
				}
				if err != nil {
					b.Error(err)
					return
				}
				if err := q.Complete(ctx, ls...); err != nil {
					b.Error(err)
					return
				}
				done.Add(int64(len(ls)))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if got := done.Load(); got != int64(b.N) {
		b.Fatalf("completed %d of %d items", got, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "items/s")
	// The server's own time in the scripts (INFO commandstats), per item:
	// what the single Redis thread spends, whatever the round trips. Other
	// clients of the server count too, so measure on a private one.
	b.ReportMetric(float64(scriptTime(b, client)-before)/float64(b.N), "server-µs/item")
}

// scriptTime returns the microseconds the server has spent in FCALL, EVALSHA
// and EVAL since its statistics were last reset.
func scriptTime(b *testing.B, c redis.UniversalClient) int64 {
	t := commandTime(b, c)
	return t["fcall"] + t["evalsha"] + t["eval"]
}

// BenchmarkEvalBaseline is the yardstick of §9: unpipelined EVALSHA of a
// one-command script from 10 workers, the rate redis-benchmark's EVAL
// test reports. A claim+complete figure above it means batching pays.
func BenchmarkEvalBaseline(b *testing.B) {
	ctx := context.Background()
	client := redistest.Client(b)
	key := "{" + redistest.Namespace(b, client) + ":queue}:baseline"
	script := "return redis.call('INCR', KEYS[1])"
	sha, err := client.ScriptLoad(ctx, script).Result()
	if err != nil {
		b.Fatal(err)
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := client.EvalSha(ctx, sha, []string{key}).Err(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}
