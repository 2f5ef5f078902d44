package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

func (f *fixture) deadCount() int {
	f.t.Helper()
	page, err := f.q.DeadLetters(context.Background(), contract.DeadLetterQuery{Page: contract.PageRequest{Limit: 1000}})
	f.must(err)
	return len(page.Items)
}

func (f *fixture) state(tenant, id string) contract.ItemState {
	f.t.Helper()
	info, err := f.insp.Item(context.Background(), contract.ItemKey{Tenant: tenant, Queue: "default", ID: id})
	if errors.Is(err, contract.ErrNotFound) {
		return "gone"
	}
	f.must(err)
	return info.Item.State
}

var oneLetter = url.Values{"queue": {"default"}, "tenant": {"globex"}, "id": {"poison-1"}, "scope": {"one"}}

func TestReadOnlyRefusesActions(t *testing.T) { checkReadOnlyRefusesActions(t, newFixture(t, "")) }

func checkReadOnlyRefusesActions(t *testing.T, f *fixture) {
	doc := f.page(nil, "/dead", http.StatusOK)
	if n := doc.Find(`[data-testid="requeue-one"]:disabled`).Length(); n != 3 {
		t.Errorf("%d disabled requeue buttons, want 3", n)
	}
	if !strings.Contains(testids(doc, "actions-disabled-reason").Text(), "ADK_DASHBOARD_TOKEN") {
		t.Error("disabled buttons do not say why")
	}
	for _, path := range []string{"/dead/requeue", "/dead/purge", "/api/dead/requeue", "/api/dead/purge"} {
		body, hdr := form(oneLetter)
		if resp, _ := f.do(nil, http.MethodPost, path, body, hdr); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s read-only: %d, want 403", path, resp.StatusCode)
		}
	}
	// A bearer header cannot unlock a dashboard that has no token.
	body, hdr := form(oneLetter)
	hdr["Authorization"] = "Bearer anything"
	if resp, _ := f.do(nil, http.MethodPost, "/api/dead/purge", body, hdr); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("bearer on read-only: %d, want 401", resp.StatusCode)
	}
	if f.deadCount() != 3 {
		t.Error("a refused action changed the dead letters")
	}
	body, hdr = form(url.Values{"token": {"x"}})
	if resp, _ := f.do(nil, http.MethodPost, "/login", body, hdr); resp.StatusCode != http.StatusForbidden {
		t.Errorf("login on read-only: %d", resp.StatusCode)
	}
}

func TestActionsNeedTokenAndCSRF(t *testing.T) {
	checkActionsNeedTokenAndCSRF(t, newFixture(t, testToken))
}

func checkActionsNeedTokenAndCSRF(t *testing.T, f *fixture) {

	// Not signed in: 401 and nothing changed.
	anon := f.client()
	doc := f.page(anon, "/dead", http.StatusOK)
	if doc.Find(`[data-testid="requeue-one"]:disabled`).Length() != 3 {
		t.Error("buttons enabled before sign-in")
	}
	anonCSRF, _ := testids(doc, "dead-table").Find(`input[name="csrf"]`).First().Attr("value")
	vals := url.Values{"csrf": {anonCSRF}}
	for k, v := range oneLetter {
		vals[k] = v
	}
	for _, path := range []string{"/dead/requeue", "/dead/purge", "/api/dead/purge"} {
		body, hdr := form(vals)
		if resp, _ := f.do(anon, http.MethodPost, path, body, hdr); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST %s unauthenticated: %d, want 401", path, resp.StatusCode)
		}
	}
	// A forged session cookie is a new anonymous session.
	forged := f.client()
	u, _ := url.Parse(f.http.URL)
	forged.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: strings.Repeat("a", 32) + ".1.99999999999.deadbeef"}})
	body, hdr := form(vals)
	if resp, _ := f.do(forged, http.MethodPost, "/dead/purge", body, hdr); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("forged cookie: %d, want 401", resp.StatusCode)
	}
	// Wrong token at sign-in.
	body, hdr = form(url.Values{"csrf": {anonCSRF}, "token": {"wrong"}})
	if resp, _ := f.do(anon, http.MethodPost, "/login", body, hdr); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", resp.StatusCode)
	}
	// Right token without the CSRF field.
	body, hdr = form(url.Values{"token": {testToken}})
	if resp, _ := f.do(anon, http.MethodPost, "/login", body, hdr); resp.StatusCode != http.StatusForbidden {
		t.Errorf("login without CSRF: %d, want 403", resp.StatusCode)
	}
	if f.deadCount() != 3 {
		t.Fatal("a refused action changed the dead letters")
	}

	// Signed in: the CSRF token is still required.
	c, csrf := f.signIn()
	if csrf == "" || csrf == anonCSRF {
		t.Fatalf("sign-in must rotate the CSRF token (got %q)", csrf)
	}
	for _, bad := range []string{"", anonCSRF, "x"} {
		v := url.Values{}
		for k, vv := range oneLetter {
			v[k] = vv
		}
		if bad != "" {
			v.Set("csrf", bad)
		}
		body, hdr := form(v)
		if resp, _ := f.do(c, http.MethodPost, "/dead/purge", body, hdr); resp.StatusCode != http.StatusForbidden {
			t.Errorf("signed in, csrf %q: %d, want 403", bad, resp.StatusCode)
		}
	}
	if f.deadCount() != 3 {
		t.Fatal("a refused action changed the dead letters")
	}

	// With both: requeue one letter.
	v := url.Values{"csrf": {csrf}}
	for k, vv := range oneLetter {
		v[k] = vv
	}
	body, hdr = form(v)
	resp, _ := f.do(c, http.MethodPost, "/dead/requeue", body, hdr)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/dead?") {
		t.Fatalf("requeue: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if st := f.state("globex", "poison-1"); st != contract.StateQueued {
		t.Errorf("requeued item is %s", st)
	}
	doc = f.page(c, resp.Header.Get("Location"), http.StatusOK)
	if got := testids(doc, "flash").Text(); got != "Requeued 1 dead letter." {
		t.Errorf("flash %q", got)
	}

	// Bearer scripts need no CSRF token; a wrong bearer is 401.
	body, hdr = form(url.Values{"queue": {"default"}, "tenant": {"globex"}, "id": {"poison-2"}, "scope": {"one"}})
	hdr["Authorization"] = "Bearer wrong"
	if resp, _ := f.do(nil, http.MethodPost, "/api/dead/purge", body, hdr); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong bearer: %d", resp.StatusCode)
	}
	hdr = map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"}
	resp, out := f.do(nil, http.MethodPost, "/api/dead/purge", strings.NewReader(`{"queue":"default","tenant":"globex","id":"poison-2","scope":"one"}`), hdr)
	if resp.StatusCode != http.StatusOK || !strings.Contains(out, `"count":1`) {
		t.Errorf("bearer purge: %d %s", resp.StatusCode, out)
	}
	if st := f.state("globex", "poison-2"); st != "gone" {
		t.Errorf("purged item is %s", st)
	}
}

