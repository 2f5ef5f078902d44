package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// PostgresWorkQueue is a contract.WorkQueue on PostgreSQL tables. A claim
// batch is one statement that locks its items with FOR UPDATE SKIP LOCKED
// while it walks the tenant rotation; every settle is fenced on the lease
// token, which comes from a sequence. It is safe for concurrent use.
//
// Its queue methods are the contract's front door ([contract.QueueFront]),
// which checks every call before the queue's driver sees it. It enforces
// tenant limits in the claim ([contract.FlowController]): caps, rates,
// weights and budgets, kept in the schema's limits and usage tables.
type PostgresWorkQueue struct {
	contract.QueueFront
	d *workQueue
}

// workQueue is the driver behind a PostgresWorkQueue's front door: it is
// called only with input the front has checked and normalised.
type workQueue struct {
	db       *db
	clock    contract.Clock
	settings Settings
	q        queries
	channel  string
	parks    *parkTimes
	limited  *queueFlags
	prio     *queueFlags
	events   *queueFlags
	keeps    *queueFlags
}

var (
	_ contract.WorkQueue   = (*PostgresWorkQueue)(nil)
	_ contract.Waker       = (*PostgresWorkQueue)(nil)
	_ contract.Inspector   = (*PostgresWorkQueue)(nil)
	_ contract.StatsSource = (*PostgresWorkQueue)(nil)

	_ contract.CompleteClaimer = (*PostgresWorkQueue)(nil)
	_ contract.FlowController  = (*PostgresWorkQueue)(nil)
	_ contract.QueueDriver     = (*workQueue)(nil)
)

// OpenQueue returns a queue on exec after Verify has accepted the
// database.
func OpenQueue(ctx context.Context, exec Executor, clock contract.Clock, s Settings) (*PostgresWorkQueue, error) {
	q, err := NewQueue(exec, clock, s)
	if err != nil {
		return nil, err
	}
	if err := Verify(ctx, exec, q.d.settings.Tables); err != nil {
		return nil, err
	}
	return q, nil
}

// NewQueue returns a queue on exec without verifying the database. It
// refuses table names that are not plain identifiers. A nil clock means
// the system clock.
func NewQueue(exec Executor, clock contract.Clock, s Settings) (*PostgresWorkQueue, error) {
	s, clock, err := prepare(exec, clock, s)
	if err != nil {
		return nil, err
	}
	return (&workQueue{
		db: newDB(exec, s.AcquireTimeout), clock: clock, settings: s,
		q: loadQueries(s.Tables), channel: s.Channel, parks: &parkTimes{last: map[string]parkMark{}},
		limited: &queueFlags{m: map[string]bool{}},
		prio:    &queueFlags{m: map[string]bool{}},
		events:  &queueFlags{m: map[string]bool{}},
		keeps:   &queueFlags{m: map[string]bool{}},
	}).front(), nil
}

func (q *workQueue) front() *PostgresWorkQueue {
	return &PostgresWorkQueue{QueueFront: contract.NewQueueFront(q, q.settings.MaxValueBytes, "postgresql"), d: q}
}

// NotifyChannel is the default channel of a queue's NOTIFY: the work
// table's name. The payload is the queue name.
func NotifyChannel(t StateTables) string {
	if t.Work == "" {
		return DefaultTables().Work
	}
	return t.Work
}

// Channel returns the NOTIFY channel of the queue's wakes: the one to
// LISTEN on.
func (q *PostgresWorkQueue) Channel() string { return q.d.channel }

// Bound returns a queue that runs every call inside tx, the caller's
// transaction: an enqueue commits with the run that asked for it, and
// its NOTIFY is delivered only then. It retries nothing.
func (q *PostgresWorkQueue) Bound(tx pgx.Tx) *PostgresWorkQueue {
	b := *q.d
	b.db = q.d.db.boundTo(tx)
	return b.front()
}

// Enqueue adds the items in one statement, all or none. An ID already
// queued, leased, waiting, dead or cancelled in its queue, or completed
// within its uniqueness window, is left as it is, as is a repeat within
// the batch; a completed item past its window is replaced.
func (q *workQueue) Enqueue(ctx context.Context, items ...contract.Item) error {
	_, err := q.enqueue(ctx, items, false)
	return err
}

