//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// TestMigrateLayout: a namespace written by the release before declared
// keys is refused by Open until it is migrated; the dry run changes
// nothing; the migration leaves the namespace as this release would have
// written it for the same history; the queue then serves it in rotation
// order, delayed items wait, leases and dead letters carry over, and a
// second migration writes nothing.
func TestMigrateLayout(t *testing.T) {
	exerciseMigration(t, redistest.Client(t))
}

// TestMigrateLayoutCluster runs the same on a three-master Redis Cluster:
// each migration script declares the queue's keys and the tenant's two
// old ones, all under the namespace's hash tag.
func TestMigrateLayoutCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	exerciseMigration(t, cl.Client(t, nil))
}

// history is what both namespaces go through, at t0: the earlier
// release's scripts in one, this release's queue in the other.
func writeEarlier(o *earlierRelease, t0 time.Time) {
	o.Enqueue("agent", t0,
		oldItem{tenant: "a", id: "a1"}, oldItem{tenant: "a", id: "a2"}, oldItem{tenant: "a", id: "a3"},
		oldItem{tenant: "b", id: "b1"}, oldItem{tenant: "b", id: "b2"}, oldItem{tenant: "c", id: "c1"},
		oldItem{tenant: "c", id: "c2", at: t0.Add(time.Hour)}, oldItem{tenant: "d", id: "d1", at: t0.Add(2 * time.Hour)})
	o.Claim("agent", "w-old", t0, 30*time.Second, 1) // a1 stays leased
	for _, l := range o.Claim("agent", "w-old", t0, 30*time.Second, 2) {
		o.Bury("agent", t0, l, "boom "+l.id)
	}
	o.Enqueue("default", t0, oldItem{tenant: "x", id: "x1"})
	o.Bury("default", t0, o.Claim("default", "w-old", t0, 30*time.Second, 1)[0], "boom x1")
	o.Enqueue("drained", t0, oldItem{tenant: "e", id: "e1"})
	o.Complete("drained", o.Claim("drained", "w-old", t0, 30*time.Second, 1)[0])
}

