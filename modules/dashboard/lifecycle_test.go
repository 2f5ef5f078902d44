package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// postJSON posts a JSON body with the secret as bearer ("" for none).
func (f *fixture) postJSON(secret, path, body string) (int, string) {
	f.t.Helper()
	h := map[string]string{"Content-Type": "application/json"}
	if secret != "" {
		h["Authorization"] = "Bearer " + secret
	}
	resp, b := f.do(nil, http.MethodPost, path, strings.NewReader(body), h)
	return resp.StatusCode, b
}

// postForm posts a page's form as the signed-in client c.
func (f *fixture) postForm(c *http.Client, path string, vals url.Values) (*http.Response, string) {
	f.t.Helper()
	body, hdr := form(vals)
	return f.do(c, http.MethodPost, path, body, hdr)
}

func (f *fixture) paused(queue string) contract.PauseState {
	f.t.Helper()
	st, err := f.store.Paused(f.t.Context(), queue)
	f.must(err)
	return st
}

func (f *fixture) itemOf(tenant, id string) contract.Item {
	f.t.Helper()
	info, err := f.store.Item(f.t.Context(), contract.ItemKey{Tenant: tenant, Queue: contract.DefaultQueue, ID: id})
	f.must(err)
	return info.Item
}

func (f *fixture) hitlItem(tenant, id string) contract.Item {
	f.t.Helper()
	info, err := f.store.Item(f.t.Context(), contract.ItemKey{Tenant: tenant, Queue: "hitl", ID: id})
	f.must(err)
	return info.Item
}

// waitFor parks a fresh item of tenant in queue until signal (or an hour).
func (f *fixture) waitFor(queue, tenant, id, signal string) {
	f.t.Helper()
	ctx := f.t.Context()
	f.must(f.store.Enqueue(ctx, contract.Item{Tenant: tenant, Queue: queue, ID: id, Payload: []byte("draft")}))
	ls, err := f.store.Claim(ctx, contract.ClaimRequest{Queue: queue, Worker: "w-wait", LeaseFor: time.Minute, Max: 1})
	f.must(err)
	if len(ls) != 1 || ls[0].Item.ID != id {
		f.t.Fatalf("claimed %+v, want %s", ls, id)
	}
	f.must(f.store.Wait(ctx, ls[0], contract.WaitRequest{Signal: signal, Timeout: time.Hour}))
}

