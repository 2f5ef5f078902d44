package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
)

const redisHelp = `usage: adkctl redis migrate-layout [--redis-namespace NS] [--yes] [flags]
       adkctl redis functions [--yes] [flags]

functions lists the Redis function libraries the stores load (one per
script, named adk_<script>_<hash>) on the server, or on every master of a
cluster: those of this release and those of other releases, which an
upgrade leaves loaded. With --yes it deletes the other releases' (FUNCTION
DELETE). That is safe while processes of another release still run: the
next call of one finds its function missing and loads it again.
Libraries not named like adk's are never touched. Without --yes it exits 1
when there are other releases' libraries, 0 when there are none.

migrate-layout moves the queues of one Redis namespace written by an adk
release before declared keys into the key layout of this one. That layout
kept one ready set and one dead-letter set per tenant; this release keeps a
queue's ready items in one sorted set and its per-tenant dead letters in one
more, and does not read the old keys: a namespace upgraded without the
migration looks empty, and redisstore's Open and Preflight refuse it
("queue layout"). The verb moves every tenant's old ready and dead sets
(each queued item's record then names its new ready entry), writes the
placeholder entries a queue's keys need on Redis Cluster, and leaves the
rotation, turns, leases, records and counters as they are: they kept their
shape. A tenant with queued items but no place in the rotation joins its
back. Entries whose item record is gone, or that this release has queued
again meanwhile, are dropped and counted.

Without --yes it is a dry run: it prints, per queue, what it would move and
changes nothing (exit 1 when there is something to move, 0 when there is
nothing). With --yes it moves it and checks the namespace again.

Stop every worker and producer first, of the old release and of the new:
  - a process of the old release writes the old keys, so what it enqueues,
    retries or dead-letters after the migration passed its tenant is
    stranded again, and its claims take tenants whose items have moved out
    of the rotation;
  - a process of the new release serves tenants out of their turn and order
    while their items are half-moved, and cannot see or requeue the dead
    letters not moved yet.
New workers opened with redisstore.Open refuse the namespace until the
migration is done; start them after it, and do not start the old release
again. With --yes the verb refuses to run while a queue logged a claim in
the last minute (a worker is still running), unless --force.

It can be interrupted and run again: each step moves one chunk (500
entries) of one tenant in one script that declares its keys and reads
before it writes, so nothing is left half-moved; a second run finishes the
work, or writes nothing when there is none.

On Redis Cluster a namespace's queues live in one slot: point --redis at
the master that serves it (the error names it when the server given does
not), or call RedisWorkQueue.MigrateLayout with a ClusterClient.

examples:
  adkctl redis functions                                       # list; exit 1 if an earlier release's are loaded
  adkctl redis functions --yes                                 # delete those
  adkctl redis migrate-layout                                  # dry run, namespace "adk"
  adkctl redis migrate-layout --redis-namespace jobs --yes     # with every worker stopped
  adkctl redis migrate-layout --json
`

// layoutOut is `adkctl redis migrate-layout --json`.
type layoutOut struct {
	Namespace string           `json:"namespace"`
	Applied   bool             `json:"applied"`
	Queues    []layoutQueueOut `json:"queues"`
	// Check is the status of the preflight's queue-layout check after a
	// migration ("ok" once nothing is left); "" for a dry run.
	Check string `json:"check,omitempty"`
}

type layoutQueueOut struct {
	Queue        string    `json:"queue"`
	Tenants      int       `json:"tenants"`
	Keys         int       `json:"old_keys"`
	Ready        int64     `json:"ready"`
	Dead         int64     `json:"dead"`
	Dropped      int64     `json:"dropped"`
	Placed       int       `json:"placed"`
	Placeholders int       `json:"placeholders"`
	LastClaim    time.Time `json:"last_claim,omitzero"`
}

func newLayoutOut(r redisstore.LayoutReport) layoutOut {
	out := layoutOut{Namespace: r.Namespace, Applied: r.Applied, Queues: []layoutQueueOut{}}
	for _, q := range r.Queues {
		out.Queues = append(out.Queues, layoutQueueOut{Queue: q.Queue, Tenants: q.Tenants, Keys: q.Keys, Ready: q.Ready, Dead: q.Dead,
			Dropped: q.Dropped, Placed: q.Placed, Placeholders: q.Placeholders, LastClaim: q.LastClaim})
	}
	return out
}

// recentClaim is how recent a logged claim must be for --yes to take it
// as a sign of a running worker.
const recentClaim = time.Minute