// enqueue runs enqueue.sql and, when report is set, says item by item
// what it did.
func (q *workQueue) enqueue(ctx context.Context, items []contract.Item, report bool) ([]contract.EnqueueResult, error) {
	flagged := ""
	for _, it := range items {
		// A queue given priorities is claimed with a rendering of
		// claim.sql that serves them from now on; flagged here, its
		// next claim need not find out.
		if it.Priority != 0 && it.Queue != flagged {
			q.prio.set(it.Queue, true)
			flagged = it.Queue
		}
	}
	now := q.clock.Now()
	n := len(items)
	var (
		queues, tenants, ids = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		payloads             = make([][]byte, 0, n)
		metas                = make([]*string, 0, n)
		notBefore, due       = make([]*time.Time, 0, n), make([]time.Time, 0, n)
		priorities           = make([]int32, 0, n)
		uniqueFor            = make([]int64, 0, n)
		seen                 = make(map[contract.ItemKey]int, n)
		first                = make([]int, n) // the index in the statement of each item's first entry
	)
	for i, it := range items {
		k := it.Key()
		if j, ok := seen[k]; ok {
			first[i] = -1 - j
			continue
		}
		seen[k] = len(queues)
		first[i] = len(queues)
		queues, tenants, ids = append(queues, k.Queue), append(tenants, k.Tenant), append(ids, k.ID)
		payloads = append(payloads, it.Payload)
		var meta *string
		if len(it.Metadata) > 0 {
			b, err := json.Marshal(it.Metadata)
			if err != nil {
				return nil, &contract.ValidationError{Field: "Item.Metadata", Problem: err.Error()}
			}
			s := string(b)
			meta = &s
		}
		metas = append(metas, meta)
		if it.NotBefore.IsZero() {
			notBefore = append(notBefore, nil)
		} else {
			nb := it.NotBefore
			notBefore = append(notBefore, &nb)
		}
		due = append(due, later(it.NotBefore, now))
		priorities = append(priorities, int32(it.Priority))
		uniqueFor = append(uniqueFor, it.UniqueFor.Microseconds())
	}
	share := q.turnLocks(distinctTenants(queues, tenants))
	args := []any{queues, tenants, ids, payloads, metas, notBefore, due, now, q.channel, priorities, uniqueFor, report}
	results := make([]contract.EnqueueResult, len(queues))
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		return q.db.plannedRows(ctx, e, q.q.enqueue, "", args, func(rows pgx.Rows) error {
			var (
				ord         int64
				added       bool
				state       *string
				uniqueUntil *time.Time
				woke        int64
			)
			if err := rows.Scan(&ord, &added, &state, &uniqueUntil, &woke); err != nil {
				return err
			}
			if !report || ord < 1 || int(ord) > len(results) {
				return nil
			}
			r := contract.EnqueueResult{}
			if !added {
				r.Duplicate, r.State = true, contract.StateQueued
				if state != nil {
					r.State = contract.ItemState(*state)
				}
				if uniqueUntil != nil && r.State == contract.StateCompleted {
					r.UniqueUntil = utc(*uniqueUntil)
				}
			}
			results[ord-1] = r
			return nil
		}, share)
	})
	if err != nil || !report {
		return nil, queueErr(err)
	}
	out := make([]contract.EnqueueResult, n)
	for i, f := range first {
		if f >= 0 {
			out[i] = results[f]
			continue
		}
		// A repeat within the batch: a duplicate of the entry that won.
		r := results[-1-f]
		if !r.Duplicate {
			r = contract.EnqueueResult{Duplicate: true, State: contract.StateQueued}
		}
		out[i] = r
	}
	return out, nil
}

// turnLocks is the statement that takes the shared side of the turn
// locks (queries/turns_share.sql) of the (queue, tenant) pairs of the
// parallel arrays, each pair given once and in key order (distinctTenants
// gives them so): the first statement of a transaction that makes items
// of those tenants due.
func (q *workQueue) turnLocks(queues, tenants []string) stmt {
	return stmt{sql: q.q.turnsShare, args: []any{queues, tenants}}
}

// distinctTenants returns each (queue, tenant) pair of the parallel
// arrays once, in key order.
func distinctTenants(queues, tenants []string) ([]string, []string) {
	type pair struct{ queue, tenant string }
	seen := make(map[pair]bool, len(queues))
	var ps []pair
	for i := range queues {
		p := pair{queues[i], tenants[i]}
		if !seen[p] {
			seen[p] = true
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b pair) int { return cmp.Or(cmp.Compare(a.queue, b.queue), cmp.Compare(a.tenant, b.tenant)) })
	qs, ts := make([]string, len(ps)), make([]string, len(ps))
	for i, p := range ps {
		qs[i], ts[i] = p.queue, p.tenant
	}
	return qs, ts
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Claim leases up to req.Max due items in one statement, one per tenant
// per turn in rotation order, round after round. A queue with limits is
// claimed by queries/claim_flow.sql, which passes held tenants over and
// reports them to the context's contract.ClaimReport.
func (q *workQueue) Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	return q.claimWith(ctx, req, nil)
}

