package pgstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/contract"
)

var _ contract.FlowController = (*workQueue)(nil)

// queueFlags remembers a fact about each queue, learnt in this process,
// that chooses a statement; a wrong guess costs one round trip, the
// statement claiming or completing nothing and saying so. limited: the
// queue had limits or pauses at its last claim, so it is claimed by
// queries/claim_flow.sql (claim.sql meets limits and says so,
// claim_flow.sql says when a queue has none left). prio: the queue has
// queued an item with a priority; events: it records events; the two
// choose the rendering of its claim (claimSQL, and see queries.go).
// keeps: the queue has a retention row, so its Completes run the full
// complete.sql. prio, events and keeps stay once set: a queue that used
// priorities, events or a retention once is taken to use them again, and
// the full statements serve any queue the lean ones do.
type queueFlags struct {
	mu sync.Mutex
	m  map[string]bool
}

func (l *queueFlags) get(queue string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[queue]
}

func (l *queueFlags) set(queue string, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if on {
		l.m[queue] = true
	} else {
		delete(l.m, queue)
	}
}

// SetLimits writes tenant's limits in queue (the default when tenant is
// ""), or removes them for the zero Limits, and wakes the queue's
// claimers on commit.
func (q *workQueue) SetLimits(ctx context.Context, queue, tenant string, l contract.Limits) error {
	args := []any{queue, tenant, l.MaxLeased, l.Rate, l.Burst, l.Weight, l.Budget.CostMicros, l.Budget.Tokens,
		l.Budget.Window.Milliseconds(), l.IsZero(), q.channel}
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		_, err := e.Exec(ctx, q.q.limitsSet, args...)
		return err
	})
	if err == nil && !l.IsZero() {
		q.limited.set(queue, true)
	}
	return queueErr(err)
}

// Limits reads every limit set on queue.
func (q *workQueue) Limits(ctx context.Context, queue string) (contract.QueueLimits, error) {
	out := contract.QueueLimits{Queue: queue, Tenants: map[string]contract.Limits{}}
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		out.Default, out.Tenants = contract.Limits{}, map[string]contract.Limits{}
		rows, err := e.Query(ctx, q.q.limitsGet, queue)
		if err != nil {
			return err
		}
		return readRows(rows, func(rows pgx.Rows) error {
			var tenant string
			var lr limitsRow
			if err := rows.Scan(&tenant, &lr.maxLeased, &lr.rate, &lr.burst, &lr.weight, &lr.cost, &lr.tokens, &lr.windowMS); err != nil {
				return err
			}
			if tenant == "" {
				out.Default = lr.limits()
			} else {
				out.Tenants[tenant] = lr.limits()
			}
			return nil
		})
	})
	if err != nil {
		return contract.QueueLimits{}, queueErr(err)
	}
	return out, nil
}

// limitsRow is a row of the limits table as the statements return it.
type limitsRow struct {
	maxLeased, burst, weight int
	rate                     float64
	cost, tokens, windowMS   int64
}

func (r limitsRow) limits() contract.Limits {
	return contract.Limits{MaxLeased: r.maxLeased, Rate: r.rate, Burst: r.burst, Weight: r.weight,
		Budget: contract.Budget{CostMicros: r.cost, Tokens: r.tokens, Window: time.Duration(r.windowMS) * time.Millisecond}}
}

// Charge adds u to tenant's usage in the slot of now of its budget; a
// tenant without a budget keeps no usage, and a change of window starts
// the count afresh.
func (q *workQueue) Charge(ctx context.Context, queue, tenant string, u contract.Usage) error {
	now := q.clock.Now()
	args := []any{queue, tenant, u.CostMicros, u.Tokens, now.UnixMilli()}
	return queueErr(q.db.run(ctx, func(ctx context.Context, e Executor) error {
		_, err := e.Exec(ctx, q.q.charge, args...)
		return err
	}))
}

// usageSlots are a tenant's usage rows: parallel arrays, by slot start,
// with each row's slot width (nil: every row is of the budget's width).
type usageSlots struct {
	atMS, cost, tokens, slotMS []int64
}

