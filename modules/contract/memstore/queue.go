package memstore

import (
	"context"
	"errors"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// Enqueue adds the items, all or none. An item whose ID is queued, leased
// or dead in its queue is left as it is, as is a repeat within the batch.
func (s *store) Enqueue(ctx context.Context, items ...contract.Item) error {
	return s.enqueue(ctx, items, nil)
}

// enqueue is Enqueue, reporting each item's outcome in report when it is
// not nil. A completed item is replaced unless its uniqueness window is
// open.
func (s *store) enqueue(ctx context.Context, items []contract.Item, report []contract.EnqueueResult) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	woken := make(map[string]bool)
	for i, it := range items {
		k := it.Key()
		q := s.queue(k.Queue)
		tq := q.tenant(k.Tenant)
		if old, there := tq.items[k.ID]; there {
			if old.item.State != contract.StateCompleted || old.windowOpen(now) {
				if report != nil {
					report[i] = contract.EnqueueResult{Duplicate: true, State: old.item.State}
					if old.item.State == contract.StateCompleted {
						report[i].UniqueUntil = old.item.FinishedAt.Add(old.item.UniqueFor)
					}
				}
				continue
			}
			s.drop(q, tq, old) // a new life for the ID
		}
		it = copyItem(it)
		it.Queue = k.Queue
		it.Attempts = 0
		it.LastError = ""
		it.DeadAt = time.Time{}
		it.EnqueuedAt = now
		e := &entry{item: it, tq: tq}
		tq.items[k.ID] = e
		q.items++
		q.indexID(e)
		s.push(q, tq, e, s.dueAt(it.NotBefore, now), now)
		if q.recording() {
			s.record(q, e, contract.Event{Kind: contract.EventEnqueued, NextDue: it.NotBefore}, now)
		}
		woken[k.Queue] = true
	}
	for name := range woken {
		s.wake(name, now)
	}
	return nil
}

// dueAt is when an item with notBefore is due: never before now, so items
// due at once are served in enqueue order.
func (s *store) dueAt(notBefore, now time.Time) time.Time {
	return maxTime(notBefore, now)
}

// Claim leases up to req.Max due items, one per tenant per turn, tenants
// in rotation order, round after round; contract.ErrEmpty when none is due.
func (s *store) Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	q := s.queues[req.Queue]
	if q == nil {
		return nil, contract.ErrEmpty
	}
	now := s.clock.Now()
	if q.paused {
		if r := contract.ClaimReportFrom(ctx); r != nil {
			r.QueuePaused = true
		}
		return nil, contract.ErrEmpty
	}
	s.endWaits(q, now)
	s.warmed += q.warm(req.Max)
	var out []contract.Lease
	var held heldPass
	gated := q.limited || q.pausedTenants > 0
	if gated {
		held.report = contract.ClaimReportFrom(ctx)
	}
	for len(out) < req.Max {
		var tq *tenantQueue
		if gated {
			tq = q.nextAllowed(now, &held)
		} else {
			tq = q.next(now)
		}
		if tq == nil {
			break
		}
		tq.promote(now)
		k, e, _ := tq.ready.Min()
		tq.ready.Delete(k)
		q.unplace(tq)
		if q.served(tq, now) {
			q.turn++
			tq.stamp = q.turn
		}
		q.place(tq, now)
		tq.served++
		tq.leased++

		e.item.State = contract.StateLeased
		e.token = s.newToken(e)
		e.worker = req.Worker
		e.expires = now.Add(req.LeaseFor)
		q.leases.Put(e.leaseKey(), e)
		s.live[e.token] = e
		q.remember(contract.Turn{Tenant: tq.name, ID: e.item.ID, Worker: req.Worker, At: now}, s.recentTurns)
		if q.recording() {
			e.claimedAt = now
			s.record(q, e, contract.Event{Kind: contract.EventClaimed, Worker: req.Worker, Attempt: e.item.Attempts + 1, Token: e.token}, now)
		}
		if out == nil {
			// One allocation for the batch: leases are large, and growing
			// the slice item by item copied each one up to four times.
			out = make([]contract.Lease, 0, min(req.Max, q.items))
		}
		out = append(out, e.lease())
	}
	if len(out) == 0 {
		return nil, contract.ErrEmpty
	}
	return out, nil
}

