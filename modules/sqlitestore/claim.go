package sqlitestore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/adkit/adk/modules/contract"
)

// claim leases up to req.Max due items inside the write transaction e:
// it takes the front of the rotation (the tenants with an item due, by
// stamp), serves each of them one item in that order and sends it to the
// back with a new stamp, and reads the front again while the batch has
// room. Tenants served in one pass sit behind the ones not reached yet,
// so the next pass serves those first: one item per tenant per turn,
// round after round, and a single busy tenant fills the whole batch.
//
// The write lock is held for the whole transaction, so no other claimer,
// in this process or another, sees the rotation or the items half-way.
// The counters (tokens, stamps, turns) are read once and written back
// once; they roll back with the transaction, which is safe because a
// rolled-back claim has handed no lease to anyone.
//
// A queue with any flow-control limit set, or with paused tenants,
// claims through claimFlow instead (flow.go); the others take this path,
// which reads no limit. The statement that reads the queue's counters also
// reads, for a queue with limits, its default limits and whether a cap or
// a budget applies to any of its tenants. The same row says
// whether the whole queue is paused (then nothing is claimed), how many
// tenants are, and when its first wait times out: waits that have timed
// out by now are queued again first (lifecycle.go), and a queue where
// none is due pays nothing for them. The same row's statement reads the
// queue's cap of events: a claim of a queue that records none writes
// nothing more. Tenants whose queued items are all delayed sleep out of
// the rotation's index until the first is due (schema version 7); a
// claim wakes those whose time has come before it walks.
func (q *workQueue) claim(ctx context.Context, e execer, req contract.ClaimRequest) (claimed, error) {
	name := req.Queue
	now := q.clock.Now()
	at := nanos(now)
	var stamp, turn int64
	var paused, limited bool
	var pausedTenants int
	var waitNext sql.NullInt64
	var events int
	var def nullLimits // the queue's default limits, when it has limits
	var anyCap, budgets bool
	var wakes bool // a sleeping tenant's time has come
	err := e.QueryRowContext(ctx, queueGetSQL, name, at).Scan(append(append([]any{&stamp, &turn, &paused, &pausedTenants, &waitNext, &limited, &events},
		def.dest()...), &anyCap, &budgets, &wakes)...)
	if errors.Is(err, sql.ErrNoRows) {
		return claimed{}, nil
	}
	if err != nil {
		return claimed{}, err
	}
	if paused {
		return claimed{queuePaused: true}, nil
	}
	if waitNext.Valid && waitNext.Int64 <= at {
		if err := endWaits(ctx, e, name, at, events); err != nil {
			return claimed{}, err
		}
	}
	// Tenants asleep until an item of theirs is due wake if it is now;
	// the others stay out of the walk below.
	if wakes {
		if _, err := e.ExecContext(ctx, turnSweepSQL, name, at); err != nil {
			return claimed{}, err
		}
	}
	var token int64
	if err := e.QueryRowContext(ctx, counterGetSQL, "token").Scan(&token); err != nil {
		return claimed{}, err
	}
	expires := nanos(now.Add(req.LeaseFor))
	var out claimed
	if limited || pausedTenants > 0 {
		c := &flowClaim{e: e, req: req, now: now, at: at, expires: expires, stamp: stamp, turn: turn, token: token, pauses: pausedTenants > 0,
			def: def.row().limits(), budgets: budgets}
		if anyCap {
			c.leased = map[string]int{}
		}
		if err := c.run(ctx); err != nil {
			return claimed{}, err
		}
		out.leases, out.held, stamp, turn, token = c.out, c.held, c.stamp, c.turn, c.token
	} else if out.leases, err = claimRotation(ctx, e, req, at, expires, &stamp, &turn, &token); err != nil {
		return claimed{}, err
	}
	if len(out.leases) == 0 {
		return claimed{held: out.held}, nil
	}
	if _, err := e.ExecContext(ctx, countersSetSQL, "token", token); err != nil {
		return claimed{}, err
	}
	if _, err := e.ExecContext(ctx, queueSetSQL, name, stamp, turn); err != nil {
		return claimed{}, err
	}
	var b eventBatch
	for _, l := range out.leases {
		b.add(events, l.Item.Key(), contract.Event{Kind: contract.EventClaimed, At: now, Worker: l.Worker, Attempt: l.Item.Attempts + 1, Token: l.Token}, false)
	}
	if err := b.flush(ctx, e); err != nil {
		return claimed{}, err
	}
	return out, nil
}

// claimed is what a claim did: the leases, the tenants it passed over and
// whether the whole queue was paused.
type claimed struct {
	leases      []contract.Lease
	held        []heldTenant
	queuePaused bool
}

// report fills the caller's claim report, when it asked for one, once the
// claim committed.
func (c claimed) report(ctx context.Context) {
	if c.queuePaused {
		if r := contract.ClaimReportFrom(ctx); r != nil {
			r.QueuePaused = true
		}
	}
	report(ctx, c.held)
}

