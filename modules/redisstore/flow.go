package redisstore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Flow control (contract.FlowController). A queue's limits rows, each
// tenant's flow state and, while the queue has any limits, an index of its
// live leases by tenant are kept in four keys of the queue's own (see
// scripts/queue_lib.lua), so every check is made inside the claim script
// with the keys it declares. scripts/flow_lib.lua holds the Lua side of the
// encodings below; the two must agree.

// defaultLimitsField is the LIMITS field of the queue's default row:
// lp(""), which no tenant's lp can be.
const defaultLimitsField = "0:"

// encodeLimits is a limits row as flow_lib.lua's flowLimits decodes it.
func encodeLimits(l contract.Limits) string {
	return fmt.Sprintf("%d|%s|%d|%d|%d|%d|%d", l.MaxLeased, strconv.FormatFloat(l.Rate, 'g', -1, 64), l.Burst,
		l.Weight, l.Budget.CostMicros, l.Budget.Tokens, l.Budget.Window.Milliseconds())
}

// decodeLimits reads a row encodeLimits wrote.
func decodeLimits(s string) (contract.Limits, bool) {
	p := strings.Split(s, "|")
	if len(p) != 7 {
		return contract.Limits{}, false
	}
	var n [7]int64
	for i, v := range p {
		if i == 1 {
			continue
		}
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return contract.Limits{}, false
		}
		n[i] = x
	}
	rate, err := strconv.ParseFloat(p[1], 64)
	if err != nil {
		return contract.Limits{}, false
	}
	return contract.Limits{
		MaxLeased: int(n[0]), Rate: rate, Burst: int(n[2]), Weight: int(n[3]),
		Budget: contract.Budget{CostMicros: n[4], Tokens: n[5], Window: time.Duration(n[6]) * time.Millisecond},
	}, true
}

// reportArg tells the claim script whether to report held tenants.
func reportArg(r *contract.ClaimReport) string {
	if r == nil {
		return "0"
	}
	return "1"
}

// noteHeld takes the report of held tenants off the end of a claim reply
// (a nested list: reason, until in unix microseconds, per tenant), notes
// it in r, and returns the rest of the reply.
func noteHeld(rows []any, r *contract.ClaimReport) []any {
	if len(rows) == 0 {
		return rows
	}
	held, ok := rows[len(rows)-1].([]any)
	if !ok {
		return rows
	}
	for i := 0; i+1 < len(held); i += 2 {
		why, _ := held[i].(string)
		us, _ := held[i+1].(string)
		r.Note(contract.HeldReason(why), microsTime(us))
	}
	return rows[:len(rows)-1]
}

// microsTime is a decimal count of unix microseconds (a float, as the
// scripts format it) as a time, rounded up to the microsecond as memstore
// does: a claim reads the clock in whole microseconds, rounded down, so a
// claimer that sleeps until a rate hold's end must not wake a fraction of
// a microsecond before it. Zero or less is the zero time.
func microsTime(us string) time.Time {
	f, err := strconv.ParseFloat(us, 64)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		return time.Time{}
	}
	return time.UnixMicro(int64(math.Ceil(f))).UTC()
}

// SetLimits sets tenant's limits in queue name, or the queue's default
// when tenant is "", in one script that also keeps the queue's flag and
// wakes its claimers; the zero Limits remove the row.
func (q *workQueue) SetLimits(ctx context.Context, name, tenant string, l contract.Limits) error {
	field := defaultLimitsField
	if tenant != "" {
		field = lp(tenant)
	}
	val := ""
	if !l.IsZero() {
		val = encodeLimits(l)
	}
	_, err := q.run(ctx, scriptSetLimits, q.queueKeys(name), field, val, wakeChannel(q.settings.Namespace, name))
	return err
}

// Limits returns the limits rows of queue name.
func (q *workQueue) Limits(ctx context.Context, name string) (contract.QueueLimits, error) {
	var rows map[string]string
	err := q.read(ctx, func(ctx context.Context) error {
		var err error
		rows, err = q.client.HGetAll(ctx, q.keys.queue(name)+"limits").Result()
		return err
	})
	if err != nil {
		return contract.QueueLimits{}, err
	}
	return queueLimits(name, rows), nil
}

// queueLimits decodes the LIMITS hash of queue name.
func queueLimits(name string, rows map[string]string) contract.QueueLimits {
	ql := contract.QueueLimits{Queue: name, Tenants: map[string]contract.Limits{}}
	for f, v := range rows {
		l, ok := decodeLimits(v)
		if !ok {
			continue // the placeholder
		}
		if f == defaultLimitsField {
			ql.Default = l
			continue
		}
		if t, rest, ok := cutLP(f); ok && rest == "" {
			ql.Tenants[t] = l
		}
	}
	return ql
}

// Charge adds u to tenant's budget usage in queue name, in the slot of
// now. Usage charged while no budget applies to the tenant is not kept.
func (q *workQueue) Charge(ctx context.Context, name, tenant string, u contract.Usage) error {
	now := q.clock.Now()
	_, err := q.run(ctx, scriptCharge, q.queueKeys(name), lp(tenant), u.CostMicros, u.Tokens, now.UnixMilli())
	return err
}