func (s *store) newToken(e *entry) int64 {
	s.tokens++
	return s.tokens
}

// lease returns the caller's copy of a leased entry.
func (e *entry) lease() contract.Lease {
	return contract.Lease{Item: copyItem(e.item), Worker: e.worker, ExpiresAt: e.expires, Token: e.token}
}

// leased returns the entry l still holds, or nil when its token no longer
// matches. Tokens are unique store-wide, so the token finds the entry
// among the live leases; the key must be l's too (a lease made up with
// another item's token holds nothing).
func (s *store) leased(l contract.Lease) *entry {
	e := s.live[l.Token]
	if e == nil || e.item.State != contract.StateLeased {
		return nil
	}
	if e.item.ID != l.Item.ID || e.item.Tenant != l.Item.Tenant || e.item.Queue != contract.QueueName(l.Item.Queue) {
		return nil
	}
	return e
}

// Heartbeat extends a live lease to now+extend under a new token.
func (s *store) Heartbeat(ctx context.Context, l contract.Lease, extend time.Duration) (contract.Lease, error) {
	if err := s.lock(ctx); err != nil {
		return contract.Lease{}, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	if e := s.leased(l); e == nil || !e.expires.After(now) {
		return contract.Lease{}, &contract.LeaseLostError{Items: []contract.ItemKey{l.Key()}}
	}
	e, err := s.held(l, now)
	if err != nil {
		return contract.Lease{}, err
	}
	q := s.queues[e.item.Queue]
	q.leases.Delete(e.leaseKey())
	delete(s.live, e.token)
	e.token = s.newToken(e)
	e.expires = now.Add(extend)
	q.leases.Put(e.leaseKey(), e)
	s.live[e.token] = e
	if q.recording() {
		e.history().heartbeats++
	}
	return e.lease(), nil
}

// CompleteAndClaim is Complete then Claim. There is no round trip to
// save in memory; it exists so that loops written for backings that can
// do both at once run unchanged on a Store. A lost lease in done does not
// stop the claim: the leases claimed come back with the
// *contract.LeaseLostError. A req.Max of 0 only completes.
func (s *store) CompleteAndClaim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest) ([]contract.Lease, error) {
	if req.Max == 0 {
		return nil, s.Complete(ctx, done...)
	}
	var lost error
	if len(done) > 0 {
		err := s.Complete(ctx, done...)
		var lle *contract.LeaseLostError
		if err != nil && !errors.As(err, &lle) && !errors.Is(err, contract.ErrCancelled) {
			return nil, err
		}
		lost = err
	}
	out, err := s.Claim(ctx, req)
	switch {
	case lost != nil && (err == nil || errors.Is(err, contract.ErrEmpty)):
		return out, lost
	case err != nil:
		return nil, err
	}
	return out, nil
}

// Complete removes the items of the leases whose tokens still match; the
// others are named in a *contract.LeaseLostError.
func (s *store) Complete(ctx context.Context, leases ...contract.Lease) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	var lost, cancelled []contract.ItemKey
	now := s.clock.Now()
	for _, l := range leases {
		e := s.leased(l)
		if e == nil {
			lost = append(lost, l.Key())
			continue
		}
		q := s.queues[e.item.Queue]
		tq := e.tq
		if !e.item.CancelledAt.IsZero() {
			s.settleCancelled(q, e, now)
			cancelled = append(cancelled, l.Key())
			continue
		}
		if q.keeping || e.item.UniqueFor > 0 {
			s.finish(q, tq, e, now)
		} else {
			s.drop(q, tq, e)
		}
		if q.capped(tq) {
			s.wake(q.name, now)
		}
	}
	return contract.SettleError(lost, cancelled)
}