func TestBulkActionStaysInsideFilter(t *testing.T) {
	checkBulkActionStaysInsideFilter(t, newFixture(t, testToken))
}

func checkBulkActionStaysInsideFilter(t *testing.T, f *fixture) {
	c, csrf := f.signIn()
	// Without the confirmation box nothing happens.
	body, hdr := form(url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"globex"}, "scope": {"filter"}})
	if resp, _ := f.do(c, http.MethodPost, "/dead/requeue", body, hdr); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bulk without confirm: %d", resp.StatusCode)
	}
	if f.deadCount() != 3 {
		t.Fatal("unconfirmed bulk action changed something")
	}
	body, hdr = form(url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"globex"}, "error": {"bad input"}, "scope": {"filter"}, "confirm": {"yes"}})
	resp, _ := f.do(c, http.MethodPost, "/dead/requeue", body, hdr)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("bulk requeue: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := testids(f.page(c, resp.Header.Get("Location"), http.StatusOK), "flash").Text(); got != "Requeued 2 dead letters." {
		t.Errorf("flash after the bulk requeue: %q", got)
	}
	if f.state("acme", "evil") != contract.StateDead {
		t.Error("a bulk action touched a dead letter outside its filter")
	}
	// The API takes the same filter object.
	hdr = map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"}
	resp, out := f.do(nil, http.MethodPost, "/api/dead/purge", strings.NewReader(`{"queue":"default","tenant":"nobody","scope":"filter"}`), hdr)
	if resp.StatusCode != http.StatusOK || !strings.Contains(out, `"count":0`) || f.deadCount() != 1 {
		t.Errorf("filtered purge: %d %s, %d dead left", resp.StatusCode, out, f.deadCount())
	}
	for _, bad := range []string{`{"queue":"default","scope":"one"}`, `{"queue":"default","scope":"all"}`, `{"queue":"default","scope":"filter","extra":1}`, `nope`} {
		resp, out := f.do(nil, http.MethodPost, "/api/dead/purge", strings.NewReader(bad), hdr)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("body %s: %d %s", bad, resp.StatusCode, out)
		}
	}
	if f.deadCount() != 1 {
		t.Error("a refused request changed the dead letters")
	}
}

func TestSessionCookieAttributes(t *testing.T) {
	checkSessionCookieAttributes(t, newFixture(t, testToken))
}

func checkSessionCookieAttributes(t *testing.T, f *fixture) {
	resp, _ := f.do(nil, http.MethodGet, "/", nil, nil)
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			ck = c
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie %+v", ck)
	}
	for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("missing header %s", h)
		}
	}
}

func TestLogout(t *testing.T) { checkLogout(t, newFixture(t, testToken)) }

func checkLogout(t *testing.T, f *fixture) {
	c, csrf := f.signIn()
	body, hdr := form(url.Values{"csrf": {csrf}})
	if resp, _ := f.do(c, http.MethodPost, "/logout", body, hdr); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	body, hdr = form(url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"globex"}, "id": {"poison-1"}, "scope": {"one"}})
	if resp, _ := f.do(c, http.MethodPost, "/dead/purge", body, hdr); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after logout: %d", resp.StatusCode)
	}
}

