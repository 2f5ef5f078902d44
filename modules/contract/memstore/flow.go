package memstore

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Flow control: each queue keeps its default limits and each tenant's own;
// each tenant keeps its rate bucket, its weight credit and its budget
// usage by slot. The claim checks a tenant only when it comes up for an
// item, and only in a queue that has limits, so a queue without any pays
// one boolean test per claim.

// flowState is a tenant's flow-control standing in a queue.
type flowState struct {
	own    contract.Limits // the tenant's own limits, when hasOwn
	hasOwn bool            // false: the queue's default applies
	bucket contract.RateBucket
	credit int // items served in its current turn
	// usage is the budget usage by slot, for slots slotMillis wide.
	usage      map[int64]contract.Usage
	slotMillis int64
}

// limitsFor returns the limits that apply to tq.
func (q *queue) limitsFor(tq *tenantQueue) contract.Limits {
	if tq.flow.hasOwn {
		return tq.flow.own
	}
	return q.defLimits
}

// SetLimits sets or, for the zero Limits, removes tenant's limits in the
// queue (the default when tenant is ""), and wakes the queue's claimers.
func (s *store) SetLimits(ctx context.Context, name, tenant string, l contract.Limits) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q := s.queue(name)
	switch {
	case tenant == "":
		q.defLimits = l
	case l.IsZero():
		delete(q.limits, tenant)
		tq := q.tenant(tenant)
		tq.flow.own, tq.flow.hasOwn = contract.Limits{}, false
	default:
		if q.limits == nil {
			q.limits = make(map[string]contract.Limits)
		}
		q.limits[tenant] = l
		tq := q.tenant(tenant)
		tq.flow.own, tq.flow.hasOwn = l, true
	}
	q.limited = !q.defLimits.IsZero() || len(q.limits) > 0
	s.wake(name, s.clock.Now())
	return nil
}

// Limits returns the limits set on the queue.
func (s *store) Limits(ctx context.Context, name string) (contract.QueueLimits, error) {
	if err := s.lock(ctx); err != nil {
		return contract.QueueLimits{}, err
	}
	defer s.mu.Unlock()
	out := contract.QueueLimits{Queue: name, Tenants: map[string]contract.Limits{}}
	if q := s.queues[name]; q != nil {
		out.Default = q.defLimits
		maps.Copy(out.Tenants, q.limits)
	}
	return out, nil
}

// Charge adds u to the tenant's usage in the slot of now, under the
// budget in force; a tenant without one keeps no usage.
func (s *store) Charge(ctx context.Context, name, tenant string, u contract.Usage) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q := s.queue(name)
	tq := q.tenant(tenant)
	b := q.limitsFor(tq).Budget
	if b.IsZero() {
		return nil
	}
	fs := &tq.flow
	if fs.usage == nil || fs.slotMillis != b.SlotMillis() {
		// A new window starts the count afresh.
		fs.usage = make(map[int64]contract.Usage)
		fs.slotMillis = b.SlotMillis()
	}
	slot := contract.BudgetSlot(b, s.clock.Now())
	for k := range fs.usage {
		if k < slot-contract.BudgetSlots {
			delete(fs.usage, k)
		}
	}
	cur := fs.usage[slot]
	cur.CostMicros += u.CostMicros
	cur.Tokens += u.Tokens
	fs.usage[slot] = cur
	return nil
}

// budgetUsed sums the tenant's usage over the window that ends in the slot
// of now.
func budgetUsed(tq *tenantQueue, b contract.Budget, now time.Time) contract.Usage {
	var used contract.Usage
	if b.IsZero() || tq.flow.slotMillis != b.SlotMillis() {
		return used
	}
	slot := contract.BudgetSlot(b, now)
	for k, u := range tq.flow.usage {
		if k >= slot-contract.BudgetSlots && k <= slot {
			used.CostMicros += u.CostMicros
			used.Tokens += u.Tokens
		}
	}
	return used
}

// budgetFrees returns when a tenant over budget b at now is under it
// again, if nothing more is charged: the start of the first later slot
// whose window no longer reaches a ceiling.
func budgetFrees(tq *tenantQueue, b contract.Budget, now time.Time) time.Time {
	slot := contract.BudgetSlot(b, now)
	for k := slot + 1; k <= slot+contract.BudgetSlots+1; k++ {
		var used contract.Usage
		for s, u := range tq.flow.usage {
			if s >= k-contract.BudgetSlots && s <= slot {
				used.CostMicros += u.CostMicros
				used.Tokens += u.Tokens
			}
		}
		if !contract.OverBudget(b, used) {
			return time.UnixMilli(k * b.SlotMillis()).UTC()
		}
	}
	return time.UnixMilli((slot + contract.BudgetSlots + 1) * b.SlotMillis()).UTC()
}

// liveLeases counts tq's leases that have not expired by now: its leased
// items less those whose lease ran out and is not yet reaped, which sit at
// the front of the queue's lease order.
func (q *queue) liveLeases(tq *tenantQueue, now time.Time) int {
	live := tq.leased
	q.leases.Ascend(nil, func(k leaseKey, e *entry) bool {
		if k.expires.After(now) {
			return false
		}
		if e.item.Tenant == tq.name {
			live--
		}
		return true
	})
	return live
}

