package dashboard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard/internal/view"
	"github.com/adkit/adk/modules/policy"
)

// Unknown paths and wrong methods get the router's answer, 404 and 405,
// whoever asks: not the sign-in check's 401 or 403.
func TestUnknownRoutesAndMethods(t *testing.T) {
	for _, token := range []string{"", testToken} {
		f := newFixture(t, token)
		clients := map[string]*httpClient{"anonymous": {c: f.client()}}
		if token != "" {
			c, _ := f.signIn()
			clients["signed in"] = &httpClient{c: c}
			clients["bearer"] = &httpClient{c: f.client(), hdr: map[string]string{"Authorization": "Bearer " + testToken}}
		}
		for who, c := range clients {
			for _, tc := range []struct {
				method, path string
				want         int
			}{
				{http.MethodGet, "/nosuch", http.StatusNotFound},
				{http.MethodPost, "/nosuch", http.StatusNotFound},
				{http.MethodGet, "/api/nosuch", http.StatusNotFound},
				{http.MethodGet, "/dead/nosuch", http.StatusNotFound},
				{http.MethodPost, "/api/overview", http.StatusMethodNotAllowed},
				{http.MethodDelete, "/dead", http.StatusMethodNotAllowed},
				{http.MethodGet, "/dead/requeue", http.StatusMethodNotAllowed},
			} {
				resp, body := f.do(c.c, tc.method, tc.path, nil, c.headers())
				if resp.StatusCode != tc.want {
					t.Errorf("token %v, %s: %s %s = %d, want %d\n%s", token != "", who, tc.method, tc.path, resp.StatusCode, tc.want, body)
				}
				if tc.want == http.StatusMethodNotAllowed && resp.Header.Get("Allow") == "" {
					t.Errorf("%s %s: 405 without an Allow header", tc.method, tc.path)
				}
			}
		}
	}
}

type httpClient struct {
	c   *http.Client
	hdr map[string]string
}

func (h *httpClient) headers() map[string]string {
	out := map[string]string{}
	for k, v := range h.hdr {
		out[k] = v
	}
	return out
}

// HEAD is answered wherever GET is, with the GET's status and no body, so
// uptime checks that send HEAD see the dashboard up.
func TestHeadIsAnswered(t *testing.T) {
	f := newFixture(t, testToken)
	for _, path := range []string{"/healthz", "/", "/tenants", "/leases", "/dead", "/item", "/health", "/login",
		"/api/overview", "/api/health", "/metrics", "/static/style.css"} {
		resp, body := f.do(nil, http.MethodHead, path, nil, nil)
		if resp.StatusCode != http.StatusOK || body != "" {
			t.Errorf("HEAD %s: %d with %d body bytes; want 200 and none", path, resp.StatusCode, len(body))
		}
	}
	if resp, _ := f.do(nil, http.MethodHead, "/nosuch", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("HEAD /nosuch: %d", resp.StatusCode)
	}
}

