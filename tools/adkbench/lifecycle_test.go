package main

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/contract/runner"
	"go.uber.org/goleak"
)

func lease(seq int64, priority, snoozes int) contract.Lease {
	return contract.Lease{Item: contract.Item{Tenant: tenantName(0), Queue: benchQueue, ID: strconv.FormatInt(seq, 10), Priority: priority, Snoozes: snoozes}}
}

// The handler snoozes every 100th item on its first run only, hands every
// other run to the recorder, and check counts what came back wrong.
func TestLifecycleHandler(t *testing.T) {
	ctx := context.Background()
	rec := newRecorder(300)
	lc := newLifecycleLoad(300)
	h := lc.handler(rec)
	var sn *runner.SnoozeError
	for _, seq := range []int64{0, 100, 200} {
		if err := h(ctx, lease(seq, lifecyclePriority(seq), 0)); !errors.As(err, &sn) || sn.Delay != lifecycleSnooze {
			t.Fatalf("item %d, first run: %v, want a snooze of %v", seq, err, lifecycleSnooze)
		}
	}
	if err := lc.check(); err == nil || !strings.Contains(err.Error(), "0 came back") {
		t.Fatalf("check before the snoozers came back: %v, want it to say none came back", err)
	}
	for seq := range int64(300) {
		snoozes := 0
		if seq%lifecycleEvery == 0 {
			snoozes = 1
		}
		if err := h(ctx, lease(seq, lifecyclePriority(seq), snoozes)); err != nil {
			t.Fatalf("item %d: %v", seq, err)
		}
	}
	if err := lc.check(); err != nil {
		t.Fatalf("check: %v", err)
	}
	if rec.processed.Load() != 300 || rec.dups.Load() != 0 {
		t.Fatalf("recorder: %d processed, %d duplicates; want 300 and 0", rec.processed.Load(), rec.dups.Load())
	}

	for _, c := range []struct {
		name string
		l    contract.Lease
		want string
	}{
		{"wrong priority", lease(1, lifecyclePriority(1)+1, 0), "served with Priority"},
		{"snoozes on an item that never snoozed", lease(2, lifecyclePriority(2), 1), "it never snoozed"},
		{"snoozed twice", lease(100, lifecyclePriority(100), 2), "it snoozed once"},
		{"back with Snoozes 0", lease(200, lifecyclePriority(200), 0), "with Snoozes 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lc := newLifecycleLoad(300)
			lc.runs[2].Store(1) // item 200 snoozed already
			if err := lc.handler(newRecorder(300))(ctx, c.l); err != nil {
				t.Fatalf("handler: %v, want the item handled and the fault kept for check", err)
			}
			if err := lc.check(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("check: %v, want it to say %q", err, c.want)
			}
		})
	}
}

// bareQueue hides every optional capability of the queue it wraps.
type bareQueue struct{ contract.WorkQueue }

// On a backing without lifecycle controls the scenario's row fails and
// says so; it does not measure the plain load alone.
func TestLifecycleNeedsTheCapability(t *testing.T) {
	b := newMemBacking(2, 100).(*ourBacking)
	b.open = func(context.Context, int) (*instance, error) {
		return &instance{q: bareQueue{memstore.New(nil, memstore.Settings{})}, close: func(context.Context) error { return nil }}, nil
	}
	b.label = "bare"
	h := &harness{cfg: config{items: 200, pairs: 1, timeout: 10 * time.Second}, log: io.Discard}
	h.lifecyclePairs(context.Background(), b, 10)
	if len(h.rows) != 1 {
		t.Fatalf("%d rows, want 1", len(h.rows))
	}
	if r := h.rows[0]; !strings.Contains(r.Error, "bare has no lifecycle controls") {
		t.Fatalf("row error %q, want it to say the backing has no lifecycle controls", r.Error)
	}
	if b.poll != 500*time.Millisecond {
		t.Fatalf("poll left at %v, want it restored to 500ms", b.poll)
	}
}

// On memstore the scenario's pair drains every item once, with every
// snoozer back with Snoozes 1 and nothing left in the queue.
func TestLifecycleOnMemstore(t *testing.T) {
	defer goleak.VerifyNone(t)
	b := newMemBacking(2, 100).(*ourBacking)
	h := &harness{cfg: config{items: 1000, pairs: 2, timeout: 30 * time.Second}, log: io.Discard}
	h.lifecyclePairs(context.Background(), b, 10)
	if len(h.rows) != 1 {
		t.Fatalf("%d rows, want 1", len(h.rows))
	}
	r := h.rows[0]
	if r.Error != "" {
		t.Fatalf("row error: %s", r.Error)
	}
	if r.Processed != 1000 || r.Expected != 1000 || r.Duplicates != 0 || r.Errors != 0 {
		t.Fatalf("processed %d of %d, %d duplicates, %d errors", r.Processed, r.Expected, r.Duplicates, r.Errors)
	}
	if r.Ratio <= 0 || r.RatioOf != "vs plain" || !strings.Contains(r.Note, "10 snoozed once, back with Snoozes 1") {
		t.Fatalf("ratio %v %q, note %q", r.Ratio, r.RatioOf, r.Note)
	}
}

// A queue that still holds work after the run fails the check, naming
// what is left.
func TestCheckDrained(t *testing.T) {
	ctx := context.Background()
	q := memstore.New(nil, memstore.Settings{})
	if err := checkDrained(ctx, q); err != nil {
		t.Fatalf("empty queue: %v", err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "t00", Queue: benchQueue, ID: "1", NotBefore: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := checkDrained(ctx, q); err == nil || !strings.Contains(err.Error(), "t00: 0 ready, 1 later") {
		t.Fatalf("one delayed item left: %v", err)
	}
	if err := checkDrained(ctx, bareQueue{q}); err == nil || !strings.Contains(err.Error(), "no Inspector") {
		t.Fatalf("no inspector: %v", err)
	}
}
