package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/adkit/adk/modules/contract"
)

const limitsHelp = `usage: adkctl limits <show|set|clear> [--queue NAME] [--tenant NAME | --default] [limit flags] [flags]

Flow control of a queue's tenants, enforced inside every claim: a cap on
live leases, a rate (claims per second, with a burst), a weight (turns in
a row at the head of the rotation) and a budget on the usage handlers
charge over a rolling window.

  show    every tenant with items or limits of its own: the limits that
          apply (own, or the queue's default), live leases against the
          cap, rate tokens, budget used in the window, and why a claim
          now would pass the tenant over (cap, rate or budget) and until when
  set     change the limits of --tenant, or the queue's --default: the
          limit flags given change, the others keep their value
  clear   remove the limits of --tenant (it follows the default again), or
          the queue's --default

limit flags (set): --max-leased N, --rate R, --burst N, --weight N,
--budget-cost MICROS, --budget-tokens N, --budget-window DURATION; 0 removes
that one limit.

examples:
  adkctl limits show --queue agent
  adkctl limits set --queue agent --tenant acme --max-leased 2 --rate 5
  adkctl limits set --queue agent --default --budget-cost 10000000 --budget-window 1h
  adkctl limits clear --queue agent --tenant acme
`

// limitsShowOut is `adkctl limits show --json`; a tenant's fields are
// the dashboard's /api/ ones (contract.TenantFlow).
type limitsShowOut struct {
	Queue   string                `json:"queue"`
	Default contract.Limits       `json:"default"`
	Tenants []contract.TenantFlow `json:"tenants"`
}

// limitsSetOut answers set and clear.
type limitsSetOut struct {
	Queue  string          `json:"queue"`
	Tenant string          `json:"tenant"` // "" for the queue's default
	Limits contract.Limits `json:"limits"` // as they stand now
}

func (a *app) limits(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, limitsHelp)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(a.stdout, limitsHelp)
		return exitOK
	case "show":
		return a.limitsShow(ctx, args[1:])
	case "set", "clear":
		return a.limitsSet(ctx, args[0], args[1:])
	}
	fmt.Fprintf(a.stderr, "adkctl limits: unknown command %q: give show, set or clear (adkctl limits --help)\n", args[0])
	return exitUsage
}

// flowOf returns the backing's FlowController.
func (c *command) flowOf() (contract.FlowController, error) {
	fc, ok := contract.AsFlowController(c.b.Queue)
	if !ok {
		return nil, fmt.Errorf("the %s backing does not enforce limits: %w", c.b.Name, errors.ErrUnsupported)
	}
	return fc, nil
}

func (a *app) limitsShow(ctx context.Context, args []string) int {
	c := a.command("limits show", limitsHelp, true)
	if code, done := c.parse(args); done {
		return code
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		fc, err := c.flowOf()
		if err != nil {
			return err
		}
		ql, err := fc.Limits(ctx, c.queue)
		if err != nil {
			return err
		}
		st, err := fc.FlowStatus(ctx, c.queue)
		if err != nil {
			return err
		}
		out := limitsShowOut{Queue: c.queue, Default: ql.Default, Tenants: append([]contract.TenantFlow{}, st...)}
		if c.json {
			return c.emit(out)
		}
		def := "none"
		if !ql.Default.IsZero() {
			def = describeLimits(ql.Default)
		}
		fmt.Fprintf(c.stdout, "queue %s: default limits %s\n", quoteIfNeeded(clean(c.queue)), def)
		if len(out.Tenants) == 0 {
			fmt.Fprintln(c.stdout, "no tenants with items or limits of their own")
			return nil
		}
		now := c.clock.Now()
		tw := c.table("TENANT", "LIMITS", "LEASED", "RATE TOKENS", "BUDGET USED", "HELD")
		for _, r := range out.Tenants {
			l := r.Limits
			lim := "-"
			if !l.IsZero() {
				lim = describeLimits(l)
			}
			if !r.Own && !l.IsZero() {
				lim += " (default)"
			}
			leased := strconv.Itoa(r.Leased)
			if l.MaxLeased > 0 {
				leased += "/" + strconv.Itoa(l.MaxLeased)
			}
			tokens := "-"
			if l.Rate > 0 {
				tokens = fmt.Sprintf("%.1f/%d", r.RateTokens, l.EffectiveBurst())
			}
			used := "-"
			if !l.Budget.IsZero() {
				used = describeUsage(r.BudgetUsed, l.Budget)
			}
			held := "-"
			if r.Held != contract.HeldNone {
				held = string(r.Held)
				if !r.Until.IsZero() {
					held += " for " + age(r.Until.Sub(now))
				}
			}
			row(tw, clean(r.Tenant), lim, leased, tokens, used, held)
		}
		return tw.Flush()
	})
}

// limitFlags are set's limit flags; only those given change.
type limitFlags struct {
	maxLeased, burst, weight int
	rate                     float64
	cost, tokens             int64
	window                   time.Duration
}

