package contract

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Flow-control bounds: values past them are refused as absurd.
const (
	// MaxLimitLeased is the largest Limits.MaxLeased and Limits.Burst.
	MaxLimitLeased = 1_000_000
	// MaxRate is the largest Limits.Rate, in claims per second.
	MaxRate = 1_000_000
	// MaxWeight is the largest Limits.Weight.
	MaxWeight = 1000
	// MinBudgetWindow and MaxBudgetWindow bound Budget.Window.
	MinBudgetWindow = time.Second
	MaxBudgetWindow = 366 * 24 * time.Hour
	// BudgetSlots is how many slots a budget window is cut into: usage is
	// kept per slot of Window/BudgetSlots, see [Budget].
	BudgetSlots = 10
)

// Limits are the flow-control settings of one tenant in one queue, or the
// default of a queue's tenants that have none of their own. Every field's
// zero value means "no limit" (Weight: 1), so the zero Limits limit
// nothing. They are decided inside the claim: a tenant a limit holds back
// is passed over within the same claim (the batch fills from the other
// tenants), keeps its place in the rotation, is charged no attempt and is
// never dead-lettered for it.
type Limits struct {
	// MaxLeased caps the tenant's live leases: a claim serves it only
	// while fewer than MaxLeased of its leases have not yet expired. A
	// lease stops counting when it is settled or when it expires, whether
	// or not it has been reaped. 0: no cap; at most MaxLimitLeased.
	MaxLeased int `json:"max_leased,omitempty"`
	// Rate caps the tenant's claims per second with a token bucket of
	// Burst tokens that starts full and refills at Rate tokens per second
	// on the backing's Clock; each claimed item takes a token. 0: no rate;
	// at most MaxRate.
	Rate float64 `json:"rate,omitempty"`
	// Burst is the bucket's size; 0 means ceil(Rate), at least 1. It is
	// allowed only with a Rate.
	Burst int `json:"burst,omitempty"`
	// Weight is the tenant's share of the rotation: at the head of it, a
	// tenant of weight w is served up to w items in a row before it goes
	// to the back, so while both have work a tenant of weight 3 gets three
	// turns for each one of a tenant of weight 1. 0 means 1; at most
	// MaxWeight.
	Weight int `json:"weight,omitempty"`
	// Budget caps the usage charged to the tenant ([FlowController.Charge])
	// over a rolling window: a tenant at or over a ceiling is not served
	// until the window has room again.
	Budget Budget `json:"budget,omitzero"`
}

// Budget is a ceiling on the usage charged to a tenant within a rolling
// window. The window is kept as BudgetSlots slots of Window/BudgetSlots
// each (slot n covers [n×slot, (n+1)×slot) of Unix time in
// milliseconds): the usage counted at a moment is the sum of the charges
// in its slot and the BudgetSlots slots before it, so a charge counts for
// at least Window and at most Window plus one slot, never less. Every
// backing counts the same way.
type Budget struct {
	// CostMicros is the ceiling on charged cost, in millionths of the
	// currency unit. 0: no ceiling on cost.
	CostMicros int64 `json:"cost_micros,omitempty"`
	// Tokens is the ceiling on charged model tokens. 0: no ceiling.
	Tokens int64 `json:"tokens,omitempty"`
	// Window is the rolling window, from MinBudgetWindow to
	// MaxBudgetWindow, a whole number of milliseconds. Required when a
	// ceiling is set, and then only.
	Window time.Duration `json:"window,omitempty"`
}

// IsZero reports whether b sets no ceiling.
func (b Budget) IsZero() bool { return b == Budget{} }

// SlotMillis is the width of one slot of the window, in milliseconds.
func (b Budget) SlotMillis() int64 { return b.Window.Milliseconds() / BudgetSlots }

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// EffectiveWeight is l.Weight, or 1 when unset.
func (l Limits) EffectiveWeight() int {
	if l.Weight <= 0 {
		return 1
	}
	return l.Weight
}

// EffectiveBurst is l.Burst, or ceil(l.Rate) (at least 1) when unset.
func (l Limits) EffectiveBurst() int {
	if l.Burst > 0 {
		return l.Burst
	}
	return max(1, int(math.Ceil(l.Rate)))
}

// Usage is what one piece of work cost: charged to its tenant with
// [FlowController.Charge] and counted against the tenant's Budget.
type Usage struct {
	CostMicros int64 `json:"cost_micros,omitempty"`
	Tokens     int64 `json:"tokens,omitempty"`
}

// HeldReason says why a claim passes a tenant over.
type HeldReason string

// The reasons a tenant with due work is held back, in the order a claim
// checks them: the first that holds is reported.
const (
	HeldNone   HeldReason = ""
	HeldCap    HeldReason = "cap"    // MaxLeased live leases
	HeldRate   HeldReason = "rate"   // no token in the bucket
	HeldBudget HeldReason = "budget" // a ceiling reached in the window
	HeldPaused HeldReason = "paused" // the tenant is paused (LifecycleController.Pause)
)

