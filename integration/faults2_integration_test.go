//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/integration/internal/oracle"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// Pool exhaustion. First, deterministically: with every connection of a
// two-connection pool held, each call returns *contract.PoolExhaustedError
// within the pool timeout (not after a retry budget) and changes nothing.
// Then the burst: workers with 16 handlers on a two-connection pool with
// a 20 ms pool timeout, whose whole pool other work in the same process
// takes for 150 ms every 300 ms; calls fail with PoolExhaustedError, their items are
// retried, and the oracle holds once the burst is over.
func TestFaultPoolExhausted(t *testing.T) {
	for _, b := range backings {
		t.Run(b, func(t *testing.T) {
			target, _, _ := backingTarget(t, b)
			exhaustedAtOnce(t, target)

			var workers []oracle.WorkerConfig
			for i := range 2 {
				w := workerDefaults(target, fmt.Sprintf("w%d", i))
				w.Concurrency, w.PoolSize, w.PoolTimeout = 16, 2, 20*time.Millisecond
				// The burst: from the start and every 300 ms, other work in
				// the process takes the whole pool for 150 ms.
				w.HogEvery, w.HogFor = 300*time.Millisecond, 150*time.Millisecond
				w.HandlerDelay = 40 * time.Millisecond
				// go-redis retries a pool timeout three times on its own,
				// which outlasts a short takeover; the redisstore README
				// advises MaxRetries -1 so its budget is the only one.
				w.NoClientRetries = true
				w.MaxAttempts = 30 // exhaustion is the fault, not poison
				workers = append(workers, w)
			}
			out := runLoad(t, load{target: target, direct: target, workers: workers,
				inject: func(t *testing.T, ctx context.Context, e *env) []string {
					return []string{"burst: 2 workers x 16 handlers on 2-connection pools, pool timeout 20ms, the whole pool taken for 150ms every 300ms"}
				}})
			counts := out.fleet.Counts()
			n := counts["handler_pool_exhausted"] + counts["runner_pool_exhausted"]
			t.Logf("PoolExhaustedError during the burst: %d (handlers %d, runner %d) over %d pool takeovers", n, counts["handler_pool_exhausted"], counts["runner_pool_exhausted"], counts["hogs"])
			if n == 0 {
				t.Error("the burst never exhausted the pool")
			}
		})
	}
}

