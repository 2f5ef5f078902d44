package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
)

const (
	acmeRWSecret  = "acme-RW-0123456789abcdefghijklmnopq"
	acmeROSecret  = "acme-RO-0123456789abcdefghijklmnopq"
	otherQSecret  = "other-Q-0123456789abcdefghijklmnopq"
	acmeGlxSecret = "acme-GX-0123456789abcdefghijklmnopq"
)

// scopedTokens are the tokens of the scope table: every kind of scope.
var scopedTokens = []Token{
	{Name: "ro-all", Secret: roSecret},
	{Name: "acme-rw", Secret: acmeRWSecret, Access: ReadWrite, Tenants: []string{"acme"}},
	{Name: "acme-ro", Secret: acmeROSecret, Tenants: []string{"acme"}},
	{Name: "other-queue", Secret: otherQSecret, Access: ReadWrite, Queues: []string{"other"}},
	{Name: "acme-globex", Secret: acmeGlxSecret, Access: ReadWrite, Tenants: []string{"acme", "globex"}},
}

func newScopedFixture(t *testing.T) *fixture {
	t.Helper()
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{Policy: fixturePolicy})
	f := newFixtureOn(t, testToken, clock, "memory", store, store, store, func(c *Config) { c.Tokens = scopedTokens })
	f.store = store
	// A queue of its own for a fourth tenant, which no scoped token sees.
	f.must(store.Enqueue(context.Background(), contract.Item{Tenant: "initech", Queue: "billing", ID: "inv-1"}))
	return f
}

// Outcomes of the table.
const (
	ok        = http.StatusOK
	toLogin   = http.StatusSeeOther
	unauthed  = http.StatusUnauthorized
	forbidden = http.StatusForbidden
)