// drop forgets an item in whatever state it is.
func (s *store) drop(q *queue, tq *tenantQueue, e *entry) {
	switch e.item.State {
	case contract.StateQueued:
		q.unplace(tq)
		tq.unqueue(e)
		q.place(tq, s.clock.Now())
	case contract.StateWaiting:
		q.parked.Delete(e.waitSeq)
		q.timeouts.Delete(e.ready)
		tq.waiting--
	case contract.StateCancelled:
		q.cancelled.Delete(e.ready)
		q.finished.Delete(e.finKey())
		tq.cancelled--
	case contract.StateCompleted:
		q.finished.Delete(e.finKey())
	case contract.StateLeased:
		q.leases.Delete(e.leaseKey())
		delete(s.live, e.token)
		tq.leased--
	case contract.StateDead:
		q.dead.Delete(e.deadSeq)
		tq.dead--
	}
	delete(tq.items, e.item.ID)
	q.unindexID(e)
	q.items--
}

// Fail records cause against the lease and retries or dead-letters the
// item as the policy decides.
func (s *store) Fail(ctx context.Context, l contract.Lease, cause error) (policy.Decision, error) {
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
	d := s.settleFailed(q, e, cause, now)
	if d.Retry || q.capped(e.tq) {
		s.wake(e.item.Queue, now)
	}
	return d, nil
}

// settleFailed ends a lease that failed with cause: back to the queue or
// to the dead letter, as the policy decides.
func (s *store) settleFailed(q *queue, e *entry, cause error, now time.Time) policy.Decision {
	tq := e.tq
	worker := e.worker
	if cause == contract.ErrLeaseExpired {
		worker = ""
	}
	s.endLease(q, tq, e)
	e.item.Attempts++
	e.item.LastError = contract.ErrorText(cause)
	d := s.policy.Decide(e.item.Attempts, cause, now)
	if d.Retry {
		e.item.NotBefore = d.At
		s.push(q, tq, e, s.dueAt(d.At, now), now)
		if q.recording() {
			s.record(q, e, contract.Event{Kind: contract.EventFailed, Worker: worker, Attempt: e.item.Attempts, Error: e.item.LastError, NextDue: d.At}, now)
		}
		return d
	}
	s.bury(q, tq, e, now)
	if q.recording() {
		s.record(q, e, contract.Event{Kind: contract.EventDead, Worker: worker, Attempt: e.item.Attempts, Error: e.item.LastError}, now)
	}
	return d
}

// Reap hands every lease of the queue that has expired by now to the
// policy, as a failure with contract.ErrLeaseExpired.
func (s *store) Reap(ctx context.Context, name string) (int, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	q := s.queues[name]
	if q == nil {
		return 0, nil
	}
	now := s.clock.Now()
	var expired []*entry
	q.leases.Ascend(nil, func(k leaseKey, e *entry) bool {
		if k.expires.After(now) {
			return false
		}
		expired = append(expired, e)
		return true
	})
	retried := false
	for _, e := range expired {
		if !e.item.CancelledAt.IsZero() {
			s.settleCancelled(q, e, now)
			continue
		}
		if s.settleFailed(q, e, contract.ErrLeaseExpired, now).Retry || q.capped(e.tq) {
			retried = true
		}
	}
	if retried {
		s.wake(name, now)
	}
	return len(expired), nil
}

// deadMatching calls fn on the queue's dead letters that match f, until
// fn returns false: oldest first from the place after the cursor, or
// newest first from the place at or before it (a cursor is the gap just
// after the letter of that dead seq, so one position serves both ways).
func (s *store) deadMatching(f contract.DeadLetterFilter, newest bool, at *int64, fn func(*entry) bool) {
	q := s.queues[f.Queue]
	if q == nil {
		return
	}
	inRange := func(seq int64) bool {
		switch {
		case at == nil:
			return true
		case newest:
			return seq <= *at
		default:
			return seq > *at
		}
	}
	if f.Tenant != "" && f.ID != "" {
		// At most one item can match: look it up instead of scanning.
		e := s.item(contract.ItemKey{Tenant: f.Tenant, Queue: q.name, ID: f.ID})
		if e != nil && e.item.State == contract.StateDead && inRange(e.deadSeq) && f.Matches(e.item) {
			fn(e)
		}
		return
	}
	visit := func(_ int64, e *entry) bool {
		if !f.Matches(e.item) {
			return true
		}
		return fn(e)
	}
	if newest {
		q.dead.Descend(at, visit)
	} else {
		q.dead.Ascend(at, visit)
	}
}

