//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// wantStale checks that err is the refusal of a write under fence by a run
// whose fence is stored.
func wantStale(t *testing.T, err error, fence, stored int64, what string) {
	t.Helper()
	var se *contract.StaleFenceError
	if !errors.As(err, &se) || !errors.Is(err, contract.ErrFenced) || se.Fence != fence || se.Stored != stored || contract.Retryable(err) {
		t.Fatalf("%s: got %v (%T); want a *StaleFenceError with fence %d below %d", what, err, err, fence, stored)
	}
}

// TestStateFences walks the fence rules on the scripts: the highest fence
// that wrote a run is kept with it, a lower one is refused before the
// version, existence-after and counter checks are passed and writes
// nothing, an equal one lands, an unfenced write lands and leaves the
// fence, and the refusals come in the rule book's order.
func TestStateFences(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	st, err := redisstore.NewState(client, nil, redisstore.Settings{Namespace: redistest.Namespace(t, client)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: []byte(`{"n":1}`), Fence: 7})
	if err != nil || r.Fence != 7 || r.Version != 1 {
		t.Fatalf("fenced create: %+v, %v; want version 1 under fence 7", r, err)
	}
	// Lower: refused whatever else the write gets wrong.
	_, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: 1, Data: []byte(`{"n":"stale"}`), Fence: 6})
	wantStale(t, err, 6, 7, "put under a lower fence")
	_, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: 0, Data: []byte(`{"n":"stale"}`), Fence: 6})
	wantStale(t, err, 6, 7, "put under a lower fence and the wrong version (the fence is checked first)")
	_, err = st.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}, Status: "stale", Fence: 3})
	wantStale(t, err, 3, 7, "patch under a lower fence")
	if _, err := st.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Cursor: math.MaxInt64}}); err != nil {
		t.Fatal(err)
	}
	_, err = st.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Cursor: 1}, Fence: 2})
	wantStale(t, err, 2, 7, "patch under a lower fence that would overflow (the fence is checked first)")
	_, err = st.PatchRun(ctx, "acme", "missing", contract.Patch{Counters: contract.Counters{Iterations: 1}, Fence: 1})
	if !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("fenced patch of a missing run: %v, want ErrNotFound", err)
	}
	got, err := st.GetRun(ctx, "acme", "r")
	if err != nil || got.Version != 2 || got.Fence != 7 || got.Status != "" || string(got.Data) != `{"n":1}` || got.Counters.Iterations != 0 {
		t.Fatalf("after the refusals: %+v, %v; want version 2 (the unfenced patch), fence 7, the first data", got, err)
	}

	// Equal lands; unfenced lands and leaves the fence; higher raises it.
	if got, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: 2, Data: []byte(`{"n":2}`), Fence: 7}); err != nil || got.Fence != 7 || got.Version != 3 {
		t.Fatalf("put under the same fence: %+v, %v", got, err)
	}
	if got, err = st.PatchRun(ctx, "acme", "r", contract.Patch{Status: "unfenced"}); err != nil || got.Fence != 7 {
		t.Fatalf("unfenced patch: %+v, %v; want it to land and keep fence 7", got, err)
	}
	if got, err = st.PatchRun(ctx, "acme", "r", contract.Patch{Status: "newer", Fence: 1 << 40}); err != nil || got.Fence != 1<<40 {
		t.Fatalf("patch under a higher fence: %+v, %v; want the fence raised", got, err)
	}
	_, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: got.Version, Fence: 7})
	wantStale(t, err, 7, 1<<40, "put under the fence that was the highest before")
	if got, err = st.GetRun(ctx, "acme", "r"); err != nil || got.Fence != 1<<40 || got.Status != "newer" {
		t.Fatalf("read back: %+v, %v", got, err)
	}

	// A run only unfenced writes touched takes any fence.
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "u"}); err != nil {
		t.Fatal(err)
	}
	if got, err = st.PatchRun(ctx, "acme", "u", contract.Patch{Counters: contract.Counters{Iterations: 1}, Fence: 1}); err != nil || got.Fence != 1 {
		t.Fatalf("first fenced patch of an unfenced run: %+v, %v", got, err)
	}
}

// TestStateFencedReplay loses the reply of fenced writes while a newer
// execution writes the run under a higher fence: the resend recognises
// its own application and answers it, not a refusal by the fence it was
// overtaken by.
func TestStateFencedReplay(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	hook := &lostReplies{armed: map[string]func(){}, lost: map[string]bool{}}
	client.AddHook(hook)
	ns := redistest.Namespace(t, client)
	st, err := redisstore.NewState(client, nil, redisstore.Settings{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Fence: 5}); err != nil {
		t.Fatal(err)
	}
	overtake := func(fence int64) func() {
		return func() {
			if _, err := st.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Cursor: 1}, Fence: fence}); err != nil {
				t.Errorf("the newer execution's patch: %v", err)
			}
		}
	}

	lost := hook.arm(ns, overtake(6))
	got, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: 1, Data: []byte(`{"by":5}`), Fence: 5})
	if !lost() || err != nil || got.Version != 2 || got.Fence != 5 || string(got.Data) != `{"by":5}` {
		t.Fatalf("resent fenced put (lost %v): %+v, %v; want what it wrote: version 2 under fence 5", lost(), got, err)
	}
	lost = hook.arm(ns, overtake(8))
	got, err = st.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}, Fence: 6})
	if !lost() || err != nil || got.Version != 4 || got.Fence != 6 || got.Counters.Iterations != 1 || got.Counters.Cursor != 1 {
		t.Fatalf("resent fenced patch (lost %v): %+v, %v; want what it did: version 4 under fence 6", lost(), got, err)
	}
	got, err = st.GetRun(ctx, "acme", "r")
	if err != nil || got.Version != 5 || got.Fence != 8 || got.Counters.Iterations != 1 || got.Counters.Cursor != 2 {
		t.Fatalf("stored: %+v, %v; want version 5 under fence 8, each write applied once", got, err)
	}
	// Refused, it stays refused when sent again.
	lost = hook.arm(ns, func() {})
	_, err = st.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}, Fence: 7})
	if !lost() {
		t.Fatal("no reply was lost")
	}
	wantStale(t, err, 7, 8, "resent patch under a fence overtaken")
}
