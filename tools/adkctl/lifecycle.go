package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// The lifecycle verbs: pause, resume, paused, cancel, signal, waiting and
// purge-cancelled, over the backing's contract.LifecycleController.

const pauseHelp = `usage: adkctl pause|resume [--queue NAME] [--tenant NAME] [flags]
       adkctl paused [--queue NAME] [flags]

pause stops claims of the whole queue, or with --tenant of one tenant in
it; resume ends that pause and wakes the claimers. A paused tenant keeps its
place in the rotation and is passed over until resumed; a paused queue
hands out nothing. Live leases run to their end and Enqueue goes on. The
pause is kept by the backing: it survives restarts of workers and servers.
Pausing what is paused, or resuming what is not, changes nothing. Resuming
the queue leaves its paused tenants paused.

paused shows what of the queue is paused.

examples:
  adkctl pause --queue agent
  adkctl pause --queue agent --tenant acme
  adkctl resume --queue agent --tenant acme
  adkctl paused --queue agent --json
`

const cancelHelp = `usage: adkctl cancel --tenant NAME --id ID [--queue NAME] [--reason TEXT] [flags]
       adkctl cancel --match [--tenant NAME] [--state STATE] [--id-prefix P] [--reason TEXT] [--dry-run | --yes] [flags]

Cancel one item, or every item a filter matches. A queued (due or
delayed), waiting or dead item is cancelled at once: it is never claimed
again and is kept, for the record, until purge-cancelled removes it. A
leased item is marked: the cancel is pending until the holder's next call
(heartbeat, complete, fail, snooze or wait), which writes nothing and
cancels it, or until its lease expires. The one-item form prints the state
the item was in; exit 3 when there is no such item.

--match cancels in bulk. Its filter: --tenant, --id-prefix, and --state:
"" (the default) selects live work — queued, waiting and leased items —
while queued, waiting, leased or dead select that state alone (dead
letters only ever by --state dead); cancelled items are never selected,
nor leases already marked. --dry-run prints how many items the filter
matches and changes nothing. Without --dry-run the bulk cancel prints that
count, then changes nothing and exits 1 unless --yes is given.

examples:
  adkctl cancel --tenant acme --id run-42 --reason "customer asked"
  adkctl cancel --match --tenant acme --dry-run
  adkctl cancel --match --tenant acme --id-prefix eval- --reason "bad prompt" --yes
  adkctl cancel --match --state dead --yes
`

const signalHelp = `usage: adkctl signal --tenant NAME --id ID --signal NAME [--payload TEXT | --payload-file FILE] [--queue NAME] [flags]

Resume an item that waits for a signal (a handler asked it to wait, e.g.
for a person's approval): it is due at once and its next handler gets the
payload. A signal resumes one wait exactly once. A signal for an item that
waits for another signal, was already resumed, timed out or does not wait
is refused, naming the item's state, and changes nothing (exit 1); exit 3
when there is no such item. adkctl waiting lists what waits for what.

--payload gives the payload as text, --payload-file reads it from a file
("-" for standard input).

examples:
  adkctl signal --tenant acme --id run-42 --signal approval --payload '{"approved":true}'
  adkctl signal --queue agent --tenant acme --id run-42 --signal tool-result --payload-file result.json
`

const waitingHelp = `usage: adkctl waiting [--queue NAME] [--limit N] [--cursor C] [--all] [flags]

The queue's items that wait for a signal, longest waiting first: the signal
each waits for, since when, and when its wait times out (then it is due
again, and its handler sees the timeout). adkctl signal resumes one.

examples:
  adkctl waiting --queue agent
  adkctl waiting --queue agent --all --json
`

const purgeCancelledHelp = `usage: adkctl purge-cancelled [--queue NAME] --older-than DURATION [flags]

Delete the queue's cancelled items cancelled more than DURATION ago (0:
every cancelled item). They are gone for good, and their ids may be
enqueued again. Prints how many were deleted.

examples:
  adkctl purge-cancelled --queue agent --older-than 168h
  adkctl purge-cancelled --older-than 0 --json
`

