//go:build integration

package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard/demo"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// chromiumPath finds the browser, or fails the test with the one line that
// says how to install it: the integration lane never skips.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ADK_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("headless Chromium not found: install it with `apt-get install -y chromium` (or set ADK_CHROMIUM to its path)")
	return ""
}

func css(testid string) chromedp.CSS { return chromedp.CSS(`[data-testid="` + testid + `"]`) }

// TestBrowser tours every page of a dashboard watching the demo workload
// in headless Chromium, at 1440 px and 400 px wide, light and dark, then
// signs in and clicks through the dead-letter controls. Any console
// error, uncaught exception or script dialog fails it. With
// ADK_SCREENSHOTS=1 it saves every page in every mode to
// testdata/screenshots.
func TestBrowser(t *testing.T) {
	browser := chromiumPath(t)
	store := memstore.New(nil, memstore.Settings{Runs: contract.RunPolicy{KeepVersions: demo.DefaultKeepVersions}})
	srv, err := New(Config{Queue: store, Inspector: store, State: store, Backing: "memory",
		Token: testToken, SampleEvery: 250 * time.Millisecond, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	workCtx, stopWork := context.WithCancel(t.Context())
	workDone := make(chan error, 1)
	go func() {
		workDone <- demo.Run(workCtx, demo.Config{Queue: store, State: store, Backlog: 3000, Workers: 2, Concurrency: 6,
			MinLatency: 5 * time.Millisecond, MaxLatency: 60 * time.Millisecond, FailureRate: 0.05,
			CrashEvery: 300 * time.Millisecond, CrashLease: time.Second, LeaseFor: 2 * time.Second, Seed: 42})
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopWork()
			if err := <-workDone; err != nil && !strings.Contains(err.Error(), "context canceled") {
				t.Errorf("demo: %v", err)
			}
		}
	}
	defer stop()
	// Small tenants' arrivals are random draws: wait until every one of
	// the 20 has had an item, or the tenants page may be a row short.
	waitFor(t, "dead letters, samples and all 20 tenants", func() bool {
		stats, err := store.Tenants(t.Context(), contract.DefaultQueue)
		if err != nil {
			return false
		}
		var dead int64
		for _, s := range stats {
			dead += s.Dead
		}
		return dead >= 3 && len(stats) == 20 && len(srv.sampler.historyAll()) >= 8
	})

	// The noisy tenant capped below the workers' concurrency, so the
	// pages show a tenant held back by its cap now and then.
	if err := store.SetLimits(t.Context(), contract.DefaultQueue, demo.NoisyTenant, contract.Limits{MaxLeased: 3, Weight: 2}); err != nil {
		t.Fatal(err)
	}

	// One item of a queue of its own waits for a person's approval.
	if err := store.Enqueue(t.Context(), contract.Item{Tenant: "acme", Queue: "approvals", ID: "refund-1042", Payload: []byte(`{"refund":"42.00"}`)}); err != nil {
		t.Fatal(err)
	}
	if ls, err := store.Claim(t.Context(), contract.ClaimRequest{Queue: "approvals", Worker: "agent-1", LeaseFor: time.Minute, Max: 1}); err != nil || len(ls) != 1 {
		t.Fatalf("claim the approval: %d (%v)", len(ls), err)
	} else if err := store.Wait(t.Context(), ls[0], contract.WaitRequest{Signal: "approve", Timeout: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}

	b := openBrowser(t, browser, ts.URL)
	hostile := "/item?tenant=" + demo.HostileTenant + "&id=" + demo.HostileID
	tour := []tourPage{
		{"overview", "/", []string{"queue-table", "chart-depth"}},
		{"tenants", "/tenants", []string{"rotation-strip", "tenant-table"}},
		{"fairness", "/fairness", []string{"fair-strip-fifo", "fair-table"}},
		{"limits", "/limits", []string{"limits-table", "limits-form"}},
		{"queue", "/queue", []string{"queue-tenants", "cancel-form"}},
		{"waiting", "/waiting?queue=approvals", []string{"waiting-row"}},
		{"leases", "/leases", []string{"lease-table"}},
		{"dead-letters", "/dead?limit=20", []string{"dead-table", "dead-row"}},
		{"dead-errors", "/dead/errors", []string{"errors-table", "error-group"}},
		{"dead-confirm", "/dead/confirm?action=requeue&scope=filter&error=schema", []string{"confirm-count"}},
		{"item", hostile, []string{"item-result"}},
		{"finished", "/finished", []string{"finished-table", "finished-row"}},
		{"events", "/events", []string{"events-table", "events-row"}},
		{"find", "/find?id=" + demo.HostileID, []string{"find-row"}},
		{"health", "/health", []string{"health-table"}},
		{"login", "/login", []string{"login-form"}},
		{"not-found", "/nosuch", []string{"error-page"}},
	}
	for _, m := range modes {
		b.mode(m)
		for _, p := range tour {
			b.open(p.path, p.wait...)
			if m.width < 640 {
				// A phone sees every field: nothing runs off the right edge.
				if off := b.offScreen(); off != "" {
					t.Errorf("%s at %d px: %s is off screen", p.name, m.width, off)
				}
			}
			b.shoot(p.name, m)
		}
	}
	b.mode(modes[0])

	b.open("/", "chart-depth")
	if b.count(`[data-testid="chart-depth"] [data-testid="chart-line"]`) == 0 || b.count(`[data-testid="chart-x-tick"]`) == 0 {
		t.Error("overview: the depth chart drew no tenant line or no time axis")
	}
	b.click("range-6h", "chart-depth")
	if !strings.Contains(b.url(), "range=6h") {
		t.Errorf("the 6 hour span link went to %s", b.url())
	}
	b.open("/tenants", "tenant-table")
	if n := b.count(`[data-testid="turn-cell"]`); n < 20 {
		t.Errorf("tenants: the rotation strip shows %d turns", n)
	}
	if n := b.count(`[data-testid="tenant-row"]`); n != 20 {
		t.Errorf("tenants: %d tenant rows, want 20", n)
	}
	b.open("/leases", "lease-table")
	if n := b.count(`[data-testid^="lease-row"]`); n == 0 {
		t.Error("leases: no lease rows while the workers run")
	}
	// The hostile payload is text wherever it shows.
	b.open("/dead?tenant="+demo.HostileTenant+"&id="+demo.HostileID, "dead-row")
	if n := b.count(`[data-testid="dead-table"] img`); n != 0 {
		t.Errorf("the hostile payload became %d <img> element(s)", n)
	}
	if text := b.text("dead-payload"); text != demo.HostilePayload {
		t.Errorf("payload cell text %q", text)
	}

	// Stop the workers so what the clicks move stays where it lands.
	stop()
	historyTour(t, b)
	runVersionsTour(t, b)
	deadControls(t, b, store)
	b.noConsoleErrors()
}

// historyTour opens the newest finished item from the Finished page and
// reads its timeline, pages to older finished items, and finds an item
// by its id alone from the search box in the header.
func historyTour(t *testing.T, b *browserTab) {
	t.Helper()
	b.open("/finished?state=completed", "finished-row")
	if got := b.text("finished-state-badge"); got != "completed" {
		t.Errorf("the newest finished item is %q", got)
	}
	id := b.text("finished-item")
	b.click("finished-item", "item-timeline")
	if got := b.text("item-state"); got != "completed" {
		t.Errorf("the finished item's page says %q", got)
	}
	n := b.count(`[data-testid="timeline-row"]`)
	last := b.count(`[data-testid="timeline-row"]:last-child[data-kind="completed"]`)
	claimed := b.count(`[data-testid="timeline-row"][data-kind="claimed"]`)
	if n < 3 || last != 1 || claimed < 1 {
		t.Errorf("the timeline of %s: %d rows, completed last %d, claimed %d", id, n, last, claimed)
	}
	b.shoot("item-timeline", modes[0])
	b.open("/finished", "finished-row")
	if b.count(`[data-testid="finished-older"]`) == 1 {
		first := b.text("finished-item")
		b.click("finished-older", "finished-row")
		if b.text("finished-item") == first || b.count(`[data-testid="finished-newer"]`) != 1 {
			t.Errorf("older: the page starts with %q again, or offers no way back", first)
		}
	}
	if err := chromedp.Do(b.ctx, chromedp.SendKeys(css("id-search-input"), id)); err != nil {
		t.Fatal(err)
	}
	b.click("id-search-go", "find-row")
	if got := b.text("find-item"); got != id {
		t.Errorf("the search for %q found %q", id, got)
	}
	b.click("find-item", "item-timeline")
}

// runVersionsTour walks from a completed item's page to its run's
// versions, which the demo's workers wrote in steps under their lease,
// and on to the newest and the oldest of them.
func runVersionsTour(t *testing.T, b *browserTab) {
	t.Helper()
	b.open("/finished?state=completed", "finished-row")
	id := b.text("finished-item")
	b.click("finished-item", "item-run")
	if got := b.text("item-run"); !strings.Contains(got, "done") {
		t.Errorf("item %s: its run reads %q, want its last step, done", id, got)
	}
	b.click("item-run-versions", "run-versions-table")
	rows := b.count(`[data-testid="run-version-row"]`)
	if rows < 3 {
		t.Fatalf("run %s: %d versions listed, want a version per step (3 or more)", id, rows)
	}
	if b.count(`[data-testid="run-version-current"]`) != 1 || b.count(`[data-testid="run-version-row"]:first-child [data-testid="run-version-current"]`) != 1 {
		t.Error("the versions list does not mark its newest version, and only it, current")
	}
	statuses, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="run-version-status"]')].map(e => e.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	if statuses[0] != "done" || statuses[len(statuses)-1] != "planning" || !slices.Contains(statuses, "calling tools") {
		t.Errorf("the versions' statuses, newest first: %v", statuses)
	}
	fences, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="run-version-fence"]')].map(e => e.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range fences {
		if f == "—" || f == "" {
			t.Errorf("version row %d shows no fence: the workers write through their lease", i)
		}
	}
	b.shoot("run-versions", modes[0])
	list := b.url()

	b.click("run-version-link", "run-version")
	if got := b.text("run-version-status"); got != "done" || b.count(`[data-testid="run-version"] [data-testid="run-version-current"]`) != 1 {
		t.Errorf("the newest version: status %q, current badge %d", got, b.count(`[data-testid="run-version-current"]`))
	}
	if got := b.text("run-version-data"); !strings.Contains(got, `"answer": "ok"`) {
		t.Errorf("the newest version's data %q", got)
	}
	if got := b.text("run-version-counters"); !strings.Contains(got, " iterations") || strings.HasPrefix(got, "0 iterations") {
		t.Errorf("the newest version's counters %q", got)
	}
	b.shoot("run-version", modes[0])

	b.open(strings.TrimPrefix(list, b.base), "run-versions-table")
	oldest := chromedp.CSS(`[data-testid="run-version-row"]:last-child [data-testid="run-version-link"]`)
	if _, err := chromedp.RunResponse(b.ctx, chromedp.Click(oldest)); err != nil {
		t.Fatalf("click the oldest version: %v", err)
	}
	if err := chromedp.Do(b.ctx, chromedp.WaitVisible(css("run-version"))); err != nil {
		t.Fatal(err)
	}
	if got := b.text("run-version-status"); got != "planning" {
		t.Errorf("the oldest version's status %q, want planning", got)
	}
	if b.count(`[data-testid="run-version-current"]`) != 0 {
		t.Error("the oldest version is marked current")
	}
	if f := b.text("run-version-fence"); f == "—" || f == "" {
		t.Errorf("the oldest version's fence %q", f)
	}
	if got := b.text("run-version-data"); !strings.Contains(got, `"step": "plan"`) {
		t.Errorf("the oldest version's data %q", got)
	}
	b.click("run-item", "item-result")
}