// claimWith claims as Claim does; with complete set, it first runs that
// Complete statement in the claim's own transaction (CompleteAndClaim).
func (q *workQueue) claimWith(ctx context.Context, req contract.ClaimRequest, complete *completion) ([]contract.Lease, error) {
	name := req.Queue
	var leases []contract.Lease
	completed := false
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		leases = leases[:0]
		var prelude []stmt
		if complete != nil && !completed {
			prelude = append(prelude, complete.stmt(q, false))
		}
		timeoutsEnded := false
		for try := 0; ; try++ {
			limited := q.limited.get(name)
			var err error
			var timedOut bool
			leases, timedOut, err = q.claimOnce(ctx, e, req, limited, prelude)
			if err == nil && timedOut && !timeoutsEnded {
				// Waits of the queue timed out: they are made due, and a
				// claim that found nothing else claims again to serve them.
				timeoutsEnded = true
				completed = complete != nil
				prelude = nil
				if err := q.endWaits(ctx, e, name); err != nil {
					return err
				}
				if len(leases) == 0 {
					continue
				}
			}
			if err == nil {
				if len(leases) == 0 {
					q.parkAfter(ctx, e, name)
				}
				return nil
			}
			if !errors.Is(err, errLimited) && !errors.Is(err, errFull) || try > 2 {
				return err
			}
			// claim.sql met limits set since this process last looked, or
			// its lean or events rendering met events or priorities; its
			// transaction (with the Complete, if any) committed, and
			// claimed nothing. The flags only move towards the statements
			// that serve more, so three tries suffice before the one that
			// claims: say lean, events, full claim.sql, claim_flow.sql.
			completed = complete != nil
			prelude = nil
		}
	})
	if err != nil {
		return nil, queueErr(err)
	}
	if complete != nil {
		if err := q.unsettled(ctx, complete); err != nil {
			return leases, err
		}
	}
	if len(leases) == 0 {
		return nil, contract.ErrEmpty
	}
	return leases, nil
}

var _ contract.CompleteClaimer = (*PostgresWorkQueue)(nil)

// CompleteAndClaim completes done and claims req in one transaction: one
// round trip and one commit instead of two, the Complete's DELETE running
// first in the claim's pipelined batch. Lost leases are named in a
// *contract.LeaseLostError returned beside the claimed leases; if the
// call fails otherwise, nothing of it committed.
func (q *workQueue) CompleteAndClaim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest) ([]contract.Lease, error) {
	switch {
	case req.Max == 0:
		return nil, q.Complete(ctx, done...)
	case len(done) == 0:
		return q.Claim(ctx, req)
	}
	return q.claimWith(ctx, req, newCompletion(done))
}

// Heartbeat extends a live lease to now+extend under a new token.
func (q *workQueue) Heartbeat(ctx context.Context, l contract.Lease, extend time.Duration) (contract.Lease, error) {
	now := q.clock.Now()
	k := l.Key()
	var out contract.Lease
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		rows, err := e.Query(ctx, q.q.heartbeat, k.Queue, k.Tenant, k.ID, l.Token, now.Add(extend), now)
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return err
			}
			rows.Close()
			// Lost, or live with its cancel pending: then it is cancelled.
			cancelled, err := q.settleCancels(ctx, e, []contract.Lease{l}, true)
			if err != nil {
				return err
			}
			if cancelled[k] {
				return &contract.CancelledError{Items: []contract.ItemKey{k}}
			}
			return &contract.LeaseLostError{Items: []contract.ItemKey{k}}
		}
		out, err = scanLease(rows)
		return err
	})
	return out, queueErr(err)
}

// Complete removes the items of the leases in one statement, each fenced
// by its own token; the leases that no longer hold are named in the
// returned *contract.LeaseLostError and left untouched.
func (q *workQueue) Complete(ctx context.Context, leases ...contract.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	c := newCompletion(leases)
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		st := c.stmt(q, true)
		if err := q.db.plannedRows(ctx, e, st.sql, st.settings, st.args, st.scan); err != nil {
			return err
		}
		if c.needFull {
			// The lean Complete met a retention row another process set:
			// it deleted nothing, and the batch goes again, in full.
			for _, name := range c.names {
				q.keeps.set(name, true)
			}
			st = c.stmt(q, false)
			if err := q.db.plannedRows(ctx, e, st.sql, st.settings, st.args, st.scan); err != nil {
				return err
			}
		}
		for _, name := range c.names {
			q.parkAfter(ctx, e, name)
		}
		return nil
	})
	if err != nil {
		return queueErr(err)
	}
	return q.unsettled(ctx, c)
}

