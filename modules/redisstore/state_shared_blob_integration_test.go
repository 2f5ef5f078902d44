//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestRunVersionsOfPatchesShareTheBlob: a version kept by a patch stores
// no blob of its own and reads the blob of the next newer version that
// has one, or the run's; every kept version reads back as the run was at
// it, through GetRunVersion, pages of ListRunVersions and ForkRun, also
// once pruning has dropped the oldest.
func TestRunVersionsOfPatchesShareTheBlob(t *testing.T) {
	for _, keep := range []int{50, 3} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			client := redistest.Client(t)
			ctx := context.Background()
			ns := redistest.Namespace(t, client)
			clock := contracttest.NewFakeClock(time.Unix(1_700_000_000, 0))
			st, err := redisstore.NewState(client, clock, redisstore.Settings{Namespace: ns, Runs: contract.RunPolicy{KeepVersions: keep}})
			if err != nil {
				t.Fatal(err)
			}
			rk, ok := contract.AsRunKeeper(st)
			if !ok {
				t.Fatal("no RunKeeper")
			}
			was := map[int64]contract.Run{} // the run as each write left it
			note := func(r *contract.Run, err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				was[r.Version] = *r
			}
			r, err := st.PutRun(ctx, contract.Run{Tenant: "t", ID: "r", Status: "new", Data: []byte(`{"blob":"A"}`)})
			note(r, err)
			for i, step := range []string{"s1", "s2", "", "put:B", "s3", "", "s4", "put:C", "s5", "s6"} {
				clock.Advance(time.Millisecond)
				cur := was[r.Version]
				switch {
				case len(step) > 4 && step[:4] == "put:":
					cur.Data = []byte(fmt.Sprintf(`{"blob":%q}`, step[4:]))
					r, err = st.PutRun(ctx, cur)
				default:
					r, err = st.PatchRun(ctx, "t", "r", contract.Patch{Status: step, Counters: contract.Counters{Iterations: int64(i + 1)}})
				}
				note(r, err)
			}
			last := r.Version
			check := func(how string, got contract.Run) {
				t.Helper()
				want := was[got.Version]
				if string(got.Data) != string(want.Data) || got.Status != want.Status || got.Counters != want.Counters {
					t.Errorf("%s: version %d = %s %q %+v, want %s %q %+v", how, got.Version, got.Data, got.Status, got.Counters, want.Data, want.Status, want.Counters)
				}
			}
			kept := 0
			for v := int64(1); v <= last; v++ {
				got, err := rk.GetRunVersion(ctx, "t", "r", v)
				if err != nil {
					continue // not kept: a counters-only patch, or pruned
				}
				kept++
				check("GetRunVersion", *got)
			}
			if kept < min(keep, 8) {
				t.Errorf("%d versions readable, want at least %d", kept, min(keep, 8))
			}
			listed := 0
			for cur := ""; ; {
				page, err := rk.ListRunVersions(ctx, "t", "r", contract.PageRequest{Cursor: cur, Limit: 2})
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range page.Versions {
					listed++
					check("ListRunVersions", v)
				}
				if cur = page.Next; cur == "" {
					break
				}
			}
			if listed != kept {
				t.Errorf("ListRunVersions listed %d versions, GetRunVersion read %d", listed, kept)
			}
			// The oldest readable version kept by a patch, forked.
			for v := int64(1); v < last; v++ {
				if _, err := rk.GetRunVersion(ctx, "t", "r", v); err != nil || was[v+1].Status == was[v].Status {
					continue
				}
				f, err := rk.ForkRun(ctx, "t", "r", v, "fork")
				if err != nil {
					t.Fatal(err)
				}
				if string(f.Data) != string(was[v].Data) || f.Counters != was[v].Counters {
					t.Errorf("ForkRun of version %d = %s %+v, want %s %+v", v, f.Data, f.Counters, was[v].Data, was[v].Counters)
				}
				break
			}
		})
	}
}

// Two stores with different policies on one namespace. A put by the one
// that keeps no versions deletes those the other kept, a batch at a time,
// oldest first; while some are left, every one of them (most kept by a
// status patch, holding no blob of their own) still reads what the run
// held at that version.
func TestRunVersionsLeftByAnotherPolicy(t *testing.T) {
	client := redistest.Client(t)
	ctx := context.Background()
	ns := redistest.Namespace(t, client)
	open := func(p contract.RunPolicy) contract.StateStore {
		st, err := redisstore.NewState(client, nil, redisstore.Settings{Namespace: ns, Runs: p})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	keeper, plain := open(contract.RunPolicy{KeepVersions: 1000}), open(contract.RunPolicy{})
	rk, _ := contract.AsRunKeeper(keeper)
	for _, id := range []string{"few", "many"} {
		r, err := keeper.PutRun(ctx, contract.Run{Tenant: "t", ID: id, Status: "s0", Data: []byte(`{"d":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		patches := 5
		if id == "many" {
			patches = contract.VersionPruneBatch + 20
		}
		for i := range patches {
			if r, err = keeper.PatchRun(ctx, "t", id, contract.Patch{Status: fmt.Sprintf("s%d", i+1)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err = plain.PutRun(ctx, contract.Run{Tenant: "t", ID: id, Version: r.Version, Status: "new", Data: []byte(`{"d":2}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rk.GetRunVersion(ctx, "t", "few", 1); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("a deleted version: %v, want ErrNotFound", err)
	}
	p, err := rk.ListRunVersions(ctx, "t", "many", contract.PageRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	// many had 120 versions: the put deleted the 100 oldest and kept the
	// one it replaced (121).
	if len(p.Versions) != 22 || p.Versions[21].Version != 101 {
		t.Fatalf("listed %d versions (the last %+v), want the run and 101..121", len(p.Versions), p.Versions[len(p.Versions)-1])
	}
	for _, v := range p.Versions {
		want := `{"d":1}`
		if v.Version == 122 {
			want = `{"d":2}`
		}
		if string(v.Data) != want {
			t.Errorf("version %d holds %s, want %s (what the run held then)", v.Version, v.Data, want)
		}
		got, err := rk.GetRunVersion(ctx, "t", "many", v.Version)
		if err != nil || string(got.Data) != want {
			t.Errorf("GetRunVersion(%d) = %v, %v; want %s", v.Version, got, err, want)
		}
	}
}