// TestScopesTable runs every route as every kind of token: what each may
// see (pages, /api/ twins, /metrics) and do (requeue and purge, one
// letter, a filter, a selection), and that a refused action changes
// nothing. A tenant-scoped token's 200s hold none of another tenant's
// names.
func TestScopesTable(t *testing.T) {
	reads := []string{
		"/", "/api/overview", "/tenants", "/api/tenants", "/fairness", "/api/fairness",
		"/leases", "/api/leases", "/dead", "/api/dead", "/dead/errors", "/api/dead/errors",
		"/dead/confirm?action=purge&scope=filter", "/api/dead/preview?action=purge&scope=filter",
		"/item?tenant=acme&id=evil", "/api/item?tenant=acme&id=evil", "/health", "/api/health",
		"/limits", "/api/limits", "/limits?tenant=acme", "/api/limits?tenant=acme", "/queue", "/api/queue", "/api/shards",
	}
	foreign := []string{
		"/dead?tenant=globex", "/api/dead?tenant=globex", "/api/dead/errors?tenant=globex",
		"/item?tenant=globex&id=poison-1", "/api/item?tenant=globex&id=poison-1",
		"/api/dead/preview?action=purge&scope=selection&pick=" + url.QueryEscape(pickValue("globex", "poison-1")),
		"/limits?tenant=globex", "/api/limits?tenant=globex",
	}
	otherQueue := []string{"/api/tenants?queue=other", "/api/dead?queue=other&tenant=acme"}
	type action struct {
		name, path, body string
		touches          []string // the letters it moves when allowed (tenant/id)
		form             bool     // a page's form (a bearer request needs no CSRF token); 303 when done
	}
	actions := []action{
		{"one acme letter", "/api/dead/requeue", `{"queue":"default","tenant":"acme","id":"evil","scope":"one"}`, []string{"acme/evil"}, false},
		{"one globex letter", "/api/dead/purge", `{"queue":"default","tenant":"globex","id":"poison-1","scope":"one"}`, []string{"globex/poison-1"}, false},
		{"the globex filter", "/api/dead/purge", `{"queue":"default","tenant":"globex","scope":"filter"}`, []string{"globex/poison-1", "globex/poison-2"}, false},
		{"a selection reaching globex", "/api/dead/purge", `{"queue":"default","scope":"selection","items":[{"tenant":"acme","id":"evil"},{"tenant":"globex","id":"poison-2"}]}`, []string{"acme/evil", "globex/poison-2"}, false},
		{"the other queue", "/api/dead/purge", `{"queue":"other","scope":"filter"}`, nil, false},
		{"one acme letter by the page", "/dead/purge", "queue=default&tenant=acme&id=evil&scope=one", []string{"acme/evil"}, true},
		{"the globex filter by the page", "/dead/requeue", "queue=default&tenant=globex&scope=filter&confirm=yes", []string{"globex/poison-1", "globex/poison-2"}, true},
	}
	// A filter naming no tenant is allowed to every read-write token and
	// touches only its scope's letters.
	unfiltered := action{"every letter of the queue", "/api/dead/purge", `{"queue":"default","scope":"filter"}`, nil, false}

	type row struct {
		name    string
		secret  string
		read    int // reads of the default queue
		foreign int // reads naming globex
		other   int // reads of the queue "other"
		metrics int
		acts    map[string]int // action name → status
		all     []string       // letters the unfiltered purge removes
		sees    []string       // tenants its pages may name
	}
	allActs := func(code int) map[string]int {
		m := map[string]int{}
		for _, a := range actions {
			m[a.name] = code
		}
		m[unfiltered.name] = code
		return m
	}
	rows := []row{
		{name: "anonymous", read: toLogin, foreign: toLogin, other: unauthed, metrics: unauthed, acts: allActs(unauthed)},
		{name: "admin", secret: testToken, read: ok, foreign: ok, other: ok, metrics: ok, acts: allActs(ok),
			all: []string{"acme/evil", "globex/poison-1", "globex/poison-2"}},
		{name: "ro-all", secret: roSecret, read: ok, foreign: ok, other: ok, metrics: ok, acts: allActs(forbidden)},
		{name: "acme-ro", secret: acmeROSecret, read: ok, foreign: forbidden, other: ok, metrics: forbidden, acts: allActs(forbidden), sees: []string{"acme"}},
		{name: "acme-rw", secret: acmeRWSecret, read: ok, foreign: forbidden, other: ok, metrics: forbidden, sees: []string{"acme"},
			acts: map[string]int{"one acme letter": ok, "one globex letter": forbidden, "the globex filter": forbidden,
				"a selection reaching globex": forbidden, "the other queue": ok, unfiltered.name: ok,
				"one acme letter by the page": ok, "the globex filter by the page": forbidden},
			all: []string{"acme/evil"}},
		{name: "acme-globex", secret: acmeGlxSecret, read: ok, foreign: ok, other: ok, metrics: forbidden, sees: []string{"acme", "globex"},
			acts: allActs(ok), all: []string{"acme/evil", "globex/poison-1", "globex/poison-2"}},
		// A queue-scoped token sees every tenant of its queue ("other",
		// which it is shown by default), and nothing of "default".
		{name: "other-queue", secret: otherQSecret, read: ok, foreign: ok, other: ok, metrics: forbidden, sees: []string{"acme", "globex"},
			acts: map[string]int{"one acme letter": forbidden, "one globex letter": forbidden, "the globex filter": forbidden,
				"a selection reaching globex": forbidden, "the other queue": ok, unfiltered.name: forbidden,
				"one acme letter by the page": forbidden, "the globex filter by the page": forbidden}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			f := newScopedFixture(t)
			hdr := map[string]string{}
			if r.secret != "" {
				hdr["Authorization"] = "Bearer " + r.secret
			}
			get := func(path string) (int, string) {
				resp, body := f.do(nil, http.MethodGet, path, nil, hdr)
				return resp.StatusCode, body
			}
			check := func(path string, want int) {
				t.Helper()
				code, body := get(path)
				if code != want {
					t.Errorf("GET %s: %d, want %d\n%.300s", path, code, want, body)
					return
				}
				if code == ok && r.sees != nil {
					for _, name := range []string{"acme", "globex", "noisy", "poison", "n-0", "initech", "inv-1"} {
						if !slices.Contains(r.sees, name) && !(name == "poison" && slices.Contains(r.sees, "globex")) && strings.Contains(body, name) {
							t.Errorf("GET %s as %s shows %q", path, r.name, name)
						}
					}
				}
				if code == forbidden && strings.Contains(body, "globex") && !slices.Contains(r.sees, "globex") {
					t.Errorf("GET %s: the refusal names the tenant asked for: %s", path, body)
				}
			}
			// A visitor without a token is sent to sign in from a page,
			// and answered 401 under /api/.
			want := func(p string, code int) int {
				if code == toLogin && strings.HasPrefix(p, "/api/") {
					return unauthed
				}
				return code
			}
			for _, p := range reads {
				code := r.read
				if r.name == "other-queue" && strings.Contains(p, "/item?") {
					code = forbidden // the item lookup names the queue "default"
				}
				check(p, want(p, code))
			}
			for _, p := range foreign {
				code := r.foreign
				if r.name == "other-queue" && strings.Contains(p, "/item?") {
					code = forbidden
				}
				check(p, want(p, code))
			}
			for _, p := range otherQueue {
				want := r.other
				if r.name == "anonymous" {
					want = unauthed
				}
				check(p, want)
			}
			// The audit trail is for read-write tokens; sign-in and the
			// probe answer everyone.
			audit := map[string]int{"anonymous": toLogin, "admin": ok, "ro-all": forbidden, "acme-ro": forbidden,
				"acme-rw": ok, "acme-globex": ok, "other-queue": ok}[r.name]
			check("/audit", audit)
			check("/api/audit", want("/api/audit", audit))
			check("/login", ok)
			if r.name == "anonymous" {
				// Not even a queue's name before signing in.
				if _, body := get("/login"); strings.Contains(body, "billing") {
					t.Error("the sign-in page lists the queues to a visitor")
				}
			}
			check("/healthz", ok)
			if resp, _ := f.do(nil, http.MethodGet, "/metrics", nil, hdr); resp.StatusCode != r.metrics {
				t.Errorf("/metrics: %d, want %d", resp.StatusCode, r.metrics)
			}
			for _, a := range append(slices.Clone(actions), unfiltered) {
				want := r.acts[a.name]
				before := f.deadLetters()
				h := map[string]string{"Content-Type": "application/json"}
				if a.form {
					h["Content-Type"] = "application/x-www-form-urlencoded"
				}
				for k, v := range hdr {
					h[k] = v
				}
				resp, body := f.do(nil, http.MethodPost, a.path, strings.NewReader(a.body), h)
				if a.form && want == ok {
					want = http.StatusSeeOther
				}
				if resp.StatusCode != want {
					t.Errorf("%s: %d, want %d\n%s", a.name, resp.StatusCode, want, body)
				}
				after := f.deadLetters()
				if want != ok && want != http.StatusSeeOther {
					if !slices.Equal(before, after) {
						t.Errorf("%s was refused but changed the dead letters: %v → %v", a.name, before, after)
					}
					continue
				}
				gone := slices.DeleteFunc(slices.Clone(before), func(l string) bool { return slices.Contains(after, l) })
				wantGone := a.touches
				if a.name == unfiltered.name {
					wantGone = r.all
				}
				wantGone = slices.DeleteFunc(slices.Clone(wantGone), func(l string) bool { return !slices.Contains(before, l) })
				slices.Sort(gone)
				slices.Sort(wantGone)
				if !slices.Equal(gone, wantGone) {
					t.Errorf("%s moved %v, want %v", a.name, gone, wantGone)
				}
			}
		})
	}
}

