package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// The history verbs: retention, history, finished, find, events and
// prune, over the backing's contract.HistoryKeeper.

const retentionHelp = `usage: adkctl retention <show|set> [--queue NAME] [--age DURATION] [--count N] [--events N] [flags]

What a queue keeps of its finished items, kept by the backing.

  show    the queue's retention
  set     change it: the flags given change, the others keep their value

--age keeps completed and cancelled items this long after they finished,
--count keeps at most the latest N of them (with both, an item goes when
either says so; with neither, completed items are not kept); --events
records each item's transitions, keeping its latest N, and the queue's
latest 10000 in its event log (adkctl events). 0 turns one off. The
change applies to what finishes from then on; prune (or a runner's
reaper) applies a shorter age or count to what is kept already.

examples:
  adkctl retention show --queue agent
  adkctl retention set --queue agent --age 168h --count 100000 --events 50
  adkctl retention set --queue agent --events 0
`

const historyHelp = `usage: adkctl history --tenant NAME --id ID [--queue NAME] [flags]

One item and its recorded events, oldest first: enqueued, claimed (worker,
attempt, token), failed (error, when it is due again), snoozed, waiting,
signalled, timed out, dead, requeued, cancelled (reason), completed (run
time). Heartbeats are counted, not listed. A completed item is there while
its queue's retention or its own uniqueness window keeps it; exit 3 when
there is no such item. A queue that records no events shows none
(adkctl retention set --events N turns them on).

example:
  adkctl history --queue agent --tenant acme --id run-42
`

const finishedHelp = `usage: adkctl finished [--queue NAME] [--tenant NAME] [--state completed|cancelled] [--id ID]
                      [--since WHEN] [--until WHEN] [--limit N] [--cursor C] [--all] [flags]

The queue's finished items (completed and cancelled ones its retention
keeps), newest first, paged. --since and --until bound when they finished
(since ≤ finished < until): an RFC 3339 time, or a duration meaning that
long ago (1h). --cursor takes the "next" (older) or "prev" (newer) of a
page.

examples:
  adkctl finished --queue agent --since 24h
  adkctl finished --queue agent --tenant acme --state cancelled --json
`

const findHelp = `usage: adkctl find --id ID [--queue NAME] [flags]

Every item of the queue with this id, whatever its tenant and state
(finished ones included while kept), by tenant. Exit 3 when there is none.

example:
  adkctl find --queue agent --id run-42
`

const eventsHelp = `usage: adkctl events [--queue NAME] [--cursor C] [--limit N] [--follow [--every DURATION]] [flags]

The queue's event log, oldest first: every recorded transition of its
items (the latest 10000 are kept; adkctl retention set --events N turns
recording on). Without --cursor it starts at the oldest kept event; the
"next" it prints reads on from where it stopped. When events were dropped
before they could be read, a note says so.

--follow keeps reading, as tail -f does: after a read that found nothing it
waits --every (default 1s) and reads again, until interrupted (Ctrl-C,
exit 0). --timeout then bounds each read, not the whole run. With --json it
prints one JSON object per page read, one per line.

examples:
  adkctl events --queue agent
  adkctl events --queue agent --follow
  adkctl events --queue agent --cursor 1234 --json
`

const pruneHelp = `usage: adkctl prune [--queue NAME] [flags]

Remove the queue's finished items that its retention and their uniqueness
windows no longer keep, oldest first, with their events, in batches until
none is left; prints how many went. A runner's reaper does this on its
own; prune is for a queue no runner serves, or to apply a shorter
retention at once. It never removes a live item.

example:
  adkctl prune --queue agent
`

// historyOf returns the backing's HistoryKeeper.
func (c *command) historyOf() (contract.HistoryKeeper, error) {
	hk, ok := contract.AsHistoryKeeper(c.b.Queue)
	if !ok {
		return nil, fmt.Errorf("the %s backing keeps no history (retention, events, finished items): %w", c.b.Name, errors.ErrUnsupported)
	}
	return hk, nil
}

// retentionOut is `adkctl retention show|set --json`. age is in
// nanoseconds, as limits' window is.
type retentionOut struct {
	Queue     string             `json:"queue"`
	Retention contract.Retention `json:"retention"`
}

func (a *app) retention(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, retentionHelp)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(a.stdout, retentionHelp)
		return exitOK
	case "show", "set":
		return a.retentionVerb(ctx, args[0], args[1:])
	}
	fmt.Fprintf(a.stderr, "adkctl retention: unknown command %q: give show or set (adkctl retention --help)\n", args[0])
	return exitUsage
}

