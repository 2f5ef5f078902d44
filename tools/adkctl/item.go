package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/adkit/adk/modules/contract"
)

const itemHelp = `usage: adkctl item --tenant NAME --id ID [--queue NAME] [flags]

One item: its state (queued, leased or dead), attempts, last error, times,
payload and metadata, its lease when leased, and the run of the same tenant
and id when the state store has one. Exit 3 when there is no such item
(a completed item is gone).

example:
  adkctl item --tenant acme --id run-42 --json
`

// itemOut is `adkctl item --json`. The names are the dashboard's
// /api/item ones, plus the payload itself (base64) and the run.
type itemOut struct {
	Tenant       string            `json:"tenant"`
	Queue        string            `json:"queue"`
	ID           string            `json:"id"`
	State        string            `json:"state"`
	Attempts     int               `json:"attempts"`
	LastError    string            `json:"last_error,omitempty"`
	EnqueuedAt   time.Time         `json:"enqueued_at"`
	NotBefore    time.Time         `json:"not_before,omitzero"`
	DeadAt       time.Time         `json:"dead_at,omitzero"`
	PayloadBytes int               `json:"payload_bytes"`
	Preview      string            `json:"payload_preview,omitempty"`
	Payload      []byte            `json:"payload,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	Lease        *leaseRow         `json:"lease,omitempty"`
	Run          *contract.Run     `json:"run,omitempty"`
}

func (a *app) item(ctx context.Context, args []string) int {
	c := a.command("item", itemHelp, true)
	tenant := c.fs.String("tenant", "", "the item's tenant (required)")
	id := c.fs.String("id", "", "the item's id (required)")
	if code, done := c.parse(args); done {
		return code
	}
	if *tenant == "" || *id == "" {
		return c.report(usagef("give both --tenant and --id (e.g. adkctl item --tenant acme --id run-42)"))
	}
	for _, v := range []struct{ flag, value string }{{"--tenant", *tenant}, {"--id", *id}} {
		if err := contract.ValidateName(v.flag, v.value); err != nil {
			return c.report(usagef("%v", err))
		}
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		key := contract.ItemKey{Tenant: *tenant, Queue: c.queue, ID: *id}
		info, err := c.b.Inspector.Item(ctx, key)
		if errors.Is(err, contract.ErrNotFound) {
			return &notFoundError{fmt.Sprintf("no item %s / %s in queue %s (a completed item is gone; check --queue)",
				quoteIfNeeded(clean(*tenant)), quoteIfNeeded(clean(*id)), quoteIfNeeded(clean(c.queue)))}
		}
		if err != nil {
			return err
		}
		it := info.Item
		now := c.clock.Now()
		out := itemOut{Tenant: it.Tenant, Queue: contract.QueueName(it.Queue), ID: it.ID, State: string(it.State), Attempts: it.Attempts,
			LastError: c.redact(it.LastError), EnqueuedAt: it.EnqueuedAt, NotBefore: it.NotBefore, DeadAt: it.DeadAt,
			PayloadBytes: len(it.Payload), Preview: preview(it.Payload), Payload: it.Payload, Metadata: it.Metadata}
		if info.Lease != nil {
			l := newLeaseRow(*info.Lease, now)
			out.Lease = &l
		}
		if c.b.State != nil {
			run, err := c.b.State.GetRun(ctx, it.Tenant, it.ID)
			switch {
			case err == nil:
				out.Run = run
			case !errors.Is(err, contract.ErrNotFound):
				return fmt.Errorf("the run of the same id: %w", err)
			}
		}
		if c.json {
			return c.emit(out)
		}
		tw := c.table("item", quoteIfNeeded(clean(out.Tenant))+" / "+quoteIfNeeded(clean(out.ID))+" in queue "+quoteIfNeeded(clean(out.Queue)))
		row(tw, "state", out.State)
		row(tw, "attempts", strconv.Itoa(out.Attempts))
		row(tw, "enqueued", ago(now, out.EnqueuedAt))
		if !out.NotBefore.IsZero() {
			row(tw, "due", ago(now, out.NotBefore))
		}
		if !out.DeadAt.IsZero() {
			row(tw, "dead", ago(now, out.DeadAt))
		}
		if out.LastError != "" {
			row(tw, "last error", clean(out.LastError))
		}
		if l := out.Lease; l != nil {
			left := "expires in " + age(time.Duration(l.TimeLeftSeconds*float64(time.Second)))
			if l.Expired {
				left = "EXPIRED " + age(now.Sub(l.ExpiresAt)) + " ago, not reaped"
			}
			row(tw, "lease", fmt.Sprintf("worker %s, attempt %d, %s, token %d", clean(l.Worker), l.Attempts+1, left, l.Token))
		}
		payload := plural(out.PayloadBytes, "byte", "bytes")
		if out.Preview != "" {
			payload += ": " + clean(out.Preview)
		}
		row(tw, "payload", payload)
		for _, k := range slices.Sorted(maps.Keys(out.Metadata)) {
			row(tw, "metadata", clean(k)+"="+clean(out.Metadata[k]))
		}
		if r := out.Run; r != nil {
			status := r.Status
			if status == "" {
				status = "(none)"
			}
			row(tw, "run", fmt.Sprintf("status %s, version %d, updated %s", clean(status), r.Version, ago(now, r.UpdatedAt)))
			row(tw, "run counters", fmt.Sprintf("input tokens %d, output tokens %d, cost %d µ, iterations %d, cursor %d",
				r.Counters.InputTokens, r.Counters.OutputTokens, r.Counters.CostMicros, r.Counters.Iterations, r.Counters.Cursor))
		}
		return tw.Flush()
	})
}
