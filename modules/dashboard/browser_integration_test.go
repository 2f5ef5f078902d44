//go:build integration

package dashboard

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard/demo"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/redisstore"
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

// TestBrowser opens every page of a dashboard watching the demo workload
// in headless Chromium, signs in, requeues a dead letter by clicking, and
// checks that a hostile payload is text. With ADK_SCREENSHOTS=1 it saves
// full-page screenshots to testdata/screenshots.
func TestBrowser(t *testing.T) {
	browser := chromiumPath(t)
	store := memstore.New(nil)
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
		workDone <- demo.Run(workCtx, demo.Config{Queue: store, Backlog: 3000, Workers: 2, Concurrency: 6,
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

	ctx := newBrowser(t, browser)

	var dialogs atomic.Int32
	if err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}

	open := func(name, path string, wait ...chromedp.CSS) {
		t.Helper()
		steps := []chromedp.Action[chromedp.Void]{chromedp.Navigate(ts.URL + path)}
		for _, w := range wait {
			steps = append(steps, chromedp.WaitVisible(w))
		}
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		saveScreenshot(t, ctx, name)
	}
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	open("overview", "/", css("queue-table"), css("chart-depth"))
	if count(`[data-testid="chart-depth"] polyline`) == 0 {
		t.Error("overview: the depth chart drew no line")
	}
	open("tenants", "/tenants", css("rotation-strip"), css("tenant-table"))
	if n := count(`[data-testid="turn-cell"]`); n < 20 {
		t.Errorf("tenants: the rotation strip shows %d turns", n)
	}
	if n := count(`[data-testid="tenant-row"]`); n != 20 {
		t.Errorf("tenants: %d tenant rows, want 20", n)
	}
	open("leases", "/leases", css("lease-table"))
	if n := count(`[data-testid^="lease-row"]`); n == 0 {
		t.Error("leases: no lease rows while the workers run")
	}
	open("dead-letters", "/dead", css("dead-table"), css("dead-row"))
	open("health", "/health", css("health-table"))
	open("item", "/item?tenant="+demo.HostileTenant+"&id="+demo.HostileID, css("item-result"))

	// The hostile payload is text wherever it shows.
	open("dead-letters-hostile", "/dead?tenant="+demo.HostileTenant+"&id="+demo.HostileID, css("dead-row"))
	if n := count(`[data-testid="dead-table"] img`); n != 0 {
		t.Errorf("the hostile payload became %d <img> element(s)", n)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(css("dead-payload")))
	if err != nil || text != demo.HostilePayload {
		t.Errorf("payload cell text %q (%v)", text, err)
	}

	// A phone-sized view of the busiest page, then back to a laptop's.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	open("tenants-phone", "/tenants", css("rotation-strip"))
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}

	// Stop the workers so the requeued letter stays where it lands.
	stop()

	open("login", "/login", css("login-form"))
	if err := chromedp.Do(ctx, chromedp.SendKeys(css("login-token"), testToken)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(css("login-submit"))); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	open("dead-letters-signed-in", "/dead?tenant="+demo.HostileTenant+"&id="+demo.HostileID, css("requeue-one"))
	if n := count(`[data-testid="requeue-one"]:disabled`); n != 0 {
		t.Fatal("requeue is still disabled after sign-in")
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(css("requeue-one"))); err != nil {
		t.Fatalf("requeue click: %v", err)
	}
	flash, err := chromedp.Run(ctx, chromedp.Text(css("flash")))
	if err != nil || !strings.Contains(flash, "Requeued 1") {
		t.Errorf("flash after requeue: %q (%v)", flash, err)
	}
	info, err := store.Item(t.Context(), contract.ItemKey{Tenant: demo.HostileTenant, Queue: contract.DefaultQueue, ID: demo.HostileID})
	if err != nil || info.Item.State != contract.StateQueued || info.Item.Attempts != 0 {
		t.Fatalf("after the click the item is %+v (%v); want queued with attempts reset", info.Item, err)
	}
	stats, err := store.Tenants(t.Context(), contract.DefaultQueue)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stats {
		if s.Tenant == demo.HostileTenant && s.Ready == 0 {
			t.Errorf("%s has no ready item after the requeue", s.Tenant)
		}
	}
	open("item-requeued", "/item?tenant="+demo.HostileTenant+"&id="+demo.HostileID, css("item-state"))
	if st, _ := chromedp.Run(ctx, chromedp.Text(css("item-state"))); st != "queued" {
		t.Errorf("item page shows state %q", st)
	}

	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d JavaScript dialog(s) opened: markup ran as script", n)
	}
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
// every check that is not green must carry its fix.
func TestBrowserHealthOnRedis(t *testing.T) {
	browser := chromiumPath(t)
	redisURL := os.Getenv("ADK_TEST_REDIS_URL")
	if redisURL == "" {
		t.Fatal("set ADK_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/0) to run the dashboard's Redis browser test")
	}
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	defer client.Close()
	ns := randomName("adkdash")
	defer deleteRedisNamespace(t, client, ns)
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

	ctx := newBrowser(t, browser)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/health"), chromedp.WaitVisible(css("health-table"))); err != nil {
		t.Fatal(err)
	}
	missing, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Array.from(document.querySelectorAll('[data-testid="health-check"]:not(.st-ok) [data-testid="health-fix"]')).filter(e => e.textContent.trim() === "").length`))
	if err != nil {
		t.Fatal(err)
	}
	if missing != 0 {
		t.Errorf("%d amber/red check(s) without a fix", missing)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="health-check"]').length`))
	if err != nil || rows < 2 {
		t.Errorf("%d health rows (%v)", rows, err)
	}
	saveScreenshot(t, ctx, "health-redis")
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
	dsn := os.Getenv("ADK_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Fatal("set ADK_TEST_POSTGRES_DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the dashboard's PostgreSQL browser test")
	}
	pool := postgresSchema(t, dsn)
	q, err := pgstore.NewWorkQueue(pool, nil, pgstore.Settings{})
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

	ctx := newBrowser(t, browser)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/health"), chromedp.WaitVisible(css("health-table"))); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(css("health-table")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "adk_work") {
		t.Errorf("health table does not mention adk_work:\n%s", text)
	}
	saveScreenshot(t, ctx, "health-postgresql")
}

