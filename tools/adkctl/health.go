package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/adkit/adk/modules/contract"
)

const healthHelp = `usage: adkctl health [flags]

The backing's health: every check of Inspector.Health — Redis eviction
policy, persistence and memory; PostgreSQL schema (verify), statement
timeout, adk_work vacuum and bloat — with its status and fix, the
preflight/verify verdict, and the facts the backing reports. Exit 1 when a
check fails (warnings print and exit 0), so it can gate a deploy.

examples:
  adkctl health
  ADK_POSTGRES_DSN=postgres://app@db/app adkctl health --json || echo "not fit for adk"
`

type checkOut struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Status string `json:"status"` // ok, warn or fail
	Fix    string `json:"fix,omitempty"`
}

// healthOut is `adkctl health --json`.
type healthOut struct {
	Backing string `json:"backing"`
	// Status is the worst of the checks: ok, warn or fail.
	Status string `json:"status"`
	// Verdict is the preflight (Redis) or verify (PostgreSQL) refusal, ""
	// when the server passed.
	Verdict string            `json:"verdict,omitempty"`
	Checks  []checkOut        `json:"checks"`
	Details map[string]string `json:"details,omitempty"`
}

func (a *app) health(ctx context.Context, args []string) int {
	c := a.command("health", healthHelp, false)
	if code, done := c.parse(args); done {
		return code
	}
	return c.exec(ctx, true, func(ctx context.Context) error {
		h, err := c.b.Inspector.Health(ctx)
		if err != nil {
			return err
		}
		out := healthOut{Backing: h.Backing, Checks: []checkOut{}, Details: map[string]string{}}
		for _, ch := range h.Checks {
			out.Checks = append(out.Checks, checkOut{Name: ch.Name, Value: c.redact(ch.Value), Status: ch.Status, Fix: c.redact(ch.Fix)})
		}
		for k, v := range h.Details {
			out.Details[k] = c.redact(v)
		}
		status := h.Status()
		if v := c.b.Verdict; v != nil {
			out.Verdict = c.redact(v.Error())
			if status != contract.HealthFail {
				// The checks should already say so; a verdict they miss
				// still fails the health.
				out.Checks = append(out.Checks, checkOut{Name: "preflight/verify", Value: out.Verdict, Status: contract.HealthFail})
				status = contract.HealthFail
			}
		}
		out.Status = status
		if c.json {
			if err := c.emit(out); err != nil {
				return err
			}
		} else {
			verdict := "passed"
			if out.Verdict != "" {
				verdict = "refused"
			}
			fmt.Fprintf(c.stdout, "backing %s: %s (preflight/verify %s)\n", out.Backing, strings.ToUpper(status), verdict)
			tw := c.table("STATUS", "CHECK", "VALUE", "FIX")
			for _, ch := range out.Checks {
				row(tw, strings.ToUpper(ch.Status), clean(ch.Name), clean(ch.Value), clean(ch.Fix))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(out.Details) > 0 {
				fmt.Fprintln(c.stdout)
				tw = c.table("DETAIL", "VALUE")
				for _, k := range slices.Sorted(maps.Keys(out.Details)) {
					row(tw, clean(k), clean(out.Details[k]))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
		}
		if status == contract.HealthFail {
			return &refusal{"health is red: a check failed (see its fix)"}
		}
		return nil
	})
}