// The result banner after an action comes from a signed cookie of the
// session that acted; a link cannot make the page announce an action.
func TestFlashCannotBeForged(t *testing.T) {
	f := newFixture(t, testToken)
	for _, path := range []string{"/dead?done=purge&count=424242", "/dead?done=requeue&count=1", "/item?done=purge&count=7"} {
		if doc := f.page(nil, path, http.StatusOK); testids(doc, "flash").Length() != 0 {
			t.Errorf("%s shows %q", path, testids(doc, "flash").Text())
		}
	}
	c, csrf := f.signIn()
	v := url.Values{"csrf": {csrf}}
	for k, vv := range oneLetter {
		v[k] = vv
	}
	body, hdr := form(v)
	resp, _ := f.do(c, http.MethodPost, "/dead/purge", body, hdr)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("purge: %d", resp.StatusCode)
	}
	u, _ := url.Parse(f.http.URL)
	var stolen *http.Cookie
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == flashCookie {
			stolen = ck
		}
	}
	if stolen == nil {
		t.Fatal("the action set no flash cookie")
	}
	// The flash cookie of one session means nothing in another.
	other := f.client()
	f.page(other, "/dead", http.StatusOK) // starts a session
	other.Jar.SetCookies(u, []*http.Cookie{{Name: flashCookie, Value: stolen.Value, Path: "/"}})
	if doc := f.page(other, "/dead", http.StatusOK); testids(doc, "flash").Length() != 0 {
		t.Errorf("another session shows the flash %q", testids(doc, "flash").Text())
	}
	forged := strings.Replace(stolen.Value, "purge.1.", "purge.424242.", 1)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: flashCookie, Value: forged, Path: "/"}})
	if doc := f.page(c, "/dead", http.StatusOK); testids(doc, "flash").Length() != 0 {
		t.Errorf("a forged count shows %q", testids(doc, "flash").Text())
	}
	// The genuine one shows once.
	c.Jar.SetCookies(u, []*http.Cookie{{Name: flashCookie, Value: stolen.Value, Path: "/"}})
	if got := testids(f.page(c, "/dead", http.StatusOK), "flash").Text(); got != "Purged 1 dead letter." {
		t.Errorf("genuine flash %q", got)
	}
	if doc := f.page(c, "/dead", http.StatusOK); testids(doc, "flash").Length() != 0 {
		t.Error("the flash showed twice")
	}
}

// A lookup without a tenant (or id) keeps the form and says what is
// missing, as a 400.
func TestItemLookupKeepsTheForm(t *testing.T) {
	f := newFixture(t, "")
	for _, path := range []string{"/item?id=poison-1", "/item?tenant=globex", "/item?tenant=globex&id=%00x"} {
		doc := f.page(nil, path, http.StatusBadRequest)
		if testids(doc, "item-form").Length() != 1 {
			t.Errorf("%s: the form is gone", path)
		}
		if testids(doc, "item-problem").Text() == "" {
			t.Errorf("%s: no reason shown", path)
		}
	}
	doc := f.page(nil, "/item?id=poison-1", http.StatusBadRequest)
	if v, _ := testids(doc, "item-id").Attr("value"); v != "poison-1" {
		t.Errorf("the id field lost its value: %q", v)
	}
	if !strings.Contains(testids(doc, "item-problem").Text(), "tenant") {
		t.Errorf("reason %q does not name the tenant", testids(doc, "item-problem").Text())
	}
	var api struct {
		Error string `json:"error"`
	}
	f.api(nil, "/api/item?id=poison-1", http.StatusBadRequest, &api)
	if !strings.Contains(api.Error, "tenant") {
		t.Errorf("api error %q", api.Error)
	}
}

// Fencing tokens are identifiers: printed whole, without separators.
func TestTokensHaveNoSeparators(t *testing.T) {
	f := newFixture(t, "")
	ctx := context.Background()
	leases, err := f.q.Claim(ctx, contract.ClaimRequest{Worker: "hb", LeaseFor: time.Minute, Max: 1})
	f.must(err)
	l := leases[0]
	for l.Token < 12345 {
		if l, err = f.q.Heartbeat(ctx, l, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	want := l.Token
	doc := f.page(nil, "/leases", http.StatusOK)
	if !strings.Contains(doc.Find("table").Text(), itoa64(want)) || strings.Contains(doc.Find("table").Text(), view.Num(want)) {
		t.Errorf("leases page does not print token %d whole", want)
	}
	doc = f.page(nil, "/item?tenant="+url.QueryEscape(l.Item.Tenant)+"&id="+url.QueryEscape(l.Item.ID), http.StatusOK)
	if lease := testids(doc, "item-lease").Text(); !strings.Contains(lease, "token "+itoa64(want)) {
		t.Errorf("item page lease line %q", lease)
	}
}

// Counts read as English: "1 turn", "2 turns", never "turn(s)".
func TestCountsArePlural(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{})
	ctx := context.Background()
	if err := store.Enqueue(ctx, contract.Item{Tenant: "one", ID: "a"}, contract.Item{Tenant: "two", ID: "a"}, contract.Item{Tenant: "two", ID: "b"}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := store.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1}); err != nil {
			t.Fatal(err)
		}
	}
	srv := newTestServer(t, Config{Queue: store, Inspector: store, Clock: clock})
	doc := srv.page(t, "/tenants", http.StatusOK)
	got := map[string]string{}
	testids(doc, "lane").Each(func(_ int, s *goquery.Selection) {
		got[s.Find("bdi").Text()] = s.Find(`[data-testid="lane-turns"]`).Text()
	})
	if got["one"] != "1 turn" || got["two"] != "2 turns" {
		t.Errorf("lane counts %v", got)
	}
	if body := srv.body(t, "/tenants"); strings.Contains(body, "(s)") {
		t.Error("the tenants page still says (s)")
	}
}