// deadControls signs in and clicks through the dead-letter controls:
// paging, the errors view, a selection, a bulk action, the item page.
func deadControls(t *testing.T, b *browserTab, store *memstore.Store) {
	t.Helper()
	ctx := t.Context()
	b.open("/login", "login-form")
	if err := chromedp.Do(b.ctx, chromedp.SendKeys(css("login-token"), testToken)); err != nil {
		t.Fatal(err)
	}
	b.click("login-submit", "dead-table")

	// Enough letters of one tenant for three pages of 50.
	var batch []contract.Item
	for i := range 130 {
		batch = append(batch, contract.Item{Tenant: "pager", ID: fmt.Sprintf("p-%03d", i)})
	}
	if err := store.Enqueue(ctx, batch...); err != nil {
		t.Fatal(err)
	}
	for dead := 0; dead < 130; {
		ls, err := store.Claim(ctx, contract.ClaimRequest{Worker: "browser-test", LeaseFor: time.Minute, Max: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if l.Item.Tenant == "pager" {
				if _, err := store.Fail(ctx, l, policy.Permanent(errors.New("Pager Test: boom"))); err != nil {
					t.Fatal(err)
				}
				dead++
			} else if err := store.Complete(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.open("/dead?tenant=pager", "dead-row")
	first := b.text("dead-id")
	b.click("page-older", "dead-row")
	if got := b.text("page-number"); got != "page 2 of 3" {
		t.Errorf("after older: %q", got)
	}
	b.click("page-oldest", "dead-row")
	if got, n := b.text("page-number"), b.count(`[data-testid="dead-row"]`); got != "page 3 of 3" || n != 30 {
		t.Errorf("oldest: %q with %d rows, want page 3 of 3 with 30", got, n)
	}
	b.click("page-newer", "dead-row")
	if got := b.text("page-number"); got != "page 2 of 3" {
		t.Errorf("newer from the oldest: %q", got)
	}
	if err := chromedp.Do(b.ctx, chromedp.SetValue(css("page-jump-input"), "1")); err != nil {
		t.Fatal(err)
	}
	b.click("page-jump-go", "dead-row")
	if got := b.text("dead-id"); got != first || b.text("page-number") != "page 1 of 3" {
		t.Errorf("jump to page 1: first row %q on %q, want %q on page 1", got, b.text("page-number"), first)
	}

	// The error filter ignores case, and the errors view groups them.
	b.click("tab-errors", "errors-table")
	if got := b.text("error-count"); got != "130" {
		t.Errorf("the pager tenant's one error group counts %q, want 130", got)
	}
	b.click("tab-letters", "dead-table")

	// A selection: tick two rows, then three by select-all and untick one.
	b.tick(css("dead-pick"))
	b.tick(chromedp.CSS(`[data-testid="dead-row"]:nth-child(2) [data-testid="dead-pick"]`))
	if got := b.text("selection-count"); got != "2 letters selected;" {
		t.Errorf("selection count %q", got)
	}
	var picked []string
	for _, i := range []int{1, 2} {
		id, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(fmt.Sprintf(`[data-testid="dead-row"]:nth-child(%d) [data-testid="dead-id"]`, i))))
		if err != nil {
			t.Fatal(err)
		}
		picked = append(picked, strings.TrimSpace(id))
	}
	b.click("selection-requeue", "confirm-count")
	if got := b.text("confirm-count"); !strings.Contains(got, "requeue 2 dead letters") {
		t.Errorf("selection confirm says %q", got)
	}
	b.click("confirm-submit", "flash")
	if got := b.text("flash"); got != "Requeued 2 dead letters." {
		t.Errorf("flash after requeueing the selection: %q", got)
	}
	for _, id := range picked {
		info, err := store.Item(ctx, contract.ItemKey{Tenant: "pager", Queue: contract.DefaultQueue, ID: id})
		if err != nil || info.Item.State != contract.StateQueued {
			t.Errorf("picked %s is %+v (%v); want queued", id, info.Item.State, err)
		}
	}
	b.tick(css("dead-pick-all"))
	if got, n := b.text("selection-count"), b.count(`[data-testid="dead-pick"]:checked`); n != 50 || got != "50 letters selected;" {
		t.Errorf("select all ticked %d rows (%q), want 50", n, got)
	}
	b.tick(css("dead-pick-all"))
	if n := b.count(`[data-testid="dead-pick"]:checked`); n != 0 {
		t.Errorf("select all, again, left %d rows ticked", n)
	}

	// A bulk action on the filter: counted first, then done.
	if err := chromedp.Do(b.ctx, chromedp.SetValue(css("filter-error"), "PAGER TEST")); err != nil {
		t.Fatal(err)
	}
	b.click("filter-apply", "dead-table")
	if got := b.text("dead-total"); !strings.HasPrefix(got, "128 dead letters match") {
		t.Errorf("case-insensitive filter total %q", got)
	}
	b.click("bulk-purge", "confirm-count")
	if got := b.text("confirm-count"); !strings.Contains(got, "purge 128 dead letters matching the filter") {
		t.Errorf("bulk confirm says %q", got)
	}
	b.click("confirm-submit", "flash")
	if got := b.text("flash"); got != "Purged 128 dead letters." {
		t.Errorf("flash after the bulk purge: %q", got)
	}
	if sum, err := store.DeadLetterSummary(ctx, contract.DeadLetterFilter{Tenant: "pager"}, 0); err != nil || sum.Total != 0 {
		t.Errorf("pager letters left: %+v (%v)", sum, err)
	}

	// One letter from its own page, which the requeue returns to.
	b.open("/item?tenant="+demo.HostileTenant+"&id="+demo.HostileID, "item-requeue")
	b.click("item-requeue", "item-state")
	if st := b.text("item-state"); st != "queued" || !strings.HasPrefix(b.url(), b.base+"/item?") {
		t.Errorf("after requeue on the item page: state %q at %s", st, b.url())
	}
	info, err := store.Item(ctx, contract.ItemKey{Tenant: demo.HostileTenant, Queue: contract.DefaultQueue, ID: demo.HostileID})
	if err != nil || info.Item.State != contract.StateQueued || info.Item.Attempts != 0 {
		t.Fatalf("after the click the item is %+v (%v); want queued with attempts reset", info.Item, err)
	}
	b.shoot("item-requeued", modes[0])

	// The audit trail holds every action the clicks made, newest first.
	b.open("/audit", "audit-table")
	if got := b.text("audit-action"); got != "requeue" {
		t.Errorf("the newest audit entry is %q, want the item page's requeue", got)
	}
	if n := b.count(`[data-testid="audit-row"]`); n < 4 {
		t.Errorf("%d audit rows, want the sign-in and three actions at least", n)
	}
	b.shoot("audit", modes[0])
}

// TestBrowserSetsACap: a person signs in, sets a tenant's cap in the
// limits form, and sees the tenant shown held by its cap on the limits
// page and in the tenants table and the rotation order; a NaN rate comes
// back refused, naming the field, and changes nothing.
func TestBrowserSetsACap(t *testing.T) {
	browser := chromiumPath(t)
	store := memstore.New(nil, memstore.Settings{})
	ctx := t.Context()
	for _, tenant := range []string{"acme", "globex"} {
		for i := range 4 {
			if err := store.Enqueue(ctx, contract.Item{Tenant: tenant, ID: fmt.Sprint(tenant, "-", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Two live leases each: a cap of 2 holds acme back at once.
	if ls, err := store.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Hour, Max: 4}); err != nil || len(ls) != 4 {
		t.Fatalf("claim: %d leases (%v)", len(ls), err)
	}
	srv, err := New(Config{Queue: store, Inspector: store, Backing: "memory", Token: testToken, SampleEvery: time.Hour, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	b := openBrowser(t, browser, ts.URL)
	b.mode(modes[0])
	b.open("/login", "login-form")
	if err := chromedp.Do(b.ctx, chromedp.SendKeys(css("login-token"), testToken)); err != nil {
		t.Fatal(err)
	}
	b.click("login-submit", "signed-in-as")
	b.open("/tenants", "tenant-table")
	if n := b.count(`[data-testid="tenant-held"] [data-held]`); n != 0 {
		t.Errorf("%d tenants shown held before any limit", n)
	}
	b.open("/limits?tenant=acme", "limits-form")
	if got := b.text("limits-follows-default"); got == "" {
		t.Error("acme's form does not say it follows the default")
	}
	if err := chromedp.Do(b.ctx, chromedp.SendKeys(css("limit-max_leased"), "2")); err != nil {
		t.Fatal(err)
	}
	b.click("limits-save", "flash")
	if got := b.text("flash"); got != "Limits saved." {
		t.Errorf("flash %q", got)
	}
	if got := b.text("limits-held"); got != "held by its cap" {
		t.Errorf("acme is shown %q on its limits page, want held by its cap", got)
	}
	if got := b.text("limits-cap"); got != "2 of 2" {
		t.Errorf("acme's leases against its cap read %q", got)
	}
	ql, err := store.Limits(ctx, contract.DefaultQueue)
	if err != nil || ql.Tenants["acme"] != (contract.Limits{MaxLeased: 2}) {
		t.Fatalf("acme's limits after the click: %+v (%v)", ql, err)
	}
	b.shoot("limits-tenant", modes[0])

	b.open("/tenants", "tenant-table")
	rows, err := chromedp.Run(b.ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries(Array.from(document.querySelectorAll('[data-testid="tenant-row"]')).map(tr =>
		[tr.querySelector('[data-testid="tenant-name"] bdi').textContent.trim(), tr.querySelector('[data-testid="tenant-held"]').textContent.trim().replace(/\s+/g, " ")]))`))
	if err != nil {
		t.Fatal(err)
	}
	if rows["acme"] != "held by its cap" || rows["globex"] != "no" {
		t.Errorf("the tenants table's held column: %q", rows)
	}
	if got := b.text("rotation-order-held"); got != "held: cap" {
		t.Errorf("the rotation order marks %q", got)
	}

	// A NaN rate: refused beside the field, nothing changed.
	b.open("/limits?tenant=acme", "limits-form")
	if err := chromedp.Do(b.ctx, chromedp.SendKeys(css("limit-rate"), "NaN")); err != nil {
		t.Fatal(err)
	}
	b.click("limits-save", "limits-problem")
	if got := b.text("limits-problem"); !strings.Contains(got, "Limits.Rate") || !strings.Contains(got, "Nothing was changed.") {
		t.Errorf("the refusal reads %q", got)
	}
	if ql, err := store.Limits(ctx, contract.DefaultQueue); err != nil || ql.Tenants["acme"] != (contract.Limits{MaxLeased: 2}) {
		t.Errorf("a refused form changed acme's limits: %+v (%v)", ql, err)
	}
	// A bulk cancel: the confirmation shows the count CountMatching
	// gives before anything is cancelled, the confirm cancels that many.
	want, err := store.CountMatching(ctx, contract.CancelFilter{Queue: contract.DefaultQueue, Tenant: "globex", IDPrefix: "globex-"})
	if err != nil || want != 4 {
		t.Fatalf("CountMatching before the cancel: %d (%v)", want, err)
	}
	b.open("/queue", "cancel-form")
	if err := chromedp.Do(b.ctx, chromedp.SendKeys(css("cancel-tenant"), "globex"), chromedp.SendKeys(css("cancel-prefix"), "globex-"),
		chromedp.SendKeys(css("cancel-reason"), "superseded")); err != nil {
		t.Fatal(err)
	}
	b.click("cancel-review", "cancel-confirm")
	if got := b.text("cancel-count"); got != "4 items" {
		t.Errorf("the confirmation counts %q, want 4 items", got)
	}
	if n, _ := store.CountMatching(ctx, contract.CancelFilter{Queue: contract.DefaultQueue, Tenant: "globex"}); n != 4 {
		t.Errorf("the confirmation step cancelled %d items", 4-n)
	}
	b.shoot("cancel-confirm", modes[0])
	b.click("cancel-confirm-submit", "flash")
	if got := b.text("flash"); got != "Cancelled 4 items." {
		t.Errorf("flash %q", got)
	}
	if n, _ := store.CountMatching(ctx, contract.CancelFilter{Queue: contract.DefaultQueue, Tenant: "globex"}); n != 0 {
		t.Errorf("%d of globex's items left uncancelled", n)
	}
	if n, _ := store.CountMatching(ctx, contract.CancelFilter{Queue: contract.DefaultQueue, Tenant: "acme"}); n != 4 {
		t.Errorf("the cancel of globex's work touched acme's: %d left", n)
	}
	b.shoot("queue-after-cancel", modes[0])

	b.mode(modes[2]) // 400 px: every field and button on screen
	b.open("/queue", "cancel-form")
	if off := b.offScreen(); off != "" {
		t.Errorf("the queue page at 400 px: %s is off screen", off)
	}
	b.open("/limits?tenant=acme", "limits-form")
	if off := b.offScreen(); off != "" {
		t.Errorf("the limits page at 400 px: %s is off screen", off)
	}
	b.noConsoleErrorsExcept("/limits")
}

// TestBrowserFaultsShowOnlyInABrowser covers the layout faults: a tenant
// name near the 512-byte limit is cut short, with the whole name on
// hover, and every tenant's lane and turn count stay on screen beside it;
// at 400 px the dead letters' payload and actions and the health fixes
// are on screen, not beyond a scroll.
func TestBrowserFaultsShowOnlyInABrowser(t *testing.T) {
	browser := chromiumPath(t)
	store := memstore.New(nil, memstore.Settings{})
	long := strings.Repeat("tenant-with-a-very-long-name-", 18)[:494]
	ctx := t.Context()
	for _, tenant := range []string{long, "acme", "globex"} {
		for i := range 3 {
			if err := store.Enqueue(ctx, contract.Item{Tenant: tenant, ID: fmt.Sprint("i", i), Payload: []byte(`{"run":"r-1","step":"plan","model":"demo-1"}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ls, err := store.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Hour, Max: 6})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Fail(ctx, ls[0], policy.Permanent(errors.New("tool arguments do not match the tool's schema: missing field"))); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Queue: store, Inspector: store, Token: testToken, SampleEvery: time.Hour, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	b := openBrowser(t, browser, ts.URL)
	b.mode(modes[0])
	b.open("/tenants", "rotation-lanes")
	type box struct {
		Lane, Turns, TurnsRight, Viewport float64
		Text                              string
	}
	boxes, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]box](`Array.from(document.querySelectorAll('[data-testid="lane"]')).map(tr => {
		const lane = tr.querySelector('td.lane svg').getBoundingClientRect();
		const turns = tr.querySelector('[data-testid="lane-turns"]').getBoundingClientRect();
		return {Lane: lane.width, Turns: turns.width, TurnsRight: turns.right, Viewport: document.documentElement.clientWidth, Text: tr.querySelector('[data-testid="lane-turns"]').textContent};
	})`))
	if err != nil {
		t.Fatal(err)
	}
	if len(boxes) != 3 {
		t.Fatalf("%d lanes, want 3", len(boxes))
	}
	for i, bx := range boxes {
		if bx.Lane < 100 || bx.Turns < 20 || bx.TurnsRight > bx.Viewport {
			t.Errorf("lane %d: lane %.0fpx wide, turn count %.0fpx ending at %.0fpx of %.0fpx (%q): squeezed or off screen", i, bx.Lane, bx.Turns, bx.TurnsRight, bx.Viewport, bx.Text)
		}
	}
	title, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('[data-testid="tenant-name"] bdi')).map(b => b.title).find(t => t.length > 400) || ""`))
	if err != nil || title != long {
		t.Errorf("the long name's hover text is %d bytes (%v), want the whole name", len(title), err)
	}
	b.mode(modes[2]) // 400 px
	for _, p := range []struct{ path, wait string }{{"/dead", "dead-payload"}, {"/health", "health-fix"}, {"/leases", "lease-table"}, {"/tenants", "tenant-table"}} {
		b.open(p.path, p.wait)
		if off := b.offScreen(); off != "" {
			t.Errorf("%s at 400 px: %s is off screen", p.path, off)
		}
	}
	b.noConsoleErrors()
}

type tourPage struct {
	name, path string
	wait       []string
}

// mode is a viewport and a colour scheme.
type mode struct {
	width, height int64
	scheme        string
}

var modes = []mode{{1440, 900, "light"}, {1440, 900, "dark"}, {400, 860, "light"}, {400, 860, "dark"}}

// browserTab is one tab of headless Chromium with the test's helpers and a
// record of everything the page logged as an error.
type browserTab struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu     sync.Mutex
	errors []string
}

func openBrowser(t *testing.T, path, base string) *browserTab {
	t.Helper()
	b := &browserTab{t: t, ctx: newBrowser(t, path), base: base}
	if err := chromedp.Listen(b.ctx, func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			msg = "script dialog: " + e.Message
		case *cdpruntime.EventExceptionThrown:
			msg = "uncaught: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
		case *cdpruntime.EventConsoleAPICalled:
			if e.Type == cdpruntime.ConsoleAPICalledTypeError || e.Type == cdpruntime.ConsoleAPICalledTypeAssert {
				msg = "console." + string(e.Type)
				for _, a := range e.Args {
					msg += " " + string(a.Value) + a.Description
				}
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError && !expectedHTTPError(e.Entry) {
				msg = "log " + string(e.Entry.Source) + ": " + e.Entry.Text + " " + e.Entry.URL
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errors = append(b.errors, msg)
			b.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	return b
}

// expectedHTTPError tells apart the failed loads the tour asks for (the
// 404 page) from real errors.
func expectedHTTPError(e *cdplog.Entry) bool {
	return e.Source == cdplog.EntrySourceNetwork && strings.HasSuffix(e.URL, "/nosuch")
}

func (b *browserTab) noConsoleErrors() { b.t.Helper(); b.noConsoleErrorsExcept() }

// noConsoleErrorsExcept fails on every error but the failed loads of the
// given addresses, which the test asked for.
func (b *browserTab) noConsoleErrorsExcept(loads ...string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
next:
	for _, e := range b.errors {
		for _, l := range loads {
			if strings.HasPrefix(e, "log network") && strings.HasSuffix(e, l) {
				continue next
			}
		}
		b.t.Errorf("the browser reported an error: %s", e)
	}
}

func (b *browserTab) mode(m mode) {
	b.t.Helper()
	err := chromedp.Do(b.ctx, chromedp.EmulateViewport(m.width, m.height), chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: m.scheme}}})
		return err
	}))
	if err != nil {
		b.t.Fatal(err)
	}
}

func (b *browserTab) open(path string, wait ...string) {
	b.t.Helper()
	steps := []chromedp.Action[chromedp.Void]{chromedp.Navigate(b.base + path)}
	for _, w := range wait {
		steps = append(steps, chromedp.WaitVisible(css(w)))
	}
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", path, err)
	}
}

// click clicks a link or a submit button, waits until the page it leads
// to has loaded, and then for that page's element.
func (b *browserTab) click(testid, wait string) {
	b.t.Helper()
	if _, err := chromedp.RunResponse(b.ctx, chromedp.Click(css(testid))); err != nil {
		b.t.Fatalf("click %s: %v", testid, err)
	}
	if err := chromedp.Do(b.ctx, chromedp.WaitVisible(css(wait))); err != nil {
		b.t.Fatalf("after clicking %s: %v", testid, err)
	}
}

// tick clicks a control that stays on the page (a checkbox).
func (b *browserTab) tick(sel chromedp.CSS) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Click(sel)); err != nil {
		b.t.Fatalf("click %s: %v", sel, err)
	}
}

func (b *browserTab) count(sel string) int {
	b.t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
	if err != nil {
		b.t.Fatal(err)
	}
	return n
}

func (b *browserTab) text(testid string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(document.querySelector('[data-testid="`+testid+`"]') || {textContent: ""}).textContent.trim().replace(/\s+/g, " ")`))
	if err != nil {
		b.t.Fatal(err)
	}
	return s
}

