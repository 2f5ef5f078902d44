package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

var (
	_ contract.LifecycleController = (*PostgresWorkQueue)(nil)
	_ contract.LifecycleController = (*workQueue)(nil)
)

// lifecycleColumns are the item columns of schema version 3 that are
// NULL when unused, as scanLease reads them.
type lifecycleColumns struct {
	waitSignal, resumedSignal, cancelReason      *string
	waitSince, waitUntil, resumedAt, cancelledAt *time.Time
	resumedPayload                               []byte
	resumedTimedOut                              *bool
}

// fill puts the columns into it.
func (c lifecycleColumns) fill(it *contract.Item) {
	if c.waitSignal != nil && it.State == contract.StateWaiting {
		w := &contract.WaitInfo{Signal: *c.waitSignal}
		if c.waitSince != nil {
			w.Since = utc(*c.waitSince)
		}
		if c.waitUntil != nil {
			w.Until = utc(*c.waitUntil)
		}
		it.Waiting = w
	}
	if c.resumedSignal != nil {
		r := &contract.Resume{Signal: *c.resumedSignal, Payload: c.resumedPayload}
		if c.resumedTimedOut != nil {
			r.TimedOut = *c.resumedTimedOut
		}
		if c.resumedAt != nil {
			r.At = utc(*c.resumedAt)
		}
		it.Resumed = r
	}
	if c.cancelledAt != nil {
		it.CancelledAt = utc(*c.cancelledAt)
	}
	if c.cancelReason != nil {
		it.CancelReason = *c.cancelReason
	}
}

// Pause stops claims of queue's tenant, or of the queue when tenant is
// "": a row in the pauses table, which sends the queue's claims to
// claim_flow.sql until the last pause ends.
func (q *workQueue) Pause(ctx context.Context, queue, tenant string) error {
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		_, err := e.Exec(ctx, q.q.pause, queue, tenant, q.clock.Now())
		return err
	})
	if err == nil {
		q.limited.set(queue, true)
	}
	return queueErr(err)
}

// Resume ends a pause and wakes the queue's claimers on commit.
func (q *workQueue) Resume(ctx context.Context, queue, tenant string) error {
	return queueErr(q.db.run(ctx, func(ctx context.Context, e Executor) error {
		_, err := e.Exec(ctx, q.q.resume, queue, tenant, q.channel)
		return err
	}))
}

// Paused reports what of queue is paused.
func (q *workQueue) Paused(ctx context.Context, queue string) (contract.PauseState, error) {
	out := contract.PauseState{Queue: queue, Tenants: []string{}}
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		out.Paused, out.Tenants = false, out.Tenants[:0]
		rows, err := e.Query(ctx, q.q.paused, queue)
		if err != nil {
			return err
		}
		return readRows(rows, func(rows pgx.Rows) error {
			var t string
			if err := rows.Scan(&t); err != nil {
				return err
			}
			if t == "" {
				out.Paused = true
			} else {
				out.Tenants = append(out.Tenants, t)
			}
			return nil
		})
	})
	if err != nil {
		return contract.PauseState{}, queueErr(err)
	}
	return out, nil
}

// Cancel locks the item, then cancels it (or marks its lease) in the same
// transaction, and returns the state it was in. Both statements go in one
// pipelined round trip; an unknown item locks nothing, and the cancel
// then changes nothing.
func (q *workQueue) Cancel(ctx context.Context, key contract.ItemKey, reason string) (contract.ItemState, error) {
	var was string
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		was = ""
		found := false
		lock := stmt{sql: q.q.cancelLock, args: []any{key.Queue, key.Tenant, key.ID}, scan: func(rows pgx.Rows) error {
			found = true
			return rows.Scan(&was)
		}}
		err := q.db.plannedRows(ctx, e, q.q.cancel, "", []any{key.Queue, key.Tenant, key.ID, q.clock.Now(), reason},
			func(pgx.Rows) error { return nil }, lock)
		if err == nil && !found {
			return contract.ErrNotFound
		}
		return err
	})
	if err != nil {
		return "", queueErr(err)
	}
	return contract.ItemState(was), nil
}

// CancelMatching cancels, or marks, every item f selects in one
// statement.
func (q *workQueue) CancelMatching(ctx context.Context, f contract.CancelFilter, reason string) (int, error) {
	var n int
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		return e.QueryRow(ctx, q.q.cancelMatching, f.Queue, f.Tenant, f.IDPrefix, string(f.State), q.clock.Now(), reason).Scan(&n)
	})
	return n, queueErr(err)
}

