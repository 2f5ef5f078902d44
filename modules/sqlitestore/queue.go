package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// SQLiteWorkQueue is a contract.WorkQueue on one SQLite file. Every claim
// and settle is one BEGIN IMMEDIATE transaction, so claimers in several
// processes on one file take turns on the write lock and never lease one
// item twice; every settle is fenced on the lease token, which comes from
// a counter in the file. It is safe for concurrent use.
//
// Its queue methods are the contract's front door ([contract.QueueFront]),
// which checks every call before the queue's driver sees it.
type SQLiteWorkQueue struct {
	contract.QueueFront
	d *workQueue
}

// workQueue is the driver behind a SQLiteWorkQueue's front door: it is
// called only with input the front has checked and normalised.
type workQueue struct {
	db       *db
	clock    contract.Clock
	settings Settings
	wakes    *wakeHub
	holds    *capHolds
}

var (
	_ contract.WorkQueue       = (*SQLiteWorkQueue)(nil)
	_ contract.CompleteClaimer = (*SQLiteWorkQueue)(nil)
	_ contract.Waker           = (*SQLiteWorkQueue)(nil)
	_ contract.Inspector       = (*SQLiteWorkQueue)(nil)
	_ contract.StatsSource     = (*SQLiteWorkQueue)(nil)
	_ contract.QueueDriver     = (*workQueue)(nil)

	_ contract.LifecycleController = (*SQLiteWorkQueue)(nil)
	_ contract.LifecycleController = (*workQueue)(nil)
)

// OpenQueue returns a queue on db after Prepare has created the schema in
// an empty file or verified an existing one.
func OpenQueue(ctx context.Context, d *sql.DB, clock contract.Clock, s Settings) (*SQLiteWorkQueue, error) {
	q, err := NewQueue(d, clock, s)
	if err != nil {
		return nil, err
	}
	if err := Prepare(ctx, d, q.d.settings); err != nil {
		return nil, err
	}
	return q, nil
}

// NewQueue returns a queue on db without preparing the file. A nil clock
// means the system clock.
func NewQueue(d *sql.DB, clock contract.Clock, s Settings) (*SQLiteWorkQueue, error) {
	s, clock, err := prepare(d, clock, s)
	if err != nil {
		return nil, err
	}
	dd := newDB(d)
	return (&workQueue{db: dd, clock: clock, settings: s, wakes: newWakeHub(d, s.PollInterval, dd.stats), holds: &capHolds{}}).front(), nil
}

func (q *workQueue) front() *SQLiteWorkQueue {
	return &SQLiteWorkQueue{QueueFront: contract.NewQueueFront(q, q.settings.MaxValueBytes, "sqlite"), d: q}
}

// Bound returns a queue that runs every call inside tx, the caller's
// transaction: an enqueue commits with the run that asked for it. Its
// wakes reach this process's subscribers through the file's change
// counter once tx commits, within PollInterval. Claim, Heartbeat and
// CompleteAndClaim are refused on a bound queue: SQLite forgets a
// rolled-back transaction entirely, counter included, so a token handed
// out inside one could be handed out again.
func (q *SQLiteWorkQueue) Bound(tx *sql.Tx) *SQLiteWorkQueue {
	b := *q.d
	b.db = q.d.db.boundTo(tx)
	return b.front()
}

func (q *workQueue) refuseBound(call string) error {
	if !q.db.bound() {
		return nil
	}
	return &contract.ValidationError{Field: "Bound", Problem: call + " cannot run inside the caller's transaction: a token issued there is forgotten if it rolls back; call it on the queue Bound came from"}
}

// Enqueue adds the items in one transaction, all or none. An ID already
// in its queue (queued, leased, waiting, dead or cancelled, or completed
// within its uniqueness window) is left as it is, as is a repeat within
// the batch; a completed item whose window has closed is replaced.
func (q *workQueue) Enqueue(ctx context.Context, items ...contract.Item) error {
	_, err := q.enqueue(ctx, false, items)
	return err
}