func writeCurrent(t *testing.T, q *redisstore.RedisWorkQueue, t0 time.Time) {
	t.Helper()
	ctx := context.Background()
	item := func(queue, tenant, id string, at time.Time) contract.Item {
		it := contract.Item{Queue: queue, Tenant: tenant, ID: id, Payload: []byte(payloadOf(id))}
		if at.After(t0) {
			it.NotBefore = at
		}
		return it
	}
	must(t, q.Enqueue(ctx, item("agent", "a", "a1", t0), item("agent", "a", "a2", t0), item("agent", "a", "a3", t0),
		item("agent", "b", "b1", t0), item("agent", "b", "b2", t0), item("agent", "c", "c1", t0),
		item("agent", "c", "c2", t0.Add(time.Hour)), item("agent", "d", "d1", t0.Add(2*time.Hour))))
	claim := func(queue string, n int) []contract.Lease {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Queue: queue, Worker: "w-old", LeaseFor: 30 * time.Second, Max: n})
		must(t, err)
		return ls
	}
	claim("agent", 1)
	for _, l := range claim("agent", 2) {
		_, err := q.Fail(ctx, l, errors.New("boom "+l.Item.ID))
		must(t, err)
	}
	must(t, q.Enqueue(ctx, item("default", "x", "x1", t0)))
	_, err := q.Fail(ctx, claim("default", 1)[0], errors.New("boom x1"))
	must(t, err)
	must(t, q.Enqueue(ctx, item("drained", "e", "e1", t0)))
	must(t, q.Complete(ctx, claim("drained", 1)...))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func exerciseMigration(t *testing.T, client redis.UniversalClient) {
	ctx := context.Background()
	t0 := contracttest.FakeEpoch
	oldNS, newNS := redistest.Namespace(t, client), redistest.Namespace(t, client)
	writeEarlier(newEarlierRelease(t, client, oldNS), t0)
	dead := policy.Policy{MaxAttempts: 1}
	control, err := redisstore.NewQueue(client, contracttest.NewFakeClock(t0), redisstore.Settings{Namespace: newNS, Policy: dead})
	must(t, err)
	defer control.Close()
	writeCurrent(t, control, t0)

	clock := contracttest.NewFakeClock(t0)
	settings := redisstore.Settings{Namespace: oldNS, Volatile: true,
		Policy: policy.Policy{MaxAttempts: 5, BaseDelay: time.Second, MaxDelay: time.Second}}

	// Refused, with the namespace, the queues, the count and the fix.
	_, _, err = redisstore.Open(ctx, client, clock, settings)
	var pe *contract.PreflightError
	if !errors.As(err, &pe) || pe.Setting != redisstore.SettingQueueLayout {
		t.Fatalf("Open of a namespace in the earlier layout: %v; want a PreflightError of %q", err, redisstore.SettingQueueLayout)
	}
	for _, want := range []string{`namespace "` + oldNS + `"`, `queue "agent" (6 keys)`, `queue "default" (1 key)`,
		"adkctl redis migrate-layout --redis-namespace " + oldNS + " --yes", "drain"} {
		if !strings.Contains(pe.Fix, want) {
			t.Errorf("the fix %q does not say %q", pe.Fix, want)
		}
	}
	if pe.Value != "7 keys of the earlier layout" {
		t.Errorf("refusal value %q", pe.Value)
	}
	for _, open := range []func() error{
		func() error { _, err := redisstore.OpenState(ctx, client, clock, settings); return err },
		func() error {
			q, err := redisstore.OpenQueue(ctx, client, clock, settings)
			if q != nil {
				_ = q.Close()
			}
			return err
		},
	} {
		if err := open(); !errors.As(err, &pe) || pe.Setting != redisstore.SettingQueueLayout {
			t.Errorf("OpenState/OpenQueue: %v; want the layout refusal", err)
		}
	}

	// What the refusal guards against: this release reads none of it.
	q, err := redisstore.NewQueue(client, clock, settings)
	must(t, err)
	defer q.Close()
	if ts := tenantStats(t, q, "agent"); ts["a"].Ready != 0 || ts["b"].Dead != 0 {
		t.Fatalf("before the migration this release already sees the items: %+v", ts)
	}
	h, err := q.Health(ctx)
	must(t, err)
	if c := findCheck(h, redisstore.SettingQueueLayout); c.Status != contract.HealthFail {
		t.Errorf("health's layout check %+v; want it failed", c)
	}

	// The dry run.
	before := snapshot(t, client, oldNS)
	dry, err := q.InspectLayout(ctx)
	must(t, err)
	want := []redisstore.QueueLayout{
		{Queue: "agent", Tenants: 4, Keys: 6, Ready: 5, Dead: 2, Placeholders: 8, LastClaim: t0},
		{Queue: "default", Tenants: 1, Keys: 1, Dead: 1, Placeholders: 8, LastClaim: t0},
		{Queue: "drained", Placeholders: 8, LastClaim: t0},
	}
	checkReport(t, "dry run", dry, oldNS, false, want)
	if after := snapshot(t, client, oldNS); !maps.Equal(before, after) {
		t.Fatalf("the dry run changed the namespace:\n%s", diffKeys(before, after))
	}

	// The migration.
	rep, err := q.MigrateLayout(ctx)
	must(t, err)
	checkReport(t, "migration", rep, oldNS, true, want)
	if left := oldLayoutKeys(t, client, oldNS); len(left) > 0 {
		t.Fatalf("keys of the earlier layout left: %v", left)
	}
	for _, queue := range []string{"agent", "default", "drained"} {
		got, want := queueContents(t, client, oldNS, queue), queueContents(t, client, newNS, queue)
		if !maps.Equal(got, want) {
			t.Errorf("queue %s after the migration differs from the same history written by this release:\n%s", queue, diffKeys(want, got))
		}
	}
	_, opened, err := redisstore.Open(ctx, client, clock, settings)
	if err != nil {
		t.Fatalf("Open after the migration: %v", err)
	}
	_ = opened.Close()
	h, err = q.Health(ctx)
	must(t, err)
	if c := findCheck(h, redisstore.SettingQueueLayout); c.Status != contract.HealthOK {
		t.Errorf("health's layout check after the migration: %+v", c)
	}

	// Counts as the Inspector reads them.
	ts := tenantStats(t, q, "agent")
	for tenant, w := range map[string]contract.TenantStats{
		"a": {Ready: 2, Leased: 1}, "b": {Ready: 1, Dead: 1}, "c": {Later: 1, Dead: 1}, "d": {Later: 1},
	} {
		if g := ts[tenant]; g.Ready != w.Ready || g.Later != w.Later || g.Leased != w.Leased || g.Dead != w.Dead {
			t.Errorf("tenant %s after the migration: %+v; want ready %d later %d leased %d dead %d", tenant, g, w.Ready, w.Later, w.Leased, w.Dead)
		}
	}

	// An enqueue of an item already queued is still a no-op: its record
	// names its new ready member.
	must(t, q.Enqueue(ctx, contract.Item{Queue: "agent", Tenant: "a", ID: "a2"}))

	// Served in rotation order (a was served last, so b's turn comes
	// between a's); the delayed items wait.
	if order := claimDue(t, q, "agent", 1, payloadOf); !slices.Equal(order, []string{"a2", "b2", "a3"}) {
		t.Errorf("claimed %v at t0; want a2 b2 a3", order)
	}

	// The lease the earlier release gave a1 heartbeats, expires and is
	// reaped; c2 falls due an hour on, d1 two hours on.
	leases, err := q.Leases(ctx, "agent", contract.PageRequest{Limit: 10})
	must(t, err)
	if len(leases.Leases) != 1 || leases.Leases[0].Item.ID != "a1" || leases.Leases[0].Worker != "w-old" {
		t.Fatalf("leases after the migration: %+v; want a1's, by w-old", leases.Leases)
	}
	hb, err := q.Heartbeat(ctx, leases.Leases[0], 10*time.Minute)
	if err != nil || hb.Token <= leases.Leases[0].Token {
		t.Errorf("heartbeat of the earlier release's lease: %v, %v", hb, err)
	}
	clock.Set(t0.Add(time.Hour))
	if n, err := q.Reap(ctx, "agent"); err != nil || n != 1 {
		t.Errorf("reap of the earlier release's lease: %d, %v; want 1", n, err)
	}
	clock.Advance(time.Minute)
	if got := claimDue(t, q, "agent", 10, payloadOf); !slices.Equal(sorted(got), []string{"a1", "c2"}) {
		t.Errorf("claimed %v an hour on; want a1 and c2", got)
	}
	clock.Set(t0.Add(2 * time.Hour))
	if got := claimDue(t, q, "agent", 10, payloadOf); !slices.Equal(got, []string{"d1"}) {
		t.Errorf("claimed %v two hours on; want d1", got)
	}

	// Dead letters list by queue and by tenant, and requeue and purge.
	if got := deadIDs(t, q, contract.DeadLetterFilter{Queue: "agent"}); !slices.Equal(got, []string{"b1", "c1"}) {
		t.Errorf("dead letters of agent: %v", got)
	}
	if got := deadIDs(t, q, contract.DeadLetterFilter{Queue: "agent", Tenant: "c"}); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("dead letters of agent, tenant c: %v", got)
	}
	if n, err := q.Requeue(ctx, contract.DeadLetterFilter{Queue: "agent", Tenant: "c"}); err != nil || n != 1 {
		t.Errorf("requeue of c's letter: %d, %v", n, err)
	}
	if got := claimDue(t, q, "agent", 10, payloadOf); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("claimed %v after the requeue; want c1", got)
	}
	if n, err := q.Purge(ctx, contract.DeadLetterFilter{Queue: "default", Tenant: "x"}); err != nil || n != 1 {
		t.Errorf("purge of x's letter: %d, %v", n, err)
	}
	if ts := tenantStats(t, q, "default"); ts["x"].Dead != 0 {
		t.Errorf("x still counts a dead letter after the purge: %+v", ts["x"])
	}
	if got := deadIDs(t, q, contract.DeadLetterFilter{Queue: "agent", Tenant: "b"}); !slices.Equal(got, []string{"b1"}) {
		t.Errorf("dead letters of agent, tenant b, at the end: %v", got)
	}

	// A second migration finds nothing and writes nothing.
	before = snapshot(t, client, oldNS)
	again, err := q.MigrateLayout(ctx)
	must(t, err)
	if again.Pending() {
		t.Errorf("second migration: %+v; want nothing to do", again)
	}
	if after := snapshot(t, client, oldNS); !maps.Equal(before, after) {
		t.Errorf("the second migration changed the namespace:\n%s", diffKeys(before, after))
	}
}

