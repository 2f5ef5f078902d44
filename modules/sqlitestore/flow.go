package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adkit/adk/modules/contract"
)

var _ contract.FlowController = (*workQueue)(nil)

// heldTenant is a tenant a claim passed over, for the claim's report.
type heldTenant struct {
	tenant string
	why    contract.HeldReason
	until  time.Time
}

// report fills the caller's claim report, when it asked for one, with the
// tenants a committed claim passed over.
func report(ctx context.Context, held []heldTenant) {
	r := contract.ClaimReportFrom(ctx)
	if r == nil {
		return
	}
	for _, h := range held {
		r.Note(h.why, h.until)
	}
}

// limitsRow is the columns of an adk_limits row, in the order of the
// queries that read one.
type limitsRow struct {
	maxLeased, burst, weight   int
	rate                       float64
	cost, tokens, windowMillis int64
}

func (r *limitsRow) dest() []any {
	return []any{&r.maxLeased, &r.rate, &r.burst, &r.weight, &r.cost, &r.tokens, &r.windowMillis}
}

func (r limitsRow) limits() contract.Limits {
	return contract.Limits{MaxLeased: r.maxLeased, Rate: r.rate, Burst: r.burst, Weight: r.weight,
		Budget: contract.Budget{CostMicros: r.cost, Tokens: r.tokens, Window: time.Duration(r.windowMillis) * time.Millisecond}}
}

// getLimits reads the limits row of tenant ("" for the queue's default).
func getLimits(ctx context.Context, e execer, queue, tenant string) (contract.Limits, bool, error) {
	var r limitsRow
	err := e.QueryRowContext(ctx, limitsGetSQL, queue, tenant).Scan(r.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return contract.Limits{}, false, nil
	}
	if err != nil {
		return contract.Limits{}, false, err
	}
	return r.limits(), true, nil
}

// effectiveLimits reads the limits that apply to tenant: its own, else
// the queue's default.
func effectiveLimits(ctx context.Context, e execer, queue, tenant string) (contract.Limits, bool, error) {
	l, own, err := getLimits(ctx, e, queue, tenant)
	if err != nil || own {
		return l, own, err
	}
	l, _, err = getLimits(ctx, e, queue, "")
	return l, false, err
}

// tenantKey names a tenant of a queue.
type tenantKey struct{ queue, tenant string }

// capHolds are the tenants with due work that a claim of this backing
// passed over for their cap. When a lease of one of them ends, the queue's
// claimers are woken: the tenant may be served again. A settle costs no
// statement for it, and one of a queue that holds nobody back costs
// nothing. Claims made by other processes on the file are not seen here,
// but their claimers hear of this process's commits through the file's
// change counter (see Subscribe).
type capHolds struct {
	mu sync.Mutex
	n  atomic.Int64 // len(held), read without the lock
	// held maps each held tenant to its queue.
	held map[tenantKey]struct{}
}

// note records the tenants a committed claim of queue passed over for
// their cap.
func (h *capHolds) note(queue string, held []heldTenant) {
	for _, t := range held {
		if t.why != contract.HeldCap {
			continue
		}
		h.mu.Lock()
		if h.held == nil {
			h.held = map[tenantKey]struct{}{}
		}
		h.held[tenantKey{queue, t.tenant}] = struct{}{}
		h.n.Store(int64(len(h.held)))
		h.mu.Unlock()
	}
}

// ended wakes the claimers of each queue where a lease of a held tenant
// ended, and forgets those tenants.
func (h *capHolds) ended(q *workQueue, keys []tenantKey) {
	if h.n.Load() == 0 || len(keys) == 0 {
		return
	}
	var wake []string
	h.mu.Lock()
	for _, k := range keys {
		if _, ok := h.held[k]; ok {
			delete(h.held, k)
			if !slices.Contains(wake, k.queue) {
				wake = append(wake, k.queue)
			}
		}
	}
	h.n.Store(int64(len(h.held)))
	h.mu.Unlock()
	for _, name := range wake {
		q.wake(name)
	}
}

