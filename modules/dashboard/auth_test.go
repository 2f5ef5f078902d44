package dashboard

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// Strong secrets for the tests' named tokens.
const (
	opsSecret  = "ops-Secret-0123456789abcdefghijklmn"
	acmeSecret = "acme-Secret-0123456789abcdefghijklm"
	roSecret   = "ro-Secret-0123456789abcdefghijklmno"
)

func TestWeakTokensRefused(t *testing.T) {
	f := newFixture(t, "")
	for _, weak := range []string{
		"a",
		"s3cret",
		strings.Repeat("a", 40),
		"abcdefghijklmnopqrstuvwxyzabcdefghij", // letters of one case only
		"0123456789012345678901234567890123",   // digits only
		strings.Repeat("a1", 20),               // two characters repeated
		"with a space 0123456789ABCDEFGHIJKLMN",
	} {
		for _, cfg := range []Config{
			{Queue: f.q, Inspector: f.insp, Token: contract.Secret(weak)},
			{Queue: f.q, Inspector: f.insp, Tokens: []Token{{Name: "ops", Secret: contract.Secret(weak), Access: ReadWrite}}},
		} {
			srv, err := New(cfg)
			if err == nil {
				srv.Close()
				t.Errorf("New accepted the weak token %q", weak)
				continue
			}
			var we *WeakTokenError
			if !errors.As(err, &we) || !errors.Is(err, contract.ErrInvalid) {
				t.Errorf("weak token %q: %T %v, want a *WeakTokenError", weak, err, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "openssl rand -hex 32") || (len(weak) > 3 && strings.Contains(msg, weak)) {
				t.Errorf("weak token %q: the refusal %q must say how to generate one and never quote the secret", weak, msg)
			}
		}
	}
	// Names and secrets are each one token's.
	for _, tokens := range [][]Token{
		{{Name: "ops", Secret: opsSecret}, {Name: "ops", Secret: acmeSecret}},
		{{Name: "ops", Secret: opsSecret}, {Name: "acme", Secret: opsSecret}},
		{{Name: "bad name", Secret: opsSecret}},
		{{Name: "ops", Secret: opsSecret, Access: "admin"}},
	} {
		if srv, err := New(Config{Queue: f.q, Inspector: f.insp, Tokens: tokens}); err == nil {
			srv.Close()
			t.Errorf("New accepted %v", tokens)
		} else if strings.Contains(err.Error(), opsSecret) {
			t.Errorf("the refusal quotes the secret: %v", err)
		}
	}
	srv, err := New(Config{Queue: f.q, Inspector: f.insp, Token: testToken, Tokens: []Token{{Name: "ops", Secret: opsSecret}}})
	if err != nil {
		t.Fatalf("strong tokens refused: %v", err)
	}
	srv.Close()
}

func TestParseTokens(t *testing.T) {
	in := `# the dashboard's tokens
name=ops&access=read-write&secret=` + opsSecret + `
name=acme&tenant=acme&tenant=a%26b%0Ac&queue=default&secret=abc+/=def%25 ; name=ro&secret=` + roSecret + `

`
	got, err := ParseTokens(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d tokens, want 3: %+v", len(got), got)
	}
	if got[0].Name != "ops" || got[0].Access != ReadWrite || got[0].Secret.Reveal() != opsSecret || !got[0].AllTenants() {
		t.Errorf("ops: %+v", got[0])
	}
	if a := got[1]; a.Access != ReadOnly || a.Secret.Reveal() != "abc+/=def%" || strings.Join(a.Tenants, "|") != "acme|a&b\nc" || strings.Join(a.Queues, "|") != "default" {
		t.Errorf("acme: %+v (secret %q)", a, a.Secret.Reveal())
	}
	for _, bad := range []string{"name=x", "secret=" + opsSecret, "name=x&secret=" + opsSecret + "&role=admin", "name=x&secret=%zz", "justtext" + opsSecret} {
		_, err := ParseTokens(strings.NewReader(bad))
		if err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), opsSecret) {
			t.Errorf("%q: the error quotes the secret: %v", bad, err)
		}
	}

	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("name=acme&tenant=acme&secret="+acmeSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ADK_DASHBOARD_TOKENS_FILE": file, "ADK_DASHBOARD_TOKENS": "name=ro&secret=" + roSecret, "ADK_DASHBOARD_TOKEN": testToken}
	tokens, err := TokensFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tk := range tokens {
		names = append(names, tk.Name+":"+string(tk.Access))
	}
	if strings.Join(names, " ") != "acme:read-only ro:read-only admin:read-write" {
		t.Errorf("tokens from the environment: %v", names)
	}
	if err := ValidateTokens(tokens); err != nil {
		t.Error(err)
	}
	env["ADK_DASHBOARD_TOKENS_FILE"] = filepath.Join(t.TempDir(), "missing")
	if _, err := TokensFromEnv(func(k string) string { return env[k] }); err == nil {
		t.Error("a missing tokens file accepted")
	}
}

