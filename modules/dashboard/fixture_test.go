package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

const (
	testToken = "s3cret-Dashboard-token-0123456789abcdef"
	xss       = `<img src=x onerror=alert(1)>`
	testDSN   = "postgres://adk:hunter2-pw@db.internal:5432/adk?sslmode=disable"
)

// fixture is a dashboard over a memstore holding a little of everything:
// ready work for three tenants, live and expired leases, dead letters
// (one with a hostile payload and error), and some served turns.
type fixture struct {
	t     *testing.T
	clock *contracttest.FakeClock
	store *memstore.Store // set only on memstore fixtures
	q     contract.WorkQueue
	insp  contract.Inspector
	runs  contract.StateStore
	srv   *Server
	http  *httptest.Server
}

// fixturePolicy retries at once (full backoff of 1s, the clock moves 7s)
// and dead-letters on the third failure.
var fixturePolicy = policy.Policy{MaxAttempts: 3, Jitter: policy.Fixed(1)}

func newFixture(t *testing.T, token string) *fixture {
	t.Helper()
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{Policy: fixturePolicy})
	f := newFixtureOn(t, token, clock, "memory", store, store, store)
	f.store = store
	return f
}

// newFixtureOn seeds any backing and serves a dashboard over it.
func newFixtureOn(t *testing.T, token string, clock *contracttest.FakeClock, name string, q contract.WorkQueue, insp contract.Inspector, state contract.StateStore, configure ...func(*Config)) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: clock, q: q, insp: insp, runs: state}
	f.seed()
	cfg := Config{
		Queue: q, Inspector: insp, State: state,
		Backing: name, DSN: testDSN, Token: contract.Secret(token),
		Clock: clock, SampleEvery: time.Hour,
	}
	for _, fn := range configure {
		fn(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	f.http = httptest.NewServer(srv)
	t.Cleanup(func() {
		f.http.Close()
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return f
}

func (f *fixture) seed() {
	ctx := context.Background()
	var items []contract.Item
	for i := range 30 {
		items = append(items, contract.Item{Tenant: "noisy", ID: fmt.Sprintf("n-%03d", i), Payload: []byte(`{"step":1}`)})
	}
	for _, t := range []string{"acme", "globex"} {
		for i := range 4 {
			items = append(items, contract.Item{Tenant: t, ID: fmt.Sprintf("%s-%d", t, i)})
		}
	}
	items = append(items,
		contract.Item{Tenant: "acme", ID: "evil", Payload: []byte(xss)},
		contract.Item{Tenant: "globex", ID: "poison-1", Payload: []byte("p1")},
		contract.Item{Tenant: "globex", ID: "poison-2", Payload: []byte{0xff, 0x00, 0x01}},
	)
	f.must(f.q.Enqueue(ctx, items...))
	// Claim everything once, then put most back, so Served counts and
	// recent turns exist.
	leases, err := f.q.Claim(ctx, contract.ClaimRequest{Worker: "w1", LeaseFor: time.Minute, Max: 1000})
	f.must(err)
	var keep []contract.Lease
	for _, l := range leases {
		switch l.Item.ID {
		case "evil":
			_, err = f.q.Fail(ctx, l, policy.Permanent(errors.New(xss)))
			f.must(err)
		case "poison-1", "poison-2":
			_, err = f.q.Fail(ctx, l, policy.Permanent(fmt.Errorf("bad input for %s", l.Item.ID)))
			f.must(err)
		case "acme-0", "globex-0", "n-000":
			keep = append(keep, l) // stay leased
		default:
			_, err = f.q.Fail(ctx, l, errors.New("transient"))
			f.must(err)
		}
	}
	// One lease that expires and is not reaped.
	f.clock.Advance(2 * time.Second)
	short, err := f.q.Claim(ctx, contract.ClaimRequest{Worker: "w-short", LeaseFor: time.Second, Max: 1})
	f.must(err)
	_ = short
	f.clock.Advance(5 * time.Second) // retries are due again; the short lease is past expiry
	_ = keep
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// client keeps cookies and never follows redirects, so tests see them.
func (f *fixture) client() *http.Client {
	jar := newJar()
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (f *fixture) do(c *http.Client, method, path string, body io.Reader, hdr map[string]string) (*http.Response, string) {
	f.t.Helper()
	if c == nil {
		c = f.client()
	}
	req, err := http.NewRequest(method, f.http.URL+path, body)
	f.must(err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	f.must(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	f.must(err)
	return resp, string(b)
}

func (f *fixture) page(c *http.Client, path string, wantCode int) *goquery.Document {
	f.t.Helper()
	resp, body := f.do(c, http.MethodGet, path, nil, nil)
	if resp.StatusCode != wantCode {
		f.t.Fatalf("GET %s: status %d, want %d\n%s", path, resp.StatusCode, wantCode, body)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	f.must(err)
	return doc
}

func (f *fixture) api(c *http.Client, path string, wantCode int, into any) {
	f.t.Helper()
	resp, body := f.do(c, http.MethodGet, path, nil, nil)
	if resp.StatusCode != wantCode {
		f.t.Fatalf("GET %s: status %d, want %d\n%s", path, resp.StatusCode, wantCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		f.t.Fatalf("GET %s: content type %q", path, ct)
	}
	if into != nil {
		if err := json.Unmarshal([]byte(body), into); err != nil {
			f.t.Fatalf("GET %s: %v\n%s", path, err, body)
		}
	}
}

// signIn signs a fresh client in through the form, as a person would.
func (f *fixture) signIn() (*http.Client, string) {
	f.t.Helper()
	c := f.client()
	doc := f.page(c, "/login", http.StatusOK)
	csrf, ok := doc.Find(`[data-testid="login-form"] input[name="csrf"]`).Attr("value")
	if !ok || csrf == "" {
		f.t.Fatal("login form has no CSRF field")
	}
	resp, body := f.do(c, http.MethodPost, "/login", strings.NewReader(url.Values{"csrf": {csrf}, "token": {testToken}}.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if resp.StatusCode != http.StatusSeeOther {
		f.t.Fatalf("sign in: status %d\n%s", resp.StatusCode, body)
	}
	// The session changed at sign-in, and with it the CSRF token.
	doc = f.page(c, "/dead", http.StatusOK)
	csrf, _ = doc.Find(`[data-testid="dead-table"] input[name="csrf"]`).First().Attr("value")
	if csrf == "" { // no letter left to act on: the sign-out form has it too
		csrf, _ = doc.Find(`input[name="csrf"]`).First().Attr("value")
	}
	return c, csrf
}

func testids(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(`[data-testid="` + id + `"]`)
}

func form(vals url.Values) (io.Reader, map[string]string) {
	return strings.NewReader(vals.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
}

// testServer is a dashboard served through a recorder, for tests that
// need a Config the fixture does not build.
type testServer struct{ srv *Server }

func newTestServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	if cfg.SampleEvery == 0 {
		cfg.SampleEvery = time.Hour
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &testServer{srv: srv}
}

func (s *testServer) get(t *testing.T, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	s.srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func (s *testServer) body(t *testing.T, path string) string { return s.get(t, path).Body.String() }

func (s *testServer) page(t *testing.T, path string, wantCode int) *goquery.Document {
	t.Helper()
	rec := s.get(t, path)
	if rec.Code != wantCode {
		t.Fatalf("GET %s: status %d, want %d\n%s", path, rec.Code, wantCode, rec.Body.String())
	}
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func jsonOf(body string, into any) error { return json.Unmarshal([]byte(body), into) }