// enqueue is Enqueue, and EnqueueReport when report is set.
func (q *workQueue) enqueue(ctx context.Context, report bool, items []contract.Item) ([]contract.EnqueueResult, error) {
	type row struct {
		key  contract.ItemKey
		item contract.Item
		meta *string
		pos  int
	}
	rows := make([]row, 0, len(items))
	first := make(map[contract.ItemKey]int, len(items))
	repeats := map[int]int{} // a repeat's position: its first's
	perQueue := map[string]int64{}
	for i, it := range items {
		k := it.Key()
		if f, ok := first[k]; ok {
			repeats[i] = f
			continue
		}
		first[k] = i
		var meta *string
		if len(it.Metadata) > 0 {
			b, err := json.Marshal(it.Metadata)
			if err != nil {
				return nil, &contract.ValidationError{Field: "Item.Metadata", Problem: err.Error()}
			}
			s := string(b)
			meta = &s
		}
		rows = append(rows, row{key: k, item: it, meta: meta, pos: i})
		perQueue[k.Queue]++
	}
	now := q.clock.Now()
	var results []contract.EnqueueResult
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		results = make([]contract.EnqueueResult, len(items))
		seq, err := take(ctx, e, "seq", int64(len(rows)))
		if err != nil {
			return err
		}
		seq -= int64(len(rows))
		stamps := map[string]int64{}
		caps := map[string]int{}
		for name, n := range perQueue {
			last, _, err := takeQueue(ctx, e, name, n, 0)
			if err != nil {
				return err
			}
			stamps[name] = last - n
			if caps[name], err = eventsCap(ctx, e, name); err != nil {
				return err
			}
		}
		var events eventBatch // the enqueued events, written together
		for _, r := range rows {
			seq++
			stamps[r.key.Queue]++
			due := later(r.item.NotBefore, now)
			args := []any{r.key.Queue, r.key.Tenant, r.key.ID, seq, nanos(due),
				nanos(r.item.NotBefore), r.item.Payload, r.meta, nanos(now), r.item.Priority, int64(r.item.UniqueFor)}
			res, err := e.ExecContext(ctx, enqueueSQL, args...)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			if n == 0 {
				found, replace, err := enqueueFound(ctx, e, r.key, nanos(now))
				if err != nil {
					return err
				}
				if !replace {
					results[r.pos] = found
					continue
				}
				// A new life for a completed ID: the old record and its
				// events go.
				if _, err := e.ExecContext(ctx, itemDeleteSQL, r.key.Queue, r.key.Tenant, r.key.ID); err != nil {
					return err
				}
				if _, err := e.ExecContext(ctx, eventsDeleteSQL, r.key.Queue, r.key.Tenant, r.key.ID); err != nil {
					return err
				}
				if err := finishedAdd(ctx, e, r.key.Queue, -1); err != nil {
					return err
				}
				if _, err := e.ExecContext(ctx, enqueueSQL, args...); err != nil {
					return err
				}
			} else if c := caps[r.key.Queue]; c > 0 {
				// Events an earlier life of the ID left behind go.
				if _, err := e.ExecContext(ctx, eventsDeleteSQL, r.key.Queue, r.key.Tenant, r.key.ID); err != nil {
					return err
				}
			}
			if c := caps[r.key.Queue]; c > 0 {
				ev := contract.Event{Kind: contract.EventEnqueued, At: now}
				if !r.item.NotBefore.IsZero() {
					ev.NextDue = r.item.NotBefore
				}
				events.add(c, r.key, ev, false)
			}
			if _, err := e.ExecContext(ctx, turnJoinSQL, r.key.Queue, r.key.Tenant, stamps[r.key.Queue], nanos(due), r.item.Priority != 0, nanos(now)); err != nil {
				return err
			}
		}
		if err := events.flush(ctx, e); err != nil {
			return err
		}
		for i, f := range repeats {
			results[i] = results[f]
			if !results[f].Duplicate {
				results[i] = contract.EnqueueResult{Duplicate: true, State: contract.StateQueued}
			}
		}
		return nil
	})
	if err != nil {
		return nil, queueErr(ctx, err)
	}
	for name := range perQueue {
		q.wake(name)
	}
	if !report {
		return nil, nil
	}
	return results, nil
}

