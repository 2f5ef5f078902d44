package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/adkit/adk/modules/contract"
)

const leasesHelp = `usage: adkctl leases [--queue NAME] [--limit N] [--cursor C | --all] [flags]

The queue's live leases, soonest expiry first: tenant, item, worker, the
attempt it is on, the time left and the fencing token. A lease past its
expiry that no reaper has returned yet is marked EXPIRED.

example:
  adkctl leases --queue agent --all
`

// leaseRow is one lease of `adkctl leases --json` (and the lease of
// `adkctl item --json`); the names are the dashboard's /api/leases ones.
type leaseRow struct {
	Tenant string `json:"tenant"`
	Queue  string `json:"queue"`
	ID     string `json:"id"`
	Worker string `json:"worker"`
	// Attempts counts the earlier claims that failed or expired; the
	// lease is attempt Attempts+1.
	Attempts  int       `json:"attempts"`
	ExpiresAt time.Time `json:"expires_at"`
	// TimeLeftSeconds is negative once the lease has expired.
	TimeLeftSeconds float64 `json:"time_left_seconds"`
	// Expired: past its expiry, not reaped yet.
	Expired bool  `json:"expired"`
	Token   int64 `json:"token"`
}

func newLeaseRow(l contract.Lease, now time.Time) leaseRow {
	left := l.ExpiresAt.Sub(now)
	return leaseRow{Tenant: l.Item.Tenant, Queue: contract.QueueName(l.Item.Queue), ID: l.Item.ID, Worker: l.Worker,
		Attempts: l.Item.Attempts, ExpiresAt: l.ExpiresAt, TimeLeftSeconds: left.Seconds(), Expired: left <= 0, Token: l.Token}
}

type leasesOut struct {
	Queue  string     `json:"queue"`
	Leases []leaseRow `json:"leases"`
	// Next is the cursor of the following page, "" on the last.
	Next string `json:"next"`
}

func (a *app) leases(ctx context.Context, args []string) int {
	c := a.command("leases", leasesHelp, true)
	var p pageFlags
	p.register(c.fs)
	if code, done := c.parse(args); done {
		return code
	}
	if err := p.check(); err != nil {
		return c.report(err)
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		now := c.clock.Now()
		out := leasesOut{Queue: c.queue, Leases: []leaseRow{}}
		next, err := walk(p, func(pr contract.PageRequest) ([]contract.Lease, string, error) {
			page, err := c.b.Inspector.Leases(ctx, c.queue, pr)
			return page.Leases, page.Next, err
		}, func(l contract.Lease) { out.Leases = append(out.Leases, newLeaseRow(l, now)) })
		if err != nil {
			return err
		}
		out.Next = next
		if c.json {
			return c.emit(out)
		}
		if len(out.Leases) == 0 && p.cursor == "" {
			fmt.Fprintf(c.stdout, "queue %s: no live leases\n", quoteIfNeeded(clean(c.queue)))
			c.noteEmptyQueue(ctx)
			return nil
		}
		tw := c.table("TENANT", "ITEM", "WORKER", "ATTEMPT", "EXPIRES", "TOKEN")
		expired := 0
		for _, r := range out.Leases {
			left := "in " + age(time.Duration(r.TimeLeftSeconds*float64(time.Second)))
			if r.Expired {
				expired++
				left = "EXPIRED " + age(now.Sub(r.ExpiresAt)) + " ago, not reaped"
			}
			row(tw, clean(r.Tenant), clean(r.ID), clean(r.Worker), strconv.Itoa(r.Attempts+1), left, strconv.FormatInt(r.Token, 10))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if expired > 0 {
			fmt.Fprintf(c.stdout, "%s past expiry: a reaper (runner.Config.ReapInterval, or WorkQueue.Reap) returns them to the policy\n", plural(expired, "lease", "leases"))
		}
		printNext(c, out.Next)
		return nil
	})
}

// printNext tells how to get the following page.
func printNext(c *command, next string) {
	if next != "" {
		fmt.Fprintf(c.stdout, "more: add --cursor %s (or --all)\n", quoteIfNeeded(next))
	}
}
