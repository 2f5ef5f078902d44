//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// failoverServer is a private server with AOF on (fsync always), so a
// kill and restart loses nothing acknowledged.
func failoverServer(t *testing.T) (*redistest.Server, *redis.Client) {
	srv := redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "always")
	// The client's own retries are off so the store's budget is what is
	// measured.
	return srv, srv.Client(t, &redis.Options{MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
}

func TestFailoverWithinBudget(t *testing.T) {
	ctx := context.Background()
	srv, client := failoverServer(t)
	budget := redisstore.RetryBudget{Attempts: 30, BaseDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond}
	clock := contracttest.NewFakeClock(time.Time{})
	st, _ := redisstore.NewState(client, clock, redisstore.Settings{RetryBudget: budget})
	q, _ := redisstore.NewQueue(client, clock, redisstore.Settings{RetryBudget: budget})
	defer q.Close()
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r1", Data: []byte(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "i1"}); err != nil {
		t.Fatal(err)
	}

	srv.Kill()
	var wg sync.WaitGroup
	var patchErr, claimErr error
	var leases []contract.Lease
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, patchErr = st.PatchRun(ctx, "acme", "r1", contract.Patch{Counters: contract.Counters{Iterations: 1}})
	}()
	go func() {
		defer wg.Done()
		leases, claimErr = q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 5})
	}()
	time.Sleep(300 * time.Millisecond) // the calls are now retrying against a dead server
	srv.Start()
	wg.Wait()
	if patchErr != nil || claimErr != nil {
		t.Fatalf("calls made during the outage failed: patch %v, claim %v", patchErr, claimErr)
	}
	r, err := st.GetRun(ctx, "acme", "r1")
	if err != nil || r.Counters.Iterations != 1 || string(r.Data) != `{"n":1}` {
		t.Fatalf("after the restart the run is %+v, %v", r, err)
	}
	if len(leases) != 1 || leases[0].Item.ID != "i1" {
		t.Fatalf("claimed %v, want i1", leases)
	}
	if err := q.Complete(ctx, leases...); err != nil {
		t.Fatal(err)
	}
}

func TestFailoverPastBudget(t *testing.T) {
	ctx := context.Background()
	srv, client := failoverServer(t)
	budget := redisstore.RetryBudget{Attempts: 3, BaseDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond}
	clock := contracttest.NewFakeClock(time.Time{})
	st, _ := redisstore.NewState(client, clock, redisstore.Settings{RetryBudget: budget})
	q, _ := redisstore.NewQueue(client, clock, redisstore.Settings{RetryBudget: budget})
	defer q.Close()
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r1"}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "i1"}); err != nil {
		t.Fatal(err)
	}
	srv.Kill()

	_, err := st.PatchRun(ctx, "acme", "r1", contract.Patch{Counters: contract.Counters{Iterations: 1}})
	var spe *contract.StatePersistenceError
	if !errors.As(err, &spe) || spe.Reason != contract.ReasonUnavailable || !contract.Retryable(err) {
		t.Errorf("state call past the budget: got %v, want a retryable unavailable StatePersistenceError", err)
	}
	_, err = q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 5})
	var que *contract.QueueUnavailableError
	if !errors.As(err, &que) || !contract.Retryable(err) {
		t.Errorf("queue call past the budget: got %v, want a retryable QueueUnavailableError", err)
	}

	srv.Start()
	r, err := st.GetRun(ctx, "acme", "r1")
	if err != nil || r.Version != 1 {
		t.Fatalf("after the restart: %+v, %v", r, err)
	}
	leases, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 5})
	if err != nil || len(leases) != 1 {
		t.Fatalf("after the restart the item is not claimable: %v, %v", leases, err)
	}
}

