package dashboard

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// limitedFixture is the fixture with limits set: acme capped at its one
// live lease, noisy over a token budget, and a queue default of weight 2
// that globex follows.
func limitedFixture(t *testing.T, token string) *fixture {
	t.Helper()
	f := newFixture(t, token)
	ctx := t.Context()
	f.must(f.store.SetLimits(ctx, "default", "acme", contract.Limits{MaxLeased: 1}))
	f.must(f.store.SetLimits(ctx, "default", "noisy", contract.Limits{Budget: contract.Budget{Tokens: 100, Window: time.Minute}}))
	f.must(f.store.SetLimits(ctx, "default", "", contract.Limits{Weight: 2}))
	f.must(f.store.Charge(ctx, "default", "noisy", contract.Usage{Tokens: 150}))
	return f
}

// rowText is the text of one cell of a tenant's row on a page.
func rowText(t *testing.T, f *fixture, path, rowID, nameID, tenant, cellID string) string {
	t.Helper()
	doc := f.page(nil, path, http.StatusOK)
	var text string
	found := false
	testids(doc, rowID).Each(func(_ int, r *goquery.Selection) {
		if strings.TrimSpace(r.Find(`[data-testid="`+nameID+`"] bdi`).First().Text()) == tenant {
			found = true
			text = strings.Join(strings.Fields(r.Find(`[data-testid="`+cellID+`"]`).Text()), " ")
		}
	})
	if !found {
		t.Fatalf("%s: no row for %s", path, tenant)
	}
	return text
}

// TestFlowOnTenantsPage: each tenant's limits and standing, and why it is
// held back now, in the tenants table, the rotation order and the twin.
func TestFlowOnTenantsPage(t *testing.T) {
	f := limitedFixture(t, "")
	for _, c := range []struct{ tenant, cell, want string }{
		{"acme", "tenant-held", "held by its cap"},
		{"acme", "tenant-limits", "cap 1 own"},
		{"acme", "tenant-cap", "1 of 1"},
		{"noisy", "tenant-budget", "tokens 150 of 100 per 1m00s"},
		{"globex", "tenant-held", "no"},
		{"globex", "tenant-limits", "weight 2 default"},
		{"globex", "tenant-rate", "—"},
	} {
		if got := rowText(t, f, "/tenants", "tenant-row", "tenant-name", c.tenant, c.cell); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.tenant, c.cell, got, c.want)
		}
	}
	if got := rowText(t, f, "/tenants", "tenant-row", "tenant-name", "noisy", "tenant-held"); !strings.HasPrefix(got, "held by its budget until ") {
		t.Errorf("noisy is shown %q, want held by its budget until a time", got)
	}
	doc := f.page(nil, "/tenants", http.StatusOK)
	held := map[string]string{}
	testids(doc, "rotation-order-item").Each(func(_ int, li *goquery.Selection) {
		held[strings.TrimSpace(li.Find("bdi").Text())] = strings.TrimSpace(li.Find(`[data-testid="rotation-order-held"]`).Text())
	})
	if held["acme"] != "held: cap" || held["noisy"] != "held: budget" || held["globex"] != "" {
		t.Errorf("rotation order's held marks: %q", held)
	}
	if testids(doc, "flow-unsupported").Length() != 0 {
		t.Error("a backing that enforces limits is said not to")
	}

	var api view.Tenants
	f.api(nil, "/api/tenants", http.StatusOK, &api)
	if !api.Flow {
		t.Fatal("api tenants: flow_enforced is false")
	}
	got := map[string]view.FlowRow{}
	for _, r := range api.Rows {
		if r.Flow == nil {
			t.Fatalf("api tenants: %s has no flow standing", r.Tenant)
		}
		got[r.Tenant] = *r.Flow
	}
	if a := got["acme"]; a.Held != "cap" || a.Leased != 1 || a.Limits.MaxLeased != 1 || !a.Own || !a.Until.IsZero() {
		t.Errorf("acme: %+v", a)
	}
	if n := got["noisy"]; n.Held != "budget" || n.BudgetUsed.Tokens != 150 || n.Until.IsZero() || n.Limits.Budget.Window != "1m0s" {
		t.Errorf("noisy: %+v", n)
	}
	if g := got["globex"]; g.Held != "" || g.Own || g.Limits.Weight != 2 {
		t.Errorf("globex: %+v", g)
	}

	// The fairness view marks held tenants, and does not count them as
	// starved by the rotation.
	doc = f.page(nil, "/fairness", http.StatusOK)
	marks := map[string]string{}
	testids(doc, "fair-row").Each(func(_ int, r *goquery.Selection) {
		marks[strings.TrimSpace(r.Find("bdi").First().Text())] = strings.TrimSpace(r.Find(`[data-testid="fair-held"]`).Text())
	})
	if marks["acme"] != "held: cap" || marks["globex"] != "" {
		t.Errorf("fairness held marks: %q", marks)
	}
	var fair view.Fairness
	f.api(nil, "/api/fairness", http.StatusOK, &fair)
	for _, r := range fair.Rows {
		if r.Tenant == "acme" && r.Held != "cap" {
			t.Errorf("api fairness acme: %+v", r)
		}
	}
}