// unsettled returns the error of the leases c did not complete: those
// whose cancel is pending are cancelled now (cancel_settle.sql) and named
// in a *contract.CancelledError, the others in a *contract.LeaseLostError
// (contract.SettleError); nil when c completed every lease.
func (q *workQueue) unsettled(ctx context.Context, c *completion) error {
	left := c.left()
	if left == nil {
		return nil
	}
	cancelled, err := q.settleCancels(ctx, nil, left, false)
	if err != nil {
		return queueErr(err)
	}
	var lost, gone []contract.ItemKey
	for _, l := range left {
		if cancelled[l.Key()] {
			delete(cancelled, l.Key())
			gone = append(gone, l.Key())
		} else {
			lost = append(lost, l.Key())
		}
	}
	return contract.SettleError(lost, gone)
}

// wakeFreed has the claimers of each of queues woken (on commit, inside
// a transaction) when it had limits at this process's last claim: a
// lease that ended there may have freed a tenant held at its cap.
// Complete checks the cap first (complete_flow.sql); the rarer ends of a
// lease this serves, a snooze, a wait and a cancel settling, wake
// without checking, which costs a claimer a claim at worst.
func (q *workQueue) wakeFreed(ctx context.Context, e Executor, queues ...string) error {
	for _, name := range queues {
		if !q.limited.get(name) {
			continue
		}
		if err := Notify(ctx, e, q.channel, name); err != nil {
			return err
		}
	}
	return nil
}

// settleCancels moves the leases among ls whose cancel is pending to
// cancelled (only live ones when live is set) and returns their keys; on
// e when it is given, else in a call of its own.
func (q *workQueue) settleCancels(ctx context.Context, e Executor, ls []contract.Lease, live bool) (map[contract.ItemKey]bool, error) {
	n := len(ls)
	queues, tenants, ids, tokens := make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, l := range ls {
		k := l.Key()
		queues[i], tenants[i], ids[i], tokens[i] = k.Queue, k.Tenant, k.ID, l.Token
	}
	out := map[contract.ItemKey]bool{}
	do := func(ctx context.Context, e Executor) error {
		clear(out)
		rows, err := e.Query(ctx, q.q.cancelSettle, queues, tenants, ids, tokens, live, q.clock.Now())
		if err != nil {
			return err
		}
		err = readRows(rows, func(rows pgx.Rows) error {
			var k contract.ItemKey
			if err := rows.Scan(&k.Queue, &k.Tenant, &k.ID); err != nil {
				return err
			}
			out[k] = true
			return nil
		})
		if err != nil || len(out) == 0 {
			return err
		}
		freed := make([]string, 0, 1)
		for k := range out {
			if !slices.Contains(freed, k.Queue) {
				freed = append(freed, k.Queue)
			}
		}
		return q.wakeFreed(ctx, e, freed...)
	}
	if e != nil {
		return out, do(ctx, e)
	}
	return out, q.db.run(ctx, do)
}

// completion is one Complete statement: the leases in key order (two
// batches that overlap then lock their rows in one order) as the
// statement's arrays, and the token each completed item was completed
// under. An entry counts as completed once, so the leases settle in order
// as separate calls would: of two entries for one item, the one holding
// the token completed it and the other was lost.
type completion struct {
	leases               []contract.Lease
	queues, tenants, ids []string
	// names are the batch's queues, each once.
	names  []string
	tokens []int64
	done   map[contract.ItemKey]int64
	// unique: an item asked for a uniqueness window, so the batch is
	// never completed by the lean statement. needFull: the lean statement
	// met a retention row and completed nothing.
	unique, needFull bool
}

func newCompletion(leases []contract.Lease) *completion {
	sorted := slices.Clone(leases)
	slices.SortFunc(sorted, func(a, b contract.Lease) int { return compareKeys(a.Key(), b.Key()) })
	n := len(sorted)
	c := &completion{leases: leases, queues: make([]string, n), tenants: make([]string, n), ids: make([]string, n), tokens: make([]int64, n),
		done: make(map[contract.ItemKey]int64, n)}
	for i, l := range sorted {
		k := l.Key()
		c.queues[i], c.tenants[i], c.ids[i], c.tokens[i] = k.Queue, k.Tenant, k.ID, l.Token
		c.unique = c.unique || l.Item.UniqueFor > 0
	}
	c.names = slices.Compact(slices.Clone(c.queues))
	return c
}

