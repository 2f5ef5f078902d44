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
// A queue with any flow-control limit set claims through claimFlow
// instead (flow.go); the others take this path, which reads no limit.
// held lists the tenants a claimFlow passed over, for the claim's report.
func (q *workQueue) claim(ctx context.Context, e execer, req contract.ClaimRequest) (out []contract.Lease, held []heldTenant, err error) {
	name := req.Queue
	now := q.clock.Now()
	at := nanos(now)
	var stamp, turn int64
	var limited bool
	err = e.QueryRowContext(ctx, queueGetSQL, name).Scan(&stamp, &turn, &limited)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var token int64
	if err := e.QueryRowContext(ctx, counterGetSQL, "token").Scan(&token); err != nil {
		return nil, nil, err
	}
	expires := nanos(now.Add(req.LeaseFor))
	if limited {
		c := &flowClaim{e: e, req: req, now: now, at: at, expires: expires, stamp: stamp, turn: turn, token: token}
		if err := c.run(ctx); err != nil {
			return nil, nil, err
		}
		out, held, stamp, turn, token = c.out, c.held, c.stamp, c.turn, c.token
	} else if out, err = claimRotation(ctx, e, req, at, expires, &stamp, &turn, &token); err != nil {
		return nil, nil, err
	}
	if len(out) == 0 {
		return nil, held, nil
	}
	if _, err := e.ExecContext(ctx, countersSetSQL, "token", token); err != nil {
		return nil, nil, err
	}
	if _, err := e.ExecContext(ctx, queueSetSQL, name, stamp, turn); err != nil {
		return nil, nil, err
	}
	return out, held, nil
}

// claimRotation is the claim of a queue without limits: the rotation's
// front, one item per tenant per turn, round after round.
func claimRotation(ctx context.Context, e execer, req contract.ClaimRequest, at, expires int64, stampp, turnp, tokenp *int64) ([]contract.Lease, error) {
	name := req.Queue
	stamp, turn, token := *stampp, *turnp, *tokenp
	defer func() { *stampp, *turnp, *tokenp = stamp, turn, token }()
	var out []contract.Lease
	var heads []string
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
		for _, tenant := range heads {
			if len(out) == req.Max {
				break
			}
			id, wake, err := nextItem(ctx, e, name, tenant, at)
			if err != nil {
				return nil, err
			}
			if id == "" {
				// The tenant's wake time was ahead of its items (the clock
				// went back): put it right and pass it over.
				if _, err := e.ExecContext(ctx, turnWakeSQL, name, tenant, wake); err != nil {
					return nil, err
				}
				continue
			}
			token++
			stamp++
			turn++
			l, err := scanLease(e.QueryRowContext(ctx, claimLeaseSQL, name, tenant, id, req.Worker, expires, token))
			if err != nil {
				return nil, err
			}
			if _, err := e.ExecContext(ctx, turnServedSQL, name, tenant, stamp, wake); err != nil {
				return nil, err
			}
			if _, err := e.ExecContext(ctx, recentPutSQL, name, turn, tenant, id, req.Worker, at); err != nil {
				return nil, err
			}
			out = append(out, l)
			if w, ok := wake.(int64); ok && w <= at {
				still = append(still, tenant)
			}
		}
		heads = still
	}
	return out, nil
}

func claimHeads(ctx context.Context, e execer, queue string, at int64, n int) ([]string, error) {
	rows, err := e.QueryContext(ctx, claimHeadsSQL, queue, at, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// nextItem returns the id of the tenant's first queued item when it is
// due ("" when it is not), and the tenant's wake time once that item is
// gone (nil when it holds no other queued item). When the first item is
// not due, wake is its due time.
func nextItem(ctx context.Context, e execer, queue, tenant string, at int64) (id string, wake any, err error) {
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