// CountMatching counts what CancelMatching would touch.
func (q *workQueue) CountMatching(ctx context.Context, f contract.CancelFilter) (int, error) {
	var n int
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		return e.QueryRow(ctx, q.q.countMatching, f.Queue, f.Tenant, f.IDPrefix, string(f.State)).Scan(&n)
	})
	return n, queueErr(err)
}

// PurgeCancelled deletes the queue's items cancelled before before.
func (q *workQueue) PurgeCancelled(ctx context.Context, queue string, before time.Time) (int, error) {
	var n int
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		return e.QueryRow(ctx, q.q.purgeCancelled, queue, before).Scan(&n)
	})
	return n, queueErr(err)
}

// settleLease settles the lease l with write, which changes the item's
// row only while it is as h says (the lease's token, no cancel pending,
// h's attempts, snoozes and worker) and reports whether it did. write
// runs first on what the lease value carries, in a transaction of its
// own on e (own set: one pipelined round trip, no lock taken before).
// Only when that changes nothing is the lease locked
// (queries/lease_lock.sql) and write run again, in that transaction, on
// what the row holds: a lost lease is then a *contract.LeaseLostError,
// and one whose cancel is pending is cancelled instead and is a
// *contract.CancelledError. Fail, Snooze and Wait settle this way.
func (q *workQueue) settleLease(ctx context.Context, l contract.Lease, write func(ctx context.Context, e Executor, h heldLease, now time.Time, own bool) (bool, error)) error {
	done := false
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		var err error
		done, err = write(ctx, e, heldLease{attempts: l.Item.Attempts, snoozes: l.Item.Snoozes, worker: l.Worker}, q.clock.Now(), true)
		return err
	})
	if err != nil || done {
		return queueErr(err)
	}
	var cancelled error
	err = q.db.tx(ctx, func(ctx context.Context, e Executor) error {
		cancelled = nil
		h, err := q.lockLease(ctx, e, l)
		if errors.Is(err, contract.ErrCancelled) {
			cancelled = err // commit the cancel
			return nil
		}
		if err != nil {
			return err
		}
		ok, err := write(ctx, e, h, q.clock.Now(), false)
		if err == nil && !ok {
			return &contract.LeaseLostError{Items: []contract.ItemKey{l.Key()}}
		}
		return err
	})
	if err == nil {
		err = cancelled
	}
	return queueErr(err)
}

// Snooze puts the item back due at now+d with no attempt charged, or
// dead-letters it once its snoozes reach the policy's cap: decided on
// the snoozes the lease carries, and again on the row's should they
// differ (settleLease).
func (q *workQueue) Snooze(ctx context.Context, l contract.Lease, d time.Duration) (policy.Decision, error) {
	var dec policy.Decision
	err := q.settleLease(ctx, l, func(ctx context.Context, e Executor, h heldLease, now time.Time, own bool) (bool, error) {
		dec = q.settings.Policy.DecideSnooze(h.snoozes, d, now)
		n, woke, err := q.snooze(ctx, e, l, dec, now, h, own)
		if err != nil || n == 0 {
			return false, err
		}
		if woke == 0 {
			err = q.wakeFreed(ctx, e, l.Item.Queue)
		}
		return true, err
	})
	if err != nil {
		return policy.Decision{}, err
	}
	return dec, nil
}

// snooze runs queries/snooze.sql for the lease l as held (h) under
// decision dec, after the tenant's turn lock when the item goes back to
// the queue, and returns how many rows it changed and how many wakes it
// sent. own: the statement runs in a transaction of its own on e (one
// pipelined round trip), else in e's.
func (q *workQueue) snooze(ctx context.Context, e Executor, l contract.Lease, dec policy.Decision, now time.Time, h heldLease, own bool) (n, woke int, err error) {
	k := l.Key()
	due, notBefore := now, any(nil)
	var lock []stmt
	if dec.Retry {
		due, notBefore = later(dec.At, now), dec.At
		// The item becomes due: the statement starts with the tenant's turn
		// lock held (turns_share.sql).
		lock = append(lock, q.turnLocks([]string{k.Queue}, []string{k.Tenant}))
	}
	args := []any{k.Queue, k.Tenant, k.ID, l.Token, dec.Retry, due, notBefore, now, q.channel,
		contract.SnoozeLimitText(h.snoozes), h.worker, h.snoozes}
	err = q.db.runAfter(ctx, e, own, q.q.snooze, args, func(rows pgx.Rows) error { return rows.Scan(&n, &woke) }, lock...)
	return n, woke, err
}