// DeadLetters pages through the queue's dead letters that match the
// filter, oldest first, or newest first when asked.
func (s *store) DeadLetters(ctx context.Context, dq contract.DeadLetterQuery) (contract.ItemPage, error) {
	limit := dq.Page.Limit
	at, err := parseSeqCursor(dq.Page.Cursor)
	if err != nil {
		return contract.ItemPage{}, err
	}
	if err := s.lock(ctx); err != nil {
		return contract.ItemPage{}, err
	}
	defer s.mu.Unlock()
	out := contract.ItemPage{Items: []contract.Item{}}
	var last int64
	skip := dq.Skip
	s.deadMatching(dq.DeadLetterFilter, dq.Newest, at, func(e *entry) bool {
		if skip > 0 {
			skip--
			return true
		}
		if len(out.Items) == limit {
			out.Next = seqCursor(last)
			return false
		}
		out.Items = append(out.Items, copyItem(e.item))
		last = e.deadSeq
		if dq.Newest {
			last-- // the gap below the letter, where the next page starts
		}
		return true
	})
	return out, nil
}

// DeadLetterSummary counts the dead letters f matches, by error group.
func (s *store) DeadLetterSummary(ctx context.Context, f contract.DeadLetterFilter, groups int) (contract.DeadLetterSummary, error) {
	if err := s.lock(ctx); err != nil {
		return contract.DeadLetterSummary{}, err
	}
	defer s.mu.Unlock()
	out := contract.DeadLetterSummary{Groups: []contract.DeadLetterGroup{}}
	q := s.queues[f.Queue]
	if q == nil {
		return out, nil
	}
	if groups == 0 && f.ID == "" && f.ErrorContains == "" {
		// The counters answer without a walk.
		if f.Tenant == "" {
			out.Total = int64(q.dead.Len())
		} else if tq := q.tenants[f.Tenant]; tq != nil {
			out.Total = int64(tq.dead)
		}
		return out, nil
	}
	tally := contract.NewErrorTally(groups)
	s.deadMatching(f, false, nil, func(e *entry) bool {
		tally.Add(e.item.LastError, e.item.DeadAt)
		return true
	})
	return tally.Summary(), nil
}

// Requeue moves the matching dead letters back to their queue, due now,
// with their attempts reset; LastError stays for the record.
func (s *store) Requeue(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var matched []*entry
	s.deadMatching(f, false, nil, func(e *entry) bool { matched = append(matched, e); return true })
	if len(matched) == 0 {
		return 0, nil
	}
	now := s.clock.Now()
	q := s.queues[f.Queue]
	for _, e := range matched {
		tq := e.tq
		q.dead.Delete(e.deadSeq)
		tq.dead--
		e.deadSeq = 0
		e.item.Attempts = 0
		e.item.DeadAt = time.Time{}
		e.item.NotBefore = time.Time{}
		e.item.EnqueuedAt = now
		s.push(q, tq, e, now, now)
		if q.recording() {
			s.record(q, e, contract.Event{Kind: contract.EventRequeued}, now)
		}
	}
	s.wake(q.name, now)
	return len(matched), nil
}

// Purge deletes the matching dead letters.
func (s *store) Purge(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var matched []*entry
	s.deadMatching(f, false, nil, func(e *entry) bool { matched = append(matched, e); return true })
	if len(matched) == 0 {
		return 0, nil
	}
	q := s.queues[f.Queue]
	for _, e := range matched {
		s.drop(q, e.tq, e)
	}
	return len(matched), nil
}
