package dashboard

import (
	"context"
	"fmt"
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

// One tenant with an old backlog and two small tenants that adk served in
// turn: replayed as FIFO, the backlog takes every claim of the window and
// the small tenants wait behind all of it.
func TestFIFOReplayStarvesSmallTenants(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	var turns []contract.Turn
	for i := range 60 { // 60 claims, 100 ms apart, ending now: 10 a second
		tenant := "noisy"
		switch i % 3 {
		case 1:
			tenant = "a"
		case 2:
			tenant = "b"
		}
		turns = append(turns, contract.Turn{Tenant: tenant, ID: fmt.Sprint(i), At: now.Add(-time.Duration(59-i) * 100 * time.Millisecond)})
	}
	stats := []contract.TenantStats{
		{Tenant: "noisy", Ready: 1000, OldestReady: now.Add(-10 * time.Minute)},
		{Tenant: "a"}, {Tenant: "b"},
	}
	strip, streams := fifoReplay(turns, stats, now)
	for i, tenant := range strip {
		if tenant != "noisy" {
			t.Fatalf("FIFO claim %d went to %q; the noisy backlog is older than every other item", i, tenant)
		}
	}
	if streams["noisy"].turns != 60 || streams["a"].turns != 0 || streams["b"].turns != 0 {
		t.Errorf("FIFO turns noisy %d, a %d, b %d; want 60, 0, 0", streams["noisy"].turns, streams["a"].turns, streams["b"].turns)
	}
	// a's items arrived in the window and wait behind the noisy tenant's
	// 20 served and 1,000 waiting items at 10 claims a second: ~100 s.
	for _, name := range []string{"a", "b"} {
		if w := streams[name].longest; w < 95*time.Second || w > 110*time.Second {
			t.Errorf("%s waits %v under FIFO, want about 100s", name, w)
		}
		if streams[name].left != 0 {
			t.Errorf("%s still unserved after the replay", name)
		}
	}
	// The noisy tenant's oldest item waited its ten minutes either way.
	if w := streams["noisy"].longest; w < 10*time.Minute {
		t.Errorf("noisy waits %v under FIFO, want at least its 10 minutes", w)
	}
}

// Items that had not arrived leave FIFO idle; nothing is served before it
// exists.
func TestFIFOReplayIdlesBeforeArrivals(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	turns := []contract.Turn{{Tenant: "a", At: now.Add(-2 * time.Second)}, {Tenant: "a", At: now.Add(-time.Second)}}
	strip, streams := fifoReplay(turns, []contract.TenantStats{{Tenant: "a"}}, now)
	if strip[0] != "a" || strip[1] != "a" || streams["a"].longest != 0 {
		t.Errorf("a lone tenant's replay: %v, longest %v; want both claims and no wait", strip, streams["a"].longest)
	}
	strip, _ = fifoReplay(turns, []contract.TenantStats{{Tenant: "b", Ready: 1, OldestReady: now}}, now)
	if strip[0] != "a" || strip[1] != "a" {
		t.Errorf("a later arrival was served before it arrived: %v", strip)
	}
}

// The page: both strips, a row per tenant with work, the verdicts, and
// the JSON twin with the same numbers.
func TestFairnessPage(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{})
	ctx := context.Background()
	var backlog []contract.Item
	for i := range 500 {
		backlog = append(backlog, contract.Item{Tenant: "noisy", ID: fmt.Sprint("n", i)})
	}
	if err := store.Enqueue(ctx, backlog...); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	for round := range 10 {
		for _, tenant := range []string{"a", "b", "c"} {
			if err := store.Enqueue(ctx, contract.Item{Tenant: tenant, ID: fmt.Sprint(tenant, round)}); err != nil {
				t.Fatal(err)
			}
		}
		for range 4 {
			ls, err := store.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := store.Complete(ctx, ls...); err != nil {
				t.Fatal(err)
			}
			clock.Advance(100 * time.Millisecond)
		}
	}
	srv := newTestServer(t, Config{Queue: store, Inspector: store, Clock: clock})
	doc := srv.page(t, "/fairness", http.StatusOK)
	if n := testids(doc, "fair-strip-adk").Find("rect").Length(); n != 40 {
		t.Errorf("adk strip has %d cells, want 40", n)
	}
	if n := testids(doc, "fair-strip-fifo").Find("rect").Length(); n != 40 {
		t.Errorf("FIFO strip has %d cells, want 40", n)
	}
	rows := map[string][2]string{}
	testids(doc, "fair-row").Each(func(_ int, s *goquery.Selection) {
		rows[strings.TrimSpace(s.Find(`[data-testid="fair-tenant"]`).Text())] = [2]string{
			strings.TrimSpace(s.Find(`[data-testid="fair-adk-turns"]`).Text()), strings.Fields(s.Find(`[data-testid="fair-fifo-turns"]`).Text())[0]}
	})
	for _, small := range []string{"a", "b", "c"} {
		if rows[small][0] != "10" || rows[small][1] != "0" {
			t.Errorf("%s: adk %s turns, FIFO %s; want 10 and 0", small, rows[small][0], rows[small][1])
		}
	}
	if !strings.Contains(testids(doc, "fair-adk").Text(), "every tenant with work got a turn") ||
		!strings.Contains(testids(doc, "fair-fifo").Text(), "3 tenants of 4 got no turn") {
		t.Errorf("verdicts %q / %q", testids(doc, "fair-adk").Text(), testids(doc, "fair-fifo").Text())
	}
	var api view.Fairness
	if err := jsonOf(srv.body(t, "/api/fairness"), &api); err != nil {
		t.Fatal(err)
	}
	if api.Window != 40 || api.FIFOStarved != 3 || api.AdkStarved != 0 || len(api.Rows) != 4 {
		t.Errorf("api fairness: window %d, starved %d under FIFO and %d under adk, %d rows", api.Window, api.FIFOStarved, api.AdkStarved, len(api.Rows))
	}
	for _, r := range api.Rows {
		// The small tenants' items waited for nothing under adk and wait
		// behind the backlog (490 items at 10 claims a second) under FIFO.
		if r.Tenant != "noisy" && (r.AdkWaitSeconds != 0 || r.FIFOWaitSeconds < 40) {
			t.Errorf("%s waits %.1fs under adk and %.1fs under FIFO; want 0 and about 49", r.Tenant, r.AdkWaitSeconds, r.FIFOWaitSeconds)
		}
	}
	srv.page(t, "/fairness?turns=0", http.StatusBadRequest)
}