// call serves one request from the client address addr.
func call(srv *Server, method, path, addr string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = addr + ":40000"
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec
}

func bearer(secret string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + secret}
}

func basic(name, secret string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(name+":"+secret))}
}

// TestBearerBruteForceThrottled: wrong bearer tokens from one address are
// 401 up to the limit, then 429 with Retry-After, the right token from
// that address included, while the right token from another address
// works; a forged X-Forwarded-For does not make a new address; the
// window's end lifts the block.
func TestBearerBruteForceThrottled(t *testing.T) {
	f := newFixture(t, testToken)
	srv := f.srv
	attacker, other := "203.0.113.7", "198.51.100.20"
	for i := range maxFailures {
		if rec := call(srv, http.MethodGet, "/api/overview", attacker, bearer("guess-"+strconv.Itoa(i))); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong bearer %d: %d", i, rec.Code)
		}
	}
	for i := range 300 {
		hdr := bearer("guess-more-" + strconv.Itoa(i))
		hdr["X-Forwarded-For"] = "192.0.2." + strconv.Itoa(i%250)
		rec := call(srv, http.MethodGet, "/api/overview", attacker, hdr)
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("wrong bearer %d past the limit: %d", maxFailures+i, rec.Code)
		}
		if i == 0 {
			if ra, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
				t.Errorf("Retry-After %q, want 1 to 60 seconds", rec.Header().Get("Retry-After"))
			}
			if !strings.Contains(rec.Body.String(), "too many failed attempts") {
				t.Errorf("429 body %s", rec.Body.String())
			}
		}
	}
	if rec := call(srv, http.MethodPost, "/api/dead/purge", attacker, bearer(testToken)); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the right token from the throttled address: %d, want 429", rec.Code)
	}
	if rec := call(srv, http.MethodGet, "/api/overview", other, bearer(testToken)); rec.Code != http.StatusOK {
		t.Errorf("the right token from another address: %d, want 200", rec.Code)
	}
	if f.deadCount() != 3 {
		t.Error("a throttled request changed the dead letters")
	}
	f.clock.Advance(throttleWindow)
	if rec := call(srv, http.MethodGet, "/api/overview", attacker, bearer(testToken)); rec.Code != http.StatusOK {
		t.Errorf("a window later, the right token: %d", rec.Code)
	}
}