func (a *app) redis(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, redisHelp)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(a.stdout, redisHelp)
		return exitOK
	case "migrate-layout":
		return a.migrateLayout(ctx, args[1:])
	case "functions":
		return a.redisFunctions(ctx, args[1:])
	}
	fmt.Fprintf(a.stderr, "adkctl redis: unknown command %q: the commands are migrate-layout and functions (adkctl redis --help)\n", args[0])
	return exitUsage
}

func (a *app) migrateLayout(ctx context.Context, args []string) int {
	c := a.command("redis migrate-layout", redisHelp, false)
	yes := c.fs.Bool("yes", false, "move the keys (without it: a dry run that changes nothing)")
	force := c.fs.Bool("force", false, "with --yes: run even though a queue logged a claim in the last minute")
	var ns string
	c.fs.StringVar(&ns, "namespace", "", "the same as --redis-namespace")
	// A large namespace takes a while; the verb gives up after an hour.
	c.timeout = time.Hour
	c.fs.Lookup("timeout").DefValue = c.timeout.String()
	if code, done := c.parse(args); done {
		return code
	}
	if ns != "" {
		if c.backing.RedisNamespace != "" && c.backing.RedisNamespace != ns {
			return c.report(usagef("--namespace %q and --redis-namespace %q differ; give one", ns, c.backing.RedisNamespace))
		}
		c.backing.RedisNamespace = ns
	}
	return c.execRedis(ctx, "migrate-layout", func(ctx context.Context, q *redisstore.RedisWorkQueue) error {
		c.warnPreflight()
		if err := c.servesNamespace(ctx, q.Settings().Namespace); err != nil {
			return err
		}
		rep, err := q.InspectLayout(ctx)
		if err != nil {
			return err
		}
		if !rep.Pending() {
			if c.json {
				return c.emit(newLayoutOut(rep))
			}
			fmt.Fprintf(c.stdout, "namespace %s: every queue is in the current layout; nothing to do\n", quoteIfNeeded(clean(rep.Namespace)))
			return nil
		}
		if !*yes {
			if err := c.printLayout(rep); err != nil {
				return err
			}
			return &refusal{"dry run: nothing changed; stop every worker and producer (of both releases), then rerun with --yes"}
		}
		if !*force {
			now := c.clock.Now()
			for _, ql := range rep.Queues {
				if !ql.LastClaim.IsZero() && now.Sub(ql.LastClaim).Abs() < recentClaim {
					return &refusal{fmt.Sprintf("nothing changed: queue %s logged a claim %s: a worker is still running; "+
						"stop every worker (of both releases) and run again, or pass --force if you know they are stopped",
						quoteIfNeeded(clean(ql.Queue)), ago(now, ql.LastClaim))}
				}
			}
		}
		done, err := q.MigrateLayout(ctx)
		if err != nil {
			if done.Pending() && !c.json {
				_ = c.printLayout(done)
			}
			return err
		}
		h, err := q.Health(ctx)
		if err != nil {
			return err
		}
		check := contract.HealthCheck{Status: contract.HealthFail, Value: "missing"}
		for _, ch := range h.Checks {
			if ch.Name == redisstore.SettingQueueLayout {
				check = ch
			}
		}
		if c.json {
			out := newLayoutOut(done)
			out.Check = check.Status
			if err := c.emit(out); err != nil {
				return err
			}
		} else {
			if err := c.printLayout(done); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "the preflight's queue-layout check: %s (%s)\n", strings.ToUpper(check.Status), clean(check.Value))
		}
		if check.Status != contract.HealthOK {
			return &refusal{"the queue-layout check still does not pass: " + check.Fix}
		}
		return nil
	})
}

// warnPreflight warns of a preflight refusal other than the layout's,
// which is what the verb is run to fix.
func (c *command) warnPreflight() {
	var pe *contract.PreflightError
	if v := c.b.Verdict; v != nil && !(errors.As(v, &pe) && pe.Setting == redisstore.SettingQueueLayout) {
		c.warnf("warning: the server fails its preflight (the migration goes on; adkctl health shows every check): %s", c.redact(v.Error()))
	}
}

// servesNamespace checks, with one read, that the server is the one
// holding the namespace's queue keys: on Redis Cluster they live in one
// slot of one master, and a node that does not serve it answers MOVED,
// which the queue would retry until its budget runs out.
func (c *command) servesNamespace(ctx context.Context, ns string) error {
	opts, err := redis.ParseURL(c.b.DSN.Reveal())
	if err != nil {
		return err // backing.Open parsed it already
	}
	probe := redis.NewClient(opts)
	defer probe.Close()
	err = probe.Exists(ctx, "{"+ns+":queue}:queues").Err()
	if err != nil && strings.HasPrefix(err.Error(), "MOVED ") {
		f := strings.Fields(err.Error())
		return fmt.Errorf("the server is a Redis Cluster node that does not serve namespace %s (its queues live in slot %s, on %s): "+
			"point --redis at that master", quoteIfNeeded(ns), f[1], f[len(f)-1])
	}
	return err
}

