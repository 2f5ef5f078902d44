//go:build integration

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// redisNamespace returns the shared test server's URL, a client of it and
// a namespace of the test's own, whose keys are deleted when it ends.
func redisNamespace(t *testing.T) (string, *redis.Client, string) {
	t.Helper()
	client := redistest.Client(t)
	return redistest.URL(t), client, redistest.Namespace(t, client)
}

// TestMigrateLayoutVerb: adkctl redis migrate-layout over a namespace
// written in the key layout of the release before declared keys (built
// here with the commands that release's scripts ran): the dry run prints
// and changes nothing, --yes refuses while a claim is fresh in the log,
// moves it all with --force, and a second run has nothing to do.
// modules/redisstore's layout tests run that release's own scripts.
func TestMigrateLayoutVerb(t *testing.T) {
	dsn, client, ns := redisNamespace(t)
	ctx := context.Background()

	// acme has i1 and i2 queued and d1 dead; the last claim was long ago.
	lp := func(s string) string { return strconv.Itoa(len(s)) + ":" + s }
	p := "{" + ns + ":queue}:q:" + lp("default") + ":"
	now := time.Now()
	nowNS := strconv.FormatInt(now.UnixNano(), 10)
	record := func(state, ds, id, member string) string {
		var b strings.Builder
		for _, f := range []string{state, "0", "", "", nowNS, "", ds, "", "acme", id, "", "payload " + id, member} {
			b.WriteString(lp(f))
		}
		return b.String()
	}
	ref := func(id string) string { return lp("acme") + lp(id) }
	m1, m2 := fmt.Sprintf("%016x", 1)+ref("i1"), fmt.Sprintf("%016x", 2)+ref("i2")
	old := time.Now().Add(-time.Hour).UnixNano()
	pipe := client.TxPipeline()
	pipe.HSet(ctx, p+"items", ref("i1"), record("q", "", "i1", m1), ref("i2"), record("q", "", "i2", m2),
		ref("d1"), record("d", "3", "d1", fmt.Sprintf("%016x", 0)+ref("d1")))
	pipe.ZAdd(ctx, p+"ready:"+lp("acme"), redis.Z{Score: float64(now.UnixNano() / 1000), Member: m1}, redis.Z{Score: float64(now.UnixNano() / 1000), Member: m2})
	pipe.ZAdd(ctx, p+"dead:"+lp("acme"), redis.Z{Score: 3, Member: ref("d1")})
	pipe.ZAdd(ctx, p+"dead", redis.Z{Score: 3, Member: ref("d1")})
	pipe.ZAdd(ctx, p+"rot", redis.Z{Score: 2, Member: "acme"})
	pipe.HSet(ctx, p+"turns", "acme", 2)
	pipe.Set(ctx, p+"turn", 2, 0)
	pipe.Set(ctx, p+"seq", 3, 0)
	pipe.SAdd(ctx, p+"tenants", "acme")
	pipe.LPush(ctx, p+"log", lp("w1")+lp(strconv.FormatInt(old, 10))+ref("d1"))
	pipe.SAdd(ctx, "{"+ns+":queue}:queues", "default")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ADK_REDIS_DSN": dsn}
	flags := []string{"--namespace", ns, "--redis-volatile"}
	snapshot := func() map[string]string {
		out := map[string]string{}
		iter := client.Scan(ctx, 0, "{"+ns+":queue}:*", 1000).Iterator()
		for iter.Next(ctx) {
			out[iter.Val()] = client.Dump(ctx, iter.Val()).Val()
		}
		return out
	}

	// health is red, and says how to fix it.
	code, out, _ := runArgs(t, env, "health", "--redis-namespace", ns, "--redis-volatile")
	if code != exitFailed || !strings.Contains(out, "queue layout") || !strings.Contains(out, "adkctl redis migrate-layout") {
		t.Errorf("health before the migration: exit %d\n%s", code, out)
	}

	before := snapshot()
	code, out, errOut := runArgs(t, env, append([]string{"redis", "migrate-layout"}, flags...)...)
	if code != exitFailed || !strings.Contains(out, "2 keys of the earlier layout to move") || !strings.Contains(errOut, "dry run: nothing changed") {
		t.Errorf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runArgs(t, env, append([]string{"redis", "migrate-layout", "--json"}, flags...)...)
	var dry layoutOut
	if err := json.Unmarshal([]byte(out), &dry); err != nil || code != exitFailed {
		t.Fatalf("dry run --json: exit %d, %v\n%s", code, err, out)
	}
	want := layoutQueueOut{Queue: "default", Tenants: 1, Keys: 2, Ready: 2, Dead: 1, Placeholders: 8, LastClaim: time.Unix(0, old).UTC()}
	if dry.Namespace != ns || dry.Applied || len(dry.Queues) != 1 || dry.Queues[0] != want {
		t.Errorf("dry run --json: %+v; want %+v", dry, want)
	}
	if after := snapshot(); !maps.Equal(before, after) {
		t.Fatal("the dry run changed the namespace")
	}

	// A claim logged a moment ago: a worker is running.
	client.LPush(ctx, p+"log", lp("w2")+lp(strconv.FormatInt(time.Now().UnixNano(), 10))+ref("d1"))
	before = snapshot()
	code, _, errOut = runArgs(t, env, append([]string{"redis", "migrate-layout", "--yes"}, flags...)...)
	if code != exitFailed || !strings.Contains(errOut, "a worker is still running") {
		t.Errorf("--yes with a fresh claim: exit %d, %s", code, errOut)
	}
	if after := snapshot(); !maps.Equal(before, after) {
		t.Fatal("the refused migration changed the namespace")
	}

	code, out, errOut = runArgs(t, env, append([]string{"redis", "migrate-layout", "--yes", "--force"}, flags...)...)
	if code != exitOK || !strings.Contains(out, "migrated") || !strings.Contains(out, "queue-layout check: OK") {
		t.Fatalf("--yes --force: exit %d\n%s%s", code, out, errOut)
	}
	for k := range snapshot() {
		if strings.Contains(k, ":ready:") || strings.Contains(k, ":dead:") {
			t.Errorf("old key %s left", k)
		}
	}

	// The queue opens and serves what was there.
	q, err := redisstore.OpenQueue(ctx, client, nil, redisstore.Settings{Namespace: ns, Volatile: true})
	if err != nil {
		t.Fatalf("OpenQueue after the migration: %v", err)
	}
	defer q.Close()
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 2 || ls[0].Item.ID != "i1" || ls[1].Item.ID != "i2" {
		t.Errorf("claim after the migration: %v, %v; want i1, i2", ls, err)
	}
	code, out, _ = runArgs(t, env, "dead", "list", "--redis-namespace", ns, "--redis-volatile", "--tenant", "acme", "--json")
	var letters deadListOut
	if err := json.Unmarshal([]byte(out), &letters); err != nil || code != exitOK || len(letters.DeadLetters) != 1 || letters.DeadLetters[0].ID != "d1" {
		t.Errorf("dead list --tenant acme after the migration: exit %d %v\n%s", code, err, out)
	}

	before = snapshot()
	code, out, _ = runArgs(t, env, append([]string{"redis", "migrate-layout", "--yes"}, flags...)...)
	if code != exitOK || !strings.Contains(out, "nothing to do") {
		t.Errorf("second run: exit %d\n%s", code, out)
	}
	if after := snapshot(); !maps.Equal(before, after) {
		t.Error("the second run changed the namespace")
	}
	var pe *contract.PreflightError
	if _, err := redisstore.Preflight(ctx, client, redisstore.Settings{Namespace: ns, Volatile: true}); errors.As(err, &pe) {
		t.Errorf("preflight after the migration: %v", err)
	}
}

// TestFunctionsVerb, on a server of its own: adkctl redis functions
// lists this release's libraries and another release's (exit 1, nothing
// deleted), --yes deletes the other release's only, and a second run has
// nothing to do.
func TestFunctionsVerb(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t)
	client := srv.Client(t, nil)
	q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Volatile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	stale := "adk_enqueue_0000000000000abc"
	if err := client.FunctionLoad(ctx, "#!lua name="+stale+"\nredis.register_function('"+stale+"', function() return 1 end)").Err(); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ADK_REDIS_DSN": "redis://" + srv.Addr() + "/0"}
	code, out, errOut := runArgs(t, env, "redis", "functions", "--redis-volatile")
	if code != exitFailed || !strings.Contains(out, stale) || !strings.Contains(errOut, "1 library of other releases loaded; nothing changed") {
		t.Errorf("list: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runArgs(t, env, "redis", "functions", "--redis-volatile", "--json")
	var listed functionsOut
	if err := json.Unmarshal([]byte(out), &listed); err != nil || code != exitFailed || listed.Deleted || len(listed.Servers) != 1 ||
		len(listed.Servers[0].Stale) != 1 || len(listed.Servers[0].Current) == 0 {
		t.Fatalf("list --json: exit %d, %v\n%s", code, err, out)
	}
	if n, err := client.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: stale}).Result(); err != nil || len(n) != 1 {
		t.Fatalf("the listing deleted the other release's library: %v, %v", n, err)
	}
	code, out, errOut = runArgs(t, env, "redis", "functions", "--redis-volatile", "--yes")
	if code != exitOK || !strings.Contains(out, "deleted") {
		t.Errorf("--yes: exit %d\n%s%s", code, out, errOut)
	}
	if n, err := client.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: stale}).Result(); err != nil || len(n) != 0 {
		t.Errorf("after --yes the other release's library is still there: %v, %v", n, err)
	}
	if n, err := client.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: listed.Servers[0].Current[0]}).Result(); err != nil || len(n) != 1 {
		t.Errorf("after --yes this release's %s is gone: %v, %v", listed.Servers[0].Current[0], n, err)
	}
	if code, out, errOut := runArgs(t, env, "redis", "functions", "--redis-volatile"); code != exitOK {
		t.Errorf("a second run: exit %d\n%s%s", code, out, errOut)
	}
}