func (f *limitFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.maxLeased, "max-leased", 0, "cap on the tenant's live leases (0: no cap)")
	fs.Float64Var(&f.rate, "rate", 0, "claims per second (0: no rate)")
	fs.IntVar(&f.burst, "burst", 0, "token bucket size (0: ceil(rate))")
	fs.IntVar(&f.weight, "weight", 0, "turns in a row at the head of the rotation (0: 1)")
	fs.Int64Var(&f.cost, "budget-cost", 0, "ceiling on charged cost per window, in micros (0: none)")
	fs.Int64Var(&f.tokens, "budget-tokens", 0, "ceiling on charged tokens per window (0: none)")
	fs.DurationVar(&f.window, "budget-window", 0, "the budget's rolling window, e.g. 1h")
}

// apply changes l by the flags the command line set.
func (f *limitFlags) apply(fs *flag.FlagSet, l contract.Limits) (contract.Limits, bool) {
	changed := false
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "max-leased":
			l.MaxLeased = f.maxLeased
		case "rate":
			l.Rate = f.rate
		case "burst":
			l.Burst = f.burst
		case "weight":
			l.Weight = f.weight
		case "budget-cost":
			l.Budget.CostMicros = f.cost
		case "budget-tokens":
			l.Budget.Tokens = f.tokens
		case "budget-window":
			l.Budget.Window = f.window
		default:
			return
		}
		changed = true
	})
	return l, changed
}

func (a *app) limitsSet(ctx context.Context, verb string, args []string) int {
	c := a.command("limits "+verb, limitsHelp, true)
	tenant := c.fs.String("tenant", "", "the tenant whose limits change")
	def := c.fs.Bool("default", false, "change the queue's default limits instead of one tenant's")
	var lf limitFlags
	if verb == "set" {
		lf.register(c.fs)
	}
	if code, done := c.parse(args); done {
		return code
	}
	switch {
	case *def && *tenant != "":
		return c.report(usagef("give --tenant or --default, not both"))
	case !*def && *tenant == "":
		return c.report(usagef("give --tenant NAME, or --default for the queue's default limits"))
	case *tenant != "":
		if err := contract.ValidateName("--tenant", *tenant); err != nil {
			return c.report(err)
		}
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		fc, err := c.flowOf()
		if err != nil {
			return err
		}
		var next contract.Limits
		if verb == "set" {
			ql, err := fc.Limits(ctx, c.queue)
			if err != nil {
				return err
			}
			cur := ql.Default
			if *tenant != "" {
				cur = ql.Tenants[*tenant]
			}
			var changed bool
			if next, changed = lf.apply(c.fs, cur); !changed {
				return usagef("give at least one limit flag (--max-leased, --rate, --burst, --weight, --budget-cost, --budget-tokens, --budget-window); use clear to remove them all")
			}
			if err := contract.ValidateLimits(next); err != nil {
				return err
			}
		}
		if err := fc.SetLimits(ctx, c.queue, *tenant, next); err != nil {
			return err
		}
		out := limitsSetOut{Queue: c.queue, Tenant: *tenant, Limits: next}
		if c.json {
			return c.emit(out)
		}
		who := "tenant " + quoteIfNeeded(clean(*tenant))
		if *tenant == "" {
			who = "the default"
		}
		if next.IsZero() {
			fmt.Fprintf(c.stdout, "queue %s: %s has no limits now\n", quoteIfNeeded(clean(c.queue)), who)
			return nil
		}
		fmt.Fprintf(c.stdout, "queue %s: %s limits %s\n", quoteIfNeeded(clean(c.queue)), who, describeLimits(next))
		return nil
	})
}

// describeLimits is l in a few words: "cap 2, 5/s (burst 5), weight 3,
// budget 10 or 1000 tokens per 1h0m0s" (cost in currency units).
func describeLimits(l contract.Limits) string {
	var parts []string
	if l.MaxLeased > 0 {
		parts = append(parts, "cap "+strconv.Itoa(l.MaxLeased))
	}
	if l.Rate > 0 {
		parts = append(parts, fmt.Sprintf("%s/s (burst %d)", strconv.FormatFloat(l.Rate, 'g', -1, 64), l.EffectiveBurst()))
	}
	if l.Weight > 1 {
		parts = append(parts, "weight "+strconv.Itoa(l.Weight))
	}
	if !l.Budget.IsZero() {
		var c []string
		if l.Budget.CostMicros > 0 {
			c = append(c, micros(l.Budget.CostMicros))
		}
		if l.Budget.Tokens > 0 {
			c = append(c, num(l.Budget.Tokens)+" tokens")
		}
		parts = append(parts, "budget "+joinOr(c)+" per "+l.Budget.Window.String())
	}
	if len(parts) == 0 {
		return "none"
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out += ", " + p
	}
	return out
}

// describeUsage is the usage of a window against its ceilings.
func describeUsage(u contract.Usage, b contract.Budget) string {
	var c []string
	if b.CostMicros > 0 {
		c = append(c, micros(u.CostMicros)+"/"+micros(b.CostMicros))
	}
	if b.Tokens > 0 {
		c = append(c, num(u.Tokens)+"/"+num(b.Tokens)+" tokens")
	}
	return joinOr(c)
}

func joinOr(s []string) string {
	switch len(s) {
	case 0:
		return "-"
	case 1:
		return s[0]
	}
	return s[0] + " or " + s[1]
}

// micros shows millionths of the currency unit as an amount ("10",
// "0.0001").
func micros(m int64) string { return strconv.FormatFloat(float64(m)/1e6, 'f', -1, 64) }
