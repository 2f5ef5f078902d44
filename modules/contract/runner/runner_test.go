package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/claimcheck"
	"github.com/adkit/adk/modules/contract/runner"
)

func TestProcessesEveryItemOnce(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	const tenants, each = 5, 40
	var items []contract.Item
	for tn := range tenants {
		for i := range each {
			items = append(items, item(fmt.Sprintf("t%d", tn), fmt.Sprintf("i%d", i)))
		}
	}
	if err := store.Enqueue(context.Background(), items...); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen = map[contract.ItemKey]int{}
	)
	cfg := fastConfig(clock)
	cfg.Concurrency = 8
	r, err := runner.New(store, func(ctx context.Context, l contract.Lease) error {
		if string(l.Item.Payload) != l.Item.ID {
			return fmt.Errorf("payload %q for item %s", l.Item.Payload, l.Item.ID)
		}
		mu.Lock()
		seen[l.Key()]++
		mu.Unlock()
		return nil
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "the queue to drain", func() bool { return queueEmpty(t, store) })
	if err := s.stop(t); err != nil {
		t.Fatalf("Run returned %v, want nil", err)
	}
	if len(seen) != len(items) {
		t.Fatalf("handled %d distinct items, want %d", len(seen), len(items))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("item %v handled %d times", k, n)
		}
	}
}

