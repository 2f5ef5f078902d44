//go:build integration

package integration

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// A tenant's state slot is left half-moved: every key of the tenant on the
// new node but one run's hash, which stays on the old. Every state call
// touching the tenant is then refused before its script runs (TRYAGAIN,
// or ASK for a run none of whose keys exists yet, until the retry budget
// ends) and writes nothing on either node — the
// state scripts declare every key they touch — and when the move
// completes the same calls succeed. (TestStateLinearizable's
// redis-cluster row moves the slot back and forth under load.)
func TestClusterSplitSlotRefusesWholeStateScripts(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	client := cl.Client(t, &redis.ClusterOptions{MaxRedirects: 2})
	budget := redisstore.RetryBudget{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	st, err := redisstore.NewState(client, nil, redisstore.Settings{Namespace: "adksplit", RetryBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r1", Session: "s1", Data: []byte(`{"v":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PatchRun(ctx, "acme", "r1", contract.Patch{Counters: contract.Counters{Iterations: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r2", Session: "s1"}); err != nil {
		t.Fatal(err)
	}

	prefix := "adksplit:state:{4:acme}:"
	slot := redistest.Slot(prefix)
	owner, err := cl.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	mv, err := cl.NewSlotMove(ctx, slot, (owner+1)%3)
	if err != nil {
		t.Fatal(err)
	}
	if err := mv.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	keys, err := mv.Keys(ctx)
	if err != nil || len(keys) < 8 {
		t.Fatalf("the tenant's slot holds %d keys (%v): %v", len(keys), keys, err)
	}
	kept := prefix + "meta:2:r1"
	var rest []string
	for _, k := range keys {
		if k != kept {
			rest = append(rest, k)
		}
	}
	if err := mv.Migrate(ctx, rest...); err != nil {
		t.Fatal(err)
	}
	before := dumpSlot(t, cl, slot)

	calls := []struct {
		name string
		call func() error
	}{
		{"PutRun", func() error {
			_, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r1", Version: r1.Version + 1, Session: "s2"})
			return err
		}},
		{"PutRun create", func() error {
			_, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r3"})
			return err
		}},
		{"PatchRun", func() error {
			_, err := st.PatchRun(ctx, "acme", "r1", contract.Patch{Counters: contract.Counters{Iterations: 1}})
			return err
		}},
		{"DeleteRun", func() error { return st.DeleteRun(ctx, "acme", "r1") }},
		{"GetRun", func() error { _, err := st.GetRun(ctx, "acme", "r1"); return err }},
		{"ListSessionRuns", func() error {
			_, err := st.ListSessionRuns(ctx, "acme", "s1", contract.PageRequest{})
			return err
		}},
	}
	for _, c := range calls {
		err := c.call()
		var sp *contract.StatePersistenceError
		// A run none of whose keys exists yet is sent on to the new node
		// (ASK) and refused there; the others are refused where they are.
		if !errors.As(err, &sp) || !contract.Retryable(err) || !(strings.Contains(err.Error(), "TRYAGAIN") || strings.Contains(err.Error(), "ASK ")) {
			t.Errorf("%s on a split slot: %v; want a retryable StatePersistenceError after TRYAGAIN or ASK", c.name, err)
		}
	}
	if after := dumpSlot(t, cl, slot); !maps.Equal(before, after) {
		t.Errorf("the refused calls changed the split slot:\nbefore %v\nafter  %v", keysOf(before), keysOf(after))
	}

	if err := mv.Migrate(ctx, kept); err != nil {
		t.Fatal(err)
	}
	if err := mv.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r1", Version: r1.Version + 1, Session: "s2"})
	if err != nil || r.Version != r1.Version+2 || r.Counters.Iterations != 1 {
		t.Fatalf("put after the move: %+v, %v", r, err)
	}
	for session, want := range map[string]int{"s1": 1, "s2": 1} {
		p, err := st.ListSessionRuns(ctx, "acme", session, contract.PageRequest{})
		if err != nil || len(p.Runs) != want {
			t.Errorf("session %s after the move: %d runs, %v; want %d", session, len(p.Runs), err, want)
		}
	}
	if err := st.DeleteRun(ctx, "acme", "r1"); err != nil {
		t.Errorf("delete after the move: %v", err)
	}
}
