package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

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

func TestRunVersionsPages(t *testing.T) { checkRunVersions(t, newVersionsFixture(t)) }

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
func checkRunVersions(t *testing.T, f *fixture) {
	if _, ok := contract.AsRunKeeper(f.runs); !ok {
		// The page says so instead of failing.
		doc := f.page(nil, "/run/versions?tenant=acme&id=acme-0&queue=default", http.StatusOK)
		if note := testids(doc, "run-versions-note").Text(); note != view.NoRunKeeperNote {
			t.Errorf("a store without versions: note %q", note)
		}
		t.Logf("%T has no RunKeeper: checked that the page says so", f.runs)
		return
	}
	run := writeVersions(t, f, "acme", "acme-0", 5)

	// The item page's run row links to the versions.
	doc := f.page(nil, "/item?tenant=acme&queue=default&id=acme-0", http.StatusOK)
	href, _ := testids(doc, "item-run-versions").Attr("href")
	if want := "/run/versions?id=acme-0&queue=default&tenant=acme"; href != want {
		t.Fatalf("item page's versions link %q, want %q", href, want)
	}
	if line := testids(doc, "item-run").Text(); !strings.Contains(line, "fence 42") {
		t.Errorf("run line %q lacks the fence", line)
	}

	doc = f.page(nil, href, http.StatusOK)
	rows := testids(doc, "run-version-row")
	// The current run, then the four puts before it (the patches kept none).
	if rows.Length() != 5 {
		t.Fatalf("%d version rows, want 5", rows.Length())
	}
	var got []string
	rows.Each(func(_ int, r *goquery.Selection) {
		got = append(got, strings.TrimSpace(testidsIn(r, "run-version-status").Text()))
	})
	if want := []string{"step-5", "step-4", "step-3", "step-2", "step-1"}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want newest first %v", got, want)
	}
	if n := testids(doc, "run-version-current").Length(); n != 1 || !rows.First().HasClass("current") {
		t.Errorf("%d rows marked current; want the first alone", n)
	}
	if fence := strings.TrimSpace(testidsIn(rows.First(), "run-version-fence").Text()); fence != "42" {
		t.Errorf("current fence %q, want 42", fence)
	}
	if fence := strings.TrimSpace(testidsIn(rows.Eq(1), "run-version-fence").Text()); fence != "—" {
		t.Errorf("an unfenced version's fence %q", fence)
	}

	var api view.RunVersions
	f.api(nil, "/api"+href, http.StatusOK, &api)
	if !api.Found || !api.Kept || api.Current != run.Version || len(api.Rows) != 5 {
		t.Fatalf("api versions: %+v", api)
	}
	for i, r := range api.Rows {
		if r.Current != (i == 0) {
			t.Errorf("api row %d current=%v", i, r.Current)
		}
		if i > 0 && r.Version >= api.Rows[i-1].Version {
			t.Errorf("api rows not newest first: %d after %d", r.Version, api.Rows[i-1].Version)
		}
	}
	// A version keeps the counters it had: each put came after one more
	// counter-only patch.
	for i, want := range []int64{4, 3, 2, 1} {
		if c := api.Rows[i+1].Counters; c.Iterations != want || c.InputTokens != 10*want {
			t.Errorf("%s's counters %+v, want %d iterations and %d tokens", api.Rows[i+1].Status, c, want, 10*want)
		}
	}
	if c := api.Rows[0].Counters; c.Iterations != 4 {
		t.Errorf("current counters %+v, want 4 iterations", c)
	}
	if r := api.Rows[1]; r.Bytes != len(`{"step":4}`) || r.Preview != `{"step":4}` {
		t.Errorf("step-4: %d bytes, preview %q", r.Bytes, r.Preview)
	}

	// One version in full, reached from its row.
	link, _ := testidsIn(rows.Eq(2), "run-version-link").Attr("href")
	doc = f.page(nil, link, http.StatusOK)
	if s := strings.TrimSpace(testids(doc, "run-version-status").Text()); s != "step-3" {
		t.Errorf("version page status %q", s)
	}
	if d := testids(doc, "run-version-data").Text(); !strings.Contains(d, `"step": 3`) {
		t.Errorf("version page data %q", d)
	}
	if testids(doc, "run-version-current").Length() != 0 {
		t.Error("an earlier version is marked current")
	}
	var one view.RunVersion
	f.api(nil, "/api"+link, http.StatusOK, &one)
	if !one.Found || one.Row == nil || one.Row.Status != "step-3" || string(one.Data) != `{"step":3}` {
		t.Errorf("api version: %+v data %s", one, one.Data)
	}

	// A version not kept, a run that does not exist.
	doc = f.page(nil, "/run/version?tenant=acme&id=acme-0&version=999", http.StatusNotFound)
	if testids(doc, "run-version-not-found").Length() != 1 {
		t.Error("a version not kept is not said to be")
	}
	doc = f.page(nil, "/run/versions?tenant=acme&id=no-such-run", http.StatusNotFound)
	if testids(doc, "run-not-found").Length() != 1 {
		t.Error("a missing run is not said to be")
	}
	f.api(nil, "/api/run/versions?tenant=acme&id=no-such-run", http.StatusNotFound, nil)
}