// TestMigrateLayoutRepairs: entries the earlier release would have
// skipped are dropped, not queued; a tenant left out of the rotation (by a
// script stopped half-way, or a claim of this release that ran on the
// unmigrated namespace) joins it; an item this release queued again while
// the namespace was unmigrated runs once.
func TestMigrateLayoutRepairs(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	oldNS := redistest.Namespace(t, client)
	t0 := contracttest.FakeEpoch
	o := newEarlierRelease(t, client, oldNS)
	o.Enqueue("default", t0, oldItem{tenant: "p", id: "p1"}, oldItem{tenant: "p", id: "p2"},
		oldItem{tenant: "r", id: "r1"}, oldItem{tenant: "r", id: "r2"}, oldItem{tenant: "s", id: "s1"},
		oldItem{tenant: "w", id: "w1", at: t0.Add(time.Hour)})
	p := o.prefix("default")
	must(t, client.HDel(ctx, p+"items", lp("r")+lp("r2")).Err()) // r2's record is gone
	must(t, client.ZRem(ctx, p+"wait", "w").Err())               // w is in no rotation

	clock := contracttest.NewFakeClock(t0)
	q, err := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: oldNS})
	must(t, err)
	defer q.Close()
	// This release, started without Preflight: s1 queued again (the
	// enqueue gives the hot keys their long entries, writing the lease
	// hash's placeholder, so the migration finds seven missing), and a
	// claim that serves it and, finding no items of p and r, takes them
	// out of the rotation.
	must(t, q.Enqueue(ctx, contract.Item{Tenant: "s", ID: "s1", Payload: []byte("again")}))
	if ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10}); err != nil || len(ls) != 1 || ls[0].Item.ID != "s1" {
		t.Fatalf("claim on the unmigrated namespace: %v, %v; want s1 (queued again by this release)", ls, err)
	}

	rep, err := q.MigrateLayout(ctx)
	must(t, err)
	checkReport(t, "migration", rep, oldNS, true, []redisstore.QueueLayout{
		{Queue: "default", Tenants: 4, Keys: 4, Ready: 4, Dropped: 2, Placed: 3, Placeholders: 7, LastClaim: t0},
	})
	got := claimDue(t, q, "", 10, payloadOf)
	// s1 was claimed before the migration (its new entry); p and r join
	// the rotation's back in the order the migration met them.
	if !slices.Equal(sorted(got), []string{"p1", "p2", "r1"}) {
		t.Errorf("claimed %v; want p1, p2, r1 (s1 ran before the migration, r2 has no record)", got)
	}
	clock.Advance(time.Hour)
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 1 || ls[0].Item.ID != "w1" {
		t.Errorf("an hour on: %v, %v; want w1, which waited", ls, err)
	}
}

