package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

const (
	benchLeases  = 10_000
	benchDead    = 100_000
	benchTenants = 50
)

var (
	benchOnce  sync.Once
	benchStore *memstore.Store
	benchClock *contracttest.FakeClock
	benchDeep  string // a dead-letter cursor 99,000 letters in, newest first
)

// loadBench fills a memstore with 100,000 dead letters and 10,000 live
// leases over 50 tenants, once per test binary.
func loadBench(b *testing.B) {
	benchOnce.Do(func() {
		ctx := context.Background()
		benchClock = contracttest.NewFakeClock(time.Time{})
		benchStore = memstore.New(benchClock, memstore.Settings{})
		for i := 0; i < benchDead+benchLeases; i += contract.MaxClaimBatch {
			batch := make([]contract.Item, contract.MaxClaimBatch)
			for j := range batch {
				n := i + j
				batch[j] = contract.Item{Tenant: fmt.Sprintf("tenant-%02d", n%benchTenants), ID: fmt.Sprintf("item-%06d", n),
					Payload: []byte(`{"run":"r","step":"plan"}`)}
			}
			if err := benchStore.Enqueue(ctx, batch...); err != nil {
				panic(err)
			}
		}
		cause := policy.Permanent(errors.New("tool arguments do not match the tool's schema"))
		for dead := 0; dead < benchDead; {
			leases, err := benchStore.Claim(ctx, contract.ClaimRequest{Worker: "bench", LeaseFor: time.Hour, Max: contract.MaxClaimBatch})
			if err != nil {
				panic(err)
			}
			for _, l := range leases {
				if dead == benchDead {
					break
				}
				if _, err := benchStore.Fail(ctx, l, cause); err != nil {
					panic(err)
				}
				dead++
			}
		}
		for {
			if _, err := benchStore.Claim(ctx, contract.ClaimRequest{Worker: "bench-2", LeaseFor: time.Hour, Max: contract.MaxClaimBatch}); err != nil {
				break // ErrEmpty: every remaining item is leased
			}
		}
		cursor := ""
		for range 99 {
			page, err := benchStore.DeadLetters(ctx, contract.DeadLetterQuery{Newest: true, Page: contract.PageRequest{Cursor: cursor, Limit: 1000}})
			if err != nil {
				panic(err)
			}
			cursor = page.Next
		}
		benchDeep = cursor
	})
}

// BenchmarkPages renders every page and its JSON twin at 10,000 leases and
// 100,000 dead letters. The target is under 50 ms per page.
func BenchmarkPages(b *testing.B) {
	loadBench(b)
	srv, err := New(Config{Queue: benchStore, Inspector: benchStore, State: benchStore, Backing: "memory",
		Clock: benchClock, SampleEvery: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	fillHistory(srv)
	pages := []struct{ name, path string }{
		{"overview", "/"},
		{"overview-24h", "/?range=24h"},
		{"tenants", "/tenants"},
		{"tenants-1000-turns", "/tenants?turns=1000"},
		{"limits", "/limits"},
		{"leases", "/leases"},
		{"dead", "/dead"},
		{"dead-page-1981", "/dead?page=1981&cursor=" + url.QueryEscape(pageCursor{Backing: benchDeep, Older: true}.String())},
		{"dead-filter-tenant", "/dead?tenant=tenant-07"},
		{"dead-filter-error", "/dead?error=SCHEMA"},
		{"dead-jump-middle", "/dead?jump=1000"},
		{"dead-errors", "/dead/errors"},
		{"dead-confirm-all", "/dead/confirm?action=requeue&scope=filter"},
		{"item", "/item?tenant=tenant-07&id=item-000007"},
		{"queue", "/queue"},
		{"waiting", "/waiting"},
		{"cancel-confirm-all", "/cancel/confirm?queue=default"},
		{"health", "/health"},
		{"api-overview", "/api/overview"},
		{"api-tenants", "/api/tenants"},
		{"api-limits", "/api/limits"},
		{"api-leases", "/api/leases"},
		{"api-dead", "/api/dead"},
		{"api-dead-errors", "/api/dead/errors"},
		{"api-item", "/api/item?tenant=tenant-07&id=item-000007"},
		{"api-health", "/api/health"},
		{"api-queue", "/api/queue"},
		{"api-waiting", "/api/waiting"},
		{"api-cancel-preview", "/api/cancel/preview?queue=default&state=dead"},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, p.path, nil)
			for b.Loop() {
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", p.path, rec.Code, rec.Body.String())
				}
			}
		})
	}
}

