//go:build integration

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
)

// The verbs on Redis, in a namespace of the test's own (deleted after),
// through ADK_REDIS_DSN as make demo reads it.
func TestVerbsOnRedis(t *testing.T) {
	dsn, client, ns := redisNamespace(t)
	settings := redisstore.Settings{Namespace: ns}
	q, err := redisstore.NewQueue(client, nil, settings)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	st, err := redisstore.NewState(client, nil, settings)
	if err != nil {
		t.Fatal(err)
	}
	exercise(t, "redis", map[string]string{"ADK_REDIS_DSN": dsn}, []string{"--redis-namespace", ns, "--redis-volatile"}, q, st)

	// The same server's verdict without --redis-volatile, as health and
	// every verb report it.
	h, err := q.Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runArgs(t, map[string]string{"ADK_REDIS_DSN": dsn}, "health", "--redis-namespace", ns, "--json")
	var got healthOut
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err, out)
	}
	if got.Status != h.Status() || (code == exitFailed) != (h.Status() == contract.HealthFail) {
		t.Errorf("health: exit %d status %q; the backing says %q", code, got.Status, h.Status())
	}
}

// The verbs on PostgreSQL, in a schema of the test's own (dropped after),
// through ADK_POSTGRES_DSN; the schema applied by adkctl itself.
func TestVerbsOnPostgres(t *testing.T) {
	dsn := scratchDSN(t, "30s")
	env := map[string]string{"ADK_POSTGRES_DSN": dsn}

	// Before the schema: every verb refuses with the fix; health says why.
	code, _, errOut := runArgs(t, env, "queues")
	if code != exitFailed || !strings.Contains(errOut, "fails verify") || !strings.Contains(errOut, "adkctl schema apply") {
		t.Fatalf("queues before the schema: exit %d %q", code, errOut)
	}
	code, out, _ := runArgs(t, env, "health", "--json")
	var h healthOut
	if err := json.Unmarshal([]byte(out), &h); err != nil || code != exitFailed || h.Status != "fail" || !strings.Contains(h.Verdict, "adk_schema") {
		t.Fatalf("health before the schema: exit %d %+v %v", code, h, err)
	}
	if code, _, errOut := runArgs(t, env, "schema", "apply"); code != exitOK {
		t.Fatalf("schema apply: %d %q", code, errOut)
	}

	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	q, err := pgstore.OpenQueue(t.Context(), pool, nil, pgstore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.NewState(pool, nil, pgstore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	exercise(t, "postgresql", env, nil, q, st)

	// The verdict passes now; the exit code follows the checks (a young
	// adk_work may already show a dead-tuple ratio).
	code, out, _ = runArgs(t, env, "health", "--json")
	h = healthOut{}
	if err := json.Unmarshal([]byte(out), &h); err != nil || h.Verdict != "" || (code == exitFailed) != (h.Status == "fail") {
		t.Errorf("health after the schema: exit %d %+v %v", code, h, err)
	}
}

// exercise seeds the queue and runs every verb over it as a user would:
// the real open path, the DSN from env, flags after the verb.
func exercise(t *testing.T, name string, env map[string]string, flags []string, q contract.WorkQueue, st contract.StateStore) {
	ctx := t.Context()
	queue := "q" + randomHex()
	cmd := func(args ...string) []string {
		return append(append(args, "--queue", queue), flags...)
	}
	var items []contract.Item
	for i := range 4 {
		items = append(items, contract.Item{Tenant: "acme", Queue: queue, ID: fmt.Sprint("dead-", i), Payload: []byte(`{"n":1}`)})
	}
	items = append(items, contract.Item{Tenant: "globex", Queue: queue, ID: "dead-g"})
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Queue: queue, Worker: "w0", LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 5 {
		t.Fatalf("claim: %d %v", len(ls), err)
	}
	for _, l := range ls {
		msg := "rate limited by the model"
		if l.Item.ID == "dead-3" || l.Item.ID == "dead-g" {
			msg = "invalid tool call"
		}
		if _, err := q.Fail(ctx, l, policy.Permanent(errors.New(msg))); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "globex", Queue: queue, ID: "live-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Claim(ctx, contract.ClaimRequest{Queue: queue, Worker: "worker-9", LeaseFor: time.Minute, Max: 1}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "initech", Queue: queue, ID: "ready-1"}, contract.Item{Tenant: "acme", Queue: queue, ID: "ready-2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "initech", ID: "ready-1", Status: "queued"}); err != nil {
		t.Fatal(err)
	}

	decode := func(want int, args ...string) map[string]any {
		t.Helper()
		code, out, errOut := runArgs(t, env, append(args, "--json")...)
		if code != want {
			t.Fatalf("adkctl %q: exit %d, want %d; %q", args, code, want, errOut)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("adkctl %q: %v\n%s", args, err, out)
		}
		return v
	}
	ids := func(v map[string]any, field string) []string {
		var out []string
		for _, r := range v[field].([]any) {
			m := r.(map[string]any)
			out = append(out, m["tenant"].(string)+"/"+m["id"].(string))
		}
		slices.Sort(out)
		return out
	}

	v := decode(exitOK, append([]string{"queues"}, flags...)...)
	found := false
	for _, r := range v["queues"].([]any) {
		m := r.(map[string]any)
		if m["queue"] == queue {
			found = true
			if m["tenants"] != 3.0 || m["ready"] != 2.0 || m["leased"] != 1.0 || m["dead"] != 5.0 {
				t.Errorf("%s: queue row %v", name, m)
			}
		}
	}
	if !found {
		t.Errorf("%s: queues lacks %s: %v", name, queue, v)
	}

	v = decode(exitOK, cmd("tenants")...)
	if rot := v["order"].([]any); len(rot) != 2 || !slices.Contains(rot, any("acme")) || !slices.Contains(rot, any("initech")) {
		t.Errorf("%s: rotation %v", name, rot)
	}
	if turns := v["recent_turns"].([]any); len(turns) != 6 || turns[5].(map[string]any)["id"] != "live-1" {
		t.Errorf("%s: recent turns %v", name, turns)
	}

	v = decode(exitOK, cmd("leases")...)
	if got := ids(v, "leases"); !slices.Equal(got, []string{"globex/live-1"}) {
		t.Errorf("%s: leases %q", name, got)
	}
	if l := v["leases"].([]any)[0].(map[string]any); l["worker"] != "worker-9" || l["expired"] != false || l["token"].(float64) <= 0 {
		t.Errorf("%s: lease %v", name, l)
	}

	all := []string{"acme/dead-0", "acme/dead-1", "acme/dead-2", "acme/dead-3", "globex/dead-g"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, all},
		{[]string{"--tenant", "acme"}, all[:4]},
		{[]string{"--error", "invalid tool"}, []string{"acme/dead-3", "globex/dead-g"}},
		{[]string{"--tenant", "acme", "--error", "invalid tool"}, []string{"acme/dead-3"}},
		{[]string{"--id", "dead-g"}, []string{"globex/dead-g"}},
	} {
		if got := ids(decode(exitOK, cmd(append([]string{"dead", "list"}, tc.args...)...)...), "dead_letters"); !slices.Equal(got, tc.want) {
			t.Errorf("%s: dead list %q: %q, want %q", name, tc.args, got, tc.want)
		}
	}
	page := decode(exitOK, cmd("dead", "list", "--limit", "2")...)
	next, _ := page["next"].(string)
	rest := decode(exitOK, cmd("dead", "list", "--limit", "2", "--all", "--cursor", next)...)
	if got := append(ids(page, "dead_letters"), ids(rest, "dead_letters")...); len(got) != 5 || next == "" {
		t.Errorf("%s: paged dead letters %q (next %q)", name, got, next)
	}
	if v := decode(exitOK, cmd("dead", "count", "--error", "rate limited")...); v["count"] != 3.0 {
		t.Errorf("%s: count %v", name, v)
	}

	// The bulk guard: a count, exit 1, nothing changed.
	v = decode(exitFailed, cmd("dead", "purge", "--error", "rate limited")...)
	if v["matched"] != 3.0 || v["applied"] != false {
		t.Errorf("%s: purge without --yes: %v", name, v)
	}
	if got := ids(decode(exitOK, cmd("dead", "list")...), "dead_letters"); !slices.Equal(got, all) {
		t.Fatalf("%s: a refused purge changed the dead letters: %q", name, got)
	}
	// With --yes: exactly the filter.
	v = decode(exitOK, cmd("dead", "requeue", "--error", "rate limited", "--tenant", "acme", "--yes")...)
	if v["count"] != 3.0 || v["matched"] != 3.0 {
		t.Errorf("%s: requeue --yes: %v", name, v)
	}
	if got := ids(decode(exitOK, cmd("dead", "list")...), "dead_letters"); !slices.Equal(got, []string{"acme/dead-3", "globex/dead-g"}) {
		t.Errorf("%s: after the bulk requeue: %q", name, got)
	}
	if v := decode(exitOK, cmd("dead", "purge", "--tenant", "globex", "--id", "dead-g")...); v["scope"] != "one" || v["count"] != 1.0 {
		t.Errorf("%s: purge one: %v", name, v)
	}
	if code, _, errOut := runArgs(t, env, cmd("dead", "purge", "--tenant", "globex", "--id", "dead-g")...); code != exitNotFound {
		t.Errorf("%s: purge one twice: exit %d %q", name, code, errOut)
	}
	if got := ids(decode(exitOK, cmd("dead", "list")...), "dead_letters"); !slices.Equal(got, []string{"acme/dead-3"}) {
		t.Errorf("%s: after purge one: %q", name, got)
	}

	v = decode(exitOK, cmd("item", "--tenant", "acme", "--id", "dead-0")...)
	if v["state"] != "queued" || v["attempts"] != 0.0 {
		t.Errorf("%s: a requeued item: %v", name, v)
	}
	v = decode(exitOK, cmd("item", "--tenant", "globex", "--id", "live-1")...)
	if v["state"] != "leased" || v["lease"].(map[string]any)["worker"] != "worker-9" {
		t.Errorf("%s: a leased item: %v", name, v)
	}
	v = decode(exitOK, cmd("item", "--tenant", "initech", "--id", "ready-1")...)
	if run, _ := v["run"].(map[string]any); run["status"] != "queued" {
		t.Errorf("%s: the item's run: %v", name, v)
	}
	if code, _, errOut := runArgs(t, env, cmd("item", "--tenant", "globex", "--id", "dead-g")...); code != exitNotFound || !strings.Contains(errOut, "no item") {
		t.Errorf("%s: a purged item: exit %d %q", name, code, errOut)
	}

	// Limits, set by adkctl and enforced by the backing: globex holds one
	// live lease, so a cap of 1 holds it back.
	v = decode(exitOK, cmd("limits", "set", "--tenant", "globex", "--max-leased", "1", "--weight", "2")...)
	if l := v["limits"].(map[string]any); l["max_leased"] != 1.0 || l["weight"] != 2.0 {
		t.Errorf("%s: limits set: %v", name, v)
	}
	fc, ok := contract.AsFlowController(q)
	if !ok {
		t.Fatalf("%s does not enforce limits", name)
	}
	if ql, err := fc.Limits(ctx, queue); err != nil || ql.Tenants["globex"] != (contract.Limits{MaxLeased: 1, Weight: 2}) {
		t.Errorf("%s: the backing's limits after adkctl set them: %+v, %v", name, ql, err)
	}
	held := ""
	for _, r := range decode(exitOK, cmd("limits", "show")...)["tenants"].([]any) {
		if m := r.(map[string]any); m["tenant"] == "globex" {
			held, _ = m["held"].(string)
		}
	}
	if held != "cap" {
		t.Errorf("%s: limits show says globex is held by %q, want cap", name, held)
	}
	decode(exitOK, cmd("limits", "clear", "--tenant", "globex")...)
	if ql, err := fc.Limits(ctx, queue); err != nil || len(ql.Tenants) != 0 {
		t.Errorf("%s: limits after clear: %+v, %v", name, ql, err)
	}
}
