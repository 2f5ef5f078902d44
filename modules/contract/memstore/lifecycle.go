package memstore

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// Pause stops claims of the queue, or of one tenant in it.
func (s *store) Pause(ctx context.Context, name, tenant string) error {
	return s.setPaused(ctx, name, tenant, true)
}

// Resume ends a pause and wakes the queue's claimers.
func (s *store) Resume(ctx context.Context, name, tenant string) error {
	return s.setPaused(ctx, name, tenant, false)
}

func (s *store) setPaused(ctx context.Context, name, tenant string, paused bool) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q := s.queue(name)
	if tenant == "" {
		q.paused = paused
	} else {
		tq := q.tenant(tenant)
		if tq.paused != paused {
			tq.paused = paused
			if paused {
				q.pausedTenants++
			} else {
				q.pausedTenants--
			}
		}
	}
	if !paused {
		s.wake(name, s.clock.Now())
	}
	return nil
}

// Paused reports what of the queue is paused.
func (s *store) Paused(ctx context.Context, name string) (contract.PauseState, error) {
	if err := s.lock(ctx); err != nil {
		return contract.PauseState{}, err
	}
	defer s.mu.Unlock()
	out := contract.PauseState{Queue: name, Tenants: []string{}}
	q := s.queues[name]
	if q == nil {
		return out, nil
	}
	out.Paused = q.paused
	for n, tq := range q.tenants {
		if tq.paused {
			out.Tenants = append(out.Tenants, n)
		}
	}
	slices.Sort(out.Tenants)
	return out, nil
}

// Cancel cancels one item, or marks its lease.
func (s *store) Cancel(ctx context.Context, key contract.ItemKey, reason string) (contract.ItemState, error) {
	if err := s.lock(ctx); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	e := s.item(key)
	if e == nil {
		return "", contract.ErrNotFound
	}
	was := e.item.State
	s.cancel(s.queues[key.Queue], e, reason, s.clock.Now())
	return was, nil
}

// cancel cancels e at now, or marks it when it is leased; a cancelled or
// marked item is left as it is.
func (s *store) cancel(q *queue, e *entry, reason string, now time.Time) {
	switch e.item.State {
	case contract.StateCancelled, contract.StateCompleted:
		return
	case contract.StateLeased:
		if e.item.CancelledAt.IsZero() {
			e.item.CancelledAt, e.item.CancelReason = now, reason
		}
		return
	}
	e.item.CancelledAt, e.item.CancelReason = now, reason
	s.settleCancelled(q, e, now)
}

// settleCancelled moves e, in whatever live state, to cancelled; its
// CancelledAt and CancelReason are already set.
func (s *store) settleCancelled(q *queue, e *entry, now time.Time) {
	tq := e.tq
	switch e.item.State {
	case contract.StateQueued:
		q.unplace(tq)
		tq.unqueue(e)
		q.place(tq, now)
	case contract.StateLeased:
		s.endLease(q, tq, e)
		if q.capped(tq) {
			s.wake(q.name, now)
		}
	case contract.StateWaiting:
		q.parked.Delete(e.waitSeq)
		q.timeouts.Delete(e.ready)
		tq.waiting--
		e.item.Waiting = nil
	case contract.StateDead:
		q.dead.Delete(e.deadSeq)
		tq.dead--
		e.deadSeq = 0
	}
	e.item.State = contract.StateCancelled
	e.item.FinishedAt = finishedAt(now)
	s.seq++
	e.ready = readyKey{due: e.item.CancelledAt, seq: s.seq}
	q.cancelled.Put(e.ready, e)
	q.finished.Put(e.finKey(), e)
	tq.cancelled++
	if q.recording() {
		e.claimedAt = time.Time{}
		s.record(q, e, contract.Event{Kind: contract.EventCancelled, Reason: e.item.CancelReason}, now)
	}
}