// stmt is the statement, its scan recording the deleted items; each try
// of a retried call starts from none. A batch with a queue that has
// limits runs complete_flow.sql, the others complete.sql. With lean set,
// a batch that keeps nothing (no queue of it has a retention row that
// this process knows of, no item asked for a uniqueness window) runs the
// lean rendering, which may complete nothing and set needFull instead;
// the caller then runs stmt again without lean.
func (c *completion) stmt(q *workQueue, lean bool) stmt {
	clear(c.done)
	c.needFull = false
	lean = lean && !c.unique
	flow := false
	for _, name := range c.names {
		// A queue with limits: the statement also wakes claimers when a
		// capped tenant's lease ends.
		flow = flow || q.limited.get(name)
		lean = lean && !q.keeps.get(name)
	}
	args := []any{c.queues, c.tenants, c.ids, c.tokens, q.clock.Now()}
	var sql string
	switch {
	case flow:
		sql, args = q.q.completeFlow, append(args, q.channel)
		if lean {
			sql = q.q.completeFlowLean
		}
	case lean:
		sql, args = q.q.completeLean, args[:4] // it keeps nothing, so it needs no time
	default:
		sql = q.q.complete
	}
	settings := q.q.completeSettings
	if lean {
		settings = q.q.completeLeanSettings
	}
	return stmt{sql: sql, args: args, settings: settings, scan: func(rows pgx.Rows) error {
		var k contract.ItemKey
		var token int64
		dest := []any{&k.Queue, &k.Tenant, &k.ID, &token}
		if flow {
			var woke int64
			dest = append(dest, &woke)
		}
		err := rows.Scan(dest...)
		switch {
		case err != nil:
		case lean && k.Queue == "" && token == 0:
			c.needFull = true
		default:
			c.done[k] = token
		}
		return err
	}}
}

// left returns the leases the statement did not delete, nil when none.
func (c *completion) left() []contract.Lease {
	var left []contract.Lease
	done := maps.Clone(c.done)
	for _, l := range c.leases {
		if token, ok := done[l.Key()]; ok && token == l.Token {
			delete(done, l.Key())
			continue
		}
		left = append(left, l)
	}
	return left
}

func compareKeys(a, b contract.ItemKey) int {
	return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.ID, b.ID))
}

// failed is one lease to settle as failed.
type failed struct {
	tenant, id string
	worker     string // "" for an expired lease
	token      int64
	attempts   int // what decision was made on
	decision   policy.Decision
	lastError  string
}

// Fail records cause against the lease and retries or dead-letters the
// item as the policy decides on its attempts: those the lease carries,
// and again those of the row should they differ (settleLease).
func (q *workQueue) Fail(ctx context.Context, l contract.Lease, cause error) (policy.Decision, error) {
	k := l.Key()
	var d policy.Decision
	err := q.settleLease(ctx, l, func(ctx context.Context, e Executor, h heldLease, now time.Time, own bool) (bool, error) {
		d = q.settings.Policy.Decide(h.attempts+1, cause, now)
		n, err := q.settle(ctx, e, k.Queue, now, []failed{{tenant: k.Tenant, id: k.ID, worker: h.worker, token: l.Token, attempts: h.attempts, decision: d, lastError: contract.ErrorText(cause)}}, own)
		return n > 0, err
	})
	if err != nil {
		return policy.Decision{}, err
	}
	return d, nil
}

// heldLease is what a settle decides on: the lease's item as a lease
// value carries it, or as queries/lease_lock.sql read it under the lock
// (settleLease).
type heldLease struct {
	attempts, snoozes int
	worker            string
}

// lockLease locks the lease l in e's transaction. A lost lease is a
// *contract.LeaseLostError; one whose cancel is pending is cancelled now
// and is a *contract.CancelledError (the transaction should commit).
func (q *workQueue) lockLease(ctx context.Context, e Executor, l contract.Lease) (heldLease, error) {
	k := l.Key()
	var h heldLease
	var marked bool
	err := e.QueryRow(ctx, q.q.leaseLock, k.Queue, k.Tenant, k.ID, l.Token).Scan(&h.attempts, &h.snoozes, &marked, &h.worker)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return h, &contract.LeaseLostError{Items: []contract.ItemKey{k}}
	case err != nil:
		return h, err
	case marked:
		if _, err := q.settleCancels(ctx, e, []contract.Lease{l}, false); err != nil {
			return h, err
		}
		return h, &contract.CancelledError{Items: []contract.ItemKey{k}}
	}
	return h, nil
}