// TestMigrateLayoutResumes: a migration stopped after some of its chunks
// (here: the reply of the third lost and the call given up) leaves
// nothing half-moved, and the next run finishes it; a tenant larger than
// one chunk keeps its order.
func TestMigrateLayoutResumes(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	oldNS := redistest.Namespace(t, client)
	t0 := contracttest.FakeEpoch
	o := newEarlierRelease(t, client, oldNS)
	var items []oldItem
	var ids []string
	for i := range 2300 {
		id := fmt.Sprintf("big-%04d", i)
		items = append(items, oldItem{tenant: "big", id: id})
		ids = append(ids, id)
	}
	o.Enqueue("default", t0, items...)
	for _, l := range o.Claim("default", "w", t0, time.Minute, 1100) {
		o.Bury("default", t0, l, "boom")
	}
	ids = ids[1100:]

	// A client that, once armed, lets the second migration call of a
	// tenant run but loses its reply, and gives up.
	cut, calls := countingClient(t)
	q, err := redisstore.NewQueue(cut, contracttest.NewFakeClock(t0), redisstore.Settings{Namespace: oldNS})
	must(t, err)
	defer q.Close()
	dry, err := q.InspectLayout(ctx)
	must(t, err)
	checkReport(t, "dry run", dry, oldNS, false, []redisstore.QueueLayout{
		{Queue: "default", Tenants: 1, Keys: 2, Ready: 1200, Dead: 1100, Placeholders: 8, LastClaim: t0},
	})
	calls.armed, calls.cutAfter = true, 2
	if _, err := q.MigrateLayout(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("the cut migration: %v; want the call given up", err)
	}
	counts := func() (ready, dead int64) {
		p := o.prefix("default")
		ready, _ = client.ZCard(ctx, p+"ready:"+lp("big")).Result()
		dead, _ = client.ZCard(ctx, p+"dead:"+lp("big")).Result()
		return ready, dead
	}
	// Two calls of 500 from each set ran, the second unanswered.
	if r, d := counts(); r != 200 || d != 100 {
		t.Fatalf("after the cut the old sets hold %d and %d entries; want 200 and 100", r, d)
	}

	q2, err := redisstore.NewQueue(client, contracttest.NewFakeClock(t0), redisstore.Settings{Namespace: oldNS})
	must(t, err)
	defer q2.Close()
	rep, err := q2.MigrateLayout(ctx)
	must(t, err)
	checkReport(t, "resumed migration", rep, oldNS, true, []redisstore.QueueLayout{
		{Queue: "default", Tenants: 1, Keys: 2, Ready: 200, Dead: 100, LastClaim: t0},
	})
	got := claimDue(t, q2, "", 100, payloadOf)
	if !slices.Equal(got, ids) {
		t.Errorf("claimed %d items (first %v); want the %d left, in enqueue order", len(got), got[:min(3, len(got))], len(ids))
	}
	var dead []string
	for pr := (contract.PageRequest{Limit: contract.MaxPageSize}); ; {
		page, err := q2.DeadLetters(ctx, contract.DeadLetterQuery{DeadLetterFilter: contract.DeadLetterFilter{Tenant: "big"}, Page: pr})
		must(t, err)
		for _, it := range page.Items {
			dead = append(dead, it.ID)
		}
		if pr.Cursor = page.Next; pr.Cursor == "" {
			break
		}
	}
	if len(dead) != 1100 || !slices.IsSorted(dead) || dead[0] != "big-0000" {
		t.Errorf("tenant big's dead letters: %d; want 1100 in dead order", len(dead))
	}
}

