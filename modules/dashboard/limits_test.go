package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// limitsOf reads the queue's limits from the store, beside the dashboard.
func (f *fixture) limitsOf(queue string) contract.QueueLimits {
	f.t.Helper()
	ql, err := f.store.Limits(f.t.Context(), queue)
	f.must(err)
	return ql
}

// limitsCSRF signs in and reads the CSRF token of the limits form.
func (f *fixture) limitsCSRF() (*http.Client, string) {
	f.t.Helper()
	c, _ := f.signIn()
	doc := f.page(c, "/limits", http.StatusOK)
	csrf, _ := testids(doc, "limits-form").Find(`input[name="csrf"]`).Attr("value")
	if csrf == "" {
		f.t.Fatal("the limits form has no CSRF field")
	}
	return c, csrf
}

// TestLimitsFormSets: a person sets a tenant's cap in the form, sees it
// held by that cap, and removes the limits again; the queue's default is
// set the same way.
func TestLimitsFormSets(t *testing.T) {
	f := newFixture(t, testToken)
	c, csrf := f.limitsCSRF()
	doc := f.page(c, "/limits?tenant=acme", http.StatusOK)
	if _, disabled := testids(doc, "limits-save").Attr("disabled"); disabled {
		t.Fatal("the save button is disabled for a read-write token")
	}
	if testids(doc, "limits-follows-default").Length() != 1 {
		t.Error("acme's page does not say it follows the default")
	}
	body, hdr := form(url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"acme"}, "max_leased": {"1"}, "rate": {""}, "window": {""}})
	resp, b := f.do(c, http.MethodPost, "/limits", body, hdr)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/limits?queue=default&tenant=acme" {
		t.Fatalf("save: %d to %q\n%s", resp.StatusCode, resp.Header.Get("Location"), b)
	}
	if got := f.limitsOf("default").Tenants["acme"]; got != (contract.Limits{MaxLeased: 1}) {
		t.Errorf("acme's limits after the form: %+v", got)
	}
	doc = f.page(c, "/limits?queue=default&tenant=acme", http.StatusOK)
	if got := testids(doc, "flash").Text(); got != "Limits saved." {
		t.Errorf("flash %q", got)
	}
	if got := strings.TrimSpace(testids(doc, "limits-held").Text()); got != "held by its cap" {
		t.Errorf("acme (one live lease, cap 1) is shown %q", got)
	}
	if v, _ := testids(doc, "limit-max_leased").Attr("value"); v != "1" {
		t.Errorf("the form holds max_leased %q after saving", v)
	}
	doc = f.page(c, "/tenants", http.StatusOK)
	if n := testids(doc, "rotation-order-held").Length(); n != 1 {
		t.Errorf("%d held marks in the rotation order, want acme's", n)
	}

	// The queue's default: every field, the window as a duration.
	body, hdr = form(url.Values{"csrf": {csrf}, "queue": {"default"}, "max_leased": {"5"}, "rate": {"2.5"}, "burst": {"4"},
		"weight": {"3"}, "cost_micros": {"1000"}, "tokens": {"200"}, "window": {"1h"}})
	if resp, b := f.do(c, http.MethodPost, "/limits", body, hdr); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("save the default: %d\n%s", resp.StatusCode, b)
	}
	want := contract.Limits{MaxLeased: 5, Rate: 2.5, Burst: 4, Weight: 3, Budget: contract.Budget{CostMicros: 1000, Tokens: 200, Window: 3600e9}}
	if got := f.limitsOf("default").Default; got != want {
		t.Errorf("the default after the form: %+v, want %+v", got, want)
	}
	doc = f.page(c, "/limits", http.StatusOK)
	if v, _ := testids(doc, "limit-window").Attr("value"); v != "1h0m0s" {
		t.Errorf("the default's window reads %q", v)
	}

	// Remove: acme follows the default again.
	body, hdr = form(url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"acme"}, "max_leased": {"1"}, "remove": {"yes"}})
	if resp, _ := f.do(c, http.MethodPost, "/limits", body, hdr); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove: %d", resp.StatusCode)
	}
	if _, ok := f.limitsOf("default").Tenants["acme"]; ok {
		t.Error("acme still has limits of its own after remove")
	}
	doc = f.page(c, "/limits?tenant=acme", http.StatusOK)
	if got := testids(doc, "flash").Text(); got != "Limits removed." {
		t.Errorf("flash %q", got)
	}
}

