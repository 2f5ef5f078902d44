package runner_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
)

// A cancel of a running item reaches its handler's context at the first
// heartbeat after it, with the *contract.CancelledError as the cause, and
// whatever the handler then returns, the runner writes nothing more for
// the lease: no Complete, no Fail, no Snooze.
func TestCancelReachesTheHandlersContext(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCountingLC(store)
	type seen struct {
		id         string
		cause      error
		beatsAfter int64 // heartbeats made when the handler saw the cancel
	}
	running := make(chan string, 3)
	causes := make(chan seen, 3)
	h := func(ctx context.Context, l contract.Lease) error {
		running <- l.Item.ID
		<-ctx.Done()
		causes <- seen{l.Item.ID, context.Cause(ctx), c.heartbeats.Load()}
		switch l.Item.ID {
		case "returns-nil":
			return nil
		case "snoozes":
			return runner.Snooze(time.Minute)
		}
		return ctx.Err()
	}
	var errs errorLog
	cfg := fastConfig(clock)
	cfg.OnError = errs.add
	r, err := runner.New(q, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids := []string{"returns-nil", "returns-err", "snoozes"}
	for _, id := range ids {
		if err := store.Enqueue(ctx, item("a", id)); err != nil {
			t.Fatal(err)
		}
	}
	s := start(t, r)
	for range ids {
		<-running
	}
	n, err := store.CancelMatching(ctx, contract.CancelFilter{Tenant: "a"}, "the user gave up")
	if err != nil || n != 3 {
		t.Fatalf("CancelMatching = %d, %v; want 3 leases marked", n, err)
	}
	beatsBefore := c.heartbeats.Load()
	for range ids {
		var got seen
		select {
		case got = <-causes:
		case <-time.After(10 * time.Second):
			t.Fatal("a cancelled item's handler was not cancelled")
		}
		if !errors.Is(got.cause, contract.ErrCancelled) {
			t.Errorf("%s: cause = %v; want one matching contract.ErrCancelled", got.id, got.cause)
		}
		if ce, ok := errors.AsType[*contract.CancelledError](got.cause); !ok || len(ce.Items) != 1 || ce.Items[0] != key("a", got.id) {
			t.Errorf("%s: cause = %#v; want the *contract.CancelledError naming the item", got.id, got.cause)
		}
		// Each of the three may have had a beat in flight when the cancel
		// came; its next beat, not a later one, is what stopped it: at
		// most two beats each after the cancel.
		if beats := got.beatsAfter - beatsBefore; beats > 6 {
			t.Errorf("%s: %d heartbeats passed between the cancel and the handler's context; want the next one to cancel it", got.id, beats)
		}
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if f, cm, sn := c.fails.Load(), c.completes.Load(), c.snoozes.Load(); f+cm+sn != 0 {
		t.Errorf("the runner settled cancelled leases: %d fails, %d completes, %d snoozes", f, cm, sn)
	}
	for _, id := range ids {
		info, ok := itemInfo(t, store, "a", id)
		if !ok || info.Item.State != contract.StateCancelled || info.Item.CancelReason != "the user gave up" || info.Item.Attempts != 0 {
			t.Errorf("%s = %+v; want cancelled with the reason, no attempt charged", id, info.Item)
		}
	}
	if e := errs.all(); len(e) != 0 {
		t.Errorf("a cancel was reported as a runner error: %v", e)
	}
}

// The heartbeat right after a cancel is the one that stops the handler:
// here the cancel lands inside the first heartbeat call. A handler that
// only polls Err (whose context's cancellation is never made) learns it
// the same way, and its cause.
func TestFirstHeartbeatAfterCancelStopsTheHandler(t *testing.T) {
	for _, wait := range []string{"Done", "Err"} {
		t.Run(wait, func(t *testing.T) { firstHeartbeatAfterCancel(t, wait == "Done") })
	}
}

func firstHeartbeatAfterCancel(t *testing.T, done bool) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCountingLC(store)
	var once sync.Once
	c.heartbeatFn = func(ctx context.Context, l contract.Lease, d time.Duration) (contract.Lease, error) {
		once.Do(func() {
			if _, err := store.Cancel(ctx, l.Key(), ""); err != nil {
				t.Error(err)
			}
		})
		return store.Heartbeat(ctx, l, d)
	}
	causes := make(chan error, 1)
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		if done {
			<-ctx.Done()
		}
		for ctx.Err() == nil {
			runtime.Gosched()
		}
		if n := c.heartbeats.Load(); n != 1 {
			t.Errorf("the handler was stopped after %d heartbeats; want the first", n)
		}
		causes <- context.Cause(ctx)
		return ctx.Err()
	}, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	select {
	case cause := <-causes:
		if !errors.Is(cause, contract.ErrCancelled) {
			t.Fatalf("cause = %v; want contract.ErrCancelled", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not cancelled")
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if c.fails.Load() != 0 || c.completes.Load() != 0 {
		t.Fatalf("settled a cancelled lease: %d fails, %d completes", c.fails.Load(), c.completes.Load())
	}
}

// A cancel that lands after the last heartbeat meets the settle: the
// queue writes nothing it was asked (Complete, Fail, Snooze, Wait), the
// item is cancelled, and the runner counts that as what it is, not as a
// failure of its own.
func TestCancelMetAtTheSettleIsNoRunnerError(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCountingLC(store)
	h := func(ctx context.Context, l contract.Lease) error {
		if _, err := store.Cancel(ctx, l.Key(), "late"); err != nil {
			return err
		}
		switch l.Item.ID {
		case "fails":
			return errors.New("boom")
		case "snoozes":
			return runner.Snooze(time.Minute)
		case "waits":
			return runner.WaitForSignal("approval", time.Hour)
		}
		return nil
	}
	var errs errorLog
	cfg := fastConfig(clock)
	cfg.HeartbeatEvery = 10 * time.Second // no beat comes between the cancel and the settle
	cfg.OnError = errs.add
	r, err := runner.New(q, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"completes", "fails", "snoozes", "waits"}
	for _, id := range ids {
		if err := store.Enqueue(context.Background(), item("a", id)); err != nil {
			t.Fatal(err)
		}
	}
	s := start(t, r)
	waitFor(t, "every item cancelled", func() bool {
		for _, id := range ids {
			if info, _ := itemInfo(t, store, "a", id); info.Item.State != contract.StateCancelled {
				return false
			}
		}
		return true
	})
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if c.completes.Load() == 0 || c.fails.Load() != 1 || c.snoozes.Load() != 1 || c.waits.Load() != 1 {
		t.Errorf("settles = %d completes, %d fails, %d snoozes, %d waits; want each tried once", c.completes.Load(), c.fails.Load(), c.snoozes.Load(), c.waits.Load())
	}
	for _, id := range ids {
		if info, _ := itemInfo(t, store, "a", id); info.Item.CancelReason != "late" || info.Item.Attempts != 0 || info.Item.Snoozes != 0 {
			t.Errorf("%s = %+v; want cancelled as it was, nothing the settle asked for written", id, info.Item)
		}
	}
	if e := errs.all(); len(e) != 0 {
		t.Errorf("cancels met at the settle were reported as runner errors: %v", e)
	}
}

// A batch Complete that names lost and cancelled leases at once (the
// contract joins the two errors) reports the lost ones only.
func TestCompleteReportsLostButNotCancelled(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCountingLC(store)
	c.completeFn = func(ctx context.Context, leases ...contract.Lease) error {
		return contract.SettleError([]contract.ItemKey{leases[0].Key()}, []contract.ItemKey{key("a", "gone")})
	}
	reported := make(chan error, 1)
	cfg := fastConfig(clock)
	cfg.Concurrency = 1
	cfg.OnError = func(err error) {
		select {
		case reported <- err:
		default:
			t.Errorf("reported again: %v", err)
		}
	}
	r, err := runner.New(q, func(context.Context, contract.Lease) error { return nil }, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	var got error
	select {
	case got = <-reported:
	case <-time.After(10 * time.Second):
		t.Fatal("the lost lease was not reported")
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if _, ok := errors.AsType[*contract.LeaseLostError](got); !ok || errors.Is(got, contract.ErrCancelled) {
		t.Fatalf("reported %v; want the *contract.LeaseLostError alone", got)
	}
}

// A handler's Snooze(d) puts its item back for d: no attempt charged, one
// snooze counted, and the handler sees it again once d has passed.
func TestSnoozedItemComesBackAfterD(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCountingLC(store)
	leases := make(chan contract.Lease, 2)
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		leases <- l
		if l.Item.Snoozes == 0 {
			return runner.Snooze(time.Minute)
		}
		return nil
	}, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	start(t, r)
	<-leases
	waitFor(t, "the item snoozed", func() bool {
		info, _ := itemInfo(t, store, "a", "1")
		return info.Item.State == contract.StateQueued && info.Item.Snoozes == 1
	})
	info, _ := itemInfo(t, store, "a", "1")
	if want := clock.Now().Add(time.Minute); !info.Item.NotBefore.Equal(want) || info.Item.Attempts != 0 {
		t.Fatalf("snoozed item = %+v; want due at %v, no attempt charged", info.Item, want)
	}
	if c.fails.Load() != 0 || c.completes.Load() != 0 {
		t.Fatalf("a snooze was settled as %d fails, %d completes", c.fails.Load(), c.completes.Load())
	}
	clock.Advance(time.Minute)
	var again contract.Lease
	select {
	case again = <-leases:
	case <-time.After(10 * time.Second):
		t.Fatal("the snoozed item did not come back after its delay")
	}
	if again.Item.Attempts != 0 || again.Item.Snoozes != 1 {
		t.Fatalf("back from the snooze with attempts %d, snoozes %d; want 0 and 1", again.Item.Attempts, again.Item.Snoozes)
	}
	waitFor(t, "the item completed", func() bool { return queueEmpty(t, store) })
	if c.snoozes.Load() != 1 {
		t.Fatalf("%d snoozes; want 1", c.snoozes.Load())
	}
}

// A handler's WaitForSignal parks its item, holding no lease and no
// attempt; Signal brings it back, and the next handler finds the payload
// in lease.Item.Resumed.
func TestWaitingItemResumesWithThePayload(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	leases := make(chan contract.Lease, 2)
	r, err := runner.New(store, approvalHandler(leases), fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := store.Enqueue(ctx, item("a", "1")); err != nil {
		t.Fatal(err)
	}
	start(t, r)
	first := <-leases
	if first.Item.Resumed != nil {
		t.Fatalf("first run Resumed = %+v; want nil", first.Item.Resumed)
	}
	waitFor(t, "the item waiting", func() bool {
		info, _ := itemInfo(t, store, "a", "1")
		return info.Item.State == contract.StateWaiting
	})
	info, _ := itemInfo(t, store, "a", "1")
	if w := info.Item.Waiting; w == nil || w.Signal != "approval" || !w.Until.Equal(clock.Now().Add(time.Hour)) || info.Item.Attempts != 0 || info.Lease != nil {
		t.Fatalf("waiting item = %+v (lease %v); want it waiting an hour for approval, no attempt, no lease", info.Item, info.Lease)
	}
	if err := store.Signal(ctx, key("a", "1"), "approval", []byte("yes")); err != nil {
		t.Fatal(err)
	}
	var next contract.Lease
	select {
	case next = <-leases:
	case <-time.After(10 * time.Second):
		t.Fatal("the signal did not bring the item back")
	}
	res, ok := runner.Resumed(next, "approval")
	if !ok || res.TimedOut || string(res.Payload) != "yes" || next.Item.Attempts != 0 {
		t.Fatalf("resumed run: Resumed = %+v, %v, attempts %d; want the payload %q, no attempt", res, ok, next.Item.Attempts, "yes")
	}
	if _, ok := runner.Resumed(next, "another"); ok {
		t.Fatal("Resumed answers for a signal the item did not wait for")
	}
	waitFor(t, "the item completed", func() bool { return queueEmpty(t, store) })
}

// A wait that runs out brings the item back with Resumed.TimedOut.
func TestWaitingItemResumesAfterItsTimeout(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	leases := make(chan contract.Lease, 2)
	r, err := runner.New(store, approvalHandler(leases), fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	start(t, r)
	<-leases
	waitFor(t, "the item waiting", func() bool {
		info, _ := itemInfo(t, store, "a", "1")
		return info.Item.State == contract.StateWaiting
	})
	until := clock.Now().Add(time.Hour)
	clock.Advance(time.Hour)
	var next contract.Lease
	select {
	case next = <-leases:
	case <-time.After(10 * time.Second):
		t.Fatal("the timed-out wait did not bring the item back")
	}
	res, ok := runner.Resumed(next, "approval")
	if !ok || !res.TimedOut || res.Payload != nil || !res.At.Equal(until) {
		t.Fatalf("Resumed = %+v, %v; want timed out at %v", res, ok, until)
	}
	err = store.Signal(context.Background(), key("a", "1"), "approval", []byte("too late"))
	if !errors.Is(err, contract.ErrNotWaiting) {
		t.Fatalf("a signal after the timeout = %v; want contract.ErrNotWaiting", err)
	}
}

// approvalHandler waits an hour for the signal "approval", then
// completes; it hands every lease it gets to leases.
func approvalHandler(leases chan<- contract.Lease) runner.Handler {
	return func(ctx context.Context, l contract.Lease) error {
		leases <- l
		if _, ok := runner.Resumed(l, "approval"); ok {
			return nil
		}
		return runner.WaitForSignal("approval", time.Hour)
	}
}

// Over a queue without lifecycle controls, a snooze or a wait fails the
// item with an error that says so (a retry by the policy, one attempt).
func TestSnoozeAndWaitWithoutLifecycleControlsFail(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCounting(store) // forwards no lifecycle controls
	if _, ok := contract.AsLifecycleController(q); ok {
		t.Fatal("the wrapper has lifecycle controls")
	}
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		if l.Item.ID == "snoozes" {
			return runner.Snooze(time.Minute)
		}
		return runner.WaitForSignal("approval", time.Hour)
	}, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Enqueue(context.Background(), item("a", "snoozes"), item("a", "waits")); err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitFor(t, "both items failed", func() bool { return c.fails.Load() == 2 })
	for id, asked := range map[string]string{"snoozes": "snooze the item", "waits": `wait for signal "approval"`} {
		waitFor(t, "the failure recorded", func() bool {
			info, _ := itemInfo(t, store, "a", id)
			return info.Item.Attempts == 1
		})
		info, _ := itemInfo(t, store, "a", id)
		if !strings.Contains(info.Item.LastError, asked) || !strings.Contains(info.Item.LastError, "has no lifecycle controls") || info.Item.Snoozes != 0 {
			t.Errorf("%s: LastError %q, snoozes %d; want it failed saying the queue has no lifecycle controls", id, info.Item.LastError, info.Item.Snoozes)
		}
	}
}

// Snooze and WaitForSignal check their arguments where they are called,
// and the runner checks them again before asking the queue: a bad one
// fails the item with the typed error instead.
func TestSnoozeAndWaitArgumentsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		field string
	}{
		{"negative snooze", runner.Snooze(-time.Second), "snooze"},
		{"snooze past the bound", runner.Snooze(contract.MaxSnooze + time.Second), "snooze"},
		{"no signal", runner.WaitForSignal("", time.Hour), "WaitRequest.Signal"},
		{"no timeout", runner.WaitForSignal("approval", 0), "WaitRequest.Timeout"},
		{"timeout past the bound", runner.WaitForSignal("approval", contract.MaxWait+time.Second), "WaitRequest.Timeout"},
	} {
		ve, ok := errors.AsType[*contract.ValidationError](tc.err)
		if !ok || ve.Field != tc.field {
			t.Errorf("%s: %v; want a *contract.ValidationError on %s", tc.name, tc.err, tc.field)
		}
		if _, ok := errors.AsType[*runner.SnoozeError](tc.err); ok {
			t.Errorf("%s: still a snooze", tc.name)
		}
		if _, ok := errors.AsType[*runner.WaitError](tc.err); ok {
			t.Errorf("%s: still a wait", tc.name)
		}
	}
	if sn, ok := errors.AsType[*runner.SnoozeError](runner.Snooze(0)); !ok || sn.Delay != 0 {
		t.Errorf("Snooze(0) = %v; want a *SnoozeError for at once", sn)
	}

	clock := newClock()
	store := newStore(clock)
	c, q := wrapCountingLC(store)
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		if l.Item.ID == "snoozes" {
			return &runner.SnoozeError{Delay: -time.Second} // built by hand, unchecked
		}
		return &runner.WaitError{Signal: "approval"}
	}, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Enqueue(context.Background(), item("a", "snoozes"), item("a", "waits")); err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitFor(t, "both items failed", func() bool { return c.fails.Load() == 2 })
	if c.snoozes.Load()+c.waits.Load() != 0 {
		t.Fatalf("the queue was asked %d snoozes and %d waits with bad arguments", c.snoozes.Load(), c.waits.Load())
	}
	for id, field := range map[string]string{"snoozes": "snooze", "waits": "WaitRequest.Timeout"} {
		waitFor(t, "the failure recorded", func() bool {
			info, _ := itemInfo(t, store, "a", id)
			return info.Item.Attempts == 1
		})
		if info, _ := itemInfo(t, store, "a", id); !strings.Contains(info.Item.LastError, field) {
			t.Errorf("%s: LastError %q; want the validation error on %s", id, info.Item.LastError, field)
		}
	}
}

// A snooze found wrapped in the handler's error is still a snooze.
func TestWrappedSnoozeIsASnooze(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCountingLC(store)
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		return errors.Join(errors.New("the model is busy"), runner.Snooze(time.Second))
	}, fastConfig(clock))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitFor(t, "the item snoozed", func() bool {
		info, _ := itemInfo(t, store, "a", "1")
		return info.Item.Snoozes == 1
	})
	if c.fails.Load() != 0 {
		t.Fatalf("a wrapped snooze failed the item")
	}
}