// fillHistory gives the sampler a full day of history, both rings full,
// as a dashboard that has run a while has. The store does not change, so
// the charts are flat; their cost is the same.
func fillHistory(srv *Server) {
	for range DefaultHistoryKeep {
		srv.sampler.sample(context.Background())
		benchClock.Advance(time.Minute)
	}
	for range DefaultSampleKeep {
		srv.sampler.sample(context.Background())
		benchClock.Advance(DefaultSampleEvery)
	}
}

// TestPagesAtScale checks what BenchmarkPages measures is the load it
// claims: 10,000 leases, 100,000 dead letters, and a deep page that really
// is 99,000 letters in. The times are the benchmark's to measure.
func TestPagesAtScale(t *testing.T) {
	b := &testing.B{}
	loadBench(b)
	srv, err := New(Config{Queue: benchStore, Inspector: benchStore, Clock: benchClock, SampleEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, path := range []string{"/", "/tenants", "/leases", "/dead", "/dead/errors", "/health"} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", path, rec.Code)
		}
	}
	var stats struct{ Leased, Dead int64 }
	all, err := benchStore.Tenants(context.Background(), contract.DefaultQueue)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		stats.Leased += s.Leased
		stats.Dead += s.Dead
	}
	if stats.Leased != benchLeases || stats.Dead != benchDead {
		t.Fatalf("loaded %d leases and %d dead letters, want %d and %d", stats.Leased, stats.Dead, benchLeases, benchDead)
	}
	doc := func(path string) string {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Body.String()
	}
	// The deep page really is 99,000 letters in.
	if body := doc("/dead?page=1981&cursor=" + url.QueryEscape(pageCursor{Backing: benchDeep, Older: true}.String())); !strings.Contains(body, "rows 99,001–99,050") {
		t.Error("deep page does not show rows 99,001–99,050")
	}
}

// BenchmarkScopedPages renders the pages a scope narrows as a token that
// sees every tenant, one that sees one tenant of the 50, and one that
// sees five, in the same run: the scoped rows read as ratios to the
// first. Leases and the error groups cost most under a scope: a scoped
// leases page filters the queue's pages until its own is full, and a
// summary over several tenants is one per tenant.
func BenchmarkScopedPages(b *testing.B) {
	loadBench(b)
	five := []string{"tenant-01", "tenant-02", "tenant-03", "tenant-04", "tenant-05"}
	srv, err := New(Config{Queue: benchStore, Inspector: benchStore, Backing: "memory", Clock: benchClock, SampleEvery: time.Hour,
		Tokens: []Token{
			{Name: "all", Secret: opsSecret, Access: ReadWrite},
			{Name: "one", Secret: acmeSecret, Tenants: []string{"tenant-07"}},
			{Name: "five", Secret: roSecret, Tenants: five},
		}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	fillHistory(srv)
	for _, path := range []string{"/", "/tenants", "/leases", "/dead?tenant=tenant-01", "/dead/errors", "/dead/confirm?action=requeue&scope=filter", "/api/overview"} {
		for _, sc := range []struct{ name, secret string }{{"all", opsSecret}, {"one-tenant", acmeSecret}, {"five-tenants", roSecret}} {
			if sc.name == "one-tenant" && strings.Contains(path, "tenant-01") {
				continue // outside its scope
			}
			b.Run(strings.Trim(strings.NewReplacer("/", "-", "?", "-", "=", "-", "&", "-").Replace(path), "-")+"/"+sc.name, func(b *testing.B) {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set("Authorization", "Bearer "+sc.secret)
				for b.Loop() {
					rec := httptest.NewRecorder()
					srv.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("%s as %s: %d %s", path, sc.name, rec.Code, rec.Body.String())
					}
				}
			})
		}
	}
}

// BenchmarkLifecycleChrome renders the same pages over the same store
// with and without its lifecycle controls: the header's pause check is
// the difference, read as the ratio between the two in one run.
func BenchmarkLifecycleChrome(b *testing.B) {
	loadBench(b)
	for _, v := range []struct {
		name string
		q    contract.WorkQueue
	}{{"lifecycle", benchStore}, {"none", plainQueue{benchStore}}} {
		srv, err := New(Config{Queue: v.q, Inspector: benchStore, Backing: "memory", Clock: benchClock, SampleEvery: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		for _, path := range []string{"/leases", "/item?tenant=tenant-07&id=item-000007"} {
			b.Run(v.name+path, func(b *testing.B) {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				for b.Loop() {
					rec := httptest.NewRecorder()
					srv.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("%s: %d", path, rec.Code)
					}
				}
			})
		}
		_ = srv.Close()
	}
}