// SetLimits writes tenant's limits row (the queue's default when tenant
// is ""), or deletes it for the zero Limits, and wakes the queue's
// claimers.
func (q *workQueue) SetLimits(ctx context.Context, queue, tenant string, l contract.Limits) error {
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		before, _, err := effectiveLimits(ctx, e, queue, tenant)
		if err != nil {
			return err
		}
		if l.IsZero() {
			_, err = e.ExecContext(ctx, limitsDeleteSQL, queue, tenant)
		} else {
			_, err = e.ExecContext(ctx, limitsPutSQL, queue, tenant, l.MaxLeased, l.Rate, l.Burst, l.Weight,
				l.Budget.CostMicros, l.Budget.Tokens, l.Budget.Window.Milliseconds())
		}
		if err != nil {
			return err
		}
		after, _, err := effectiveLimits(ctx, e, queue, tenant)
		if err != nil {
			return err
		}
		if !before.Budget.IsZero() && !after.Budget.IsZero() && before.Budget.Window != after.Budget.Window {
			// A new window starts the count afresh, as on every backing.
			_, err = e.ExecContext(ctx, usageResetSQL, queue, tenant)
		}
		return err
	})
	if err != nil {
		return queueErr(ctx, err)
	}
	q.wake(queue)
	return nil
}

// Limits returns every limits row of queue.
func (q *workQueue) Limits(ctx context.Context, queue string) (contract.QueueLimits, error) {
	out := contract.QueueLimits{Queue: queue, Tenants: map[string]contract.Limits{}}
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		var err error
		out.Default, out.Tenants, err = listLimits(ctx, e, queue)
		return err
	})
	if err != nil {
		return contract.QueueLimits{}, queueErr(ctx, err)
	}
	return out, nil
}

func listLimits(ctx context.Context, e execer, queue string) (contract.Limits, map[string]contract.Limits, error) {
	var def contract.Limits
	tenants := map[string]contract.Limits{}
	rows, err := e.QueryContext(ctx, limitsListSQL, queue)
	if err != nil {
		return def, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var r limitsRow
		if err := rows.Scan(append([]any{&t}, r.dest()...)...); err != nil {
			return def, nil, err
		}
		if t == "" {
			def = r.limits()
		} else {
			tenants[t] = r.limits()
		}
	}
	return def, tenants, rows.Err()
}

// usageSlot returns the width (ms) and first millisecond of the slot a
// charge at nowMillis is filed under with budget b (which is not zero).
func usageSlot(b contract.Budget, nowMillis int64) (width, start int64) {
	width = max(b.SlotMillis(), 1)
	s := nowMillis / width
	if nowMillis < 0 && nowMillis%width != 0 {
		s--
	}
	return width, s * width
}

// Charge adds u to the tenant's slot of now, filed by the slot width of
// the budget that applies to it, and forgets the tenant's charges no
// window can count any more. A tenant without a budget keeps no usage.
func (q *workQueue) Charge(ctx context.Context, queue, tenant string, u contract.Usage) error {
	ms := q.clock.Now().UnixMilli()
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		l, _, err := effectiveLimits(ctx, e, queue, tenant)
		if err != nil || l.Budget.IsZero() {
			return err // usage is kept under a budget only
		}
		width, start := usageSlot(l.Budget, ms)
		if _, err := e.ExecContext(ctx, usageAddSQL, queue, tenant, start, u.CostMicros, u.Tokens); err != nil {
			return err
		}
		_, err = e.ExecContext(ctx, usagePruneSQL, queue, tenant, start-contract.BudgetSlots*width)
		return err
	})
	return queueErr(ctx, err)
}

// usageRow is one slot of a tenant's charges.
type usageRow struct {
	start int64
	used  contract.Usage
}

// budgetStanding reads the tenant's charges in the window of b at now and
// returns the usage they sum to and, when that reaches a ceiling, when it
// no longer will if nothing more is charged: the start of the first later
// slot whose window leaves enough of the charges behind.
func budgetStanding(ctx context.Context, e execer, queue, tenant string, b contract.Budget, now time.Time) (contract.Usage, time.Time, error) {
	var used contract.Usage
	if b.IsZero() {
		return used, time.Time{}, nil
	}
	width, start := usageSlot(b, now.UnixMilli())
	rows, err := e.QueryContext(ctx, usageWindowSQL, queue, tenant, start-contract.BudgetSlots*width, start+width)
	if err != nil {
		return used, time.Time{}, err
	}
	var slots []usageRow
	for rows.Next() {
		var r usageRow
		if err := rows.Scan(&r.start, &r.used.CostMicros, &r.used.Tokens); err != nil {
			rows.Close()
			return used, time.Time{}, err
		}
		slots = append(slots, r)
		used.CostMicros += r.used.CostMicros
		used.Tokens += r.used.Tokens
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return used, time.Time{}, err
	}
	if !contract.OverBudget(b, used) {
		return used, time.Time{}, nil
	}
	// The window of slot k counts the charges of slots k-10..k: walk k
	// forward, dropping the oldest slots as they leave it.
	left := used
	for k := start + width; ; k += width {
		from := k - contract.BudgetSlots*width
		for len(slots) > 0 && slots[0].start < from {
			left.CostMicros -= slots[0].used.CostMicros
			left.Tokens -= slots[0].used.Tokens
			slots = slots[1:]
		}
		if !contract.OverBudget(b, left) {
			return used, time.UnixMilli(k).UTC(), nil
		}
	}
}