// claimRotation is the claim of a queue without limits: the rotation's
// front, one item per tenant per turn, round after round.
func claimRotation(ctx context.Context, e execer, req contract.ClaimRequest, at, expires int64, stampp, turnp, tokenp *int64) ([]contract.Lease, error) {
	name := req.Queue
	stamp, turn, token := *stampp, *turnp, *tokenp
	defer func() { *stampp, *turnp, *tokenp = stamp, turn, token }()
	var out []contract.Lease
	var heads []head
	complete := false // heads holds every tenant with an item due
	for len(out) < req.Max {
		if !complete {
			want := req.Max - len(out)
			var err error
			if heads, err = claimHeads(ctx, e, name, at, want); err != nil {
				return nil, err
			}
			// Fewer than asked for is all of them: the next passes serve
			// the same tenants in the same order (each went to the back
			// in turn), so they need no second read.
			complete = len(heads) < want
		}
		if len(heads) == 0 {
			break
		}
		still := heads[:0]
		for _, h := range heads {
			if len(out) == req.Max {
				break
			}
			tenant := h.tenant
			id, wake, err := nextItem(ctx, e, name, tenant, h.ranked, at)
			if err != nil {
				return nil, err
			}
			if id == "" {
				// The tenant's wake time was ahead of its items (the clock
				// went back): put it right and pass it over.
				if _, err := e.ExecContext(ctx, turnWakeSQL, name, tenant, wake, at); err != nil {
					return nil, err
				}
				continue
			}
			token++
			stamp++
			turn++
			l, err := scanClaimed(ctx, e, e.QueryRowContext(ctx, claimLeaseSQL, name, tenant, id, req.Worker, expires, token))
			if err != nil {
				return nil, err
			}
			if _, err := e.ExecContext(ctx, turnServedSQL, name, tenant, stamp, wake, at); err != nil {
				return nil, err
			}
			if _, err := e.ExecContext(ctx, recentPutSQL, name, turn, tenant, id, req.Worker, at); err != nil {
				return nil, err
			}
			out = append(out, l)
			if w, ok := wake.(int64); ok && w <= at {
				still = append(still, h)
			}
		}
		heads = still
	}
	return out, nil
}

// head is a tenant at the rotation's front, and whether it is ranked (it
// may hold queued items of a priority other than 0).
type head struct {
	tenant string
	ranked bool
}

func claimHeads(ctx context.Context, e execer, queue string, at int64, n int) ([]head, error) {
	rows, err := e.QueryContext(ctx, claimHeadsSQL, queue, at, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []head
	for rows.Next() {
		var h head
		if err := rows.Scan(&h.tenant, &h.ranked); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// nextItem returns the id of the tenant's item to serve at at ("" when
// none is due), and the tenant's wake time once that item is gone (nil
// when it holds no other queued item). When no item is due, wake is the
// first due time. A tenant that is not ranked holds items of priority 0
// only: its first item by due time and order is the one.
func nextItem(ctx context.Context, e execer, queue, tenant string, ranked bool, at int64) (id string, wake any, err error) {
	if ranked {
		return nextRanked(ctx, e, queue, tenant, at)
	}
	rows, err := e.QueryContext(ctx, claimNextSQL, queue, tenant)
	if err != nil {
		return "", nil, err
	}
	defer rows.Close()
	var ids []string
	var dues []int64
	for rows.Next() {
		var i string
		var d int64
		if err := rows.Scan(&i, &d); err != nil {
			return "", nil, err
		}
		ids, dues = append(ids, i), append(dues, d)
	}
	if err := rows.Err(); err != nil {
		return "", nil, err
	}
	switch {
	case len(ids) == 0:
		return "", nil, nil
	case dues[0] > at:
		return "", dues[0], nil
	case len(ids) == 1:
		return ids[0], nil, nil
	}
	return ids[0], dues[1], nil
}

// nextRanked is nextItem for a ranked tenant: its first due item by
// priority, due time and order. While it has a second due item, that
// item's due time (at or before at) is its next wake: the tenant stays in
// the rotation, which is all a wake at or before now says. Only when it
// has one due item or none does its wake come from the first due time of
// the rest, one statement more (claim_wake_ranked.sql, a few probes of
// the ready index per priority in use).
func nextRanked(ctx context.Context, e execer, queue, tenant string, at int64) (id string, wake any, err error) {
	ids, dues, err := idDues(ctx, e, claimNextRankedSQL, queue, tenant, at)
	if err != nil {
		return "", nil, err
	}
	if len(ids) == 2 {
		return ids[0], dues[1], nil
	}
	if len(ids) == 1 {
		id = ids[0]
	}
	var first sql.NullInt64
	if err := e.QueryRowContext(ctx, claimWakeRankedSQL, queue, tenant, id).Scan(&first); err != nil {
		return "", nil, err
	}
	if first.Valid {
		wake = first.Int64
	}
	return id, wake, nil
}

// idDues runs a statement that returns ids and due times.
func idDues(ctx context.Context, e execer, query string, args ...any) ([]string, []int64, error) {
	rows, err := e.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var ids []string
	var dues []int64
	for rows.Next() {
		var i string
		var d int64
		if err := rows.Scan(&i, &d); err != nil {
			return nil, nil, err
		}
		ids, dues = append(ids, i), append(dues, d)
	}
	return ids, dues, rows.Err()
}