func TestXSSRendersAsText(t *testing.T) { checkXSSRendersAsText(t, newFixture(t, testToken)) }

func checkXSSRendersAsText(t *testing.T, f *fixture) {
	for _, path := range []string{"/dead?tenant=acme", "/item?tenant=acme&id=evil"} {
		resp, body := f.do(nil, http.MethodGet, path, nil, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		if strings.Contains(body, "<img") {
			t.Errorf("%s: raw <img in body", path)
		}
		if !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
			t.Errorf("%s: payload not rendered as escaped text", path)
		}
	}
	doc := f.page(nil, "/dead?tenant=acme", http.StatusOK)
	if got := testids(doc, "dead-error").Text(); got != xss {
		t.Errorf("error cell text %q", got)
	}
	if got := testids(doc, "dead-payload").Text(); got != xss {
		t.Errorf("payload cell text %q", got)
	}
	// Hostile query input is escaped too.
	resp, body := f.do(nil, http.MethodGet, "/dead?tenant="+url.QueryEscape(xss), nil, nil)
	if resp.StatusCode != 200 || strings.Contains(body, "<img") {
		t.Errorf("hostile filter: %d, raw tag present: %v", resp.StatusCode, strings.Contains(body, "<img"))
	}
	resp, body = f.do(nil, http.MethodGet, "/item?tenant="+url.QueryEscape(xss)+"&id=x", nil, nil)
	if resp.StatusCode != 404 || strings.Contains(body, "<img") {
		t.Errorf("hostile lookup: %d", resp.StatusCode)
	}
}

// failingInspector quotes the DSN in its errors, as a careless driver might.
type failingInspector struct{ contract.Inspector }

func (failingInspector) Health(context.Context) (contract.Health, error) {
	return contract.Health{}, errors.New("dial " + testDSN + ": connection refused")
}

func (failingInspector) Item(context.Context, contract.ItemKey) (contract.ItemInfo, error) {
	return contract.ItemInfo{}, errors.New("query failed for password hunter2-pw")
}

func TestDSNNeverRendered(t *testing.T) { checkDSNNeverRendered(t, newFixture(t, testToken)) }

func checkDSNNeverRendered(t *testing.T, f *fixture) {
	c, _ := f.signIn()
	paths := []string{"/", "/tenants", "/leases", "/dead", "/item?tenant=acme&id=evil", "/health", "/login",
		"/api/overview", "/api/tenants", "/api/leases", "/api/dead", "/api/item?tenant=acme&id=evil", "/api/health", "/metrics"}
	check := func(srvURL string, client *http.Client) {
		for _, p := range paths {
			resp, err := client.Get(srvURL + p)
			if err != nil {
				t.Fatal(err)
			}
			b := new(strings.Builder)
			_, _ = drainInto(b, resp)
			if strings.Contains(b.String(), "hunter2-pw") || strings.Contains(b.String(), "db.internal") {
				t.Errorf("%s leaks the DSN", p)
			}
		}
	}
	check(f.http.URL, c)

	// Errors that quote the DSN are scrubbed before display.
	srv, err := New(Config{Queue: f.q, Inspector: failingInspector{f.insp}, DSN: testDSN, Clock: f.clock, SampleEvery: 3600e9})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	check(ts.URL, ts.Client())
	resp, body := getBody(t, ts.URL+"/api/item?tenant=a&id=b")
	if resp.StatusCode != 500 || !strings.Contains(body, "[redacted]") {
		t.Errorf("item error: %d %s", resp.StatusCode, body)
	}
}

func TestAllowedHosts(t *testing.T) { checkAllowedHosts(t, newFixture(t, "")) }

func checkAllowedHosts(t *testing.T, f *fixture) {
	srv, err := New(Config{Queue: f.q, Inspector: f.insp, Clock: f.clock, SampleEvery: 3600e9, AllowedHosts: []string{"localhost", "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "evil.example:8080"
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("foreign host: %d", rec.Code)
	}
	req.Host = "127.0.0.1:8080"
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("loopback host: %d", rec.Code)
	}
}

func TestSignInIsRateLimited(t *testing.T) {
	f := newFixture(t, testToken)
	c := f.client()
	doc := f.page(c, "/login", http.StatusOK)
	csrf, _ := testids(doc, "login-form").Find(`input[name="csrf"]`).Attr("value")
	retryAfter := ""
	try := func(token string) int {
		body, hdr := form(url.Values{"csrf": {csrf}, "token": {token}})
		resp, _ := f.do(c, http.MethodPost, "/login", body, hdr)
		retryAfter = resp.Header.Get("Retry-After")
		return resp.StatusCode
	}
	for i := range maxFailures {
		if code := try("guess"); code != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", i, code)
		}
	}
	if code := try(testToken); code != http.StatusTooManyRequests || retryAfter != "60" {
		t.Errorf("after %d failures even the right token should wait: %d, Retry-After %q (want 60)", maxFailures, code, retryAfter)
	}
	f.clock.Advance(time.Minute)
	if code := try(testToken); code != http.StatusSeeOther {
		t.Errorf("a minute later: %d", code)
	}
}
