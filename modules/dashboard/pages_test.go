package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"

	"github.com/adkit/adk/modules/dashboard/internal/view"
)

func TestOverviewPage(t *testing.T) { checkOverviewPage(t, newFixture(t, "")) }

func checkOverviewPage(t *testing.T, f *fixture) {
	f.srv.sampler.sample(t.Context())
	f.clock.Advance(5e9)
	f.srv.sampler.sample(t.Context())
	doc := f.page(nil, "/", http.StatusOK)
	if n := testids(doc, "queue-row").Length(); n != 1 {
		t.Errorf("queue rows: %d, want 1", n)
	}
	for _, id := range []string{"overview-health", "overview-claims-rate", "overview-dead-ratio", "chart-depth", "chart-claims", "chart-dead", "nav", "backing"} {
		if testids(doc, id).Length() == 0 {
			t.Errorf("overview lacks data-testid=%q", id)
		}
	}
	if testids(doc, "chart-depth").Find("polyline").Length() == 0 {
		t.Error("depth chart has no line after two samples")
	}
	var api view.Overview
	f.api(nil, "/api/overview", http.StatusOK, &api)
	if len(api.Queues) != 1 || api.Queues[0].Queue != "default" || api.Queues[0].Dead != 3 || api.Samples < 2 {
		t.Errorf("api overview: %+v", api)
	}
}

func TestTenantsPage(t *testing.T) { checkTenantsPage(t, newFixture(t, "")) }

func checkTenantsPage(t *testing.T, f *fixture) {
	doc := f.page(nil, "/tenants", http.StatusOK)
	if n := testids(doc, "tenant-row").Length(); n != 3 {
		t.Errorf("tenant rows: %d, want 3", n)
	}
	if n := testids(doc, "turn-cell").Length(); n == 0 {
		t.Error("rotation strip has no turns")
	}
	if testids(doc, "rotation-strip").Length() != 1 || testids(doc, "rotation-lanes").Length() != 1 {
		t.Error("rotation strip or lanes missing")
	}
	if n := testids(doc, "rotation-order-item").Length(); n != 3 {
		t.Errorf("rotation order: %d tenants, want 3", n)
	}
	// The busiest tenant comes first.
	if first := strings.TrimSpace(testids(doc, "tenant-row").First().Find("a").First().Text()); first != "noisy" {
		t.Errorf("first tenant row %q, want noisy", first)
	}
	var api view.Tenants
	f.api(nil, "/api/tenants?turns=10", http.StatusOK, &api)
	if len(api.Rows) != 3 || len(api.Turns) != 10 || len(api.Order) != 3 {
		t.Errorf("api tenants: %d rows, %d turns, order %v", len(api.Rows), len(api.Turns), api.Order)
	}
	for _, r := range api.Rows {
		if r.Tenant == "noisy" && (r.Ready == 0 || r.LatencySeconds <= 0 || r.Served == 0) {
			t.Errorf("noisy row: %+v", r)
		}
	}
	f.api(nil, "/api/tenants?turns=0", http.StatusBadRequest, nil)
}

func TestLeasesPage(t *testing.T) { checkLeasesPage(t, newFixture(t, "")) }

func checkLeasesPage(t *testing.T, f *fixture) {
	doc := f.page(nil, "/leases", http.StatusOK)
	if testids(doc, "lease-table").Length() != 1 {
		t.Fatal("no lease table")
	}
	live, expired := testids(doc, "lease-row").Length(), testids(doc, "lease-row-expired").Length()
	if live != 3 || expired != 1 {
		t.Errorf("leases: %d live, %d expired; want 3 and 1", live, expired)
	}
	if !strings.Contains(testids(doc, "lease-row-expired").Text(), "awaiting reap") {
		t.Error("expired lease not labelled")
	}
	var api view.Leases
	f.api(nil, "/api/leases?limit=2", http.StatusOK, &api)
	if len(api.Rows) != 2 || api.Next == "" || api.Leased != 4 || !api.Rows[0].Expired {
		t.Errorf("api leases page 1: %+v", api)
	}
	var p2 view.Leases
	f.api(nil, "/api/leases?limit=2&cursor="+api.Next, http.StatusOK, &p2)
	if len(p2.Rows) != 2 || p2.Next != "" {
		t.Errorf("api leases page 2: %+v", p2)
	}
}

func TestDeadPage(t *testing.T) { checkDeadPage(t, newFixture(t, "")) }

