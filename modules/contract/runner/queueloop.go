package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/backoff"
)

// queueLoop claims the items of one queue and runs them on that queue's
// slots.
type queueLoop struct {
	rn      *run
	name    string
	conc    int
	batch   int
	handler Handler
	log     *slog.Logger

	// free counts the slots neither running a handler nor holding an item
	// handed to them. The claim loop takes slots, the slot goroutines
	// give them back; when the claim loop waits for free to reach need,
	// the slot that gets it there signals freed. Signalling only then,
	// not per returning handler, is what keeps the claim loop asleep
	// while a batch runs.
	free  atomic.Int64
	need  atomic.Int64
	freed chan struct{} // capacity 1

	jobs chan contract.Lease // claimed leases for the slot goroutines
	// Slot goroutines run the handlers, one item at a time, for the whole
	// Run; they are started as the number of running items first needs
	// them (never more than the queue's concurrency). A goroutine per
	// item would start each handler on a fresh stack and grow it, item
	// after item.
	slots   sync.WaitGroup
	started int // slot goroutines started; touched by the claim goroutine only
	// report is what the last claim saw of flow control; touched by the
	// claim goroutine only.
	report contract.ClaimReport
	// snoozed is signalled when an item this loop snoozed is due again
	// (capacity 1): the claim loop then claims at once instead of at its
	// next poll, since a delayed item coming due wakes no claimer.
	snoozed chan struct{}
	// gatherMax bounds gather's wait: maxGather, longer only in tests
	// that must not depend on the scheduler.
	gatherMax time.Duration
}

func newQueueLoop(rn *run, spec queueSpec) *queueLoop {
	l := &queueLoop{
		rn: rn, name: spec.Name, conc: spec.Concurrency, batch: spec.BatchSize, handler: spec.handler,
		log:       rn.log.With("queue", spec.Name),
		freed:     make(chan struct{}, 1),
		snoozed:   make(chan struct{}, 1),
		jobs:      make(chan contract.Lease, spec.Concurrency),
		gatherMax: maxGather,
	}
	l.free.Store(int64(spec.Concurrency))
	return l
}

// release gives a slot back, signalling the claim loop when that makes
// as many free as it waits for.
func (l *queueLoop) release() {
	n := l.free.Add(1)
	if w := l.need.Load(); w > 0 && n >= w {
		select {
		case l.freed <- struct{}{}:
		default:
		}
	}
}

// await arms the freed signal for n free slots and reports whether they
// are free already (then disarmed). The claim loop stores need before it
// reads free and a slot adds to free before it reads need, so at least
// one of them sees the other's write: no release is missed.
func (l *queueLoop) await(n int64) bool {
	l.need.Store(n)
	if l.free.Load() >= n {
		l.need.Store(0)
		return true
	}
	return false
}

// claim claims up to n items, carrying the pending completes along when
// the queue can take both at once.
func (l *queueLoop) claim(ctx context.Context, n int) ([]contract.Lease, error) {
	rn := l.rn
	req := contract.ClaimRequest{Queue: l.name, Worker: rn.cfg.Worker, LeaseFor: rn.cfg.LeaseFor, Max: n}
	l.report = contract.ClaimReport{}
	ctx = contract.WithClaimReport(ctx, &l.report)
	var done []contract.Lease
	if rn.cc != nil {
		done = rn.done.take()
	}
	if len(done) == 0 {
		return rn.r.q.Claim(ctx, req)
	}
	defer rn.done.recycle(done) // the call keeps no slice, nor does settle below
	leases, err := rn.cc.CompleteAndClaim(ctx, done, req)
	if rn.done.notCompleted(err, len(done), false) {
		// The other completes landed and the claim went ahead; only the
		// lost items will run again (the cancelled stay cancelled).
		return leases, nil
	}
	if err != nil && !errors.Is(err, contract.ErrEmpty) {
		// Whether the completes landed is unknown (a cancelled claim
		// included): settle them the ordinary way, with its retries, so
		// no finished item is left to expire for want of trying. Those
		// that had landed come back lost; that is expected, not reported.
		rn.done.settle(done, true)
	}
	return leases, err
}