// rateUntil is when the bucket next has a token, as a time.
func rateUntil(b contract.RateBucket, l contract.Limits) time.Time {
	return time.UnixMicro(int64(math.Ceil(b.Next(l)))).UTC()
}

// FlowStatus reports every tenant of queue that holds items or limits of
// its own: the limits that apply, its live leases, rate tokens and budget
// used now, and what a claim now would hold it back for. It reads with two
// statements, prepared once per backing, and one more per tenant that has
// a budget; it never scans the queue's items.
func (q *workQueue) FlowStatus(ctx context.Context, queue string) ([]contract.TenantFlow, error) {
	now := q.clock.Now()
	out := []contract.TenantFlow{}
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		e = q.db.cachedReads(e)
		def, _, err := getLimits(ctx, e, queue, "")
		if err != nil {
			return err
		}
		type standing struct {
			flow contract.TenantFlow
			tat  float64
		}
		var list []standing
		rows, err := e.QueryContext(ctx, flowTenantsSQL, queue, nanos(now))
		if err != nil {
			return err
		}
		for rows.Next() {
			var s standing
			var r nullLimits
			if err := rows.Scan(append([]any{&s.flow.Tenant, &s.tat, &s.flow.Leased, &s.flow.Own}, r.dest()...)...); err != nil {
				rows.Close()
				return err
			}
			s.flow.Limits = def
			if s.flow.Own {
				s.flow.Limits = r.row().limits()
			}
			list = append(list, s)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		micros := contract.UnixMicros(now)
		for _, s := range list {
			f, l := s.flow, s.flow.Limits
			bucket := contract.RateBucket{TAT: s.tat}
			f.RateTokens = bucket.Tokens(l, micros)
			var until time.Time
			if f.BudgetUsed, until, err = budgetStanding(ctx, e, queue, f.Tenant, l.Budget, now); err != nil {
				return err
			}
			switch {
			case l.MaxLeased > 0 && f.Leased >= l.MaxLeased:
				f.Held = contract.HeldCap
			case !bucket.Allows(l, micros):
				f.Held, f.Until = contract.HeldRate, rateUntil(bucket, l)
			case !until.IsZero():
				f.Held, f.Until = contract.HeldBudget, until
			}
			out = append(out, f)
		}
		return nil
	})
	if err != nil {
		return nil, queueErr(ctx, err)
	}
	return out, nil // flow_tenants.sql orders them by name
}

// nullLimits is a limits row read through a LEFT JOIN: NULL columns when
// the tenant has none of its own.
type nullLimits struct {
	maxLeased, burst, weight   sql.NullInt64
	rate                       sql.NullFloat64
	cost, tokens, windowMillis sql.NullInt64
}

func (n *nullLimits) dest() []any {
	return []any{&n.maxLeased, &n.rate, &n.burst, &n.weight, &n.cost, &n.tokens, &n.windowMillis}
}

func (n nullLimits) row() limitsRow {
	return limitsRow{maxLeased: int(n.maxLeased.Int64), rate: n.rate.Float64, burst: int(n.burst.Int64), weight: int(n.weight.Int64),
		cost: n.cost.Int64, tokens: n.tokens.Int64, windowMillis: n.windowMillis.Int64}
}

