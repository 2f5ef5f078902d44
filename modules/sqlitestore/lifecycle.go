package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// The lifecycle controls (contract.LifecycleController). Everything they
// change is a row or a column of the file, written in one write
// transaction like every other call, so it survives closing and reopening
// the file: pauses are rows of adk_pauses and columns of the queue's
// adk_queues row, a waiting or cancelled item is a row of adk_work in
// that state, a cancel's mark on a lease is the row's cancelled_at.

// Pause stops claims of the queue, or of one tenant in it.
func (q *workQueue) Pause(ctx context.Context, queue, tenant string) error {
	return q.setPaused(ctx, queue, tenant, true)
}

// Resume ends a pause and wakes the queue's claimers.
func (q *workQueue) Resume(ctx context.Context, queue, tenant string) error {
	return q.setPaused(ctx, queue, tenant, false)
}

func (q *workQueue) setPaused(ctx context.Context, queue, tenant string, paused bool) error {
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		if tenant == "" {
			_, err := e.ExecContext(ctx, pauseQueueSQL, queue, paused)
			return err
		}
		text, delta := pauseTenantSQL, 1
		if !paused {
			text, delta = resumeTenantSQL, -1
		}
		res, err := e.ExecContext(ctx, text, queue, tenant)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // paused already, or not paused: nothing to count
		}
		_, err = e.ExecContext(ctx, pausedCountSQL, queue, delta)
		return err
	})
	if err != nil {
		return queueErr(ctx, err)
	}
	if !paused {
		q.wake(queue)
	}
	return nil
}

// Paused reports what of the queue is paused.
func (q *workQueue) Paused(ctx context.Context, queue string) (contract.PauseState, error) {
	out := contract.PauseState{Queue: queue, Tenants: []string{}}
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		var err error
		out.Paused, out.Tenants, err = pauses(ctx, e, queue)
		return err
	})
	if err != nil {
		return contract.PauseState{}, queueErr(ctx, err)
	}
	return out, nil
}

// pauses reads whether the queue is paused and its paused tenants, by
// name.
func pauses(ctx context.Context, e execer, queue string) (bool, []string, error) {
	var paused bool
	err := e.QueryRowContext(ctx, pausedGetSQL, queue).Scan(&paused)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, nil, err
	}
	tenants := []string{}
	rows, err := e.QueryContext(ctx, pausedListSQL, queue)
	if err != nil {
		return false, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return false, nil, err
		}
		tenants = append(tenants, t)
	}
	return paused, tenants, rows.Err()
}

// Cancel cancels one item, or marks its lease.
func (q *workQueue) Cancel(ctx context.Context, key contract.ItemKey, reason string) (contract.ItemState, error) {
	now := nanos(q.clock.Now())
	var was contract.ItemState
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		var st itemState
		err := e.QueryRowContext(ctx, itemStateSQL, key.Queue, key.Tenant, key.ID).Scan(st.dest()...)
		if errors.Is(err, sql.ErrNoRows) {
			return contract.ErrNotFound
		}
		if err != nil {
			return err
		}
		was = st.state
		return cancelOne(ctx, e, key, st.state, reason, now, st.events)
	})
	if err != nil {
		return "", queueErr(ctx, err)
	}
	return was, nil
}

// itemState is what a cancel or a signal reads of an item.
type itemState struct {
	state       contract.ItemState
	waitSignal  string
	waitUntil   int64
	priority    int
	cancelledAt int64
	events      int // the queue's cap of events
}

func (s *itemState) dest() []any {
	return []any{&s.state, &s.waitSignal, &s.waitUntil, &s.priority, &s.cancelledAt, &s.events}
}

// cancelOne cancels the item key, in state, at now: a queued, waiting or
// dead item is cancelled (a queued one leaves its tenant's wake time to
// the items left), a leased one is marked unless it is already; a
// cancelled or completed one is left as it is. capN is the queue's cap of
// events.
func cancelOne(ctx context.Context, e execer, key contract.ItemKey, state contract.ItemState, reason string, now int64, capN int) error {
	switch state {
	case contract.StateCancelled, contract.StateCompleted:
		return nil
	case contract.StateLeased:
		_, err := e.ExecContext(ctx, cancelMarkSQL, key.Queue, key.Tenant, key.ID, now, reason)
		return err
	}
	if _, err := e.ExecContext(ctx, cancelSQL, key.Queue, key.Tenant, key.ID, now, reason); err != nil {
		return err
	}
	if err := finishedAdd(ctx, e, key.Queue, 1); err != nil {
		return err
	}
	if err := record(ctx, e, capN, key, contract.Event{Kind: contract.EventCancelled, At: fromNanos(now), Reason: reason}, false); err != nil {
		return err
	}
	if state != contract.StateQueued {
		return nil
	}
	// The tenant's wake is its first queued item's due time again (NULL
	// when it holds none: it leaves the rotation).
	var wake sql.NullInt64
	if err := e.QueryRowContext(ctx, claimWakeRankedSQL, key.Queue, key.Tenant, "").Scan(&wake); err != nil {
		return err
	}
	var at any
	if wake.Valid {
		at = wake.Int64
	}
	_, err := e.ExecContext(ctx, turnWakeSQL, key.Queue, key.Tenant, at, now)
	return err
}

