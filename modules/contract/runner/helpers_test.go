package runner_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/contract/runner"
	"github.com/adkit/adk/modules/policy"
)

// testPolicy retries after exactly BaseDelay, doubling (no jitter), so the
// tests know when a failed item is due again.
var testPolicy = policy.Policy{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: time.Minute, Jitter: policy.Fixed(1)}

// fastConfig keeps every real-time interval short so goroutines make
// progress quickly; lease arithmetic runs on the fake clock.
func fastConfig(clock contract.Clock) runner.Config {
	return runner.Config{
		Worker:         "test-worker",
		Concurrency:    4,
		LeaseFor:       30 * time.Second,
		PollInterval:   5 * time.Millisecond,
		HeartbeatEvery: 5 * time.Millisecond,
		Grace:          10 * time.Second,
		ReapInterval:   -1,
		CompleteDelay:  2 * time.Millisecond,
		Clock:          clock,
	}
}

func newStore(clock contract.Clock) *memstore.Store {
	return memstore.New(clock, memstore.Settings{Policy: testPolicy})
}

// waitFor polls cond until it holds, failing the test after a bound that
// is generous for a loaded machine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// started is a running Runner.
type started struct {
	cancel context.CancelFunc
	done   chan error
}

// start runs r in the background; the test's clean-up stops it if the
// test did not.
func start(t *testing.T, r *runner.Runner) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			t.Error("Run did not return after its context was cancelled")
		}
	})
	return s
}

// stop cancels the runner and returns what Run returned.
func (s *started) stop(t *testing.T) error {
	t.Helper()
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err // for the clean-up
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
		return nil
	}
}

// counting wraps a queue and counts the calls the runner makes. Waker is
// forwarded so the runner still sees one.
type counting struct {
	contract.WorkQueue
	waker      contract.Waker
	claims     atomic.Int64
	completes  atomic.Int64
	completed  atomic.Int64
	heartbeats atomic.Int64
	fails      atomic.Int64
	ccCalls    atomic.Int64 // CompleteAndClaim calls, through countingCC

	mu          sync.Mutex
	heartbeatFn func(context.Context, contract.Lease, time.Duration) (contract.Lease, error)
	completeFn  func(context.Context, ...contract.Lease) error
}

type countingWaker struct{ *counting }

func (c countingWaker) Subscribe(q string) (<-chan struct{}, func()) { return c.waker.Subscribe(q) }

// wrapCounting returns the counter and the queue to give the runner (a
// Waker when q is one).
func wrapCounting(q contract.WorkQueue) (*counting, contract.WorkQueue) {
	c := &counting{WorkQueue: q}
	if w, ok := q.(contract.Waker); ok {
		c.waker = w
		return c, countingWaker{c}
	}
	return c, c
}

// countingCC also forwards CompleteAndClaim, so the runner sees a
// contract.CompleteClaimer (the wrapped queue must be one).
type countingCC struct{ countingWaker }

func (c countingCC) CompleteAndClaim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest) ([]contract.Lease, error) {
	c.ccCalls.Add(1)
	ls, err := c.WorkQueue.(contract.CompleteClaimer).CompleteAndClaim(ctx, done, req)
	if err == nil || errors.Is(err, contract.ErrEmpty) {
		c.completed.Add(int64(len(done)))
	}
	return ls, err
}

func (c *counting) Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	defer c.claims.Add(1)
	return c.WorkQueue.Claim(ctx, req)
}

func (c *counting) Complete(ctx context.Context, leases ...contract.Lease) error {
	c.completes.Add(1)
	c.mu.Lock()
	fn := c.completeFn
	c.mu.Unlock()
	if fn != nil {
		return fn(ctx, leases...)
	}
	err := c.WorkQueue.Complete(ctx, leases...)
	if err == nil {
		c.completed.Add(int64(len(leases)))
	}
	return err
}

func (c *counting) Heartbeat(ctx context.Context, l contract.Lease, d time.Duration) (contract.Lease, error) {
	defer c.heartbeats.Add(1)
	c.mu.Lock()
	fn := c.heartbeatFn
	c.mu.Unlock()
	if fn != nil {
		return fn(ctx, l, d)
	}
	return c.WorkQueue.Heartbeat(ctx, l, d)
}

func (c *counting) Fail(ctx context.Context, l contract.Lease, cause error) (policy.Decision, error) {
	c.fails.Add(1)
	return c.WorkQueue.Fail(ctx, l, cause)
}

func item(tenant, id string) contract.Item {
	return contract.Item{Tenant: tenant, ID: id, Payload: []byte(id)}
}

func itemInfo(t *testing.T, s *memstore.Store, tenant, id string) (contract.ItemInfo, bool) {
	t.Helper()
	info, err := s.Item(context.Background(), contract.ItemKey{Tenant: tenant, Queue: contract.DefaultQueue, ID: id})
	if err != nil {
		return info, false
	}
	return info, true
}

// queueEmpty reports whether the default queue holds no item in any state.
func queueEmpty(t *testing.T, s *memstore.Store) bool {
	t.Helper()
	stats, err := s.Tenants(context.Background(), contract.DefaultQueue)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stats {
		if st.Ready+st.Later+st.Leased+st.Dead > 0 {
			return false
		}
	}
	return true
}

func newClock() *contracttest.FakeClock { return contracttest.NewFakeClock(time.Time{}) }

// countingLC is counting with every capability of the wrapped queue
// forwarded (its lifecycle controls among them), counting the snoozes
// and waits the runner asks for.
type countingLC struct {
	*counting
	contract.Passthrough
	snoozes atomic.Int64
	waits   atomic.Int64
	// ccCancelled counts the CompleteAndClaim calls that named a
	// cancelled item.
	ccCancelled atomic.Int64
}

// wrapCountingLC returns the counter and the queue to give the runner.
func wrapCountingLC(q contract.WorkQueue) (*countingLC, contract.WorkQueue) {
	c := &countingLC{counting: &counting{WorkQueue: q}, Passthrough: contract.NewPassthrough(q)}
	return c, c
}

func (c *countingLC) Snooze(ctx context.Context, l contract.Lease, d time.Duration) (policy.Decision, error) {
	c.snoozes.Add(1)
	return c.Passthrough.Snooze(ctx, l, d)
}

func (c *countingLC) Wait(ctx context.Context, l contract.Lease, w contract.WaitRequest) error {
	c.waits.Add(1)
	return c.Passthrough.Wait(ctx, l, w)
}

// errorLog collects what the runner reports to Config.OnError.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (e *errorLog) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, err)
}

func (e *errorLog) all() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.errs...)
}

func key(tenant, id string) contract.ItemKey {
	return contract.ItemKey{Tenant: tenant, Queue: contract.DefaultQueue, ID: id}
}

func (c *countingLC) CompleteAndClaim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest) ([]contract.Lease, error) {
	c.ccCalls.Add(1)
	ls, err := c.Passthrough.CompleteAndClaim(ctx, done, req)
	if errors.Is(err, contract.ErrCancelled) {
		c.ccCancelled.Add(1)
	}
	return ls, err
}
