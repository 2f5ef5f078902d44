//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestFunctionLibrariesLoad loads every script's function library on a
// server of its own: each must compile and register its function (Lua
// caps a function's upvalues and locals, and a library's top level runs
// without most of the standard library).
func TestFunctionLibrariesLoad(t *testing.T) {
	ctx := context.Background()
	c := redistest.StartServer(t).Client(t, nil)
	names, libs := redisstore.ScriptLibraries()
	if len(libs) < 30 {
		t.Fatalf("%d script libraries; the package has more scripts than that", len(libs))
	}
	for i, lib := range libs {
		got, err := c.FunctionLoad(ctx, lib).Result()
		if err != nil {
			t.Errorf("FUNCTION LOAD %s: %v", names[i], err)
		} else if got != names[i] {
			t.Errorf("FUNCTION LOAD %s named the library %q", names[i], got)
		}
	}
	listed, err := c.FunctionList(ctx, redis.FunctionListQuery{}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != len(libs) {
		t.Errorf("FUNCTION LIST holds %d libraries; want the %d loaded", len(listed), len(libs))
	}
}

// roundTrip enqueues, claims and completes one item through q.
func roundTrip(t *testing.T, q contract.WorkQueue, id string) {
	t.Helper()
	ctx := context.Background()
	if err := q.Enqueue(ctx, contract.Item{Queue: "fn", Tenant: "t", ID: id}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Queue: "fn", Worker: "w", LeaseFor: time.Minute, Max: 1})
	if err != nil || len(ls) != 1 || ls[0].Item.ID != id {
		t.Fatalf("claim: %v, %+v; want item %s", err, ls, id)
	}
	if err := q.Complete(ctx, ls[0]); err != nil {
		t.Fatal(err)
	}
}

// TestScriptModes runs a queue on a server of its own, watching which
// command carries its scripts: by default FCALL, loading each library
// once (again after FUNCTION FLUSH, as on a server restarted without
// persistence); EVALSHA for an ACL user who may not load functions
// (turned at the first call, without an error reaching the caller) and
// for Settings.Scripts "eval".
func TestScriptModes(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t)
	admin := srv.Client(t, nil)
	open := func(c *redis.Client, s redisstore.Settings) contract.WorkQueue {
		t.Helper()
		s.Volatile, s.Namespace = true, redistest.Namespace(t, c)
		q, err := redisstore.NewQueue(c, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		return q
	}
	watch := func(name string, run func(), fcall, evalsha bool) {
		t.Helper()
		before := commandTime(t, admin)
		run()
		after := commandTime(t, admin)
		df, de := after["#fcall"]-before["#fcall"], after["#evalsha"]+after["#eval"]-before["#evalsha"]-before["#eval"]
		if (df > 0) != fcall || (de > 0) != evalsha {
			t.Errorf("%s: %d FCALLs and %d EVALSHA/EVALs; want FCALLs %v, EVALSHAs %v", name, df, de, fcall, evalsha)
		}
	}

	fq := open(admin, redisstore.Settings{})
	watch("functions", func() { roundTrip(t, fq, "a") }, true, false)
	libs, err := admin.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "adk_*"}).Result()
	if err != nil || len(libs) == 0 {
		t.Fatalf("FUNCTION LIST after a round trip: %v, %d libraries; want the queue's", err, len(libs))
	}
	if err := admin.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	watch("functions after FUNCTION FLUSH", func() { roundTrip(t, fq, "b") }, true, false)

	if err := admin.Do(ctx, "ACL", "SETUSER", "nofn", "on", ">nofn-test", "~*", "&*", "+@all", "-function").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	limited := srv.Client(t, &redis.Options{Username: "nofn", Password: "nofn-test"})
	if err := limited.FunctionLoad(ctx, "#!lua name=x\nredis.register_function('x', function() return 1 end)").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("FUNCTION LOAD as an ACL user with -function: %v; want NOPERM", err)
	}
	lq := open(limited, redisstore.Settings{})
	// The first call tries its function, is refused the load, and runs
	// by EVALSHA; the next ones go straight to EVALSHA.
	watch("ACL user without +function, first call", func() { roundTrip(t, lq, "c") }, true, true)
	watch("ACL user without +function, later calls", func() { roundTrip(t, lq, "d") }, false, true)

	eq := open(admin, redisstore.Settings{Scripts: redisstore.ScriptsEval})
	watch("Settings.Scripts eval", func() { roundTrip(t, eq, "e") }, false, true)

	_, err = redisstore.NewQueue(admin, nil, redisstore.Settings{Scripts: "lua"})
	if ve, ok := errors.AsType[*contract.ValidationError](err); !ok || ve.Field != "Settings.Scripts" {
		t.Errorf("Settings.Scripts \"lua\": %v; want a ValidationError naming Settings.Scripts", err)
	}
}

