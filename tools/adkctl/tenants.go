package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
)

const tenantsHelp = `usage: adkctl tenants [--queue NAME] [--turns N] [flags]

The queue's tenants in rotation order (the tenant served next first), each
with its ready, delayed, leased, waiting (for a signal), dead and cancelled
counts, the turns it was served and its queue latency (the age of its
oldest ready item) and its share of the last N turns the claims gave out,
then those turns, most recent last. A paused tenant is marked PAUSED (a
paused queue is said above the table). A tenant whose ready work is older
than all N turns and got none of them, though not paused, is marked
STARVED. Tenants with nothing queued are not in the rotation and come last.

example:
  adkctl tenants --queue agent --turns 50
`

// tenantRow is one tenant of `adkctl tenants --json`.
type tenantRow struct {
	// Position is the tenant's place in the rotation, 1 being served
	// next; 0 when it has nothing queued (only leased or dead items).
	Position int `json:"position"`
	contract.TenantStats
	// WaitingItems counts the items waiting for a signal
	// (TenantStats.Waiting: "waiting" is the starved flag below, as on
	// the dashboard).
	WaitingItems int64 `json:"waiting_items"`
	// Paused: the tenant's own pause (always present, unlike
	// TenantStats'); a paused queue is tenantsOut.Paused.
	Paused bool `json:"paused"`
	// LatencySeconds is the age of OldestReady: how long the tenant's
	// oldest due item has waited. 0 when nothing is due.
	LatencySeconds float64 `json:"latency_seconds"`
	// TurnsInWindow counts the tenant's turns among the recent turns.
	TurnsInWindow int `json:"turns_in_window"`
	// Waiting means starved, as the dashboard says it: ready work older
	// than the whole window of recent turns, none of those turns, and no
	// pause to explain it.
	Waiting bool `json:"waiting"`
}

type turnRow struct {
	Tenant string    `json:"tenant"`
	ID     string    `json:"id"`
	Worker string    `json:"worker"`
	At     time.Time `json:"at"`
}

type tenantsOut struct {
	Queue string `json:"queue"`
	// Paused: the whole queue is paused (false on a backing without
	// lifecycle controls).
	Paused bool `json:"paused"`
	// Order is the rotation: the tenants with queued work, next to be
	// served first.
	Order   []string    `json:"order"`
	Tenants []tenantRow `json:"tenants"`
	// RecentTurns are the last turns given, most recent last.
	RecentTurns []turnRow `json:"recent_turns"`
}