// tenantCalls counts the migration's calls for one tenant (the scripts
// that declare 33 keys: the queue's 31 and the tenant's 2 old ones) once
// armed, and from the cutAfter-th on, when set, lets them run but returns
// context.Canceled instead of their reply: a migration cut off mid-way.
type tenantCalls struct {
	armed       bool
	cutAfter, n int
}

func (h *tenantCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *tenantCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *tenantCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); h.armed && (name == "fcall" || name == "evalsha" || name == "eval") && err == nil && len(cmd.Args()) > 2 && fmt.Sprint(cmd.Args()[2]) == "33" {
			if h.n++; h.cutAfter > 0 && h.n >= h.cutAfter {
				return context.Canceled
			}
		}
		return err
	}
}

// countingClient is a client of the shared server with a tenantCalls hook.
func countingClient(t *testing.T) (*redis.Client, *tenantCalls) {
	t.Helper()
	opt, err := redis.ParseURL(redistest.URL(t))
	must(t, err)
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	h := &tenantCalls{}
	c.AddHook(h)
	return c, h
}

// TestMigrateLayoutRecordBudget: a tenant whose records are large moves
// in as many calls as keep each under the byte budget (4 MiB), in order.
func TestMigrateLayoutRecordBudget(t *testing.T) {
	ctx := context.Background()
	client, calls := countingClient(t)
	oldNS := redistest.Namespace(t, client)
	t0 := contracttest.FakeEpoch
	o := newEarlierRelease(t, client, oldNS)
	big := strings.Repeat("x", 300<<10)
	var items []oldItem
	var ids []string
	for i := range 20 {
		id := fmt.Sprintf("large-%02d", i)
		items = append(items, oldItem{tenant: "big", id: id, payload: big})
		ids = append(ids, id)
	}
	o.Enqueue("default", t0, items...)
	q, err := redisstore.NewQueue(client, contracttest.NewFakeClock(t0), redisstore.Settings{Namespace: oldNS})
	must(t, err)
	defer q.Close()
	calls.armed = true
	rep, err := q.MigrateLayout(ctx)
	must(t, err)
	checkReport(t, "migration", rep, oldNS, true, []redisstore.QueueLayout{{Queue: "default", Tenants: 1, Keys: 1, Ready: 20, Placeholders: 8}})
	if calls.n != 2 {
		t.Errorf("20 records of 300 KiB moved in %d calls; want 2 (13 fit in 4 MiB)", calls.n)
	}
	if got := claimDue(t, q, "", 5, func(string) string { return big }); !slices.Equal(got, ids) {
		t.Errorf("claimed %v; want %v", got, ids)
	}
}