// settle writes the decisions in one statement, after the tenants' turn
// locks when any item goes back to the queue, and returns how many leases
// still held their tokens (and were as their decisions saw them). own:
// the statements run in a transaction of their own on e (one pipelined
// round trip), else in e's.
func (q *workQueue) settle(ctx context.Context, e Executor, queue string, now time.Time, fs []failed, own bool) (int, error) {
	n := len(fs)
	tenants, ids, tokens := make([]string, n), make([]string, n), make([]int64, n)
	retry, due, errs, workers, attempts := make([]bool, n), make([]time.Time, n), make([]string, n), make([]string, n), make([]int32, n)
	for i, f := range fs {
		tenants[i], ids[i], tokens[i], workers[i], attempts[i] = f.tenant, f.id, f.token, f.worker, int32(f.attempts)
		retry[i], errs[i] = f.decision.Retry, f.lastError
		due[i] = now
		if f.decision.Retry {
			due[i] = f.decision.At
		}
	}
	var lock []stmt
	if slices.Contains(retry, true) {
		// A retry makes an item due: the statement that does it must start
		// with the tenants' turn locks held (turns_share.sql).
		lock = append(lock, q.turnLocks(distinctTenants(slices.Repeat([]string{queue}, n), tenants)))
	}
	args := []any{queue, tenants, ids, tokens, retry, due, errs, now, q.channel, workers, attempts}
	settled := 0
	err := q.db.runAfter(ctx, e, own, q.q.settleFailed, args, func(pgx.Rows) error { settled++; return nil }, lock...)
	return settled, err
}

// reapChunk bounds the leases one reap transaction locks.
const reapChunk = 500

