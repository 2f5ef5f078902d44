package runner_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
)

// multiConfig is fastConfig serving queues instead of the one default
// queue.
func multiConfig(clock contract.Clock, queues ...runner.QueueConfig) runner.Config {
	cfg := fastConfig(clock)
	cfg.Concurrency = 0
	cfg.Queues = queues
	return cfg
}

func queueItem(queue, tenant, id string) contract.Item {
	it := item(tenant, id)
	it.Queue = queue
	return it
}

// gauge tracks how many handlers run at once and the most it saw.
type gauge struct {
	now, peak atomic.Int64
}

func (g *gauge) enter() {
	n := g.now.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
}

func (g *gauge) leave() { g.now.Add(-1) }

// One runner serves two queues, each with its own handler and its own
// number of slots: with every handler held, exactly each queue's
// concurrency of its items run at once, and every item runs once, on its
// queue's handler.
func TestServesSeveralQueuesEachWithItsConcurrency(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	ctx := context.Background()
	for i := range 6 {
		for _, q := range []string{"mail", "steps"} {
			if err := store.Enqueue(ctx, queueItem(q, fmt.Sprint("t", i%2), fmt.Sprint(q, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	release := make(chan struct{})
	var mu sync.Mutex
	ran := map[string][]string{}
	gauges := map[string]*gauge{"mail": {}, "steps": {}}
	handler := func(queue string) runner.Handler {
		return func(ctx context.Context, l contract.Lease) error {
			g := gauges[queue]
			g.enter()
			defer g.leave()
			mu.Lock()
			ran[queue] = append(ran[queue], l.Item.ID)
			mu.Unlock()
			if l.Item.Queue != queue {
				return fmt.Errorf("item of queue %q reached the handler of %q", l.Item.Queue, queue)
			}
			<-release
			return nil
		}
	}
	c, q := wrapCounting(store)
	r, err := runner.New(q, nil, multiConfig(clock,
		runner.QueueConfig{Name: "mail", Concurrency: 2, Handler: handler("mail")},
		runner.QueueConfig{Name: "steps", Concurrency: 3, BatchSize: 2, Handler: handler("steps")},
	))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "both queues' slots to fill", func() bool {
		return gauges["mail"].now.Load() == 2 && gauges["steps"].now.Load() == 3
	})
	// No claim runs ahead of the slots: each queue holds exactly its
	// concurrency of leases.
	for name, want := range map[string]int64{"mail": 2, "steps": 3} {
		stats, err := store.Tenants(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		var leased int64
		for _, st := range stats {
			leased += st.Leased
		}
		if leased != want {
			t.Fatalf("queue %s holds %d leases with every slot busy, want %d", name, leased, want)
		}
	}
	close(release)
	waitFor(t, "every item", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran["mail"])+len(ran["steps"]) == 12
	})
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mail", "steps"} {
		ids := slices.Clone(ran[name])
		sort.Strings(ids)
		want := make([]string, 6)
		for i := range want {
			want[i] = fmt.Sprint(name, i)
		}
		sort.Strings(want)
		if !slices.Equal(ids, want) {
			t.Errorf("queue %s ran %v, want each of %v once", name, ids, want)
		}
	}
	if p := gauges["mail"].peak.Load(); p != 2 {
		t.Errorf("mail ran %d handlers at once, want its concurrency 2", p)
	}
	if p := gauges["steps"].peak.Load(); p != 3 {
		t.Errorf("steps ran %d handlers at once, want its concurrency 3", p)
	}
	if c.completed.Load() != 12 {
		t.Errorf("%d items completed, want 12", c.completed.Load())
	}
}

// recordingComplete records the queues of each Complete call.
type recordingComplete struct {
	contract.WorkQueue
	mu    sync.Mutex
	calls [][]string // per call, the queue of each lease
}

func (r *recordingComplete) Complete(ctx context.Context, leases ...contract.Lease) error {
	var qs []string
	for _, l := range leases {
		qs = append(qs, l.Item.Queue)
	}
	r.mu.Lock()
	r.calls = append(r.calls, qs)
	r.mu.Unlock()
	return r.WorkQueue.Complete(ctx, leases...)
}

// The queues share one completer: items of two queues that finish
// together are completed in one call.
func TestQueuesShareOneComplete(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	ctx := context.Background()
	for _, q := range []string{"a", "b"} {
		for i := range 2 {
			if err := store.Enqueue(ctx, queueItem(q, "t", fmt.Sprint(q, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	var all sync.WaitGroup
	all.Add(4)
	h := func(context.Context, contract.Lease) error {
		all.Done()
		all.Wait() // the four handlers return together
		return nil
	}
	rec := &recordingComplete{WorkQueue: store}
	cfg := multiConfig(clock, runner.QueueConfig{Name: "a", Concurrency: 2}, runner.QueueConfig{Name: "b", Concurrency: 2})
	cfg.CompleteDelay = time.Hour // only a full batch (2+2) or the shutdown completes
	r, err := runner.New(rec, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "the complete", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.calls) > 0
	})
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.calls) != 1 {
		t.Fatalf("Complete calls %v; want one carrying both queues", rec.calls)
	}
	got := slices.Clone(rec.calls[0])
	sort.Strings(got)
	if strings.Join(got, ",") != "a,a,b,b" {
		t.Fatalf("the Complete carried leases of queues %v, want a,a,b,b", got)
	}
}

// Long handlers of every queue are heartbeated by the runner's one set of
// heartbeats, and the reaper reaps every queue it serves.
func TestQueuesShareHeartbeatsAndReaper(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	ctx := context.Background()
	// A dead worker's items in both queues, and a live item in each.
	for _, q := range []string{"a", "b"} {
		if err := store.Enqueue(ctx, queueItem(q, "t", "orphan")); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Claim(ctx, contract.ClaimRequest{Queue: q, Worker: "dead", LeaseFor: time.Second, Max: 1}); err != nil {
			t.Fatal(err)
		}
		if err := store.Enqueue(ctx, queueItem(q, "t", "long")); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	beats := map[string]int{}
	c, q := wrapCounting(store)
	c.heartbeatFn = func(ctx context.Context, l contract.Lease, d time.Duration) (contract.Lease, error) {
		mu.Lock()
		beats[l.Item.Queue]++
		mu.Unlock()
		return store.Heartbeat(ctx, l, d)
	}
	release := make(chan struct{})
	var orphans atomic.Int64
	var longs sync.WaitGroup
	longs.Add(2)
	h := func(ctx context.Context, l contract.Lease) error {
		if l.Item.ID == "orphan" {
			orphans.Add(1)
			return nil
		}
		longs.Done()
		<-release
		return nil
	}
	cfg := multiConfig(clock, runner.QueueConfig{Name: "a", Concurrency: 2}, runner.QueueConfig{Name: "b", Concurrency: 2})
	cfg.ReapInterval = 5 * time.Millisecond
	r, err := runner.New(q, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	longs.Wait()
	for range 4 { // 4 × 20s: well past the 30s lease of the long items
		clock.Advance(20 * time.Second)
		before := c.heartbeats.Load()
		waitFor(t, "heartbeats of both long items", func() bool { return c.heartbeats.Load() >= before+2 })
	}
	mu.Lock()
	a, b := beats["a"], beats["b"]
	mu.Unlock()
	if a == 0 || b == 0 {
		t.Fatalf("heartbeats a %d, b %d; want both queues' items heartbeated", a, b)
	}
	// The orphans were reaped from both queues (their retry is due by
	// now on the fake clock) and ran; the long items kept their leases.
	waitFor(t, "both orphans to run", func() bool { return orphans.Load() == 2 })
	for _, name := range []string{"a", "b"} {
		info, err := store.Item(ctx, contract.ItemKey{Tenant: "t", Queue: name, ID: "long"})
		if err != nil || info.Item.State != contract.StateLeased {
			t.Fatalf("long item of %s: %+v, %v; want still leased", name, info.Item.State, err)
		}
	}
	close(release)
}

// Stopping a runner of several queues gives every queue's handlers the
// one grace period, then fails back what is still running.
func TestStopWithSeveralQueues(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	ctx := context.Background()
	for _, q := range []string{"a", "b"} {
		if err := store.Enqueue(ctx, queueItem(q, "t", "1")); err != nil {
			t.Fatal(err)
		}
	}
	var entered sync.WaitGroup
	entered.Add(2)
	causes := make(chan error, 2)
	h := func(ctx context.Context, l contract.Lease) error {
		entered.Done()
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}
	c, q := wrapCounting(store)
	cfg := multiConfig(clock, runner.QueueConfig{Name: "a"}, runner.QueueConfig{Name: "b"})
	cfg.Grace = -1
	r, err := runner.New(q, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	entered.Wait()
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if cause := <-causes; !errors.Is(cause, runner.ErrGraceExpired) {
			t.Fatalf("handler cancelled with %v, want ErrGraceExpired", cause)
		}
	}
	if c.fails.Load() != 2 {
		t.Fatalf("%d items failed back, want both", c.fails.Load())
	}
	for _, name := range []string{"a", "b"} {
		info, err := store.Item(ctx, contract.ItemKey{Tenant: "t", Queue: name, ID: "1"})
		if err != nil || info.Item.State != contract.StateQueued || info.Item.Attempts != 1 {
			t.Fatalf("item of %s: %+v, %v; want queued again with one attempt", name, info.Item, err)
		}
	}
}

func TestQueuesConfig(t *testing.T) {
	store := newStore(newClock())
	h := func(context.Context, contract.Lease) error { return nil }
	bad := map[string]runner.Config{
		"queue beside queues":       {Queue: "a", Queues: []runner.QueueConfig{{Name: "b"}}},
		"concurrency beside queues": {Concurrency: 2, Queues: []runner.QueueConfig{{Name: "b"}}},
		"batch beside queues":       {BatchSize: 2, Queues: []runner.QueueConfig{{Name: "b"}}},
		"listed twice":              {Queues: []runner.QueueConfig{{Name: "a"}, {Name: "a"}}},
		"default listed twice":      {Queues: []runner.QueueConfig{{}, {Name: contract.DefaultQueue}}},
		"bad name":                  {Queues: []runner.QueueConfig{{Name: "a\x00"}}},
		"bad concurrency":           {Queues: []runner.QueueConfig{{Name: "a", Concurrency: -1}}},
		"bad batch":                 {Queues: []runner.QueueConfig{{Name: "a", BatchSize: contract.MaxClaimBatch + 1}}},
	}
	for name, cfg := range bad {
		if r, err := runner.New(store, h, cfg); !errors.Is(err, contract.ErrInvalid) || r != nil {
			t.Errorf("%s: %v, %v; want a *contract.ValidationError", name, r, err)
		}
	}
	// Without New's handler, every queue needs its own.
	cfg := runner.Config{Queues: []runner.QueueConfig{{Name: "a", Handler: h}, {Name: "b"}}}
	if _, err := runner.New(store, nil, cfg); !errors.Is(err, contract.ErrInvalid) || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("a queue without a handler: %v; want a ValidationError naming it", err)
	}
	cfg.Queues[1].Handler = h
	r, err := runner.New(store, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := r.Config().Queues
	if len(got) != 2 || got[0].Name != "a" || got[1].Concurrency != runner.DefaultConcurrency || got[1].BatchSize != runner.DefaultConcurrency {
		t.Fatalf("Config().Queues = %+v; want both queues with the defaults filled in", got)
	}
	// The single-queue form lists its queue too.
	r, err = runner.New(store, h, runner.Config{Queue: "solo", Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Config().Queues; len(got) != 1 || got[0].Name != "solo" || got[0].Concurrency != 3 || got[0].BatchSize != 3 {
		t.Fatalf("Config().Queues = %+v; want the one queue", got)
	}
}

// Middleware wraps each queue's handler with that queue's name.
func TestMiddlewareSeesEachQueue(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	ctx := context.Background()
	for _, q := range []string{"a", "b"} {
		if err := store.Enqueue(ctx, queueItem(q, "t", "1")); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var seen []string
	cfg := multiConfig(clock, runner.QueueConfig{Name: "a"}, runner.QueueConfig{Name: "b"})
	cfg.Middleware = []runner.Middleware{func(queue string, next runner.Handler) runner.Handler {
		return func(ctx context.Context, l contract.Lease) error {
			mu.Lock()
			seen = append(seen, queue+"="+l.Item.Queue)
			mu.Unlock()
			return next(ctx, l)
		}
	}}
	var n atomic.Int64
	r, err := runner.New(store, func(context.Context, contract.Lease) error { n.Add(1); return nil }, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "both items", func() bool { return n.Load() == 2 })
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	sort.Strings(seen)
	if strings.Join(seen, " ") != "a=a b=b" {
		t.Fatalf("middleware saw %v; want each queue's item under its own name", seen)
	}
}