// TestPruneFunctions, on a server of its own: a library of another
// release (same naming, another hash) and a user's own library beside
// this release's; the listing names each for what it is, the dry run
// deletes nothing, the prune deletes the other release's only, and the
// queue goes on (its next call would load its own again if needed).
func TestPruneFunctions(t *testing.T) {
	ctx := context.Background()
	c := redistest.StartServer(t).Client(t, nil)
	q, err := redisstore.NewQueue(c, nil, redisstore.Settings{Volatile: true, Namespace: redistest.Namespace(t, c)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	roundTrip(t, q, "a")
	stale := "adk_claim_00000000000000aa"
	for _, lib := range []string{
		"#!lua name=" + stale + "\nredis.register_function('" + stale + "', function() return 1 end)",
		"#!lua name=mine\nredis.register_function('mine', function() return 1 end)",
	} {
		if err := c.FunctionLoad(ctx, lib).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := redisstore.PruneFunctions(ctx, c, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep) != 1 || !slices.Equal(rep[0].Stale, []string{stale}) || rep[0].Deleted || len(rep[0].Current) == 0 ||
		!slices.Contains(redisstore.FunctionLibraries(), rep[0].Current[0]) {
		t.Fatalf("dry run: %+v; want %s stale, this release's current, nothing deleted", rep, stale)
	}
	rep, err = redisstore.PruneFunctions(ctx, c, true)
	if err != nil || len(rep) != 1 || !rep[0].Deleted {
		t.Fatalf("prune: %+v, %v", rep, err)
	}
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{}).Result()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range libs {
		names = append(names, l.Name)
	}
	if slices.Contains(names, stale) || !slices.Contains(names, "mine") || !slices.Contains(names, rep[0].Current[0]) {
		t.Errorf("after the prune the server holds %v; want %s gone, mine and this release's kept", names, stale)
	}
	roundTrip(t, q, "b")
	if rep, err := redisstore.PruneFunctions(ctx, c, true); err != nil || len(rep[0].Stale) != 0 || rep[0].Deleted {
		t.Errorf("a second prune: %+v, %v; want nothing stale", rep, err)
	}
}

// TestPruneFunctionsCluster: on a three-master cluster the first calls
// load this release's libraries on every master, and PruneFunctions
// reports each master and deletes another release's library from the
// one that holds it.
func TestPruneFunctionsCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	q, err := redisstore.NewQueue(cl.Client(t, nil), nil, redisstore.Settings{Volatile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	pruneEverywhere(t, q, 3, cl.Nodes[1])
}

// TestPruneFunctionsRing is TestPruneFunctionsCluster on a redis.Ring of
// two servers: the queue's keys live on one shard, but a missing
// function is loaded on every shard, and the listing and the prune reach
// every shard too.
func TestPruneFunctionsRing(t *testing.T) {
	servers := []*redistest.Server{redistest.StartServer(t), redistest.StartServer(t)}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": servers[0].Addr(), "b": servers[1].Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	q, err := redisstore.NewQueue(ring, nil, redisstore.Settings{Volatile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	pruneEverywhere(t, q, 2, servers[1])
}

// pruneEverywhere runs q once, so that this release's libraries are
// loaded, loads another release's library on stale (one of q's servers
// of servers), then checks that Functions reports every server with
// this release's libraries and stale alone with the other one, that
// PruneFunctions deletes it, and that q still runs.
func pruneEverywhere(t *testing.T, q *redisstore.RedisWorkQueue, servers int, stale *redistest.Server) {
	t.Helper()
	ctx := context.Background()
	roundTrip(t, q, "a")
	lib := "adk_complete_00000000000000ff"
	holder := stale.Client(t, nil)
	if err := holder.FunctionLoad(ctx, "#!lua name="+lib+"\nredis.register_function('"+lib+"', function() return 1 end)").Err(); err != nil {
		t.Fatal(err)
	}
	rep, err := q.Functions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep) != servers {
		t.Fatalf("%d servers reported; want %d: %+v", len(rep), servers, rep)
	}
	for _, r := range rep {
		if len(r.Current) == 0 {
			t.Errorf("%s holds none of this release's libraries after a round trip: every server should", r.Server)
		}
		if want := r.Server == stale.Addr(); (len(r.Stale) == 1) != want {
			t.Errorf("%s: stale %v", r.Server, r.Stale)
		}
	}
	if _, err := q.PruneFunctions(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := holder.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: lib}).Result(); err != nil || len(n) != 0 {
		t.Errorf("after the prune %s still holds %s: %v, %v", stale.Addr(), lib, n, err)
	}
	roundTrip(t, q, "b")
}