// Concurrency handlers really run at once: each waits until all are in.
func TestRunsConcurrencyHandlersAtOnce(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	const n = 4
	for i := range n {
		if err := store.Enqueue(context.Background(), item("a", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	var inside atomic.Int64
	all := make(chan struct{})
	cfg := fastConfig(clock)
	cfg.Concurrency = n
	r, err := runner.New(store, func(ctx context.Context, l contract.Lease) error {
		if inside.Add(1) == n {
			close(all)
		}
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatalf("only %d of %d handlers ran at once", inside.Load(), n)
	}
	waitFor(t, "the queue to drain", func() bool { return queueEmpty(t, store) })
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
}

func TestHandlerErrorFailsAndRetries(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	attempts := make(chan int, 2)
	r, err := runner.New(store, func(ctx context.Context, l contract.Lease) error {
		attempts <- l.Item.Attempts
		if calls.Add(1) == 1 {
			return errors.New("model timed out")
		}
		return nil
	}, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitFor(t, "the failure to be recorded", func() bool {
		info, ok := itemInfo(t, store, "a", "1")
		return ok && info.Item.State == contract.StateQueued && info.Item.Attempts == 1
	})
	info, _ := itemInfo(t, store, "a", "1")
	if info.Item.LastError != "model timed out" {
		t.Fatalf("LastError = %q", info.Item.LastError)
	}
	if want := clock.Now().Add(time.Second); !info.Item.NotBefore.Equal(want) {
		t.Fatalf("retry due at %v, want %v (the policy's first backoff)", info.Item.NotBefore, want)
	}
	clock.Advance(time.Second)
	waitFor(t, "the retry to complete", func() bool { return queueEmpty(t, store) })
	if got := []int{<-attempts, <-attempts}; got[0] != 0 || got[1] != 1 {
		t.Fatalf("handler saw attempts %v, want [0 1]", got)
	}
}

func TestPanicIsFailedWithItsValue(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(store, func(ctx context.Context, l contract.Lease) error {
		panic("kaboom: nil map")
	}, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitFor(t, "the panic to be recorded", func() bool {
		info, ok := itemInfo(t, store, "a", "1")
		return ok && info.Item.Attempts == 1
	})
	info, _ := itemInfo(t, store, "a", "1")
	if !strings.Contains(info.Item.LastError, "panicked") || !strings.Contains(info.Item.LastError, "kaboom: nil map") {
		t.Fatalf("LastError = %q; want the panic value", info.Item.LastError)
	}
}

// A handler that runs past its lease keeps the item: heartbeats extend
// the lease, so Reap, run with the clock well past the original expiry,
// takes nothing.
func TestHeartbeatKeepsLongHandlersLease(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCounting(store)
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	entered := make(chan struct{})
	var calls atomic.Int64
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		calls.Add(1)
		close(entered)
		<-release
		return nil
	}, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	<-entered
	for range 4 { // 4 × 20s: well past the 30s lease
		clock.Advance(20 * time.Second)
		before := c.heartbeats.Load()
		waitFor(t, "a heartbeat after the clock moved", func() bool { return c.heartbeats.Load() >= before+2 })
		n, err := store.Reap(context.Background(), "")
		if err != nil || n != 0 {
			t.Fatalf("Reap = %d, %v; want nothing reaped while heartbeats run", n, err)
		}
	}
	close(release)
	waitFor(t, "the complete", func() bool { return queueEmpty(t, store) })
	if calls.Load() != 1 {
		t.Fatalf("handler ran %d times", calls.Load())
	}
}

// A heartbeat that finds the lease lost cancels the handler's context with
// the LeaseLostError as cause, and the runner settles nothing.
func TestLostLeaseCancelsHandler(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCounting(store)
	c.heartbeatFn = func(_ context.Context, l contract.Lease, _ time.Duration) (contract.Lease, error) {
		return contract.Lease{}, &contract.LeaseLostError{Items: []contract.ItemKey{l.Key()}}
	}
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	causes := make(chan error, 1)
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	var cause error
	select {
	case cause = <-causes:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not cancelled")
	}
	if _, ok := errors.AsType[*contract.LeaseLostError](cause); !ok {
		t.Fatalf("cause = %v; want *contract.LeaseLostError", cause)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if c.fails.Load() != 0 || c.completes.Load() != 0 {
		t.Fatalf("settled a lost lease: %d fails, %d completes", c.fails.Load(), c.completes.Load())
	}
}

// With a poll interval of an hour, only a wake can make the runner claim
// an item enqueued after it went idle.
func TestWakeTriggersClaim(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCounting(store)
	cfg := fastConfig(clock)
	cfg.PollInterval = time.Hour
	done := make(chan string, 1)
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		done <- l.Item.ID
		return nil
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitFor(t, "the first, empty claim", func() bool { return c.claims.Load() >= 1 })
	if err := store.Enqueue(context.Background(), item("a", "late")); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-done:
		if id != "late" {
			t.Fatalf("handled %q", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the enqueue did not wake the runner")
	}
}

// Without a Waker, the poll interval is what finds new work.
func TestPollsWithoutWaker(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	type plain struct{ contract.WorkQueue }
	done := make(chan struct{})
	c, q := wrapCounting(plain{store})
	if _, ok := q.(contract.Waker); ok {
		t.Fatal("the test queue should not be a Waker")
	}
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		close(done)
		return nil
	}, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitFor(t, "the first, empty claim", func() bool { return c.claims.Load() >= 1 })
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the poll did not pick the item up")
	}
}

// Cancelling Run lets a running handler finish within the grace period;
// its item is completed and Run returns nil. Nothing more is claimed.
func TestShutdownWaitsForHandlerWithinGrace(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	if err := store.Enqueue(context.Background(), item("a", "running"), item("b", "waiting")); err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	release := make(chan struct{})
	cfg := fastConfig(clock)
	cfg.Concurrency = 1
	r, err := runner.New(store, func(ctx context.Context, l contract.Lease) error {
		close(entered)
		<-release
		return nil
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	<-entered
	s.cancel()
	select {
	case err := <-s.done:
		t.Fatalf("Run returned %v while its handler was still running", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if err := s.stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	leases, err := store.Claim(context.Background(), contract.ClaimRequest{Worker: "check", LeaseFor: time.Minute, Max: 10})
	if err != nil || len(leases) != 1 || leases[0].Item.Attempts != 0 {
		t.Fatalf("after shutdown: %d leases, %v; want the untouched second item alone", len(leases), err)
	}
}

// A handler still running when the grace period ends is cancelled, and
// its item is failed back to the queue: queued again, one attempt used.
func TestShutdownFailsBackPastGrace(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	if err := store.Enqueue(context.Background(), item("a", "slow")); err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	causes := make(chan error, 1)
	cfg := fastConfig(clock)
	cfg.Grace = 20 * time.Millisecond
	r, err := runner.New(store, func(ctx context.Context, l contract.Lease) error {
		close(entered)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	<-entered
	if err := s.stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if cause := <-causes; !errors.Is(cause, runner.ErrGraceExpired) {
		t.Fatalf("handler's cause = %v; want ErrGraceExpired", cause)
	}
	info, ok := itemInfo(t, store, "a", "slow")
	if !ok || info.Item.State != contract.StateQueued || info.Item.Attempts != 1 {
		t.Fatalf("item after shutdown = %+v (found %v); want queued with 1 attempt", info.Item, ok)
	}
	if !strings.Contains(info.Item.LastError, "grace period") || !strings.Contains(info.Item.LastError, "context canceled") {
		t.Fatalf("LastError = %q; want the grace period and the context error", info.Item.LastError)
	}
}

// Finished items share Complete calls, and none is lost when Run stops
// while completes are pending.
func TestCompletesAreBatched(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCounting(store)
	const n = 100
	for i := range n {
		if err := store.Enqueue(context.Background(), item(fmt.Sprintf("t%d", i%7), fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fastConfig(clock)
	cfg.Concurrency = 10
	cfg.CompleteDelay = 20 * time.Millisecond
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error { return nil }, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "every item to complete", func() bool { return c.completed.Load() == n })
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if calls := c.completes.Load(); calls > n/2 {
		t.Fatalf("%d Complete calls for %d items; want them batched", calls, n)
	}
	t.Logf("%d items completed in %d calls", n, c.completes.Load())
}

func TestPendingCompletesFlushedOnShutdown(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCounting(store)
	if err := store.Enqueue(context.Background(), item("a", "1"), item("b", "2"), item("c", "3")); err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int64
	cfg := fastConfig(clock)
	cfg.CompleteDelay = time.Hour // only a full batch or the shutdown flushes
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		handled.Add(1)
		return nil
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "three handlers to return", func() bool { return handled.Load() == 3 })
	if c.completes.Load() != 0 {
		t.Fatal("completed before the delay or a full batch")
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if c.completes.Load() != 1 || !queueEmpty(t, store) {
		t.Fatalf("%d Complete calls, queue empty %v; want one flush that completes all three", c.completes.Load(), queueEmpty(t, store))
	}
}

// The runner reaps: the item of a worker that died holding it comes back
// and is run.
func TestReapsExpiredLeasesOfDeadWorkers(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	if err := store.Enqueue(context.Background(), item("a", "orphan")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Claim(context.Background(), contract.ClaimRequest{Worker: "dead", LeaseFor: time.Second, Max: 1}); err != nil {
		t.Fatal(err)
	}
	attempts := make(chan int, 1)
	cfg := fastConfig(clock)
	cfg.ReapInterval = 5 * time.Millisecond
	r, err := runner.New(store, func(ctx context.Context, l contract.Lease) error {
		attempts <- l.Item.Attempts
		return nil
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	clock.Advance(2 * time.Second) // the dead worker's lease expires
	waitFor(t, "the reap", func() bool {
		info, ok := itemInfo(t, store, "a", "orphan")
		return ok && info.Item.State == contract.StateQueued
	})
	clock.Advance(time.Minute) // past the retry backoff
	select {
	case a := <-attempts:
		if a != 1 {
			t.Fatalf("reaped item ran with %d attempts, want 1", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reaped item was not run")
	}
}

func TestMiddlewareOrder(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		trace []string
	)
	record := func(s string) {
		mu.Lock()
		trace = append(trace, s)
		mu.Unlock()
	}
	mw := func(name string) runner.Middleware {
		return func(queue string, next runner.Handler) runner.Handler {
			return func(ctx context.Context, l contract.Lease) error {
				record(name + ">" + queue)
				defer record("<" + name)
				return next(ctx, l)
			}
		}
	}
	cfg := fastConfig(clock)
	cfg.Middleware = []runner.Middleware{mw("outer"), mw("inner")}
	r, err := runner.New(store, func(ctx context.Context, l contract.Lease) error {
		record("handler")
		return nil
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "the item", func() bool { return queueEmpty(t, store) })
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	want := "outer>default inner>default handler <inner <outer"
	if got := strings.Join(trace, " "); got != want {
		t.Fatalf("trace %q, want %q", got, want)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	store := newStore(newClock())
	h := func(context.Context, contract.Lease) error { return nil }
	cases := map[string]func() (*runner.Runner, error){
		"nil queue":   func() (*runner.Runner, error) { return runner.New(nil, h, runner.Config{}) },
		"nil handler": func() (*runner.Runner, error) { return runner.New(store, nil, runner.Config{}) },
		"queue NUL":   func() (*runner.Runner, error) { return runner.New(store, h, runner.Config{Queue: "a\x00"}) },
		"worker bad":  func() (*runner.Runner, error) { return runner.New(store, h, runner.Config{Worker: "\xff"}) },
		"concurrency": func() (*runner.Runner, error) { return runner.New(store, h, runner.Config{Concurrency: -1}) },
		"batch": func() (*runner.Runner, error) {
			return runner.New(store, h, runner.Config{BatchSize: contract.MaxClaimBatch + 1})
		},
		"lease": func() (*runner.Runner, error) { return runner.New(store, h, runner.Config{LeaseFor: -time.Second}) },
		"heartbeat": func() (*runner.Runner, error) {
			return runner.New(store, h, runner.Config{LeaseFor: time.Second, HeartbeatEvery: time.Second})
		},
		"poll": func() (*runner.Runner, error) { return runner.New(store, h, runner.Config{PollInterval: -1}) },
		"middleware": func() (*runner.Runner, error) {
			return runner.New(store, h, runner.Config{Middleware: []runner.Middleware{nil}})
		},
	}
	for name, fn := range cases {
		if r, err := fn(); !errors.Is(err, contract.ErrInvalid) || r != nil {
			t.Errorf("%s: %v, %v; want a *contract.ValidationError", name, r, err)
		}
	}
}

func TestDefaults(t *testing.T) {
	r, err := runner.New(newStore(nil), func(context.Context, contract.Lease) error { return nil }, runner.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := r.Config()
	if cfg.Queue != contract.DefaultQueue || cfg.Worker == "" || cfg.Concurrency != runner.DefaultConcurrency ||
		cfg.BatchSize != cfg.Concurrency || cfg.LeaseFor != runner.DefaultLeaseFor || cfg.HeartbeatEvery != cfg.LeaseFor/3 ||
		cfg.PollInterval != runner.DefaultPollInterval || cfg.Grace != runner.DefaultGrace || cfg.ReapInterval != cfg.LeaseFor ||
		cfg.Clock == nil || cfg.Logger == nil {
		t.Fatalf("defaults: %+v", cfg)
	}
}

func TestRunRefusesSecondConcurrentRun(t *testing.T) {
	clock := newClock()
	c, q := wrapCounting(newStore(clock))
	r, err := runner.New(q, func(context.Context, contract.Lease) error { return nil }, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "the first Run to claim", func() bool { return c.claims.Load() > 0 })
	if err := r.Run(context.Background()); err == nil {
		t.Fatal("a second Run while the first runs returned nil")
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("Run after the first returned: %v", err)
	}
}

// When heartbeats keep failing and the clock passes the lease's expiry,
// the handler is stopped (cause ErrLeaseExpired) rather than left running
// while a reaper may hand its item to another worker.
func TestExpiredLeaseStopsHandlerWhenHeartbeatsFail(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCounting(store)
	unavailable := &contract.QueueUnavailableError{Err: errors.New("connection refused")}
	c.heartbeatFn = func(context.Context, contract.Lease, time.Duration) (contract.Lease, error) {
		return contract.Lease{}, unavailable
	}
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	causes := make(chan error, 1)
	var reported atomic.Int64
	cfg := fastConfig(clock)
	cfg.OnError = func(err error) {
		if errors.Is(err, unavailable) {
			reported.Add(1)
		}
	}
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		close(entered)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	<-entered
	waitFor(t, "a failed heartbeat to be reported", func() bool { return reported.Load() > 0 })
	select {
	case cause := <-causes:
		t.Fatalf("handler stopped before its lease expired: %v", cause)
	default:
	}
	clock.Advance(31 * time.Second)
	select {
	case cause := <-causes:
		if !errors.Is(cause, contract.ErrLeaseExpired) {
			t.Fatalf("cause = %v; want ErrLeaseExpired", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not stopped after its lease expired")
	}
	// The lease was never reaped, so the runner can still fail it back.
	waitFor(t, "the item to be failed back", func() bool {
		info, ok := itemInfo(t, store, "a", "1")
		return ok && info.Item.State == contract.StateQueued && info.Item.Attempts == 1
	})
}

// Over a claim-check wrapper the handler sees the restored payloads; an
// item whose blob is gone goes to the dead letter and the rest run.
func TestOverClaimCheck(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	blobs := claimcheck.NewMemory()
	q := claimcheck.Wrap(store, blobs, 16)
	big := func(s string) []byte { return []byte(strings.Repeat(s, 64)) }
	ctx := context.Background()
	if err := q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "lost", Payload: big("l")}); err != nil {
		t.Fatal(err)
	}
	info, _ := itemInfo(t, store, "a", "lost")
	if err := blobs.Delete(ctx, "a", contract.Ref(info.Item.Metadata[claimcheck.MetadataKey])); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := q.Enqueue(ctx, contract.Item{Tenant: fmt.Sprint("t", i), ID: "ok", Payload: big(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	var bad atomic.Int64
	var seen atomic.Int64
	var missing atomic.Int64
	cfg := fastConfig(clock)
	cfg.Concurrency = 10
	cfg.OnError = func(err error) {
		if _, ok := errors.AsType[*claimcheck.MissingBlobError](err); ok {
			missing.Add(1)
		}
	}
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		seen.Add(1)
		if want := big(strings.TrimPrefix(l.Item.Tenant, "t")); string(l.Item.Payload) != string(want) {
			bad.Add(1)
		}
		return nil
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "the intact items to complete", func() bool {
		stats, _ := store.Tenants(ctx, contract.DefaultQueue)
		var live int64
		for _, st := range stats {
			live += st.Ready + st.Later + st.Leased
		}
		return live == 0 && blobs.Len() == 0
	})
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if seen.Load() != 5 || bad.Load() != 0 || missing.Load() != 1 {
		t.Fatalf("handled %d (%d with a wrong payload), %d missing blobs reported; want 5, 0, 1", seen.Load(), bad.Load(), missing.Load())
	}
	if info, _ := itemInfo(t, store, "a", "lost"); info.Item.State != contract.StateDead {
		t.Fatalf("the item with the missing blob is %s, want dead", info.Item.State)
	}
}

// flaky fails its first claims, as a queue whose server is restarting.
type flaky struct {
	contract.WorkQueue
	failures atomic.Int64
}

func (f *flaky) Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	if f.failures.Add(-1) >= 0 {
		return nil, &contract.QueueUnavailableError{Err: errors.New("connection reset")}
	}
	return f.WorkQueue.Claim(ctx, req)
}

// Claim errors are reported and retried; the runner keeps going.
func TestClaimErrorsAreReportedAndRetried(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	q := &flaky{WorkQueue: store}
	q.failures.Store(3)
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	var reported atomic.Int64
	cfg := fastConfig(clock)
	cfg.OnError = func(err error) {
		if contract.Retryable(err) {
			reported.Add(1)
		}
	}
	r, err := runner.New(q, func(context.Context, contract.Lease) error { return nil }, cfg)
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitFor(t, "the item after the claim errors", func() bool { return queueEmpty(t, store) })
	if reported.Load() != 3 {
		t.Fatalf("%d claim errors reported, want 3", reported.Load())
	}
}

// A claim that failed with a retryable error is tried again within
// milliseconds, not at the next poll: with no waker and an hour between
// polls, the item is still done.
func TestRetryableClaimErrorIsRetriedBeforeThePoll(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	q := &flaky{WorkQueue: store} // no Subscribe: nothing wakes the runner
	q.failures.Store(4)
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig(clock)
	cfg.PollInterval = time.Hour
	var reported atomic.Int64
	cfg.OnError = func(error) { reported.Add(1) }
	r, err := runner.New(q, func(context.Context, contract.Lease) error { return nil }, cfg)
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitFor(t, "the item after four failed claims", func() bool { return queueEmpty(t, store) })
	if reported.Load() != 4 {
		t.Fatalf("%d claim errors reported, want 4", reported.Load())
	}
}

// A negative Grace cancels running handlers as soon as Run is stopped.
func TestNoGrace(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	cfg := fastConfig(clock)
	cfg.Grace = -1
	r, err := runner.New(store, func(ctx context.Context, l contract.Lease) error {
		close(entered)
		<-ctx.Done()
		return context.Cause(ctx)
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	<-entered
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	info, ok := itemInfo(t, store, "a", "1")
	if !ok || info.Item.State != contract.StateQueued || !strings.Contains(info.Item.LastError, "grace period") {
		t.Fatalf("item = %+v; want it failed back with the grace error", info.Item)
	}
}

// With a queue that completes and claims in one call, finished items ride
// along with the next claim instead of taking Complete calls of their own.
func TestCompletesRideAlongWithClaims(t *testing.T) {
	run := func(completeClaimer bool) *counting {
		clock := newClock()
		store := newStore(clock)
		c, q := wrapCounting(store)
		if completeClaimer {
			q = countingCC{q.(countingWaker)}
		}
		const n = 100
		for i := range n {
			if err := store.Enqueue(context.Background(), item(fmt.Sprintf("t%d", i%7), fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		cfg := fastConfig(clock)
		cfg.Concurrency = 10
		// A Complete carries up to max(Concurrency, BatchSize) items. With
		// the claims carrying them, at most Concurrency finished items wait
		// between two claims, so a batch of 20 never fills there and only
		// the claims and the shutdown settle; without, it fills and flushes.
		cfg.BatchSize = 20
		cfg.CompleteDelay = time.Hour // only a full batch, a claim or the shutdown settles
		cfg.CarryCompletes = true
		r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error { return nil }, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := start(t, r)
		waitFor(t, "every item to complete", func() bool { return c.completed.Load() == n })
		if err := s.stop(t); err != nil {
			t.Fatal(err)
		}
		if !queueEmpty(t, store) {
			t.Fatal("items left in the queue")
		}
		return c
	}
	plain, cc := run(false), run(true)
	if cc.ccCalls.Load() == 0 || cc.completes.Load() >= plain.completes.Load() {
		t.Fatalf("Complete calls: %d with CompleteAndClaim (%d calls of it), %d without; want fewer with it",
			cc.completes.Load(), cc.ccCalls.Load(), plain.completes.Load())
	}
	t.Logf("Complete calls: %d without CompleteAndClaim; %d with it, plus %d CompleteAndClaim calls",
		plain.completes.Load(), cc.completes.Load(), cc.ccCalls.Load())
}

// Finished items the claim loop has not carried yet are still completed
// when Run stops.
func TestPendingCompletesFlushedOnShutdownWithCompleteClaimer(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCounting(store)
	q = countingCC{q.(countingWaker)}
	if err := store.Enqueue(context.Background(), item("a", "1"), item("b", "2"), item("c", "3")); err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int64
	cfg := fastConfig(clock)
	cfg.PollInterval = time.Hour // no claim after the first: nothing carries the completes
	cfg.CompleteDelay = time.Hour
	cfg.CarryCompletes = true
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		handled.Add(1)
		return nil
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "three handlers to return", func() bool { return handled.Load() == 3 })
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if !queueEmpty(t, store) || c.completed.Load() != 3 {
		t.Fatalf("%d completed, queue empty %v; want all three completed by the shutdown", c.completed.Load(), queueEmpty(t, store))
	}
}

// replyLost completes and claims, then adds an error as if part of the
// reply had been lost: the runner cannot tell whether the completes landed.
// The claimed leases still come back, so that no item stays leased.
type replyLost struct{ countingCC }

func (r replyLost) CompleteAndClaim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest) ([]contract.Lease, error) {
	ls, _ := r.countingCC.CompleteAndClaim(ctx, done, req)
	return ls, &contract.QueueUnavailableError{Err: errors.New("reply lost")}
}

// After a combined call whose outcome is unknown the runner completes the
// leases again and does not report the ones that had landed as lost.
func TestUnknownCompleteAndClaimOutcomeCompletesAgain(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCounting(store)
	q = replyLost{countingCC{q.(countingWaker)}}
	for i := range 10 {
		if err := store.Enqueue(context.Background(), item("a", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var lost []error
	var handled atomic.Int64
	cfg := fastConfig(clock)
	cfg.CarryCompletes = true
	cfg.CompleteDelay = time.Hour
	cfg.Concurrency = 2
	cfg.BatchSize = 100 // a Complete batch of 100: only claims and the shutdown settle
	cfg.OnError = func(err error) {
		if _, ok := errors.AsType[*contract.LeaseLostError](err); ok {
			mu.Lock()
			lost = append(lost, err)
			mu.Unlock()
		}
	}
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		handled.Add(1)
		return nil
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "the queue to empty", func() bool { return queueEmpty(t, store) })
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lost) != 0 || c.ccCalls.Load() == 0 {
		t.Fatalf("%d CompleteAndClaim calls; reported lost: %v", c.ccCalls.Load(), lost)
	}
}