// later returns the later of a and b; an item due at once is due now, so
// items enqueued one after another are served in that order.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// take takes n values of a counter and returns the last.
func take(ctx context.Context, e execer, name string, n int64) (int64, error) {
	var last int64
	err := e.QueryRowContext(ctx, counterTakeSQL, name, n).Scan(&last)
	return last, err
}

// takeQueue takes stamps and turns of a queue's counters and returns the
// last of each.
func takeQueue(ctx context.Context, e execer, queue string, stamps, turns int64) (int64, int64, error) {
	var s, t int64
	err := e.QueryRowContext(ctx, queueTakeSQL, queue, stamps, turns).Scan(&s, &t)
	return s, t, err
}

// Claim leases up to req.Max due items, one per tenant per turn, tenants
// in rotation order, round after round; contract.ErrEmpty when none is
// due.
func (q *workQueue) Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	if err := q.refuseBound("Claim"); err != nil {
		return nil, err
	}
	var c claimed
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		var err error
		c, err = q.claim(ctx, e, req)
		return err
	})
	if err != nil {
		return nil, queueErr(ctx, err)
	}
	out := c.leases
	q.holds.note(req.Queue, c.held)
	c.report(ctx)
	if len(out) == 0 {
		return nil, contract.ErrEmpty
	}
	return out, nil
}

// CompleteAndClaim completes done and claims req in one transaction. A
// lost or cancelled lease in done does not stop the claim: the leases
// claimed come back with the error contract.SettleError makes of them. A
// req.Max of 0 only completes.
func (q *workQueue) CompleteAndClaim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest) ([]contract.Lease, error) {
	if err := q.refuseBound("CompleteAndClaim"); err != nil {
		return nil, err
	}
	var (
		c claimed
		s settled
	)
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		var err error
		if s, err = complete(ctx, e, done, q.clock.Now()); err != nil {
			return err
		}
		if req.Max > 0 {
			c, err = q.claim(ctx, e, req)
		}
		return err
	})
	if err != nil {
		return nil, queueErr(ctx, err)
	}
	out := c.leases
	q.holds.ended(q, s.ended)
	q.holds.note(req.Queue, c.held)
	c.report(ctx)
	if err := contract.SettleError(s.lost, s.cancelled); err != nil {
		return out, err
	}
	if req.Max > 0 && len(out) == 0 {
		return nil, contract.ErrEmpty
	}
	return out, nil
}

// Heartbeat extends a live lease to now+extend under a new token.
func (q *workQueue) Heartbeat(ctx context.Context, l contract.Lease, extend time.Duration) (contract.Lease, error) {
	if err := q.refuseBound("Heartbeat"); err != nil {
		return contract.Lease{}, err
	}
	now := q.clock.Now()
	k := l.Key()
	var out contract.Lease
	cancelled := false
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		token, err := take(ctx, e, "token", 1)
		if err != nil {
			return err
		}
		lease, err := scanClaimed(ctx, e, e.QueryRowContext(ctx, heartbeatSQL, k.Queue, k.Tenant, k.ID, l.Token, nanos(now), nanos(now.Add(extend)), token))
		if errors.Is(err, sql.ErrNoRows) {
			// A live lease a cancel marked: the item is cancelled, and
			// that commits (the token taken is never handed out).
			if cancelled, err = settleMarked(ctx, e, l, nanos(now), now); err != nil || cancelled {
				return err
			}
			// The token bump rolls back with the refusal: nothing is written.
			return &contract.LeaseLostError{Items: []contract.ItemKey{k}}
		}
		out = lease
		return err
	})
	if err != nil {
		return contract.Lease{}, queueErr(ctx, err)
	}
	if cancelled {
		q.holds.ended(q, []tenantKey{{k.Queue, k.Tenant}})
		return contract.Lease{}, &contract.CancelledError{Items: []contract.ItemKey{k}}
	}
	return out, nil
}