// TestRunVersionsEscapeTheBlob: a hostile blob is shown as text on both
// pages, in the preview and in full.
func TestRunVersionsEscapeTheBlob(t *testing.T) {
	f := newVersionsFixture(t)
	writeVersions(t, f, "acme", "evil", 2)
	for _, path := range []string{"/run/versions?tenant=acme&id=evil", "/run/version?tenant=acme&id=evil&version=3"} {
		resp, body := f.do(nil, http.MethodGet, path, nil, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, body)
		}
		for _, raw := range []string{"<script>", "<img src=x", "</pre><script"} {
			if strings.Contains(body, raw) {
				t.Errorf("GET %s: the blob's %q reached the page unescaped", path, raw)
			}
		}
		doc := f.page(nil, path, http.StatusOK)
		if n := doc.Find("script:not([src])").Length() + doc.Find("img[onerror]").Length(); n != 0 {
			t.Errorf("GET %s: %d elements made from the blob", path, n)
		}
		shown := testids(doc, "run-version-preview").First().Text() + testids(doc, "run-version-data").Text()
		if !strings.Contains(shown, "<script>alert(1)</script>") {
			t.Errorf("GET %s: the blob is not shown as text: %q", path, shown)
		}
	}
	// The preview is cut short; the version page shows it whole.
	long := fmt.Sprintf(`{"text":%q}`, strings.Repeat("<b>x</b>", 100))
	ctx := context.Background()
	run, err := f.runs.GetRun(ctx, "acme", "evil")
	f.must(err)
	_, err = f.runs.PutRun(ctx, contract.Run{Tenant: "acme", ID: "evil", Version: run.Version, Data: []byte(long)})
	f.must(err)
	var api view.RunVersions
	f.api(nil, "/api/run/versions?tenant=acme&id=evil", http.StatusOK, &api)
	if p := api.Rows[0].Preview; !strings.HasSuffix(p, "…") || len(p) > previewBytes+len("…") {
		t.Errorf("preview of %d bytes not cut: %q", len(long), p)
	}
}