// matching lists the items f selects, with their states.
func matching(ctx context.Context, e execer, f contract.CancelFilter) ([]contract.Item, error) {
	rows, err := e.QueryContext(ctx, cancelMatchingSQL, f.Queue, f.Tenant, f.IDPrefix, string(f.State))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []contract.Item
	for rows.Next() {
		it := contract.Item{Queue: f.Queue}
		if err := rows.Scan(&it.Tenant, &it.ID, &it.State); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// CancelMatching cancels (or marks) every item the filter selects, in one
// transaction.
func (q *workQueue) CancelMatching(ctx context.Context, f contract.CancelFilter, reason string) (int, error) {
	now := nanos(q.clock.Now())
	var n int
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		list, err := matching(ctx, e, f)
		if err != nil {
			return err
		}
		capN, err := eventsCap(ctx, e, f.Queue)
		if err != nil {
			return err
		}
		for _, it := range list {
			if err := cancelOne(ctx, e, it.Key(), it.State, reason, now, capN); err != nil {
				return err
			}
		}
		n = len(list)
		return nil
	})
	if err != nil {
		return 0, queueErr(ctx, err)
	}
	return n, nil
}

// CountMatching counts what CancelMatching would touch.
func (q *workQueue) CountMatching(ctx context.Context, f contract.CancelFilter) (int, error) {
	var n int
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		list, err := matching(ctx, e, f)
		n = len(list)
		return err
	})
	if err != nil {
		return 0, queueErr(ctx, err)
	}
	return n, nil
}

// PurgeCancelled deletes the queue's items cancelled before before.
func (q *workQueue) PurgeCancelled(ctx context.Context, queue string, before time.Time) (int, error) {
	var n int64
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		if _, err := e.ExecContext(ctx, eventsPurgeCancelledSQL, queue, nanos(before)); err != nil {
			return err
		}
		res, err := e.ExecContext(ctx, purgeCancelledSQL, queue, nanos(before))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		return finishedAdd(ctx, e, queue, -int(n))
	})
	if err != nil {
		return 0, queueErr(ctx, err)
	}
	return int(n), nil
}

// Snooze puts the item back due at now+d, charging no attempt, or
// dead-letters it when its snoozes reach the policy's cap.
func (q *workQueue) Snooze(ctx context.Context, l contract.Lease, d time.Duration) (policy.Decision, error) {
	now := q.clock.Now()
	k := l.Key()
	var (
		dec policy.Decision
		h   held
	)
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		var err error
		if h, err = holding(ctx, e, l, now); err != nil || h.cancelled {
			return err
		}
		dec = q.settings.Policy.DecideSnooze(h.snoozes, d, now)
		seq, err := take(ctx, e, "seq", 1)
		if err != nil {
			return err
		}
		if !dec.Retry {
			text := contract.SnoozeLimitText(h.snoozes)
			if _, err := e.ExecContext(ctx, burySQL, k.Queue, k.Tenant, k.ID, seq, nanos(now), h.attempts, text); err != nil {
				return err
			}
			return record(ctx, e, h.events, k, contract.Event{Kind: contract.EventDead, At: now, Attempt: h.attempts + 1, Error: text, Worker: l.Worker}, false)
		}
		due := later(dec.At, now)
		if _, err := e.ExecContext(ctx, snoozeSQL, k.Queue, k.Tenant, k.ID, seq, nanos(due), nanos(dec.At)); err != nil {
			return err
		}
		if err := record(ctx, e, h.events, k, contract.Event{Kind: contract.EventSnoozed, At: now, Worker: l.Worker, NextDue: due}, false); err != nil {
			return err
		}
		return join(ctx, e, k, due, h.priority, now)
	})
	if err != nil {
		return policy.Decision{}, queueErr(ctx, err)
	}
	q.holds.ended(q, []tenantKey{{k.Queue, k.Tenant}})
	if h.cancelled {
		return policy.Decision{}, &contract.CancelledError{Items: []contract.ItemKey{k}}
	}
	if dec.Retry && !dec.At.After(now) {
		q.wake(k.Queue)
	}
	return dec, nil
}

// Wait parks the item until a signal or its timeout.
func (q *workQueue) Wait(ctx context.Context, l contract.Lease, w contract.WaitRequest) error {
	now := q.clock.Now()
	until := nanos(now.Add(w.Timeout))
	k := l.Key()
	var h held
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		var err error
		if h, err = holding(ctx, e, l, now); err != nil || h.cancelled {
			return err
		}
		seq, err := take(ctx, e, "seq", 1)
		if err != nil {
			return err
		}
		if _, err := e.ExecContext(ctx, waitSQL, k.Queue, k.Tenant, k.ID, seq, w.Signal, nanos(now), until); err != nil {
			return err
		}
		ev := contract.Event{Kind: contract.EventWaiting, At: now, Worker: l.Worker, Signal: w.Signal, NextDue: fromNanos(until)}
		if err := record(ctx, e, h.events, k, ev, false); err != nil {
			return err
		}
		_, err = e.ExecContext(ctx, waitNextSQL, k.Queue, until)
		return err
	})
	if err != nil {
		return queueErr(ctx, err)
	}
	q.holds.ended(q, []tenantKey{{k.Queue, k.Tenant}})
	if h.cancelled {
		return &contract.CancelledError{Items: []contract.ItemKey{k}}
	}
	return nil
}