// Wait ends the lease and parks the item until a signal or its timeout
// (settleLease).
func (q *workQueue) Wait(ctx context.Context, l contract.Lease, w contract.WaitRequest) error {
	k := l.Key()
	return q.settleLease(ctx, l, func(ctx context.Context, e Executor, h heldLease, now time.Time, _ bool) (bool, error) {
		var n int
		err := e.QueryRow(ctx, q.q.wait, k.Queue, k.Tenant, k.ID, l.Token, w.Signal, now, now.Add(w.Timeout), h.worker).Scan(&n)
		if err != nil || n == 0 {
			return false, err
		}
		return true, q.wakeFreed(ctx, e, k.Queue)
	})
}

// Signal resumes the item if it waits for signal, in one statement that
// checks and writes (queries/signal.sql), after the tenant's turn lock,
// both in one transaction and one round trip.
func (q *workQueue) Signal(ctx context.Context, key contract.ItemKey, signal string, payload []byte) error {
	now := q.clock.Now()
	return queueErr(q.db.run(ctx, func(ctx context.Context, e Executor) error {
		var (
			found     bool
			resumed   bool
			state     string
			waitsFor  *string
			waitUntil *time.Time
			woke      int
		)
		// One pipelined round trip on a connection of the queue's own: the
		// tenant's turn lock, then the statement, in one transaction.
		lock := q.turnLocks([]string{key.Queue}, []string{key.Tenant})
		err := q.db.plannedRows(ctx, e, q.q.signal, "", []any{key.Queue, key.Tenant, key.ID, signal, payload, now, q.channel}, func(rows pgx.Rows) error {
			found = true
			return rows.Scan(&resumed, &state, &waitsFor, &waitUntil, &woke)
		}, lock)
		switch {
		case err != nil:
			return err
		case !found:
			return contract.ErrNotFound
		case resumed:
			return nil
		}
		nw := &contract.NotWaitingError{Key: key, Signal: signal, State: contract.ItemState(state)}
		if nw.State == contract.StateWaiting {
			switch {
			case waitUntil != nil && !waitUntil.After(now):
				// Timed out: the item is due, waiting for nothing.
				nw.State = contract.StateQueued
			case waitsFor != nil && *waitsFor == signal:
				// The statement's snapshot saw the wait, but a concurrent
				// signal resumed it first.
				nw.State = contract.StateQueued
			case waitsFor != nil:
				nw.Waiting = *waitsFor
			}
		}
		return nw
	}))
}

// endWaits makes the queue's timed-out waits due, on e (the claim's
// connection, or the caller's transaction), in a transaction of their
// own when e can begin one.
func (q *workQueue) endWaits(ctx context.Context, e Executor, queue string) error {
	now := q.clock.Now()
	return inTx(ctx, e, func(ctx context.Context, e Executor) error {
		rows, err := e.Query(ctx, q.q.waitTimeoutsLock, queue, now)
		if err != nil {
			return err
		}
		tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(tenants) == 0 {
			return err
		}
		var n, woke int
		return e.QueryRow(ctx, q.q.waitTimeouts, queue, now, tenants, q.channel).Scan(&n, &woke)
	})
}

// Waiting pages through the queue's waiting items, longest waiting first.
func (q *workQueue) Waiting(ctx context.Context, queue string, page contract.PageRequest) (contract.ItemPage, error) {
	after, err := parseSeqCursor(page.Cursor)
	if err != nil {
		return contract.ItemPage{}, err
	}
	out := contract.ItemPage{Items: []contract.Item{}}
	err = q.db.run(ctx, func(ctx context.Context, e Executor) error {
		out = contract.ItemPage{Items: out.Items[:0]}
		rows, err := e.Query(ctx, q.q.waitingList, queue, after, page.Limit+1)
		if err != nil {
			return err
		}
		var last int64
		return readRows(rows, func(rows pgx.Rows) error {
			var seq int64
			l, err := scanLease(rows, &seq)
			if err != nil {
				return err
			}
			if len(out.Items) < page.Limit {
				out.Items = append(out.Items, l.Item)
				last = seq
			} else {
				out.Next = seqCursor(last)
			}
			return nil
		})
	})
	if err != nil {
		return contract.ItemPage{}, queueErr(err)
	}
	return out, nil
}