// flowClaim is one claim of a queue with limits or paused tenants, inside
// the claim's write transaction: the counters it was given, what it
// leased and whom it passed over.
//
// It walks the rotation from its front by stamp, with a cursor. A tenant
// that comes up is checked for its pause, then against the limits that
// apply to it (its own, else the queue's default) in the order cap, rate,
// budget; the first
// that holds passes it over: nothing of it changes (stamp, credit, rate
// bucket), the cursor moves past it, and the claim goes on to the next
// tenant. A tenant that is free is served one item at a time, re-checked
// before each, until its turn is over (weight w: w items in a row), it
// is held, it has nothing more due, or the batch is full. A tenant whose
// turn is over takes a new stamp, the back of the rotation, where the
// cursor meets it again in a later round of the same claim.
//
// The write lock makes the counts exact: the transaction sees every
// lease committed before it, and no other writer runs until it commits.
// The claim counts the live leases of each tenant a cap applies to once,
// at its now, in the read of the rotation that first returns the tenant
// (a lease that has expired stops counting whether or not it has been
// reaped), and adds those it hands out, so a cap holds however many
// claimers there are. A tenant without a cap costs no count.
type flowClaim struct {
	e       execer
	req     contract.ClaimRequest
	now     time.Time
	at      int64 // now in nanoseconds
	expires int64

	stamp, turn, token int64
	pauses             bool // some tenants of the queue are paused

	def     contract.Limits
	budgets bool           // a budget applies to some tenant
	leased  map[string]int // live leases by tenant, when a cap applies
	// page is the length of the claim's last read of the rotation (0
	// before the first). byTenant holds the live leases of every
	// tenant, read once when the claim reads a further page having
	// passed manyHeld tenants over: from then on the rotation's reads
	// count nothing, and the pages double. It is used only for tenants
	// read after it, to which the claim has leased nothing yet, so their
	// counts are those at the claim's start.
	page     int
	byTenant map[string]int
	out      []contract.Lease
	held     []heldTenant
	noted    map[string]bool
}

// manyHeld is how many tenants a flow claim passes over before its
// further reads of the rotation count live leases in one grouped pass
// (leased_by_tenant.sql) instead of one pass per tenant. Below it the
// per-tenant counts of a page are cheaper than the grouped pass.
const manyHeld = 8

// flowHead is one row of the rotation as flow_heads.sql returns it.
type flowHead struct {
	tenant     string
	stamp      int64
	credit     int
	tat        float64
	ranked     bool
	paused     bool
	own        bool
	limits     limitsRow
	overBudget bool
}