// matching calls fn on every item of the queue f selects.
func (s *store) matching(f contract.CancelFilter, fn func(*entry)) {
	var hit []*entry
	q := s.queues[f.Queue]
	if q == nil {
		return
	}
	visit := func(tq *tenantQueue) {
		for _, e := range tq.items {
			if !f.Matches(e.item) {
				continue
			}
			if e.item.State == contract.StateLeased && !e.item.CancelledAt.IsZero() {
				continue // already marked
			}
			hit = append(hit, e)
		}
	}
	if f.Tenant != "" {
		if tq := q.tenants[f.Tenant]; tq != nil {
			visit(tq)
		}
	} else {
		for _, tq := range q.tenants {
			visit(tq)
		}
	}
	for _, e := range hit {
		fn(e)
	}
}

// CancelMatching cancels (or marks) every item the filter selects.
func (s *store) CancelMatching(ctx context.Context, f contract.CancelFilter, reason string) (int, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	n := 0
	s.matching(f, func(e *entry) {
		s.cancel(s.queues[f.Queue], e, reason, now)
		n++
	})
	return n, nil
}

// CountMatching counts what CancelMatching would touch.
func (s *store) CountMatching(ctx context.Context, f contract.CancelFilter) (int, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	n := 0
	s.matching(f, func(*entry) { n++ })
	return n, nil
}

// PurgeCancelled deletes the queue's items cancelled before before.
func (s *store) PurgeCancelled(ctx context.Context, name string, before time.Time) (int, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	q := s.queues[name]
	if q == nil {
		return 0, nil
	}
	var old []*entry
	q.cancelled.Ascend(nil, func(k readyKey, e *entry) bool {
		if !k.due.Before(before) {
			return false
		}
		old = append(old, e)
		return true
	})
	for _, e := range old {
		s.drop(q, e.tq, e)
	}
	return len(old), nil
}

// held returns the entry l still holds, or the error its call gets: a
// lost lease, or a cancel asked for while it was leased (the item is then
// cancelled).
func (s *store) held(l contract.Lease, now time.Time) (*entry, error) {
	e := s.leased(l)
	if e == nil {
		return nil, &contract.LeaseLostError{Items: []contract.ItemKey{l.Key()}}
	}
	if !e.item.CancelledAt.IsZero() {
		s.settleCancelled(s.queues[e.item.Queue], e, now)
		return nil, &contract.CancelledError{Items: []contract.ItemKey{l.Key()}}
	}
	return e, nil
}

// endLease takes a live lease out of the lease index.
func (s *store) endLease(q *queue, tq *tenantQueue, e *entry) {
	q.leases.Delete(e.leaseKey())
	delete(s.live, e.token)
	tq.leased--
	e.worker, e.expires, e.token = "", time.Time{}, 0
}

// Snooze puts the item back due at now+d, charging no attempt, or
// dead-letters it when its snoozes reach the policy's cap.
func (s *store) Snooze(ctx context.Context, l contract.Lease, d time.Duration) (policy.Decision, error) {
	if err := s.lock(ctx); err != nil {
		return policy.Decision{}, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	e, err := s.held(l, now)
	if err != nil {
		return policy.Decision{}, err
	}
	q := s.queues[e.item.Queue]
	tq := e.tq
	dec := s.policy.DecideSnooze(e.item.Snoozes, d, now)
	worker := e.worker
	s.endLease(q, tq, e)
	if dec.Retry {
		e.item.Snoozes++
		e.item.NotBefore = dec.At
		s.push(q, tq, e, s.dueAt(dec.At, now), now)
		if q.recording() {
			s.record(q, e, contract.Event{Kind: contract.EventSnoozed, Worker: worker, NextDue: dec.At}, now)
		}
	} else {
		e.item.LastError = contract.SnoozeLimitText(e.item.Snoozes)
		s.bury(q, tq, e, now)
		if q.recording() {
			s.record(q, e, contract.Event{Kind: contract.EventDead, Worker: worker, Attempt: e.item.Attempts + 1, Error: e.item.LastError}, now)
		}
	}
	if dec.Retry && !dec.At.After(now) || q.capped(tq) {
		s.wake(q.name, now)
	}
	return dec, nil
}

// bury puts an item that is out of any tree into the dead letter.
func (s *store) bury(q *queue, tq *tenantQueue, e *entry, now time.Time) {
	s.seq++
	e.deadSeq = s.seq
	e.item.State = contract.StateDead
	e.item.DeadAt = now
	q.dead.Put(e.deadSeq, e)
	tq.dead++
}

// Wait parks the item until a signal or its timeout.
func (s *store) Wait(ctx context.Context, l contract.Lease, w contract.WaitRequest) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	e, err := s.held(l, now)
	if err != nil {
		return err
	}
	q := s.queues[e.item.Queue]
	tq := e.tq
	worker := e.worker
	s.endLease(q, tq, e)
	e.item.State = contract.StateWaiting
	e.item.Waiting = &contract.WaitInfo{Signal: w.Signal, Since: now, Until: now.Add(w.Timeout)}
	s.seq++
	e.waitSeq = s.seq
	e.ready = readyKey{due: e.item.Waiting.Until, seq: s.seq}
	q.parked.Put(e.waitSeq, e)
	q.timeouts.Put(e.ready, e)
	tq.waiting++
	if q.recording() {
		s.record(q, e, contract.Event{Kind: contract.EventWaiting, Worker: worker, Signal: w.Signal, NextDue: e.item.Waiting.Until}, now)
	}
	if q.capped(tq) {
		s.wake(q.name, now)
	}
	return nil
}

