package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/redis/go-redis/v9"
)

// Releases before declared keys kept each tenant's queued items in a
// sorted set of its own (queue prefix + "ready:" + lp(tenant); score the
// due time in microseconds, member the ready seq as 16 hex digits then the
// ref) and its dead letters in another (prefix + "dead:" + lp(tenant);
// score the dead seq, member the ref). This release reads neither: a
// queue's items are all in its one READY set and its per-tenant dead
// letters in TDEAD, so a namespace written by an earlier release looks
// empty to it. Preflight refuses such a namespace; MigrateLayout moves it.
// The rotation, turns, leases, item records (but for the ready member
// they name), logs and the queue-wide dead set kept their shape.

// SettingQueueLayout is the Setting of the *contract.PreflightError that
// Preflight returns for a namespace whose queues still hold items or dead
// letters in the key layout of a release before declared keys.
const SettingQueueLayout = "queue layout"

// migrateCommand is how the fix spells the migration.
const migrateCommand = "adkctl redis migrate-layout"

func oldReadyKey(k queueKeys, queue, tenant string) string {
	return k.queue(queue) + "ready:" + lp(tenant)
}

func oldDeadKey(k queueKeys, queue, tenant string) string {
	return k.queue(queue) + "dead:" + lp(tenant)
}

// LayoutReport is what [RedisWorkQueue.InspectLayout] found, or what
// [RedisWorkQueue.MigrateLayout] did, in one namespace.
type LayoutReport struct {
	Namespace string
	// Applied is true when the report is of a migration that ran, false
	// for a dry run.
	Applied bool
	// Queues lists the queues that had anything to move or write, by name.
	Queues []QueueLayout
}

// Pending reports whether any queue had something to move or write.
func (r LayoutReport) Pending() bool { return len(r.Queues) > 0 }

// OldKeys is how many keys of the earlier layout the report counted.
func (r LayoutReport) OldKeys() int {
	n := 0
	for _, q := range r.Queues {
		n += q.Keys
	}
	return n
}

// QueueLayout is one queue's part of a [LayoutReport]. The counts are of
// what the migration moves (or moved): a migration whose reply was lost
// and retried may count a chunk short, never more.
type QueueLayout struct {
	Queue string
	// Tenants is how many tenants still have keys of the earlier layout,
	// and Keys how many such keys there are (a ready set and a dead set per
	// tenant at most).
	Tenants int
	Keys    int
	// Ready and Dead are the queued items and dead letters in those keys
	// that move to the current layout.
	Ready int64
	Dead  int64
	// Dropped is how many entries of those keys are left behind because
	// their item record is gone, is not in the state the key says, or
	// names another ready entry (the earlier release skipped these too; an
	// item queued again by this release since is one of them).
	Dropped int64
	// Placed is how many tenants had queued items but no place in the
	// rotation (what a script of the earlier release stopped half-way
	// could leave) and join its back.
	Placed int
	// Placeholders is how many of the queue's placeholder entries (which
	// keep its keys from vanishing mid-script on Redis Cluster) are
	// missing: a queue the earlier release created has none of its 8.
	Placeholders int
	// LastClaim is when the newest claim the queue logged was made (by the
	// claiming worker's clock); zero when the log is empty. A recent one
	// means a worker is still running.
	LastClaim time.Time
}

// Migration chunks: at most this many entries of each old set, and about
// this many bytes of item records, per script call, so one call never
// holds the server long however large a tenant's sets are.
const (
	migrateChunk       = 500
	migrateRecordBytes = 4 << 20
)

var scriptMigrateLayout = loadQueueScript("migrate_layout")

// InspectLayout reports, without writing anything, what MigrateLayout
// would move and write in the queue's namespace: every queue with keys of
// the layout before declared keys, or without its placeholders.
//
// With several shards every shard's keys are inspected, and a queue is
// reported once per shard that needs work.
func (q *RedisWorkQueue) InspectLayout(ctx context.Context) (LayoutReport, error) {
	return q.eachLayout(ctx, func(d *workQueue) (LayoutReport, error) { return d.layout(ctx, false) })
}