// FlowStatus reports every tenant of queue name with queued, leased or
// dead items or a limits row of its own, from one read-only script.
func (q *workQueue) FlowStatus(ctx context.Context, name string) ([]contract.TenantFlow, error) {
	now := q.clock.Now()
	res, err := q.run(ctx, scriptFlowStatus, q.queueKeys(name), nowMicros(now))
	if err != nil {
		return nil, err
	}
	parts, _ := res.([]any)
	if len(parts) != 4 {
		return nil, fmt.Errorf("redisstore: malformed flow status reply")
	}
	rows := pairs(parts[0])
	ql := queueLimits(name, rows)
	state := pairs(parts[1])
	names := map[string]bool{}
	for t := range ql.Tenants {
		names[t] = true
	}
	queued, _ := parts[2].([]any)
	for _, v := range queued {
		if t, _ := v.(string); t != "" {
			names[t] = true
		}
	}
	live := map[string]int{}
	leased, _ := parts[3].([]any)
	for i := 0; i+2 < len(leased); i += 3 {
		lt, _ := leased[i].(string)
		n, _ := leased[i+2].(int64)
		if t, rest, ok := cutLP(lt); ok && rest == "" {
			names[t] = true
			live[t] = int(n)
		}
	}
	out := make([]contract.TenantFlow, 0, len(names))
	for t := range names {
		out = append(out, tenantFlow(ql, t, live[t], state, now))
	}
	slices.SortFunc(out, func(a, b contract.TenantFlow) int { return strings.Compare(a.Tenant, b.Tenant) })
	return out, nil
}

// tenantFlow works out one tenant's standing from its limits, its live
// leases and the queue's flow state, as a claim at now would see it.
func tenantFlow(ql contract.QueueLimits, t string, live int, state map[string]string, now time.Time) contract.TenantFlow {
	l, own := ql.For(t)
	tf := contract.TenantFlow{Tenant: t, Limits: l, Own: own, Leased: live}
	lt := lp(t)
	us := contract.UnixMicros(now)
	var bucket contract.RateBucket
	if l.Rate > 0 {
		bucket.TAT, _ = strconv.ParseFloat(state["r"+lt], 64)
		tf.RateTokens = bucket.Tokens(l, us)
	}
	var slots map[int64]contract.Usage
	var slot int64
	if !l.Budget.IsZero() {
		slots = budgetSlots(state["b"+lt], l.Budget.SlotMillis())
		slot = contract.BudgetSlot(l.Budget, now)
		tf.BudgetUsed = budgetUsed(slots, slot)
	}
	switch {
	case l.MaxLeased > 0 && live >= l.MaxLeased:
		tf.Held = contract.HeldCap
	case l.Rate > 0 && !bucket.Allows(l, us):
		tf.Held = contract.HeldRate
		tf.Until = microsTime(strconv.FormatFloat(bucket.Next(l), 'g', -1, 64))
	case !l.Budget.IsZero() && contract.OverBudget(l.Budget, tf.BudgetUsed):
		tf.Held = contract.HeldBudget
		tf.Until = time.UnixMilli(budgetRelease(l.Budget, slots, slot)).UTC()
	}
	return tf
}

// budgetSlots decodes a budget field (as flow_lib.lua's budgetSlots does)
// into usage by slot of width ms; slots kept in another width count for
// nothing.
func budgetSlots(s string, width int64) map[int64]contract.Usage {
	out := map[int64]contract.Usage{}
	head, rest, _ := strings.Cut(s, "|")
	w0, err := strconv.ParseInt(head, 10, 64)
	if err != nil || width <= 0 || w0 != width {
		return out
	}
	for _, e := range strings.Split(rest, "|") {
		f := strings.Split(e, ":")
		if len(f) != 3 {
			continue
		}
		k, err1 := strconv.ParseInt(f[0], 10, 64)
		c, err2 := strconv.ParseInt(f[1], 10, 64)
		n, err3 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		u := out[k]
		u.CostMicros += c
		u.Tokens += n
		out[k] = u
	}
	return out
}

// budgetUsed sums the slots s-10 .. s.
func budgetUsed(slots map[int64]contract.Usage, s int64) contract.Usage {
	var u contract.Usage
	for k := s - contract.BudgetSlots; k <= s; k++ {
		e := slots[k]
		u.CostMicros += e.CostMicros
		u.Tokens += e.Tokens
	}
	return u
}

// budgetRelease is when (unix ms) a hold of b in slot s ends if nothing
// more is charged: the start of the first later slot whose window no
// longer reaches a ceiling.
func budgetRelease(b contract.Budget, slots map[int64]contract.Usage, s int64) int64 {
	w := b.SlotMillis()
	for k := s + 1; k <= s+contract.BudgetSlots+1; k++ {
		if !contract.OverBudget(b, budgetUsed(slots, k)) {
			return k * w
		}
	}
	return (s + contract.BudgetSlots + 1) * w
}

// pairs turns a flat field, value reply into a map.
func pairs(v any) map[string]string {
	flat, _ := v.([]any)
	out := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		val, _ := flat[i+1].(string)
		out[k] = val
	}
	return out
}
