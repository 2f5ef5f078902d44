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
	l := testLoop(t, r)
	l.free.Store(7) // seven of ten handlers have returned
	l.claimLoop(ctx, nil)
	if !slices.Equal(q.asks, []int{7}) {
		t.Fatalf("claims asked for %v items with 7 of 10 slots free; want one claim of 7", q.asks)
	}
}

// testLoop is the loop of r's first queue, outside a Run.
func testLoop(t *testing.T, r *Runner) *queueLoop {
	rn := &run{r: r, cfg: r.cfg, log: r.cfg.Logger, detached: context.Background(), handlerCtx: context.Background()}
	rn.beats = newHeartbeats(rn)
	t.Cleanup(rn.beats.close)
	rn.done = newCompleter(rn)
	return newQueueLoop(rn, r.queues[0])
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
	r, err := New(&maxRecorder{}, func(context.Context, contract.Lease) error { return nil }, Config{Concurrency: 10, BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	l := testLoop(t, r)
	l.gatherMax = time.Hour // the wait must end by the releases, however late they come
	l.free.Store(3)         // seven handlers running
	go func() {
		// Return the seven handlers once gather waits for them: each
		// release but the last leaves it waiting, the last wakes it.
		for l.need.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		for range 7 {
			l.release()
		}
	}()
	gathering := time.NewTimer(time.Hour)
	l.gather(context.Background(), gathering, time.Hour) // returns only when woken: the window is an hour
	if n := l.free.Load(); n != 10 {
		t.Fatalf("gather returned with %d slots free, want 10", n)
	}
	if w := l.need.Load(); w != 0 {
		t.Fatalf("gather left the freed signal armed for %d slots", w)
	}

	l.gatherMax = maxGather
	l.free.Store(3) // none of the running handlers returns
	l.gather(context.Background(), gathering, time.Millisecond)
	if n := l.free.Load(); n != 3 {
		t.Fatalf("gather saw %d free, want 3", n)
	}

	// A full batch (BatchSize 5) is free already: the claim goes at once,
	// leaving the handlers that return later for the next one.
	l.batch = 5
	l.free.Store(5)
	l.gather(context.Background(), gathering, time.Hour)
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
	l := testLoop(t, r)
	lease := func(id string) contract.Lease {
		return contract.Lease{Item: contract.Item{Tenant: "t", ID: id}, ExpiresAt: time.Now().Add(time.Hour)}
	}
	allFree := func() {
		for l.free.Load() != int64(l.conc) {
			time.Sleep(time.Millisecond)
		}
	}
	l.start([]contract.Lease{lease("a"), lease("b"), lease("c")})
	close(release) // the three handlers return
	allFree()
	l.start([]contract.Lease{lease("d")})
	allFree()
	close(l.jobs)
	l.slots.Wait()
	if l.started != 3 {
		t.Fatalf("%d slot goroutines started for at most three items at once, want 3", l.started)
	}
	if n := l.rn.done.count(); n != 4 {
		t.Fatalf("%d items waiting to be completed, want 4", n)
	}
}