// Complete removes the items of the leases whose tokens still match, in
// one transaction. Those a cancel marked are cancelled instead; the error
// names them, and the leases that no longer held their items
// (contract.SettleError).
func (q *workQueue) Complete(ctx context.Context, leases ...contract.Lease) error {
	var s settled
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		var err error
		s, err = complete(ctx, e, leases, q.clock.Now())
		return err
	})
	if err != nil {
		return queueErr(ctx, err)
	}
	q.holds.ended(q, s.ended)
	return contract.SettleError(s.lost, s.cancelled)
}

// settled is what a batch complete did: the leases that no longer held
// their items, those a cancel had marked (now cancelled), and the tenants
// whose leases ended.
type settled struct {
	lost, cancelled []contract.ItemKey
	ended           []tenantKey
}

// complete deletes the leased items in order. A lease that deletes
// nothing holds an item its queue keeps or records events for, or one
// with a uniqueness window (completeKept), or it was lost, or marked by
// a cancel: then its item is cancelled.
func complete(ctx context.Context, e execer, leases []contract.Lease, now time.Time) (settled, error) {
	var s settled
	var b eventBatch
	// The retention of each queue a DELETE left an item of, read once;
	// the items of a queue that keeps or records events skip the DELETE.
	ret := map[string]retention{}
	// The items one UPDATE kept for each queue that keeps finished items
	// (keepAll), with their attempts, until their leases are reached.
	keeping := map[string]map[contract.ItemKey]int{}
	for i, l := range leases {
		k := l.Key()
		n := int64(0)
		r, known := ret[k.Queue]
		if !known || !r.retains() {
			res, err := e.ExecContext(ctx, completeSQL, k.Queue, k.Tenant, k.ID, l.Token)
			if err != nil {
				return settled{}, err
			}
			if n, err = res.RowsAffected(); err != nil {
				return settled{}, err
			}
		}
		if n == 0 {
			if !known {
				var err error
				if r, err = readRetention(ctx, e, k.Queue); err != nil {
					return settled{}, err
				}
				ret[k.Queue] = r
			}
			var kept bool
			if r.keepsFinished() {
				got, done := keeping[k.Queue]
				if !done {
					var err error
					if got, err = keepAll(ctx, e, k.Queue, leases[i:], now); err != nil {
						return settled{}, err
					}
					keeping[k.Queue] = got
				}
				var a int
				if a, kept = got[k]; kept {
					delete(got, k)
					keptEvent(&b, r, l, a, now)
				}
			} else {
				var err error
				if kept, err = completeKept(ctx, e, &b, l, r, now); err != nil {
					return settled{}, err
				}
			}
			if kept {
				s.ended = append(s.ended, tenantKey{k.Queue, k.Tenant})
				continue
			}
			if err := b.flush(ctx, e); err != nil {
				return settled{}, err
			}
			marked, err := settleMarked(ctx, e, l, nil, now)
			if err != nil {
				return settled{}, err
			}
			if !marked {
				s.lost = append(s.lost, k)
				continue
			}
			s.cancelled = append(s.cancelled, k)
		}
		s.ended = append(s.ended, tenantKey{k.Queue, k.Tenant})
	}
	if err := b.flush(ctx, e); err != nil {
		return settled{}, err
	}
	return s, nil
}

// Fail records cause against the lease and retries or dead-letters the
// item as the policy decides.
func (q *workQueue) Fail(ctx context.Context, l contract.Lease, cause error) (policy.Decision, error) {
	now := q.clock.Now()
	k := l.Key()
	var d policy.Decision
	var h held
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		var err error
		h, err = holding(ctx, e, l, now)
		if err != nil || h.cancelled {
			return err
		}
		d, err = q.settleFailed(ctx, e, k, h, l.Worker, cause, now)
		return err
	})
	if err != nil {
		return policy.Decision{}, queueErr(ctx, err)
	}
	q.holds.ended(q, []tenantKey{{k.Queue, k.Tenant}})
	if h.cancelled {
		return policy.Decision{}, &contract.CancelledError{Items: []contract.ItemKey{k}}
	}
	if d.Retry {
		q.wake(k.Queue)
	}
	return d, nil
}