// TestPauseResume: the queue and a tenant paused and resumed from the
// pages and the API, shown on the queue page, in the header and in the
// tenants table; bad input refused naming the field, nothing changed.
func TestPauseResume(t *testing.T) {
	f := newFixture(t, testToken)
	c, csrf := f.signIn()
	doc := f.page(c, "/queue", http.StatusOK)
	if got := testids(doc, "queue-state").Text(); got != "running" {
		t.Errorf("queue state %q before any pause", got)
	}
	if _, off := testids(doc, "pause-queue").Attr("disabled"); off || testids(doc, "queue-paused").Length() != 0 {
		t.Errorf("pause button disabled %v, header badge %d", off, testids(doc, "queue-paused").Length())
	}
	resp, b := f.postForm(c, "/pause", url.Values{"csrf": {csrf}, "queue": {"default"}, "back": {"queue"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/queue?queue=default" {
		t.Fatalf("pause the queue: %d to %q\n%s", resp.StatusCode, resp.Header.Get("Location"), b)
	}
	if st := f.paused("default"); !st.Paused {
		t.Fatalf("the queue is not paused: %+v", st)
	}
	doc = f.page(c, "/queue", http.StatusOK)
	if got := testids(doc, "flash").Text(); got != "Queue paused." {
		t.Errorf("flash %q", got)
	}
	if testids(doc, "queue-state").Text() != "queue paused" || testids(doc, "queue-paused").Text() != "queue paused" || testids(doc, "resume-queue").Length() != 1 {
		t.Errorf("the queue page does not show the pause: state %q, header %q", testids(doc, "queue-state").Text(), testids(doc, "queue-paused").Text())
	}

	// A tenant, from the tenants page.
	resp, _ = f.postForm(c, "/pause", url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"acme"}, "back": {"tenants"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/tenants?queue=default" {
		t.Fatalf("pause acme: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	doc = f.page(c, "/tenants", http.StatusOK)
	if got := testids(doc, "flash").Text(); got != "Tenant paused." {
		t.Errorf("flash %q", got)
	}
	paused := map[string]bool{}
	testids(doc, "tenant-row").Each(func(_ int, r *goquery.Selection) {
		paused[strings.TrimSpace(r.Find(`[data-testid="tenant-name"] bdi`).Text())] = r.Find(`[data-testid="tenant-paused"]`).Length() == 1
	})
	if !paused["acme"] || paused["globex"] || paused["noisy"] {
		t.Errorf("paused badges in the tenants table: %v", paused)
	}
	if testids(doc, "tenants-queue-paused").Length() != 1 {
		t.Error("the tenants page does not say the queue is paused")
	}

	// Resume the queue: acme stays paused.
	resp, _ = f.postForm(c, "/resume", url.Values{"csrf": {csrf}, "queue": {"default"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("resume: %d", resp.StatusCode)
	}
	if st := f.paused("default"); st.Paused || len(st.Tenants) != 1 || st.Tenants[0] != "acme" {
		t.Errorf("after resuming the queue: %+v", st)
	}

	// The API twins.
	code, b := f.postJSON(testToken, "/api/resume", `{"queue":"default","tenant":"acme"}`)
	var res PauseResult
	f.must(jsonOf(b, &res))
	if code != http.StatusOK || res.Action != "resume" || res.State.Paused || len(res.State.Tenants) != 0 {
		t.Errorf("POST /api/resume: %d %+v", code, res)
	}
	code, b = f.postJSON(testToken, "/api/pause", `{"queue":"default","tenant":"globex"}`)
	f.must(jsonOf(b, &res))
	if code != http.StatusOK || len(res.State.Tenants) != 1 || res.State.Tenants[0] != "globex" {
		t.Errorf("POST /api/pause: %d %s", code, b)
	}
	var qp view.QueuePage
	f.api(nil, "/api/queue", http.StatusOK, &qp)
	if !qp.Lifecycle || qp.Paused || len(qp.PausedTenants) != 1 || qp.PausedTenants[0] != "globex" || len(qp.Tenants) != 3 {
		t.Errorf("GET /api/queue: %+v", qp)
	}

	// Bad input: refused naming the field; nothing changes.
	before := f.paused("default")
	for _, bad := range []struct{ body, field string }{
		{`{"queue":"default","tenant":"a\u0000b"}`, "tenant"},
		{`{"queue":"` + strings.Repeat("q", 600) + `"}`, "queue"},
		{`{"queue":"default","tenants":["acme"]}`, "body"},
	} {
		if code, b := f.postJSON(testToken, "/api/pause", bad.body); code != http.StatusBadRequest || !strings.Contains(b, "invalid "+bad.field) {
			t.Errorf("pause %.40s: %d %s, want 400 naming %s", bad.body, code, b, bad.field)
		}
	}
	if after := f.paused("default"); after.Paused != before.Paused || len(after.Tenants) != len(before.Tenants) {
		t.Errorf("refused pauses changed the state: %+v", after)
	}
}

// TestLifecycleRefusals: without the CSRF token, with a read-only token,
// or with a token of one tenant acting on the queue or another tenant,
// every lifecycle change is refused and changes nothing; a token of one
// tenant acts on its own tenant.
func TestLifecycleRefusals(t *testing.T) {
	f, _, _ := auditFixture(t, 0)
	f.waitFor("hitl", "globex", "approve-g", "approve")
	for _, st := range []struct {
		name, secret, path, body string
		want                     int
	}{
		{"pause the queue, one tenant's token", acmeRWSecret, "/api/pause", `{"queue":"default"}`, forbidden},
		{"pause another tenant", acmeRWSecret, "/api/pause", `{"queue":"default","tenant":"globex"}`, forbidden},
		{"pause, read-only", roSecret, "/api/pause", `{"queue":"default","tenant":"acme"}`, forbidden},
		{"pause, no token", "", "/api/pause", `{"queue":"default"}`, unauthed},
		{"resume the queue, one tenant's token", acmeRWSecret, "/api/resume", `{"queue":"default"}`, forbidden},
		{"cancel another tenant's item", acmeRWSecret, "/api/cancel", `{"queue":"default","tenant":"globex","id":"globex-1"}`, forbidden},
		{"cancel another tenant's work", acmeRWSecret, "/api/cancel-matching", `{"filter":{"queue":"default","tenant":"globex"}}`, forbidden},
		{"cancel in another queue", otherQSecret, "/api/cancel-matching", `{"filter":{"queue":"default"}}`, forbidden},
		{"signal another tenant's item", acmeRWSecret, "/api/signal", `{"queue":"hitl","tenant":"globex","id":"approve-g","signal":"approve"}`, forbidden},
		{"purge, one tenant's token", acmeRWSecret, "/api/purge-cancelled", `{"queue":"default","older_than":"0s"}`, forbidden},
		{"purge, read-only", roSecret, "/api/purge-cancelled", `{"queue":"default","older_than":"0s"}`, forbidden},
	} {
		if code, b := f.postJSON(st.secret, st.path, st.body); code != st.want {
			t.Errorf("%s: %d, want %d\n%s", st.name, code, st.want, b)
		}
	}
	if ps := f.paused("default"); ps.Paused || len(ps.Tenants) != 0 {
		t.Errorf("refused pauses paused %+v", ps)
	}
	if it := f.itemOf("globex", "globex-1"); it.State == contract.StateCancelled {
		t.Error("a refused cancel cancelled globex-1")
	}
	if it := f.hitlItem("globex", "approve-g"); it.State != contract.StateWaiting {
		t.Errorf("a refused signal resumed approve-g: %s", it.State)
	}

	// One tenant's token reads its own tenants' waiting items and pauses
	// only.
	f.waitFor("hitl", "acme", "approve-a", "approve")
	f.must(f.store.Pause(t.Context(), "default", "globex"))
	resp, b := f.do(nil, http.MethodGet, "/api/waiting?queue=hitl", nil, bearer(acmeRWSecret))
	var w view.Waiting
	f.must(jsonOf(b, &w))
	if resp.StatusCode != http.StatusOK || len(w.Rows) != 1 || w.Rows[0].ID != "approve-a" || w.Total != 1 || strings.Contains(b, "globex") {
		t.Errorf("/api/waiting as acme-rw: %d %s", resp.StatusCode, b)
	}
	resp, b = f.do(nil, http.MethodGet, "/api/queue?queue=default", nil, bearer(acmeRWSecret))
	if resp.StatusCode != http.StatusOK || strings.Contains(b, "globex") {
		t.Errorf("/api/queue as acme-rw names another tenant: %d %s", resp.StatusCode, b)
	}
	f.must(f.store.Resume(t.Context(), "default", "globex"))

	// One tenant's token on its own tenant: done; a bulk cancel naming no
	// tenant touches only its own.
	if code, b := f.postJSON(acmeRWSecret, "/api/pause", `{"queue":"default","tenant":"acme"}`); code != http.StatusOK {
		t.Errorf("acme-rw pauses acme: %d %s", code, b)
	}
	all, err := f.store.CountMatching(t.Context(), contract.CancelFilter{Queue: "default"})
	f.must(err)
	own, err := f.store.CountMatching(t.Context(), contract.CancelFilter{Queue: "default", Tenant: "acme"})
	f.must(err)
	code, b := f.postJSON(acmeRWSecret, "/api/cancel-matching", `{"filter":{"queue":"default"},"dry_run":true}`)
	var res CancelMatchingResult
	f.must(jsonOf(b, &res))
	if code != http.StatusOK || res.Count != own || own == all {
		t.Errorf("acme-rw's dry run counts %d (%d), want acme's %d of %d", res.Count, code, own, all)
	}
	if strings.Contains(b, "globex") {
		t.Errorf("acme-rw's answer names another tenant: %s", b)
	}

	// The forms without a CSRF token, and with a wrong one.
	c, csrf := f.signIn()
	for _, p := range []struct {
		path string
		vals url.Values
	}{
		{"/pause", url.Values{"queue": {"default"}}},
		{"/resume", url.Values{"queue": {"default"}, "tenant": {"acme"}}},
		{"/cancel", url.Values{"queue": {"default"}, "tenant": {"acme"}, "id": {"acme-1"}}},
		{"/cancel-matching", url.Values{"queue": {"default"}, "tenant": {"noisy"}, "confirm": {"yes"}}},
		{"/signal", url.Values{"queue": {"hitl"}, "tenant": {"globex"}, "id": {"approve-g"}, "signal": {"approve"}}},
		{"/purge-cancelled", url.Values{"queue": {"default"}, "older_than": {"0s"}}},
	} {
		if resp, _ := f.postForm(c, p.path, p.vals); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s without a CSRF token: %d", p.path, resp.StatusCode)
		}
		p.vals.Set("csrf", csrf+"0")
		if resp, _ := f.postForm(c, p.path, p.vals); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s with a wrong CSRF token: %d", p.path, resp.StatusCode)
		}
	}
	if ps := f.paused("default"); ps.Paused || len(ps.Tenants) != 1 {
		t.Errorf("refused forms changed the pauses: %+v", ps)
	}
	if it := f.itemOf("acme", "acme-1"); it.State == contract.StateCancelled {
		t.Error("a refused form cancelled acme-1")
	}
	if it := f.hitlItem("globex", "approve-g"); it.State != contract.StateWaiting {
		t.Errorf("a refused form resumed approve-g: %s", it.State)
	}

	// Every request is an audit entry.
	_, trail := f.auditAs(testToken)
	seen := map[string]int{}
	for _, e := range trail.Entries {
		seen[e.Action+" "+e.Outcome]++
	}
	if seen["pause refused"] < 4 || seen["pause done"] != 1 || seen["cancel-matching done"] != 1 || seen["signal refused"] != 3 || seen["purge-cancelled refused"] != 4 {
		t.Errorf("audit entries: %v", seen)
	}
}

// TestCancelOne: an item cancelled from its page, a leased one marked
// (cancel pending), the API twin, and bad input.
func TestCancelOne(t *testing.T) {
	f := newFixture(t, testToken)
	c, csrf := f.signIn()
	doc := f.page(c, "/item?tenant=acme&queue=default&id=acme-1", http.StatusOK)
	if got := testids(doc, "item-priority").Text(); got != "0" {
		t.Errorf("priority %q", got)
	}
	if testids(doc, "item-cancel-form").Length() != 1 {
		t.Fatal("a queued item's page offers no cancel")
	}
	resp, b := f.postForm(c, "/cancel", url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"acme"}, "id": {"acme-1"}, "reason": {"wrong " + xss}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/item?id=acme-1&queue=default&tenant=acme" {
		t.Fatalf("cancel: %d to %q\n%s", resp.StatusCode, resp.Header.Get("Location"), b)
	}
	if it := f.itemOf("acme", "acme-1"); it.State != contract.StateCancelled || it.CancelReason != "wrong "+xss {
		t.Fatalf("acme-1 after the cancel: %s %q", it.State, it.CancelReason)
	}
	doc = f.page(c, "/item?tenant=acme&queue=default&id=acme-1", http.StatusOK)
	if got := testids(doc, "flash").Text(); got != "Item cancelled." {
		t.Errorf("flash %q", got)
	}
	if testids(doc, "item-state").Text() != "cancelled" || testids(doc, "item-cancelled").Length() != 1 ||
		testids(doc, "item-cancel-reason-text").Text() != "wrong "+xss || doc.Find("img").Length() != 0 || testids(doc, "item-cancel-form").Length() != 0 {
		t.Errorf("the cancelled item's page: state %q, reason %q, %d img", testids(doc, "item-state").Text(), testids(doc, "item-cancel-reason-text").Text(), doc.Find("img").Length())
	}

	// A leased item: marked, its page says cancel pending.
	resp, _ = f.postForm(c, "/cancel", url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"acme"}, "id": {"acme-0"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel the leased acme-0: %d", resp.StatusCode)
	}
	doc = f.page(c, "/item?tenant=acme&queue=default&id=acme-0", http.StatusOK)
	if got := testids(doc, "flash").Text(); !strings.HasPrefix(got, "Cancel asked for") {
		t.Errorf("flash %q", got)
	}
	if testids(doc, "item-state").Text() != "leased" || testids(doc, "item-cancel-pending").Text() != "cancel pending" || testids(doc, "item-cancel-form").Length() != 0 {
		t.Errorf("the marked lease's page: state %q, pending %q", testids(doc, "item-state").Text(), testids(doc, "item-cancel-pending").Text())
	}
	var iv view.ItemView
	f.api(nil, "/api/item?tenant=acme&queue=default&id=acme-0", http.StatusOK, &iv)
	if !iv.CancelPending || iv.CancelledAt.IsZero() {
		t.Errorf("/api/item of the marked lease: %+v", iv)
	}

	// The API twin, and what it refuses.
	code, b := f.postJSON(testToken, "/api/cancel", `{"queue":"default","tenant":"globex","id":"poison-1","reason":"obsolete"}`)
	var res CancelResult
	f.must(jsonOf(b, &res))
	if code != http.StatusOK || res.Was != contract.StateDead || res.Marked {
		t.Errorf("POST /api/cancel of a dead letter: %d %+v", code, res)
	}
	if code, b := f.postJSON(testToken, "/api/cancel", `{"queue":"default","tenant":"globex","id":"no-such"}`); code != http.StatusNotFound || !strings.Contains(b, "never enqueued") {
		t.Errorf("cancel of an unknown key: %d %s", code, b)
	}
	for _, bad := range []struct{ body, field string }{
		{`{"queue":"default","tenant":"globex","id":"globex-1","reason":"` + strings.Repeat("r", 1025) + `"}`, "reason"},
		{`{"queue":"default","tenant":"globex"}`, "ItemKey.ID"},
		{`{"queue":"default","tenant":"globex","id":"globex-1","why":"x"}`, "body"},
	} {
		if code, b := f.postJSON(testToken, "/api/cancel", bad.body); code != http.StatusBadRequest || !strings.Contains(b, "invalid "+bad.field) {
			t.Errorf("cancel %.50s: %d %s, want 400 naming %s", bad.body, code, b, bad.field)
		}
	}
	if it := f.itemOf("globex", "globex-1"); it.State == contract.StateCancelled {
		t.Error("a refused cancel cancelled globex-1")
	}
}

// TestCancelMatching: the confirmation step shows CountMatching's count,
// the confirmed form cancels exactly that, the API's dry run counts and
// changes nothing, and a bad filter is refused naming its field.
func TestCancelMatching(t *testing.T) {
	f := newFixture(t, testToken)
	c, csrf := f.signIn()
	doc := f.page(c, "/queue", http.StatusOK)
	if testids(doc, "cancel-form").Length() != 1 {
		t.Fatal("the queue page has no cancel form")
	}
	filter := contract.CancelFilter{Queue: "default", Tenant: "noisy", IDPrefix: "n-01"}
	want, err := f.store.CountMatching(t.Context(), filter)
	f.must(err)
	if want != 10 {
		t.Fatalf("CountMatching %d, the fixture has changed", want)
	}
	doc = f.page(c, "/cancel/confirm?queue=default&tenant=noisy&state=&id_prefix=n-01&reason=cleanup", http.StatusOK)
	if got := testids(doc, "cancel-count").Text(); got != "10 items" {
		t.Errorf("the confirmation counts %q", got)
	}
	if v, _ := testids(doc, "cancel-confirm-form").Find(`input[name="expected"]`).Attr("value"); v != "10" {
		t.Errorf("the confirmation carries expected %q", v)
	}
	var pv view.CancelConfirm
	f.api(nil, "/api/cancel/preview?queue=default&tenant=noisy&id_prefix=n-01", http.StatusOK, &pv)
	if pv.Count != 10 {
		t.Errorf("/api/cancel/preview: %+v", pv)
	}

	vals := url.Values{"csrf": {csrf}, "queue": {"default"}, "tenant": {"noisy"}, "state": {""}, "id_prefix": {"n-01"}, "reason": {"cleanup"}, "expected": {"10"}}
	if resp, _ := f.postForm(c, "/cancel-matching", vals); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unconfirmed bulk cancel: %d", resp.StatusCode)
	}
	if n, _ := f.store.CountMatching(t.Context(), filter); n != 10 {
		t.Fatalf("an unconfirmed bulk cancel cancelled %d", 10-n)
	}
	vals.Set("confirm", "yes")
	resp, b := f.postForm(c, "/cancel-matching", vals)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/queue?queue=default" {
		t.Fatalf("confirmed bulk cancel: %d to %q\n%s", resp.StatusCode, resp.Header.Get("Location"), b)
	}
	doc = f.page(c, "/queue", http.StatusOK)
	if got := testids(doc, "flash").Text(); got != "Cancelled 10 items." {
		t.Errorf("flash %q", got)
	}
	if n, _ := f.store.CountMatching(t.Context(), filter); n != 0 {
		t.Errorf("%d matching items left after the cancel", n)
	}
	if it := f.itemOf("noisy", "n-020"); it.State == contract.StateCancelled {
		t.Error("the bulk cancel touched n-020, outside its filter")
	}
	if got := testids(doc, "cancelled-total").Text(); got != "10" {
		t.Errorf("the queue page counts %q cancelled", got)
	}

	// The API: a dry run counts and changes nothing; the cancel does it.
	code, b := f.postJSON(testToken, "/api/cancel-matching", `{"filter":{"queue":"default","state":"dead"},"dry_run":true}`)
	var res CancelMatchingResult
	f.must(jsonOf(b, &res))
	if code != http.StatusOK || !res.DryRun || res.Count != 3 {
		t.Errorf("dry run over the dead letters: %d %s", code, b)
	}
	if n, _ := f.store.CountMatching(t.Context(), contract.CancelFilter{Queue: "default", State: contract.StateDead}); n != 3 {
		t.Errorf("a dry run changed the dead letters: %d left", n)
	}
	code, b = f.postJSON(testToken, "/api/cancel-matching", `{"filter":{"queue":"default","state":"dead","tenant":"globex"},"reason":"bad input"}`)
	f.must(jsonOf(b, &res))
	if code != http.StatusOK || res.DryRun || res.Count != 2 {
		t.Errorf("cancel globex's dead letters: %d %s", code, b)
	}
	for _, bad := range []struct{ body, field string }{
		{`{"filter":{"queue":"default","state":"cancelled"}}`, "CancelFilter.State"},
		{`{"filter":{"queue":"default","id_prefix":"a\u0000"}}`, "CancelFilter.IDPrefix"},
		{`{"filter":{"queue":"default"},"reason":"` + strings.Repeat("r", 1025) + `"}`, "reason"},
		{`{"queue":"default"}`, "body"},
	} {
		if code, b := f.postJSON(testToken, "/api/cancel-matching", bad.body); code != http.StatusBadRequest || !strings.Contains(b, "invalid "+bad.field) {
			t.Errorf("cancel-matching %.50s: %d %s, want 400 naming %s", bad.body, code, b, bad.field)
		}
	}
	if resp, _ := f.do(c, http.MethodGet, "/cancel/confirm?queue=default&state=done", nil, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a confirmation of a bad state: %d", resp.StatusCode)
	}
	if n, _ := f.store.CountMatching(t.Context(), contract.CancelFilter{Queue: "default"}); n == 0 {
		t.Error("refused bulk cancels cancelled the live work")
	}
}

// TestWaitingAndSignal: the waiting page lists what each item waits for,
// since when and until when; a signal from it resumes the item once
// (the payload reaching it, shown escaped and cut short on its page); a
// wrong signal is 409 and an unknown item 404, each saying why.
func TestWaitingAndSignal(t *testing.T) {
	f := newFixture(t, testToken)
	f.waitFor("hitl", "acme", "approve-1", "approve")
	f.clock.Advance(5 * time.Minute)
	f.waitFor("hitl", "globex", "approve-2", "review")
	c, csrf := f.signIn()
	doc := f.page(c, "/waiting?queue=hitl", http.StatusOK)
	rows := testids(doc, "waiting-row")
	if rows.Length() != 2 || testids(doc, "waiting-total").Text() != "2 items waiting" {
		t.Fatalf("%d waiting rows, total %q", rows.Length(), testids(doc, "waiting-total").Text())
	}
	first := rows.First()
	if id, _ := first.Attr("data-id"); id != "approve-1" {
		t.Errorf("the longest waiting is %q, want approve-1", id)
	}
	if got := strings.TrimSpace(first.Find(`[data-testid="waiting-signal"]`).Text()); got != "approve" {
		t.Errorf("approve-1 waits for %q", got)
	}
	if got := first.Find(`[data-testid="waiting-since"]`).Text(); got != "5m00s ago" {
		t.Errorf("approve-1 waits since %q", got)
	}
	if got := first.Find(`[data-testid="waiting-until"]`).Text(); got != "55m00s left" {
		t.Errorf("approve-1 waits until %q", got)
	}
	var api view.Waiting
	f.api(nil, "/api/waiting?queue=hitl&limit=1", http.StatusOK, &api)
	if len(api.Rows) != 1 || api.Rows[0].ID != "approve-1" || api.Next == "" || api.Rows[0].AgeSeconds != 300 {
		t.Fatalf("/api/waiting page 1: %+v", api)
	}
	f.api(nil, "/api/waiting?queue=hitl&limit=1&cursor="+url.QueryEscape(api.Next), http.StatusOK, &api)
	if len(api.Rows) != 1 || api.Rows[0].ID != "approve-2" || api.Rows[0].Signal != "review" {
		t.Fatalf("/api/waiting page 2: %+v", api)
	}
	if resp, _ := f.do(nil, http.MethodGet, "/api/waiting?queue=hitl&cursor=garbage", nil, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a forged cursor: %d", resp.StatusCode)
	}

	// The wrong signal: 409, saying what it waits for; nothing changes.
	vals := url.Values{"csrf": {csrf}, "queue": {"hitl"}, "tenant": {"acme"}, "id": {"approve-1"}, "signal": {"reject"}, "back": {"waiting"}}
	resp, b := f.postForm(c, "/signal", vals)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(b, `waits for signal &#34;approve&#34;`) {
		t.Errorf("the wrong signal: %d\n%.600s", resp.StatusCode, b)
	}
	// The right one, with a hostile and long payload.
	payload := xss + strings.Repeat("y", 300)
	vals.Set("signal", "approve")
	vals.Set("payload", payload)
	resp, _ = f.postForm(c, "/signal", vals)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/waiting?queue=hitl" {
		t.Fatalf("signal: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	info, err := f.store.Item(t.Context(), contract.ItemKey{Tenant: "acme", Queue: "hitl", ID: "approve-1"})
	f.must(err)
	if info.Item.State != contract.StateQueued || info.Item.Resumed == nil || string(info.Item.Resumed.Payload) != payload {
		t.Fatalf("approve-1 after the signal: %s %+v", info.Item.State, info.Item.Resumed)
	}
	doc = f.page(c, "/waiting?queue=hitl", http.StatusOK)
	if got := testids(doc, "flash").Text(); got != "Signal sent: the item is due again." || testids(doc, "waiting-row").Length() != 1 {
		t.Errorf("flash %q, %d rows", got, testids(doc, "waiting-row").Length())
	}
	doc = f.page(c, "/item?queue=hitl&tenant=acme&id=approve-1", http.StatusOK)
	shown := testids(doc, "item-resumed-payload").Text()
	if !strings.HasPrefix(shown, xss) || !strings.HasSuffix(shown, "…") || len(shown) > len(payload) || doc.Find("img").Length() != 0 {
		t.Errorf("the resumed payload is shown as %q (%d img)", shown, doc.Find("img").Length())
	}
	// A second signal: the wait was resumed once, this one is 409.
	code, b := f.postJSON(testToken, "/api/signal", `{"queue":"hitl","tenant":"acme","id":"approve-1","signal":"approve","payload":"again"}`)
	if code != http.StatusConflict || !strings.Contains(b, "is queued, not waiting") {
		t.Errorf("a second signal: %d %s", code, b)
	}
	if code, b := f.postJSON(testToken, "/api/signal", `{"queue":"hitl","tenant":"acme","id":"no-such","signal":"approve"}`); code != http.StatusNotFound || !strings.Contains(b, "no item") {
		t.Errorf("a signal to an unknown item: %d %s", code, b)
	}
	if code, b := f.postJSON(testToken, "/api/signal", `{"queue":"hitl","tenant":"globex","id":"approve-2","signal":""}`); code != http.StatusBadRequest || !strings.Contains(b, "invalid signal") {
		t.Errorf("an empty signal name: %d %s", code, b)
	}
	big := `{"queue":"hitl","tenant":"globex","id":"approve-2","signal":"review","payload":"` + strings.Repeat("z", contract.DefaultMaxValueBytes+1) + `"}`
	if code, b := f.postJSON(testToken, "/api/signal", big); code != http.StatusRequestEntityTooLarge || !strings.Contains(b, "signal payload") {
		t.Errorf("a payload over the limit: %d %.200s", code, b)
	}
	if it := f.hitlItem("globex", "approve-2"); it.State != contract.StateWaiting {
		t.Errorf("a refused signal resumed approve-2: %s", it.State)
	}
	// From the item page, through the API twin.
	doc = f.page(c, "/item?queue=hitl&tenant=globex&id=approve-2", http.StatusOK)
	if testids(doc, "item-waiting").Length() != 1 || testids(doc, "signal-form").Length() != 1 {
		t.Error("a waiting item's page does not show its wait and the signal form")
	}
	code, b = f.postJSON(testToken, "/api/signal", `{"queue":"hitl","tenant":"globex","id":"approve-2","signal":"review","payload":"ok"}`)
	var res SignalResult
	f.must(jsonOf(b, &res))
	if code != http.StatusOK || res.Signal != "review" {
		t.Errorf("POST /api/signal: %d %s", code, b)
	}
}

// TestPurgeCancelled: the queue page's purge deletes the items cancelled
// longer ago than asked, the API twin likewise; a bad age is refused.
func TestPurgeCancelled(t *testing.T) {
	f := newFixture(t, testToken)
	ctx := t.Context()
	_, err := f.store.Cancel(ctx, contract.ItemKey{Tenant: "acme", Queue: "default", ID: "acme-1"}, "old")
	f.must(err)
	f.clock.Advance(2 * time.Hour)
	_, err = f.store.Cancel(ctx, contract.ItemKey{Tenant: "acme", Queue: "default", ID: "acme-2"}, "new")
	f.must(err)
	c, csrf := f.signIn()
	if resp, b := f.postForm(c, "/purge-cancelled", url.Values{"csrf": {csrf}, "queue": {"default"}, "older_than": {"-1h"}}); resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "older_than") {
		t.Errorf("a negative age: %d", resp.StatusCode)
	}
	resp, _ := f.postForm(c, "/purge-cancelled", url.Values{"csrf": {csrf}, "queue": {"default"}, "older_than": {"1h"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("purge: %d", resp.StatusCode)
	}
	doc := f.page(c, "/queue", http.StatusOK)
	if got := testids(doc, "flash").Text(); got != "Purged 1 cancelled item." {
		t.Errorf("flash %q", got)
	}
	if _, err := f.store.Item(ctx, contract.ItemKey{Tenant: "acme", Queue: "default", ID: "acme-1"}); err == nil {
		t.Error("acme-1, cancelled two hours ago, is still kept")
	}
	if it := f.itemOf("acme", "acme-2"); it.State != contract.StateCancelled {
		t.Errorf("acme-2, cancelled just now, is %s", it.State)
	}
	f.clock.Advance(time.Second)
	code, b := f.postJSON(testToken, "/api/purge-cancelled", `{"queue":"default","older_than":"0s"}`)
	var res PurgeCancelledResult
	f.must(jsonOf(b, &res))
	if code != http.StatusOK || res.Count != 1 {
		t.Errorf("POST /api/purge-cancelled: %d %s", code, b)
	}
	if code, b := f.postJSON(testToken, "/api/purge-cancelled", `{"queue":"default","older_than":"a while"}`); code != http.StatusBadRequest || !strings.Contains(b, "invalid older_than") {
		t.Errorf("an unreadable age: %d %s", code, b)
	}
}

// TestLifecycleUnsupported: on a backing without lifecycle controls the
// pages draw none of them, say so, and the API answers 501.
func TestLifecycleUnsupported(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{})
	f := newFixtureOn(t, testToken, clock, "memory", plainQueue{store}, store, store)
	c, _ := f.signIn()
	for _, path := range []string{"/queue", "/waiting"} {
		doc := f.page(c, path, http.StatusOK)
		if testids(doc, "lifecycle-unsupported").Text() != view.NoLifecycleNote || doc.Find(`form[action="/pause"], form[action="/signal"], form[action="/purge-cancelled"]`).Length() != 0 {
			t.Errorf("%s on a backing without lifecycle controls draws them", path)
		}
	}
	doc := f.page(c, "/tenants", http.StatusOK)
	if testids(doc, "pause-tenant").Length() != 0 || testids(doc, "tenant-waiting").Length() != 0 {
		t.Error("the tenants page offers pauses on a backing without them")
	}
	doc = f.page(c, "/item?tenant=acme&queue=default&id=acme-1", http.StatusOK)
	if testids(doc, "item-cancel-form").Length() != 0 {
		t.Error("the item page offers a cancel on a backing without it")
	}
	for _, p := range []struct{ path, body string }{
		{"/api/pause", `{"queue":"default"}`},
		{"/api/cancel", `{"queue":"default","tenant":"acme","id":"acme-1"}`},
		{"/api/cancel-matching", `{"filter":{"queue":"default"},"dry_run":true}`},
		{"/api/signal", `{"queue":"default","tenant":"acme","id":"acme-1","signal":"go"}`},
		{"/api/purge-cancelled", `{"queue":"default","older_than":"0s"}`},
	} {
		if code, b := f.postJSON(testToken, p.path, p.body); code != http.StatusNotImplemented || !strings.Contains(b, "no lifecycle controls") {
			t.Errorf("%s: %d %s, want 501", p.path, code, b)
		}
	}
}