// held says whether the limits l hold tq back at now, and until when
// (zero for a cap, which ends with a lease).
func (q *queue) held(tq *tenantQueue, l contract.Limits, now time.Time) (contract.HeldReason, time.Time) {
	if tq.paused {
		return contract.HeldPaused, time.Time{}
	}
	if l.MaxLeased > 0 && tq.leased >= l.MaxLeased && q.liveLeases(tq, now) >= l.MaxLeased {
		return contract.HeldCap, time.Time{}
	}
	return q.heldWith(tq, l, now, -1)
}

// heldWith is held with the tenant's live leases already counted (live
// < 0: the cap is already judged).
func (q *queue) heldWith(tq *tenantQueue, l contract.Limits, now time.Time, live int) (contract.HeldReason, time.Time) {
	if live >= 0 && l.MaxLeased > 0 && live >= l.MaxLeased {
		return contract.HeldCap, time.Time{}
	}
	if l.Rate > 0 && !tq.flow.bucket.Allows(l, contract.UnixMicros(now)) {
		next := tq.flow.bucket.Next(l)
		return contract.HeldRate, time.UnixMicro(int64(next + 0.999999)).UTC()
	}
	if !l.Budget.IsZero() && contract.OverBudget(l.Budget, budgetUsed(tq, l.Budget, now)) {
		return contract.HeldBudget, budgetFrees(tq, l.Budget, now)
	}
	return contract.HeldNone, time.Time{}
}

// heldPass is one claim's progress past held tenants. A tenant held at
// the claim's now stays held for the rest of the claim (its live leases
// only grow, its bucket and budget window do not move, pause is not
// lifted meanwhile) and keeps its stamp, and the tenants a claim serves
// take stamps after every other. So every due tenant up to the last held
// one passed is held, and the claim resumes its walk after it: each held
// tenant is read and reported once per claim, not once per item.
type heldPass struct {
	report *contract.ClaimReport // nil when the caller wants no report
	last   int64                 // the stamp of the last held tenant passed
	any    bool                  // whether one was passed
}

// pass notes tq, held for why until until, and resumes later walks after
// it.
func (p *heldPass) pass(tq *tenantQueue, why contract.HeldReason, until time.Time) {
	p.report.Note(why, until)
	p.last, p.any = tq.stamp, true
}

// nextAllowed returns the first tenant in rotation order that has a due
// item and is not held back, passing (and noting in p) the held tenants
// before it.
func (q *queue) nextAllowed(now time.Time, p *heldPass) *tenantQueue {
	head := q.next(now) // moves the tenants that fell due into due
	if head == nil {
		return nil
	}
	if !p.any || head.stamp > p.last {
		why, until := q.held(head, q.limitsFor(head), now)
		if why == contract.HeldNone {
			return head
		}
		p.pass(head, why, until)
	}
	var found *tenantQueue
	q.due.Ascend(&p.last, func(_ int64, tq *tenantQueue) bool {
		why, until := q.held(tq, q.limitsFor(tq), now)
		if why == contract.HeldNone {
			found = tq
			return false
		}
		p.pass(tq, why, until)
		return true
	})
	return found
}

// served charges tq's limits for the item it was just served and says
// whether its turn is over (it goes to the back of the rotation).
func (q *queue) served(tq *tenantQueue, now time.Time) bool {
	if !q.limited {
		return true
	}
	l := q.limitsFor(tq)
	if l.Rate > 0 {
		tq.flow.bucket = tq.flow.bucket.Take(l, contract.UnixMicros(now))
	}
	tq.flow.credit++
	if tq.flow.credit < l.EffectiveWeight() {
		return false
	}
	tq.flow.credit = 0
	return true
}

// capped reports whether the tenant of a lease that just ended has due work
// that a cap may have held back, so claimers should be woken.
func (q *queue) capped(tq *tenantQueue) bool {
	return q.limited && tq != nil && tq.queued() > 0 && q.limitsFor(tq).MaxLeased > 0
}

// FlowStatus reports the standing of every tenant of the queue that has
// items or limits of its own.
func (s *store) FlowStatus(ctx context.Context, name string) ([]contract.TenantFlow, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []contract.TenantFlow{}
	q := s.queues[name]
	if q == nil {
		return out, nil
	}
	now := s.clock.Now()
	// One walk of the expired, unreaped leases counts them by tenant.
	expired := map[string]int{}
	q.leases.Ascend(nil, func(k leaseKey, e *entry) bool {
		if k.expires.After(now) {
			return false
		}
		expired[e.item.Tenant]++
		return true
	})
	// SetLimits gives every tenant with limits of its own an entry, so
	// the tenants' entries are all there is to list.
	names := make([]string, 0, len(q.tenants))
	for n, tq := range q.tenants {
		if tq.flow.hasOwn || tq.queued() > 0 || tq.leased > 0 || tq.dead > 0 {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		tq := q.tenants[n]
		l := q.limitsFor(tq)
		own := tq.flow.hasOwn
		live := tq.leased - expired[n]
		why, until := q.heldWith(tq, l, now, live)
		out = append(out, contract.TenantFlow{
			Tenant:     n,
			Limits:     l,
			Own:        own,
			Leased:     live,
			RateTokens: tq.flow.bucket.Tokens(l, contract.UnixMicros(now)),
			BudgetUsed: budgetUsed(tq, l.Budget, now),
			Held:       why,
			Until:      until,
		})
	}
	return out, nil
}
