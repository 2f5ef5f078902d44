package main

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

const queuesHelp = `usage: adkctl queues [flags]

Every queue that holds an item, with its totals over all tenants.

examples:
  adkctl queues
  ADK_REDIS_DSN=redis://127.0.0.1:6379/0 adkctl queues --json
`

// queueRow is one queue of `adkctl queues --json`.
type queueRow struct {
	Queue   string `json:"queue"`
	Tenants int    `json:"tenants"`
	Ready   int64  `json:"ready"`
	Later   int64  `json:"later"`
	Leased  int64  `json:"leased"`
	Dead    int64  `json:"dead"`
	Served  int64  `json:"served"`
	// OldestReady is the enqueue time of the oldest item due now, over all
	// tenants; its age, LatencySeconds, is the queue's latency.
	OldestReady    time.Time `json:"oldest_ready,omitzero"`
	LatencySeconds float64   `json:"latency_seconds"`
}

type queuesOut struct {
	Queues []queueRow `json:"queues"`
}

func (a *app) queues(ctx context.Context, args []string) int {
	c := a.command("queues", queuesHelp, false)
	if code, done := c.parse(args); done {
		return code
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		names, err := c.b.Inspector.Queues(ctx)
		if err != nil {
			return err
		}
		out := queuesOut{Queues: []queueRow{}}
		for _, q := range names {
			ts, err := c.b.Inspector.Tenants(ctx, q)
			if err != nil {
				return fmt.Errorf("tenants of queue %q: %w", q, err)
			}
			r := queueRow{Queue: q, Tenants: len(ts)}
			for _, t := range ts {
				r.Ready += t.Ready
				r.Later += t.Later
				r.Leased += t.Leased
				r.Dead += t.Dead
				r.Served += t.Served
				if !t.OldestReady.IsZero() && (r.OldestReady.IsZero() || t.OldestReady.Before(r.OldestReady)) {
					r.OldestReady = t.OldestReady
				}
			}
			if !r.OldestReady.IsZero() {
				r.LatencySeconds = max(c.clock.Now().Sub(r.OldestReady).Seconds(), 0)
			}
			out.Queues = append(out.Queues, r)
		}
		if c.json {
			return c.emit(out)
		}
		if len(out.Queues) == 0 {
			fmt.Fprintln(c.stdout, "no queue holds any item")
			return nil
		}
		now := c.clock.Now()
		tw := c.table("QUEUE", "TENANTS", "READY", "LATER", "LEASED", "DEAD", "SERVED", "OLDEST READY")
		for _, r := range out.Queues {
			row(tw, clean(r.Queue), strconv.Itoa(r.Tenants), num(r.Ready), num(r.Later), num(r.Leased), num(r.Dead), num(r.Served), ago(now, r.OldestReady))
		}
		return tw.Flush()
	})
}

func num(n int64) string { return strconv.FormatInt(n, 10) }