// Reap hands every lease of the queue that expired by now to the policy,
// as a failure with contract.ErrLeaseExpired, in chunks of one
// transaction each. A lease heartbeated meanwhile is kept.
func (q *workQueue) Reap(ctx context.Context, name string) (int, error) {
	total := 0
	for {
		n, locked := 0, 0
		err := q.db.tx(ctx, func(ctx context.Context, e Executor) error {
			now := q.clock.Now()
			rows, err := e.Query(ctx, q.q.reapLock, name, now, reapChunk)
			if err != nil {
				return err
			}
			var fs []failed
			var marked []contract.Lease
			for rows.Next() {
				var f failed
				var attempts int
				var cancel bool
				if err := rows.Scan(&f.tenant, &f.id, &f.token, &attempts, &cancel); err != nil {
					rows.Close()
					return err
				}
				if cancel {
					marked = append(marked, contract.Lease{Item: contract.Item{Queue: name, Tenant: f.tenant, ID: f.id}, Token: f.token})
					continue
				}
				f.attempts = attempts
				f.decision = q.settings.Policy.Decide(attempts+1, contract.ErrLeaseExpired, now)
				f.lastError = contract.ErrorText(contract.ErrLeaseExpired)
				fs = append(fs, f)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			locked = len(fs) + len(marked)
			n = 0
			if len(marked) > 0 {
				// Expired leases whose cancel is pending are cancelled, not
				// retried.
				cancelled, err := q.settleCancels(ctx, e, marked, false)
				if err != nil {
					return err
				}
				n = len(cancelled)
			}
			if len(fs) == 0 {
				return nil
			}
			settled, err := q.settle(ctx, e, name, now, fs, false)
			n += settled
			return err
		})
		if err != nil {
			return total, queueErr(err)
		}
		total += n
		if locked < reapChunk || q.db.bound {
			break
		}
	}
	if q.db.bound {
		return total, nil
	}
	if err := q.pruneTurns(ctx, name); err != nil {
		return total, queueErr(err)
	}
	return total, queueErr(q.park(ctx, name))
}

// ownsConn reports whether e is an idle connection of the queue's own.
func (q *workQueue) ownsConn(e Executor) bool {
	_, _, ok := q.db.ownedConn(e)
	return ok
}

// parkAfter runs queue's park pass on e when one is due: on the
// connection of a claim that found nothing or of a Complete, after its
// statement has committed, never before a claim. A claim that has work to
// hand out is what a woken worker waits for, and a pass is three round
// trips (measured: about 3 ms on a loaded machine, once a second, which
// was the p99 of the wake latency); a claim that found nothing and a
// Complete have no one waiting on their work. A busy queue completes, and
// a drained one claims in vain, so its idle tenants are still parked
// within about a second. Never inside a transaction of the caller's (the
// pass's exclusive turn locks would be held until the caller commits).
// Best effort: a pass that fails parks nothing, which costs the claims
// until the next pass a probe per idle tenant and nothing else; Reap runs
// the same pass and reports its errors.
func (q *workQueue) parkAfter(ctx context.Context, e Executor, queue string) {
	if q.db.bound || !q.ownsConn(e) || !q.parks.due(queue, q.clock.Now()) {
		return
	}
	_ = inTx(ctx, e, q.parkOn(queue))
}

// parkEvery is how often a queue's claims and Completes run a park pass,
// while the passes find fewer than a chunk of tenants to park.
const parkEvery = time.Second

// parkTimes remembers each queue's last park pass.
type parkTimes struct {
	mu   sync.Mutex
	last map[string]parkMark
}

// parkMark is a queue's last park pass: when it ran, and whether it found
// a whole chunk (reapChunk) of candidates. Then there may be more, so
// the next empty claim or Complete runs another pass rather than wait for
// parkEvery. Without it, tenants going idle faster than a chunk a second (thousands drained
// by a burst of claims) would stay in the rotation, every claim probing
// each of them, for as many seconds as they make chunks, or for good.
type parkMark struct {
	at   time.Time
	more bool
}

// due reports whether queue's next park pass is due at now, and if so
// counts it as run: one caller runs it, the others go on claiming.
func (p *parkTimes) due(queue string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if last, ok := p.last[queue]; ok && !last.more && now.Sub(last.at) < parkEvery && !now.Before(last.at) {
		return false
	}
	p.last[queue] = parkMark{at: now}
	return true
}

// found records how many candidates a pass of queue found.
func (p *parkTimes) found(queue string, n int) {
	if n < reapChunk {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.last[queue]
	m.more = true
	p.last[queue] = m
}

// park parks up to reapChunk tenants of the queue that have nothing due,
// so that claims pass over their turn rows until their earliest item is
// due (queries/park.sql). Each is parked under the exclusive side of its
// turn lock, in a statement that starts after the lock is taken; a tenant
// with an enqueue, retry or requeue in flight is left for the next pass.
func (q *workQueue) park(ctx context.Context, queue string) error {
	return q.db.tx(ctx, q.parkOn(queue))
}

// parkOn returns the park pass of queue, to run in a transaction.
func (q *workQueue) parkOn(queue string) func(ctx context.Context, e Executor) error {
	return func(ctx context.Context, e Executor) error {
		// The claim's planner settings, local to this transaction: both
		// statements find a tenant's earliest item in adk_work_ready and
		// adk_work_ready_due, which on a table without statistics yet the
		// planner would rather reach through the primary key, reading
		// every item of the tenant (13 ms for 20,000 items).
		if _, err := e.Exec(ctx, q.q.claimSettings); err != nil {
			return err
		}
		now := q.clock.Now()
		n, err := q.underTurnLocks(ctx, e, queue, stmt{sql: q.q.parkCandidates, args: []any{queue, now, reapChunk}},
			func(locked []string) stmt { return stmt{sql: q.q.park, args: []any{queue, locked, now}} })
		if err == nil {
			q.parks.found(queue, n)
		}
		return err
	}
}

// underTurnLocks runs candidates (whose rows are tenants of queue), takes
// the exclusive side of each tenant's turn lock without waiting
// (queries/turns_lock.sql), and runs the statement act makes for the
// tenants it locked, which therefore starts after the locks. It returns
// how many candidates there were.
func (q *workQueue) underTurnLocks(ctx context.Context, e Executor, queue string, candidates stmt, act func(locked []string) stmt) (int, error) {
	rows, err := e.Query(ctx, candidates.sql, candidates.args...)
	if err != nil {
		return 0, err
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tenants) == 0 {
		return 0, err
	}
	rows, err = e.Query(ctx, q.q.turnsLock, queue, tenants)
	if err != nil {
		return len(tenants), err
	}
	locked, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(locked) == 0 {
		return len(tenants), err
	}
	s := act(locked)
	_, err = e.Exec(ctx, s.sql, s.args...)
	return len(tenants), err
}

// pruneTurns deletes the turn rows of tenants that hold nothing in the
// queue and were not served within TurnRetention, so tenants that come
// and go do not each cost every claim a probe. A pruned tenant that
// returns joins the rotation at the back, as any new tenant does.
func (q *workQueue) pruneTurns(ctx context.Context, queue string) error {
	cutoff := q.clock.Now().Add(-q.settings.TurnRetention)
	for {
		var n int
		err := q.db.tx(ctx, func(ctx context.Context, e Executor) error {
			var err error
			n, err = q.underTurnLocks(ctx, e, queue, stmt{sql: q.q.pruneCandidates, args: []any{queue, cutoff, reapChunk, contract.UnixMicros(q.clock.Now())}},
				func(locked []string) stmt { return stmt{sql: q.q.pruneDelete, args: []any{queue, locked}} })
			return err
		})
		if err != nil || n < reapChunk {
			return err
		}
	}
}

// DeadLetters pages through the dead letters matching the filter, oldest
// first or newest first. A cursor is the place just after the letter of
// its seq: oldest first goes on after it, newest first from that letter
// down, which is how a listing turns around.
func (q *workQueue) DeadLetters(ctx context.Context, dq contract.DeadLetterQuery) (contract.ItemPage, error) {
	limit := dq.Page.Limit
	after, err := parseSeqCursor(dq.Page.Cursor)
	if err != nil {
		return contract.ItemPage{}, err
	}
	f := dq.DeadLetterFilter
	query, from := q.q.deadList, after
	if dq.Newest {
		query = q.q.deadListNewest
		if dq.Page.Cursor == "" {
			from = math.MaxInt64
		}
	}
	out := contract.ItemPage{Items: []contract.Item{}}
	var lastSeq int64
	err = q.db.run(ctx, func(ctx context.Context, e Executor) error {
		out.Items = out.Items[:0]
		rows, err := e.Query(ctx, query, f.Queue, f.Tenant, f.ID, f.ErrorContains, from, limit+1, dq.Skip)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var seq int64
			l, err := scanLease(rows, &seq)
			if err != nil {
				return err
			}
			if len(out.Items) < limit {
				out.Items = append(out.Items, l.Item)
				lastSeq = seq
				if dq.Newest {
					lastSeq-- // the place below the letter, where the next page starts
				}
			} else {
				out.Next = seqCursor(lastSeq)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return contract.ItemPage{}, queueErr(err)
	}
	return out, nil
}

// Requeue moves the matching dead letters back to their queue, due now,
// attempts reset, in one statement.
func (q *workQueue) Requeue(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	var moved int
	name := f.Queue
	err := q.db.tx(ctx, func(ctx context.Context, e Executor) error {
		moved = 0
		rows, err := e.Query(ctx, q.q.requeueLock, name, f.Tenant, f.ID, f.ErrorContains)
		if err != nil {
			return err
		}
		locked, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(locked) == 0 {
			return err
		}
		var woke int
		return e.QueryRow(ctx, q.q.requeue, name, f.Tenant, f.ID, f.ErrorContains, q.clock.Now(), q.channel, locked).Scan(&moved, &woke)
	})
	return moved, queueErr(err)
}

// Purge deletes the matching dead letters in one statement.
func (q *workQueue) Purge(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	var n int
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		return e.QueryRow(ctx, q.q.purge, f.Queue, f.Tenant, f.ID, f.ErrorContains).Scan(&n)
	})
	return n, queueErr(err)
}

// scanLease reads the item columns (queries/fragments/item_columns.sql),
// then any extra destinations.
func scanLease(rows pgx.Rows, extra ...any) (contract.Lease, error) {
	return scanLeaseAfter(rows, nil, extra...)
}

// scanLeaseAfter reads the columns before into their destinations, then
// the item columns as scanLease does, then extra.
func scanLeaseAfter(rows pgx.Rows, before []any, extra ...any) (contract.Lease, error) {
	var (
		l                            contract.Lease
		it                           = &l.Item
		state                        string
		meta                         []byte
		notBefore, deadAt, expiresAt *time.Time
		worker                       *string
		token                        *int64
		lc                           lifecycleColumns
		uniqueForUS                  int64
		finishedAt                   *time.Time
	)
	dest := append(append(before, &it.Queue, &it.Tenant, &it.ID, &state, &it.Payload, &meta, &notBefore, &it.Attempts,
		&it.LastError, &it.EnqueuedAt, &deadAt, &worker, &expiresAt, &token,
		&it.Priority, &it.Snoozes, &lc.waitSignal, &lc.waitSince, &lc.waitUntil, &lc.resumedSignal, &lc.resumedPayload,
		&lc.resumedTimedOut, &lc.resumedAt, &lc.cancelledAt, &lc.cancelReason, &uniqueForUS, &finishedAt), extra...)
	if err := rows.Scan(dest...); err != nil {
		return l, err
	}
	it.State = contract.ItemState(state)
	lc.fill(it)
	it.UniqueFor = time.Duration(uniqueForUS) * time.Microsecond
	if finishedAt != nil {
		it.FinishedAt = utc(*finishedAt)
	}
	if len(meta) > 0 && string(meta) != "null" {
		if err := json.Unmarshal(meta, &it.Metadata); err != nil {
			return l, err
		}
	}
	if len(it.Payload) == 0 {
		it.Payload = nil
	}
	it.EnqueuedAt = utc(it.EnqueuedAt)
	if notBefore != nil {
		it.NotBefore = utc(*notBefore)
	}
	if deadAt != nil {
		it.DeadAt = utc(*deadAt)
	}
	if worker != nil {
		l.Worker = *worker
	}
	if expiresAt != nil {
		l.ExpiresAt = utc(*expiresAt)
	}
	if token != nil {
		l.Token = *token
	}
	return l, nil
}