// TestBrowserLongTenantName: a tenant name near the 512-byte limit is cut
// short with the whole name on hover, and every tenant's lane and turn
// count stay on screen beside it.
func TestBrowserLongTenantName(t *testing.T) {
	browser := chromiumPath(t)
	store := memstore.New(nil)
	long := strings.Repeat("tenant-with-a-very-long-name-", 18)[:494]
	ctx := t.Context()
	for _, tenant := range []string{long, "acme", "globex"} {
		for i := range 3 {
			if err := store.Enqueue(ctx, contract.Item{Tenant: tenant, ID: fmt.Sprint("i", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := store.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Hour, Max: 6}); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Queue: store, Inspector: store, SampleEvery: time.Hour, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	bctx := newBrowser(t, browser)
	if err := chromedp.Do(bctx, chromedp.Navigate(ts.URL+"/tenants"), chromedp.WaitVisible(css("rotation-lanes"))); err != nil {
		t.Fatal(err)
	}
	type box struct {
		Lane, Turns, TurnsRight, Viewport float64
		Text                              string
	}
	boxes, err := chromedp.Run(bctx, chromedp.Evaluate[[]box](`Array.from(document.querySelectorAll('[data-testid="lane"]')).map(tr => {
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
	for i, b := range boxes {
		if b.Lane < 100 || b.Turns < 20 || b.TurnsRight > b.Viewport {
			t.Errorf("lane %d: lane %.0fpx wide, turn count %.0fpx ending at %.0fpx of %.0fpx (%q): squeezed or off screen", i, b.Lane, b.Turns, b.TurnsRight, b.Viewport, b.Text)
		}
	}
	title, err := chromedp.Run(bctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('[data-testid="tenant-name"] bdi')).map(b => b.title).find(t => t.length > 400) || ""`))
	if err != nil || title != long {
		t.Errorf("the long name's hover text is %d bytes (%v), want the whole name", len(title), err)
	}
}