// resume ends e's wait as r says and queues it, due at due.
func (s *store) resume(q *queue, e *entry, r contract.Resume, due, now time.Time) {
	tq := e.tq
	q.parked.Delete(e.waitSeq)
	q.timeouts.Delete(e.ready)
	tq.waiting--
	e.waitSeq = 0
	e.item.Waiting = nil
	e.item.Resumed = &r
	e.item.NotBefore = time.Time{}
	s.push(q, tq, e, due, now)
}

// endWaits queues the waits of q that timed out by now, due when they
// timed out.
func (s *store) endWaits(q *queue, now time.Time) {
	for {
		k, e, ok := q.timeouts.Min()
		if !ok || k.due.After(now) {
			return
		}
		w := e.item.Waiting
		s.resume(q, e, contract.Resume{Signal: w.Signal, TimedOut: true, At: w.Until}, w.Until, now)
		if q.recording() {
			s.record(q, e, contract.Event{Kind: contract.EventTimedOut, Signal: w.Signal}, now)
		}
	}
}

// Signal resumes the item if it waits for signal.
func (s *store) Signal(ctx context.Context, key contract.ItemKey, signal string, payload []byte) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	e := s.item(key)
	if e == nil {
		return contract.ErrNotFound
	}
	now := s.clock.Now()
	q := s.queues[key.Queue]
	s.endWaits(q, now)
	if e.item.State != contract.StateWaiting || e.item.Waiting.Signal != signal {
		nw := &contract.NotWaitingError{Key: key, Signal: signal, State: e.item.State}
		if e.item.Waiting != nil {
			nw.Waiting = e.item.Waiting.Signal
		}
		return nw
	}
	s.resume(q, e, contract.Resume{Signal: signal, Payload: bytes.Clone(payload), At: now}, now, now)
	if q.recording() {
		s.record(q, e, contract.Event{Kind: contract.EventSignalled, Signal: signal}, now)
	}
	s.wake(q.name, now)
	return nil
}

// Waiting pages through the queue's waiting items, longest waiting first.
func (s *store) Waiting(ctx context.Context, name string, page contract.PageRequest) (contract.ItemPage, error) {
	at, err := parseSeqCursor(page.Cursor)
	if err != nil {
		return contract.ItemPage{}, err
	}
	if err := s.lock(ctx); err != nil {
		return contract.ItemPage{}, err
	}
	defer s.mu.Unlock()
	out := contract.ItemPage{Items: []contract.Item{}}
	q := s.queues[name]
	if q == nil {
		return out, nil
	}
	var last int64
	q.parked.Ascend(at, func(seq int64, e *entry) bool {
		if len(out.Items) == page.Limit {
			out.Next = seqCursor(last)
			return false
		}
		out.Items = append(out.Items, copyItem(e.item))
		last = seq
		return true
	})
	return out, nil
}
