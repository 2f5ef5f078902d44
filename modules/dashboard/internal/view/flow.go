package view

import (
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// NavLimits is the flow-control page's nav key.
const NavLimits = "limits"

// NoFlowNote is what the pages say on a backing whose queue does not
// enforce limits in its claim.
const NoFlowNote = "This backing does not enforce limits: caps, rates, weights and budgets cannot be set or shown here."

// FlowLimits are one tenant's limits, or a queue's default, as the pages
// show them and the /api/ twins carry them: contract.Limits with the
// budget's window written as a duration ("1h0m0s", "90s"). The zero
// FlowLimits limit nothing; a field left out means no limit.
type FlowLimits struct {
	MaxLeased int        `json:"max_leased,omitempty"`
	Rate      float64    `json:"rate,omitempty"`
	Burst     int        `json:"burst,omitempty"`
	Weight    int        `json:"weight,omitempty"`
	Budget    FlowBudget `json:"budget,omitzero"`
}

// FlowBudget is contract.Budget with its window as a duration string.
type FlowBudget struct {
	CostMicros int64  `json:"cost_micros,omitempty"`
	Tokens     int64  `json:"tokens,omitempty"`
	Window     string `json:"window,omitempty"`
}

// FlowLimitsOf is l as the pages show it.
func FlowLimitsOf(l contract.Limits) FlowLimits {
	f := FlowLimits{MaxLeased: l.MaxLeased, Rate: l.Rate, Burst: l.Burst, Weight: l.Weight,
		Budget: FlowBudget{CostMicros: l.Budget.CostMicros, Tokens: l.Budget.Tokens}}
	if l.Budget.Window != 0 {
		f.Budget.Window = l.Budget.Window.String()
	}
	return f
}

// IsZero reports whether f limits nothing.
func (f FlowLimits) IsZero() bool { return f == FlowLimits{} }

// FlowRow is one tenant's flow-control standing in a queue: the limits
// that apply (its own, or the queue's default), its live leases against
// the cap, the tokens in its rate bucket, the usage counted in its budget
// window, and why a claim would pass it over now.
type FlowRow struct {
	Tenant string     `json:"tenant"`
	Limits FlowLimits `json:"limits"`
	// Own is true when the limits are the tenant's own, false when they
	// are the queue's default.
	Own bool `json:"own"`
	// Leased counts live (unexpired) leases, which the cap counts.
	Leased     int            `json:"leased"`
	RateTokens float64        `json:"rate_tokens"`
	BudgetUsed contract.Usage `json:"budget_used"`
	// Held is "cap", "rate" or "budget" when a claim now would pass the
	// tenant over, "" when it would not; Until is when a rate or budget
	// hold ends at the latest (zero for a cap, which ends with a lease).
	Held  string    `json:"held,omitempty"`
	Until time.Time `json:"until,omitzero"`
}

// FlowRowOf is tf as the pages show it.
func FlowRowOf(tf contract.TenantFlow) FlowRow {
	return FlowRow{Tenant: tf.Tenant, Limits: FlowLimitsOf(tf.Limits), Own: tf.Own, Leased: tf.Leased,
		RateTokens: tf.RateTokens, BudgetUsed: tf.BudgetUsed, Held: string(tf.Held), Until: tf.Until}
}

// FlowForm is the limits form's fields as typed, so a refused form comes
// back as it was sent.
type FlowForm struct {
	MaxLeased, Rate, Burst, Weight, CostMicros, Tokens, Window string
}

// FlowFormOf fills the form with f.
func FlowFormOf(f FlowLimits) FlowForm {
	num := func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	ff := FlowForm{MaxLeased: num(int64(f.MaxLeased)), Burst: num(int64(f.Burst)), Weight: num(int64(f.Weight)),
		CostMicros: num(f.Budget.CostMicros), Tokens: num(f.Budget.Tokens), Window: f.Budget.Window}
	if f.Rate != 0 {
		ff.Rate = strconv.FormatFloat(f.Rate, 'g', -1, 64)
	}
	return ff
}

// Limits is the flow-control page: a queue's default limits and every
// tenant's standing (or one tenant's, when the page names it), with the
// form that edits the default or that tenant's own limits.
type Limits struct {
	Chrome `json:"-"`
	Queue  string `json:"queue"`
	// Enforced is false on a backing that does not enforce limits; Note
	// then says so, and nothing else is shown.
	Enforced bool       `json:"enforced"`
	Note     string     `json:"note,omitempty"`
	Default  FlowLimits `json:"default"`
	Tenants  []FlowRow  `json:"tenants"`
	// Tenant is the tenant the page narrows to and its form edits; ""
	// for the queue's default.
	Tenant string `json:"tenant,omitempty"`
	// Own is true when Tenant has limits of its own.
	Own  bool     `json:"-"`
	Form FlowForm `json:"-"`
	// Problem is why the form's last submission was refused, Field the
	// form field it names; nothing was changed.
	Problem string `json:"-"`
	Field   string `json:"-"`
	// CanEdit is true when this request may change limits; EditReason
	// says why not otherwise.
	CanEdit    bool   `json:"-"`
	EditReason string `json:"-"`
}

// CapText is the live leases against the cap: "2 of 2", or "1, no cap".
func CapText(r FlowRow) string {
	if r.Limits.MaxLeased > 0 {
		return Num(r.Leased) + " of " + Num(r.Limits.MaxLeased)
	}
	return Num(r.Leased) + ", no cap"
}

// RateText is the bucket's tokens against its size and the rate:
// "2.5 of 10 tokens at 5/s", or "—" without a rate.
func RateText(r FlowRow) string {
	if r.Limits.Rate <= 0 {
		return "—"
	}
	l := contract.Limits{Rate: r.Limits.Rate, Burst: r.Limits.Burst}
	return trimFloat(r.RateTokens, 1) + " of " + Count(l.EffectiveBurst(), "token") + " at " + trimFloat(r.Limits.Rate, 3) + "/s"
}

// BudgetText is the usage counted in the window against each ceiling:
// "cost 12,000 of 50,000 µ¤ · tokens 900 of 1,000 per 1h0m0s", or "—"
// without a budget.
func BudgetText(r FlowRow) string {
	b := r.Limits.Budget
	if b.CostMicros == 0 && b.Tokens == 0 {
		return "—"
	}
	var parts []string
	if b.CostMicros > 0 {
		parts = append(parts, "cost "+Num(r.BudgetUsed.CostMicros)+" of "+Num(b.CostMicros)+" micros")
	}
	if b.Tokens > 0 {
		parts = append(parts, "tokens "+Num(r.BudgetUsed.Tokens)+" of "+Num(b.Tokens))
	}
	return strings.Join(parts, " · ") + " per " + windowText(b.Window)
}

// LimitsText sums limits up in one line: "cap 2 · 5/s (burst 10) ·
// weight 3 · tokens 1,000 per 1h0m0s", or "no limits".
func LimitsText(f FlowLimits) string {
	var parts []string
	if f.MaxLeased > 0 {
		parts = append(parts, "cap "+Num(f.MaxLeased))
	}
	if f.Rate > 0 {
		s := trimFloat(f.Rate, 3) + "/s"
		if f.Burst > 0 {
			s += " (burst " + Num(f.Burst) + ")"
		}
		parts = append(parts, s)
	}
	if f.Weight > 1 {
		parts = append(parts, "weight "+Num(f.Weight))
	}
	if f.Budget.CostMicros > 0 || f.Budget.Tokens > 0 {
		var b []string
		if f.Budget.CostMicros > 0 {
			b = append(b, "cost "+Num(f.Budget.CostMicros)+" micros")
		}
		if f.Budget.Tokens > 0 {
			b = append(b, "tokens "+Num(f.Budget.Tokens))
		}
		parts = append(parts, strings.Join(b, " and ")+" per "+windowText(f.Budget.Window))
	}
	if len(parts) == 0 {
		return "no limits"
	}
	return strings.Join(parts, " · ")
}

// HeldText says why a claim would pass the tenant over now, and until
// when: "held by its cap", "held by its rate until 12:00:03 (in 2s)".
func HeldText(held string, until, now time.Time) string {
	if held == "" {
		return ""
	}
	s := "held by its " + held
	if !until.IsZero() {
		s += " until " + Clock(until, now)
		if until.After(now) {
			s += " (in " + Dur(until.Sub(now)) + ")"
		}
	}
	return s
}

// windowText is a budget window as people read it: "1h00m", "30.0s".
func windowText(w string) string {
	if d, err := time.ParseDuration(w); err == nil {
		return Dur(d)
	}
	return w
}

// trimFloat formats v with at most prec decimals and no trailing zeros.
func trimFloat(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
