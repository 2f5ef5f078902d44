package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

// fixture is a memstore holding a little of everything, reached by adkctl
// through its open hook, on a fake clock.
type fixture struct {
	t     *testing.T
	clock *contracttest.FakeClock
	store *memstore.Store
	// inspector and verdict replace the store's for health tests.
	inspector contract.Inspector
	// queue replaces the store's WorkQueue (a backing without a feature).
	queue   contract.WorkQueue
	verdict error
	name    string
	// opened is the config the last command opened its backing with.
	opened backing.Config
	// sleep replaces the waits of events --follow.
	sleep func(context.Context, time.Duration) error
}

const hostile = "rtl\u202Eevil.exe"

// newFixture builds, in queue "default":
//
//	globex/g1   leased (token from the claim), attempt 1
//	acme/a1..a3 ready; globex/g2 due in an hour
//	dead: initech/d1 "timeout calling model", initech/d2 "tools timed out",
//	      initech/d3 "invalid payload", globex/d5 "timeout calling model",
//	      hostile/d4 an error with a terminal escape sequence
//
// and in queue "agent" one ready item, acme/x1.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := contracttest.NewFakeClock(time.Time{})
	s := memstore.New(clock, memstore.Settings{})
	f := &fixture{t: t, clock: clock, store: s, name: backing.Memory}
	ctx := t.Context()
	dead := map[contract.ItemKey]string{
		{Tenant: "initech", ID: "d1"}: "timeout calling model",
		{Tenant: "initech", ID: "d2"}: "tools timed out",
		{Tenant: "initech", ID: "d3"}: "invalid payload",
		{Tenant: hostile, ID: "d4"}:   "boom \x1b[31mred\x1b[0m",
		{Tenant: "globex", ID: "d5"}:  "timeout calling model",
	}
	for k := range dead {
		f.must(s.Enqueue(ctx, contract.Item{Tenant: k.Tenant, ID: k.ID, Payload: []byte(`{"step":"plan"}`)}))
	}
	ls, err := s.Claim(ctx, contract.ClaimRequest{Worker: "w0", LeaseFor: time.Minute, Max: 100})
	f.must(err)
	for _, l := range ls {
		_, err := s.Fail(ctx, l, policy.Permanent(errors.New(dead[contract.ItemKey{Tenant: l.Item.Tenant, ID: l.Item.ID}])))
		f.must(err)
	}
	clock.Advance(time.Minute)
	f.must(s.Enqueue(ctx, contract.Item{Tenant: "globex", ID: "g1", Payload: []byte{0xff, 0x00, 0x01}}))
	_, err = s.Claim(ctx, contract.ClaimRequest{Worker: "worker-7", LeaseFor: 30 * time.Second, Max: 1})
	f.must(err)
	for _, id := range []string{"a1", "a2", "a3"} {
		f.must(s.Enqueue(ctx, contract.Item{Tenant: "acme", ID: id, Metadata: map[string]string{"traceparent": "00-abc-def-01"}}))
	}
	f.must(s.Enqueue(ctx, contract.Item{Tenant: "globex", ID: "g2", NotBefore: clock.Now().Add(time.Hour)}))
	f.must(s.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x1", Queue: "agent"}))
	_, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "a1", Status: "planning", Data: json.RawMessage(`{"step":1}`)})
	f.must(err)
	clock.Advance(10 * time.Second)
	return f
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// run runs adkctl with a Redis DSN in the environment (the fixture's
// open ignores it and hands out the memstore).
func (f *fixture) run(args ...string) (code int, stdout, stderr string) {
	f.t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, clock: f.clock, sleep: f.sleep,
		getenv: func(k string) string {
			if k == backing.EnvRedisDSN {
				return "redis://app:hunter2@cache.internal:6379/0"
			}
			return ""
		},
		open: func(_ context.Context, c backing.Config) (*backing.Backing, error) {
			f.opened = c
			in := f.inspector
			if in == nil {
				in = f.store
			}
			var q contract.WorkQueue = f.store
			if f.queue != nil {
				q = f.queue
			}
			return &backing.Backing{Name: f.name, DSN: c.RedisDSN, Queue: q, Inspector: in, State: f.store, Verdict: f.verdict}, nil
		},
	}
	code = a.run(f.t.Context(), args)
	if strings.Contains(out.String()+errb.String(), "hunter2") {
		f.t.Errorf("adkctl %q printed the password", args)
	}
	return code, out.String(), errb.String()
}

// ok runs a command that must exit 0 and returns its output.
func (f *fixture) ok(args ...string) string {
	f.t.Helper()
	code, out, errOut := f.run(args...)
	if code != exitOK {
		f.t.Fatalf("adkctl %q: exit %d, stderr %q", args, code, errOut)
	}
	return out
}

