//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// versionStore opens a state store keeping versions as p says, in ns.
func versionStore(t *testing.T, client redis.UniversalClient, clock contract.Clock, ns string, p contract.RunPolicy) (*redisstore.RedisStateStore, contract.RunKeeper) {
	t.Helper()
	st, err := redisstore.NewState(client, clock, redisstore.Settings{Namespace: ns, Runs: p})
	if err != nil {
		t.Fatal(err)
	}
	rk, ok := contract.AsRunKeeper(st)
	if !ok {
		t.Fatal("the Redis state store has no RunKeeper")
	}
	return st, rk
}

// versionsOf lists every version of a run, page by page.
func versionsOf(t *testing.T, rk contract.RunKeeper, id string, limit int) []int64 {
	t.Helper()
	var out []int64
	cursor := ""
	for range 1000 {
		p, err := rk.ListRunVersions(context.Background(), "acme", id, contract.PageRequest{Cursor: cursor, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Versions {
			out = append(out, r.Version)
		}
		if p.Next == "" {
			return out
		}
		cursor = p.Next
	}
	t.Fatal("the listing did not end")
	return nil
}

// storedVersions is how many versions of run id the server holds, kept
// or waiting to be pruned.
func storedVersions(t *testing.T, client redis.UniversalClient, ns, id string) int64 {
	t.Helper()
	key := ns + ":state:{4:acme}:versions:" + strconv.Itoa(len(id)) + ":" + id
	n, err := client.ZCard(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	m, err := client.HLen(context.Background(), ns+":state:{4:acme}:vdata:"+strconv.Itoa(len(id))+":"+id).Result()
	if err != nil || m != 2*n {
		t.Fatalf("versions %d, records %d (%v): want two records (fields, blob) per version", n, m, err)
	}
	return n
}

func sameVersions(t *testing.T, what string, got []int64, want ...int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: versions %v, want %v", what, got, want)
	}
}

// TestRunVersionsKept: a put and a patch changing the status keep the
// run as it was; a counter-only patch and one setting the status it has
// keep none; the newest KeepVersions are kept, the rest deleted on write;
// a version reads back as it was, fence and counters included.
func TestRunVersionsKept(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	clock := contracttest.NewFakeClock(time.Time{})
	st, rk := versionStore(t, client, clock, ns, contract.RunPolicy{KeepVersions: 3})

	r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Status: "new", Data: []byte(`{"n":1}`), Fence: 4})
	if err != nil {
		t.Fatal(err)
	}
	first := *r
	clock.Advance(time.Second)
	if _, err = st.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: 10}}); err != nil { // v2, keeps none
		t.Fatal(err)
	}
	if _, err = st.PatchRun(ctx, "acme", "r", contract.Patch{Status: "new", Counters: contract.Counters{InputTokens: 1}}); err != nil { // v3, same status: none
		t.Fatal(err)
	}
	sameVersions(t, "after counter-only patches", versionsOf(t, rk, "r", 10), 3)
	clock.Advance(time.Second)
	if _, err = st.PatchRun(ctx, "acme", "r", contract.Patch{Status: "running", Fence: 5}); err != nil { // v4, keeps v3
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: 4, Status: "step", Data: []byte(`{"n":2}`)}); err != nil { // v5, keeps v4
		t.Fatal(err)
	}
	sameVersions(t, "after a status patch and a put", versionsOf(t, rk, "r", 10), 5, 4, 3)

	v3, err := rk.GetRunVersion(ctx, "acme", "r", 3)
	if err != nil {
		t.Fatal(err)
	}
	if v3.Status != "new" || v3.Counters.InputTokens != 11 || v3.Fence != 4 || string(v3.Data) != `{"n":1}` ||
		v3.Seq != first.Seq || !v3.CreatedAt.Equal(first.CreatedAt) || !v3.UpdatedAt.Equal(first.UpdatedAt.Add(time.Second)) {
		t.Fatalf("version 3: %+v; want the run as the counter patches left it (status new, 11 input tokens, fence 4)", v3)
	}
	if cur, err := rk.GetRunVersion(ctx, "acme", "r", 5); err != nil || cur.Version != 5 || string(cur.Data) != `{"n":2}` || cur.Fence != 5 {
		t.Fatalf("the current version: %+v, %v", cur, err)
	}
	for _, v := range []int64{1, 2, 6} {
		if _, err := rk.GetRunVersion(ctx, "acme", "r", v); !errors.Is(err, contract.ErrNotFound) {
			t.Fatalf("version %d: %v, want ErrNotFound (never kept, or not yet written)", v, err)
		}
	}

	for i := range 4 {
		if r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version, Data: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	sameVersions(t, "after four more puts", versionsOf(t, rk, "r", 2), 9, 8, 7, 6)
	if n := storedVersions(t, client, ns, "r"); n != 3 {
		t.Fatalf("the server holds %d versions of the run, want the 3 kept (each write deletes what is past the bound)", n)
	}
	if err := st.DeleteRun(ctx, "acme", "r"); err != nil {
		t.Fatal(err)
	}
	if n := storedVersions(t, client, ns, "r"); n != 0 {
		t.Fatalf("after DeleteRun the server holds %d versions of the run", n)
	}
	if _, err := rk.ListRunVersions(ctx, "acme", "r", contract.PageRequest{}); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("versions of a deleted run: %v, want ErrNotFound", err)
	}
	if _, err := rk.ListRunVersions(ctx, "acme", "r", contract.PageRequest{Cursor: "x"}); !errors.As(err, new(*contract.ValidationError)) {
		t.Fatalf("a cursor this store did not make: %v, want a *ValidationError", err)
	}
}