func checkDeadPage(t *testing.T, f *fixture) {
	doc := f.page(nil, "/dead", http.StatusOK)
	if n := testids(doc, "dead-row").Length(); n != 3 {
		t.Fatalf("dead rows: %d, want 3", n)
	}
	if !strings.Contains(testids(doc, "dead-total").Text(), "3 dead") {
		t.Errorf("total: %q", testids(doc, "dead-total").Text())
	}
	doc = f.page(nil, "/dead?tenant=globex", http.StatusOK)
	if n := testids(doc, "dead-row").Length(); n != 2 {
		t.Errorf("tenant filter: %d rows, want 2", n)
	}
	doc = f.page(nil, "/dead?error=poison-2", http.StatusOK)
	if n := testids(doc, "dead-row").Length(); n != 1 {
		t.Errorf("error filter: %d rows, want 1", n)
	}
	doc = f.page(nil, "/dead?tenant=globex&id=poison-1", http.StatusOK)
	if n := testids(doc, "dead-row").Length(); n != 1 || testids(doc, "dead-id").Text() != "poison-1" {
		t.Errorf("id filter: %d rows", n)
	}
	// Binary payloads are shown as hex.
	doc = f.page(nil, "/dead?id=poison-2&tenant=globex", http.StatusOK)
	if p := testids(doc, "dead-payload").Text(); !strings.HasPrefix(p, "0xff0001") {
		t.Errorf("binary payload preview %q", p)
	}
	// Newest first, a page at a time, and back.
	var api view.Dead
	f.api(nil, "/api/dead?limit=2", http.StatusOK, &api)
	if len(api.Rows) != 2 || api.Older == "" || api.Newer != "" || api.Total != 3 || api.Page != 1 || api.Pages != 2 {
		t.Fatalf("api dead page 1: %+v", api)
	}
	if !api.Rows[0].DeadAt.After(api.Rows[1].DeadAt) && !api.Rows[0].DeadAt.Equal(api.Rows[1].DeadAt) {
		t.Errorf("page 1 is not newest first: %v then %v", api.Rows[0].DeadAt, api.Rows[1].DeadAt)
	}
	var p2 view.Dead
	f.api(nil, "/api/dead?limit=2&page=2&cursor="+url.QueryEscape(api.Older), http.StatusOK, &p2)
	if len(p2.Rows) != 1 || p2.Older != "" || p2.Newer == "" || p2.Page != 2 {
		t.Errorf("api dead page 2: %+v", p2)
	}
	var back view.Dead
	f.api(nil, "/api/dead?limit=2&page=1&cursor="+url.QueryEscape(p2.Newer), http.StatusOK, &back)
	if len(back.Rows) != 2 || back.Rows[0].ID != api.Rows[0].ID || back.Rows[1].ID != api.Rows[1].ID || back.Page != 1 || back.Newer != "" {
		t.Errorf("back to page 1: %+v, want %+v", back.Rows, api.Rows)
	}
	seen := map[string]bool{}
	for _, r := range append(api.Rows, p2.Rows...) {
		seen[r.Tenant+"/"+r.ID] = true
	}
	if len(seen) != 3 {
		t.Errorf("two pages listed %v, want the three letters once each", seen)
	}
	f.api(nil, "/api/dead?limit=5000", http.StatusBadRequest, nil)
	f.api(nil, "/api/dead?tenant=%00", http.StatusBadRequest, nil)
}

func TestItemPage(t *testing.T) { checkItemPage(t, newFixture(t, "")) }

func checkItemPage(t *testing.T, f *fixture) {
	doc := f.page(nil, "/item", http.StatusOK)
	if testids(doc, "item-form").Length() != 1 || testids(doc, "item-result").Length() != 0 {
		t.Error("empty lookup should show only the form")
	}
	doc = f.page(nil, "/item?tenant=globex&id=poison-1", http.StatusOK)
	if s := testids(doc, "item-state").Text(); s != "dead" {
		t.Errorf("state %q", s)
	}
	doc = f.page(nil, "/item?tenant=acme&id=acme-0", http.StatusOK)
	if testids(doc, "item-lease").Length() != 1 {
		t.Error("leased item shows no lease")
	}
	if testids(doc, "item-run").Length() != 0 {
		t.Error("a run is shown before one exists")
	}
	// The run of the same tenant and id shows beside the item.
	if _, err := f.runs.PutRun(context.Background(), contract.Run{Tenant: "acme", ID: "acme-0", Status: "planning", Data: []byte(`{"step":2}`)}); err != nil {
		t.Fatal(err)
	}
	doc = f.page(nil, "/item?tenant=acme&id=acme-0", http.StatusOK)
	if run := testids(doc, "item-run").Text(); !strings.Contains(run, "status planning") {
		t.Errorf("run line %q", run)
	}
	if href, _ := testids(doc, "item-run-versions").Attr("href"); href != "/run/versions?id=acme-0&queue=default&tenant=acme" {
		t.Errorf("run line links its versions at %q", href)
	}
	f.page(nil, "/item?tenant=acme&id=nope", http.StatusNotFound)
	var api view.ItemView
	f.api(nil, "/api/item?tenant=acme&id=acme-0", http.StatusOK, &api)
	if !api.Found || api.State != "leased" || api.Lease == nil || api.Lease.Worker != "w1" {
		t.Errorf("api item: %+v", api)
	}
	f.api(nil, "/api/item?tenant=acme&id=nope", http.StatusNotFound, &api)
	if api.Found {
		t.Error("missing item reported found")
	}
}