// json runs a command with --json that must exit want, and decodes it.
func (f *fixture) json(want int, args ...string) map[string]any {
	f.t.Helper()
	code, out, errOut := f.run(append(args, "--json")...)
	if code != want {
		f.t.Fatalf("adkctl %q --json: exit %d, want %d; stderr %q", args, code, want, errOut)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		f.t.Fatalf("adkctl %q --json printed no JSON object: %v\n%s", args, err, out)
	}
	return v
}

// dead lists every dead letter of the queue, as keys, straight from the store.
func (f *fixture) dead(queue string) []string {
	f.t.Helper()
	page, err := f.store.DeadLetters(f.t.Context(), contract.DeadLetterQuery{DeadLetterFilter: contract.DeadLetterFilter{Queue: queue}, Page: contract.PageRequest{Limit: contract.MaxPageSize}})
	f.must(err)
	var keys []string
	for _, it := range page.Items {
		keys = append(keys, it.Tenant+"/"+it.ID)
	}
	slices.Sort(keys)
	return keys
}

// keysOf pins a JSON object's field names: scripts depend on them.
func keysOf(t *testing.T, what string, v any, want ...string) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s is %T, not an object", what, v)
	}
	got := slices.Sorted(maps.Keys(m))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s has fields %q, want %q", what, got, want)
	}
}

func list(t *testing.T, v any, field string) []any {
	t.Helper()
	l, ok := v.(map[string]any)[field].([]any)
	if !ok {
		t.Fatalf("%s is not a list: %v", field, v)
	}
	return l
}

func TestQueues(t *testing.T) {
	f := newFixture(t)
	out := f.ok("queues")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "QUEUE") {
		t.Fatalf("queues table:\n%s", out)
	}
	// default: 4 tenants; ready a1..a3; later g2; leased g1; 5 dead.
	if got := strings.Fields(lines[2]); !slices.Equal(got[:7], []string{"default", "4", "3", "1", "1", "5", "6"}) {
		t.Errorf("default row %q", lines[2])
	}
	if got := strings.Fields(lines[1]); !slices.Equal(got[:6], []string{"agent", "1", "1", "0", "0", "0"}) {
		t.Errorf("agent row %q", lines[1])
	}
	v := f.json(exitOK, "queues")
	keysOf(t, "queues output", v, "queues")
	qs := list(t, v, "queues")
	if len(qs) != 2 {
		t.Fatalf("queues: %v", qs)
	}
	keysOf(t, "a queue", qs[1], "queue", "tenants", "ready", "later", "leased", "dead", "served", "oldest_ready", "latency_seconds")
	if q := qs[1].(map[string]any); q["queue"] != "default" || q["dead"] != 5.0 || q["leased"] != 1.0 {
		t.Errorf("default queue: %v", q)
	}
}

func TestTenants(t *testing.T) {
	f := newFixture(t)
	out := f.ok("tenants")
	// acme has ready work; globex only a delayed item (after acme in the
	// order); initech and the hostile tenant hold only dead letters.
	for _, want := range []string{"queue default: 4 tenants, 2 in the rotation", "last 6 turns, most recent last"} {
		if !strings.Contains(out, want) {
			t.Errorf("tenants output lacks %q:\n%s", want, out)
		}
	}
	var order []string
	for _, l := range strings.Split(out, "\n")[2:6] {
		order = append(order, strings.Fields(l)[0]+":"+strings.Fields(l)[1])
	}
	if want := []string{"1:acme", "2:globex", "-:initech", `-:rtl\u202eevil.exe`}; !slices.Equal(order, want) {
		t.Errorf("tenant rows %q, want %q\n%s", order, want, out)
	}
	if strings.Contains(out, "\u202e") {
		t.Error("a bidi override reached the terminal")
	}

	v := f.json(exitOK, "tenants", "--turns", "3")
	if rot := list(t, v, "order"); len(rot) != 2 || rot[0] != "acme" || rot[1] != "globex" {
		t.Errorf("rotation %v", rot)
	}
	ts := list(t, v, "tenants")
	keysOf(t, "tenants output", v, "queue", "paused", "order", "tenants", "recent_turns")
	keysOf(t, "a tenant", ts[0], "position", "tenant", "ready", "later", "leased", "waiting_items", "dead", "cancelled", "paused", "served", "oldest_ready", "latency_seconds", "turns_in_window", "waiting")
	if a := ts[0].(map[string]any); a["tenant"] != "acme" || a["position"] != 1.0 || a["latency_seconds"] != 10.0 {
		t.Errorf("acme: %v", a)
	}
	turns := list(t, v, "recent_turns")
	if len(turns) != 3 {
		t.Fatalf("--turns 3 gave %d turns", len(turns))
	}
	keysOf(t, "a turn", turns[2], "tenant", "id", "worker", "at")
	if last := turns[2].(map[string]any); last["id"] != "g1" || last["worker"] != "worker-7" {
		t.Errorf("the last turn is %v, want globex/g1 by worker-7", last)
	}
	if code, _, errOut := f.run("tenants", "--turns", "1001"); code != exitUsage || !strings.Contains(errOut, "0 to 1000") {
		t.Errorf("--turns 1001: exit %d %q", code, errOut)
	}
	// A queue that holds nothing: said, with the queues that do.
	code, out, errOut := f.run("tenants", "--queue", "agnet")
	if code != exitOK || !strings.Contains(out, "no tenants") || !strings.Contains(errOut, "queues with items: agent, default") {
		t.Errorf("a misspelt queue: exit %d %q %q", code, out, errOut)
	}
}

