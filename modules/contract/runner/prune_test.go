package runner_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
)

// pruneQueue is a queue that keeps history as far as the reaper can
// tell: it reports Capabilities.History (unless noHistory) and answers
// Prune with what result says, recording how many Prune calls each reap
// of the queue was followed by. The other HistoryKeeper methods are not
// used by the runner.
type pruneQueue struct {
	contract.WorkQueue
	noHistory bool
	result    func(queue string, call int) (int, error)

	mu     sync.Mutex
	reaps  map[string]int
	calls  map[string]int
	byTick map[string]map[int]int // queue → reap number → Prune calls after it
}

func newPruneQueue(q contract.WorkQueue, result func(queue string, call int) (int, error)) *pruneQueue {
	return &pruneQueue{WorkQueue: q, result: result, reaps: map[string]int{}, calls: map[string]int{}, byTick: map[string]map[int]int{}}
}

func (p *pruneQueue) Capabilities() contract.Capabilities {
	return contract.Capabilities{History: !p.noHistory}
}

func (p *pruneQueue) Reap(ctx context.Context, queue string) (int, error) {
	p.mu.Lock()
	p.reaps[queue]++
	p.mu.Unlock()
	return p.WorkQueue.Reap(ctx, queue)
}

func (p *pruneQueue) Prune(ctx context.Context, queue string) (int, error) {
	p.mu.Lock()
	p.calls[queue]++
	call := p.calls[queue]
	if p.byTick[queue] == nil {
		p.byTick[queue] = map[int]int{}
	}
	p.byTick[queue][p.reaps[queue]]++
	p.mu.Unlock()
	return p.result(queue, call)
}

// tick returns how many Prune calls followed the queue's nth reap.
func (p *pruneQueue) tick(queue string, n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byTick[queue][n]
}

func (p *pruneQueue) reaped(queue string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reaps[queue]
}

func (p *pruneQueue) SetRetention(context.Context, string, contract.Retention) error {
	return errors.ErrUnsupported
}

func (p *pruneQueue) Retention(context.Context, string) (contract.Retention, error) {
	return contract.Retention{}, errors.ErrUnsupported
}

func (p *pruneQueue) EnqueueReport(context.Context, ...contract.Item) ([]contract.EnqueueResult, error) {
	return nil, errors.ErrUnsupported
}

func (p *pruneQueue) History(context.Context, contract.ItemKey) (contract.History, error) {
	return contract.History{}, errors.ErrUnsupported
}

func (p *pruneQueue) Finished(context.Context, contract.FinishedQuery) (contract.FinishedPage, error) {
	return contract.FinishedPage{}, errors.ErrUnsupported
}

func (p *pruneQueue) Find(context.Context, string, string) ([]contract.Item, error) {
	return nil, errors.ErrUnsupported
}

func (p *pruneQueue) QueueEvents(context.Context, string, string, int) (contract.EventPage, error) {
	return contract.EventPage{}, errors.ErrUnsupported
}

var _ contract.HistoryKeeper = (*pruneQueue)(nil)

// After each reap the runner prunes every queue it serves, calling Prune
// again while a call removes a full batch, but at most 20 times per
// queue per reap: a backlog is worked off over several reaps.
func TestReaperPrunesEachQueueBoundedPerTick(t *testing.T) {
	clock := newClock()
	pq := newPruneQueue(newStore(clock), func(queue string, call int) (int, error) {
		if queue == "a" && call <= 25 {
			return contract.PruneBatch, nil
		}
		return 7, nil
	})
	cfg := multiConfig(clock, runner.QueueConfig{Name: "a"}, runner.QueueConfig{Name: "b"})
	cfg.ReapInterval = 5 * time.Millisecond
	r, err := runner.New(pq, func(context.Context, contract.Lease) error { return nil }, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	// Each reap of a is followed by a's prunes, then b's reap and prunes:
	// the fourth reap of a means the third tick is done for both.
	waitFor(t, "four reaps", func() bool { return pq.reaped("a") >= 4 })
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		queue string
		tick  int
		want  int
	}{
		{"a", 1, 20}, // 20 full batches, and the rest left for the next tick
		{"a", 2, 6},  // 5 full batches, then one of 7
		{"a", 3, 1},
		{"b", 1, 1}, {"b", 2, 1}, {"b", 3, 1},
	} {
		if got := pq.tick(c.queue, c.tick); got != c.want {
			t.Errorf("queue %s, reap %d: %d Prune calls, want %d", c.queue, c.tick, got, c.want)
		}
	}
	if got := pq.tick("a", 0); got != 0 {
		t.Errorf("%d Prune calls before the first reap, want none", got)
	}
}