// TestLimitsFormRefusesBadInput: each bad value comes back in the form
// with the contract's refusal naming the field, and nothing is changed.
func TestLimitsFormRefusesBadInput(t *testing.T) {
	f := newFixture(t, testToken)
	f.must(f.store.SetLimits(t.Context(), "default", "acme", contract.Limits{MaxLeased: 3}))
	before := f.limitsOf("default")
	c, csrf := f.limitsCSRF()
	for _, tc := range []struct {
		name  string
		vals  url.Values
		field string // the contract's field
		input string // the form input marked
	}{
		{"negative cap", url.Values{"max_leased": {"-1"}}, "Limits.MaxLeased", "max_leased"},
		{"not a number", url.Values{"max_leased": {"two"}}, "Limits.MaxLeased", "max_leased"},
		{"NaN rate", url.Values{"rate": {"NaN"}}, "Limits.Rate", "rate"},
		{"infinite rate", url.Values{"rate": {"+Inf"}}, "Limits.Rate", "rate"},
		{"negative rate", url.Values{"rate": {"-2"}}, "Limits.Rate", "rate"},
		{"burst without rate", url.Values{"burst": {"3"}}, "Limits.Burst", "burst"},
		{"absurd weight", url.Values{"weight": {"1000000"}}, "Limits.Weight", "weight"},
		{"negative tokens", url.Values{"tokens": {"-5"}, "window": {"1h"}}, "Limits.Budget.Tokens", "tokens"},
		{"zero window", url.Values{"tokens": {"100"}, "window": {"0s"}}, "Limits.Budget.Window", "window"},
		{"negative window", url.Values{"cost_micros": {"100"}, "window": {"-1h"}}, "Limits.Budget.Window", "window"},
		{"no window", url.Values{"tokens": {"100"}}, "Limits.Budget.Window", "window"},
		{"unreadable window", url.Values{"tokens": {"100"}, "window": {"an hour"}}, "Limits.Budget.Window", "window"},
		{"window without ceiling", url.Values{"window": {"1h"}}, "Limits.Budget.Window", "window"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"acme"}}
			for k, v := range tc.vals {
				vals[k] = v
			}
			body, hdr := form(vals)
			resp, b := f.do(c, http.MethodPost, "/limits", body, hdr)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("%d, want 400\n%.400s", resp.StatusCode, b)
			}
			doc, err := goqueryDoc(b)
			f.must(err)
			problem := testids(doc, "limits-problem").Text()
			if !strings.Contains(problem, "invalid "+tc.field+":") || !strings.Contains(problem, "Nothing was changed.") {
				t.Errorf("the refusal reads %q, want it to name %s", problem, tc.field)
			}
			if v, _ := testids(doc, "limit-"+tc.input).Attr("aria-invalid"); v != "true" {
				t.Errorf("the %s field is not marked", tc.input)
			}
			for k, v := range tc.vals {
				if got, _ := testids(doc, "limit-"+k).Attr("value"); got != v[0] {
					t.Errorf("the form lost %s: %q, want %q", k, got, v[0])
				}
			}
			if got := f.limitsOf("default"); got.Tenants["acme"] != before.Tenants["acme"] || got.Default != before.Default {
				t.Errorf("a refused form changed the limits: %+v", got)
			}
		})
	}
}