// claimLoop claims and starts handlers until ctx is cancelled.
func (l *queueLoop) claimLoop(ctx context.Context, wake <-chan struct{}) {
	cfg := l.rn.cfg
	poll := time.NewTicker(cfg.PollInterval)
	defer poll.Stop()
	// retry fires after a claim failed with a retryable error: a dropped
	// connection or a busy pool should cost milliseconds, not a poll.
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	gathering := time.NewTimer(time.Hour)
	gathering.Stop()
	defer gathering.Stop()
	var retryC <-chan time.Time
	// held fires when a tenant that a rate or budget held back is due to
	// be served again, when that is sooner than the next poll.
	held := time.NewTimer(time.Hour)
	held.Stop()
	defer held.Stop()
	var heldC <-chan time.Time
	failures := 0 // claims failed in a row with a retryable error
	more := true  // work may be waiting
	var lastClaim time.Duration
	for ctx.Err() == nil {
		if more && l.free.Load() > 0 {
			retry.Stop()
			retryC = nil
			l.gather(ctx, gathering, lastClaim)
			n := min(l.batch, int(l.free.Load()))
			began := time.Now()
			leases, err := l.claim(ctx, n)
			if err == nil {
				lastClaim = time.Since(began)
			}
			// Leases that come with an error (a claim-check wrapper
			// reporting one broken item) are still ours to run.
			l.start(leases)
			switch {
			case err == nil:
				more, failures = len(leases) == n, 0
			case errors.Is(err, contract.ErrEmpty), ctx.Err() != nil:
				more, failures = false, 0
			default:
				more = false
				l.rn.report(err, "claim returned an error", "queue", l.name, "claimed", len(leases))
				if contract.Retryable(err) {
					retry.Reset(claimBackoff(failures, cfg.PollInterval))
					retryC = retry.C
					failures++
				} // otherwise the next poll or wake tries again
			}
			if at := l.report.RetryAt; !more && !at.IsZero() && ctx.Err() == nil {
				// A limit held a tenant with due work back: claim again
				// when it lets go, if that comes before the poll.
				if d := at.Sub(cfg.Clock.Now()); d < cfg.PollInterval {
					held.Reset(max(d, time.Millisecond))
					heldC = held.C
				}
			}
			if more && l.free.Load() > 0 {
				continue
			}
		}
		var freed <-chan struct{}
		if more { // every slot is taken: wait for one
			if l.await(1) {
				continue
			}
			freed = l.freed
		}
		select {
		case <-ctx.Done():
		case <-freed:
		case <-wake:
			more = true
		case <-poll.C:
			more = true
		case <-retryC:
			retryC = nil
			more = true
		case <-heldC:
			heldC = nil
			more = true
		case <-l.snoozed:
			more = true
		}
		l.need.Store(0)
	}
}

// wakeAt has the claim loop claim at at, when an item this loop snoozed
// is due again, if that comes before the next poll would; a later item
// is the poll's, like any other delayed item.
func (l *queueLoop) wakeAt(at time.Time) {
	d := at.Sub(l.rn.cfg.Clock.Now())
	if d >= l.rn.cfg.PollInterval {
		return
	}
	time.AfterFunc(max(d, time.Millisecond), func() {
		select {
		case l.snoozed <- struct{}{}:
		default: // a wake is pending already
		}
	})
}

// Claim retries after a retryable error start at firstClaimRetry and
// double with each failure in a row, up to the poll interval.
const firstClaimRetry = 10 * time.Millisecond

// claimBackoff is how long to wait before retrying a claim after failures
// earlier failures in a row: firstClaimRetry doubled that many times,
// capped at limit, then drawn from its upper half so that workers cut off
// together do not come back in step.
func claimBackoff(failures int, limit time.Duration) time.Duration {
	return backoff.Backoff{Base: firstClaimRetry, Max: limit, Jitter: backoff.EqualJitter}.Delay(failures)
}

// maxGather bounds gather's wait.
const maxGather = 2 * time.Millisecond

