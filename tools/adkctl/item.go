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

One item: its state (queued, leased, waiting, dead, cancelled or completed), priority,
attempts, snoozes, last error, times, payload and metadata, its lease when
leased ("cancel pending" when it was cancelled while leased), what it waits
for when waiting, how its last wait ended, when and why it was cancelled,
and the run of the same tenant and id when the state store has one. Exit 3
when there is no such item (a completed item is gone unless its queue's
retention or its uniqueness window keeps it; adkctl history shows its
events).

example:
  adkctl item --tenant acme --id run-42 --json
`

// itemOut is `adkctl item --json`. The names are the dashboard's
// /api/item ones, plus the payload itself (base64) and the run.
type itemOut struct {
	Tenant     string    `json:"tenant"`
	Queue      string    `json:"queue"`
	ID         string    `json:"id"`
	State      string    `json:"state"`
	Priority   int       `json:"priority"`
	Attempts   int       `json:"attempts"`
	Snoozes    int       `json:"snoozes"`
	LastError  string    `json:"last_error,omitempty"`
	EnqueuedAt time.Time `json:"enqueued_at"`
	NotBefore  time.Time `json:"not_before,omitzero"`
	DeadAt     time.Time `json:"dead_at,omitzero"`
	// Waiting is what the item waits for (state waiting); Resumed how its
	// last wait ended (the payload in base64).
	Waiting *contract.WaitInfo `json:"waiting,omitempty"`
	Resumed *contract.Resume   `json:"resumed,omitempty"`
	// CancelledAt and CancelReason: when and why it was cancelled. On a
	// leased item they mean the cancel is pending (CancelPending).
	CancelledAt   time.Time         `json:"cancelled_at,omitzero"`
	CancelReason  string            `json:"cancel_reason,omitempty"`
	CancelPending bool              `json:"cancel_pending,omitempty"`
	PayloadBytes  int               `json:"payload_bytes"`
	Preview       string            `json:"payload_preview,omitempty"`
	Payload       []byte            `json:"payload,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	Lease         *leaseRow         `json:"lease,omitempty"`
	Run           *contract.Run     `json:"run,omitempty"`
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
			return &notFoundError{fmt.Sprintf("no item %s / %s in queue %s (a completed item is gone unless its queue keeps finished items; check --queue)",
				quoteIfNeeded(clean(*tenant)), quoteIfNeeded(clean(*id)), quoteIfNeeded(clean(c.queue)))}
		}
		if err != nil {
			return err
		}
		it := info.Item
		now := c.clock.Now()
		out := itemOut{Tenant: it.Tenant, Queue: contract.QueueName(it.Queue), ID: it.ID, State: string(it.State),
			Priority: it.Priority, Attempts: it.Attempts, Snoozes: it.Snoozes,
			LastError: c.redact(it.LastError), EnqueuedAt: it.EnqueuedAt, NotBefore: it.NotBefore, DeadAt: it.DeadAt,
			Waiting: it.Waiting, Resumed: it.Resumed, CancelledAt: it.CancelledAt, CancelReason: it.CancelReason,
			CancelPending: it.State == contract.StateLeased && !it.CancelledAt.IsZero(),
			PayloadBytes:  len(it.Payload), Preview: preview(it.Payload), Payload: it.Payload, Metadata: it.Metadata}
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
		state := out.State
		if out.CancelPending {
			state += ", CANCEL PENDING until the holder's next call"
		}
		row(tw, "state", state)
		if out.Priority != 0 {
			row(tw, "priority", strconv.Itoa(out.Priority))
		}
		row(tw, "attempts", strconv.Itoa(out.Attempts))
		if out.Snoozes > 0 {
			row(tw, "snoozes", strconv.Itoa(out.Snoozes))
		}
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
		if w := out.Waiting; w != nil {
			until := "times out in " + age(w.Until.Sub(now))
			if !w.Until.After(now) {
				until = "TIMED OUT " + age(now.Sub(w.Until)) + " ago"
			}
			row(tw, "waiting", fmt.Sprintf("for signal %s since %s, %s", quoteIfNeeded(clean(w.Signal)), ago(now, w.Since), until))
		}
		if r := out.Resumed; r != nil {
			how := fmt.Sprintf("by signal %s %s, payload %s", quoteIfNeeded(clean(r.Signal)), ago(now, r.At), plural(len(r.Payload), "byte", "bytes"))
			if p := preview(r.Payload); p != "" {
				how += ": " + clean(p)
			}
			if r.TimedOut {
				how = fmt.Sprintf("timed out waiting for signal %s, %s", quoteIfNeeded(clean(r.Signal)), ago(now, r.At))
			}
			row(tw, "resumed", how)
		}
		if !out.CancelledAt.IsZero() {
			what := "cancelled"
			if out.CancelPending {
				what = "cancel asked"
			}
			reason := ""
			if out.CancelReason != "" {
				reason = ": " + clean(out.CancelReason)
			}
			row(tw, what, ago(now, out.CancelledAt)+reason)
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