// settleFailed ends a lease that failed with cause: back to the queue or
// to the dead letter, as the policy decides.
// worker is the failing worker's, "" for an expired lease reaped.
func (q *workQueue) settleFailed(ctx context.Context, e execer, k contract.ItemKey, h held, worker string, cause error, now time.Time) (policy.Decision, error) {
	attempts := h.attempts + 1
	lastErr := contract.ErrorText(cause)
	d := q.settings.Policy.Decide(attempts, cause, now)
	seq, err := take(ctx, e, "seq", 1)
	if err != nil {
		return d, err
	}
	ev := contract.Event{Kind: contract.EventDead, At: now, Attempt: attempts, Error: lastErr, Worker: worker}
	if !d.Retry {
		if _, err := e.ExecContext(ctx, burySQL, k.Queue, k.Tenant, k.ID, seq, nanos(now), attempts, lastErr); err != nil {
			return d, err
		}
		return d, record(ctx, e, h.events, k, ev, false)
	}
	due := later(d.At, now)
	if _, err := e.ExecContext(ctx, retrySQL, k.Queue, k.Tenant, k.ID, seq, nanos(due), nanos(d.At), attempts, lastErr); err != nil {
		return d, err
	}
	ev.Kind, ev.NextDue = contract.EventFailed, due
	if err := record(ctx, e, h.events, k, ev, false); err != nil {
		return d, err
	}
	return d, join(ctx, e, k, due, h.priority, now)
}

// join puts a tenant's newly queued item, of priority priority, in the
// rotation. A tenant already in it keeps its place, so it takes no stamp
// of the queue's counter, and its row is written only when the item falls
// due before the tenant wakes or makes it ranked: the snooze or retry of
// a busy tenant's item, due later than the items it already has queued,
// writes neither the queue's row nor the tenant's. now decides whether
// the tenant sleeps until its wake time.
func join(ctx context.Context, e execer, k contract.ItemKey, due time.Time, priority int, now time.Time) error {
	var in, same bool
	err := e.QueryRowContext(ctx, turnGetSQL, k.Queue, k.Tenant, nanos(due), priority != 0).Scan(&in, &same)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if same {
		return nil
	}
	stamp := int64(0) // turn_join.sql keeps the stamp of a tenant in the rotation
	if !in {
		if stamp, _, err = takeQueue(ctx, e, k.Queue, 1, 0); err != nil {
			return err
		}
	}
	_, err = e.ExecContext(ctx, turnJoinSQL, k.Queue, k.Tenant, stamp, nanos(due), priority != 0, nanos(now))
	return err
}

// Reap hands every lease of the queue that has expired by now to the
// policy, as a failure with contract.ErrLeaseExpired, in one transaction;
// an expired lease a cancel marked is cancelled instead (and counted).
func (q *workQueue) Reap(ctx context.Context, name string) (int, error) {
	now := q.clock.Now()
	var n int
	retried := false
	var ended []tenantKey
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		type expired struct {
			key contract.ItemKey
			held
			token int64
		}
		var list []expired
		capN, err := eventsCap(ctx, e, name)
		if err != nil {
			return err
		}
		rows, err := e.QueryContext(ctx, reapExpiredSQL, name, nanos(now))
		if err != nil {
			return err
		}
		for rows.Next() {
			x := expired{key: contract.ItemKey{Queue: name}}
			var cancelledAt int64
			if err := rows.Scan(&x.key.Tenant, &x.key.ID, &x.attempts, &x.priority, &cancelledAt, &x.token); err != nil {
				rows.Close()
				return err
			}
			x.cancelled, x.events = cancelledAt != 0, capN
			list = append(list, x)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		n, retried = 0, false
		for _, x := range list {
			if x.cancelled {
				if _, err := settleMarked(ctx, e, contract.Lease{Item: contract.Item{Queue: x.key.Queue, Tenant: x.key.Tenant, ID: x.key.ID}, Token: x.token}, nil, now); err != nil {
					return err
				}
				ended = append(ended, tenantKey{name, x.key.Tenant})
				n++
				continue
			}
			d, err := q.settleFailed(ctx, e, x.key, x.held, "", contract.ErrLeaseExpired, now)
			if err != nil {
				return err
			}
			retried = retried || d.Retry
			ended = append(ended, tenantKey{name, x.key.Tenant})
			n++
		}
		return nil
	})
	if err != nil {
		return 0, queueErr(ctx, err)
	}
	q.holds.ended(q, ended)
	if retried {
		q.wake(name)
	}
	return n, nil
}