// TestLimitsPage: the queue's default, every tenant's standing, one
// tenant's with its form filled, and the JSON twin.
func TestLimitsPage(t *testing.T) {
	f := limitedFixture(t, "")
	doc := f.page(nil, "/limits", http.StatusOK)
	if n := testids(doc, "limits-row").Length(); n != 3 {
		t.Errorf("%d limits rows, want 3", n)
	}
	if got := strings.Fields(testids(doc, "limits-default-text").Text()); strings.Join(got, " ") != "weight 2 edit" {
		t.Errorf("the default reads %q", got)
	}
	if v, _ := testids(doc, "limit-weight").Attr("value"); v != "2" {
		t.Errorf("the default's form holds weight %q, want 2", v)
	}
	// Without a read-write token the form is there but cannot be sent.
	if _, disabled := testids(doc, "limits-save").Attr("disabled"); !disabled || testids(doc, "limits-readonly").Length() != 1 {
		t.Error("the save button is enabled on a read-only dashboard")
	}

	doc = f.page(nil, "/limits?tenant=acme", http.StatusOK)
	if n := testids(doc, "limits-row").Length(); n != 1 {
		t.Errorf("one tenant's page: %d rows", n)
	}
	if got := strings.TrimSpace(testids(doc, "limits-held").Text()); got != "held by its cap" {
		t.Errorf("acme is shown %q", got)
	}
	if v, _ := testids(doc, "limit-max_leased").Attr("value"); v != "1" {
		t.Errorf("acme's form holds max_leased %q, want 1", v)
	}
	doc = f.page(nil, "/limits?tenant=globex", http.StatusOK)
	if testids(doc, "limits-follows-default").Length() != 1 {
		t.Error("globex's page does not say it follows the default")
	}
	if v, _ := testids(doc, "limit-weight").Attr("value"); v != "" {
		t.Errorf("globex's own form holds weight %q, want empty", v)
	}
	// A tenant with neither items nor limits: what it would get.
	doc = f.page(nil, "/limits?tenant=newcomer", http.StatusOK)
	if got := strings.Join(strings.Fields(testids(doc, "limits-text").Text()), " "); got != "weight 2 default" {
		t.Errorf("a newcomer's limits read %q", got)
	}

	var api view.Limits
	f.api(nil, "/api/limits", http.StatusOK, &api)
	if !api.Enforced || api.Queue != "default" || api.Default.Weight != 2 || len(api.Tenants) != 3 {
		t.Fatalf("api limits: %+v", api)
	}
	var noisy view.Limits
	f.api(nil, "/api/limits?tenant=noisy", http.StatusOK, &noisy)
	if len(noisy.Tenants) != 1 || noisy.Tenants[0].Held != "budget" || noisy.Tenants[0].Limits.Budget.Tokens != 100 {
		t.Errorf("api limits of noisy: %+v", noisy.Tenants)
	}
	f.api(nil, "/api/limits?tenant="+strings.Repeat("x", 600), http.StatusBadRequest, nil)

	// The budget hold ends when the window slides past the charge.
	f.clock.Advance(2 * time.Minute)
	var later view.Limits
	f.api(nil, "/api/limits?tenant=noisy", http.StatusOK, &later)
	if later.Tenants[0].Held != "" || later.Tenants[0].BudgetUsed.Tokens != 0 {
		t.Errorf("noisy after the window: %+v", later.Tenants[0])
	}
}

// plainQueue hides every capability of the queue it wraps, as a backing
// without flow control would.
type plainQueue struct{ contract.WorkQueue }

// TestFlowUnsupported: on a backing that does not enforce limits, the
// pages say so and show no limits and no form.
func TestFlowUnsupported(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{})
	f := newFixtureOn(t, testToken, clock, "memory", plainQueue{store}, store, store)
	c, _ := f.signIn()
	doc := f.page(c, "/tenants", http.StatusOK)
	if testids(doc, "flow-unsupported").Length() != 1 || testids(doc, "tenant-cap").Length() != 0 || testids(doc, "tenants-limits-link").Length() != 0 {
		t.Error("the tenants page shows limits on a backing without them")
	}
	doc = f.page(c, "/limits", http.StatusOK)
	if got := testids(doc, "flow-unsupported").Text(); got != view.NoFlowNote || testids(doc, "limits-table").Length() != 0 || testids(doc, "limits-form").Length() != 0 {
		t.Errorf("the limits page on a backing without them: %q, %d tables, %d forms", got, testids(doc, "limits-table").Length(), testids(doc, "limits-form").Length())
	}
	var api view.Limits
	f.api(c, "/api/limits", http.StatusOK, &api)
	if api.Enforced || api.Note == "" || len(api.Tenants) != 0 {
		t.Errorf("api limits: %+v", api)
	}
	var tenants view.Tenants
	f.api(c, "/api/tenants", http.StatusOK, &tenants)
	if tenants.Flow || tenants.Rows[0].Flow != nil {
		t.Errorf("api tenants: flow %v, row %+v", tenants.Flow, tenants.Rows[0])
	}
}