// TestLimitsAPI: the /api/ twins set, read and remove limits, refuse bad
// input naming the field, and refuse a backing without flow control.
func TestLimitsAPI(t *testing.T) {
	f := newFixture(t, testToken)
	auth := bearer(testToken)
	put := func(method, path, body string) (int, string) {
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range auth {
			h[k] = v
		}
		resp, b := f.do(nil, method, path, strings.NewReader(body), h)
		return resp.StatusCode, b
	}
	code, b := put(http.MethodPut, "/api/limits", `{"queue":"default","tenant":"acme","limits":{"max_leased":1,"budget":{"tokens":500,"window":"10m"}}}`)
	if code != http.StatusOK {
		t.Fatalf("PUT: %d %s", code, b)
	}
	var res LimitsResult
	f.must(jsonOf(b, &res))
	if res.Action != "set-limits" || res.Tenant != "acme" || len(res.Status) != 1 || res.Status[0].Held != "cap" || res.Status[0].Limits.Budget.Window != "10m0s" {
		t.Errorf("PUT answered %+v", res)
	}
	if got := f.limitsOf("default").Tenants["acme"]; got.MaxLeased != 1 || got.Budget.Tokens != 500 || got.Budget.Window != 600e9 {
		t.Errorf("acme's limits: %+v", got)
	}
	if code, b := put(http.MethodPost, "/api/limits", `{"queue":"default","limits":{"weight":2}}`); code != http.StatusOK {
		t.Fatalf("POST the default: %d %s", code, b)
	}
	var api view.Limits
	f.api(nil, "/api/limits", http.StatusOK, &api)
	if api.Default.Weight != 2 || len(api.Tenants) != 3 {
		t.Errorf("GET after: %+v", api)
	}

	before := f.limitsOf("default")
	for _, bad := range []struct{ body, field string }{
		{`{"queue":"default","tenant":"acme","limits":{"max_leased":-1}}`, "Limits.MaxLeased"},
		{`{"queue":"default","tenant":"acme","limits":{"weight":5000}}`, "Limits.Weight"},
		{`{"queue":"default","tenant":"acme","limits":{"rate":-1}}`, "Limits.Rate"},
		{`{"queue":"default","tenant":"acme","limits":{"budget":{"tokens":9,"window":"0s"}}}`, "Limits.Budget.Window"},
		{`{"queue":"default","tenant":"acme","limits":{"budget":{"tokens":9,"window":"soon"}}}`, "Limits.Budget.Window"},
		{`{"queue":"default","tenant":"acme","limits":{"budget":{"tokens":9,"window":"1.5ms"}}}`, "Limits.Budget.Window"},
		{`{"queue":"default","tenant":"acme","limits":{"rate":"NaN"}}`, "body"},
		{`{"queue":"default","tenant":"acme","limits":{"cap":2}}`, "body"},
		{`{"queue":"default","tenant":"` + strings.Repeat("x", 600) + `","limits":{"max_leased":2}}`, "tenant"},
	} {
		code, b := put(http.MethodPut, "/api/limits", bad.body)
		if code != http.StatusBadRequest || !strings.Contains(b, "invalid "+bad.field) {
			t.Errorf("PUT %.60s: %d %s, want 400 naming %s", bad.body, code, b, bad.field)
		}
	}
	if after := f.limitsOf("default"); after.Default != before.Default || after.Tenants["acme"] != before.Tenants["acme"] || len(after.Tenants) != len(before.Tenants) {
		t.Errorf("refused requests changed the limits: %+v", after)
	}

	// DELETE by query, then the zero limits by PUT: both remove.
	if code, b := put(http.MethodDelete, "/api/limits?queue=default&tenant=acme", ""); code != http.StatusOK {
		t.Fatalf("DELETE: %d %s", code, b)
	}
	if _, ok := f.limitsOf("default").Tenants["acme"]; ok {
		t.Error("DELETE left acme's limits")
	}
	if code, b := put(http.MethodPut, "/api/limits", `{"queue":"default","limits":{}}`); code != http.StatusOK {
		t.Fatalf("PUT the zero default: %d %s", code, b)
	}
	if got := f.limitsOf("default").Default; !got.IsZero() {
		t.Errorf("the zero limits left the default %+v", got)
	}
	// A JSON DELETE names what it removes in its body.
	f.must(f.store.SetLimits(t.Context(), "default", "globex", contract.Limits{Weight: 4}))
	if code, b := put(http.MethodDelete, "/api/limits", `{"queue":"default","tenant":"globex"}`); code != http.StatusOK {
		t.Fatalf("DELETE with a body: %d %s", code, b)
	}
	if _, ok := f.limitsOf("default").Tenants["globex"]; ok {
		t.Error("DELETE with a body left globex's limits")
	}

	// On a backing without flow control: 501, saying why.
	clock := contracttest.NewFakeClock(f.clock.Now())
	store := memstore.New(clock, memstore.Settings{})
	plain := newFixtureOn(t, testToken, clock, "memory", plainQueue{store}, store, store)
	h := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + testToken}
	resp, body := plain.do(nil, http.MethodPut, "/api/limits", strings.NewReader(`{"queue":"default","tenant":"acme","limits":{"max_leased":1}}`), h)
	if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(body, "does not enforce limits") {
		t.Errorf("PUT on a backing without flow control: %d %s", resp.StatusCode, body)
	}
}