// claimDue claims the due items of queue, max at a time, until none is
// left, completes them, and returns their ids in the order claimed. Each
// payload must be payload(id).
func claimDue(t *testing.T, q *redisstore.RedisWorkQueue, queue string, max int, payload func(id string) string) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Queue: queue, Worker: "w-new", LeaseFor: time.Minute, Max: max})
		if errors.Is(err, contract.ErrEmpty) {
			return ids
		}
		must(t, err)
		for _, l := range ls {
			ids = append(ids, l.Item.ID)
			if want := payload(l.Item.ID); string(l.Item.Payload) != want {
				t.Errorf("item %s: payload of %d bytes; want the %d it was enqueued with", l.Item.ID, len(l.Item.Payload), len(want))
			}
		}
		must(t, q.Complete(ctx, ls...))
	}
}

// payloadOf is the payload the earlier release's Enqueue gives id.
func payloadOf(id string) string { return "payload of " + id }

func checkReport(t *testing.T, what string, rep redisstore.LayoutReport, ns string, applied bool, want []redisstore.QueueLayout) {
	t.Helper()
	if rep.Namespace != ns || rep.Applied != applied {
		t.Errorf("%s: namespace %q applied %v", what, rep.Namespace, rep.Applied)
	}
	if len(rep.Queues) != len(want) {
		t.Fatalf("%s: %+v; want %+v", what, rep.Queues, want)
	}
	for i, w := range want {
		g := rep.Queues[i]
		if !g.LastClaim.Equal(w.LastClaim) {
			t.Errorf("%s: queue %s last claim %v; want %v", what, g.Queue, g.LastClaim, w.LastClaim)
		}
		g.LastClaim = w.LastClaim
		if g != w {
			t.Errorf("%s: %+v; want %+v", what, g, w)
		}
	}
}

func findCheck(h contract.Health, name string) contract.HealthCheck {
	for _, c := range h.Checks {
		if c.Name == name {
			return c
		}
	}
	return contract.HealthCheck{}
}

func tenantStats(t *testing.T, q *redisstore.RedisWorkQueue, queue string) map[string]contract.TenantStats {
	t.Helper()
	ts, err := q.Tenants(context.Background(), queue)
	must(t, err)
	out := map[string]contract.TenantStats{}
	for _, s := range ts {
		out[s.Tenant] = s
	}
	return out
}

