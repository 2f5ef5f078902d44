// Command adkctl is the operator's terminal tool for the adk kit: it shows
// and acts on a Redis, PostgreSQL or SQLite backing as the dashboard does —
// queues, tenants and their rotation, leases, dead letters (list, count,
// requeue, purge), tenant limits (show, set, clear), lifecycle controls
// (pause and resume a queue or a tenant, cancel one item or a filtered
// bulk, signal a waiting item, list what waits, purge cancelled items),
// one item, finished items and their history (retention, an item's
// events, the finished listing, find by id, the queue's event log, tailed
// with --follow, and prune), health — prints, applies and verifies the
// PostgreSQL schema,
// and moves Redis queues an earlier release wrote into the current key
// layout:
//
//	adkctl queues
//	adkctl tenants --queue agent
//	adkctl dead list --tenant acme --error timeout
//	adkctl dead purge --error "invalid payload" --yes
//	adkctl item --tenant acme --id run-42 --json
//	adkctl limits set --queue agent --tenant acme --max-leased 2 --rate 5
//	adkctl pause --queue agent --tenant acme
//	adkctl cancel --match --tenant acme --dry-run
//	adkctl signal --tenant acme --id run-42 --signal approval --payload '{"ok":true}'
//	adkctl waiting --queue agent
//	adkctl retention set --queue agent --age 168h --events 50
//	adkctl history --tenant acme --id run-42
//	adkctl events --queue agent --follow
//	adkctl health
//	adkctl schema apply --dsn URL
//	adkctl redis migrate-layout --yes
//
// The backing comes from ADK_REDIS_DSN or ADK_POSTGRES_DSN, as for make
// demo, or from --redis / --postgres; DSNs are never printed. Every verb
// takes --json. Exit codes: 0 done, 1 failure or refusal (health red, a bulk
// action without --yes, a signal the item does not wait for, a backing
// without lifecycle controls or history), 2 usage error (a bad value, named with its
// fix), 3 not found. See tools/README.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
)