// lifecycleOf returns the backing's LifecycleController.
func (c *command) lifecycleOf() (contract.LifecycleController, error) {
	lc, ok := contract.AsLifecycleController(c.b.Queue)
	if !ok {
		return nil, fmt.Errorf("the %s backing has no lifecycle controls (pause, cancel, signals): %w", c.b.Name, errors.ErrUnsupported)
	}
	return lc, nil
}

// keyFlags are --tenant and --id of a verb about one item.
type keyFlags struct{ tenant, id string }

func (k *keyFlags) register(c *command, tenantUsage, idUsage string) {
	c.fs.StringVar(&k.tenant, "tenant", "", tenantUsage)
	c.fs.StringVar(&k.id, "id", "", idUsage)
}

// check requires both and validates them.
func (k *keyFlags) check(example string) error {
	if k.tenant == "" || k.id == "" {
		return usagef("give both --tenant and --id (e.g. %s)", example)
	}
	for _, v := range []struct{ flag, value string }{{"--tenant", k.tenant}, {"--id", k.id}} {
		if err := contract.ValidateName(v.flag, v.value); err != nil {
			return usagef("%v", err)
		}
	}
	return nil
}

// keyName prints a key the way item does: acme / run-42 in queue default.
func keyName(k contract.ItemKey) string {
	return quoteIfNeeded(clean(k.Tenant)) + " / " + quoteIfNeeded(clean(k.ID)) + " in queue " + quoteIfNeeded(clean(contract.QueueName(k.Queue)))
}

// noItem is the not-found error of a verb about one item.
func noItem(k contract.ItemKey) error {
	return &notFoundError{fmt.Sprintf("no item %s (a completed or purged item is gone; check --queue, --tenant and --id)", keyName(k))}
}

// pauseOut answers pause and resume: what was asked, and what of the
// queue is paused now.
type pauseOut struct {
	Action string              `json:"action"` // "pause" or "resume"
	Queue  string              `json:"queue"`
	Tenant string              `json:"tenant"` // "" for the whole queue
	State  contract.PauseState `json:"state"`
}

func (a *app) pause(ctx context.Context, action string, args []string) int {
	c := a.command(action, pauseHelp, true)
	tenant := c.fs.String("tenant", "", "only this tenant (default: the whole queue)")
	if code, done := c.parse(args); done {
		return code
	}
	if *tenant != "" {
		if err := contract.ValidateName("--tenant", *tenant); err != nil {
			return c.report(usagef("%v", err))
		}
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		lc, err := c.lifecycleOf()
		if err != nil {
			return err
		}
		if action == "pause" {
			err = lc.Pause(ctx, c.queue, *tenant)
		} else {
			err = lc.Resume(ctx, c.queue, *tenant)
		}
		if err != nil {
			return err
		}
		st, err := lc.Paused(ctx, c.queue)
		if err != nil {
			return err
		}
		st.Tenants = append([]string{}, st.Tenants...)
		if c.json {
			return c.emit(pauseOut{Action: action, Queue: c.queue, Tenant: *tenant, State: st})
		}
		done := "paused"
		if action == "resume" {
			done = "resumed"
		}
		q := quoteIfNeeded(clean(c.queue))
		if *tenant == "" {
			fmt.Fprintf(c.stdout, "queue %s %s\n", q, done)
		} else {
			fmt.Fprintf(c.stdout, "tenant %s in queue %s %s\n", quoteIfNeeded(clean(*tenant)), q, done)
		}
		switch {
		case action == "resume" && *tenant == "" && len(st.Tenants) > 0:
			fmt.Fprintf(c.stdout, "still paused: %s (adkctl resume --queue %s --tenant NAME)\n", tenantList(st.Tenants), q)
		case action == "resume" && *tenant != "" && st.Paused:
			fmt.Fprintf(c.stdout, "the whole queue is still paused: nothing is claimed until adkctl resume --queue %s\n", q)
		}
		return nil
	})
}