// QueueLimits are every limit set on one queue: the default and each
// tenant's own, by tenant.
type QueueLimits struct {
	Queue   string            `json:"queue"`
	Default Limits            `json:"default"`
	Tenants map[string]Limits `json:"tenants"`
}

// For returns the limits that apply to tenant: its own when set, otherwise
// the queue's default.
func (ql QueueLimits) For(tenant string) (Limits, bool) {
	if l, ok := ql.Tenants[tenant]; ok {
		return l, true
	}
	return ql.Default, false
}

// TenantFlow is one tenant's flow-control standing in a queue at a moment,
// as [FlowController.FlowStatus] reports it.
type TenantFlow struct {
	Tenant string `json:"tenant"`
	// Limits are those that apply (Own: the tenant's own, otherwise the
	// queue's default).
	Limits Limits `json:"limits"`
	Own    bool   `json:"own"`
	// Leased counts the tenant's live (unexpired) leases.
	Leased int `json:"leased"`
	// RateTokens is how many tokens the bucket holds now (0 without a
	// Rate).
	RateTokens float64 `json:"rate_tokens"`
	// BudgetUsed is the usage counted in the window now.
	BudgetUsed Usage `json:"budget_used"`
	// Held says why a claim now would pass the tenant over, HeldNone when
	// it would not (whether or not it has due work).
	Held HeldReason `json:"held,omitempty"`
	// Until is when a rate or budget hold ends at the latest, if nothing
	// more is charged; zero for a cap (it ends when a lease does) and when
	// not held.
	Until time.Time `json:"until,omitzero"`
}

// FlowController is implemented by queues that enforce tenant limits in
// the claim: every backing in the kit. Limits are kept by the backing (the
// durable ones keep them across restarts).
type FlowController interface {
	// SetLimits sets tenant's limits in queue, or the queue's default
	// when tenant is "". The zero Limits removes them (the tenant then
	// follows the default; a queue without a default limits nothing).
	// Claimers are woken, since the change may free held tenants.
	SetLimits(ctx context.Context, queue, tenant string, l Limits) error
	// Limits returns the limits set on queue.
	Limits(ctx context.Context, queue string) (QueueLimits, error)
	// Charge adds u to tenant's usage in queue now, counted against the
	// Budget that applies to the tenant. It needs no lease. Usage is kept
	// per budget: a tenant without one keeps none, and a change of the
	// Window starts the count afresh.
	Charge(ctx context.Context, queue, tenant string, u Usage) error
	// FlowStatus reports the standing of every tenant of queue that has
	// items or limits of its own, by tenant name.
	FlowStatus(ctx context.Context, queue string) ([]TenantFlow, error)
}

// AsFlowController returns q's FlowController when q has one that
// enforces.
func AsFlowController(q WorkQueue) (FlowController, bool) {
	f, ok := q.(FlowController)
	return f, ok && CapabilitiesOf(q).Flow
}

// ValidateLimits checks l, naming the field and the fix.
func ValidateLimits(l Limits) error {
	bad := func(field, problem string) error {
		return &ValidationError{Field: "Limits." + field, Problem: problem}
	}
	switch {
	case l.MaxLeased < 0 || l.MaxLeased > MaxLimitLeased:
		return bad("MaxLeased", fmt.Sprintf("is %d; give 0 (no cap) to %d", l.MaxLeased, MaxLimitLeased))
	case math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0):
		return bad("Rate", "is not a number; give claims per second, 0 for no rate")
	case l.Rate < 0 || l.Rate > MaxRate:
		return bad("Rate", fmt.Sprintf("is %v; give 0 (no rate) to %d claims per second", l.Rate, MaxRate))
	case l.Burst < 0 || l.Burst > MaxLimitLeased:
		return bad("Burst", fmt.Sprintf("is %d; give 0 (ceil(Rate)) to %d", l.Burst, MaxLimitLeased))
	case l.Burst > 0 && l.Rate == 0:
		return bad("Burst", "is set without a Rate; set Rate too, or leave Burst 0")
	case l.Weight < 0 || l.Weight > MaxWeight:
		return bad("Weight", fmt.Sprintf("is %d; give 0 (weight 1) to %d", l.Weight, MaxWeight))
	case l.Budget.CostMicros < 0:
		return bad("Budget.CostMicros", "is negative; give 0 (no ceiling) or a positive ceiling")
	case l.Budget.Tokens < 0:
		return bad("Budget.Tokens", "is negative; give 0 (no ceiling) or a positive ceiling")
	}
	b := l.Budget
	ceiling := b.CostMicros > 0 || b.Tokens > 0
	switch {
	case !ceiling && b.Window != 0:
		return bad("Budget.Window", "is set without a ceiling; set CostMicros or Tokens too, or leave Window 0")
	case ceiling && (b.Window < MinBudgetWindow || b.Window > MaxBudgetWindow):
		return bad("Budget.Window", fmt.Sprintf("is %v; give a window from %v to %v", b.Window, MinBudgetWindow, MaxBudgetWindow))
	case ceiling && b.Window%time.Millisecond != 0:
		return bad("Budget.Window", fmt.Sprintf("is %v; give a whole number of milliseconds", b.Window))
	}
	return nil
}

