package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// heartbeats keep the leases of every running item of a Run, whatever its
// queue, extending each every HeartbeatEvery until its handler returns.
// They go on after a handler's context is cancelled: a handler that is
// slow to return still holds its item, and letting the lease lapse would
// hand the item to another worker while this one runs. They stop when a
// beat finds the lease lost or the item cancelled (then the next beat
// after a cancel is what cancels the handler's context, within one
// HeartbeatEvery).
//
// One timer serves them all, set for the earliest beat due; a slot
// records its item in its own beatSlot, so an item whose handler returns
// before its first beat costs two short critical sections and no timer
// (a timer per item was a twentieth of the runner's time with no-op
// handlers). Each beat runs in a goroutine of its own, so a slow
// Heartbeat call delays no other item's.
type heartbeats struct {
	rn    *run
	every time.Duration
	base  time.Time // beat times are offsets from it, read from the monotonic clock
	// slack lets a scan take beats due a little later too, so items that
	// started together share the timer's firing.
	slack time.Duration

	mu     sync.Mutex
	slots  []*beatSlot
	timer  *time.Timer
	armed  bool // timer set for a pending scan
	closed bool
	// isArmed mirrors armed for watch's check without the lock; a scan
	// clears it before it reads the slots (see watch).
	isArmed atomic.Bool
}

// beatSlot is one slot goroutine's running item, as the heartbeats see
// it.
type beatSlot struct {
	mu     sync.Mutex
	active bool // a handler is running on lease
	lease  contract.Lease
	// gone is why the lease is no longer this worker's, nil while it
	// holds it: the *contract.LeaseLostError or *contract.CancelledError
	// a heartbeat got.
	gone error
	// h is the handler's context: cancelled when the lease is gone, and
	// its token (what Fence reads) moved on with every heartbeat.
	h       *handling
	due     time.Duration // the next beat, from heartbeats.base
	beating bool
	beat    sync.WaitGroup // a beat in progress
}

func newHeartbeats(rn *run) *heartbeats {
	h := &heartbeats{rn: rn, every: rn.cfg.HeartbeatEvery, base: time.Now(), slack: rn.cfg.HeartbeatEvery / 8}
	h.timer = time.AfterFunc(time.Hour, h.scan)
	h.timer.Stop()
	return h
}

func (h *heartbeats) now() time.Duration { return time.Since(h.base) }

// newSlot registers a slot goroutine; it keeps its beatSlot for the Run.
func (h *heartbeats) newSlot() *beatSlot {
	s := &beatSlot{}
	h.mu.Lock()
	h.slots = append(h.slots, s)
	h.mu.Unlock()
	return s
}

// watch starts heartbeating lease, whose handler's context is hc; each
// new token a beat obtains is stored in hc's token.
func (h *heartbeats) watch(s *beatSlot, lease contract.Lease, hc *handling) {
	due := h.now() + h.every
	s.mu.Lock()
	s.active, s.lease, s.gone, s.h, s.due = true, lease, nil, hc, due
	s.mu.Unlock()
	// A scan clears isArmed before it reads the slots: either it sees
	// this item, or this load sees the cleared flag and arms the timer.
	if !h.isArmed.Load() {
		h.arm(due)
	}
}

// unwatch stops heartbeating the slot's item, waits for a beat in
// progress and returns the last lease the beats obtained and, when a beat
// found it lost or cancelled, the error that said so.
func (h *heartbeats) unwatch(s *beatSlot) (contract.Lease, error) {
	s.mu.Lock()
	s.active = false
	s.mu.Unlock()
	s.beat.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h = nil
	return s.lease, s.gone
}

// arm sets the timer for a scan at due unless one is pending already (a
// pending scan is never later than a new item's first beat).
func (h *heartbeats) arm(due time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.armed || h.closed {
		return
	}
	h.armed = true
	h.isArmed.Store(true)
	h.timer.Reset(max(due-h.now(), 0))
}

// scan starts the beats that are due and sets the timer for the next one.
func (h *heartbeats) scan() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.armed = false
	h.isArmed.Store(false)
	now := h.now()
	next := time.Duration(-1)
	for _, s := range h.slots {
		s.mu.Lock()
		switch {
		case !s.active || s.gone != nil || s.beating:
			// Nothing to do; a beat in progress arms the timer for its
			// item's next beat when it is done.
		case s.due <= now+h.slack:
			s.beating = true
			s.beat.Add(1)
			go h.extend(s)
		case next < 0 || s.due < next:
			next = s.due
		}
		s.mu.Unlock()
	}
	if next >= 0 {
		h.armed = true
		h.isArmed.Store(true)
		h.timer.Reset(max(next-now, 0))
	}
}

// extend heartbeats the slot's lease once.
func (h *heartbeats) extend(s *beatSlot) {
	defer s.beat.Done()
	rn := h.rn
	s.mu.Lock()
	cur, hc := s.lease, s.h
	s.mu.Unlock()
	ctx, c := context.WithTimeout(rn.detached, rn.cfg.SettleTimeout)
	next, err := rn.r.q.Heartbeat(ctx, cur, rn.cfg.LeaseFor)
	c()
	gone := leaseGone(err)
	s.mu.Lock()
	s.beating = false
	switch {
	case err == nil:
		s.lease = next
		hc.token.Store(next.Token)
	case gone != nil:
		s.gone = gone
	}
	s.due = h.now() + h.every
	goOn := s.active && s.gone == nil
	due := s.due
	s.mu.Unlock()
	switch {
	case gone != nil:
		// A cancelled item is the queue's to close: the handler stops,
		// and nothing more is written for its lease.
		hc.end(gone)
	case err != nil:
		rn.report(err, "heartbeat failed", "queue", cur.Item.Queue, "tenant", cur.Item.Tenant, "id", cur.Item.ID)
		// Past its expiry the lease may be reaped and given to another
		// worker at any moment; stop the handler rather than run twice.
		if !rn.cfg.Clock.Now().Before(cur.ExpiresAt) {
			hc.end(fmt.Errorf("runner: lease expired at %v after heartbeats failed: %w", cur.ExpiresAt, contract.ErrLeaseExpired))
		}
	}
	if goOn {
		h.arm(due)
	}
}

// leaseGone returns the error in err that says the lease is no longer
// the worker's, a *contract.CancelledError (the item was cancelled) ahead
// of a *contract.LeaseLostError, or nil when err says neither.
func leaseGone(err error) error {
	if err == nil {
		return nil
	}
	if c, ok := errors.AsType[*contract.CancelledError](err); ok {
		return c
	}
	if l, ok := errors.AsType[*contract.LeaseLostError](err); ok {
		return l
	}
	return nil
}

// close stops the timer; every slot has unwatched its item by then, so no
// beat is in progress.
func (h *heartbeats) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	h.timer.Stop()
}
