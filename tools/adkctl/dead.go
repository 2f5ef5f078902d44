package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/contract"
)

const deadHelp = `usage: adkctl dead <list|count|requeue|purge> [filter flags] [flags]

The queue's dead letters. The filter flags are the dashboard's:
  --queue NAME     the queue (default "default")
  --tenant NAME    one tenant's letters
  --id ID          the letter of one item id
  --error TEXT     letters whose last error contains TEXT (as the backing matches it)

  list      one page of the matching letters, oldest first (--limit, --cursor, --all)
  count     how many letters match
  requeue   move matching letters back to their queue, due now, attempts reset
  purge     delete matching letters

requeue and purge act on one letter when --tenant and --id are both given.
Any other filter is a bulk action: it prints how many letters match and
changes nothing unless --yes is given (exit 1 without it).

examples:
  adkctl dead list --tenant acme --error timeout
  adkctl dead count --queue agent
  adkctl dead requeue --tenant acme --id run-42
  adkctl dead purge --error "invalid payload" --yes
`

// deadFilterFlags are the filter flags of every dead verb.
type deadFilterFlags struct {
	tenant, id, errText string
}

func (d *deadFilterFlags) register(c *command) {
	c.fs.StringVar(&d.tenant, "tenant", "", "only this tenant's letters")
	c.fs.StringVar(&d.id, "id", "", "only the letter of this item id")
	c.fs.StringVar(&d.errText, "error", "", "only letters whose last error contains this text")
}

func (d *deadFilterFlags) filter(queue string) (contract.DeadLetterFilter, error) {
	f := contract.DeadLetterFilter{Queue: queue, Tenant: d.tenant, ID: d.id, ErrorContains: d.errText}
	if err := contract.ValidateFilter(f); err != nil {
		return f, usagef("%v", err)
	}
	return f, nil
}

// filterOut is a filter in JSON; the names are the dashboard's.
type filterOut struct {
	Queue         string `json:"queue"`
	Tenant        string `json:"tenant,omitempty"`
	ID            string `json:"id,omitempty"`
	ErrorContains string `json:"error_contains,omitempty"`
}

func newFilterOut(f contract.DeadLetterFilter) filterOut {
	return filterOut{Queue: contract.QueueName(f.Queue), Tenant: f.Tenant, ID: f.ID, ErrorContains: f.ErrorContains}
}

// deadRow is one letter of `adkctl dead list --json`; the names are the
// dashboard's /api/dead ones.
type deadRow struct {
	Tenant       string    `json:"tenant"`
	Queue        string    `json:"queue"`
	ID           string    `json:"id"`
	Attempts     int       `json:"attempts"`
	LastError    string    `json:"last_error"`
	DeadAt       time.Time `json:"dead_at"`
	EnqueuedAt   time.Time `json:"enqueued_at"`
	Payload      string    `json:"payload_preview"`
	PayloadBytes int       `json:"payload_bytes"`
}

type deadListOut struct {
	Filter      filterOut `json:"filter"`
	DeadLetters []deadRow `json:"dead_letters"`
	Next        string    `json:"next"`
}

type deadCountOut struct {
	Filter filterOut `json:"filter"`
	Count  int       `json:"count"`
}

// actionOut answers requeue and purge.
type actionOut struct {
	Action string    `json:"action"` // "requeue" or "purge"
	Scope  string    `json:"scope"`  // "one" or "filter"
	Filter filterOut `json:"filter"`
	// Matched is how many letters matched before acting.
	Matched int `json:"matched"`
	// Count is how many the action moved or deleted (0 when not applied).
	Count int `json:"count"`
	// Applied is false when a bulk action was refused for want of --yes.
	Applied bool `json:"applied"`
}

func (a *app) dead(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, deadHelp)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(a.stdout, deadHelp)
		return exitOK
	case "list":
		return a.deadList(ctx, args[1:])
	case "count":
		return a.deadCount(ctx, args[1:])
	case "requeue", "purge":
		return a.deadAct(ctx, args[0], args[1:])
	}
	fmt.Fprintf(a.stderr, "adkctl dead: unknown command %q: give list, count, requeue or purge (adkctl dead --help)\n", args[0])
	return exitUsage
}