func (a *app) paused(ctx context.Context, args []string) int {
	c := a.command("paused", pauseHelp, true)
	if code, done := c.parse(args); done {
		return code
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		lc, err := c.lifecycleOf()
		if err != nil {
			return err
		}
		st, err := lc.Paused(ctx, c.queue)
		if err != nil {
			return err
		}
		st.Tenants = append([]string{}, st.Tenants...)
		if c.json {
			return c.emit(st)
		}
		q := quoteIfNeeded(clean(c.queue))
		switch {
		case st.Paused:
			fmt.Fprintf(c.stdout, "queue %s: PAUSED (claims hand out nothing)\n", q)
		default:
			fmt.Fprintf(c.stdout, "queue %s: not paused\n", q)
		}
		if len(st.Tenants) == 0 {
			fmt.Fprintln(c.stdout, "no tenant paused")
			return nil
		}
		fmt.Fprintf(c.stdout, "paused tenants (%d): %s\n", len(st.Tenants), tenantList(st.Tenants))
		return nil
	})
}

func tenantList(ts []string) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = quoteIfNeeded(clean(t))
	}
	return strings.Join(names, ", ")
}

// cancelOneOut answers cancel of one item.
type cancelOneOut struct {
	Action string `json:"action"` // "cancel"
	Scope  string `json:"scope"`  // "one"
	Tenant string `json:"tenant"`
	Queue  string `json:"queue"`
	ID     string `json:"id"`
	// Was is the state the item was in.
	Was string `json:"was"`
	// Pending: the item was leased, so the cancel waits for the holder's
	// next call (or the lease's expiry).
	Pending bool `json:"pending"`
}

// cancelFilterOut is a bulk cancel's filter in JSON.
type cancelFilterOut struct {
	Queue    string `json:"queue"`
	Tenant   string `json:"tenant,omitempty"`
	State    string `json:"state,omitempty"`
	IDPrefix string `json:"id_prefix,omitempty"`
}

// cancelMatchOut answers cancel --match, with --dry-run, refused for want
// of --yes, or applied.
type cancelMatchOut struct {
	Action string          `json:"action"` // "cancel"
	Scope  string          `json:"scope"`  // "filter"
	Filter cancelFilterOut `json:"filter"`
	// Matched is how many items CountMatching gave before acting.
	Matched int `json:"matched"`
	// Count is how many the cancel cancelled or marked (0 when not applied).
	Count   int  `json:"count"`
	DryRun  bool `json:"dry_run"`
	Applied bool `json:"applied"`
}

// describeCancel prints a cancel filter the way the flags spell it.
func describeCancel(f contract.CancelFilter) string {
	parts := []string{"--queue " + quoteIfNeeded(contract.QueueName(f.Queue))}
	if f.Tenant != "" {
		parts = append(parts, "--tenant "+quoteIfNeeded(f.Tenant))
	}
	if f.State != "" {
		parts = append(parts, "--state "+string(f.State))
	}
	if f.IDPrefix != "" {
		parts = append(parts, "--id-prefix "+quoteIfNeeded(f.IDPrefix))
	}
	return strings.Join(parts, " ")
}

// itemsMatch says how many items match: "1 item matches".
func itemsMatch(n int) string {
	if n == 1 {
		return "1 item matches"
	}
	return plural(n, "item", "items") + " match"
}