// TestNamedTokenThrottled: guesses at one named token from many
// addresses block that name, not the addresses' other attempts nor the
// other tokens; guesses naming no token are capped all together.
func TestNamedTokenThrottled(t *testing.T) {
	f := newFixture(t, "")
	srv := newTestServer(t, Config{Queue: f.q, Inspector: f.insp, Clock: f.clock,
		Tokens: []Token{{Name: "ops", Secret: opsSecret, Access: ReadWrite}, {Name: "ro", Secret: roSecret}}}).srv
	addr := func(i int) string { return "10.1." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250) }
	for i := range maxNameFailures {
		if rec := call(srv, http.MethodGet, "/api/overview", addr(i), basic("ops", "guess")); rec.Code != http.StatusUnauthorized {
			t.Fatalf("guess %d at ops: %d", i, rec.Code)
		}
	}
	if rec := call(srv, http.MethodGet, "/api/overview", addr(500), basic("ops", opsSecret)); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("ops by name after %d guesses at it: %d, want 429 with Retry-After", maxNameFailures, rec.Code)
	}
	if rec := call(srv, http.MethodGet, "/api/overview", addr(501), basic("ro", roSecret)); rec.Code != http.StatusOK {
		t.Errorf("another token by name: %d", rec.Code)
	}
	if rec := call(srv, http.MethodGet, "/api/overview", addr(502), bearer(opsSecret)); rec.Code != http.StatusOK {
		t.Errorf("ops unnamed: %d", rec.Code)
	}
	// A secret of another token does not pass for the named one.
	if rec := call(srv, http.MethodGet, "/api/overview", addr(503), basic("ro", opsSecret)); rec.Code != http.StatusUnauthorized {
		t.Errorf("ro named with ops's secret: %d, want 401", rec.Code)
	}
	for i := range maxUnnamedFailures {
		call(srv, http.MethodGet, "/api/overview", addr(1000+i), bearer("guess"))
	}
	if rec := call(srv, http.MethodGet, "/api/overview", addr(2000), bearer(opsSecret)); rec.Code != http.StatusTooManyRequests {
		t.Errorf("unnamed after %d unnamed guesses from many addresses: %d, want 429", maxUnnamedFailures, rec.Code)
	}
	if rec := call(srv, http.MethodGet, "/api/overview", addr(2001), basic("ro", roSecret)); rec.Code != http.StatusOK {
		t.Errorf("a named token while unnamed guesses are capped: %d", rec.Code)
	}
}

func TestClientKeyGroupsIPv6(t *testing.T) {
	if clientKey("2001:db8::1") != clientKey("2001:db8::ffff:2") || clientKey("2001:db8::1") == clientKey("2001:db8:0:1::1") {
		t.Error("IPv6 addresses are not grouped by /64")
	}
	if clientKey("192.0.2.1") == clientKey("192.0.2.2") {
		t.Error("two IPv4 addresses share a bucket")
	}
}

func TestTrustedProxy(t *testing.T) {
	f := newFixture(t, "")
	srv := newTestServer(t, Config{Queue: f.q, Inspector: f.insp, Clock: f.clock, Token: testToken, TrustedProxies: []string{"10.0.0.1"}}).srv
	for range maxFailures {
		call(srv, http.MethodGet, "/api/overview", "10.0.0.1", map[string]string{"Authorization": "Bearer guess", "X-Forwarded-For": "203.0.113.9"})
	}
	hdr := bearer(testToken)
	hdr["X-Forwarded-For"] = "203.0.113.9"
	if rec := call(srv, http.MethodGet, "/api/overview", "10.0.0.1", hdr); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the client behind the proxy after its guesses: %d, want 429", rec.Code)
	}
	hdr["X-Forwarded-For"] = "203.0.113.10"
	if rec := call(srv, http.MethodGet, "/api/overview", "10.0.0.1", hdr); rec.Code != http.StatusOK {
		t.Errorf("another client behind the same proxy: %d, want 200", rec.Code)
	}
	if _, err := New(Config{Queue: f.q, Inspector: f.insp, TrustedProxies: []string{"not an address"}}); err == nil {
		t.Error("a malformed proxy accepted")
	}
}

func TestReadOnlyTokenActsOnNothing(t *testing.T) {
	f := newFixture(t, "")
	srv := newTestServer(t, Config{Queue: f.q, Inspector: f.insp, Clock: f.clock,
		Tokens: []Token{{Name: "ro", Secret: roSecret}, {Name: "ops", Secret: opsSecret, Access: ReadWrite}}}).srv
	for _, path := range []string{"/api/dead/purge", "/api/dead/requeue"} {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"queue":"default","scope":"filter"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+roSecret)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "read-only") {
			t.Errorf("%s with a read-only token: %d %s", path, rec.Code, rec.Body.String())
		}
	}
	if f.deadCount() != 3 {
		t.Error("a read-only token changed the dead letters")
	}
}