func exhaustedAtOnce(t *testing.T, target oracle.Target) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const timeout = 100 * time.Millisecond
	s, err := oracle.Open(ctx, target, oracle.OpenOptions{PoolSize: 2, PoolTimeout: timeout, Policy: policy.Policy{MaxAttempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const tenant = "pool-probe"
	if _, err := s.State.PutRun(ctx, contract.Run{Tenant: tenant, ID: "kept", Data: []byte(`{"v":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Queue.Enqueue(ctx, contract.Item{Tenant: tenant, ID: "queued"}); err != nil {
		t.Fatal(err)
	}

	release := hold(t, ctx, s)
	calls := []struct {
		name string
		call func() error
	}{
		{"PutRun", func() error {
			_, err := s.State.PutRun(ctx, contract.Run{Tenant: tenant, ID: "new", Data: []byte(`{}`)})
			return err
		}},
		{"PatchRun", func() error {
			_, err := s.State.PatchRun(ctx, tenant, "kept", contract.Patch{Counters: contract.Counters{Iterations: 1}})
			return err
		}},
		{"Enqueue", func() error { return s.Queue.Enqueue(ctx, contract.Item{Tenant: tenant, ID: "new"}) }},
		{"Claim", func() error {
			_, err := s.Queue.Claim(ctx, contract.ClaimRequest{Worker: "probe", LeaseFor: time.Minute, Max: 10})
			return err
		}},
	}
	for _, c := range calls {
		began := time.Now()
		err := c.call()
		took := time.Since(began)
		var pe *contract.PoolExhaustedError
		if !errors.As(err, &pe) || contract.Retryable(err) {
			t.Errorf("%s with the pool held: %v (%T), want a non-retryable *contract.PoolExhaustedError", c.name, err, err)
		}
		// go-redis retries a pool timeout itself (MaxRetries, 3 by
		// default) before the store sees it; the store adds no budget.
		if took > 5*timeout+time.Second {
			t.Errorf("%s took %v to report exhaustion; the pool timeout is %v", c.name, took, timeout)
		}
		t.Logf("%s with the pool held: %T after %v", c.name, err, took.Round(time.Millisecond))
	}
	release()

	// Nothing changed.
	if _, err := s.State.GetRun(ctx, tenant, "new"); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("run written while the pool was exhausted: %v", err)
	}
	r, err := s.State.GetRun(ctx, tenant, "kept")
	if err != nil || r.Counters.Iterations != 0 || r.Version != 1 {
		t.Errorf("run patched while the pool was exhausted: %+v, %v", r, err)
	}
	if _, err := s.Inspector.Item(ctx, contract.ItemKey{Tenant: tenant, Queue: contract.DefaultQueue, ID: "new"}); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("item enqueued while the pool was exhausted: %v", err)
	}
	info, err := s.Inspector.Item(ctx, contract.ItemKey{Tenant: tenant, Queue: contract.DefaultQueue, ID: "queued"})
	if err != nil || info.Item.State != contract.StateQueued {
		t.Errorf("item claimed while the pool was exhausted: %+v, %v", info, err)
	}
	// Clean up the probe so the oracle's queue drains.
	ls, err := s.Queue.Claim(ctx, contract.ClaimRequest{Worker: "probe", LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim the probe item: %v, %v", ls, err)
	}
	if err := s.Queue.Complete(ctx, ls...); err != nil {
		t.Fatal(err)
	}
	t.Logf("with every connection held, PutRun, PatchRun, Enqueue and Claim each returned PoolExhaustedError and changed nothing (pool timeout %v)", timeout)
}

// hold takes every connection of the stores' two-connection pool until
// the returned func is called.
func hold(t *testing.T, ctx context.Context, s *oracle.Stores) (release func()) {
	t.Helper()
	if s.Pool != nil {
		var conns []*pgxpool.Conn
		for range 2 {
			c, err := s.Pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		return func() {
			for _, c := range conns {
				c.Release()
			}
		}
	}
	// Redis: two blocking pops on a key nobody writes keep both
	// connections busy until they are cancelled.
	hctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 {
		// go-redis does not interrupt a blocking read when its context
		// ends, so the pops time out on their own, after the probes.
		wg.Go(func() { s.Redis.BLPop(hctx, 3*time.Second, "adkint:pool-hold:none") })
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := s.Redis.PoolStats()
		if st.TotalConns == 2 && st.IdleConns == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("could not occupy the pool: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// A worker whose clock runs 2 s behind. Its leases end, by the others'
// clock, 2 s early; a correct worker's reaper takes them back while its
// slow handlers still run. Its settles after that must be fenced
// (LeaseLostError, nothing written), and the items are done again by a
// holder of a newer claim.
func TestFaultClockSkew(t *testing.T) {
	for _, b := range backings {
		t.Run(b, func(t *testing.T) {
			target, _, _ := backingTarget(t, b)
			var workers []oracle.WorkerConfig
			for _, name := range []string{"skewed", "normal"} {
				w := workerDefaults(target, name)
				w.LeaseFor, w.HeartbeatEvery = 3*time.Second, 2500*time.Millisecond
				w.ReapInterval = 200 * time.Millisecond
				w.HandlerDelay, w.SlowEvery, w.SlowDelay = 10*time.Millisecond, 10, 1800*time.Millisecond
				w.MaxAttempts = 25 // a slow item may land on the skewed worker again and again
				if name == "skewed" {
					w.ClockSkew = 2 * time.Second
				}
				workers = append(workers, w)
			}
			out := runLoad(t, load{target: target, direct: target, k: 200, workers: workers,
				inject: func(t *testing.T, ctx context.Context, e *env) []string {
					return []string{"worker \"skewed\" runs with its clock 2s behind (leases 3s, slow items 1.8s)"}
				}})
			var fenced int64
			for _, s := range out.fleet.Stats() {
				t.Logf("worker %s: %v", s.Worker, s.Counts)
				if s.Worker == "skewed" {
					fenced = s.Counts["fenced_items"]
				} else if s.Counts["fenced_items"] > 0 {
					t.Errorf("the correct worker had %d settles fenced", s.Counts["fenced_items"])
				}
			}
			t.Logf("settles of the skewed worker fenced: %d", fenced)
			if fenced == 0 {
				t.Error("no settle of the skewed worker was fenced: its leases were never taken back")
			}
		})
	}
}