func (a *app) cancel(ctx context.Context, args []string) int {
	c := a.command("cancel", cancelHelp, true)
	var k keyFlags
	k.register(c, "the item's tenant (with --match: only this tenant's items)", "the item's id")
	reason := c.fs.String("reason", "", "why, kept on the item (at most 1024 bytes)")
	match := c.fs.Bool("match", false, "cancel every item the filter (--tenant, --state, --id-prefix) matches")
	state := c.fs.String("state", "", `with --match: "" (live work: queued, waiting, leased), queued, waiting, leased or dead`)
	prefix := c.fs.String("id-prefix", "", "with --match: only items whose id starts with this")
	dryRun := c.fs.Bool("dry-run", false, "with --match: print how many items match, change nothing")
	yes := c.fs.Bool("yes", false, "with --match: confirm the bulk cancel")
	if code, done := c.parse(args); done {
		return code
	}
	if err := contract.ValidateReason(*reason); err != nil {
		return c.report(usagef("--reason: %v", err))
	}
	if !*match {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--state", *state != ""}, {"--id-prefix", *prefix != ""}, {"--dry-run", *dryRun}, {"--yes", *yes}} {
			if f.set {
				return c.report(usagef("%s goes with --match (a bulk cancel); to cancel one item give --tenant and --id alone", f.name))
			}
		}
		if err := k.check("adkctl cancel --tenant acme --id run-42; --match cancels every item a filter matches"); err != nil {
			return c.report(err)
		}
		return c.cancelOne(ctx, contract.ItemKey{Tenant: k.tenant, Queue: c.queue, ID: k.id}, *reason)
	}
	switch {
	case k.id != "":
		return c.report(usagef("--id names one item: drop --match to cancel it, or use --id-prefix to match ids"))
	case *dryRun && *yes:
		return c.report(usagef("give --dry-run or --yes, not both"))
	}
	f := contract.CancelFilter{Queue: c.queue, Tenant: k.tenant, State: contract.ItemState(*state), IDPrefix: *prefix}
	if err := contract.ValidateCancelFilter(f); err != nil {
		return c.report(usagef("%v", err))
	}
	return c.cancelMatch(ctx, f, *reason, *dryRun, *yes)
}

func (c *command) cancelOne(ctx context.Context, key contract.ItemKey, reason string) int {
	return c.exec(ctx, false, func(ctx context.Context) error {
		lc, err := c.lifecycleOf()
		if err != nil {
			return err
		}
		was, err := lc.Cancel(ctx, key, reason)
		if errors.Is(err, contract.ErrNotFound) {
			return noItem(key)
		}
		if err != nil {
			return err
		}
		out := cancelOneOut{Action: "cancel", Scope: "one", Tenant: key.Tenant, Queue: key.Queue, ID: key.ID, Was: string(was), Pending: was == contract.StateLeased}
		if c.json {
			return c.emit(out)
		}
		switch was {
		case contract.StateLeased:
			fmt.Fprintf(c.stdout, "item %s was leased: cancel pending until the holder's next call (or its lease's expiry)\n", keyName(key))
		case contract.StateCancelled:
			fmt.Fprintf(c.stdout, "item %s was already cancelled; nothing changed\n", keyName(key))
		default:
			fmt.Fprintf(c.stdout, "item %s was %s: cancelled\n", keyName(key), was)
		}
		return nil
	})
}

func (c *command) cancelMatch(ctx context.Context, f contract.CancelFilter, reason string, dryRun, yes bool) int {
	return c.exec(ctx, false, func(ctx context.Context) error {
		lc, err := c.lifecycleOf()
		if err != nil {
			return err
		}
		out := cancelMatchOut{Action: "cancel", Scope: "filter", DryRun: dryRun,
			Filter: cancelFilterOut{Queue: f.Queue, Tenant: f.Tenant, State: string(f.State), IDPrefix: f.IDPrefix}}
		if out.Matched, err = lc.CountMatching(ctx, f); err != nil {
			return err
		}
		if dryRun || !yes {
			if c.json {
				if err := c.emit(out); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(c.stdout, "%s %s\n", itemsMatch(out.Matched), describeCancel(f))
			}
			if dryRun {
				return nil
			}
			return &refusal{fmt.Sprintf("nothing changed: a bulk cancel needs --yes; rerun with --yes to cancel the %s (--dry-run only counts)", plural(out.Matched, "item", "items"))}
		}
		if !c.json {
			fmt.Fprintf(c.stdout, "%s %s; cancelling them\n", itemsMatch(out.Matched), describeCancel(f))
		}
		if out.Count, err = lc.CancelMatching(ctx, f, reason); err != nil {
			return err
		}
		out.Applied = true
		if c.json {
			return c.emit(out)
		}
		note := ""
		if out.Count != out.Matched {
			// Items came or went between the count and the cancel; every
			// one touched matched the filter.
			note = " (the count changed meanwhile; all were within the filter)"
		}
		fmt.Fprintf(c.stdout, "cancelled %s%s; leased ones stay leased until the holder's next call\n", plural(out.Count, "item", "items"), note)
		return nil
	})
}