// TestRunVersionsPaging: Older and Newer walk every kept version once,
// newest first, and come back to the first page; a cursor that is not
// the page's is a 400.
func TestRunVersionsPaging(t *testing.T) {
	f := newVersionsFixture(t)
	writeVersions(t, f, "acme", "long", 15) // the current run and 10 kept
	var seen []int64
	path := "/run/versions?tenant=acme&id=long&limit=3"
	var pages []string
	for range 10 {
		pages = append(pages, path)
		doc := f.page(nil, path, http.StatusOK)
		testids(doc, "run-version-link").Each(func(_ int, s *goquery.Selection) {
			v, _ := s.Attr("href")
			u, _ := url.Parse(v)
			var n int64
			fmt.Sscan(u.Query().Get("version"), &n)
			seen = append(seen, n)
		})
		next, ok := testids(doc, "run-versions-older").Attr("href")
		if !ok {
			break
		}
		path = next
	}
	want := []int64{29, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10}
	if !slices.Equal(seen, want) {
		t.Fatalf("versions paged %v, want %v", seen, want)
	}
	if len(pages) != 4 {
		t.Errorf("%d pages, want 4 of 3", len(pages))
	}
	// Newer from the last page walks back through the same pages.
	path = pages[len(pages)-1]
	for i := len(pages) - 2; i >= 0; i-- {
		doc := f.page(nil, path, http.StatusOK)
		newer, ok := testids(doc, "run-versions-newer").Attr("href")
		if !ok {
			t.Fatalf("page %d has no newer link", i+1)
		}
		if !sameQuery(newer, pages[i]) {
			t.Errorf("newer of page %d is %q, want %q", i+2, newer, pages[i])
		}
		path = newer
	}
	doc := f.page(nil, pages[0], http.StatusOK)
	if testids(doc, "run-versions-newer").Length() != 0 {
		t.Error("the newest page offers newer versions")
	}
	// The API pages the same way.
	var api view.RunVersions
	f.api(nil, "/api"+pages[1], http.StatusOK, &api)
	if !api.Newer || api.Prev != "" || api.Next == "" || len(api.Rows) != 3 || api.Rows[0].Version != 24 {
		t.Errorf("api page 2: %+v", api)
	}
	// A write while paging neither repeats nor skips a kept version: the
	// next page goes on below the last version shown.
	run, err := f.runs.GetRun(context.Background(), "acme", "long")
	f.must(err)
	_, err = f.runs.PutRun(context.Background(), contract.Run{Tenant: "acme", ID: "long", Version: run.Version, Status: "later"})
	f.must(err)
	doc = f.page(nil, pages[1], http.StatusOK)
	var after []string
	testids(doc, "run-version-link").Each(func(_ int, s *goquery.Selection) { after = append(after, strings.TrimSpace(s.Text())) })
	if want := []string{"24", "22", "20"}; !slices.Equal(after, want) {
		t.Errorf("page 2 after a write: versions %v, want %v", after, want)
	}
	for _, bad := range []string{"junk", pageCursor{Backing: "12"}.String(), versionCursor{""}.String()} {
		f.page(nil, "/run/versions?tenant=acme&id=long&cursor="+url.QueryEscape(bad), http.StatusBadRequest)
	}
}

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
		{"none kept", func(s *memstore.Store) contract.StateStore { return s }, view.NoVersionsKeptNote, 1},
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

// TestRunVersionsScope: a token sees the runs of its own tenants, and a
// token of some queues those of items in them.
func TestRunVersionsScope(t *testing.T) {
	f := newVersionsFixture(t, func(c *Config) { c.Tokens = scopedTokens })
	writeVersions(t, f, "acme", "acme-0", 2)
	writeVersions(t, f, "globex", "globex-0", 2)
	bearer := func(secret string) map[string]string { return map[string]string{"Authorization": "Bearer " + secret} }
	for _, c := range []struct {
		secret, path string
		want         int
	}{
		{acmeROSecret, "/api/run/versions?tenant=acme&id=acme-0", http.StatusOK},
		{acmeROSecret, "/api/run/version?tenant=acme&id=acme-0&version=3", http.StatusOK},
		{acmeROSecret, "/api/run/versions?tenant=globex&id=globex-0", http.StatusForbidden},
		{acmeROSecret, "/run/version?tenant=globex&id=globex-0&version=1", http.StatusForbidden},
		{otherQSecret, "/api/run/versions?tenant=acme&id=acme-0", http.StatusBadRequest},
		{otherQSecret, "/api/run/versions?tenant=acme&id=acme-0&queue=default", http.StatusForbidden},
		{otherQSecret, "/api/run/versions?tenant=acme&id=acme-0&queue=other", http.StatusNotFound},
		{roSecret, "/api/run/versions?tenant=globex&id=globex-0", http.StatusOK},
	} {
		resp, body := f.do(nil, http.MethodGet, c.path, nil, bearer(c.secret))
		if resp.StatusCode != c.want {
			t.Errorf("GET %s: %d, want %d\n%s", c.path, resp.StatusCode, c.want, body)
		}
		if c.want == http.StatusForbidden && strings.Contains(body, "globex-0") {
			t.Errorf("GET %s: the refusal names the run", c.path)
		}
	}
	// An item of the token's queue shows its run.
	ctx := context.Background()
	f.must(f.q.Enqueue(ctx, contract.Item{Tenant: "acme", Queue: "other", ID: "acme-0"}))
	resp, body := f.do(nil, http.MethodGet, "/api/run/versions?tenant=acme&id=acme-0&queue=other", nil, bearer(otherQSecret))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a run beside an item of the token's queue: %d\n%s", resp.StatusCode, body)
	}
}

func testidsIn(s *goquery.Selection, id string) *goquery.Selection {
	return s.Find(`[data-testid="` + id + `"]`)
}

// sameQuery reports whether two links name the same path and query.
func sameQuery(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Path == ub.Path && ua.Query().Encode() == ub.Query().Encode()
}