func (a *app) tenants(ctx context.Context, args []string) int {
	c := a.command("tenants", tenantsHelp, true)
	turns := c.fs.Int("turns", 20, "how many recent turns to show (0..1000)")
	if code, done := c.parse(args); done {
		return code
	}
	if *turns < 0 || *turns > 1000 {
		return c.report(usagef("--turns is %d; give 0 to 1000", *turns))
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		stats, err := c.b.Inspector.Tenants(ctx, c.queue)
		if err != nil {
			return err
		}
		rot, err := c.b.Inspector.Rotation(ctx, c.queue, max(*turns, 1))
		if err != nil {
			return err
		}
		var pause contract.PauseState
		if lc, ok := contract.AsLifecycleController(c.b.Queue); ok {
			if pause, err = lc.Paused(ctx, c.queue); err != nil {
				return err
			}
		}
		recent := rot.Recent
		if *turns == 0 {
			recent = nil
		}
		now := c.clock.Now()
		out := tenantsOut{Queue: c.queue, Paused: pause.Paused, Order: append([]string{}, rot.Order...), Tenants: []tenantRow{}, RecentTurns: []turnRow{}}
		pos := make(map[string]int, len(rot.Order))
		for i, t := range rot.Order {
			pos[t] = i + 1
		}
		turnsOf := map[string]int{}
		for _, t := range recent {
			turnsOf[t.Tenant]++
		}
		for _, s := range stats {
			r := tenantRow{Position: pos[s.Tenant], TenantStats: s, WaitingItems: s.Waiting, Paused: s.Paused, TurnsInWindow: turnsOf[s.Tenant]}
			if !s.OldestReady.IsZero() {
				r.LatencySeconds = max(now.Sub(s.OldestReady).Seconds(), 0)
			}
			// Work that arrived during the window has simply not come up
			// yet, and a paused tenant is held back, not starved.
			r.Waiting = s.Ready > 0 && r.TurnsInWindow == 0 && len(recent) > 0 &&
				!s.OldestReady.IsZero() && s.OldestReady.Before(recent[0].At) &&
				!s.Paused && !pause.Paused
			out.Tenants = append(out.Tenants, r)
		}
		slices.SortStableFunc(out.Tenants, func(x, y tenantRow) int {
			switch {
			case x.Position == y.Position:
				return strings.Compare(x.Tenant, y.Tenant)
			case x.Position == 0:
				return 1
			case y.Position == 0:
				return -1
			}
			return x.Position - y.Position
		})
		for _, t := range recent {
			out.RecentTurns = append(out.RecentTurns, turnRow(t))
		}
		if c.json {
			return c.emit(out)
		}
		if len(out.Tenants) == 0 {
			fmt.Fprintf(c.stdout, "queue %s: no tenants\n", quoteIfNeeded(clean(c.queue)))
			c.noteEmptyQueue(ctx)
			return nil
		}
		fmt.Fprintf(c.stdout, "queue %s: %s, %d in the rotation\n", quoteIfNeeded(clean(c.queue)), plural(len(out.Tenants), "tenant", "tenants"), len(out.Order))
		if out.Paused {
			fmt.Fprintf(c.stdout, "the queue is PAUSED: claims hand out nothing (adkctl resume --queue %s)\n", quoteIfNeeded(clean(c.queue)))
		}
		header := []string{"NEXT", "TENANT", "READY", "LATER", "LEASED", "WAITING", "DEAD", "CANCELLED", "SERVED", "LATENCY"}
		if *turns > 0 {
			header = append(header, "TURNS")
		}
		tw := c.table(append(header, "")...)
		starved := 0
		for _, r := range out.Tenants {
			p, latency := "-", "-"
			if r.Position > 0 {
				p = strconv.Itoa(r.Position)
			}
			if !r.OldestReady.IsZero() {
				latency = age(now.Sub(r.OldestReady))
			}
			cells := []string{p, clean(r.Tenant), num(r.Ready), num(r.Later), num(r.Leased), num(r.WaitingItems), num(r.Dead), num(r.Cancelled), num(r.Served), latency}
			if *turns > 0 {
				cells = append(cells, strconv.Itoa(r.TurnsInWindow))
			}
			var marks []string
			if r.Paused {
				marks = append(marks, "PAUSED")
			}
			if r.Waiting {
				marks, starved = append(marks, "STARVED"), starved+1
			}
			row(tw, append(cells, strings.Join(marks, " "))...)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if *turns == 0 {
			return nil
		}
		if starved > 0 {
			fmt.Fprintf(c.stdout, "%s STARVED: ready work older than the last %s and not one of them\n",
				plural(starved, "tenant", "tenants"), plural(len(out.RecentTurns), "turn", "turns"))
		}
		if len(out.RecentTurns) == 0 {
			fmt.Fprintln(c.stdout, "\nno turns given yet")
			return nil
		}
		fmt.Fprintf(c.stdout, "\nlast %s, most recent last:\n", plural(len(out.RecentTurns), "turn", "turns"))
		tw = c.table("WHEN", "TENANT", "ITEM", "WORKER")
		for _, t := range out.RecentTurns {
			row(tw, ago(now, t.At), clean(t.Tenant), clean(t.ID), clean(t.Worker))
		}
		return tw.Flush()
	})
}