// TestLimitsRefusals: without a read-write token, a CSRF token, or a
// token that sees every tenant, a change of limits is refused and changes
// nothing; each is one audit entry, and no secret reaches a log line.
func TestLimitsRefusals(t *testing.T) {
	f, logs, _ := auditFixture(t, 0)
	set := `{"queue":"default","tenant":"acme","limits":{"max_leased":1}}`
	for _, st := range []struct {
		name   string
		secret string
		method string
		body   string
		want   int
	}{
		{"no token", "", http.MethodPut, set, http.StatusUnauthorized},
		{"a wrong token", "guess-Not-A-Token-0123456789abcdefgh", http.MethodPut, set, http.StatusUnauthorized},
		{"a read-only token", roSecret, http.MethodPut, set, http.StatusForbidden},
		{"a token of one tenant, its own", acmeRWSecret, http.MethodPut, set, http.StatusForbidden},
		{"a token of one tenant, the default", acmeRWSecret, http.MethodPut, `{"queue":"default","limits":{"weight":9}}`, http.StatusForbidden},
		{"a token of another queue", otherQSecret, http.MethodDelete, `{"queue":"default","tenant":"acme"}`, http.StatusForbidden},
	} {
		h := map[string]string{"Content-Type": "application/json"}
		if st.secret != "" {
			h["Authorization"] = "Bearer " + st.secret
		}
		resp, b := f.do(nil, st.method, "/api/limits", strings.NewReader(st.body), h)
		if resp.StatusCode != st.want {
			t.Errorf("%s: %d, want %d\n%s", st.name, resp.StatusCode, st.want, b)
		}
		if strings.Contains(b, "globex") {
			t.Errorf("%s: the refusal names another tenant: %s", st.name, b)
		}
	}
	// A queue-scoped token changes its own queue's limits.
	h := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + otherQSecret}
	if resp, b := f.do(nil, http.MethodPut, "/api/limits", strings.NewReader(`{"queue":"other","tenant":"acme","limits":{"max_leased":2}}`), h); resp.StatusCode != http.StatusOK {
		t.Errorf("other-queue in its own queue: %d %s", resp.StatusCode, b)
	}

	// A signed-in session without the CSRF token, and with a wrong one.
	c, csrf := f.limitsCSRF()
	body, hdr := form(url.Values{"queue": {"default"}, "tenant": {"acme"}, "max_leased": {"1"}})
	if resp, _ := f.do(c, http.MethodPost, "/limits", body, hdr); resp.StatusCode != http.StatusForbidden {
		t.Errorf("the form without a CSRF token: %d", resp.StatusCode)
	}
	body, hdr = form(url.Values{"csrf": {csrf + "0"}, "queue": {"default"}, "tenant": {"acme"}, "max_leased": {"1"}})
	if resp, _ := f.do(c, http.MethodPost, "/limits", body, hdr); resp.StatusCode != http.StatusForbidden {
		t.Errorf("the form with a wrong CSRF token: %d", resp.StatusCode)
	}
	resp, _ := f.do(c, http.MethodPut, "/api/limits", strings.NewReader(set), map[string]string{"Content-Type": "application/json"})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a session's PUT without X-CSRF-Token: %d", resp.StatusCode)
	}
	if ql := f.limitsOf("default"); len(ql.Tenants) != 0 || !ql.Default.IsZero() {
		t.Fatalf("refused changes changed the limits: %+v", ql)
	}
	// With the header it is done.
	resp, _ = f.do(c, http.MethodPut, "/api/limits", strings.NewReader(set), map[string]string{"Content-Type": "application/json", csrfHeader: csrf})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a session's PUT with X-CSRF-Token: %d", resp.StatusCode)
	}
	// A form's bad input: refused, recorded with the field.
	body, hdr = form(url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"acme"}, "rate": {"NaN"}})
	if resp, _ := f.do(c, http.MethodPost, "/limits", body, hdr); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a NaN rate: %d", resp.StatusCode)
	}
	body, hdr = form(url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"acme"}, "remove": {"yes"}})
	if resp, _ := f.do(c, http.MethodPost, "/limits", body, hdr); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("remove: %d", resp.StatusCode)
	}

	code, trail := f.auditAs(testToken)
	if code != http.StatusOK {
		t.Fatalf("/api/audit: %d", code)
	}
	type row struct {
		token, action, outcome, queue, tenant, scope string
		status, count                                int
	}
	var got []row
	for _, e := range trail.Entries {
		if e.Action == "sign-in" {
			continue
		}
		got = append(got, row{e.Token, e.Action, e.Outcome, e.Filter.Queue, e.Filter.Tenant, e.Scope, e.Status, e.Count})
	}
	want := []row{ // newest first
		{"admin", "remove-limits", "done", "default", "acme", "tenant", 200, 1},
		{"admin", "set-limits", "refused", "default", "acme", "tenant", 400, 0},
		{"admin", "set-limits", "done", "default", "acme", "tenant", 200, 1},
		{"admin", "set-limits", "refused", "default", "acme", "tenant", 403, 0},
		{"admin", "set-limits", "refused", "default", "acme", "tenant", 403, 0},
		{"admin", "set-limits", "refused", "default", "acme", "tenant", 403, 0},
		{"other-queue", "set-limits", "done", "other", "acme", "tenant", 200, 1},
		{"other-queue", "remove-limits", "refused", "default", "acme", "tenant", 403, 0},
		{"acme-rw", "set-limits", "refused", "default", "", "default", 403, 0},
		{"acme-rw", "set-limits", "refused", "default", "acme", "tenant", 403, 0},
		{"ro-all", "set-limits", "refused", "default", "acme", "tenant", 403, 0},
		{"", "set-limits", "refused", "default", "acme", "tenant", 401, 0},
		{"", "set-limits", "refused", "default", "acme", "tenant", 401, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d:\n%+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if e := trail.Entries[0]; e.Limits != "no limits" {
		t.Errorf("the removal records limits %q", e.Limits)
	}
	if e := trail.Entries[1]; !strings.Contains(e.Reason, "Limits.Rate") {
		t.Errorf("the refused form's reason %q does not name the field", e.Reason)
	}
	if !strings.Contains(logs.String(), `"action":"set-limits","outcome":"done"`) || !strings.Contains(logs.String(), `"limits":"cap 1"`) {
		t.Errorf("no log line for the change of limits:\n%s", logs.String())
	}
	for _, secret := range []string{testToken, roSecret, acmeRWSecret, otherQSecret, csrf, "guess-Not-A-Token"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("a log line holds a secret (%.8s…)", secret)
		}
	}
	doc := f.page(c, "/limits", http.StatusOK)
	if html, _ := doc.Html(); strings.Contains(html, testToken) {
		t.Error("the limits page holds the token")
	}
}

func goqueryDoc(html string) (*goquery.Document, error) {
	return goquery.NewDocumentFromReader(strings.NewReader(html))
}

// TestLimitsThrottled: guessing tokens at the limits API is throttled as
// everywhere (429 with Retry-After, the right token included), and a
// throttled change changes nothing.
func TestLimitsThrottled(t *testing.T) {
	f := newFixture(t, testToken)
	attacker := "203.0.113.9"
	for i := range maxFailures {
		if rec := call(f.srv, http.MethodDelete, "/api/limits?queue=default&tenant=acme", attacker, bearer("guess-"+strconv.Itoa(i))); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong bearer %d: %d", i, rec.Code)
		}
	}
	f.must(f.store.SetLimits(t.Context(), "default", "acme", contract.Limits{MaxLeased: 2}))
	rec := call(f.srv, http.MethodDelete, "/api/limits?queue=default&tenant=acme", attacker, bearer(testToken))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("the right token from the throttled address: %d (Retry-After %q), want 429", rec.Code, rec.Header().Get("Retry-After"))
	}
	if got := f.limitsOf("default").Tenants["acme"]; got.MaxLeased != 2 {
		t.Errorf("a throttled DELETE changed acme's limits: %+v", got)
	}
}
