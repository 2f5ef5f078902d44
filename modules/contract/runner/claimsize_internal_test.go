package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// maxRecorder is a queue whose Claim records what it was asked for,
// stops the run and finds nothing.
type maxRecorder struct {
	contract.WorkQueue
	stop context.CancelFunc
	asks []int
}

func (m *maxRecorder) Claim(_ context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	m.asks = append(m.asks, req.Max)
	m.stop()
	return nil, contract.ErrEmpty
}

// When several handlers have returned by the time the loop looks, the next
// claim asks for every slot they freed, not for the one slot of the first
// handler it happened to notice (with no-op handlers on Redis that made
// every claim a claim of one: 7.4k items/s against 28–31k with the slots
// counted first, 4.8 items per claim, concurrency 10).
func TestClaimAsksForEveryFreedSlot(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	q := &maxRecorder{stop: stop}
	r, err := New(q, func(context.Context, contract.Lease) error { return nil }, Config{Concurrency: 10, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l := &loop{r: r, cfg: r.cfg, log: r.cfg.Logger, finished: make(chan struct{}, 10), jobs: make(chan contract.Lease, 10), inflight: 10}
	for range 7 { // seven of ten handlers have returned
		l.finished <- struct{}{}
	}
	l.claimLoop(ctx, nil)
	if !slices.Equal(q.asks, []int{7}) {
		t.Fatalf("claims asked for %v items with 7 of 10 slots free; want one claim of 7", q.asks)
	}
}

// The wait before a claim retry doubles from firstClaimRetry with each
// failure in a row, stays within the upper half of that step, and never
// passes the poll interval.
func TestClaimBackoffDoublesUpToThePoll(t *testing.T) {
	limit := time.Second
	for failures := range 64 {
		step := limit
		if failures < 7 { // 10ms << 7 > 1s
			step = firstClaimRetry << failures
		}
		for range 50 {
			d := claimBackoff(failures, limit)
			if d < step/2 || d > step {
				t.Fatalf("claimBackoff(%d, %v) = %v, want within [%v, %v]", failures, limit, d, step/2, step)
			}
		}
	}
}

// Before a claim with fewer slots free than a batch, the loop collects
// the handlers that have returned meanwhile, up to a full batch, rather
// than claiming for the first few (fast handlers would otherwise split
// into cohorts claiming half a batch each); and it waits no longer than
// its window for handlers that have not returned.
func TestGatherFillsTheBatchWithinItsWindow(t *testing.T) {
	l := &loop{cfg: Config{Concurrency: 10, BatchSize: 10}, finished: make(chan struct{}, 10), inflight: 7}
	for range 7 { // every running handler has returned
		l.finished <- struct{}{}
	}
	l.gather(context.Background(), time.Hour)
	if l.inflight != 0 {
		t.Fatalf("after gather %d handlers still counted as running, want 0", l.inflight)
	}

	l.inflight = 7 // none of them returns
	l.gather(context.Background(), time.Millisecond)
	if l.inflight != 7 {
		t.Fatalf("gather counted %d running, want 7", l.inflight)
	}

	// A full batch (BatchSize 5) is free already: the claim goes at once,
	// leaving the handlers that returned since for the next one.
	l.inflight = 5
	l.cfg.BatchSize = 5
	for range 5 {
		l.finished <- struct{}{}
	}
	l.gather(context.Background(), time.Hour)
	if l.inflight != 5 {
		t.Fatalf("gather counted %d running, want 5: it waited with a batch free", l.inflight)
	}
}

// Slot goroutines are started as running items first need them, not one
// per configured slot: a runner of a thousand slots that has had three
// items at once runs three goroutines, and reuses them.
func TestSlotGoroutinesFollowThePeak(t *testing.T) {
	release := make(chan struct{})
	r, err := New(&maxRecorder{}, func(ctx context.Context, _ contract.Lease) error {
		<-release
		return nil
	}, Config{Concurrency: 1000, LeaseFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l := &loop{r: r, cfg: r.cfg, log: r.cfg.Logger, detached: context.Background(), handlerCtx: context.Background(),
		finished: make(chan struct{}, 1000), jobs: make(chan contract.Lease, 1000), completes: make(chan contract.Lease, 1000)}
	lease := func(id string) contract.Lease {
		return contract.Lease{Item: contract.Item{Tenant: "t", ID: id}, ExpiresAt: time.Now().Add(time.Hour)}
	}
	for _, id := range []string{"a", "b", "c"} {
		l.start(lease(id))
	}
	close(release) // the three handlers return
	for range 3 {
		<-l.finished
		l.inflight--
	}
	l.start(lease("d"))
	<-l.finished
	l.inflight--
	close(l.jobs)
	l.slots.Wait()
	if l.started != 3 {
		t.Fatalf("%d slot goroutines started for at most three items at once, want 3", l.started)
	}
	if n := len(l.completes); n != 4 {
		t.Fatalf("%d items completed, want 4", n)
	}
}