func main() {
	// go-redis logs failed dials on its own; the error that matters comes
	// back to the command, which reports it once with the fix.
	redis.SetLogger(quiet{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

const usage = `usage: adkctl <verb> [flags]

adkctl shows and acts on an adk backing from a terminal: what the dashboard
shows and does, for people and for scripts (--json on every verb). The
backing is Redis when ADK_REDIS_DSN is set and PostgreSQL when
ADK_POSTGRES_DSN is (the variables make demo reads); --redis and
--postgres override them. DSNs are never printed.

verbs (adkctl <verb> --help for the flags and more examples):
  queues                     every queue that holds items, with its totals
                               adkctl queues
  tenants                    a queue's tenants in rotation order, and the recent turns
                               adkctl tenants --queue agent --turns 50
  shards                     a sharded queue's shards: master, slot, tenants, queued, leased, claims/s
                               adkctl shards --queue agent --redis-cluster --redis-shards 3
  leases                     live leases, soonest expiry first; expired ones marked
                               adkctl leases --all
  dead list|count            dead letters matching --tenant, --id, --error
                               adkctl dead list --tenant acme --error timeout
  dead requeue|purge         one letter (--tenant and --id), or every match with --yes
                               adkctl dead requeue --error "rate limited" --yes
  limits show|set|clear      tenant flow control: caps, rates, weights, budgets, and who is held back
                               adkctl limits set --queue agent --tenant acme --max-leased 2
  pause|resume               stop or restart claims of a queue, or of one tenant in it
                               adkctl pause --queue agent --tenant acme
  paused                     what of a queue is paused
                               adkctl paused --queue agent
  cancel                     one item (--tenant and --id), or every match with --match and --yes
                               adkctl cancel --match --tenant acme --dry-run
  signal                     resume an item that waits for a signal, with a payload
                               adkctl signal --tenant acme --id run-42 --signal approval --payload '{"ok":true}'
  waiting                    items waiting for a signal: which, since when, until when
                               adkctl waiting --queue agent
  purge-cancelled            delete cancelled items older than a duration
                               adkctl purge-cancelled --queue agent --older-than 168h
  item                       one item by tenant and id, with its lease and its run
                               adkctl item --tenant acme --id run-42
  runs versions|show|fork    a run's kept versions, one version in full, a new run from one
                               adkctl runs fork --tenant acme --id run-42 --version 7 --to run-42-retry
  retention show|set         what a queue keeps of its finished items, and whether it records events
                               adkctl retention set --queue agent --age 168h --count 100000 --events 50
  history                    one item and its recorded events, oldest first
                               adkctl history --tenant acme --id run-42
  finished                   finished (completed, cancelled) items, newest first, filtered and paged
                               adkctl finished --queue agent --state cancelled --since 24h
  find                       every item of a queue with an id, whatever its tenant and state
                               adkctl find --queue agent --id run-42
  events                     the queue's event log; --follow tails it
                               adkctl events --queue agent --follow
  prune                      remove the finished items the retention no longer keeps
                               adkctl prune --queue agent
  health                     the backing's checks and its preflight/verify verdict
                               adkctl health
  schema print|apply|verify  the PostgreSQL schema of pgstore
                               adkctl schema apply --dsn postgres://localhost/dev
  redis functions            list the Redis function libraries of this release and of others (--yes deletes the others')
  redis migrate-layout       move queues an earlier release wrote into this key layout (dry run without --yes)
                               adkctl redis migrate-layout --redis-namespace adk --yes

exit codes:
  0  done (health: no check failed)
  1  a failure or refusal: server unreachable or unfit, health red, bulk action or migration without --yes,
     a signal for an item that does not wait for it, a backing without the verb's controls or history
  2  usage error: unknown verb or flag, bad value (the field and the fix are named), no backing named
  3  not found: no such item or dead letter, no item with the id (find)
`

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{stdout: stdout, stderr: stderr, getenv: getenv, clock: contract.SystemClock{}, open: openServer}
	return a.run(ctx, args)
}

func (a *app) run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "queues":
		return a.queues(ctx, args[1:])
	case "tenants":
		return a.tenants(ctx, args[1:])
	case "shards":
		return a.shards(ctx, args[1:])
	case "leases":
		return a.leases(ctx, args[1:])
	case "dead":
		return a.dead(ctx, args[1:])
	case "limits":
		return a.limits(ctx, args[1:])
	case "pause", "resume":
		return a.pause(ctx, args[0], args[1:])
	case "paused":
		return a.paused(ctx, args[1:])
	case "cancel":
		return a.cancel(ctx, args[1:])
	case "signal":
		return a.signal(ctx, args[1:])
	case "waiting":
		return a.waiting(ctx, args[1:])
	case "purge-cancelled":
		return a.purgeCancelled(ctx, args[1:])
	case "item":
		return a.item(ctx, args[1:])
	case "runs":
		return a.runs(ctx, args[1:])
	case "retention":
		return a.retention(ctx, args[1:])
	case "history":
		return a.history(ctx, args[1:])
	case "finished":
		return a.finished(ctx, args[1:])
	case "find":
		return a.find(ctx, args[1:])
	case "events":
		return a.events(ctx, args[1:])
	case "prune":
		return a.prune(ctx, args[1:])
	case "health":
		return a.health(ctx, args[1:])
	case "schema":
		return runSchema(ctx, args[1:], a.stdout, a.stderr, a.getenv)
	case "redis":
		return a.redis(ctx, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprint(a.stdout, usage)
		return exitOK
	}
	fmt.Fprintf(a.stderr, "adkctl: unknown verb %q; the verbs are queues, tenants, shards, leases, dead, limits, pause, resume, paused, cancel, signal, waiting, purge-cancelled, item, runs, retention, history, finished, find, events, prune, health, schema, redis (adkctl --help)\n", args[0])
	return exitUsage
}