// resume ends the wait of the item key: by signal with payload at at, or,
// when timedOut, by its timeout (at is then its until and signal the one
// it waited for). The item is queued, due at at. now is the clock's now,
// when the event (under the queue's cap capN) is recorded.
func resume(ctx context.Context, e execer, key contract.ItemKey, priority int, signal string, payload []byte, timedOut bool, at, now int64, capN int) error {
	seq, err := take(ctx, e, "seq", 1)
	if err != nil {
		return err
	}
	if _, err := e.ExecContext(ctx, resumeSQL, key.Queue, key.Tenant, key.ID, seq, at, signal, payload, timedOut); err != nil {
		return err
	}
	kind := contract.EventSignalled
	if timedOut {
		kind = contract.EventTimedOut
	}
	if err := record(ctx, e, capN, key, contract.Event{Kind: kind, At: fromNanos(now), Signal: signal}, false); err != nil {
		return err
	}
	return join(ctx, e, key, fromNanos(at), priority, fromNanos(now))
}

// endWaits queues the waits of the queue that timed out by at, each due
// at its until, and notes when the next one times out. A claim runs it
// when the queue's wait_next has come; capN is the queue's cap of events.
func endWaits(ctx context.Context, e execer, queue string, at int64, capN int) error {
	type timeout struct {
		key      contract.ItemKey
		signal   string
		until    int64
		priority int
	}
	var list []timeout
	rows, err := e.QueryContext(ctx, timeoutsDueSQL, queue, at)
	if err != nil {
		return err
	}
	for rows.Next() {
		t := timeout{key: contract.ItemKey{Queue: queue}}
		if err := rows.Scan(&t.key.Tenant, &t.key.ID, &t.signal, &t.until, &t.priority); err != nil {
			rows.Close()
			return err
		}
		list = append(list, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range list {
		if err := resume(ctx, e, t.key, t.priority, t.signal, nil, true, t.until, at, capN); err != nil {
			return err
		}
	}
	_, err = e.ExecContext(ctx, waitNextResetSQL, queue)
	return err
}

// Signal resumes the item if it waits for signal. The check and the write
// are one write transaction, so of two signals for one wait one resumes
// it and the other finds it resumed.
func (q *workQueue) Signal(ctx context.Context, key contract.ItemKey, signal string, payload []byte) error {
	now := nanos(q.clock.Now())
	var refused error
	queued := false
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		refused, queued = nil, false
		var st itemState
		err := e.QueryRowContext(ctx, itemStateSQL, key.Queue, key.Tenant, key.ID).Scan(st.dest()...)
		if errors.Is(err, sql.ErrNoRows) {
			return contract.ErrNotFound
		}
		if err != nil {
			return err
		}
		if st.state == contract.StateWaiting && st.waitUntil <= now {
			// The wait is over: it timed out, whether or not a claim
			// has queued it yet.
			if err := resume(ctx, e, key, st.priority, st.waitSignal, nil, true, st.waitUntil, now, st.events); err != nil {
				return err
			}
			queued = true
			refused = &contract.NotWaitingError{Key: key, Signal: signal, State: contract.StateQueued}
			return nil
		}
		if st.state != contract.StateWaiting || st.waitSignal != signal {
			nw := &contract.NotWaitingError{Key: key, Signal: signal, State: st.state}
			if st.state == contract.StateWaiting {
				nw.Waiting = st.waitSignal
			}
			refused = nw
			return nil
		}
		queued = true
		return resume(ctx, e, key, st.priority, signal, payload, false, now, now, st.events)
	})
	if err != nil {
		return queueErr(ctx, err)
	}
	if queued {
		q.wake(key.Queue)
	}
	return refused
}

// Waiting pages through the queue's waiting items, longest waiting first.
func (q *workQueue) Waiting(ctx context.Context, queue string, page contract.PageRequest) (contract.ItemPage, error) {
	after := int64(math.MinInt64)
	if page.Cursor != "" {
		n, err := parseSeqCursor(page.Cursor)
		if err != nil {
			return contract.ItemPage{}, err
		}
		after = n
	}
	out := contract.ItemPage{Items: []contract.Item{}}
	var seqs []int64
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		rows, err := e.QueryContext(ctx, waitingPageSQL, queue, after, page.Limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var seq int64
			it, _, err := scanItem(rows, &seq)
			if err != nil {
				return err
			}
			out.Items = append(out.Items, it)
			seqs = append(seqs, seq)
		}
		return rows.Err()
	})
	if err != nil {
		return contract.ItemPage{}, queueErr(ctx, err)
	}
	if len(out.Items) > page.Limit {
		out.Items = out.Items[:page.Limit]
		out.Next = seqCursor(seqs[page.Limit-1])
	}
	return out, nil
}