func (c *flowClaim) run(ctx context.Context) error {
	cursor := int64(math.MinInt64)
	for len(c.out) < c.req.Max {
		heads, err := c.heads(ctx, cursor, c.req.Max-len(c.out))
		if err != nil {
			return err
		}
		if len(heads) == 0 {
			return nil
		}
		for _, h := range heads {
			if len(c.out) == c.req.Max {
				return nil
			}
			cursor = h.stamp
			if err := c.serve(ctx, h); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *flowClaim) heads(ctx context.Context, after int64, n int) ([]flowHead, error) {
	// Two more rows than the batch has room for: a tenant or two held
	// back at the front then cost no second read.
	n += 2
	if c.page > 0 && len(c.held) >= manyHeld {
		// Many tenants held ahead: read further at once, and count every
		// tenant's leases in one pass rather than one pass per tenant.
		n = min(max(n, 2*c.page), 1024)
		if c.leased != nil && c.byTenant == nil {
			var err error
			if c.byTenant, err = leasesByTenant(ctx, c.e, c.req.Queue, c.at); err != nil {
				return nil, err
			}
		}
	}
	c.page = n
	count := c.leased != nil && c.byTenant == nil
	var rows *sql.Rows
	var err error
	if d := c.def.Budget; c.budgets {
		rows, err = c.e.QueryContext(ctx, flowHeadsSQL, c.req.Queue, c.at, after, n,
			d.Window.Milliseconds(), d.CostMicros, d.Tokens, c.now.UnixMilli(), c.pauses, c.def.MaxLeased, count)
	} else {
		rows, err = c.e.QueryContext(ctx, flowHeadsPlainSQL, c.req.Queue, c.at, after, n, c.pauses, c.def.MaxLeased, count)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []flowHead
	for rows.Next() {
		var h flowHead
		var r nullLimits
		var live int
		dest := append([]any{&h.tenant, &h.stamp, &h.credit, &h.tat, &h.ranked, &h.paused, &h.own}, r.dest()...)
		if err := rows.Scan(append(dest, &h.overBudget, &live)...); err != nil {
			return nil, err
		}
		h.limits = r.row()
		if _, seen := c.leased[h.tenant]; c.leased != nil && !seen {
			// Counted before the claim leased it anything (a tenant is
			// served only once read): the claim adds its own leases.
			if c.byTenant != nil {
				live = c.byTenant[h.tenant]
			}
			c.leased[h.tenant] = live
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// leasesByTenant returns the live leases at at of each tenant of queue
// that holds one.
func leasesByTenant(ctx context.Context, e execer, queue string, at int64) (map[string]int, error) {
	rows, err := e.QueryContext(ctx, leasedByTenantSQL, queue, at)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var tenant string
		var n int
		if err := rows.Scan(&tenant, &n); err != nil {
			return nil, err
		}
		out[tenant] = n
	}
	return out, rows.Err()
}

// hold records that the claim passed tenant over, once per claim.
func (c *flowClaim) hold(tenant string, why contract.HeldReason, until time.Time) {
	if c.noted[tenant] {
		return
	}
	if c.noted == nil {
		c.noted = map[string]bool{}
	}
	c.noted[tenant] = true
	c.held = append(c.held, heldTenant{tenant: tenant, why: why, until: until})
}

// check returns why the tenant of h is held back now, if it is, and
// until when for a rate or a budget: its pause first, then the limits l
// in the order cap, rate, budget.
func (c *flowClaim) check(ctx context.Context, h *flowHead, l contract.Limits, micros float64) (contract.HeldReason, time.Time, error) {
	if h.paused {
		return contract.HeldPaused, time.Time{}, nil
	}
	if l.MaxLeased > 0 && c.leased[h.tenant] >= l.MaxLeased {
		return contract.HeldCap, time.Time{}, nil
	}
	if b := (contract.RateBucket{TAT: h.tat}); !b.Allows(l, micros) {
		return contract.HeldRate, rateUntil(b, l), nil
	}
	if !h.overBudget {
		return contract.HeldNone, time.Time{}, nil
	}
	// Over budget (charges do not change during a claim): read the
	// charges once more for when the hold ends.
	_, until, err := budgetStanding(ctx, c.e, c.req.Queue, h.tenant, l.Budget, c.now)
	if err != nil || until.IsZero() {
		return contract.HeldNone, time.Time{}, err
	}
	return contract.HeldBudget, until, nil
}

// serve serves the tenant of h up to the rest of its turn.
func (c *flowClaim) serve(ctx context.Context, h flowHead) error {
	name := c.req.Queue
	l := c.def
	if h.own {
		l = h.limits.limits()
	}
	w := l.EffectiveWeight()
	micros := contract.UnixMicros(c.now)
	for len(c.out) < c.req.Max {
		why, until, err := c.check(ctx, &h, l, micros)
		if err != nil {
			return err
		}
		if why != contract.HeldNone {
			c.hold(h.tenant, why, until)
			return nil
		}
		id, wake, err := nextItem(ctx, c.e, name, h.tenant, h.ranked, c.at)
		if err != nil {
			return err
		}
		if id == "" {
			// Nothing due after all (its wake time was ahead of its
			// items): put the wake time right and pass it over.
			_, err := c.e.ExecContext(ctx, turnWakeSQL, name, h.tenant, wake, c.at)
			return err
		}
		c.token++
		c.turn++
		lease, err := scanClaimed(ctx, c.e, c.e.QueryRowContext(ctx, claimLeaseSQL, name, h.tenant, id, c.req.Worker, c.expires, c.token))
		if err != nil {
			return err
		}
		if c.leased != nil {
			c.leased[h.tenant]++
		}
		h.tat = contract.RateBucket{TAT: h.tat}.Take(l, micros).TAT
		h.credit++
		due, _ := wake.(int64)
		more := wake != nil && due <= c.at
		switch {
		case wake == nil:
			h.credit = 0 // it leaves the rotation; a new item starts a new turn
		case h.credit >= w:
			h.credit = 0
			c.stamp++
			h.stamp = c.stamp
		}
		if _, err := c.e.ExecContext(ctx, turnServedFlowSQL, name, h.tenant, h.stamp, wake, h.credit, h.tat, c.at); err != nil {
			return err
		}
		if _, err := c.e.ExecContext(ctx, recentPutSQL, name, c.turn, h.tenant, id, c.req.Worker, c.at); err != nil {
			return err
		}
		c.out = append(c.out, lease)
		if !more || h.credit == 0 {
			// Nothing more due now, or its turn is over: a new stamp puts
			// it behind the cursor's walk, which meets it again there.
			return nil
		}
	}
	return nil
}
