//go:build integration

package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
)

// The history verbs on each backing that keeps history, through the real
// open path and the DSN in the environment, as TestVerbsOn* do.

func TestHistoryVerbsOnRedis(t *testing.T) {
	dsn, client, ns := redisNamespace(t)
	q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	exerciseHistory(t, "redis", map[string]string{"ADK_REDIS_DSN": dsn}, []string{"--redis-namespace", ns, "--redis-volatile"}, q)
}

func TestHistoryVerbsOnSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "adk.db")
	b, err := backing.Open(t.Context(), backing.Config{SQLitePath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	exerciseHistory(t, "sqlite", map[string]string{backing.EnvSQLitePath: path}, nil, b.Queue)
}

// exerciseHistory sets a retention with adkctl, finishes two items on the
// backing, reads them back with history, finished, find and events, and
// prunes the one the retention's count lets go.
func exerciseHistory(t *testing.T, name string, env map[string]string, flags []string, q contract.WorkQueue) {
	ctx := t.Context()
	if _, ok := contract.AsHistoryKeeper(q); !ok {
		t.Fatalf("%s: the backing keeps no history", name)
	}
	queue := "h" + randomHex()
	decode := func(want int, args ...string) map[string]any {
		t.Helper()
		code, out, errOut := runArgs(t, env, append(append(args, "--queue", queue, "--json"), flags...)...)
		if code != want {
			t.Fatalf("%s: adkctl %q: exit %d, want %d; stderr %q", name, args, code, want, errOut)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%s: adkctl %q printed no JSON: %v\n%s", name, args, err, out)
		}
		return v
	}
	v := decode(exitOK, "retention", "set", "--count", "1", "--events", "10")
	if r := v["retention"].(map[string]any); r["count"] != 1.0 || r["events"] != 10.0 {
		t.Fatalf("%s: retention set: %v", name, v)
	}
	if v := decode(exitOK, "retention", "show"); v["retention"].(map[string]any)["count"] != 1.0 {
		t.Errorf("%s: retention show after set: %v", name, v)
	}
	for _, id := range []string{"h1", "h2"} {
		if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", Queue: queue, ID: id}); err != nil {
			t.Fatal(err)
		}
		ls, err := q.Claim(ctx, contract.ClaimRequest{Queue: queue, Worker: "w1", LeaseFor: time.Minute, Max: 1})
		if err != nil || len(ls) != 1 {
			t.Fatalf("%s: claim: %d, %v", name, len(ls), err)
		}
		if err := q.Complete(ctx, ls...); err != nil {
			t.Fatal(err)
		}
	}
	h := decode(exitOK, "history", "--tenant", "acme", "--id", "h1")
	var kinds []string
	for _, e := range h["events"].([]any) {
		kinds = append(kinds, e.(map[string]any)["kind"].(string))
	}
	if !slices.Equal(kinds, []string{"enqueued", "claimed", "completed"}) || h["item"].(map[string]any)["state"] != "completed" {
		t.Errorf("%s: history of h1: %v", name, h)
	}
	ids := func(v map[string]any, field string) []string {
		var out []string
		for _, r := range v[field].([]any) {
			out = append(out, r.(map[string]any)["id"].(string))
		}
		return out
	}
	if got := ids(decode(exitOK, "finished"), "finished"); !slices.Equal(got, []string{"h2", "h1"}) {
		t.Errorf("%s: finished before the prune: %q", name, got)
	}
	if got := ids(decode(exitOK, "find", "--id", "h1"), "items"); !slices.Equal(got, []string{"h1"}) {
		t.Errorf("%s: find: %q", name, got)
	}
	if code, _, _ := runArgs(t, env, append([]string{"find", "--queue", queue, "--id", "nope"}, flags...)...); code != exitNotFound {
		t.Errorf("%s: find of no item: exit %d, want 3", name, code)
	}
	ev := decode(exitOK, "events")
	if n := len(ev["events"].([]any)); n != 6 || ev["next"] == "" {
		t.Errorf("%s: events: %d, next %v; want 6 and a cursor", name, n, ev["next"])
	}
	if after := decode(exitOK, "events", "--cursor", ev["next"].(string)); len(after["events"].([]any)) != 0 {
		t.Errorf("%s: events after the last: %v", name, after)
	}
	if v := decode(exitOK, "prune"); v["pruned"] != 1.0 {
		t.Errorf("%s: prune: %v; want the older of the two gone", name, v)
	}
	if got := ids(decode(exitOK, "finished"), "finished"); !slices.Equal(got, []string{"h2"}) {
		t.Errorf("%s: finished after the prune: %q", name, got)
	}
	code, _, errOut := runArgs(t, env, append([]string{"history", "--queue", queue, "--tenant", "acme", "--id", "h1"}, flags...)...)
	if code != exitNotFound || !strings.Contains(errOut, "no item") {
		t.Errorf("%s: history of the pruned item: exit %d, %q", name, code, errOut)
	}
}