func (b *browserTab) url() string {
	b.t.Helper()
	u, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`location.href`))
	if err != nil {
		b.t.Fatal(err)
	}
	return u
}

// offScreen names the first visible element that reaches past the right
// edge of the viewport, or "" when none does.
func (b *browserTab) offScreen() string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(() => {
		const w = document.documentElement.clientWidth;
		if (document.documentElement.scrollWidth > w + 1) return "the page (" + document.documentElement.scrollWidth + "px wide)";
		for (const el of document.querySelectorAll('main [data-testid], main td, main th, main button, main a')) {
			const r = el.getBoundingClientRect();
			if (r.width > 0 && r.height > 0 && r.right > w + 1) return (el.dataset.testid || el.tagName.toLowerCase() + "." + el.className) + " (right edge " + Math.round(r.right) + "px of " + w + ")";
		}
		return "";
	})()`))
	if err != nil {
		b.t.Fatal(err)
	}
	return s
}

func (b *browserTab) shoot(name string, m mode) {
	b.t.Helper()
	saveScreenshot(b.t, b.ctx, fmt.Sprintf("%s-%d-%s", name, m.width, m.scheme))
}

// newBrowser starts headless Chromium with a fresh profile and the flags
// that keep it off the network; it is stopped when the test ends.
func newBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelTimeout)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatal(err)
	}
	return ctx
}

func saveScreenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("ADK_SCREENSHOTS") != "1" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "screenshots", name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserHealthOnRedis shows the health page of a real Redis backing:
// every check that is not healthy must carry its fix.
func TestBrowserHealthOnRedis(t *testing.T) {
	browser := chromiumPath(t)
	redisURL := redistest.URL(t)
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.Enqueue(t.Context(), contract.Item{Tenant: "acme", ID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Queue: q, Inspector: q, Backing: "redis", DSN: contract.Secret(redisURL), SampleEvery: time.Hour, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	b := openBrowser(t, browser, ts.URL)
	for _, m := range modes {
		b.mode(m)
		b.open("/health", "health-table")
		b.shoot("health-redis", m)
	}
	missing, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`Array.from(document.querySelectorAll('[data-testid="health-check"]:not(.st-ok) [data-testid="health-fix"]')).filter(e => e.textContent.trim() === "").length`))
	if err != nil {
		t.Fatal(err)
	}
	if missing != 0 {
		t.Errorf("%d check(s) that need attention or fail without a fix", missing)
	}
	if rows := b.count(`[data-testid="health-check"]`); rows < 2 {
		t.Errorf("%d health rows", rows)
	}
	b.noConsoleErrors()
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// waitFor polls cond with a bounded deadline: the demo runs on real timers.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrowserHealthOnPostgres shows the vacuum health of adk_work and the
// schema verdict of a real PostgreSQL backing.
func TestBrowserHealthOnPostgres(t *testing.T) {
	browser := chromiumPath(t)
	dsn := pgstoretest.DSN(t)
	pool := postgresSchema(t, dsn)
	q, err := pgstore.NewQueue(pool, nil, pgstore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(t.Context(), contract.Item{Tenant: "acme", ID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Queue: q, Inspector: q, Backing: "postgresql", DSN: contract.Secret(dsn), SampleEvery: time.Hour, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	b := openBrowser(t, browser, ts.URL)
	for _, m := range modes {
		b.mode(m)
		b.open("/health", "health-table")
		b.shoot("health-postgresql", m)
	}
	if text := b.text("health-table"); !strings.Contains(text, "adk_work") {
		t.Errorf("health table does not mention adk_work:\n%s", text)
	}
	b.noConsoleErrors()
}

// durations matches a duration or a clock time in a page's text.
var durations = regexp.MustCompile(`\d+(\.\d+)?\s?(ns|µs|ms|s|m|h|min)\b|\d{1,2}:\d{2}(:\d{2})?`)

// TestBrowserTenantScoped signs in with a token that sees one tenant and
// reads every page as a person would: no other tenant's name, item id or
// count may appear in any page's text (nor its markup, for names and
// ids), charts and totals included.
func TestBrowserTenantScoped(t *testing.T) {
	browser := chromiumPath(t)
	store := memstore.New(nil, memstore.Settings{})
	ctx := t.Context()
	enqueue := func(tenant, prefix string, n int) {
		var items []contract.Item
		for i := range n {
			items = append(items, contract.Item{Tenant: tenant, ID: fmt.Sprintf("%s-%04d", prefix, i)})
		}
		if err := store.Enqueue(ctx, items...); err != nil {
			t.Fatal(err)
		}
	}
	// Counts chosen to be recognisable: 613 and 587 items of the other
	// two tenants, 1,205 in all.
	enqueue("acme", "acme-item", 5)
	enqueue("globex", "glx-item", 613)
	enqueue("initech", "ini-item", 587)
	// One claim round: each tenant's first item; acme's dies, the
	// others' stay leased, so every table has a row of each.
	ls, err := store.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Hour, Max: 3})
	if err != nil || len(ls) != 3 {
		t.Fatalf("claim: %d leases, %v", len(ls), err)
	}
	for _, l := range ls {
		if l.Item.Tenant == "acme" {
			if _, err := store.Fail(ctx, l, policy.Permanent(errors.New("acme's own failure"))); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv, err := New(Config{Queue: store, Inspector: store, State: store, Backing: "memory", SampleEvery: 100 * time.Millisecond, Refresh: -1,
		Tokens: []Token{{Name: "acme-team", Secret: acmeRWSecret, Access: ReadWrite, Tenants: []string{"acme"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	waitFor(t, "two samples", func() bool { return len(srv.sampler.historyAll()) >= 2 })

	b := openBrowser(t, browser, ts.URL)
	b.mode(modes[0])
	// Without a token every page sends the person to sign in.
	b.open("/tenants", "login-form")
	if err := chromedp.Do(b.ctx, chromedp.SendKeys(css("login-token"), acmeRWSecret)); err != nil {
		t.Fatal(err)
	}
	b.click("login-submit", "dead-table")
	if got := b.text("signed-in-as"); !strings.Contains(got, "acme-team") {
		t.Errorf("signed in as %q", got)
	}
	names := []string{"globex", "initech", "glx-item", "ini-item"}
	counts := []string{"613", "587", "1205", "1,205", "1200", "1,200", "1204", "1,204", "612", "586", "1202", "1,202"}
	pages := []tourPage{
		{"overview", "/", []string{"queue-table", "chart-depth"}},
		{"tenants", "/tenants", []string{"tenant-table"}},
		{"fairness", "/fairness", []string{"fair-table"}},
		{"limits", "/limits", []string{"limits-table", "limits-readonly"}},
		{"leases", "/leases", []string{"lease-table"}},
		{"dead-letters", "/dead", []string{"dead-table"}},
		{"dead-errors", "/dead/errors", []string{"errors-table"}},
		{"dead-confirm", "/dead/confirm?action=purge&scope=filter", []string{"confirm-count"}},
		{"item", "/item?tenant=acme&id=acme-item-0001", []string{"item-result"}},
		{"health", "/health", []string{"health-table"}},
		{"login", "/login", []string{"login-done"}},
	}
	for _, p := range pages {
		b.open(p.path, p.wait...)
		if p.name == "overview" {
			b.shoot("scoped-overview", modes[0])
		}
		text, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText + "\n" + document.documentElement.textContent`))
		if err != nil {
			t.Fatal(err)
		}
		html, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.Contains(text, n) || strings.Contains(html, n) {
				t.Errorf("%s shows %q to a token that sees only acme", p.name, n)
			}
		}
		// Durations (a latency of 613 ms) and clock times are not counts.
		counted := durations.ReplaceAllString(text, " ")
		for _, n := range counts {
			if regexp.MustCompile(`(^|[^0-9.,])` + regexp.QuoteMeta(n) + `($|[^0-9.,])`).MatchString(counted) {
				i := strings.Index(counted, n)
				t.Errorf("%s shows the count %s to a token that sees only acme: …%s…", p.name, n, counted[max(0, i-80):min(len(counted), i+40)])
			}
		}
		if !strings.Contains(text, "acme") && p.name != "health" && p.name != "login" {
			t.Errorf("%s does not show acme at all", p.name)
		}
	}
	// Another tenant's letters are refused, not shown empty.
	b.open("/dead?tenant=globex", "error-page")
	if got := b.text("error-page"); !strings.Contains(got, "outside its scope") || strings.Contains(got, "globex") {
		t.Errorf("the refusal says %q", got)
	}
	b.noConsoleErrorsExcept("/dead?tenant=globex")
}
