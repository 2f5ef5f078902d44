package contracttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// statePagingCases pin listing by Seq: stable under concurrent updates,
// complete, in order, per session, with the documented page limits.
func statePagingCases() []subtest[StateFactory] {
	return []subtest[StateFactory]{
		{"StableWhileUpdating", testPagingInterleaved},
		{"StableWhileUpdatingConcurrently", testPagingConcurrent},
		{"PagesCarryStoredRuns", testPagesCarryRuns},
		{"SessionRuns", testSessionRuns},
		{"SessionMove", testSessionMove},
		{"PageLimits", testPageLimits},
		{"EmptyListing", testEmptyListing},
	}
}

// createRuns creates n runs r-0000... in tenant (session when given) and
// returns their ids in creation order.
func createRuns(t *testing.T, s contract.StateStore, tenant, session string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("r-%04d", i)
		putOK(t, s, contract.Run{Tenant: tenant, ID: ids[i], Session: session, Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
	}
	return ids
}

// lister fetches one page.
type lister func(page contract.PageRequest) (contract.RunPage, error)

// pageAll pages through a listing with the given limit, calling between
// after every page, and checks the page shapes. It returns every run seen
// in order.
func pageAll(t *testing.T, list lister, limit int, between func(page int)) []contract.Run {
	t.Helper()
	var all []contract.Run
	cursor := ""
	for page := 0; ; page++ {
		if page > 100000 {
			t.Fatal("paging never ended")
		}
		p, err := list(contract.PageRequest{Cursor: cursor, Limit: limit})
		mustNoErr(t, err, "listing page %d (limit %d)", page, limit)
		if len(p.Runs) > limit {
			t.Fatalf("page %d holds %d runs, over the limit %d", page, len(p.Runs), limit)
		}
		if p.Next != "" && len(p.Runs) != limit {
			t.Errorf("page %d holds %d runs and says more follow; a page short of the limit %d must be the last", page, len(p.Runs), limit)
		}
		all = append(all, p.Runs...)
		if p.Next == "" {
			return all
		}
		if p.Next == cursor {
			t.Fatalf("page %d returned the cursor it was given (%q); paging would loop", page, cursor)
		}
		cursor = p.Next
		if between != nil {
			between(page)
		}
	}
}

// wantExactlyOnce fails unless runs lists each of ids once, of tenant, in
// strictly ascending Seq.
func wantExactlyOnce(t *testing.T, runs []contract.Run, tenant string, ids []string) {
	t.Helper()
	seen := map[string]int{}
	for i, r := range runs {
		if r.Tenant != tenant {
			t.Errorf("listing of tenant %q holds a run of tenant %q (%s)", tenant, r.Tenant, r.ID)
		}
		seen[r.ID]++
		if i > 0 && r.Seq <= runs[i-1].Seq {
			t.Errorf("listing not in ascending Seq: %s (Seq %d) follows %s (Seq %d)", r.ID, r.Seq, runs[i-1].ID, runs[i-1].Seq)
		}
	}
	missing, repeated := 0, 0
	for _, id := range ids {
		switch n := seen[id]; {
		case n == 0:
			missing++
			if missing <= 3 {
				t.Errorf("run %s was skipped by the listing", id)
			}
		case n > 1:
			repeated++
			if repeated <= 3 {
				t.Errorf("run %s was listed %d times", id, n)
			}
		}
		delete(seen, id)
	}
	for id := range seen {
		t.Errorf("listing holds run %s, which is not among the runs expected", id)
	}
	if missing+repeated > 0 {
		t.Errorf("%d runs skipped, %d repeated, of %d", missing, repeated, len(ids))
	}
}

func testPagingInterleaved(t *testing.T, f StateFactory) {
	const n, limit = 250, 7
	s, clock := newState(t, f)
	ids := createRuns(t, s, "acme", "", n)
	createRuns(t, s, "other", "", 10)
	rng := rand.New(rand.NewPCG(1, 2))
	runs := pageAll(t, func(p contract.PageRequest) (contract.RunPage, error) {
		return s.ListRuns(t.Context(), "acme", p)
	}, limit, func(page int) {
		clock.Advance(1)
		// Rewrite runs behind the cursor, at it and ahead of it: whatever
		// an update does to a run's place must not move it in the listing.
		for _, i := range []int{page * limit, min(n-1, page*limit+limit), rng.IntN(n), rng.IntN(n)} {
			r := getOK(t, s, "acme", ids[i])
			r.Data = json.RawMessage(fmt.Sprintf(`{"i":%d,"page":%d}`, i, page))
			putOK(t, s, *r)
			patchOK(t, s, "acme", ids[rng.IntN(n)], contract.Patch{Counters: contract.Counters{Iterations: 1}, Status: "touched"})
		}
	})
	wantExactlyOnce(t, runs, "acme", ids)
}

func testPagingConcurrent(t *testing.T, f StateFactory) {
	const n, limit = 250, 7
	s, _ := newState(t, f)
	ids := createRuns(t, s, "acme", "", n)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := ids[rng.IntN(n)]
				var err error
				if rng.IntN(2) == 0 {
					_, err = s.PatchRun(t.Context(), "acme", id, contract.Patch{Counters: contract.Counters{Cursor: 1}})
				} else {
					_, err = casIncrementData(t, s, "acme", id)
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	runs := pageAll(t, func(p contract.PageRequest) (contract.RunPage, error) {
		return s.ListRuns(t.Context(), "acme", p)
	}, limit, nil)
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("concurrent update failed: %v", err)
	}
	wantExactlyOnce(t, runs, "acme", ids)
}

// casIncrementData puts the run back with a changed Data, retrying on
// conflict.
func casIncrementData(t *testing.T, s contract.StateStore, tenant, id string) (*contract.Run, error) {
	for range 1000 {
		r, err := s.GetRun(t.Context(), tenant, id)
		if err != nil {
			return nil, err
		}
		r.Data = json.RawMessage(fmt.Sprintf(`{"v":%d}`, r.Version))
		got, err := s.PutRun(t.Context(), *r)
		var ce *contract.StateConflictError
		if errors.As(err, &ce) {
			continue
		}
		return got, err
	}
	return nil, fmt.Errorf("run %s: no put succeeded in 1000 tries", id)
}

func testPagesCarryRuns(t *testing.T, f StateFactory) {
	s, clock := newState(t, f)
	ids := createRuns(t, s, "acme", "s", 5)
	clock.Advance(3)
	patchOK(t, s, "acme", ids[1], contract.Patch{Counters: contract.Counters{InputTokens: 9}, Status: "busy"})
	runs := pageAll(t, func(p contract.PageRequest) (contract.RunPage, error) {
		return s.ListRuns(t.Context(), "acme", p)
	}, 2, nil)
	wantExactlyOnce(t, runs, "acme", ids)
	for i := range runs {
		want := getOK(t, s, "acme", runs[i].ID)
		sameRun(t, "listed run "+runs[i].ID, &runs[i], want)
		sameTime(t, "listed run UpdatedAt", runs[i].UpdatedAt, want.UpdatedAt)
	}
}

func testSessionRuns(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	var s1, s2 []string
	for i := range 30 {
		id := fmt.Sprintf("r-%02d", i)
		session := []string{"s1", "s2", ""}[i%3]
		putOK(t, s, contract.Run{Tenant: "acme", ID: id, Session: session})
		switch session {
		case "s1":
			s1 = append(s1, id)
		case "s2":
			s2 = append(s2, id)
		}
	}
	putOK(t, s, contract.Run{Tenant: "other", ID: "r-00", Session: "s1"})
	putOK(t, s, contract.Run{Tenant: "acme", ID: "s1-lookalike", Session: "s1 "})
	for _, c := range []struct {
		session string
		ids     []string
	}{{"s1", s1}, {"s2", s2}} {
		runs := pageAll(t, func(p contract.PageRequest) (contract.RunPage, error) {
			return s.ListSessionRuns(t.Context(), "acme", c.session, p)
		}, 3, nil)
		wantExactlyOnce(t, runs, "acme", c.ids)
		for _, r := range runs {
			if r.Session != c.session {
				t.Errorf("ListSessionRuns(%q) lists run %s of session %q", c.session, r.ID, r.Session)
			}
		}
	}
	p, err := s.ListSessionRuns(t.Context(), "acme", "nobody", contract.PageRequest{})
	mustNoErr(t, err, "ListSessionRuns of an unknown session")
	if len(p.Runs) != 0 || p.Next != "" {
		t.Errorf("ListSessionRuns of an unknown session = %v (next %q), want an empty last page", runIDs(p.Runs), p.Next)
	}
}

func testSessionMove(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	r := putOK(t, s, contract.Run{Tenant: "acme", ID: "mover", Session: "s1"})
	putOK(t, s, contract.Run{Tenant: "acme", ID: "stayer", Session: "s1"})
	r.Session = "s2"
	putOK(t, s, *r)
	list := func(session string) []string {
		p, err := s.ListSessionRuns(t.Context(), "acme", session, contract.PageRequest{})
		mustNoErr(t, err, "ListSessionRuns(%s)", session)
		return runIDs(p.Runs)
	}
	if got := list("s1"); len(got) != 1 || got[0] != "stayer" {
		t.Errorf("after moving a run to s2, session s1 lists %v, want [stayer]", got)
	}
	if got := list("s2"); len(got) != 1 || got[0] != "mover" {
		t.Errorf("after moving a run to s2, session s2 lists %v, want [mover]", got)
	}
	mustNoErr(t, s.DeleteRun(t.Context(), "acme", "mover"), "DeleteRun")
	if got := list("s2"); len(got) != 0 {
		t.Errorf("after deleting its only run, session s2 lists %v", got)
	}
}

func testPageLimits(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	ids := createRuns(t, s, "acme", "s", contract.DefaultPageSize+5)
	for name, list := range map[string]lister{
		"ListRuns": func(p contract.PageRequest) (contract.RunPage, error) { return s.ListRuns(t.Context(), "acme", p) },
		"ListSessionRuns": func(p contract.PageRequest) (contract.RunPage, error) {
			return s.ListSessionRuns(t.Context(), "acme", "s", p)
		},
	} {
		p, err := list(contract.PageRequest{})
		mustNoErr(t, err, "%s with Limit 0", name)
		if len(p.Runs) != contract.DefaultPageSize || p.Next == "" {
			t.Errorf("%s with Limit 0 returned %d runs (next %q), want DefaultPageSize=%d and a next cursor",
				name, len(p.Runs), p.Next, contract.DefaultPageSize)
		}
		p, err = list(contract.PageRequest{Limit: contract.MaxPageSize})
		mustNoErr(t, err, "%s with Limit MaxPageSize", name)
		if len(p.Runs) != len(ids) || p.Next != "" {
			t.Errorf("%s with Limit MaxPageSize returned %d runs (next %q), want all %d and no next", name, len(p.Runs), p.Next, len(ids))
		}
		_, err = list(contract.PageRequest{Limit: contract.MaxPageSize + 1})
		wantInvalid(t, err, "%s with Limit MaxPageSize+1", name)
		_, err = list(contract.PageRequest{Limit: -1})
		wantInvalid(t, err, "%s with Limit -1", name)
	}
}

func testEmptyListing(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	putOK(t, s, contract.Run{Tenant: "someone", ID: "r", Session: "s"})
	p, err := s.ListRuns(t.Context(), "nobody", contract.PageRequest{Limit: 10})
	mustNoErr(t, err, "ListRuns of a tenant without runs")
	if len(p.Runs) != 0 || p.Next != "" {
		t.Errorf("ListRuns of a tenant without runs = %v (next %q), want an empty last page", runIDs(p.Runs), p.Next)
	}
	p, err = s.ListSessionRuns(t.Context(), "nobody", "s", contract.PageRequest{Limit: 10})
	mustNoErr(t, err, "ListSessionRuns of a tenant without runs")
	if len(p.Runs) != 0 || p.Next != "" {
		t.Errorf("ListSessionRuns of a tenant without runs = %v (next %q), want an empty last page", runIDs(p.Runs), p.Next)
	}
}