func (a *app) retentionVerb(ctx context.Context, verb string, args []string) int {
	c := a.command("retention "+verb, retentionHelp, true)
	var r contract.Retention
	if verb == "set" {
		c.fs.DurationVar(&r.Age, "age", 0, "keep finished items this long after they finished, e.g. 168h (0: no age limit)")
		c.fs.IntVar(&r.Count, "count", 0, "keep at most this many of the latest finished items (0: no count limit)")
		c.fs.IntVar(&r.Events, "events", 0, fmt.Sprintf("record each item's events, keeping its latest N (0 to %d; 0: none)", contract.MaxItemEvents))
	}
	if code, done := c.parse(args); done {
		return code
	}
	set := map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if verb == "set" && !set["age"] && !set["count"] && !set["events"] {
		return c.report(usagef("give at least one of --age, --count and --events (e.g. adkctl retention set --queue %s --age 168h)", c.queue))
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		hk, err := c.historyOf()
		if err != nil {
			return err
		}
		cur, err := hk.Retention(ctx, c.queue)
		if err != nil {
			return err
		}
		if verb == "set" {
			if set["age"] {
				cur.Age = r.Age
			}
			if set["count"] {
				cur.Count = r.Count
			}
			if set["events"] {
				cur.Events = r.Events
			}
			if err := contract.ValidateRetention(cur); err != nil {
				return usagef("%v", err)
			}
			if err := hk.SetRetention(ctx, c.queue, cur); err != nil {
				return err
			}
		}
		if c.json {
			return c.emit(retentionOut{Queue: c.queue, Retention: cur})
		}
		fmt.Fprintf(c.stdout, "queue %s: %s\n", quoteIfNeeded(clean(c.queue)), describeRetention(cur))
		return nil
	})
}

// describeRetention says what r keeps, in words.
func describeRetention(r contract.Retention) string {
	var keeps string
	switch {
	case r.Age > 0 && r.Count > 0:
		keeps = fmt.Sprintf("keeps finished items for %v, at most the latest %d (whichever lets go first)", r.Age, r.Count)
	case r.Age > 0:
		keeps = fmt.Sprintf("keeps finished items for %v", r.Age)
	case r.Count > 0:
		keeps = fmt.Sprintf("keeps the latest %d finished items", r.Count)
	default:
		keeps = "keeps no completed items"
	}
	if r.Events > 0 {
		return keeps + fmt.Sprintf("; records events, the latest %d per item", r.Events)
	}
	return keeps + "; records no events"
}

func (a *app) history(ctx context.Context, args []string) int {
	c := a.command("history", historyHelp, true)
	var k keyFlags
	k.register(c, "the item's tenant (required)", "the item's id (required)")
	if code, done := c.parse(args); done {
		return code
	}
	if err := k.check("adkctl history --tenant acme --id run-42"); err != nil {
		return c.report(err)
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		hk, err := c.historyOf()
		if err != nil {
			return err
		}
		key := contract.ItemKey{Tenant: k.tenant, Queue: c.queue, ID: k.id}
		h, err := hk.History(ctx, key)
		if errors.Is(err, contract.ErrNotFound) {
			return &notFoundError{fmt.Sprintf("no item %s (an item completed without a retention or uniqueness window that keeps it is gone; check --queue, --tenant and --id)", keyName(key))}
		}
		if err != nil {
			return err
		}
		if h.Events == nil {
			h.Events = []contract.Event{}
		}
		for i := range h.Events {
			h.Events[i].Error = c.redact(h.Events[i].Error)
		}
		h.Item.LastError = c.redact(h.Item.LastError)
		if c.json {
			return c.emit(h)
		}
		now := c.clock.Now()
		it := h.Item
		state := string(it.State)
		if !it.FinishedAt.IsZero() {
			state += ", finished " + ago(now, it.FinishedAt)
		}
		fmt.Fprintf(c.stdout, "item %s: %s, attempts %d\n", keyName(key), state, it.Attempts)
		if len(h.Events) == 0 && h.Dropped == 0 {
			fmt.Fprintln(c.stdout, "no events recorded (adkctl retention show says whether the queue records them)")
			return nil
		}
		var notes []string
		if h.Dropped > 0 {
			notes = append(notes, fmt.Sprintf("%d older dropped", h.Dropped))
		}
		if h.Heartbeats > 0 {
			notes = append(notes, plural(int(h.Heartbeats), "heartbeat", "heartbeats"))
		}
		if len(notes) > 0 {
			fmt.Fprintf(c.stdout, "%s (%s)\n", plural(len(h.Events), "event", "events"), strings.Join(notes, ", "))
		}
		tw := c.table("AT", "EVENT", "DETAIL")
		for _, e := range h.Events {
			row(tw, stamp(e.At), string(e.Kind), eventDetail(e))
		}
		return tw.Flush()
	})
}