func (a *app) deadList(ctx context.Context, args []string) int {
	c := a.command("dead list", deadHelp, true)
	var d deadFilterFlags
	var p pageFlags
	d.register(c)
	p.register(c.fs)
	if code, done := c.parse(args); done {
		return code
	}
	f, err := d.filter(c.queue)
	if err == nil {
		err = p.check()
	}
	if err != nil {
		return c.report(err)
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		out := deadListOut{Filter: newFilterOut(f), DeadLetters: []deadRow{}}
		next, err := walk(p, deadPages(ctx, c.b, f), func(it contract.Item) {
			out.DeadLetters = append(out.DeadLetters, deadRow{Tenant: it.Tenant, Queue: contract.QueueName(it.Queue), ID: it.ID,
				Attempts: it.Attempts, LastError: c.redact(it.LastError), DeadAt: it.DeadAt, EnqueuedAt: it.EnqueuedAt,
				Payload: preview(it.Payload), PayloadBytes: len(it.Payload)})
		})
		if err != nil {
			return err
		}
		out.Next = next
		if c.json {
			return c.emit(out)
		}
		if len(out.DeadLetters) == 0 && p.cursor == "" {
			fmt.Fprintf(c.stdout, "no dead letters match %s\n", describe(f))
			if f == (contract.DeadLetterFilter{Queue: f.Queue}) {
				c.noteEmptyQueue(ctx)
			}
			return nil
		}
		now := c.clock.Now()
		tw := c.table("TENANT", "ITEM", "ATTEMPTS", "DEAD", "LAST ERROR", "PAYLOAD")
		for _, r := range out.DeadLetters {
			row(tw, clean(r.Tenant), clean(r.ID), strconv.Itoa(r.Attempts), ago(now, r.DeadAt), clean(cut(r.LastError, 60)), clean(cut(r.Payload, 40)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		printNext(c, out.Next)
		return nil
	})
}

func (a *app) deadCount(ctx context.Context, args []string) int {
	c := a.command("dead count", deadHelp, true)
	var d deadFilterFlags
	d.register(c)
	if code, done := c.parse(args); done {
		return code
	}
	f, err := d.filter(c.queue)
	if err != nil {
		return c.report(err)
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		n, err := countDead(ctx, c.b, f)
		if err != nil {
			return err
		}
		if c.json {
			return c.emit(deadCountOut{Filter: newFilterOut(f), Count: n})
		}
		fmt.Fprintf(c.stdout, "%s %s\n", matching(n), describe(f))
		return nil
	})
}

// countDead pages through the matching letters: the contract has no
// count, and a count that ignored part of the filter would be worse
// than a slow one.
func countDead(ctx context.Context, b *backing.Backing, f contract.DeadLetterFilter) (int, error) {
	n := 0
	_, err := walk(pageFlags{limit: contract.MaxPageSize, all: true}, deadPages(ctx, b, f), func(contract.Item) { n++ })
	return n, err
}

// deadPages fetches pages of the letters matching f.
func deadPages(ctx context.Context, b *backing.Backing, f contract.DeadLetterFilter) func(contract.PageRequest) ([]contract.Item, string, error) {
	return func(pr contract.PageRequest) ([]contract.Item, string, error) {
		page, err := b.Queue.DeadLetters(ctx, contract.DeadLetterQuery{DeadLetterFilter: f, Page: pr})
		return page.Items, page.Next, err
	}
}

func (a *app) deadAct(ctx context.Context, action string, args []string) int {
	c := a.command("dead "+action, deadHelp, true)
	var d deadFilterFlags
	d.register(c)
	yes := c.fs.Bool("yes", false, "confirm a bulk action (any filter short of --tenant and --id)")
	if code, done := c.parse(args); done {
		return code
	}
	f, err := d.filter(c.queue)
	if err != nil {
		return c.report(err)
	}
	one := f.Tenant != "" && f.ID != ""
	verb, doing, done := "requeue", "requeuing", "requeued"
	if action == "purge" {
		verb, doing, done = "purge", "purging", "purged"
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		out := actionOut{Action: action, Scope: "filter", Filter: newFilterOut(f)}
		if one {
			out.Scope = "one"
		}
		matched, err := countDead(ctx, c.b, f)
		if err != nil {
			return err
		}
		out.Matched = matched
		if one && matched == 0 {
			return c.notDead(ctx, f)
		}
		if !one && !*yes {
			if c.json {
				if err := c.emit(out); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(c.stdout, "%s %s\n", matching(matched), describe(f))
			}
			return &refusal{fmt.Sprintf("nothing changed: a bulk %s needs --yes; rerun with --yes to %s the %s", verb, verb, plural(matched, "letter", "letters"))}
		}
		if !c.json && !one {
			fmt.Fprintf(c.stdout, "%s %s; %s them\n", matching(matched), describe(f), doing)
		}
		if matched > 0 {
			if action == "requeue" {
				out.Count, err = c.b.Queue.Requeue(ctx, f)
			} else {
				out.Count, err = c.b.Queue.Purge(ctx, f)
			}
			if err != nil {
				return err
			}
		}
		out.Applied = true
		if c.json {
			return c.emit(out)
		}
		switch {
		case one:
			fmt.Fprintf(c.stdout, "%s dead letter %s / %s (queue %s)\n", done, quoteIfNeeded(clean(f.Tenant)), quoteIfNeeded(clean(f.ID)), quoteIfNeeded(clean(contract.QueueName(f.Queue))))
		case out.Count != matched:
			// Letters died or were acted on between the count and the
			// action; every one of them matched the filter.
			fmt.Fprintf(c.stdout, "%s %s (the count changed meanwhile; all were within the filter)\n", done, plural(out.Count, "dead letter", "dead letters"))
		default:
			fmt.Fprintf(c.stdout, "%s %s\n", done, plural(out.Count, "dead letter", "dead letters"))
		}
		return nil
	})
}

// notDead explains why one named letter is not there: the item is alive,
// or it does not exist at all.
func (c *command) notDead(ctx context.Context, f contract.DeadLetterFilter) error {
	name := fmt.Sprintf("%s / %s in queue %s", quoteIfNeeded(clean(f.Tenant)), quoteIfNeeded(clean(f.ID)), quoteIfNeeded(clean(contract.QueueName(f.Queue))))
	info, err := c.b.Inspector.Item(ctx, contract.ItemKey{Tenant: f.Tenant, Queue: contract.QueueName(f.Queue), ID: f.ID})
	switch {
	case err == nil && info.Item.State != contract.StateDead:
		return &notFoundError{fmt.Sprintf("no dead letter %s: the item is %s, not dead (adkctl item --tenant %s --id %s)", name, info.Item.State, quoteIfNeeded(f.Tenant), quoteIfNeeded(f.ID))}
	case err == nil && f.ErrorContains != "":
		return &notFoundError{fmt.Sprintf("the dead letter %s does not match --error %q", name, f.ErrorContains)}
	}
	return &notFoundError{fmt.Sprintf("no dead letter %s (a completed or purged item is gone; check --queue, --tenant and --id)", name)}
}

// matching says how many letters match: "1 dead letter matches".
func matching(n int) string {
	if n == 1 {
		return "1 dead letter matches"
	}
	return plural(n, "dead letter", "dead letters") + " match"
}