// TestRunVersionsAge: with VersionAge alone the store keeps versions
// younger than the age by its clock; an older one is not read, and the
// next write deletes it.
func TestRunVersionsAge(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	clock := contracttest.NewFakeClock(time.Time{})
	st, rk := versionStore(t, client, clock, ns, contract.RunPolicy{VersionAge: time.Hour})
	r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r"}) // v1 at 0
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Minute)
	if _, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version}); err != nil { // v2 at 30m, keeps v1
		t.Fatal(err)
	}
	clock.Advance(30*time.Minute - time.Nanosecond)
	sameVersions(t, "a nanosecond before v1 is an hour old", versionsOf(t, rk, "r", 10), 2, 1)
	clock.Advance(time.Nanosecond)
	sameVersions(t, "once v1 is an hour old", versionsOf(t, rk, "r", 10), 2)
	if _, err := rk.GetRunVersion(ctx, "acme", "r", 1); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("a version past the age: %v, want ErrNotFound", err)
	}
	if n := storedVersions(t, client, ns, "r"); n != 1 {
		t.Fatalf("before a write the server holds %d versions, want 1 (reads do not delete)", n)
	}
	if _, err = st.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}}); err != nil { // v3, keeps none
		t.Fatal(err)
	}
	if n := storedVersions(t, client, ns, "r"); n != 0 {
		t.Fatalf("after a write the server holds %d versions, want 0 (the expired one deleted)", n)
	}
	sameVersions(t, "after the patch", versionsOf(t, rk, "r", 10), 3)
}

// TestRunVersionsPruneBound: a store reopened keeping fewer versions reads
// only the newest it keeps at once, and each write deletes at most
// contract.VersionPruneBatch of the rest.
func TestRunVersionsPruneBound(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	st, _ := versionStore(t, client, nil, ns, contract.RunPolicy{KeepVersions: 300})
	r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	const puts = 2*contract.VersionPruneBatch + 50
	for range puts {
		if r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version}); err != nil {
			t.Fatal(err)
		}
	}
	st, rk := versionStore(t, client, nil, ns, contract.RunPolicy{KeepVersions: 5})
	top := r.Version
	sameVersions(t, "reopened keeping 5", versionsOf(t, rk, "r", 4), top, top-1, top-2, top-3, top-4, top-5)
	want := int64(puts)
	for want > 5 {
		if r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version}); err != nil {
			t.Fatal(err)
		}
		want = max(want+1-contract.VersionPruneBatch, 5)
		if n := storedVersions(t, client, ns, "r"); n != want {
			t.Fatalf("after a put the server holds %d versions, want %d (at most %d deleted per write)", n, want, contract.VersionPruneBatch)
		}
	}
}

// TestRunVersionsPageWhileWritten: pages of versions taken while the run
// is written list every version kept throughout once, newest first, and
// none kept after the first page.
func TestRunVersionsPageWhileWritten(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	st, rk := versionStore(t, client, nil, redistest.Namespace(t, client), contract.RunPolicy{KeepVersions: 20})
	r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for range 7 {
		if r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version}); err != nil {
			t.Fatal(err)
		}
	}
	var got []int64
	cursor := ""
	for {
		p, err := rk.ListRunVersions(ctx, "acme", "r", contract.PageRequest{Cursor: cursor, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range p.Versions {
			got = append(got, v.Version)
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
		if r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version}); err != nil {
			t.Fatal(err)
		}
	}
	sameVersions(t, "paged while written", got, 8, 7, 6, 5, 4, 3, 2, 1)
}

