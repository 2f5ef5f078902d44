package runner_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/contract/runner"
	"github.com/adkit/adk/modules/policy"
)

// heldSnoozes is a queue whose Snooze calls wait until release is closed,
// counting how many are waiting at once.
type heldSnoozes struct {
	*countingLC
	release chan struct{}
	now     atomic.Int64 // Snooze calls in flight
	most    atomic.Int64 // the most in flight at once
	landed  atomic.Int64 // Snooze calls that returned
}

func (h *heldSnoozes) Snooze(ctx context.Context, l contract.Lease, d time.Duration) (policy.Decision, error) {
	n := h.now.Add(1)
	for m := h.most.Load(); n > m && !h.most.CompareAndSwap(m, n); m = h.most.Load() {
	}
	<-h.release
	defer h.landed.Add(1)
	defer h.now.Add(-1)
	return h.countingLC.Snooze(ctx, l, d)
}

// twoItemsOneSlot runs items "1" and "2" of tenant a through one slot of
// a runner over q (store underneath), the handler returning first for
// item 1 and nil for item 2, and returns once both handlers ran, in that
// order: item 2 could only run if item 1's settle left the slot.
func twoItemsOneSlot(t *testing.T, q contract.WorkQueue, store *memstore.Store, clock contract.Clock, first error) *started {
	t.Helper()
	ran := make(chan string, 2)
	cfg := fastConfig(clock)
	cfg.Concurrency = 1
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		ran <- l.Item.ID
		if l.Item.ID == "1" {
			return first
		}
		return nil
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Enqueue(context.Background(), item("a", "1"), item("a", "2")); err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	for _, want := range []string{"1", "2"} {
		select {
		case got := <-ran:
			if got != want {
				t.Fatalf("handler ran item %s; want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("item %s did not run while the settle of item 1 was held", want)
		}
	}
	return s
}

// A snooze is written apart from its slot, as a complete is: with one
// slot, the next item runs while the first one's Snooze is still on its
// way, and Run returns only once that Snooze has landed.
func TestSnoozeDoesNotHoldTheSlot(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, _ := wrapCountingLC(store)
	q := &heldSnoozes{countingLC: c, release: make(chan struct{})}
	s := twoItemsOneSlot(t, q, store, clock, runner.Snooze(time.Hour))
	waitFor(t, "the snooze of item 1 held", func() bool { return q.now.Load() == 1 })
	if q.landed.Load() != 0 {
		t.Fatalf("%d snoozes landed while held", q.landed.Load())
	}
	// Stop the runner with the snooze still held, then let it land: Run
	// must have waited for it.
	s.cancel()
	close(q.release)
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if q.landed.Load() != 1 {
		t.Fatalf("Run returned with %d snoozes landed; want 1", q.landed.Load())
	}
	info, _ := itemInfo(t, store, "a", "1")
	if info.Item.State != contract.StateQueued || info.Item.Snoozes != 1 {
		t.Fatalf("item 1 = %+v; want queued with one snooze", info.Item)
	}
}

// The settles written apart are as many as the queues have slots at
// most: past that a slot writes its snooze itself, and waits for it.
func TestSnoozesApartAreBounded(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, _ := wrapCountingLC(store)
	q := &heldSnoozes{countingLC: c, release: make(chan struct{})}
	cfg := fastConfig(clock)
	cfg.Concurrency = 2
	var handled atomic.Int64
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		handled.Add(1)
		return runner.Snooze(time.Hour)
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var items []contract.Item
	for i := range 6 {
		items = append(items, item("a", strconv.Itoa(i)))
	}
	if err := store.Enqueue(context.Background(), items...); err != nil {
		t.Fatal(err)
	}
	start(t, r)
	// Two snoozes go apart (the tokens of two slots), then each slot
	// writes its next one itself and is held with it.
	waitFor(t, "four snoozes in flight", func() bool { return q.now.Load() == 4 })
	if h := handled.Load(); h != 4 {
		t.Fatalf("%d handlers ran with every slot held by its own snooze; want 4", h)
	}
	close(q.release)
	waitFor(t, "every item snoozed", func() bool { return q.landed.Load() == 6 })
	if m := q.most.Load(); m != 4 {
		t.Fatalf("at most %d snoozes were in flight; want 4 (2 apart, 2 in the slots)", m)
	}
}

// heldFails is a queue whose Fail calls wait until release is closed.
type heldFails struct {
	*countingLC
	release chan struct{}
	now     atomic.Int64
	causes  chan error
}

func (h *heldFails) Fail(ctx context.Context, l contract.Lease, cause error) (policy.Decision, error) {
	h.now.Add(1)
	defer h.now.Add(-1)
	<-h.release
	h.causes <- cause
	return h.countingLC.Fail(ctx, l, cause)
}

// A failed item's Fail is written apart as well, with the handler's
// error as it returned it: the handler's context ending once the slot
// moves on is not taken for its cause.
func TestFailDoesNotHoldTheSlot(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, _ := wrapCountingLC(store)
	q := &heldFails{countingLC: c, release: make(chan struct{}), causes: make(chan error, 1)}
	boom := errors.New("boom")
	s := twoItemsOneSlot(t, q, store, clock, boom)
	waitFor(t, "the Fail of item 1 held", func() bool { return q.now.Load() == 1 })
	close(q.release)
	if got := <-q.causes; got != boom {
		t.Fatalf("Fail got %v; want the handler's error as it returned it", got)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	info, _ := itemInfo(t, store, "a", "1")
	if info.Item.State != contract.StateQueued || info.Item.Attempts != 1 || info.Item.LastError != "boom" {
		t.Fatalf("item 1 = %+v; want queued for its retry, one attempt, its error kept", info.Item)
	}
}