// ValidateUsage checks a charge.
func ValidateUsage(u Usage) error {
	switch {
	case u.CostMicros < 0:
		return &ValidationError{Field: "Usage.CostMicros", Problem: "is negative; charge what the work cost, 0 or more"}
	case u.Tokens < 0:
		return &ValidationError{Field: "Usage.Tokens", Problem: "is negative; charge the tokens used, 0 or more"}
	}
	return nil
}

// RateBucket is a tenant's token bucket, kept as a theoretical arrival
// time (the generic cell rate algorithm): one number per tenant, in Unix
// microseconds, and the same arithmetic on every backing. The zero value
// is a full bucket.
type RateBucket struct {
	// TAT is when the bucket would be full again, in Unix microseconds.
	TAT float64
}

// interval is the microseconds one token takes to accrue.
func rateInterval(l Limits) float64 { return 1e6 / l.Rate }

// Allows reports whether the bucket has a token at now (Unix
// microseconds): TAT - now ≤ (Burst-1) × interval.
func (b RateBucket) Allows(l Limits, nowMicros float64) bool {
	if l.Rate <= 0 {
		return true
	}
	t := rateInterval(l)
	return b.TAT-nowMicros <= float64(l.EffectiveBurst()-1)*t+1e-6
}

// Take takes one token at now: TAT = max(TAT, now) + interval.
func (b RateBucket) Take(l Limits, nowMicros float64) RateBucket {
	if l.Rate <= 0 {
		return b
	}
	return RateBucket{TAT: max(b.TAT, nowMicros) + rateInterval(l)}
}

// Tokens returns how many tokens the bucket holds at now.
func (b RateBucket) Tokens(l Limits, nowMicros float64) float64 {
	if l.Rate <= 0 {
		return 0
	}
	burst := float64(l.EffectiveBurst())
	return max(0, min(burst, burst-(max(b.TAT, nowMicros)-nowMicros)/rateInterval(l)))
}

// Next returns when the bucket next has a token (Unix microseconds).
func (b RateBucket) Next(l Limits) float64 {
	return b.TAT - float64(l.EffectiveBurst()-1)*rateInterval(l)
}

// UnixMicros is t in Unix microseconds, the unit rate buckets keep.
func UnixMicros(t time.Time) float64 { return float64(t.UnixMicro()) }

// BudgetSlot is the slot of b's window that t falls in.
func BudgetSlot(b Budget, t time.Time) int64 {
	w := b.SlotMillis()
	if w <= 0 {
		return 0
	}
	ms := t.UnixMilli()
	if ms < 0 {
		return (ms - w + 1) / w
	}
	return ms / w
}

// OverBudget reports whether used reaches a ceiling of b.
func OverBudget(b Budget, used Usage) bool {
	return (b.CostMicros > 0 && used.CostMicros >= b.CostMicros) ||
		(b.Tokens > 0 && used.Tokens >= b.Tokens)
}

// ClaimReport is what a claim saw of flow control: how many times it
// passed a tenant over and why, and when the earliest rate or budget hold
// it met ends. A caller that wants it puts one in the context with
// [WithClaimReport]; the backing fills it in, so it needs no new method.
type ClaimReport struct {
	// PassedOver counts the held tenants the claim passed over (a tenant
	// passed over in several rounds of one claim counts once).
	PassedOver int
	// Held counts those tenants by reason.
	Held map[HeldReason]int
	// RetryAt is the earliest moment a rate or budget hold the claim met
	// ends (zero when it met none): a claimer that found nothing may sleep
	// until then instead of its whole poll interval.
	RetryAt time.Time
	// QueuePaused: the whole queue is paused, so the claim served nothing.
	QueuePaused bool
}

// Note records that the claim passed over a tenant held for why, until
// until (zero when the hold ends with a lease).
func (r *ClaimReport) Note(why HeldReason, until time.Time) {
	if r == nil || why == HeldNone {
		return
	}
	r.PassedOver++
	if r.Held == nil {
		r.Held = make(map[HeldReason]int, 3)
	}
	r.Held[why]++
	if !until.IsZero() && (r.RetryAt.IsZero() || until.Before(r.RetryAt)) {
		r.RetryAt = until
	}
}

type claimReportKey struct{}

// WithClaimReport returns ctx carrying r: a claim made with the context
// fills r in.
func WithClaimReport(ctx context.Context, r *ClaimReport) context.Context {
	return context.WithValue(ctx, claimReportKey{}, r)
}

// ClaimReportFrom returns the report ctx carries, nil when none. Backings
// call it in Claim and CompleteAndClaim.
func ClaimReportFrom(ctx context.Context) *ClaimReport {
	r, _ := ctx.Value(claimReportKey{}).(*ClaimReport)
	return r
}