// stamp prints an event's time: UTC to the millisecond.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// eventDetail is what an event says besides its kind and time.
func eventDetail(e contract.Event) string {
	var parts []string
	if e.Worker != "" {
		parts = append(parts, "worker "+clean(e.Worker))
	}
	if e.Attempt > 0 {
		parts = append(parts, "attempt "+strconv.Itoa(e.Attempt))
	}
	if e.Token != 0 {
		parts = append(parts, "token "+strconv.FormatInt(e.Token, 10))
	}
	if e.Signal != "" {
		parts = append(parts, "signal "+quoteIfNeeded(clean(e.Signal)))
	}
	if !e.NextDue.IsZero() {
		// Said from the event's time: when it was recorded, the item was
		// due (or its wait timed out) that much later.
		what := "due in "
		if e.Kind == contract.EventWaiting {
			what = "times out in "
		}
		parts = append(parts, what+age(max(e.NextDue.Sub(e.At), 0)))
	}
	if e.RunTime > 0 {
		parts = append(parts, "ran "+e.RunTime.String())
	}
	if e.Reason != "" {
		parts = append(parts, "reason: "+clean(cut(e.Reason, 120)))
	}
	if e.Error != "" {
		parts = append(parts, "error: "+clean(cut(e.Error, 120)))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// finishedRow is one item of `adkctl finished --json`.
type finishedRow struct {
	Tenant       string    `json:"tenant"`
	Queue        string    `json:"queue"`
	ID           string    `json:"id"`
	State        string    `json:"state"`
	FinishedAt   time.Time `json:"finished_at"`
	EnqueuedAt   time.Time `json:"enqueued_at"`
	Attempts     int       `json:"attempts"`
	LastError    string    `json:"last_error,omitempty"`
	CancelReason string    `json:"cancel_reason,omitempty"`
	PayloadBytes int       `json:"payload_bytes"`
}

// finishedOut is `adkctl finished --json`.
type finishedOut struct {
	Queue    string        `json:"queue"`
	Finished []finishedRow `json:"finished"`
	Next     string        `json:"next,omitempty"`
	Prev     string        `json:"prev,omitempty"`
}

// parseWhen reads --since or --until: an RFC 3339 time, or a duration
// meaning that long before now.
func parseWhen(flagName, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usagef("%s is %q; give an RFC 3339 time (2026-12-01T09:00:00Z) or a duration meaning that long ago (24h)", flagName, s)
}

func (a *app) finished(ctx context.Context, args []string) int {
	c := a.command("finished", finishedHelp, true)
	tenant := c.fs.String("tenant", "", "only this tenant's items")
	state := c.fs.String("state", "", `only "completed" or "cancelled" items (default: both)`)
	id := c.fs.String("id", "", "only items with this id")
	since := c.fs.String("since", "", "only items finished at or after this (RFC 3339, or a duration ago: 24h)")
	until := c.fs.String("until", "", "only items finished before this (RFC 3339, or a duration ago)")
	var p pageFlags
	p.register(c.fs)
	if code, done := c.parse(args); done {
		return code
	}
	if err := p.check(); err != nil {
		return c.report(err)
	}
	now := c.clock.Now()
	q := contract.FinishedQuery{Queue: c.queue, Tenant: *tenant, State: contract.ItemState(*state), ID: *id}
	var err error
	if q.Since, err = parseWhen("--since", *since, now); err != nil {
		return c.report(err)
	}
	if q.Until, err = parseWhen("--until", *until, now); err != nil {
		return c.report(err)
	}
	if _, err := contract.ValidateFinishedQuery(q); err != nil {
		return c.report(usagef("%v", err))
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		hk, err := c.historyOf()
		if err != nil {
			return err
		}
		out := finishedOut{Queue: c.queue, Finished: []finishedRow{}}
		first := true
		fetch := func(pr contract.PageRequest) ([]contract.Item, string, error) {
			q.Page = pr
			page, err := hk.Finished(ctx, q)
			if first {
				out.Prev, first = page.Prev, false
			}
			return page.Items, page.Next, err
		}
		next, err := walk(p, fetch, func(it contract.Item) {
			out.Finished = append(out.Finished, finishedRow{Tenant: it.Tenant, Queue: contract.QueueName(it.Queue), ID: it.ID,
				State: string(it.State), FinishedAt: it.FinishedAt, EnqueuedAt: it.EnqueuedAt, Attempts: it.Attempts,
				LastError: c.redact(it.LastError), CancelReason: it.CancelReason, PayloadBytes: len(it.Payload)})
		})
		if err != nil {
			return err
		}
		out.Next = next
		if c.json {
			return c.emit(out)
		}
		if len(out.Finished) == 0 && p.cursor == "" {
			fmt.Fprintf(c.stdout, "queue %s: no finished items match (adkctl retention show says what the queue keeps)\n", quoteIfNeeded(clean(c.queue)))
			return nil
		}
		tw := c.table("FINISHED", "STATE", "TENANT", "ITEM", "ATTEMPTS", "NOTE")
		for _, r := range out.Finished {
			note := "-"
			switch {
			case r.CancelReason != "":
				note = "reason: " + clean(cut(r.CancelReason, 80))
			case r.LastError != "":
				note = "last error: " + clean(cut(r.LastError, 80))
			}
			row(tw, ago(now, r.FinishedAt), r.State, clean(r.Tenant), clean(r.ID), strconv.Itoa(r.Attempts), note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if out.Prev != "" {
			fmt.Fprintf(c.stdout, "newer: add --cursor %s\n", quoteIfNeeded(out.Prev))
		}
		printNext(c, out.Next)
		return nil
	})
}

// findOut is `adkctl find --json`.
type findOut struct {
	Queue string        `json:"queue"`
	ID    string        `json:"id"`
	Items []finishedRow `json:"items"`
}

func (a *app) find(ctx context.Context, args []string) int {
	c := a.command("find", findHelp, true)
	id := c.fs.String("id", "", "the id to look for (required)")
	if code, done := c.parse(args); done {
		return code
	}
	if *id == "" {
		return c.report(usagef("give --id (e.g. adkctl find --queue %s --id run-42)", c.queue))
	}
	if err := contract.ValidateName("--id", *id); err != nil {
		return c.report(usagef("%v", err))
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		hk, err := c.historyOf()
		if err != nil {
			return err
		}
		items, err := hk.Find(ctx, c.queue, *id)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return &notFoundError{fmt.Sprintf("no item with id %s in queue %s, in any tenant (check --queue)", quoteIfNeeded(clean(*id)), quoteIfNeeded(clean(c.queue)))}
		}
		out := findOut{Queue: c.queue, ID: *id, Items: make([]finishedRow, len(items))}
		for i, it := range items {
			out.Items[i] = finishedRow{Tenant: it.Tenant, Queue: contract.QueueName(it.Queue), ID: it.ID,
				State: string(it.State), FinishedAt: it.FinishedAt, EnqueuedAt: it.EnqueuedAt, Attempts: it.Attempts,
				LastError: c.redact(it.LastError), CancelReason: it.CancelReason, PayloadBytes: len(it.Payload)}
		}
		if c.json {
			return c.emit(out)
		}
		now := c.clock.Now()
		tw := c.table("TENANT", "STATE", "ATTEMPTS", "ENQUEUED", "FINISHED")
		for _, r := range out.Items {
			fin := "-"
			if !r.FinishedAt.IsZero() {
				fin = ago(now, r.FinishedAt)
			}
			row(tw, clean(r.Tenant), r.State, strconv.Itoa(r.Attempts), ago(now, r.EnqueuedAt), fin)
		}
		return tw.Flush()
	})
}

// eventsOut is `adkctl events --json`, and each line of it with
// --follow: one page of the log.
type eventsOut struct {
	Queue  string           `json:"queue"`
	Events []contract.Event `json:"events"`
	Next   string           `json:"next"`
	Gap    bool             `json:"gap,omitempty"`
}

// defaultFollowEvery is how long events --follow waits after a read that
// found nothing.
const defaultFollowEvery = time.Second

func (a *app) events(ctx context.Context, args []string) int {
	c := a.command("events", eventsHelp, true)
	cursor := c.fs.String("cursor", "", `read the events after this cursor (the "next" printed before; default: from the oldest kept)`)
	limit := c.fs.Int("limit", contract.DefaultPageSize, fmt.Sprintf("events per read (1..%d)", contract.MaxPageSize))
	follow := c.fs.Bool("follow", false, "keep reading new events until interrupted")
	every := c.fs.Duration("every", defaultFollowEvery, "with --follow: how long to wait after a read that found nothing")
	if code, done := c.parse(args); done {
		return code
	}
	if err := contract.ValidateEventLimit(*limit); err != nil {
		return c.report(usagef("--limit is %d; give 1 to %d", *limit, contract.MaxPageSize))
	}
	if *every <= 0 {
		return c.report(usagef("--every is %v; give a positive duration, e.g. 1s", *every))
	}
	c.unbounded = *follow
	return c.exec(ctx, false, func(ctx context.Context) error {
		hk, err := c.historyOf()
		if err != nil {
			return err
		}
		cur := *cursor
		for {
			rctx, cancel := ctx, context.CancelFunc(func() {})
			if *follow {
				rctx, cancel = context.WithTimeout(ctx, c.timeout)
			}
			page, err := hk.QueueEvents(rctx, c.queue, cur, *limit)
			cancel()
			if *follow && ctx.Err() != nil {
				return nil // interrupted
			}
			if err != nil {
				return err
			}
			if err := c.printEvents(page, *follow); err != nil {
				return err
			}
			cur = page.Next
			if !*follow {
				return nil
			}
			if len(page.Events) == 0 {
				if err := c.pause(ctx, *every); err != nil {
					return nil // interrupted
				}
			}
		}
	})
}

// printEvents prints one page of the queue's log. Following, a page with
// nothing new prints nothing, and the cursor is left out of the text.
func (c *command) printEvents(page contract.EventPage, follow bool) error {
	if page.Events == nil {
		page.Events = []contract.Event{}
	}
	for i := range page.Events {
		page.Events[i].Error = c.redact(page.Events[i].Error)
	}
	if page.Gap {
		c.warnf("note: events were dropped from the queue's log before they were read (it keeps the latest %d)", contract.QueueEventLog)
	}
	if c.json {
		if follow {
			if len(page.Events) == 0 && !page.Gap {
				return nil
			}
			enc := json.NewEncoder(c.stdout)
			enc.SetEscapeHTML(false)
			return enc.Encode(eventsOut{Queue: c.queue, Events: page.Events, Next: page.Next, Gap: page.Gap})
		}
		return c.emit(eventsOut{Queue: c.queue, Events: page.Events, Next: page.Next, Gap: page.Gap})
	}
	if len(page.Events) == 0 {
		if !follow {
			fmt.Fprintf(c.stdout, "queue %s: no events after this cursor (read on with --cursor %s)\n", quoteIfNeeded(clean(c.queue)), quoteIfNeeded(page.Next))
		}
		return nil
	}
	for _, e := range page.Events {
		fmt.Fprintf(c.stdout, "%s  %-9s  %s / %s  %s\n", stamp(e.At), e.Kind, quoteIfNeeded(clean(e.Tenant)), quoteIfNeeded(clean(e.ID)), eventDetail(e))
	}
	if !follow {
		fmt.Fprintf(c.stdout, "next: add --cursor %s\n", quoteIfNeeded(page.Next))
	}
	return nil
}

// pause waits d, or until ctx is done (then it returns ctx's error).
func (c *command) pause(ctx context.Context, d time.Duration) error {
	if c.sleep != nil {
		return c.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pruneOut is `adkctl prune --json`.
type pruneOut struct {
	Queue  string `json:"queue"`
	Pruned int    `json:"pruned"`
}

func (a *app) prune(ctx context.Context, args []string) int {
	c := a.command("prune", pruneHelp, true)
	if code, done := c.parse(args); done {
		return code
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		hk, err := c.historyOf()
		if err != nil {
			return err
		}
		total := 0
		for {
			n, err := hk.Prune(ctx, c.queue)
			total += n
			if err != nil {
				return fmt.Errorf("after pruning %s: %w", plural(total, "item", "items"), err)
			}
			if n < contract.PruneBatch {
				break
			}
		}
		if c.json {
			return c.emit(pruneOut{Queue: c.queue, Pruned: total})
		}
		fmt.Fprintf(c.stdout, "queue %s: pruned %s\n", quoteIfNeeded(clean(c.queue)), plural(total, "finished item", "finished items"))
		return nil
	})
}
