package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// versionsPolicy is what the fixtures of the run version pages keep.
var versionsPolicy = contract.RunPolicy{KeepVersions: 10}

// hostileBlob is a run's data that would run script if it reached the
// page unescaped.
const hostileBlob = `{"note":"</code></pre><script>alert(1)</script><img src=x onerror=alert(2)>"}`

// newVersionsFixture is the memstore fixture with run versions kept.
func newVersionsFixture(t *testing.T, configure ...func(*Config)) *fixture {
	t.Helper()
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{Policy: fixturePolicy, Runs: versionsPolicy})
	f := newFixtureOn(t, "", clock, "memory", store, store, store, configure...)
	f.store = store
	return f
}

// writeVersions writes run tenant/id n times (each a put, so each keeps
// the run before it), with a counter-only patch between puts (which
// keeps none), the last put fenced, and returns the run as left.
func writeVersions(t *testing.T, f *fixture, tenant, id string, n int) *contract.Run {
	t.Helper()
	ctx := context.Background()
	var run *contract.Run
	var err error
	for i := 1; i <= n; i++ {
		next := contract.Run{Tenant: tenant, ID: id, Status: fmt.Sprintf("step-%d", i), Data: []byte(fmt.Sprintf(`{"step":%d}`, i))}
		if run != nil {
			next.Version = run.Version
		}
		if i == n {
			next.Fence, next.Data = 42, []byte(hostileBlob)
		}
		f.clock.Advance(time.Second)
		if run, err = f.runs.PutRun(ctx, next); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		if i < n {
			if run, err = f.runs.PatchRun(ctx, tenant, id, contract.Patch{Counters: contract.Counters{Iterations: 1, InputTokens: 10}}); err != nil {
				t.Fatalf("patch %d: %v", i, err)
			}
		}
	}
	return run
}

// checkRunVersions walks from the item page to its run's versions and
// one version, on any backing with versions kept (a backing without
// them is checked to say so).

// TestRunVersionsBadInput: what a version link must carry.
func TestRunVersionsBadInput(t *testing.T) {
	f := newVersionsFixture(t)
	writeVersions(t, f, "acme", "r", 2)
	for _, path := range []string{
		"/run/versions?tenant=acme", "/run/versions?id=r", "/run/versions?tenant=acme&id=r&limit=0",
		"/run/version?tenant=acme&id=r", "/run/version?tenant=acme&id=r&version=0", "/run/version?tenant=acme&id=r&version=x",
		"/api/run/version?tenant=acme&id=r&version=-1",
	} {
		resp, body := f.do(nil, http.MethodGet, path, nil, nil)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400\n%s", path, resp.StatusCode, body)
		}
	}
}

// stateOnly is a state store offering no RunKeeper.
type stateOnly struct{ contract.StateStore }

// TestRunVersionsWithoutVersions: a store without a RunKeeper, a store
// keeping none, and no store at all each say so on a 200 page.
func TestRunVersionsWithoutVersions(t *testing.T) {
	for _, c := range []struct {
		name  string
		state func(*memstore.Store) contract.StateStore
		note  string
		rows  int
	}{
		{"no run keeper", func(s *memstore.Store) contract.StateStore { return stateOnly{s} }, view.NoRunKeeperNote, 0},
		{"no state store", func(*memstore.Store) contract.StateStore { return nil }, view.NoStateNote, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := contracttest.NewFakeClock(time.Time{})
			plain := memstore.New(clock, memstore.Settings{Policy: fixturePolicy})
			f := newFixtureOn(t, "", clock, "memory", plain, plain, c.state(plain))
			if _, err := plain.PutRun(context.Background(), contract.Run{Tenant: "acme", ID: "acme-0", Status: "one"}); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{"/run/versions?tenant=acme&id=acme-0", "/run/version?tenant=acme&id=acme-0&version=1"} {
				doc := f.page(nil, path, http.StatusOK)
				if note := testids(doc, "run-versions-note").Text(); note != c.note {
					t.Errorf("GET %s: note %q, want %q", path, note, c.note)
				}
			}
			var api view.RunVersions
			f.api(nil, "/api/run/versions?tenant=acme&id=acme-0", http.StatusOK, &api)
			if api.Note != c.note || len(api.Rows) != c.rows {
				t.Errorf("api: note %q, %d rows; want %q, %d", api.Note, len(api.Rows), c.note, c.rows)
			}
		})
	}
}