// signalOut answers signal.
type signalOut struct {
	Tenant       string `json:"tenant"`
	Queue        string `json:"queue"`
	ID           string `json:"id"`
	Signal       string `json:"signal"`
	PayloadBytes int    `json:"payload_bytes"`
	// Resumed is true: the item is due now (a refusal prints no object).
	Resumed bool `json:"resumed"`
}

func (a *app) signal(ctx context.Context, args []string) int {
	c := a.command("signal", signalHelp, true)
	var k keyFlags
	k.register(c, "the waiting item's tenant (required)", "the waiting item's id (required)")
	name := c.fs.String("signal", "", "the signal's name: the one the item waits for (required)")
	payload := c.fs.String("payload", "", "the payload, as text")
	file := c.fs.String("payload-file", "", `read the payload from this file ("-": standard input)`)
	if code, done := c.parse(args); done {
		return code
	}
	if err := k.check("adkctl signal --tenant acme --id run-42 --signal approval"); err != nil {
		return c.report(err)
	}
	if *name == "" {
		return c.report(usagef("give --signal NAME: the signal the item waits for (adkctl waiting shows it)"))
	}
	if err := contract.ValidateName("--signal", *name); err != nil {
		return c.report(usagef("%v", err))
	}
	var body []byte
	switch {
	case *file != "" && *payload != "":
		return c.report(usagef("give --payload or --payload-file, not both"))
	case *file == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return c.report(fmt.Errorf("--payload-file -: %w", err))
		}
		body = b
	case *file != "":
		b, err := os.ReadFile(*file)
		if err != nil {
			return c.report(usagef("--payload-file: %v", err))
		}
		body = b
	case *payload != "":
		body = []byte(*payload)
	}
	key := contract.ItemKey{Tenant: k.tenant, Queue: c.queue, ID: k.id}
	return c.exec(ctx, false, func(ctx context.Context) error {
		lc, err := c.lifecycleOf()
		if err != nil {
			return err
		}
		err = lc.Signal(ctx, key, *name, body)
		var nw *contract.NotWaitingError
		switch {
		case errors.Is(err, contract.ErrNotFound):
			return noItem(key)
		case errors.As(err, &nw):
			return &refusal{notWaiting(nw)}
		case err != nil:
			return err
		}
		if c.json {
			return c.emit(signalOut{Tenant: key.Tenant, Queue: key.Queue, ID: key.ID, Signal: *name, PayloadBytes: len(body), Resumed: true})
		}
		fmt.Fprintf(c.stdout, "item %s resumed by signal %s (%s): due now\n", keyName(key), quoteIfNeeded(clean(*name)), plural(len(body), "byte", "bytes"))
		return nil
	})
}

// notWaiting explains a refused signal: what the item is doing instead.
func notWaiting(e *contract.NotWaitingError) string {
	key := keyName(e.Key)
	sig := quoteIfNeeded(clean(e.Signal))
	switch e.State {
	case contract.StateWaiting:
		return fmt.Sprintf("nothing changed: item %s waits for signal %s, not %s", key, quoteIfNeeded(clean(e.Waiting)), sig)
	case contract.StateQueued:
		return fmt.Sprintf("nothing changed: item %s is queued, not waiting for signal %s (an earlier signal or its timeout resumed it; a signal resumes one wait once)", key, sig)
	}
	return fmt.Sprintf("nothing changed: item %s is %s, not waiting for signal %s", key, e.State, sig)
}

// stdin is where --payload-file - reads; tests replace it.
var stdin io.Reader = os.Stdin

// waitingRow is one item of `adkctl waiting --json`.
type waitingRow struct {
	Tenant string    `json:"tenant"`
	Queue  string    `json:"queue"`
	ID     string    `json:"id"`
	Signal string    `json:"signal"`
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
	// WaitedSeconds is how long it has waited; TimesOutSeconds how long
	// until its wait times out (0 once it has).
	WaitedSeconds   float64 `json:"waited_seconds"`
	TimesOutSeconds float64 `json:"times_out_seconds"`
	Attempts        int     `json:"attempts"`
}