// TestPoolExhausted: a pool timeout is reported at once, not retried.
func TestPoolExhausted(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t)
	client := srv.Client(t, &redis.Options{PoolSize: 1, PoolTimeout: 20 * time.Millisecond, MaxRetries: -1})
	q, _ := redisstore.NewQueue(client, nil, redisstore.Settings{RetryBudget: redisstore.RetryBudget{Attempts: 50, BaseDelay: 100 * time.Millisecond}})
	defer q.Close()
	held := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		close(held)
		client.BLPop(ctx, time.Second, "adk-test-never-pushed")
	}()
	<-held
	// Wait until the blocking command holds the pool's only connection.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if st := client.PoolStats(); st.TotalConns == 1 && st.IdleConns == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the blocking command never took the connection")
		}
	}
	start := time.Now()
	_, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
	var pe *contract.PoolExhaustedError
	if !errors.As(err, &pe) || contract.Retryable(err) {
		t.Errorf("got %v, want a non-retryable PoolExhaustedError", err)
	}
	if time.Since(start) > 2*time.Second { // the budget would retry for far longer
		t.Errorf("took %v: a pool timeout must not be retried into", time.Since(start))
	}
	if q.Stats().PoolExhausted == 0 {
		t.Errorf("Stats().PoolExhausted = 0 after a pool timeout")
	}
	<-done
}

// TestRestartMidWorkload kills the server (AOF, fsync always) while
// workers claim and complete, restarts it, and checks the oracle: every
// item ends completed, none completed twice, nothing left behind. Claims
// whose reply died with the server leave orphaned leases; a reap after
// they expire hands those items out again.
func TestRestartMidWorkload(t *testing.T) {
	ctx := context.Background()
	srv, client := failoverServer(t)
	clock := contracttest.NewFakeClock(time.Time{})
	budget := redisstore.RetryBudget{Attempts: 40, BaseDelay: 10 * time.Millisecond, MaxDelay: 100 * time.Millisecond}
	q, _ := redisstore.NewQueue(client, clock, redisstore.Settings{RetryBudget: budget})
	defer q.Close()
	const n = 600
	var items []contract.Item
	for i := range n {
		items = append(items, contract.Item{Tenant: "t" + strconv.Itoa(i%7), ID: strconv.Itoa(i)})
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	completed := map[string]int{}
	work := func(w int) {
		for {
			ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w" + strconv.Itoa(w), LeaseFor: time.Minute, Max: 5})
			if errors.Is(err, contract.ErrEmpty) {
				return
			}
			if err != nil {
				t.Logf("claim: %v", err)
				continue // past the budget: try again, as a runner would
			}
			err = q.Complete(ctx, ls...)
			var lost *contract.LeaseLostError
			gone := map[string]bool{}
			if errors.As(err, &lost) {
				for _, k := range lost.Items {
					gone[k.ID] = true
				}
			} else if err != nil {
				t.Logf("complete: %v", err)
				continue // unknown outcome: the reap below returns the items
			}
			mu.Lock()
			for _, l := range ls {
				if !gone[l.Item.ID] {
					completed[l.Item.ID]++
				}
			}
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); work(w) }()
	}
	// Kill the server once a third of the items are done.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		done := len(completed)
		mu.Unlock()
		if done >= n/3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d items done after 10s", done)
		}
	}
	srv.Kill()
	mu.Lock()
	atKill := len(completed)
	mu.Unlock()
	time.Sleep(200 * time.Millisecond)
	srv.Start()
	wg.Wait()

	// Orphaned leases (claims whose reply was lost) expire and come back.
	clock.Advance(2 * time.Minute)
	reaped, err := q.Reap(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(policy.DefaultMaxDelay) // past any retry backoff
	work(99)

	for i := range n {
		id := strconv.Itoa(i)
		if c := completed[id]; c > 1 {
			t.Errorf("item %s completed %d times", id, c)
		}
		_, err := q.Item(ctx, contract.ItemKey{Tenant: "t" + strconv.Itoa(i%7), ID: id})
		if !errors.Is(err, contract.ErrNotFound) {
			t.Errorf("item %s still present after the workload: %v", id, err)
		}
	}
	if atKill >= n {
		t.Errorf("the workload finished before the server was killed")
	}
	t.Logf("killed at %d of %d; %d orphaned leases reaped; %d completions confirmed to a worker (the rest completed with their reply lost)",
		atKill, n, reaped, len(completed))
}
