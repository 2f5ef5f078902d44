//go:build integration

package main

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/redisstore"
)

// The lifecycle verbs on each backing the verbs run on, through the real
// open path and the DSN in the environment, as TestVerbsOn* do.

func TestLifecycleVerbsOnRedis(t *testing.T) {
	dsn, client, ns := redisNamespace(t)
	q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	exerciseLifecycle(t, "redis", map[string]string{"ADK_REDIS_DSN": dsn}, []string{"--redis-namespace", ns, "--redis-volatile"}, q)
}

func TestLifecycleVerbsOnPostgres(t *testing.T) {
	dsn := scratchDSN(t, "30s")
	env := map[string]string{"ADK_POSTGRES_DSN": dsn}
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
	exerciseLifecycle(t, "postgresql", env, nil, q)
}

func TestLifecycleVerbsOnSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "adk.db")
	b, err := backing.Open(t.Context(), backing.Config{SQLitePath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	exerciseLifecycle(t, "sqlite", map[string]string{backing.EnvSQLitePath: path}, nil, b.Queue)
}

// exerciseLifecycle seeds a queue of its own and runs pause, resume,
// paused, waiting, signal, cancel (one and --match), purge-cancelled,
// item and tenants over it, checking each against the backing.
//
// A backing without lifecycle controls must refuse the verbs (exit 1,
// naming what is missing); the rest of the test then has nothing to run
// on and says so.
func exerciseLifecycle(t *testing.T, name string, env map[string]string, flags []string, q contract.WorkQueue) {
	ctx := t.Context()
	queue := "lc" + randomHex()
	cmd := func(args ...string) []string {
		return append(append(args, "--queue", queue), flags...)
	}
	decode := func(want int, args ...string) map[string]any {
		t.Helper()
		code, out, errOut := runArgs(t, env, append(cmd(args...), "--json")...)
		if code != want {
			t.Fatalf("%s: adkctl %q: exit %d, want %d; %q", name, args, code, want, errOut)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%s: adkctl %q: %v\n%s", name, args, err, out)
		}
		return v
	}
	refused := func(want int, text string, args ...string) {
		t.Helper()
		code, _, errOut := runArgs(t, env, cmd(args...)...)
		if code != want || !strings.Contains(errOut, text) {
			t.Errorf("%s: adkctl %q: exit %d %q; want exit %d saying %q", name, args, code, errOut, want, text)
		}
	}

	lc, ok := contract.AsLifecycleController(q)
	if !ok {
		refused(exitFailed, "has no lifecycle controls", "pause")
		t.Fatalf("%s has no lifecycle controls: every backing of the kit must have them", name)
	}

	// initech/l1 leased; acme/w1 waiting for "approval"; then acme/a1,
	// acme/a2 and globex/g1, g2 queued.
	claimOne := func(id string) contract.Lease {
		t.Helper()
		ls, err := q.Claim(ctx, contract.ClaimRequest{Queue: queue, Worker: "w-" + id, LeaseFor: time.Hour, Max: 1})
		if err != nil || len(ls) != 1 || ls[0].Item.ID != id {
			t.Fatalf("%s: claim of %s: %v %v", name, id, ls, err)
		}
		return ls[0]
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "initech", Queue: queue, ID: "l1"}); err != nil {
		t.Fatal(err)
	}
	l1 := claimOne("l1")
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", Queue: queue, ID: "w1"}); err != nil {
		t.Fatal(err)
	}
	if err := lc.Wait(ctx, claimOne("w1"), contract.WaitRequest{Signal: "approval", Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx,
		contract.Item{Tenant: "acme", Queue: queue, ID: "a1", Priority: 5}, contract.Item{Tenant: "acme", Queue: queue, ID: "a2"},
		contract.Item{Tenant: "globex", Queue: queue, ID: "g1"}, contract.Item{Tenant: "globex", Queue: queue, ID: "g2"}); err != nil {
		t.Fatal(err)
	}

	// Pause: the queue, then a tenant; the backing reports what adkctl set.
	if v := decode(exitOK, "pause"); v["state"].(map[string]any)["paused"] != true {
		t.Errorf("%s: pause: %v", name, v)
	}
	if _, err := q.Claim(ctx, contract.ClaimRequest{Queue: queue, Worker: "w", LeaseFor: time.Minute, Max: 10}); !errors.Is(err, contract.ErrEmpty) {
		t.Errorf("%s: a claim of a paused queue: %v, want ErrEmpty", name, err)
	}
	decode(exitOK, "pause", "--tenant", "acme")
	decode(exitOK, "resume")
	if st, err := lc.Paused(ctx, queue); err != nil || st.Paused || !slices.Equal(st.Tenants, []string{"acme"}) {
		t.Errorf("%s: the backing's pause state: %+v %v", name, st, err)
	}
	if v := decode(exitOK, "paused"); v["paused"] != false || !slices.Equal(v["tenants"].([]any), []any{"acme"}) {
		t.Errorf("%s: paused: %v", name, v)
	}
	tenants := func() map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, r := range decode(exitOK, "tenants")["tenants"].([]any) {
			m := r.(map[string]any)
			out[m["tenant"].(string)] = m
		}
		return out
	}
	if a := tenants()["acme"]; a["paused"] != true || a["waiting_items"] != 1.0 || a["ready"] != 2.0 {
		t.Errorf("%s: tenants shows acme as %v", name, a)
	}
	// acme is passed over: a claim serves globex only.
	ls, err := q.Claim(ctx, contract.ClaimRequest{Queue: queue, Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.Item.Tenant != "globex" {
			t.Errorf("%s: a paused tenant's item was claimed: %s/%s", name, l.Item.Tenant, l.Item.ID)
		}
		if err := q.Complete(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	decode(exitOK, "resume", "--tenant", "acme")
	if st, err := lc.Paused(ctx, queue); err != nil || st.Paused || len(st.Tenants) != 0 {
		t.Errorf("%s: after resume: %+v %v", name, st, err)
	}

	// Waiting, and signals: the wrong one refused, the right one once.
	ws := decode(exitOK, "waiting")["waiting"].([]any)
	if len(ws) != 1 || ws[0].(map[string]any)["id"] != "w1" || ws[0].(map[string]any)["signal"] != "approval" {
		t.Errorf("%s: waiting: %v", name, ws)
	}
	refused(exitFailed, "waits for signal approval, not approved", "signal", "--tenant", "acme", "--id", "w1", "--signal", "approved")
	decode(exitOK, "signal", "--tenant", "acme", "--id", "w1", "--signal", "approval", "--payload", `{"ok":true}`)
	refused(exitFailed, "not waiting for signal approval", "signal", "--tenant", "acme", "--id", "w1", "--signal", "approval")
	refused(exitNotFound, "no item", "signal", "--tenant", "acme", "--id", "nope", "--signal", "approval")
	v := decode(exitOK, "item", "--tenant", "acme", "--id", "w1")
	if r, _ := v["resumed"].(map[string]any); v["state"] != "queued" || r["signal"] != "approval" || r["payload"] != "eyJvayI6dHJ1ZX0=" {
		t.Errorf("%s: the signalled item: %v", name, v)
	}
	if v := decode(exitOK, "item", "--tenant", "acme", "--id", "a1"); v["priority"] != 5.0 {
		t.Errorf("%s: a prioritised item: %v", name, v)
	}

	// Cancel of a leased item: pending until the holder's next call.
	if v := decode(exitOK, "cancel", "--tenant", "initech", "--id", "l1", "--reason", "operator"); v["was"] != "leased" || v["pending"] != true {
		t.Errorf("%s: cancel of a lease: %v", name, v)
	}
	if v := decode(exitOK, "item", "--tenant", "initech", "--id", "l1"); v["cancel_pending"] != true || v["cancel_reason"] != "operator" {
		t.Errorf("%s: a marked lease: %v", name, v)
	}
	if _, err := q.Heartbeat(ctx, l1, time.Minute); !errors.Is(err, contract.ErrCancelled) {
		t.Errorf("%s: the holder's heartbeat: %v, want a CancelledError", name, err)
	}
	if v := decode(exitOK, "item", "--tenant", "initech", "--id", "l1"); v["state"] != "cancelled" {
		t.Errorf("%s: after the heartbeat: %v", name, v)
	}
	refused(exitNotFound, "no item", "cancel", "--tenant", "acme", "--id", "nope")

	// Bulk: the count, the refusal without --yes, then exactly the filter.
	if v := decode(exitOK, "cancel", "--match", "--tenant", "acme", "--dry-run"); v["matched"] != 3.0 || v["applied"] != false {
		t.Errorf("%s: dry run: %v", name, v)
	}
	if v := decode(exitFailed, "cancel", "--match", "--tenant", "acme"); v["matched"] != 3.0 || v["applied"] != false {
		t.Errorf("%s: without --yes: %v", name, v)
	}
	if n, err := lc.CountMatching(ctx, contract.CancelFilter{Queue: queue, Tenant: "acme"}); err != nil || n != 3 {
		t.Fatalf("%s: a refused bulk cancel changed something: %d match, %v", name, n, err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "globex", Queue: queue, ID: "g3"}); err != nil {
		t.Fatal(err)
	}
	if v := decode(exitOK, "cancel", "--match", "--tenant", "acme", "--yes"); v["count"] != 3.0 || v["applied"] != true {
		t.Errorf("%s: --yes: %v", name, v)
	}
	if v := decode(exitOK, "item", "--tenant", "globex", "--id", "g3"); v["state"] != "queued" {
		t.Errorf("%s: a bulk cancel of acme touched globex/g3: %v", name, v)
	}
	ts := tenants()
	if ts["acme"]["cancelled"] != 3.0 || ts["initech"]["cancelled"] != 1.0 || ts["globex"]["cancelled"] != 0.0 {
		t.Errorf("%s: cancelled counts: acme %v, initech %v, globex %v", name, ts["acme"], ts["initech"], ts["globex"])
	}

	// Purge: every cancelled item goes; the id may be used again.
	if v := decode(exitOK, "purge-cancelled", "--older-than", "0"); v["count"] != 4.0 {
		t.Errorf("%s: purge-cancelled: %v", name, v)
	}
	refused(exitNotFound, "no item", "item", "--tenant", "acme", "--id", "a1")
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", Queue: queue, ID: "a1"}); err != nil {
		t.Fatal(err)
	}
	if v := decode(exitOK, "item", "--tenant", "acme", "--id", "a1"); v["state"] != "queued" {
		t.Errorf("%s: a purged id enqueued again: %v", name, v)
	}
}