func deadIDs(t *testing.T, q *redisstore.RedisWorkQueue, f contract.DeadLetterFilter) []string {
	t.Helper()
	page, err := q.DeadLetters(context.Background(), contract.DeadLetterQuery{DeadLetterFilter: f, Page: contract.PageRequest{Limit: 100}})
	must(t, err)
	var ids []string
	for _, it := range page.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// snapshot is every key of namespace ns with its serialized value.
func snapshot(t *testing.T, c redis.UniversalClient, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := redistest.Keys(ctx, c, ns)
	must(t, err)
	out := map[string]string{}
	for _, k := range keys {
		v, err := c.Dump(ctx, k).Result()
		must(t, err)
		out[k] = v
	}
	return out
}

// oldLayoutKeys lists the per-tenant ready and dead sets of namespace ns.
func oldLayoutKeys(t *testing.T, c redis.UniversalClient, ns string) []string {
	t.Helper()
	keys, err := redistest.Keys(context.Background(), c, ns)
	must(t, err)
	var out []string
	for _, k := range keys {
		if strings.Contains(k, ":ready:") || strings.Contains(k, ":dead:") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// queueContents reads the keys of one queue that carry its items, their
// order and the rotation, as comparable text: nonces left out, and the
// ready member a record names only while that member is queued (a leased
// or dead record's is a stale name either way).
func queueContents(t *testing.T, c redis.UniversalClient, ns, queue string) map[string]string {
	t.Helper()
	ctx := context.Background()
	p := "{" + ns + ":queue}:q:" + lp(queue) + ":"
	out := map[string]string{}
	for _, k := range []string{"ready", "rot", "wait", "dead", "tdead", "leases"} {
		zs, err := c.ZRangeWithScores(ctx, p+k, 0, -1).Result()
		must(t, err)
		var b strings.Builder
		for _, z := range zs {
			score := strconv.FormatFloat(z.Score, 'f', -1, 64)
			if k == "leases" {
				score = "" // expiry from each claim's own clock
			}
			fmt.Fprintf(&b, "%s=%s ", z.Member, score)
		}
		out[k] = b.String()
	}
	for _, k := range []string{"turns", "served"} {
		h, err := c.HGetAll(ctx, p+k).Result()
		must(t, err)
		out[k] = fmt.Sprint(h)
	}
	for _, k := range []string{"turn", "seq"} {
		v, _ := c.Get(ctx, p+k).Result()
		out[k] = v
	}
	tenants, err := c.SMembers(ctx, p+"tenants").Result()
	must(t, err)
	out["tenants"] = fmt.Sprint(sorted(tenants))
	items, err := c.HGetAll(ctx, p+"items").Result()
	must(t, err)
	for ref, rec := range items {
		if rec == "" {
			out["items "+ref] = ""
			continue
		}
		f := splitLP(t, rec)
		f[7] = "" // the last settle's nonce
		if _, err := c.ZScore(ctx, p+"ready", f[12]).Result(); err != nil {
			f[12] = ""
		}
		out["items "+ref] = strings.Join(f, "|")
	}
	return out
}

func diffKeys(want, got map[string]string) string {
	var b strings.Builder
	for _, k := range sorted(slices.Collect(maps.Keys(want))) {
		if g, ok := got[k]; !ok {
			fmt.Fprintf(&b, "  %s: want %q, got none\n", k, want[k])
		} else if g != want[k] {
			fmt.Fprintf(&b, "  %s: want %q\n  %s   got %q\n", k, want[k], strings.Repeat(" ", len(k)), g)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "  %s: unexpected %q\n", k, g)
		}
	}
	return b.String()
}

// TestPreflightWarnsWithoutPlaceholders: a queue the earlier release
// created and drained holds nothing to move, so Preflight passes, with a
// warning that its placeholders are missing until the migration writes
// them.
func TestPreflightWarnsWithoutPlaceholders(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	oldNS := redistest.Namespace(t, client)
	t0 := contracttest.FakeEpoch
	o := newEarlierRelease(t, client, oldNS)
	o.Enqueue("drained", t0, oldItem{tenant: "e", id: "e1"})
	o.Complete("drained", o.Claim("drained", "w", t0, time.Minute, 1)[0])

	settings := redisstore.Settings{Namespace: oldNS, Volatile: true}
	rep, err := redisstore.Preflight(ctx, client, settings)
	if err != nil {
		t.Fatalf("preflight of a drained queue of the earlier layout: %v", err)
	}
	c := findCheck(contract.Health{Checks: rep.Checks}, redisstore.SettingQueueLayout)
	if c.Status != contract.HealthWarn || !strings.Contains(c.Fix, `"drained"`) || !strings.Contains(c.Fix, "migrate-layout") {
		t.Errorf("layout check %+v; want a warning naming the queue and the migration", c)
	}
	q, err := redisstore.NewQueue(client, contracttest.NewFakeClock(t0), settings)
	must(t, err)
	defer q.Close()
	mig, err := q.MigrateLayout(ctx)
	must(t, err)
	checkReport(t, "migration", mig, oldNS, true, []redisstore.QueueLayout{{Queue: "drained", Placeholders: 8, LastClaim: t0}})
	rep, err = redisstore.Preflight(ctx, client, settings)
	must(t, err)
	if c := findCheck(contract.Health{Checks: rep.Checks}, redisstore.SettingQueueLayout); c.Status != contract.HealthOK {
		t.Errorf("layout check after the migration: %+v", c)
	}
}
