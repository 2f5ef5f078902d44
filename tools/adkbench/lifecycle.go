package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
)

// The lifecycle scenario's load: every item has a priority from
// -lifecycleSpread to lifecycleSpread, and every lifecycleEvery-th item
// (by seq, the first included) snoozes for lifecycleSnooze on its first
// run and completes on its next.
const (
	lifecycleSpread = 5
	lifecycleEvery  = 100
	lifecycleSnooze = 10 * time.Millisecond
)

// lifecyclePriority is the priority the lifecycle scenario gives item
// seq: spread over -lifecycleSpread..lifecycleSpread and out of step with
// the enqueue order, so that claims reorder the tenant's items.
func lifecyclePriority(seq int64) int {
	return int(seq*7%(2*lifecycleSpread+1)) - lifecycleSpread
}

// lifecyclePairs measures what the lifecycle controls cost when in use:
// the throughput scenario's load (one busy tenant) with a priority on
// every item and 1% of the items snoozing once, in interleaved pairs with
// the plain load. The ratio (lifecycle / plain) is what issue 17 bounds at
// 0.9×. Both sides check, once the workers halted, that the queue is
// empty (every item was completed); the lifecycle side also that each
// item came with its priority, that every snoozer snoozed once and came
// back with Snoozes 1, and that no other item was ever snoozed.
//
// As in the throughput scenario the clock runs until the last handler
// start, often a snoozer's second run, so it counts the tail: a snoozer
// served near the end comes due when no other work is left, and a
// claimer with nothing to do may learn of it only at its next poll
// (memstore, for one, wakes claimers for items due at once, not when a
// delayed one comes due). Both sides of
// the pair therefore poll every lifecycleSnooze instead of every half
// second, which bounds that tail at about two snoozes; the wake-up of a
// snoozed item is the wake scenario's question, not this one's.
func (h *harness) lifecyclePairs(ctx context.Context, b *ourBacking, conc int) {
	poll := b.poll
	b.poll = min(poll, lifecycleSnooze)
	defer func() { b.poll = poll }()
	h.medianOfPairs(
		func() row { return h.measureLifecycle(ctx, b, conc, false) },
		func() row { return h.measureLifecycle(ctx, b, conc, true) },
		"vs plain")
}

func (h *harness) measureLifecycle(ctx context.Context, b *ourBacking, conc int, controls bool) row {
	n := h.cfg.items
	jobs, rec := throughputJobs(n, 1, 0, false)
	w := workload{tenants: 1, busy: 1, conc: conc, rec: rec, checkDrained: true}
	note := "plain: no priorities, no snoozes"
	if controls {
		for i := range jobs {
			jobs[i].priority = lifecyclePriority(jobs[i].seq)
		}
		w.lifecycle = newLifecycleLoad(n)
		note = fmt.Sprintf("priorities %d..%d on every item, every %dth item snoozed %v once", -lifecycleSpread, lifecycleSpread, lifecycleEvery, lifecycleSnooze)
	}
	h.logf("lifecycle %s conc=%d items=%d controls=%v", b.name(), conc, n, controls)
	r := h.drainRow(ctx, "lifecycle", b, w, jobs, note)
	if controls && r.Error == "" {
		if err := w.lifecycle.check(); err != nil {
			r.Error = err.Error()
		} else {
			r.Note = fmt.Sprintf("%d snoozed once, back with Snoozes 1; %s", w.lifecycle.back.Load(), note)
		}
	}
	return r
}

// lifecycleLoad is the lifecycle scenario's handler state: what it asked
// of the queue and what it saw coming back.
type lifecycleLoad struct {
	items   int
	runs    []atomic.Int32 // per snoozer (seq / lifecycleEvery): runs served with Snoozes 0
	snoozed atomic.Int64   // snoozes asked for
	back    atomic.Int64   // snoozers served again with Snoozes 1
	wrong   errCounter     // what the queue served not as enqueued or snoozed
}

func newLifecycleLoad(items int) *lifecycleLoad {
	return &lifecycleLoad{items: items, runs: make([]atomic.Int32, snoozers(items))}
}

// snoozers is how many of items the lifecycle scenario snoozes: the seqs
// divisible by lifecycleEvery.
func snoozers(items int) int { return (items + lifecycleEvery - 1) / lifecycleEvery }

// handler is the runner's handler for the lifecycle scenario: a snoozer
// served with Snoozes 0 for the first time returns runner.Snooze; every
// other run is handled by rec, as in the plain scenario, after checking
// the item's Priority and Snoozes.
func (lc *lifecycleLoad) handler(rec *recorder) runner.Handler {
	return func(_ context.Context, l contract.Lease) error {
		seq, err := strconv.ParseInt(l.Item.ID, 10, 64)
		if err != nil || seq < 0 || seq >= int64(lc.items) {
			rec.handleID(l.Item.ID) // not ours: the recorder counts it as an anomaly
			return nil
		}
		if want := lifecyclePriority(seq); l.Item.Priority != want {
			lc.wrong.fail(fmt.Errorf("item %d served with Priority %d, enqueued with %d", seq, l.Item.Priority, want))
		}
		switch {
		case seq%lifecycleEvery != 0:
			if l.Item.Snoozes != 0 {
				lc.wrong.fail(fmt.Errorf("item %d served with Snoozes %d; it never snoozed", seq, l.Item.Snoozes))
			}
		case l.Item.Snoozes == 0:
			if lc.runs[seq/lifecycleEvery].Add(1) == 1 {
				lc.snoozed.Add(1)
				return runner.Snooze(lifecycleSnooze)
			}
			lc.wrong.fail(fmt.Errorf("item %d came back from its snooze with Snoozes 0, want 1", seq))
		case l.Item.Snoozes == 1:
			lc.back.Add(1)
		default:
			lc.wrong.fail(fmt.Errorf("item %d served with Snoozes %d; it snoozed once", seq, l.Item.Snoozes))
		}
		rec.handle(seq) // the seq parsed above: the plain side parses each ID once too
		return nil
	}
}

// check reports what the handler saw go wrong: an item served not as
// enqueued, a snoozer that did not snooze exactly once or did not come
// back with Snoozes 1.
func (lc *lifecycleLoad) check() error {
	if n, first := lc.wrong.errs(); n > 0 {
		return fmt.Errorf("%d items served not as enqueued or snoozed, first: %w", n, first)
	}
	want := int64(snoozers(lc.items))
	if s, b := lc.snoozed.Load(), lc.back.Load(); s != want || b != want {
		return fmt.Errorf("%d of %d snoozers snoozed and %d came back with Snoozes 1; want all %d", s, want, b, want)
	}
	return nil
}

// checkDrained reports anything the bench queue still holds after a run
// (ready, delayed, leased, waiting, dead or cancelled items): every item
// of the run must have been completed.
func checkDrained(ctx context.Context, q contract.WorkQueue) error {
	ins, ok := contract.AsInspector(q)
	if !ok {
		return errors.New("the queue has no Inspector to check that every item was completed")
	}
	ts, err := ins.Tenants(ctx, benchQueue)
	if err != nil {
		return fmt.Errorf("tenants: %w", err)
	}
	var left []string
	for _, t := range ts {
		if t.Ready+t.Later+t.Leased+t.Waiting+t.Dead+t.Cancelled > 0 {
			left = append(left, fmt.Sprintf("%s: %d ready, %d later, %d leased, %d waiting, %d dead, %d cancelled",
				t.Tenant, t.Ready, t.Later, t.Leased, t.Waiting, t.Dead, t.Cancelled))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("items left in the queue after the run (every one should be completed): %s", strings.Join(left, "; "))
	}
	return nil
}