func TestLeases(t *testing.T) {
	f := newFixture(t)
	out := f.ok("leases")
	if !strings.Contains(out, "globex  g1    worker-7  1        in 20s") {
		t.Errorf("leases table:\n%s", out)
	}
	v := f.json(exitOK, "leases")
	keysOf(t, "leases output", v, "queue", "leases", "next")
	ls := list(t, v, "leases")
	if len(ls) != 1 {
		t.Fatalf("leases %v", ls)
	}
	keysOf(t, "a lease", ls[0], "tenant", "queue", "id", "worker", "attempts", "expires_at", "time_left_seconds", "expired", "token")
	if l := ls[0].(map[string]any); l["expired"] != false || l["time_left_seconds"] != 20.0 {
		t.Errorf("lease %v", l)
	}

	// Past expiry, before a reaper: marked.
	f.clock.Advance(25 * time.Second)
	out = f.ok("leases")
	if !strings.Contains(out, "EXPIRED 5s ago, not reaped") || !strings.Contains(out, "1 lease past expiry") {
		t.Errorf("an expired lease is not marked:\n%s", out)
	}
	if l := list(t, f.json(exitOK, "leases"), "leases")[0].(map[string]any); l["expired"] != true || l["time_left_seconds"] != -5.0 {
		t.Errorf("expired lease %v", l)
	}
}

func TestLeasesPaging(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	for i := range 3 {
		f.must(f.store.Enqueue(ctx, contract.Item{Tenant: "paged", ID: fmt.Sprint("p", i), Queue: "paging"}))
	}
	_, err := f.store.Claim(ctx, contract.ClaimRequest{Queue: "paging", Worker: "w", LeaseFor: time.Minute, Max: 3})
	f.must(err)
	first := f.json(exitOK, "leases", "--queue", "paging", "--limit", "2")
	next, _ := first["next"].(string)
	if len(list(t, first, "leases")) != 2 || next == "" {
		t.Fatalf("first page %v", first)
	}
	second := f.json(exitOK, "leases", "--queue", "paging", "--limit", "2", "--cursor", next)
	if len(list(t, second, "leases")) != 1 || second["next"] != "" {
		t.Fatalf("second page %v", second)
	}
	all := f.json(exitOK, "leases", "--queue", "paging", "--limit", "1", "--all")
	if len(list(t, all, "leases")) != 3 || all["next"] != "" {
		t.Fatalf("--all %v", all)
	}
	if out := f.ok("leases", "--queue", "paging", "--limit", "2"); !strings.Contains(out, "more: add --cursor "+quoteIfNeeded(next)) {
		t.Errorf("no hint for the next page:\n%s", out)
	}
	if code, _, errOut := f.run("leases", "--limit", "0"); code != exitUsage || !strings.Contains(errOut, "--limit is 0; give 1 to 1000") {
		t.Errorf("--limit 0: exit %d %q", code, errOut)
	}
}