// held is what a settle reads of the item its lease holds; cancelled
// says a cancel had marked the lease, and the item is now cancelled.
type held struct {
	attempts, snoozes, priority int
	cancelled                   bool
	// worker holds the lease; events is its queue's cap of events.
	worker string
	events int
}

// holding reads the item l holds, or returns a *contract.LeaseLostError.
// When a cancel marked the lease it cancels the item (the transaction
// should then commit and the call return a *contract.CancelledError).
func holding(ctx context.Context, e execer, l contract.Lease, now time.Time) (held, error) {
	k := l.Key()
	var h held
	var cancelledAt int64
	err := e.QueryRowContext(ctx, leaseAttemptsSQL, k.Queue, k.Tenant, k.ID, l.Token).Scan(&h.attempts, &h.snoozes, &h.priority, &cancelledAt, &h.worker, &h.events)
	if errors.Is(err, sql.ErrNoRows) {
		return held{}, &contract.LeaseLostError{Items: []contract.ItemKey{k}}
	}
	if err != nil || cancelledAt == 0 {
		return h, err
	}
	h.cancelled, err = settleMarked(ctx, e, l, nil, now)
	return h, err
}

// settleMarked cancels the item of l at now when l still holds it and a
// cancel marked it (and, when at is not nil, the lease is live at at),
// reporting whether it did.
func settleMarked(ctx context.Context, e execer, l contract.Lease, at any, now time.Time) (bool, error) {
	k := l.Key()
	var reason string
	var capN int
	err := e.QueryRowContext(ctx, leaseCancelSQL, k.Queue, k.Tenant, k.ID, l.Token, at, nanos(now)).Scan(&reason, &capN)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := finishedAdd(ctx, e, k.Queue, 1); err != nil {
		return false, err
	}
	return true, record(ctx, e, capN, k, contract.Event{Kind: contract.EventCancelled, At: now, Reason: reason}, false)
}

// deadLetter is a dead item and its place in the dead-letter order.
type deadLetter struct {
	item contract.Item
	seq  int64
}

// deadMatching calls fn on the queue's dead letters that match f, until
// fn returns false: oldest first from the place after the cursor, or
// newest first from the place at or before it (a cursor is the gap just
// after the letter of that seq, so one position serves both ways).
func deadMatching(ctx context.Context, e execer, f contract.DeadLetterFilter, newest bool, at *int64, fn func(deadLetter) bool) error {
	name := f.Queue
	text, place := deadOldestSQL, int64(-1)
	if newest {
		text, place = deadNewestSQL, int64(math.MaxInt64)
	}
	if at != nil {
		place = *at
	}
	rows, err := e.QueryContext(ctx, text, name, f.Tenant, f.ID, place)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var d deadLetter
		if d.item, _, err = scanItem(rows, &d.seq); err != nil {
			return err
		}
		if !f.Matches(d.item) {
			continue
		}
		if !fn(d) {
			break
		}
	}
	return rows.Err()
}

// DeadLetters pages through the queue's dead letters that match the
// filter, oldest first, or newest first when asked.
func (q *workQueue) DeadLetters(ctx context.Context, dq contract.DeadLetterQuery) (contract.ItemPage, error) {
	limit := dq.Page.Limit
	var at *int64
	if dq.Page.Cursor != "" {
		n, err := parseSeqCursor(dq.Page.Cursor)
		if err != nil {
			return contract.ItemPage{}, err
		}
		at = &n
	}
	out := contract.ItemPage{Items: []contract.Item{}}
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		var last int64
		skip := dq.Skip
		return deadMatching(ctx, e, dq.DeadLetterFilter, dq.Newest, at, func(d deadLetter) bool {
			if skip > 0 {
				skip--
				return true
			}
			if len(out.Items) == limit {
				out.Next = seqCursor(last)
				return false
			}
			out.Items = append(out.Items, d.item)
			last = d.seq
			if dq.Newest {
				last-- // the gap below the letter, where the next page starts
			}
			return true
		})
	})
	if err != nil {
		return contract.ItemPage{}, queueErr(ctx, err)
	}
	return out, nil
}

