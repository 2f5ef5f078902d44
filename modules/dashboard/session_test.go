package dashboard

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

func (f *fixture) signedInAs(c *http.Client, hdr map[string]string) string {
	f.t.Helper()
	_, body := f.do(c, http.MethodGet, "/dead", nil, hdr)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	f.must(err)
	return strings.Join(strings.Fields(testids(doc, "signed-in-as").Text()), " ")
}

// TestIdleSessionEnds: a session lives while it is used, a page's own
// live refresh does not keep it alive, and past the idle limit it ends:
// the next page says so once, and actions are 401.
func TestIdleSessionEnds(t *testing.T) {
	f := newFixture(t, testToken)
	c, csrf := f.signIn()
	step := DefaultSessionIdle - time.Minute
	for range 3 {
		f.clock.Advance(step)
		if got := f.signedInAs(c, nil); got != AdminTokenName {
			t.Fatalf("after %s of use: signed in as %q", step, got)
		}
	}
	live := map[string]string{"X-Live-Refresh": "1"}
	f.clock.Advance(step)
	f.signedInAs(c, live) // a live refresh, not activity
	f.clock.Advance(2 * time.Minute)
	_, body := f.do(c, http.MethodGet, "/dead", nil, nil)
	if !strings.Contains(body, "Your session has ended") || strings.Contains(body, `data-testid="signed-in-as"`) {
		t.Errorf("an idle session still signed in, or not told why")
	}
	if got := f.signedInAs(c, nil); got != "" {
		t.Errorf("after the message: signed in as %q", got)
	}
	body2, hdr := form(url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"globex"}, "id": {"poison-1"}, "scope": {"one"}})
	if resp, _ := f.do(c, http.MethodPost, "/dead/purge", body2, hdr); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an action from an ended session: %d, want 401", resp.StatusCode)
	}
	if f.deadCount() != 3 {
		t.Error("an ended session changed the dead letters")
	}
}

// TestSignOutEndsTheSessionForGood: a copy of the cookie taken before
// signing out is worthless after it.
func TestSignOutEndsTheSessionForGood(t *testing.T) {
	f := newFixture(t, testToken)
	c, csrf := f.signIn()
	u, _ := url.Parse(f.http.URL)
	stolen := c.Jar.Cookies(u)
	body, hdr := form(url.Values{"csrf": {csrf}})
	if resp, _ := f.do(c, http.MethodPost, "/logout", body, hdr); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out: %d", resp.StatusCode)
	}
	thief := f.client()
	thief.Jar.SetCookies(u, stolen)
	if got := f.signedInAs(thief, nil); got != "" {
		t.Errorf("the copied cookie is still signed in as %q", got)
	}
	body, hdr = form(url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"globex"}, "id": {"poison-1"}, "scope": {"one"}})
	if resp, _ := f.do(thief, http.MethodPost, "/dead/purge", body, hdr); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an action with the copied cookie: %d, want 401", resp.StatusCode)
	}
}

// TestRestartSignsEveryoneOut: a new process draws a new signing key
// and holds no session, so a cookie from before is a visitor's.
func TestRestartSignsEveryoneOut(t *testing.T) {
	f := newFixture(t, testToken)
	c, _ := f.signIn()
	u, _ := url.Parse(f.http.URL)
	old := c.Jar.Cookies(u)
	restarted := newTestServer(t, Config{Queue: f.q, Inspector: f.insp, Clock: f.clock, Token: testToken})
	req := httptest.NewRequest(http.MethodGet, "/dead", nil)
	for _, ck := range old {
		req.AddCookie(ck)
	}
	rec := httptest.NewRecorder()
	restarted.srv.ServeHTTP(rec, req)
	if strings.Contains(rec.Body.String(), `data-testid="signed-in-as"`) {
		t.Error("a cookie from before the restart is still signed in")
	}
}

// TestNothingSecretInURLs: no link, script, stylesheet, GET form or
// redirect carries a CSRF token or a secret, and a secret given in a
// URL signs nobody in.
func TestNothingSecretInURLs(t *testing.T) {
	f := newScopedFixture(t)
	c, csrf := f.signIn()
	secrets := []string{testToken, roSecret, acmeRWSecret, csrf}
	bad := func(where, u string) {
		for _, s := range secrets {
			if strings.Contains(u, s) || strings.Contains(u, url.QueryEscape(s)) {
				t.Errorf("%s: the URL %q holds a secret", where, u)
			}
		}
		if strings.Contains(u, "csrf=") || strings.Contains(u, "token=") {
			t.Errorf("%s: the URL %q names a credential", where, u)
		}
	}
	for _, p := range []string{"/", "/tenants", "/fairness", "/leases", "/dead", "/dead/errors", "/dead/confirm?action=purge&scope=filter",
		"/item?tenant=acme&id=evil", "/health", "/audit", "/login", "/limits", "/limits?tenant=acme"} {
		doc := f.page(c, p, http.StatusOK)
		doc.Find("a[href], link[href], script[src], img[src]").Each(func(_ int, sel *goquery.Selection) {
			for _, attr := range []string{"href", "src"} {
				if v, ok := sel.Attr(attr); ok {
					bad(p, v)
				}
			}
		})
		doc.Find("form").Each(func(_ int, form *goquery.Selection) {
			method, _ := form.Attr("method")
			if strings.EqualFold(method, "post") {
				return
			}
			form.Find("input").Each(func(_ int, in *goquery.Selection) {
				if name, _ := in.Attr("name"); name == "csrf" || name == "token" {
					t.Errorf("%s: a GET form sends %s in its URL", p, name)
				}
				if typ, _ := in.Attr("type"); typ == "password" {
					t.Errorf("%s: a GET form holds a password field", p)
				}
			})
		})
	}
	// Redirects: sign-in, an action, sign-out.
	anon := f.client()
	doc := f.page(anon, "/login", http.StatusOK)
	anonCSRF, _ := testids(doc, "login-form").Find(`input[name="csrf"]`).Attr("value")
	body, hdr := form(url.Values{"csrf": {anonCSRF}, "token": {acmeRWSecret}})
	resp, _ := f.do(anon, http.MethodPost, "/login", body, hdr)
	bad("sign-in redirect", resp.Header.Get("Location"))
	body, hdr = form(url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"acme"}, "id": {"evil"}, "scope": {"one"}})
	resp, _ = f.do(c, http.MethodPost, "/dead/requeue", body, hdr)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("requeue: %d", resp.StatusCode)
	}
	bad("action redirect", resp.Header.Get("Location"))
	// A secret in a query string is not a credential.
	for _, p := range []string{"/api/overview?token=" + url.QueryEscape(testToken), "/api/overview?secret=" + url.QueryEscape(testToken)} {
		if resp, _ := f.do(nil, http.MethodGet, p, nil, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s: %d, want 401", p, resp.StatusCode)
		}
	}
}