func TestDeadList(t *testing.T) {
	f := newFixture(t)
	out := f.ok("dead", "list")
	if n := strings.Count(out, "\n"); n != 6 {
		t.Errorf("dead list: %d lines, want a header and 5 letters:\n%s", n, out)
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\u202e") {
		t.Errorf("control characters reached the terminal:\n%q", out)
	}
	if !strings.Contains(out, `boom \x1b[31mred\x1b[0m`) || !strings.Contains(out, `{"step":"plan"}`) {
		t.Errorf("the escaped error or the payload preview is missing:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--tenant", "initech"}, []string{"initech/d1", "initech/d2", "initech/d3"}},
		{[]string{"--id", "d5"}, []string{"globex/d5"}},
		{[]string{"--error", "timeout calling"}, []string{"globex/d5", "initech/d1"}},
		{[]string{"--tenant", "initech", "--error", "timeout"}, []string{"initech/d1"}},
		{[]string{"--tenant", hostile}, []string{hostile + "/d4"}},
		{[]string{"--tenant", "nobody"}, nil},
		{[]string{"--queue", "agent"}, nil},
	} {
		v := f.json(exitOK, append([]string{"dead", "list"}, tc.args...)...)
		var got []string
		for _, r := range list(t, v, "dead_letters") {
			m := r.(map[string]any)
			got = append(got, m["tenant"].(string)+"/"+m["id"].(string))
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("dead list %q: %q, want %q", tc.args, got, tc.want)
		}
	}

	v := f.json(exitOK, "dead", "list", "--tenant", "initech", "--error", "invalid")
	keysOf(t, "dead list output", v, "filter", "dead_letters", "next")
	keysOf(t, "the filter", v["filter"], "queue", "tenant", "error_contains")
	row := list(t, v, "dead_letters")[0]
	keysOf(t, "a dead letter", row, "tenant", "queue", "id", "attempts", "last_error", "dead_at", "enqueued_at", "payload_preview", "payload_bytes")
	if r := row.(map[string]any); r["last_error"] != "invalid payload" || r["attempts"] != 1.0 || r["payload_bytes"] != 15.0 {
		t.Errorf("letter %v", r)
	}

	// Paging: two pages of 3 and 2, and --all.
	first := f.json(exitOK, "dead", "list", "--limit", "3")
	next, _ := first["next"].(string)
	second := f.json(exitOK, "dead", "list", "--limit", "3", "--cursor", next)
	if len(list(t, first, "dead_letters")) != 3 || len(list(t, second, "dead_letters")) != 2 || second["next"] != "" {
		t.Errorf("paging: %v / %v", first, second)
	}
	if all := f.json(exitOK, "dead", "list", "--limit", "2", "--all"); len(list(t, all, "dead_letters")) != 5 {
		t.Errorf("--all: %v", all)
	}

	code, out, _ := f.run("dead", "list", "--tenant", "nobody")
	if code != exitOK || !strings.Contains(out, "no dead letters match --queue default --tenant nobody") {
		t.Errorf("an empty match: exit %d %q", code, out)
	}
}

func TestDeadCount(t *testing.T) {
	f := newFixture(t)
	if out := f.ok("dead", "count", "--error", "timeout calling"); out != "2 dead letters match --queue default --error \"timeout calling\"\n" {
		t.Errorf("count: %q", out)
	}
	if out := f.ok("dead", "count", "--id", "d3"); out != "1 dead letter matches --queue default --id d3\n" {
		t.Errorf("count: %q", out)
	}
	v := f.json(exitOK, "dead", "count", "--tenant", "initech")
	keysOf(t, "count output", v, "filter", "count")
	if v["count"] != 3.0 {
		t.Errorf("count %v", v)
	}
}

// A bulk action without --yes prints the count, changes nothing and
// exits 1.
func TestDeadBulkNeedsYes(t *testing.T) {
	f := newFixture(t)
	before := f.dead("default")
	for _, action := range []string{"requeue", "purge"} {
		code, out, errOut := f.run("dead", action, "--error", "timeout calling")
		if code != exitFailed {
			t.Errorf("%s without --yes: exit %d", action, code)
		}
		if !strings.Contains(out, "2 dead letters match --queue default --error \"timeout calling\"") {
			t.Errorf("%s without --yes does not print the count: %q", action, out)
		}
		if !strings.Contains(errOut, "nothing changed") || !strings.Contains(errOut, "--yes") {
			t.Errorf("%s without --yes does not say how to go on: %q", action, errOut)
		}
		// No filter at all is the whole queue: bulk too.
		if code, _, _ := f.run("dead", action); code != exitFailed {
			t.Errorf("%s of the whole queue without --yes: exit %d", action, code)
		}
		v := f.json(exitFailed, "dead", action, "--tenant", "initech")
		keysOf(t, "action output", v, "action", "scope", "filter", "matched", "count", "applied")
		if v["matched"] != 3.0 || v["count"] != 0.0 || v["applied"] != false || v["scope"] != "filter" || v["action"] != action {
			t.Errorf("%s --json without --yes: %v", action, v)
		}
	}
	if after := f.dead("default"); !slices.Equal(before, after) {
		t.Fatalf("a refused bulk action changed the dead letters: %q → %q", before, after)
	}
	if ts, _ := f.store.Tenants(t.Context(), "default"); ts[0].Tenant != "acme" || ts[0].Ready != 3 {
		t.Fatalf("a refused bulk action changed the queue: %+v", ts)
	}
}