// gather waits, before a claim, for more running handlers to return when
// fewer slots are free than one claim could fill: at most window (the
// last claim's duration, capped at maxGather), since one claim more costs
// about that much. Handlers that return within moments of each other then
// share a claim; without the wait, fast handlers split into cohorts that
// take turns claiming half a batch each, for good (measured: 5 items per
// claim at concurrency 10, half the throughput). A slow handler's slot
// waits at most window longer for its next item.
func (l *queueLoop) gather(ctx context.Context, t *time.Timer, window time.Duration) {
	want := int64(min(l.batch, l.conc))
	if free := l.free.Load(); window <= 0 || free == int64(l.conc) || free >= want {
		return
	}
	t.Reset(min(window, l.gatherMax))
	defer t.Stop()
	defer l.need.Store(0)
	for !l.await(want) {
		select {
		case <-l.freed:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// start hands claimed leases to the slot goroutines, starting more when
// every one started may be busy: there are never fewer of them than items
// running or waiting, so no item waits for a slot.
func (l *queueLoop) start(leases []contract.Lease) {
	if len(leases) == 0 {
		return
	}
	busy := l.conc - int(l.free.Add(-int64(len(leases))))
	for l.started < busy {
		l.started++
		l.slots.Go(l.work)
	}
	for _, lease := range leases {
		l.jobs <- lease // never blocks: at most conc are running or waiting
	}
}

// work runs the handlers of the leases it is given, one at a time, until
// jobs is closed.
func (l *queueLoop) work() {
	s := l.rn.beats.newSlot()
	for lease := range l.jobs {
		l.process(s, lease)
		l.release()
	}
}

// process runs the handler on one lease, heartbeating meanwhile, and
// settles the outcome.
func (l *queueLoop) process(s *beatSlot, lease contract.Lease) {
	h := newHandling(l.rn.handlerCtx, l.rn.r.q, lease)
	defer h.end(nil)
	l.rn.beats.watch(s, lease, h)

	err := l.call(h, lease)

	// Stop heartbeating before reading the lease, so the settle presents
	// the last token a heartbeat obtained.
	current, gone := l.rn.beats.unwatch(s)
	if err == nil && gone == nil {
		l.rn.done.add(current)
		return
	}
	if gone != nil {
		l.lost(lease, gone, err)
		return
	}
	// The context's cause is read now, while the handler's context is
	// still its own (it ends when process returns).
	cause := h.causeNow()
	if l.rn.settleAside(func() { l.unsuccessful(h, lease, current, cause, err) }) {
		// Written apart, as a complete is: the slot takes its next item
		// meanwhile instead of waiting for the round trip.
		return
	}
	l.unsuccessful(h, lease, current, cause, err)
}

// itemLog is the queue's logger with the fields of lease's item, built
// off the path of items that succeed.
func (l *queueLoop) itemLog(lease contract.Lease) *slog.Logger {
	return l.log.With("tenant", lease.Item.Tenant, "id", lease.Item.ID, "attempts", lease.Item.Attempts)
}

// lost logs an item whose lease was lost or cancelled while its handler
// ran: nothing is written for it.
func (l *queueLoop) lost(lease contract.Lease, gone, err error) {
	log := l.itemLog(lease)
	if _, ok := gone.(*contract.CancelledError); ok {
		log.Info("item cancelled while the handler ran; nothing more is written for it", "handler_err", err)
		return
	}
	log.Warn("lease lost while the handler ran; the item is someone else's now", "handler_err", err)
}

// unsuccessful settles an item whose handler failed, snoozed or waits;
// cause is its context's cause when the handler returned. The log fields
// are built here, off the path of items that succeed.
func (l *queueLoop) unsuccessful(h *handling, lease, current contract.Lease, cause, err error) {
	rn := l.rn
	log := l.itemLog(lease)
	sctx, scancel := context.WithTimeout(rn.detached, rn.cfg.SettleTimeout)
	defer scancel()
	// A snooze or a wait says what to do with the item, whatever else
	// happened meanwhile (a shutdown's grace running out included).
	what, serr := "fail", error(nil)
	if sn, ok := errors.AsType[*SnoozeError](err); ok {
		what, serr = "snooze", l.snooze(sctx, cause, log, current, sn)
	} else if w, ok := errors.AsType[*WaitError](err); ok {
		what, serr = "wait", l.wait(sctx, cause, log, current, w)
	} else {
		serr = l.fail(sctx, cause, log, current, err)
	}
	switch c, ok := errors.AsType[*contract.CancelledError](serr); {
	case ok:
		// Cancelled since the last heartbeat: the queue wrote nothing
		// the settle asked for, and the item is cancelled now.
		h.end(c)
		log.Info("item cancelled while the handler ran; nothing more is written for it", "handler_err", err)
	case serr != nil:
		rn.report(serr, what+" failed; the lease will expire and be reaped", "queue", l.name, "tenant", lease.Item.Tenant, "id", lease.Item.ID)
	}
}

// fail fails the item with the handler's error, joined with cause (its
// context's cause when the handler returned) unless it holds it already.
func (l *queueLoop) fail(sctx context.Context, cause error, log *slog.Logger, current contract.Lease, err error) error {
	if cause != nil && !errors.Is(err, cause) {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		log.Error("handler panicked", "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}
	dec, ferr := l.rn.r.q.Fail(sctx, current, err)
	if ferr != nil {
		return ferr
	}
	log.Info("handler failed", "handler_err", err, "retry", dec.Retry, "at", dec.At, "reason", dec.Reason)
	return nil
}

// call runs the handler, turning a panic into a *PanicError.
func (l *queueLoop) call(ctx context.Context, lease contract.Lease) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return l.handler(ctx, lease)
}