// used sums the slots of b's width that start in [from, end).
func (u usageSlots) used(b contract.Budget, from, end int64) contract.Usage {
	var sum contract.Usage
	for i, at := range u.atMS {
		if u.slotMS != nil && u.slotMS[i] != b.SlotMillis() {
			continue
		}
		if at >= from && at < end {
			sum.CostMicros += u.cost[i]
			sum.Tokens += u.tokens[i]
		}
	}
	return sum
}

// usedNow is the usage counted against b at now.
func (u usageSlots) usedNow(b contract.Budget, now time.Time) contract.Usage {
	w := b.SlotMillis()
	if w <= 0 {
		return contract.Usage{}
	}
	s := contract.BudgetSlot(b, now)
	return u.used(b, (s-contract.BudgetSlots)*w, (s+1)*w)
}

// release is when a tenant over b at now is under it again if nothing
// more is charged: the start of the first slot k after now's whose window
// (slots k-10 .. k) no longer reaches a ceiling.
func (u usageSlots) release(b contract.Budget, now time.Time) time.Time {
	w := b.SlotMillis()
	if w <= 0 {
		return time.Time{}
	}
	s := contract.BudgetSlot(b, now)
	for k := s + 1; k <= s+contract.BudgetSlots+1; k++ {
		if !contract.OverBudget(b, u.used(b, (k-contract.BudgetSlots)*w, (s+1)*w)) {
			return time.UnixMilli(k * w).UTC()
		}
	}
	return time.UnixMilli((s + contract.BudgetSlots + 1) * w).UTC()
}

// holdUntil is when a hold for why ends at the latest: zero for a cap,
// the bucket's next token for a rate, the window's release for a budget.
func holdUntil(why contract.HeldReason, l contract.Limits, tat float64, u usageSlots, now time.Time) time.Time {
	switch why {
	case contract.HeldRate:
		return time.UnixMicro(int64(contract.RateBucket{TAT: tat}.Next(l))).UTC()
	case contract.HeldBudget:
		return u.release(l.Budget, now)
	}
	return time.Time{}
}

// FlowStatus reports every tenant of queue with items or limits of its
// own, by name.
func (q *workQueue) FlowStatus(ctx context.Context, queue string) ([]contract.TenantFlow, error) {
	ql, err := q.Limits(ctx, queue)
	if err != nil {
		return nil, err
	}
	now := q.clock.Now()
	var out []contract.TenantFlow
	err = q.db.run(ctx, func(ctx context.Context, e Executor) error {
		out = out[:0]
		rows, err := e.Query(ctx, q.q.flowStatus, queue, now)
		if err != nil {
			return err
		}
		return readRows(rows, func(rows pgx.Rows) error {
			var (
				tf  contract.TenantFlow
				tat float64
				u   usageSlots
			)
			if err := rows.Scan(&tf.Tenant, &tf.Leased, &tat, &u.atMS, &u.cost, &u.tokens, &u.slotMS); err != nil {
				return err
			}
			tf.Limits, tf.Own = ql.For(tf.Tenant)
			l := tf.Limits
			nowUS := contract.UnixMicros(now)
			tf.RateTokens = contract.RateBucket{TAT: tat}.Tokens(l, nowUS)
			tf.BudgetUsed = u.usedNow(l.Budget, now)
			switch {
			case l.MaxLeased > 0 && tf.Leased >= l.MaxLeased:
				tf.Held = contract.HeldCap
			case !contract.RateBucket{TAT: tat}.Allows(l, nowUS):
				tf.Held = contract.HeldRate
			case !l.Budget.IsZero() && contract.OverBudget(l.Budget, tf.BudgetUsed):
				tf.Held = contract.HeldBudget
			}
			tf.Until = holdUntil(tf.Held, l, tat, u, now)
			out = append(out, tf)
			return nil
		})
	})
	if err != nil {
		return nil, queueErr(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tenant < out[j].Tenant })
	return out, nil
}