// With --yes a bulk action touches exactly the letters of the filter.
func TestDeadBulkTouchesOnlyTheFilter(t *testing.T) {
	f := newFixture(t)
	code, out, errOut := f.run("dead", "requeue", "--error", "timeout calling", "--yes")
	if code != exitOK || out != "2 dead letters match --queue default --error \"timeout calling\"; requeuing them\nrequeued 2 dead letters\n" {
		t.Fatalf("requeue --yes: exit %d %q %q", code, out, errOut)
	}
	if got, want := f.dead("default"), []string{"initech/d2", "initech/d3", hostile + "/d4"}; !slices.Equal(got, want) {
		t.Fatalf("after requeue: %q, want %q", got, want)
	}
	for _, id := range []string{"d1", "d5"} {
		tenant := map[string]string{"d1": "initech", "d5": "globex"}[id]
		info, err := f.store.Item(t.Context(), contract.ItemKey{Tenant: tenant, Queue: "default", ID: id})
		if err != nil || info.Item.State != contract.StateQueued || info.Item.Attempts != 0 {
			t.Errorf("%s/%s after requeue: %+v %v", tenant, id, info.Item, err)
		}
	}

	v := f.json(exitOK, "dead", "purge", "--tenant", "initech", "--yes")
	if v["matched"] != 2.0 || v["count"] != 2.0 || v["applied"] != true || v["scope"] != "filter" {
		t.Errorf("purge --json: %v", v)
	}
	if got, want := f.dead("default"), []string{hostile + "/d4"}; !slices.Equal(got, want) {
		t.Fatalf("after purge: %q, want %q", got, want)
	}
	// Queued items, even of the purged tenant's name, are untouched.
	if info, err := f.store.Item(t.Context(), contract.ItemKey{Tenant: "initech", Queue: "default", ID: "d1"}); err != nil || info.Item.State != contract.StateQueued {
		t.Errorf("purge touched a queued item: %+v %v", info, err)
	}
	// Nothing left to match: done, zero.
	if out := f.ok("dead", "purge", "--tenant", "initech", "--yes"); !strings.Contains(out, "purged 0 dead letters") {
		t.Errorf("an empty bulk purge: %q", out)
	}
}

func TestDeadOne(t *testing.T) {
	f := newFixture(t)
	if out := f.ok("dead", "requeue", "--tenant", "initech", "--id", "d3"); out != "requeued dead letter initech / d3 (queue default)\n" {
		t.Errorf("requeue one: %q", out)
	}
	if got, want := f.dead("default"), []string{"globex/d5", "initech/d1", "initech/d2", hostile + "/d4"}; !slices.Equal(got, want) {
		t.Fatalf("after requeue one: %q, want %q", got, want)
	}
	// Again: the item is alive now, which the message says.
	code, _, errOut := f.run("dead", "requeue", "--tenant", "initech", "--id", "d3")
	if code != exitNotFound || !strings.Contains(errOut, "the item is queued, not dead") {
		t.Errorf("requeue of a live item: exit %d %q", code, errOut)
	}
	code, _, errOut = f.run("dead", "purge", "--tenant", "initech", "--id", "nope")
	if code != exitNotFound || !strings.Contains(errOut, "no dead letter initech / nope in queue default") {
		t.Errorf("purge of a missing letter: exit %d %q", code, errOut)
	}
	code, _, errOut = f.run("dead", "purge", "--tenant", "initech", "--id", "d1", "--error", "invalid")
	if code != exitNotFound || !strings.Contains(errOut, "does not match --error") {
		t.Errorf("purge one outside the error filter: exit %d %q", code, errOut)
	}
	v := f.json(exitOK, "dead", "purge", "--tenant", hostile, "--id", "d4")
	if v["scope"] != "one" || v["count"] != 1.0 || v["applied"] != true {
		t.Errorf("purge one --json: %v", v)
	}
	if got, want := f.dead("default"), []string{"globex/d5", "initech/d1", "initech/d2"}; !slices.Equal(got, want) {
		t.Fatalf("after purge one: %q, want %q", got, want)
	}
}

func TestItem(t *testing.T) {
	f := newFixture(t)
	out := f.ok("item", "--tenant", "acme", "--id", "a1")
	for _, want := range []string{"item", "acme / a1 in queue default", "state", "queued", "metadata", "traceparent=00-abc-def-01", "run", "status planning, version 1", "0 bytes"} {
		if !strings.Contains(out, want) {
			t.Errorf("item output lacks %q:\n%s", want, out)
		}
	}
	v := f.json(exitOK, "item", "--tenant", "acme", "--id", "a1")
	keysOf(t, "item output", v, "tenant", "queue", "id", "state", "priority", "attempts", "snoozes", "enqueued_at", "payload_bytes", "metadata", "run")
	keysOf(t, "the run", v["run"], "tenant", "id", "status", "data", "version", "counters", "seq", "created_at", "updated_at")

	out = f.ok("item", "--tenant", "globex", "--id", "g1")
	if !strings.Contains(out, "worker worker-7, attempt 1, expires in 20s, token") || !strings.Contains(out, "3 bytes: 0xff0001") {
		t.Errorf("a leased item:\n%s", out)
	}
	v = f.json(exitOK, "item", "--tenant", "globex", "--id", "g1")
	keysOf(t, "the lease", v["lease"], "tenant", "queue", "id", "worker", "attempts", "expires_at", "time_left_seconds", "expired", "token")
	if v["payload"] != "/wAB" {
		t.Errorf("the payload is not there in base64: %v", v["payload"])
	}

	v = f.json(exitOK, "item", "--tenant", "initech", "--id", "d3")
	if v["state"] != "dead" || v["last_error"] != "invalid payload" || v["dead_at"] == nil {
		t.Errorf("a dead item: %v", v)
	}
	if out := f.ok("item", "--tenant", "acme", "--id", "x1", "--queue", "agent"); !strings.Contains(out, "in queue agent") {
		t.Errorf("--queue: %s", out)
	}

	code, _, errOut := f.run("item", "--tenant", "acme", "--id", "gone")
	if code != exitNotFound || !strings.Contains(errOut, "no item acme / gone in queue default") {
		t.Errorf("a missing item: exit %d %q", code, errOut)
	}
	if code, _, errOut := f.run("item", "--tenant", "acme"); code != exitUsage || !strings.Contains(errOut, "give both --tenant and --id") {
		t.Errorf("no --id: exit %d %q", code, errOut)
	}
	if code, _, errOut := f.run("item", "--tenant", "a\x00b", "--id", "x"); code != exitUsage || !strings.Contains(errOut, "NUL") {
		t.Errorf("a NUL in the tenant: exit %d %q", code, errOut)
	}
}