// A claim of a paused queue is an empty claim: no error reported, nothing
// run; the resume wakes the runner, which then claims as usual.
func TestPausedQueueIsAnEmptyClaim(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCountingLC(store)
	ctx := context.Background()
	if err := store.Pause(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := store.Enqueue(ctx, item("a", "1")); err != nil {
		t.Fatal(err)
	}
	ran := make(chan string, 1)
	var errs errorLog
	cfg := fastConfig(clock)
	cfg.PollInterval = time.Hour // only the resume's wake brings the second claim
	cfg.OnError = errs.add
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		ran <- l.Item.ID
		return nil
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitFor(t, "the first claim", func() bool { return c.claims.Load() >= 1 })
	select {
	case id := <-ran:
		t.Fatalf("ran %s from a paused queue", id)
	default:
	}
	if e := errs.all(); len(e) != 0 {
		t.Fatalf("a paused queue's claim was reported as an error: %v", e)
	}
	if err := store.Resume(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the resume did not bring a claim")
	}
}

// A completion carried by a claim that finds its item cancelled is
// counted, not reported, and the claim's items run.
func TestCarriedCompleteOfACancelledItem(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	c, q := wrapCountingLC(store)
	ranThree := make(chan struct{})
	h := func(ctx context.Context, l contract.Lease) error {
		switch l.Item.ID {
		case "1":
			_, err := store.Cancel(ctx, l.Key(), "")
			return err
		case "2":
			select { // holds its slot until 3 ran on the other
			case <-ranThree:
			case <-ctx.Done():
			}
		case "3":
			close(ranThree)
		}
		return nil
	}
	var errs errorLog
	cfg := fastConfig(clock)
	cfg.Concurrency = 2
	cfg.CarryCompletes = true
	cfg.CompleteDelay = time.Hour // only claims carry completes, until the stop
	cfg.HeartbeatEvery = 10 * time.Second
	cfg.OnError = errs.add
	r, err := runner.New(q, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Enqueue(context.Background(), item("a", "1"), item("a", "2"), item("a", "3")); err != nil {
		t.Fatal(err)
	}
	s := start(t, r)
	select {
	case <-ranThree:
	case <-time.After(10 * time.Second):
		t.Fatal("the claim that carried the cancelled item's complete served nothing")
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if c.ccCancelled.Load() != 1 {
		t.Fatalf("%d CompleteAndClaim calls met the cancelled item; want 1", c.ccCancelled.Load())
	}
	if info, _ := itemInfo(t, store, "a", "1"); info.Item.State != contract.StateCancelled {
		t.Fatalf("item 1 = %+v; want cancelled", info.Item)
	}
	for _, id := range []string{"2", "3"} {
		if info, ok := itemInfo(t, store, "a", id); ok {
			t.Errorf("item %s = %+v; want it completed", id, info.Item)
		}
	}
	if e := errs.all(); len(e) != 0 {
		t.Errorf("the cancelled item's carried complete was reported: %v", e)
	}
}

// An item its handler snoozed comes back when it is due, not at the next
// poll: the runner that snoozed it knows when that is, while a delayed
// item coming due wakes no claimer. On a queue that wakes nobody (no
// Waker) and with the poll an hour away, a Snooze(0) item still runs
// again at once.
func TestSnoozedItemIsClaimedWhenDueNotAtThePoll(t *testing.T) {
	clock := newClock()
	store := newStore(clock)
	type lcQueue struct {
		contract.WorkQueue
		contract.LifecycleController
	}
	q := lcQueue{store, store}
	if _, ok := contract.AsWaker(q); ok {
		t.Fatal("the test queue should not be a Waker")
	}
	leases := make(chan contract.Lease, 2)
	cfg := fastConfig(clock)
	cfg.PollInterval = time.Hour
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		leases <- l
		if l.Item.Snoozes == 0 {
			return runner.Snooze(0)
		}
		return nil
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Enqueue(context.Background(), item("a", "1")); err != nil {
		t.Fatal(err)
	}
	start(t, r)
	<-leases
	select {
	case again := <-leases:
		if again.Item.Snoozes != 1 {
			t.Fatalf("back from the snooze with snoozes %d; want 1", again.Item.Snoozes)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the snoozed item, due at once, waited for the poll an hour away")
	}
	waitFor(t, "the item completed", func() bool { return queueEmpty(t, store) })
}