// claimRow is one row of a claim statement: a lease, a held tenant
// (claim_flow.sql), or a word about the queue's limits.
type claimRow struct {
	// kind is "lease", "held", "free" (no limits or pauses left),
	// "limited" (claim.sql found limits or pauses), "paused" (the queue
	// is paused) or "timeouts" (waits of the queue timed out).
	kind   string
	lease  contract.Lease
	reason *string
	// floats are a held tenant's rate_tat and rate, ints its max_leased,
	// burst, weight, budget_cost, budget_tokens and budget_window_ms, as
	// the claim read them.
	floats []float64
	ints   []int64
	usage  usageSlots
	// round, pos and sub place a lease of claim.sql in the walk, which
	// hands its leases out in that order (sortLeases).
	round, pos, sub int64
}

// scanFastClaim reads a row of claim.sql.
func scanFastClaim(rows pgx.Rows) (claimRow, error) {
	var r claimRow
	var round, pos, sub *int64
	l, err := scanLeaseAfter(rows, []any{&r.kind}, &round, &pos, &sub)
	r.lease = l
	if round != nil && pos != nil && sub != nil {
		r.round, r.pos, r.sub = *round, *pos, *sub
	}
	return r, err
}

// sortLeases returns the leases of claim.sql's rows in the order of its
// walk: round, the tenant's place in the rotation, the tenant's name,
// the item's place in the tenant's chunk. The statement returns its rows
// unsorted (a Sort node fewer in its plan: 25,000 instructions of a
// claim of one item, 75,000 of a claim of ten).
func sortLeases(rs []claimRow) []contract.Lease {
	slices.SortFunc(rs, func(a, b claimRow) int {
		return cmp.Or(cmp.Compare(a.round, b.round), cmp.Compare(a.pos, b.pos),
			cmp.Compare(a.lease.Item.Tenant, b.lease.Item.Tenant), cmp.Compare(a.sub, b.sub))
	})
	leases := make([]contract.Lease, len(rs))
	for i, r := range rs {
		leases[i] = r.lease
	}
	return leases
}

// scanFlowClaim reads a row of claim_flow.sql.
func scanFlowClaim(rows pgx.Rows) (claimRow, error) {
	var r claimRow
	var round, pos, sub *int64
	l, err := scanLeaseAfter(rows, []any{&r.kind}, &r.reason, &r.floats, &r.ints,
		&r.usage.atMS, &r.usage.cost, &r.usage.tokens, &round, &pos, &sub)
	r.lease = l
	return r, err
}

// limits are the limits a held row carries.
func (r claimRow) limits() contract.Limits {
	var lr limitsRow
	if len(r.floats) == 2 {
		lr.rate = r.floats[1]
	}
	if len(r.ints) == 6 {
		lr.maxLeased, lr.burst, lr.weight = int(r.ints[0]), int(r.ints[1]), int(r.ints[2])
		lr.cost, lr.tokens, lr.windowMS = r.ints[3], r.ints[4], r.ints[5]
	}
	return lr.limits()
}

// note records a held row in the report.
func (r claimRow) note(rep *contract.ClaimReport, now time.Time) {
	if rep == nil || r.reason == nil {
		return
	}
	why := contract.HeldReason(*r.reason)
	var tat float64
	if len(r.floats) == 2 {
		tat = r.floats[0]
	}
	rep.Note(why, holdUntil(why, r.limits(), tat, r.usage, now))
}

var (
	errLimited = errors.New("pgstore: the queue has limits")
	errFull    = errors.New("pgstore: the queue needs the full claim")
)

// claimSQL is the rendering of claim.sql (claim_flow.sql when flow is
// set) that serves what queue is flagged with here: the lean one when
// neither priorities nor events, claim.sql's events or priorities
// rendering when one of them, the full one otherwise (claim_flow.sql has
// no rendering between the lean and the full one).
func (q *workQueue) claimSQL(queue string, flow bool) string {
	prio, events := q.prio.get(queue), q.events.get(queue)
	switch {
	case flow && (prio || events):
		return q.q.claimFlow
	case flow:
		return q.q.claimFlowLean
	case prio && events:
		return q.q.claim
	case prio:
		return q.q.claimPrio
	case events:
		return q.q.claimEvents
	}
	return q.q.claimLean
}

