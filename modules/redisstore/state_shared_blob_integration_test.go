//go:build integration

package redisstore_test

import (
	"context"
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