// sickInspector reports what a test tells it to.
type sickInspector struct {
	*memstore.Store
	health contract.Health
}

func (s sickInspector) Health(context.Context) (contract.Health, error) { return s.health, nil }

func TestHealth(t *testing.T) {
	f := newFixture(t)
	out := f.ok("health")
	if !strings.HasPrefix(out, "backing memory: OK (preflight/verify passed)") {
		t.Errorf("health:\n%s", out)
	}
	v := f.json(exitOK, "health")
	keysOf(t, "health output", v, "backing", "status", "checks", "details")
	if v["status"] != "ok" {
		t.Errorf("status %v", v["status"])
	}
	for _, c := range list(t, v, "checks") {
		m := c.(map[string]any)
		if _, ok := m["fix"]; ok {
			keysOf(t, "a check", c, "name", "value", "status", "fix")
		} else {
			keysOf(t, "a check", c, "name", "value", "status")
		}
	}

	// A warning prints and exits 0; a failure exits 1 with the fix shown.
	f.name = backing.Redis
	f.inspector = sickInspector{f.store, contract.Health{Backing: "redis", Checks: []contract.HealthCheck{
		{Name: "maxmemory-policy", Value: "noeviction", Status: contract.HealthOK},
		{Name: "used memory", Value: "91% of maxmemory", Status: contract.HealthWarn, Fix: "raise maxmemory"},
	}}}
	if out := f.ok("health"); !strings.Contains(out, "backing redis: WARN") || !strings.Contains(out, "raise maxmemory") {
		t.Errorf("a warning:\n%s", out)
	}
	f.inspector = sickInspector{f.store, contract.Health{Backing: "redis", Checks: []contract.HealthCheck{
		{Name: "persistence", Value: "appendonly no, save \"\"", Status: contract.HealthFail, Fix: "turn on AOF (appendonly yes)"},
	}, Details: map[string]string{"server": "redis://app:hunter2@cache.internal:6379/0"}}}
	code, out, errOut := f.run("health")
	if code != exitFailed || !strings.Contains(out, "backing redis: FAIL") || !strings.Contains(out, "turn on AOF") || !strings.Contains(errOut, "health is red") {
		t.Errorf("a failing check: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "[redacted]") {
		t.Errorf("the DSN in a detail was not redacted:\n%s", out)
	}
	if v := f.json(exitFailed, "health"); v["status"] != "fail" {
		t.Errorf("--json of a failing health: %v", v)
	}

	// A verdict the checks do not carry still fails the health.
	f.inspector = nil
	f.verdict = &contract.PreflightError{Setting: "maxmemory-policy", Value: "allkeys-lru", Fix: "set noeviction"}
	v = f.json(exitFailed, "health")
	if v["status"] != "fail" || !strings.Contains(v["verdict"].(string), "allkeys-lru") {
		t.Errorf("health with a verdict: %v", v)
	}
}

// A server that fails its checks: PostgreSQL (its tables unreadable) is
// refused by every verb but health; Redis is warned about.
func TestVerdict(t *testing.T) {
	f := newFixture(t)
	f.verdict = &contract.PreflightError{Setting: "maxmemory-policy", Value: "allkeys-lru", Fix: "set maxmemory-policy noeviction"}
	f.name = backing.Redis
	code, out, errOut := f.run("queues")
	if code != exitOK || !strings.Contains(out, "default") || !strings.Contains(errOut, "warning: the redis server fails its preflight") || !strings.Contains(errOut, "noeviction") {
		t.Errorf("queues on a Redis that fails preflight: exit %d %q %q", code, out, errOut)
	}
	f.name = backing.PostgreSQL
	f.verdict = &contract.SchemaError{Object: "adk_schema", Found: "missing", Want: "version 1", Fix: "apply ExpectedSchema (adkctl schema apply in development)"}
	for _, verb := range [][]string{{"queues"}, {"tenants"}, {"leases"}, {"dead", "list"}, {"item", "--tenant", "a", "--id", "b"}} {
		code, out, errOut := f.run(verb...)
		if code != exitFailed || out != "" || !strings.Contains(errOut, "fails verify") || !strings.Contains(errOut, "adkctl schema apply") {
			t.Errorf("%q on a database that fails verify: exit %d %q %q", verb, code, out, errOut)
		}
	}
	if code, _, _ := f.run("health"); code != exitFailed {
		t.Errorf("health on a database that fails verify: exit %d", code)
	}
}

func TestBackingFlags(t *testing.T) {
	f := newFixture(t)
	f.ok("queues", "--postgres", "postgres://u@db/app", "--work-table", "app_work", "--timeout", "5s")
	if f.opened.Kind() != backing.PostgreSQL || f.opened.Tables.Work != "app_work" || f.opened.RedisDSN.IsSet() {
		t.Errorf("--postgres over ADK_REDIS_DSN: %+v", f.opened)
	}
	f.ok("queues", "--redis-namespace", "tenant-a", "--redis-volatile")
	if f.opened.Kind() != backing.Redis || f.opened.RedisNamespace != "tenant-a" || !f.opened.RedisVolatile {
		t.Errorf("the Redis flags: %+v", f.opened)
	}
	if f.opened.Listen {
		t.Error("adkctl asked for a LISTEN connection; it never claims")
	}
}

func TestUsage(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: adkctl <verb>"},
		{[]string{"nope"}, `unknown verb "nope"`},
		{[]string{"queues", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"queues", "extra"}, `unexpected argument "extra"`},
		{[]string{"dead"}, "usage: adkctl dead"},
		{[]string{"dead", "frob"}, `unknown command "frob"`},
		{[]string{"dead", "list", "--tenant", "a\x00"}, "NUL"},
		{[]string{"dead", "list", "--limit", "1001"}, "--limit is 1001"},
		{[]string{"tenants", "--queue", ""}, "--queue: is empty"},
		{[]string{"leases", "--timeout", "soon"}, "invalid value"},
	} {
		code, out, errOut := f.run(tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("adkctl %q: exit %d, stdout %q, stderr %q; want exit 2 saying %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// Without a server named, adkctl says what to set: the in-memory store of
// another process is out of reach.
func TestNoServer(t *testing.T) {
	code, out, errOut := runArgs(t, nil, "queues")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "set ADK_REDIS_DSN or ADK_POSTGRES_DSN") {
		t.Errorf("no backing: exit %d %q %q", code, out, errOut)
	}
	code, _, errOut = runArgs(t, map[string]string{"ADK_REDIS_DSN": "redis://x:6379", "ADK_POSTGRES_DSN": "postgres://y"}, "health")
	if code != exitUsage || !strings.Contains(errOut, "pick one backing") {
		t.Errorf("two backings: exit %d %q", code, errOut)
	}
	// Port 1 on loopback refuses at once.
	code, _, errOut = runArgs(t, map[string]string{"ADK_REDIS_DSN": "redis://u:hunter2@127.0.0.1:1/0"}, "health")
	if code != exitFailed || !strings.Contains(errOut, "cannot reach Redis at 127.0.0.1:1") || strings.Contains(errOut, "hunter2") {
		t.Errorf("an unreachable server: exit %d %q", code, errOut)
	}
}

// adkctl --help shows every verb with an example; each verb's --help its
// examples and flags, on stdout with exit 0.
func TestHelpShowsAnExamplePerVerb(t *testing.T) {
	f := newFixture(t)
	out := f.ok("--help")
	for _, ex := range []string{"adkctl queues", "adkctl tenants --", "adkctl leases --", "adkctl dead list --", "adkctl dead requeue --", "adkctl limits set --", "adkctl pause --", "adkctl paused --", "adkctl cancel --", "adkctl signal --", "adkctl waiting --", "adkctl purge-cancelled --", "adkctl item --", "adkctl health", "adkctl schema apply"} {
		if !strings.Contains(out, "\n                               "+ex) {
			t.Errorf("adkctl --help has no example %q", ex)
		}
	}
	for _, tc := range []struct {
		args    []string
		example string
	}{
		{[]string{"queues"}, "adkctl queues"},
		{[]string{"tenants"}, "adkctl tenants --queue"},
		{[]string{"leases"}, "adkctl leases --queue"},
		{[]string{"dead"}, "adkctl dead purge --error"},
		{[]string{"dead", "list"}, "adkctl dead list --tenant"},
		{[]string{"dead", "count"}, "adkctl dead count"},
		{[]string{"dead", "requeue"}, "adkctl dead requeue --tenant"},
		{[]string{"dead", "purge"}, "adkctl dead purge --error"},
		{[]string{"limits"}, "adkctl limits set --queue"},
		{[]string{"limits", "show"}, "adkctl limits show --queue"},
		{[]string{"limits", "set"}, "adkctl limits set --queue"},
		{[]string{"item"}, "adkctl item --tenant"},
		{[]string{"pause"}, "adkctl pause --queue agent --tenant"},
		{[]string{"resume"}, "adkctl resume --queue"},
		{[]string{"paused"}, "adkctl paused --queue"},
		{[]string{"cancel"}, "adkctl cancel --match --tenant acme --dry-run"},
		{[]string{"signal"}, "adkctl signal --tenant"},
		{[]string{"waiting"}, "adkctl waiting --queue"},
		{[]string{"purge-cancelled"}, "adkctl purge-cancelled --queue"},
		{[]string{"health"}, "adkctl health"},
		{[]string{"schema"}, "adkctl schema apply"},
	} {
		for _, h := range []string{"--help", "-h"} {
			code, out, _ := f.run(append(tc.args, h)...)
			if code != exitOK || !strings.Contains(out, "example") || !strings.Contains(out, "  "+tc.example) {
				t.Errorf("adkctl %q %s: exit %d, no example %q:\n%s", tc.args, h, code, tc.example, out)
			}
			if len(tc.args) > 1 || (tc.args[0] != "dead" && tc.args[0] != "limits") {
				if !strings.Contains(out, "-json") {
					t.Errorf("adkctl %q %s does not list --json", tc.args, h)
				}
			}
		}
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"plain":             "plain",
		"tab\there":         `tab\there`,
		"\x1b[2J":           `\x1b[2J`,
		hostile:             `rtl\u202eevil.exe`,
		"bad\xffutf8":       `bad\xffutf8`,
		"back\\slash":       `back\slash`,
		"ünïcode 名前":        "ünïcode 名前",
		"line\u2028break":   `line\u2028break`,
		"real \uFFFD stays": "real \uFFFD stays",
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
	if got := preview([]byte(strings.Repeat("é", 40))); !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "ééé") {
		t.Errorf("a text preview cut mid-rune turned to hex: %q", got)
	}
	if got := age(3*time.Hour + 5*time.Minute); got != "3h05m" {
		t.Errorf("age: %q", got)
	}
}

// A tenant whose ready work is older than every recent turn, and got none
// of them, is marked as starving, as the dashboard marks it.
func TestTenantsWaiting(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	start := f.clock.Now()
	f.must(f.store.Enqueue(ctx, contract.Item{Tenant: "late", Queue: "w", ID: "l1", NotBefore: start.Add(time.Minute)}))
	for i := range 3 {
		f.clock.Advance(time.Second)
		f.must(f.store.Enqueue(ctx, contract.Item{Tenant: "busy", Queue: "w", ID: fmt.Sprint("b", i)}))
		_, err := f.store.Claim(ctx, contract.ClaimRequest{Queue: "w", Worker: "w1", LeaseFor: time.Hour, Max: 1})
		f.must(err)
	}
	f.clock.Advance(2 * time.Minute) // l1 is due now, older than every turn
	ts := list(t, f.json(exitOK, "tenants", "--queue", "w"), "tenants")
	got := map[string]bool{}
	for _, r := range ts {
		m := r.(map[string]any)
		got[m["tenant"].(string)] = m["waiting"].(bool)
	}
	if !got["late"] || got["busy"] {
		t.Errorf("waiting: %v, want late only", got)
	}
	out := f.ok("tenants", "--queue", "w")
	if !strings.Contains(out, "STARVED\n") || !strings.Contains(out, "1 tenant STARVED: ready work older than the last 3 turns") {
		t.Errorf("the starved tenant is not marked:\n%s", out)
	}
	if out := f.ok("tenants"); strings.Contains(out, "STARVED") {
		t.Errorf("a tenant marked starved on the fixture's queue:\n%s", out)
	}
	// A paused tenant is held back, not starved.
	f.must(f.store.Pause(ctx, "w", "late"))
	ts = list(t, f.json(exitOK, "tenants", "--queue", "w"), "tenants")
	for _, r := range ts {
		if m := r.(map[string]any); m["tenant"] == "late" && (m["waiting"] != false || m["paused"] != true) {
			t.Errorf("a paused tenant: %v", m)
		}
	}
	if out := f.ok("tenants", "--queue", "w"); strings.Contains(out, "STARVED") || !strings.Contains(out, "PAUSED\n") {
		t.Errorf("a paused tenant is marked starved, or not paused:\n%s", out)
	}
}
