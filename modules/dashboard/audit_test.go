package dashboard

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// auditFixture is the scoped fixture with its log lines and spans kept.
func auditFixture(t *testing.T, keep int) (*fixture, *syncBuffer, *tracetest.SpanRecorder) {
	t.Helper()
	logs := &syncBuffer{}
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{Policy: fixturePolicy})
	f := newFixtureOn(t, testToken, clock, "memory", store, store, store, func(c *Config) {
		c.Tokens = scopedTokens
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		c.TracerProvider = tp
		c.AuditKeep = keep
	})
	f.store = store
	return f, logs, spans
}

func jsonPost(f *fixture, path, body string, hdr map[string]string) int {
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range hdr {
		h[k] = v
	}
	resp, _ := f.do(nil, http.MethodPost, path, strings.NewReader(body), h)
	return resp.StatusCode
}

func (f *fixture) auditAs(secret string) (int, view.Audit) {
	f.t.Helper()
	hdr := map[string]string{}
	if secret != "" {
		hdr = bearer(secret)
	}
	resp, body := f.do(nil, http.MethodGet, "/api/audit", nil, hdr)
	var a view.Audit
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			f.t.Fatal(err)
		}
	}
	return resp.StatusCode, a
}

// TestAuditTrail: every action, done or refused, and every sign-in is one
// entry — token name, client address, action, filter, count — as a log
// line, a span event and a row of /audit, which read-write tokens see
// (all of it when they see every tenant, their own entries otherwise).
func TestAuditTrail(t *testing.T) {
	f, logs, spans := auditFixture(t, 0)
	const guess = "guess-Not-A-Token-0123456789abcdefgh"
	steps := []struct {
		secret, path, body string
		want               int
	}{
		{testToken, "/api/dead/requeue", `{"queue":"default","tenant":"acme","id":"evil","scope":"one"}`, http.StatusOK},
		{acmeRWSecret, "/api/dead/purge", `{"queue":"default","tenant":"globex","scope":"filter"}`, http.StatusForbidden},
		{guess, "/api/dead/purge", `{"queue":"default","scope":"filter"}`, http.StatusUnauthorized},
		{roSecret, "/api/dead/purge", `{"queue":"default","scope":"filter"}`, http.StatusForbidden},
		{testToken, "/api/dead/purge", `{"queue":"default","tenant":"globex","error_contains":"bad input","scope":"filter"}`, http.StatusOK},
		{acmeRWSecret, "/api/dead/purge", `{"queue":"default","scope":"one"}`, http.StatusBadRequest},
	}
	for i, st := range steps {
		if code := jsonPost(f, st.path, st.body, bearer(st.secret)); code != st.want {
			t.Fatalf("step %d: %d, want %d", i, code, st.want)
		}
	}
	// A form sign-in, a wrong one, and a form action.
	c, csrf := f.signIn()
	body, hdr := form(url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"acme"}, "scope": {"filter"}})
	if resp, b := f.do(c, http.MethodPost, "/dead/purge", body, hdr); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unconfirmed bulk purge: %d %s", resp.StatusCode, b)
	}
	anon := f.client()
	doc := f.page(anon, "/login", http.StatusOK)
	anonCSRF, _ := testids(doc, "login-form").Find(`input[name="csrf"]`).Attr("value")
	body, hdr = form(url.Values{"csrf": {anonCSRF}, "name": {"ops-or-whatever"}, "token": {guess}})
	if resp, _ := f.do(anon, http.MethodPost, "/login", body, hdr); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong sign-in: %d", resp.StatusCode)
	}

	code, trail := f.auditAs(testToken)
	if code != http.StatusOK {
		t.Fatalf("/api/audit as admin: %d", code)
	}
	type row struct {
		token, action, outcome, tenant string
		status, count                  int
	}
	var got []row
	for _, e := range trail.Entries {
		got = append(got, row{e.Token, e.Action, e.Outcome, e.Filter.Tenant, e.Status, e.Count})
		if e.Client == "" || e.At.IsZero() {
			t.Errorf("entry without a client or time: %+v", e)
		}
	}
	want := []row{ // newest first
		{"", "sign-in", "refused", "", 401, 0},
		{"admin", "purge", "refused", "acme", 400, 0},
		{"admin", "sign-in", "done", "", 303, 0},
		{"acme-rw", "purge", "refused", "", 400, 0},
		{"admin", "purge", "done", "globex", 200, 2},
		{"ro-all", "purge", "refused", "", 403, 0},
		{"", "purge", "refused", "", 401, 0},
		{"acme-rw", "purge", "refused", "globex", 403, 0},
		{"admin", "requeue", "done", "acme", 200, 1},
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d:\n%+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// A scoped read-write token sees its own entries; read-only tokens
	// and visitors none.
	if code, own := f.auditAs(acmeRWSecret); code != http.StatusOK || len(own.Entries) != 2 || !own.Own {
		t.Errorf("/api/audit as acme-rw: %d, %d entries", code, len(own.Entries))
	} else {
		for _, e := range own.Entries {
			if e.Token != "acme-rw" {
				t.Errorf("acme-rw sees %s's entry", e.Token)
			}
		}
	}
	if code, _ := f.auditAs(roSecret); code != http.StatusForbidden {
		t.Errorf("/api/audit as a read-only token: %d", code)
	}
	if code, _ := f.auditAs(""); code != http.StatusUnauthorized {
		t.Errorf("/api/audit without a token: %d", code)
	}
	doc = f.page(c, "/audit", http.StatusOK)
	if n := testids(doc, "audit-row").Length(); n != len(want)+0 {
		t.Errorf("/audit shows %d rows, want %d", n, len(want))
	}

	// The same entries as log lines and span events.
	var lines int
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"msg":"dashboard audit"`) {
			lines++
		}
	}
	if lines != len(want) {
		t.Errorf("%d audit log lines, want %d:\n%s", lines, len(want), logs.String())
	}
	if !strings.Contains(logs.String(), `"action":"purge","outcome":"done","status":200,"token":"admin"`) || !strings.Contains(logs.String(), `"count":2`) {
		t.Errorf("the bulk purge's log line is missing:\n%s", logs.String())
	}
	events := 0
	for _, sp := range spans.Ended() {
		for _, ev := range sp.Events() {
			if ev.Name == "adk.dashboard.audit" {
				events++
			}
		}
	}
	if events != len(want) {
		t.Errorf("%d audit span events, want %d", events, len(want))
	}

	// No secret, nor the guess, anywhere: log lines, the trail, pages.
	all, _ := json.Marshal(trail)
	texts := map[string]string{"logs": logs.String(), "audit": string(all)}
	for _, p := range []string{"/", "/audit", "/dead", "/health", "/login", "/api/overview", "/api/health"} {
		_, b := f.do(c, http.MethodGet, p, nil, nil)
		texts[p] = b
	}
	for where, text := range texts {
		for _, secret := range []string{testToken, roSecret, acmeRWSecret, acmeROSecret, otherQSecret, acmeGlxSecret, guess, "ops-or-whatever"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds a secret or a guess (%.8s…)", where, secret)
			}
		}
	}
}

// TestAuditTrailIsBounded: the list keeps the newest entries only.
func TestAuditTrailIsBounded(t *testing.T) {
	f, _, _ := auditFixture(t, 3)
	for range 5 {
		jsonPost(f, "/api/dead/purge", `{"queue":"default","tenant":"nobody","scope":"filter"}`, bearer(testToken))
	}
	jsonPost(f, "/api/dead/requeue", `{"queue":"default","tenant":"acme","id":"evil","scope":"one"}`, bearer(testToken))
	_, trail := f.auditAs(testToken)
	if len(trail.Entries) != 3 || trail.Entries[0].Action != "requeue" || trail.Keep != 3 {
		t.Errorf("bounded trail: %+v", trail)
	}
}