// eachLayout runs fn on every shard in turn and joins the reports.
func (q *RedisWorkQueue) eachLayout(ctx context.Context, fn func(*workQueue) (LayoutReport, error)) (LayoutReport, error) {
	var out LayoutReport
	for i, d := range q.shards {
		rep, err := fn(d)
		if i == 0 {
			out = rep
		} else {
			out.Queues = append(out.Queues, rep.Queues...)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// MigrateLayout moves the queues of the namespace written by a release
// before declared keys into the current layout: every tenant's old ready
// set into the queue's READY set (each item record then names its new
// ready member) and its old dead set into TDEAD, the queue's placeholders
// written, a tenant with queued items but no place in the rotation put at
// its back. It runs one script per chunk of one tenant; each declares its
// keys and reads before it writes, so a call refused, interrupted or
// repeated leaves nothing half-moved, and running MigrateLayout again
// finishes the work or, when there is none, writes nothing.
//
// Stop every worker and producer first, of both releases: a process of
// the earlier release keeps writing the old keys, and one of this release
// that enqueues an item still in an old set queues it a second time.
// MigrateLayout returns an error when old keys remain at the end.
func (q *RedisWorkQueue) MigrateLayout(ctx context.Context) (LayoutReport, error) {
	return q.eachLayout(ctx, func(d *workQueue) (LayoutReport, error) { return d.migrateLayout(ctx) })
}

func (q *workQueue) migrateLayout(ctx context.Context) (LayoutReport, error) {
	rep, err := q.layout(ctx, true)
	if err != nil {
		return rep, err
	}
	var left []oldLayoutQueue
	err = q.read(ctx, func(ctx context.Context) error {
		var err error
		left, err = findOldLayout(ctx, q.client, q.keys)
		return err
	})
	if err != nil {
		return rep, err
	}
	if len(left) > 0 {
		return rep, fmt.Errorf("redisstore: migrate layout: %s still hold keys of the earlier layout after the migration: "+
			"a process of the earlier release is still writing them; stop it and run the migration again", describeOld(left))
	}
	return rep, nil
}

func (q *workQueue) layout(ctx context.Context, apply bool) (LayoutReport, error) {
	rep := LayoutReport{Namespace: q.settings.Namespace, Applied: apply}
	var names []string
	err := q.read(ctx, func(ctx context.Context) error {
		var err error
		names, err = q.client.SMembers(ctx, q.keys.queues()).Result()
		return err
	})
	if err != nil {
		return rep, err
	}
	slices.Sort(names)
	for _, name := range names {
		ql, err := q.layoutQueue(ctx, name, apply)
		if err != nil {
			return rep, err
		}
		if ql.Keys > 0 || ql.Placeholders > 0 {
			rep.Queues = append(rep.Queues, ql)
		}
	}
	return rep, nil
}

// layoutQueue inspects or migrates queue name.
func (q *workQueue) layoutQueue(ctx context.Context, name string, apply bool) (QueueLayout, error) {
	ql := QueueLayout{Queue: name}
	base := q.queueKeys(name)
	mode := "0"
	if apply {
		mode = "1"
	}
	var tenants []string
	err := q.read(ctx, func(ctx context.Context) error {
		tenants, ql.Keys = nil, 0
		last, err := q.client.LIndex(ctx, q.keys.queue(name)+"log", 0).Result()
		if err != nil && err != redis.Nil {
			return err
		}
		ql.LastClaim = claimTime(last)
		return eachOldLayoutTenant(ctx, q.client, q.keys, name, func(t string, n int64) {
			tenants = append(tenants, t)
			ql.Keys += int(n)
		})
	})
	if err != nil {
		return ql, err
	}
	ql.Tenants = len(tenants)

	// The placeholders first, with the queue's own keys only.
	now := nowMicros(q.clock.Now())
	res, err := q.migrateStep(ctx, base, "", now, mode, 0, 0)
	if err != nil {
		return ql, fmt.Errorf("redisstore: migrate layout of queue %q: %w", name, err)
	}
	ql.Placeholders = int(res.missing)

	keys := make([]string, len(base), len(base)+2)
	copy(keys, base)
	for _, t := range tenants {
		keys = append(keys[:len(base)], oldReadyKey(q.keys, name, t), oldDeadKey(q.keys, name, t))
		var skipR, skipD int64
		placed := false
		for calls, most := 0, int64(-1); ; calls++ {
			res, err := q.migrateStep(ctx, keys, t, now, mode, skipR, skipD)
			if err != nil {
				return ql, fmt.Errorf("redisstore: migrate layout of queue %q, tenant %q: %w", name, t, err)
			}
			ql.Ready += res.moved
			ql.Dead += res.deadMoved
			ql.Dropped += res.dropped + res.deadDropped
			placed = placed || res.placed
			if res.readyLeft <= 0 && res.deadLeft <= 0 {
				break
			}
			if most < 0 {
				// Each call takes one entry of each set at least: a bound
				// that only a writer still adding entries can reach.
				most = res.moved + res.dropped + res.readyLeft + res.deadMoved + res.deadDropped + res.deadLeft
			}
			if int64(calls)+1 >= most {
				return ql, fmt.Errorf("redisstore: migrate layout of queue %q, tenant %q: entries keep arriving in the earlier layout; "+
					"a process of the earlier release is still running: stop it and run the migration again", name, t)
			}
			if !apply {
				skipR += res.moved + res.dropped
				skipD += res.deadMoved + res.deadDropped
			}
		}
		if placed {
			ql.Placed++
		}
	}
	return ql, nil
}

// migrateReply is one reply of migrate_layout.lua.
type migrateReply struct {
	moved, dropped, deadMoved, deadDropped, missing, readyLeft, deadLeft int64
	placed                                                               bool
}

func (q *workQueue) migrateStep(ctx context.Context, keys []string, tenant, now, mode string, skipR, skipD int64) (migrateReply, error) {
	v, err := q.run(ctx, scriptMigrateLayout, keys, tenant, now, migrateChunk, migrateRecordBytes, mode, skipR, skipD)
	if err != nil {
		return migrateReply{}, err
	}
	row, _ := v.([]any)
	if len(row) != 8 {
		return migrateReply{}, fmt.Errorf("malformed migrate reply %v", v)
	}
	n := make([]int64, len(row))
	for i, x := range row {
		n[i], _ = x.(int64)
	}
	return migrateReply{moved: n[0], dropped: n[1], deadMoved: n[2], deadDropped: n[3], missing: n[4],
		readyLeft: n[5], deadLeft: n[6], placed: n[7] == 1}, nil
}

// claimTime reads the time of a claim log entry (lp(worker) lp(unix ns)
// then refs); zero when there is none.
func claimTime(entry string) time.Time {
	_, rest, ok := cutLP(entry)
	if !ok {
		return time.Time{}
	}
	ns, _, ok := cutLP(rest)
	if !ok {
		return time.Time{}
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// oldLayoutQueue is a queue Preflight found keys of the earlier layout in.
type oldLayoutQueue struct {
	queue string
	keys  int64
}

// layoutPage is how many tenants are read and checked per round trip.
const layoutPage = 1000

// eachOldLayoutTenant calls fn with every tenant of queue name that has
// keys of the earlier layout, and how many (1 or 2). It reads the queue's
// tenant set a page at a time (every tenant that ever had an item is in
// it, in both layouts) and checks a page's old keys in one pipeline of
// EXISTS; every key shares the namespace's hash tag, so on Redis Cluster
// the whole read goes to the one master that serves the namespace.
func eachOldLayoutTenant(ctx context.Context, c redis.UniversalClient, k queueKeys, name string, fn func(tenant string, keys int64)) error {
	seen := map[string]bool{}
	return eachTenantPage(ctx, c, k, name, func(page []string) error {
		pipe := c.Pipeline()
		checks := make([]*redis.IntCmd, len(page))
		for i, t := range page {
			checks[i] = pipe.Exists(ctx, oldReadyKey(k, name, t), oldDeadKey(k, name, t))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		for i, t := range page {
			// SSCAN may return a member twice when the set grows meanwhile.
			if n := checks[i].Val(); n > 0 && !seen[t] {
				seen[t] = true
				fn(t, n)
			}
		}
		return nil
	})
}

// countOldLayout is how many keys of the earlier layout queue name has:
// one EXISTS of every old key per page of tenants, which is what makes
// Preflight's check cheap. A tenant SSCAN returns twice counts twice; a
// count is all Preflight needs.
func countOldLayout(ctx context.Context, c redis.UniversalClient, k queueKeys, name string) (int64, error) {
	var n int64
	keys := make([]string, 0, 2*layoutPage)
	err := eachTenantPage(ctx, c, k, name, func(page []string) error {
		keys = keys[:0]
		for _, t := range page {
			keys = append(keys, oldReadyKey(k, name, t), oldDeadKey(k, name, t))
		}
		m, err := c.Exists(ctx, keys...).Result()
		n += m
		return err
	})
	return n, err
}

// eachTenantPage hands fn the tenants of queue name a page (about
// layoutPage) at a time.
func eachTenantPage(ctx context.Context, c redis.UniversalClient, k queueKeys, name string, fn func([]string) error) error {
	tenantsKey := k.queue(name) + "tenants"
	var cursor uint64
	for {
		page, next, err := c.SScan(ctx, tenantsKey, cursor, "", layoutPage).Result()
		if err != nil {
			return err
		}
		if len(page) > 0 {
			if err := fn(page); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// findOldLayout returns the queues of the namespace with keys of the
// earlier layout, by name. It only reads.
func findOldLayout(ctx context.Context, c redis.UniversalClient, k queueKeys) ([]oldLayoutQueue, error) {
	names, err := c.SMembers(ctx, k.queues()).Result()
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []oldLayoutQueue
	for _, name := range names {
		n, err := countOldLayout(ctx, c, k, name)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			out = append(out, oldLayoutQueue{queue: name, keys: n})
		}
	}
	return out, nil
}

// withoutPlaceholders returns the queues of the namespace whose ready set
// does not exist: the placeholders a queue's first enqueue writes keep it
// from ever vanishing, so these were created by the earlier release (and
// drained, or not yet migrated).
func withoutPlaceholders(ctx context.Context, c redis.UniversalClient, k queueKeys) ([]string, error) {
	names, err := c.SMembers(ctx, k.queues()).Result()
	if err != nil || len(names) == 0 {
		return nil, err
	}
	slices.Sort(names)
	pipe := c.Pipeline()
	exists := make([]*redis.IntCmd, len(names))
	for i, name := range names {
		exists[i] = pipe.Exists(ctx, k.queue(name)+"ready")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	var out []string
	for i, name := range names {
		if exists[i].Val() == 0 {
			out = append(out, name)
		}
	}
	return out, nil
}

// describeOld names the queues and their old keys: `queue "jobs" (12
// keys) and queue "mail" (1 key)`, the first five only.
func describeOld(qs []oldLayoutQueue) string {
	var parts []string
	for i, q := range qs {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("%d more queues", len(qs)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("queue %q (%s)", q.queue, plural(q.keys, "key", "keys")))
	}
	return joinAnd(parts)
}

func joinAnd(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

// layoutCheck is the queue-layout check of Preflight over namespace ns
// of n shards: a refusal when a queue of a shard still holds keys of the
// earlier layout, a warning when one lacks its placeholders. It only
// reads.
func layoutCheck(ctx context.Context, c redis.UniversalClient, ns string, n int) (contract.HealthCheck, *contract.PreflightError, error) {
	var old []oldLayoutQueue
	for i := range max(n, 1) {
		o, err := findOldLayout(ctx, c, shardQueueKeys(ns, i, n))
		if err != nil {
			return contract.HealthCheck{}, nil, err
		}
		old = append(old, o...)
	}
	check := contract.HealthCheck{Name: SettingQueueLayout}
	if len(old) > 0 {
		var n int64
		for _, q := range old {
			n += q.keys
		}
		check.Value = plural(n, "key", "keys") + " of the earlier layout"
		check.Status = contract.HealthFail
		verb := "hold"
		if len(old) == 1 {
			verb = "holds"
		}
		check.Fix = fmt.Sprintf("in namespace %q, %s %s items or dead letters in the key layout of a release before declared keys, "+
			"which this release does not read; stop every worker and producer (of both releases), then run "+
			"`%s --redis-namespace %s --yes` (see docs/deploying.md, Upgrading), or go back to the earlier release and drain them",
			ns, describeOld(old), verb, migrateCommand, ns)
		return check, &contract.PreflightError{Setting: check.Name, Value: check.Value, Fix: check.Fix}, nil
	}
	var bare []string
	for i := range max(n, 1) {
		b, err := withoutPlaceholders(ctx, c, shardQueueKeys(ns, i, n))
		if err != nil {
			return contract.HealthCheck{}, nil, err
		}
		bare = append(bare, b...)
	}
	if len(bare) > 0 {
		quoted := make([]string, len(bare))
		for i, b := range bare {
			quoted[i] = strconv.Quote(b)
		}
		if len(quoted) > 5 {
			quoted = append(quoted[:5], fmt.Sprintf("%d more", len(bare)-5))
		}
		check.Value = plural(int64(len(bare)), "queue", "queues") + " without placeholders"
		check.Status = contract.HealthWarn
		check.Fix = fmt.Sprintf("in namespace %q, queue(s) %s were created by a release before declared keys and lack the placeholder entries "+
			"that keep their keys from vanishing mid-script, so on Redis Cluster a reshard of the namespace's slot can stop their scripts half-way; "+
			"with every worker stopped, run `%s --redis-namespace %s --yes` to write them", ns, joinAnd(quoted), migrateCommand, ns)
		return check, nil, nil
	}
	check.Status, check.Value = contract.HealthOK, "current"
	return check, nil, nil
}