// Requeue moves the matching dead letters back to their queue, due now,
// with their attempts reset; LastError stays for the record.
func (q *workQueue) Requeue(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	now := q.clock.Now()
	var n int
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		keys, err := matchingKeys(ctx, e, f)
		if err != nil || len(keys) == 0 {
			n = 0
			return err
		}
		seq, err := take(ctx, e, "seq", int64(len(keys)))
		if err != nil {
			return err
		}
		capN, err := eventsCap(ctx, e, f.Queue)
		if err != nil {
			return err
		}
		seq -= int64(len(keys))
		for _, k := range keys {
			seq++
			if _, err := e.ExecContext(ctx, requeueSQL, k.key.Queue, k.key.Tenant, k.key.ID, seq, nanos(now)); err != nil {
				return err
			}
			if err := record(ctx, e, capN, k.key, contract.Event{Kind: contract.EventRequeued, At: now}, false); err != nil {
				return err
			}
			if err := join(ctx, e, k.key, now, k.priority, now); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	if err != nil {
		return 0, queueErr(ctx, err)
	}
	if n > 0 {
		q.wake(f.Queue)
	}
	return n, nil
}

// Purge deletes the matching dead letters.
func (q *workQueue) Purge(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	var n int
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		keys, err := matchingKeys(ctx, e, f)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if _, err := e.ExecContext(ctx, purgeSQL, k.key.Queue, k.key.Tenant, k.key.ID); err != nil {
				return err
			}
			if _, err := e.ExecContext(ctx, eventsDeleteSQL, k.key.Queue, k.key.Tenant, k.key.ID); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	if err != nil {
		return 0, queueErr(ctx, err)
	}
	return n, nil
}

// keyPriority is an item's key and priority.
type keyPriority struct {
	key      contract.ItemKey
	priority int
}

func matchingKeys(ctx context.Context, e execer, f contract.DeadLetterFilter) ([]keyPriority, error) {
	var keys []keyPriority
	err := deadMatching(ctx, e, f, false, nil, func(d deadLetter) bool {
		keys = append(keys, keyPriority{d.item.Key(), d.item.Priority})
		return true
	})
	return keys, err
}

// itemColumns is the column list scanItem reads, in order.
//
//	queue, tenant, id, state, payload, metadata, not_before, attempts,
//	last_error, enqueued_at, dead_at, worker, lease_expires_at, token,
//	priority, snoozes, wait_signal, wait_since, wait_until,
//	resumed_signal, resumed_payload, resumed_timed_out, resumed_at,
//	cancelled_at, cancel_reason, unique_for, finished_at
//
// scanItem reads an item row, then extra columns into extra; the lease
// is filled when the item is leased.
func scanItem(row scanner, extra ...any) (contract.Item, *contract.Lease, error) {
	var (
		it                             contract.Item
		state                          string
		meta                           sql.NullString
		notBefore, enqueued, dead, exp int64
		worker                         string
		token                          int64
		waitSignal, resSignal          string
		waitSince, waitUntil, resAt    int64
		resPayload                     []byte
		resTimedOut                    bool
		cancelled, uniqueFor, finished int64
	)
	err := row.Scan(append([]any{&it.Queue, &it.Tenant, &it.ID, &state, &it.Payload, &meta, &notBefore, &it.Attempts, &it.LastError,
		&enqueued, &dead, &worker, &exp, &token,
		&it.Priority, &it.Snoozes, &waitSignal, &waitSince, &waitUntil,
		&resSignal, &resPayload, &resTimedOut, &resAt, &cancelled, &it.CancelReason, &uniqueFor, &finished}, extra...)...)
	if err != nil {
		return it, nil, err
	}
	it.State = contract.ItemState(state)
	if meta.Valid && meta.String != "" {
		if err := json.Unmarshal([]byte(meta.String), &it.Metadata); err != nil {
			return it, nil, err
		}
	}
	if len(it.Payload) == 0 {
		it.Payload = nil
	}
	it.NotBefore, it.EnqueuedAt, it.DeadAt = fromNanos(notBefore), fromNanos(enqueued), fromNanos(dead)
	it.CancelledAt = fromNanos(cancelled)
	it.UniqueFor, it.FinishedAt = time.Duration(uniqueFor), fromNanos(finished)
	if it.State == contract.StateWaiting {
		it.Waiting = &contract.WaitInfo{Signal: waitSignal, Since: fromNanos(waitSince), Until: fromNanos(waitUntil)}
	}
	if resAt != 0 {
		if len(resPayload) == 0 {
			resPayload = nil
		}
		it.Resumed = &contract.Resume{Signal: resSignal, Payload: resPayload, TimedOut: resTimedOut, At: fromNanos(resAt)}
	}
	if it.State != contract.StateLeased {
		return it, nil, nil
	}
	return it, &contract.Lease{Item: it, Worker: worker, ExpiresAt: fromNanos(exp), Token: token}, nil
}

// scanClaimed reads the lease a claim or a heartbeat returns: the columns
// of itemColumns up to token, then priority, snoozes, resumed_at and
// unique_for. A
// leased item has no wait and no cancel to show (a cancel's mark stops
// the heartbeat), and the few that were resumed from a wait have their
// Resume read by one more statement, so a claim of items that never
// waited reads three columns more than before the lifecycle controls.
func scanClaimed(ctx context.Context, e execer, row scanner) (contract.Lease, error) {
	var (
		it                             contract.Item
		state                          string
		meta                           sql.NullString
		notBefore, enqueued, dead, exp int64
		worker                         string
		token                          int64
		priority, snoozes, resumedAt   any
		uniqueFor                      any
	)
	err := row.Scan(&it.Queue, &it.Tenant, &it.ID, &state, &it.Payload, &meta, &notBefore, &it.Attempts, &it.LastError,
		&enqueued, &dead, &worker, &exp, &token, &priority, &snoozes, &resumedAt, &uniqueFor)
	if err != nil {
		return contract.Lease{}, err
	}
	it.State = contract.ItemState(state)
	if it.State != contract.StateLeased {
		return contract.Lease{}, errors.New("sqlitestore: a lease statement returned an item that is not leased")
	}
	if meta.Valid && meta.String != "" {
		if err := json.Unmarshal([]byte(meta.String), &it.Metadata); err != nil {
			return contract.Lease{}, err
		}
	}
	if len(it.Payload) == 0 {
		it.Payload = nil
	}
	it.NotBefore, it.EnqueuedAt, it.DeadAt = fromNanos(notBefore), fromNanos(enqueued), fromNanos(dead)
	it.Priority, it.Snoozes = int(asInt64(priority)), int(asInt64(snoozes))
	it.UniqueFor = time.Duration(asInt64(uniqueFor))
	if at := asInt64(resumedAt); at != 0 {
		r := contract.Resume{At: fromNanos(at)}
		if err := e.QueryRowContext(ctx, resumedGetSQL, it.Queue, it.Tenant, it.ID).Scan(&r.Signal, &r.Payload, &r.TimedOut); err != nil {
			return contract.Lease{}, err
		}
		if len(r.Payload) == 0 {
			r.Payload = nil
		}
		it.Resumed = &r
	}
	return contract.Lease{Item: it, Worker: worker, ExpiresAt: fromNanos(exp), Token: token}, nil
}

// asInt64 is an INTEGER column scanned into an any: the driver's int64.
func asInt64(v any) int64 {
	n, _ := v.(int64)
	return n
}

// scanLease reads a leased item row.
func scanLease(row scanner) (contract.Lease, error) {
	_, l, err := scanItem(row)
	if err != nil {
		return contract.Lease{}, err
	}
	if l == nil {
		return contract.Lease{}, errors.New("sqlitestore: a lease statement returned an item that is not leased")
	}
	return *l, nil
}