// A failing Prune is reported to OnError, ends that queue's pruning for
// the tick, and stops nothing else: the other queue is pruned, the next
// tick tries again, and Run returns nil.
func TestReaperPruneErrorsAreReportedNotFatal(t *testing.T) {
	clock := newClock()
	boom := errors.New("prune: connection reset")
	pq := newPruneQueue(newStore(clock), func(queue string, call int) (int, error) {
		if queue == "a" {
			return 0, boom
		}
		return 0, nil
	})
	var errs errorLog
	cfg := multiConfig(clock, runner.QueueConfig{Name: "a"}, runner.QueueConfig{Name: "b"})
	cfg.ReapInterval = 5 * time.Millisecond
	cfg.OnError = errs.add
	r, err := runner.New(pq, func(context.Context, contract.Lease) error { return nil }, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "three reaps", func() bool { return pq.reaped("a") >= 3 })
	if err := s.stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	for tick := 1; tick <= 2; tick++ {
		if a, b := pq.tick("a", tick), pq.tick("b", tick); a != 1 || b != 1 {
			t.Errorf("reap %d: Prune calls a %d, b %d; want one each", tick, a, b)
		}
	}
	got := errs.all()
	if len(got) < 2 {
		t.Fatalf("OnError got %v; want the failed prune of each tick", got)
	}
	for _, err := range got {
		if !errors.Is(err, boom) {
			t.Errorf("OnError got %v, want the prune's error", err)
		}
	}
}

// A queue that does not report Capabilities.History is never pruned,
// whatever methods it has.
func TestReaperPrunesOnlyQueuesThatKeepHistory(t *testing.T) {
	clock := newClock()
	pq := newPruneQueue(newStore(clock), func(string, int) (int, error) { return 0, nil })
	pq.noHistory = true
	cfg := fastConfig(clock)
	cfg.ReapInterval = 5 * time.Millisecond
	r, err := runner.New(pq, func(context.Context, contract.Lease) error { return nil }, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "three reaps", func() bool { return pq.reaped(contract.DefaultQueue) >= 3 })
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	pq.mu.Lock()
	defer pq.mu.Unlock()
	if n := pq.calls[contract.DefaultQueue]; n != 0 {
		t.Fatalf("%d Prune calls, want none", n)
	}
}

// Over memstore, the reaper prunes what the queue's retention lets go
// once the fake clock passes it, and never a live item.
func TestReaperPrunesFinishedItemsPastTheRetention(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	ctx := context.Background()
	if err := store.SetRetention(ctx, "", contract.Retention{Age: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"1", "2", "3"} {
		if err := store.Enqueue(ctx, item("a", id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Enqueue(ctx, contract.Item{Tenant: "a", ID: "later", NotBefore: clock.Now().Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	finished := func() int {
		page, err := store.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 10}})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Items)
	}
	cfg := fastConfig(clock)
	cfg.ReapInterval = 5 * time.Millisecond
	r, err := runner.New(store, func(context.Context, contract.Lease) error { return nil }, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	waitFor(t, "three items completed and kept", func() bool { return finished() == 3 })
	clock.Advance(2 * time.Hour)
	waitFor(t, "the reaper's prune", func() bool { return finished() == 0 })
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if info, ok := itemInfo(t, store, "a", "later"); !ok || info.Item.State != contract.StateQueued {
		t.Errorf("the live item: %+v, %v; want it still queued", info.Item.State, ok)
	}
}