// TestForkRun: a fork copies the version's data, status, session and
// counters into a new run at version 1 with no fence and no versions; a
// version not kept is ErrNotFound, an id taken a conflict naming it; a
// fork whose reply was lost answers the run it made.
func TestForkRun(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	hook := &lostReplies{armed: map[string]func(){}, lost: map[string]bool{}}
	client.AddHook(hook)
	ns := redistest.Namespace(t, client)
	st, rk := versionStore(t, client, nil, ns, contract.RunPolicy{KeepVersions: 5})
	src, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "src", Session: "s1", Status: "a", Data: []byte(`{"at":1}`), Fence: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = st.PatchRun(ctx, "acme", "src", contract.Patch{Counters: contract.Counters{OutputTokens: 7, Cursor: 2}}); err != nil { // v2
		t.Fatal(err)
	}
	if _, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "src", Version: 2, Session: "s2", Status: "b", Data: []byte(`{"at":3}`)}); err != nil { // v3, keeps v2
		t.Fatal(err)
	}
	if _, err = st.PatchRun(ctx, "acme", "src", contract.Patch{Counters: contract.Counters{OutputTokens: 100}}); err != nil { // v4
		t.Fatal(err)
	}

	f, err := rk.ForkRun(ctx, "acme", "src", 2, "fork")
	if err != nil {
		t.Fatal(err)
	}
	if f.ID != "fork" || f.Version != 1 || f.Fence != 0 || f.Status != "a" || f.Session != "s1" || string(f.Data) != `{"at":1}` ||
		f.Counters != (contract.Counters{OutputTokens: 7, Cursor: 2}) || f.Seq <= src.Seq {
		t.Fatalf("fork of version 2: %+v; want its data, status, session and counters at version 1, unfenced, a new seq", f)
	}
	sameVersions(t, "the fork's versions", versionsOf(t, rk, "fork", 10), 1)
	if p, err := st.ListSessionRuns(ctx, "acme", "s1", contract.PageRequest{}); err != nil || len(p.Runs) != 1 || p.Runs[0].ID != "fork" {
		t.Fatalf("session s1 lists %+v, %v; want the fork", p.Runs, err)
	}
	if cur, err := st.GetRun(ctx, "acme", "src"); err != nil || cur.Version != 4 || cur.Counters.OutputTokens != 107 {
		t.Fatalf("the source after the fork: %+v, %v; want it unchanged", cur, err)
	}
	if f, err = rk.ForkRun(ctx, "acme", "src", 4, "fork-now"); err != nil || f.Counters.OutputTokens != 107 || f.Session != "s2" {
		t.Fatalf("fork of the current version: %+v, %v", f, err)
	}

	for _, v := range []int64{1, 3, 5} {
		if _, err := rk.ForkRun(ctx, "acme", "src", v, "other"); !errors.Is(err, contract.ErrNotFound) {
			t.Fatalf("fork of version %d, not kept: %v, want ErrNotFound", v, err)
		}
	}
	if _, err := rk.ForkRun(ctx, "acme", "nope", 1, "other"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("fork of a missing run: %v, want ErrNotFound", err)
	}
	var ce *contract.StateConflictError
	if _, err := rk.ForkRun(ctx, "acme", "src", 2, "fork"); !errors.As(err, &ce) || ce.ID != "fork" || ce.Expected != 0 || ce.Actual != 1 {
		t.Fatalf("fork onto a taken id: %v, want a *StateConflictError naming it (expected 0, actual 1)", err)
	}
	if _, err := st.GetRun(ctx, "acme", "other"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("a refused fork wrote a run: %v", err)
	}

	lost := hook.arm(ns, func() {})
	f, err = rk.ForkRun(ctx, "acme", "src", 2, "again")
	if !lost() || err != nil || f.Version != 1 || string(f.Data) != `{"at":1}` {
		t.Fatalf("a fork whose reply was lost (lost %v): %+v, %v; want the run it made", lost(), f, err)
	}
}

// TestRunVersionKeysShareTheSlot: a run's version keys hash to its slot,
// so every script that touches them is single-slot under Cluster.
func TestRunVersionKeysShareTheSlot(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	st, _ := versionStore(t, client, nil, ns, contract.RunPolicy{KeepVersions: 2})
	r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version}); err != nil {
		t.Fatal(err)
	}
	keys, err := redistest.Keys(ctx, client, ns)
	if err != nil {
		t.Fatal(err)
	}
	slots := map[int]bool{}
	for _, k := range keys {
		slots[redistest.Slot(k)] = true
	}
	if len(keys) < 6 || len(slots) != 1 {
		t.Fatalf("the run's %d keys %v hash to %d slots, want 1", len(keys), keys, len(slots))
	}
}