func TestHealthPage(t *testing.T) { checkHealthPage(t, newFixture(t, "")) }

func checkHealthPage(t *testing.T, f *fixture) {
	doc := f.page(nil, "/health", http.StatusOK)
	if testids(doc, "health-check").Length() < 2 {
		t.Error("expected the backing's check and the sampler's")
	}
	if !strings.Contains(testids(doc, "health-status").Text(), "healthy") {
		t.Errorf("status %q", testids(doc, "health-status").Text())
	}
	var api view.Health
	f.api(nil, "/api/health", http.StatusOK, &api)
	if api.Status != "ok" || len(api.Checks) < 2 {
		t.Errorf("api health: %+v", api)
	}
}

func TestHealthzMetricsStatic(t *testing.T) { checkHealthzMetricsStatic(t, newFixture(t, "")) }

func checkHealthzMetricsStatic(t *testing.T, f *fixture) {
	f.srv.sampler.sample(t.Context())
	resp, body := f.do(nil, http.MethodGet, "/healthz", nil, nil)
	if resp.StatusCode != 200 || strings.TrimSpace(body) != "ok" {
		t.Errorf("healthz: %d %q", resp.StatusCode, body)
	}
	f.page(nil, "/tenants", http.StatusOK)
	resp, body = f.do(nil, http.MethodGet, "/metrics", nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
	for _, want := range []string{`adk_queue_items{`, `state="dead"`, `http_server_request_duration_seconds_bucket{`, `http_route="/tenants"`, "go_goroutines"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, p := range []string{"/static/style.css", "/static/live.js"} {
		if resp, _ := f.do(nil, http.MethodGet, p, nil, nil); resp.StatusCode != 200 {
			t.Errorf("%s: %d", p, resp.StatusCode)
		}
	}
}

// unfairInspector reports a rotation that served only the noisy tenant, as
// a broken backing would, so the page must flag the starved tenants.
type unfairInspector struct {
	*memstore.Store
	clock *contracttest.FakeClock
}

func (u unfairInspector) Rotation(ctx context.Context, queue string, n int) (contract.Rotation, error) {
	now := u.clock.Now()
	var r contract.Rotation
	for i := range n {
		r.Recent = append(r.Recent, contract.Turn{Tenant: "noisy", ID: fmt.Sprint(i), Worker: "w", At: now.Add(-time.Duration(n-i) * time.Millisecond)})
	}
	return r, nil
}

func TestTenantsPageShowsStarvation(t *testing.T) {
	checkTenantsPageShowsStarvation(t, newFixture(t, ""))
}

func checkTenantsPageShowsStarvation(t *testing.T, f *fixture) {
	srv, err := New(Config{Queue: f.store, Inspector: unfairInspector{f.store, f.clock}, Clock: f.clock, SampleEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/tenants?turns=50", nil))
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	starving := doc.Find(`tr.starving[data-testid="tenant-row"]`)
	if starving.Length() != 2 {
		t.Fatalf("%d starving tenant rows, want 2 (acme, globex)", starving.Length())
	}
	if doc.Find(`tr.starving[data-testid="lane"]`).Length() != 2 {
		t.Error("starving lanes not highlighted")
	}
}

// The rotation order says which tenants have nothing due yet, so a tenant
// listed early but waiting on a delayed item is not taken for one the
// workers are skipping.
func TestTenantsPageMarksDelayedTenants(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{})
	ctx := context.Background()
	later := contract.Item{Tenant: "later", ID: "l", NotBefore: clock.Now().Add(time.Minute)}
	if err := store.Enqueue(ctx, later, contract.Item{Tenant: "now", ID: "n"}); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Queue: store, Inspector: store, Clock: clock, SampleEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/tenants", nil))
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	items := testids(doc, "rotation-order-item")
	if items.Length() != 2 {
		t.Fatalf("rotation order: %d tenants, want 2", items.Length())
	}
	for i, want := range []struct {
		tenant  string
		delayed bool
	}{{"now", false}, {"later", true}} {
		li := items.Eq(i)
		if !strings.Contains(li.Text(), want.tenant) || (li.Find(`[data-testid="rotation-order-delayed"]`).Length() == 1) != want.delayed {
			t.Errorf("rotation order item %d = %q; want %s, marked delayed: %v", i+1, strings.Join(strings.Fields(li.Text()), " "), want.tenant, want.delayed)
		}
	}
}