type waitingOut struct {
	Queue   string       `json:"queue"`
	Waiting []waitingRow `json:"waiting"`
	Next    string       `json:"next"`
}

func (a *app) waiting(ctx context.Context, args []string) int {
	c := a.command("waiting", waitingHelp, true)
	var p pageFlags
	p.register(c.fs)
	if code, done := c.parse(args); done {
		return code
	}
	if err := p.check(); err != nil {
		return c.report(err)
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		lc, err := c.lifecycleOf()
		if err != nil {
			return err
		}
		now := c.clock.Now()
		out := waitingOut{Queue: c.queue, Waiting: []waitingRow{}}
		fetch := func(pr contract.PageRequest) ([]contract.Item, string, error) {
			page, err := lc.Waiting(ctx, c.queue, pr)
			return page.Items, page.Next, err
		}
		next, err := walk(p, fetch, func(it contract.Item) {
			r := waitingRow{Tenant: it.Tenant, Queue: contract.QueueName(it.Queue), ID: it.ID, Attempts: it.Attempts}
			if w := it.Waiting; w != nil {
				r.Signal, r.Since, r.Until = w.Signal, w.Since, w.Until
				r.WaitedSeconds = max(now.Sub(w.Since).Seconds(), 0)
				r.TimesOutSeconds = max(w.Until.Sub(now).Seconds(), 0)
			}
			out.Waiting = append(out.Waiting, r)
		})
		if err != nil {
			return err
		}
		out.Next = next
		if c.json {
			return c.emit(out)
		}
		if len(out.Waiting) == 0 && p.cursor == "" {
			fmt.Fprintf(c.stdout, "queue %s: no item waits for a signal\n", quoteIfNeeded(clean(c.queue)))
			return nil
		}
		tw := c.table("TENANT", "ITEM", "SIGNAL", "WAITING SINCE", "TIMES OUT")
		for _, r := range out.Waiting {
			until := "in " + age(r.Until.Sub(now))
			if !r.Until.After(now) {
				until = "TIMED OUT " + age(now.Sub(r.Until)) + " ago"
			}
			row(tw, clean(r.Tenant), clean(r.ID), clean(r.Signal), ago(now, r.Since), until)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		printNext(c, out.Next)
		return nil
	})
}

// purgeCancelledOut answers purge-cancelled.
type purgeCancelledOut struct {
	Queue string `json:"queue"`
	// Before is the cutoff: items cancelled before it were deleted.
	Before time.Time `json:"before"`
	Count  int       `json:"count"`
}

func (a *app) purgeCancelled(ctx context.Context, args []string) int {
	c := a.command("purge-cancelled", purgeCancelledHelp, true)
	older := c.fs.Duration("older-than", -1, "delete items cancelled longer ago than this, e.g. 168h (0: all; required)")
	if code, done := c.parse(args); done {
		return code
	}
	set := false
	c.fs.Visit(func(f *flag.Flag) { set = set || f.Name == "older-than" })
	switch {
	case !set:
		return c.report(usagef("give --older-than DURATION: how long ago an item must have been cancelled to go (e.g. 168h; 0 for every cancelled item)"))
	case *older < 0:
		return c.report(usagef("--older-than is %v; give 0 or more (e.g. 168h)", *older))
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		lc, err := c.lifecycleOf()
		if err != nil {
			return err
		}
		before := c.clock.Now().Add(-*older)
		if *older == 0 {
			// Every cancelled item, those of this instant included.
			before = before.Add(time.Nanosecond)
		}
		n, err := lc.PurgeCancelled(ctx, c.queue, before)
		if err != nil {
			return err
		}
		if c.json {
			return c.emit(purgeCancelledOut{Queue: c.queue, Before: before, Count: n})
		}
		fmt.Fprintf(c.stdout, "queue %s: purged %s cancelled more than %v ago\n", quoteIfNeeded(clean(c.queue)), plural(n, "item", "items"), *older)
		return nil
	})
}