// deadLetters lists every dead letter as tenant/id, in order.
func (f *fixture) deadLetters() []string {
	f.t.Helper()
	var out []string
	for _, q := range []string{"default", "other"} {
		page, err := f.q.DeadLetters(context.Background(), contract.DeadLetterQuery{DeadLetterFilter: contract.DeadLetterFilter{Queue: q}, Page: contract.PageRequest{Limit: 1000}})
		f.must(err)
		for _, it := range page.Items {
			out = append(out, it.Tenant+"/"+it.ID)
		}
	}
	slices.Sort(out)
	return out
}

// TestScopedCountsAreTheScopesOwn: the totals of a tenant-scoped token
// add up its tenants only, on every twin that sums.
func TestScopedCountsAreTheScopesOwn(t *testing.T) {
	f := newScopedFixture(t)
	stats, err := f.insp.Tenants(context.Background(), "default")
	f.must(err)
	var acme contract.TenantStats
	for _, st := range stats {
		if st.Tenant == "acme" {
			acme = st
		}
	}
	c := f.client()
	hdr := bearer(acmeROSecret)
	apiAs := func(path string, into any) {
		t.Helper()
		resp, body := f.do(c, http.MethodGet, path, nil, hdr)
		if resp.StatusCode != ok {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		if err := json.Unmarshal([]byte(body), into); err != nil {
			t.Fatal(err)
		}
	}
	var ov struct {
		Queues []struct {
			Queue                              string
			Tenants                            int
			Ready, Later, Leased, Dead, Served int64
		}
	}
	apiAs("/api/overview", &ov)
	// Queue names are shown to a token whose queue scope holds them; the
	// counts are its tenants' (none in billing).
	if len(ov.Queues) != 2 || ov.Queues[0].Queue != "billing" || ov.Queues[0].Tenants != 0 || ov.Queues[0].Ready != 0 {
		t.Fatalf("overview queues %+v", ov.Queues)
	}
	if q := ov.Queues[1]; q.Tenants != 1 || q.Ready != acme.Ready || q.Later != acme.Later || q.Leased != acme.Leased || q.Dead != acme.Dead || q.Served != acme.Served {
		t.Errorf("overview totals %+v, want acme's own %+v", q, acme)
	}
	var dead struct {
		Total      int64 `json:"total"`
		QueueTotal int64 `json:"queue_total"`
	}
	apiAs("/api/dead", &dead)
	if dead.Total != acme.Dead || dead.QueueTotal != acme.Dead {
		t.Errorf("dead totals %+v, want %d", dead, acme.Dead)
	}
	var errs struct {
		Total int64 `json:"total"`
	}
	apiAs("/api/dead/errors", &errs)
	if errs.Total != acme.Dead {
		t.Errorf("errors total %d, want %d", errs.Total, acme.Dead)
	}
	var leases struct {
		Leased int64 `json:"leased_total"`
		Rows   []struct {
			Tenant string `json:"tenant"`
		} `json:"leases"`
	}
	apiAs("/api/leases", &leases)
	if leases.Leased != acme.Leased || len(leases.Rows) != int(acme.Leased) {
		t.Errorf("leases %+v, want acme's %d", leases, acme.Leased)
	}
	var health struct {
		Partial string `json:"partial"`
		Checks  []struct {
			Value string `json:"value"`
			Fix   string `json:"fix"`
		} `json:"checks"`
		Details []struct {
			Key string `json:"key"`
		} `json:"details"`
	}
	apiAs("/api/health", &health)
	if health.Partial == "" || len(health.Details) != 1 || health.Details[0].Key != "dashboard mode" {
		t.Errorf("health for a tenant scope: %+v", health)
	}
	for _, ck := range health.Checks {
		if ck.Value != "—" && !strings.HasPrefix(ck.Value, "last sample") && ck.Value != "no sample yet" {
			t.Errorf("health shows the value %q to a tenant scope", ck.Value)
		}
	}
	// Two tenants: the sums add both, and nothing of the third.
	var two struct {
		Queues []struct{ Dead, Ready int64 }
	}
	resp, body := f.do(nil, http.MethodGet, "/api/overview", nil, bearer(acmeGlxSecret))
	if resp.StatusCode != ok || json.Unmarshal([]byte(body), &two) != nil || len(two.Queues) != 2 {
		t.Fatalf("overview as acme-globex: %d %s", resp.StatusCode, body)
	}
	two.Queues = two.Queues[1:]
	var want struct{ dead, ready int64 }
	for _, st := range stats {
		if st.Tenant != "noisy" {
			want.dead += st.Dead
			want.ready += st.Ready
		}
	}
	if two.Queues[0].Dead != want.dead || two.Queues[0].Ready != want.ready {
		t.Errorf("acme-globex totals %+v, want %+v", two.Queues[0], want)
	}
}

// TestScopedCharts: the sampler keeps each tenant scope's own sums, and
// a scoped token's charts draw those.
func TestScopedCharts(t *testing.T) {
	f := newScopedFixture(t)
	f.srv.sampler.sample(context.Background())
	sc := scopeOfToken(&scopedTokens[2]) // acme-ro
	w := f.srv.sampler.windowOf(time.Hour, sc)
	if len(w) == 0 {
		t.Fatal("no snapshot")
	}
	q := w[len(w)-1].Queues["default"]
	if len(q.Tenants) != 1 || q.Tenants[0].Tenant != "acme" {
		t.Errorf("scoped snapshot tenants %+v", q.Tenants)
	}
	all := f.srv.sampler.windowOf(time.Hour, everything)[len(w)-1].Queues["default"]
	if q.Dead != 1 || all.Dead != 3 {
		t.Errorf("acme's snapshot counts %d dead, everyone's %d; want 1 and 3", q.Dead, all.Dead)
	}
	resp, body := f.do(nil, http.MethodGet, "/api/overview", nil, bearer(acmeROSecret))
	if resp.StatusCode != ok || strings.Contains(body, "globex") || strings.Contains(body, "noisy") {
		t.Errorf("scoped overview charts: %d, other tenants shown: %v", resp.StatusCode, strings.Contains(body, "globex"))
	}
}