// learn flags queue with what a claim's marker row of kind said it needs
// (fragments/lean_claim_row.sql): "prio", "events", or "full" for both. It
// reports whether kind was one of them.
func (q *workQueue) learn(queue, kind string) bool {
	switch kind {
	case "full":
		q.prio.set(queue, true)
		q.events.set(queue, true)
	case "prio":
		q.prio.set(queue, true)
	case "events":
		q.events.set(queue, true)
	default:
		return false
	}
	return true
}

// claimOnce runs one claim statement on e after prelude: claim.sql when
// the queue had no limits or pauses at its last claim here,
// claim_flow.sql when it had, each in the rendering that serves what the
// queue is flagged with (claimSQL). It returns errLimited when claim.sql
// met limits or pauses and errFull when its rendering met priorities or
// events it cannot serve (it claimed nothing then), and remembers when
// claim_flow.sql found no limits left. timedOut says the queue holds waits that timed out, for
// the caller to make due (wait_timeouts.sql).
func (q *workQueue) claimOnce(ctx context.Context, e Executor, req contract.ClaimRequest, limited bool, prelude []stmt) (leases []contract.Lease, timedOut bool, err error) {
	now := q.clock.Now()
	if !limited {
		metLimits, metMore := false, false
		var leased []claimRow
		args := []any{req.Queue, now, req.Max, req.Worker, now.Add(req.LeaseFor)}
		err := q.db.plannedRows(ctx, e, q.claimSQL(req.Queue, false), q.q.claimSettings, args, func(rows pgx.Rows) error {
			r, err := scanFastClaim(rows)
			switch {
			case err != nil:
				return err
			case r.kind == "limited":
				metLimits = true
			case r.kind == "timeouts":
				timedOut = true
			case q.learn(req.Queue, r.kind):
				metMore = true
			default:
				leased = append(leased, r)
			}
			return nil
		}, prelude...)
		if err == nil && metLimits {
			q.limited.set(req.Queue, true)
			return nil, false, errLimited
		}
		if err == nil && metMore {
			return nil, false, errFull
		}
		if err != nil {
			return nil, false, err
		}
		return sortLeases(leased), timedOut, nil
	}
	rep := contract.ClaimReportFrom(ctx)
	var held []claimRow
	free, paused, metMore := false, false, false
	args := []any{req.Queue, now, req.Max, req.Worker, now.Add(req.LeaseFor), contract.UnixMicros(now), now.UnixMilli(), rep != nil}
	err = q.db.plannedRows(ctx, e, q.claimSQL(req.Queue, true), q.q.claimFlowSettings, args, func(rows pgx.Rows) error {
		r, err := scanFlowClaim(rows)
		if err != nil {
			return err
		}
		switch r.kind {
		case "lease":
			leases = append(leases, r.lease)
		case "held":
			held = append(held, r)
		case "free":
			free = true
		case "paused":
			paused = true
		case "timeouts":
			timedOut = true
		default:
			metMore = q.learn(req.Queue, r.kind) || metMore
		}
		return nil
	}, prelude...)
	if err != nil {
		return nil, false, err
	}
	if metMore {
		// The lean flow claim met events or priorities: it claimed
		// nothing (what it read of held tenants and pauses is the full
		// claim's to report).
		return nil, false, errFull
	}
	if paused && rep != nil {
		rep.QueuePaused = true
	}
	if free {
		q.limited.set(req.Queue, false)
	}
	seen := make(map[string]bool, len(held))
	for _, h := range held {
		if !seen[h.lease.Item.Tenant] {
			seen[h.lease.Item.Tenant] = true
			h.note(rep, now)
		}
	}
	return leases, timedOut, nil
}