// unreachableInspector fails as a backing does once its server has gone.
type unreachableInspector struct {
	contract.Inspector
	err error
}

func (u unreachableInspector) Tenants(context.Context, string) ([]contract.TenantStats, error) {
	return nil, u.err
}

func (u unreachableInspector) Health(context.Context) (contract.Health, error) {
	return contract.Health{}, u.err
}

// A backing that dropped its connections is the server being away: 503
// with Retry-After, not a 500 that reads as a dashboard bug.
func TestUnreachableBackingIs503(t *testing.T) {
	store := memstore.New(nil, memstore.Settings{})
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for name, err := range map[string]error{
		"queue unavailable": &contract.QueueUnavailableError{Err: errors.New("connection reset by peer")},
		"refused":           refused,
		"wrapped refused":   errors.Join(errors.New("inspect tenants"), refused),
	} {
		srv := newTestServer(t, Config{Queue: store, Inspector: unreachableInspector{store, err}})
		for _, path := range []string{"/tenants", "/api/tenants"} {
			rec := srv.get(t, path)
			if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
				t.Errorf("%s: %s = %d (Retry-After %q), want 503 with Retry-After", name, path, rec.Code, rec.Header().Get("Retry-After"))
			}
		}
	}
	// Other failures stay 500s.
	srv := newTestServer(t, Config{Queue: store, Inspector: unreachableInspector{store, errors.New("syntax error at or near")}})
	if rec := srv.get(t, "/tenants"); rec.Code != http.StatusInternalServerError {
		t.Errorf("a plain failure: %d, want 500", rec.Code)
	}
}

// An error page never refreshes itself: live refresh would fetch the
// failed address again every few seconds, a failed POST's included.
func TestErrorPagesDoNotRefresh(t *testing.T) {
	f := newFixture(t, testToken)
	check := func(what string, body string) {
		t.Helper()
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		f.must(err)
		if testids(doc, "error-page").Length() != 1 {
			t.Fatalf("%s: not an error page:\n%s", what, body)
		}
		if r, _ := doc.Find("main#live").Attr("data-refresh"); r != "0" {
			t.Errorf("%s: data-refresh=%q, want 0", what, r)
		}
		if doc.Find(`meta[http-equiv="refresh"]`).Length() != 0 {
			t.Errorf("%s: has a meta refresh", what)
		}
	}
	_, body := f.do(nil, http.MethodGet, "/nosuch", nil, nil)
	check("404", body)
	_, body = f.do(nil, http.MethodGet, "/dead?tenant=%00", nil, nil)
	check("400", body)
	c, _ := f.signIn()
	b, hdr := form(oneLetter) // no CSRF token
	_, body = f.do(c, http.MethodPost, "/dead/requeue", b, hdr)
	check("failed POST", body)
}