// printLayout prints the report as a table, with what it means.
func (c *command) printLayout(r redisstore.LayoutReport) error {
	if c.json {
		return c.emit(newLayoutOut(r))
	}
	if r.Applied {
		fmt.Fprintf(c.stdout, "namespace %s: migrated\n", quoteIfNeeded(clean(r.Namespace)))
	} else {
		fmt.Fprintf(c.stdout, "namespace %s: %s of the earlier layout to move (dry run: nothing changed)\n",
			quoteIfNeeded(clean(r.Namespace)), plural(r.OldKeys(), "key", "keys"))
	}
	tw := c.table("QUEUE", "TENANTS", "OLD KEYS", "READY", "DEAD", "DROPPED", "PLACED", "PLACEHOLDERS", "LAST CLAIM")
	now := c.clock.Now()
	for _, q := range r.Queues {
		row(tw, quoteIfNeeded(clean(q.Queue)), strconv.Itoa(q.Tenants), strconv.Itoa(q.Keys), strconv.FormatInt(q.Ready, 10),
			strconv.FormatInt(q.Dead, 10), strconv.FormatInt(q.Dropped, 10), strconv.Itoa(q.Placed), strconv.Itoa(q.Placeholders), ago(now, q.LastClaim))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "READY and DEAD: queued items and dead letters in the old keys, moved to the current layout; DROPPED: entries\n"+
		"whose record is gone or was queued again by the new release (the old release skipped them too); PLACED: tenants\n"+
		"with queued items but no place in the rotation, put at its back; PLACEHOLDERS: entries missing, written.")
	return nil
}

// functionsOut is `adkctl redis functions --json`.
type functionsOut struct {
	Deleted bool                 `json:"deleted"`
	Servers []functionsServerOut `json:"servers"`
}

type functionsServerOut struct {
	Server  string   `json:"server"`
	Current []string `json:"current"`
	Stale   []string `json:"stale"`
}

func (a *app) redisFunctions(ctx context.Context, args []string) int {
	c := a.command("redis functions", redisHelp, false)
	yes := c.fs.Bool("yes", false, "delete the libraries of other releases (without it: list them and change nothing)")
	if code, done := c.parse(args); done {
		return code
	}
	return c.execRedis(ctx, "functions", func(ctx context.Context, q *redisstore.RedisWorkQueue) error {
		rep, err := q.Functions(ctx)
		if err != nil {
			return err
		}
		stale := 0
		for _, r := range rep {
			stale += len(r.Stale)
		}
		if *yes && stale > 0 {
			if rep, err = q.PruneFunctions(ctx); err != nil {
				return err
			}
		}
		out := functionsOut{Deleted: *yes && stale > 0, Servers: []functionsServerOut{}}
		for _, r := range rep {
			out.Servers = append(out.Servers, functionsServerOut{Server: r.Server, Current: r.Current, Stale: r.Stale})
		}
		if c.json {
			if err := c.emit(out); err != nil {
				return err
			}
		} else {
			tw := c.table("SERVER", "THIS RELEASE", "OTHER RELEASES", "NOTE")
			for _, r := range out.Servers {
				what := ""
				if out.Deleted && len(r.Stale) > 0 {
					what = "deleted"
				}
				row(tw, clean(r.Server), strconv.Itoa(len(r.Current)), strconv.Itoa(len(r.Stale)), what)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, r := range out.Servers {
				for _, n := range r.Stale {
					fmt.Fprintf(c.stdout, "%s: %s\n", clean(r.Server), clean(n))
				}
			}
		}
		if stale > 0 && !*yes {
			return &refusal{fmt.Sprintf("%s of other releases loaded; nothing changed: rerun with --yes to delete them", plural(stale, "library", "libraries"))}
		}
		return nil
	})
}

// execRedis runs body on the backing's Redis queue, as exec runs a verb;
// verb names the command in the usage error when the backing is not
// Redis.
func (c *command) execRedis(ctx context.Context, verb string, body func(context.Context, *redisstore.RedisWorkQueue) error) int {
	if c.backing.Kind() != backing.Redis {
		return c.report(usagef("%s works on the Redis backing: set ADK_REDIS_DSN or pass --redis", verb))
	}
	return c.exec(ctx, true, func(ctx context.Context) error {
		q, ok := c.b.Queue.(*redisstore.RedisWorkQueue)
		if !ok {
			return fmt.Errorf("the Redis backing opened as %T, not a redisstore queue", c.b.Queue)
		}
		return body(ctx, q)
	})
}