// Requeue on the item page comes back to the item, now queued.
func TestItemRequeueReturnsToTheItem(t *testing.T) {
	f := newFixture(t, testToken)
	c, _ := f.signIn()
	doc := f.page(c, "/item?tenant=globex&id=poison-1", http.StatusOK)
	fields := url.Values{}
	doc.Find(`form:has([data-testid="item-requeue"]) input`).Each(func(_ int, s *goquery.Selection) {
		n, _ := s.Attr("name")
		v, _ := s.Attr("value")
		fields.Set(n, v)
	})
	body, hdr := form(fields)
	resp, _ := f.do(c, http.MethodPost, "/dead/requeue", body, hdr)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/item?") {
		t.Fatalf("requeue from the item page: %d to %q, want a redirect to /item", resp.StatusCode, loc)
	}
	doc = f.page(c, loc, http.StatusOK)
	if st := testids(doc, "item-state").Text(); st != "queued" {
		t.Errorf("item state after requeue %q", st)
	}
	if got := testids(doc, "flash").Text(); got != "Requeued 1 dead letter." {
		t.Errorf("flash %q", got)
	}
}

func TestBadCursorsAre400(t *testing.T) { checkBadCursorsAre400(t, newFixture(t, "")) }

// A cursor the dashboard did not hand out is a 400 naming the cursor, the
// same on every backing (on Redis "abc" parses as a base-36 position).
func checkBadCursorsAre400(t *testing.T, f *fixture) {
	for _, path := range []string{"/dead", "/leases", "/api/dead", "/api/leases"} {
		for _, cur := range []string{"abc", "-1", "0", "n.x", pageCursor{Backing: "5"}.String() + "0"} {
			resp, body := f.do(nil, http.MethodGet, path+"?cursor="+url.QueryEscape(cur), nil, nil)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "cursor") {
				t.Errorf("%s?cursor=%s: %d, want 400 naming the cursor\n%.300s", path, cur, resp.StatusCode, body)
			}
		}
	}
}

// Bidi controls in a name are shown as code points, and every name is
// isolated, so "rtl\u202Eevil.exe" never draws as "rtlexe.live".
func TestBidiControlsAreVisible(t *testing.T) { checkBidiControlsAreVisible(t, newFixture(t, "")) }

func checkBidiControlsAreVisible(t *testing.T, f *fixture) {
	const tenant, id = "rtl\u202Eevil.exe", "id\u2067x\u2069"
	ctx := context.Background()
	f.must(f.q.Enqueue(ctx, contract.Item{Tenant: tenant, ID: id}, contract.Item{Tenant: tenant, ID: "dies"}))
	leases, err := f.q.Claim(ctx, contract.ClaimRequest{Worker: "w\u202E", LeaseFor: time.Hour, Max: 100})
	f.must(err)
	for _, l := range leases {
		if l.Item.Tenant == tenant && l.Item.ID == "dies" {
			_, err := f.q.Fail(ctx, l, policy.Permanent(errors.New("bad \u202Eerror")))
			f.must(err)
		}
	}
	for _, path := range []string{"/tenants", "/dead?tenant=" + url.QueryEscape(tenant), "/leases",
		"/item?tenant=" + url.QueryEscape(tenant) + "&id=" + url.QueryEscape(id)} {
		resp, body := f.do(nil, http.MethodGet, path, nil, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		f.must(err)
		// Form fields keep the name as typed; only displayed text is at issue.
		doc.Find("input, option, select, form").Remove()
		text, _ := doc.Find("main").Html()
		for _, r := range []rune{'\u202E', '\u2067', '\u2069'} {
			if strings.ContainsRune(text, r) {
				t.Errorf("%s shows a raw U+%04X", path, r)
			}
		}
		if !strings.Contains(doc.Find("main").Text(), "rtl‹U+202E›evil.exe") {
			t.Errorf("%s does not show the tenant as rtl‹U+202E›evil.exe", path)
		}
		if doc.Find(`bdi:contains("rtl‹U+202E›evil.exe")`).Length() == 0 {
			t.Errorf("%s does not isolate the tenant name", path)
		}
	}
}
