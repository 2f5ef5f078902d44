package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/dashboard/internal/view"
	"github.com/adkit/adk/modules/policy"
)

// killAll enqueues, claims and dead-letters items of tenant with msg, the
// clock a millisecond on between them so each dies at its own time.
func (f *fixture) killAll(tenant, prefix, msg string, n int) []string {
	f.t.Helper()
	ctx := context.Background()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%03d", prefix, i)
		f.must(f.q.Enqueue(ctx, contract.Item{Tenant: tenant, ID: id, Queue: "deadq"}))
		ls, err := f.q.Claim(ctx, contract.ClaimRequest{Queue: "deadq", Worker: "killer", LeaseFor: time.Minute, Max: 1})
		f.must(err)
		_, err = f.q.Fail(ctx, ls[0], policy.Permanent(errors.New(msg)))
		f.must(err)
		f.clock.Advance(time.Millisecond)
		ids = append(ids, id)
	}
	return ids
}

func rowIDs(doc *goquery.Document) []string {
	var out []string
	testids(doc, "dead-row").Each(func(_ int, s *goquery.Selection) {
		out = append(out, strings.TrimSpace(s.Find(`[data-testid="dead-id"]`).Text()))
	})
	return out
}

func href(t *testing.T, doc *goquery.Document, testid string) string {
	t.Helper()
	h, ok := testids(doc, testid).Attr("href")
	if !ok {
		t.Fatalf("no link %q", testid)
	}
	return h
}

func reversed(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = id
	}
	return out
}

func TestDeadNewestFirstPaging(t *testing.T) { checkDeadNewestFirstPaging(t, newFixture(t, "")) }

// Dead letters list newest first; older and newer step a page, the ends
// and any page number are a click away, and the rows of every page are
// the ones its number says.
func checkDeadNewestFirstPaging(t *testing.T, f *fixture) {
	died := f.killAll("acme", "d", "boom", 120)
	newest := reversed(died)
	pageOf := func(n int) []string { return newest[(n-1)*50 : min(n*50, len(newest))] }
	check := func(what string, doc *goquery.Document, n int) {
		t.Helper()
		if got, want := rowIDs(doc), pageOf(n); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: rows %v…, want page %d: %v…", what, got[:min(3, len(got))], n, want[:min(3, len(want))])
		}
		if got := testids(doc, "page-number").Text(); got != fmt.Sprintf("page %d of 3", n) {
			t.Errorf("%s: %q, want page %d of 3", what, got, n)
		}
	}
	doc := f.page(nil, "/dead?queue=deadq", http.StatusOK)
	check("first page", doc, 1)
	if testids(doc, "page-newer").Length() != 0 || testids(doc, "page-newest").Length() != 0 {
		t.Error("the first page offers newer letters")
	}
	doc = f.page(nil, href(t, doc, "page-older"), http.StatusOK)
	check("older", doc, 2)
	doc = f.page(nil, href(t, doc, "page-older"), http.StatusOK)
	check("older again", doc, 3)
	if testids(doc, "page-older").Length() != 0 {
		t.Error("the last page offers older letters")
	}
	doc = f.page(nil, href(t, doc, "page-newer"), http.StatusOK)
	check("back to newer", doc, 2)
	doc = f.page(nil, href(t, doc, "page-newer"), http.StatusOK)
	check("back to the newest", doc, 1)
	doc = f.page(nil, href(t, f.page(nil, "/dead?queue=deadq", http.StatusOK), "page-oldest"), http.StatusOK)
	check("oldest", doc, 3)
	for n := 1; n <= 3; n++ {
		check(fmt.Sprintf("jump to %d", n), f.page(nil, fmt.Sprintf("/dead?queue=deadq&jump=%d", n), http.StatusOK), n)
	}
	doc = f.page(nil, "/dead?queue=deadq&jump=2", http.StatusOK)
	check("newer after a jump", f.page(nil, href(t, doc, "page-newer"), http.StatusOK), 1)
	doc = f.page(nil, href(t, doc, "page-older"), http.StatusOK)
	check("older after a jump", doc, 3)
	doc = f.page(nil, href(t, doc, "page-newer"), http.StatusOK)
	check("newer after the oldest page", doc, 2)
	f.page(nil, "/dead?queue=deadq&jump=4", http.StatusBadRequest)
	f.page(nil, "/dead?queue=deadq&jump=0", http.StatusBadRequest)
	// Pages of other sizes land on the same rows.
	var api view.Dead
	f.api(nil, "/api/dead?queue=deadq&limit=7&jump=9", http.StatusOK, &api)
	if len(api.Rows) != 7 || api.Rows[0].ID != newest[56] || api.Page != 9 || api.Pages != 18 {
		t.Errorf("api page 9 of 7 rows: first %q of %d, page %d of %d; want %q, 7, 9 of 18", api.Rows[0].ID, len(api.Rows), api.Page, api.Pages, newest[56])
	}
	api = view.Dead{}
	f.api(nil, "/api/dead?queue=deadq&limit=7&jump=18", http.StatusOK, &api)
	if len(api.Rows) != 1 || api.Rows[0].ID != died[0] || api.Older != "" {
		t.Errorf("api last page: %d rows, first %q, older %q; want the oldest letter alone", len(api.Rows), api.Rows[0].ID, api.Older)
	}
}

func TestDeadCountsHonourFilters(t *testing.T) { checkDeadCountsHonourFilters(t, newFixture(t, "")) }

// The count above the list is the filter's, exactly; the error filter
// ignores case and says so; the bulk buttons say how many they cover.
func checkDeadCountsHonourFilters(t *testing.T, f *fixture) {
	for _, c := range []struct {
		query, total, bulk string
		rows               int
	}{
		{"", "3 dead letters in default.", "All 3 letters in the queue (no filter)", 3},
		{"error=nomatch", "0 dead letters match the filter, of 3 in default.", "All 0 letters matching the filter", 0},
		{"id=poison-1", "1 dead letter matches the filter, of 3 in default.", "All 1 letter matching the filter", 1},
		{"error=BAD+INPUT", "2 dead letters match the filter, of 3 in default.", "All 2 letters matching the filter", 2},
		{"tenant=globex&error=Poison-2", "1 dead letter matches the filter, of 3 in default.", "All 1 letter matching the filter", 1},
	} {
		doc := f.page(nil, "/dead?"+c.query, http.StatusOK)
		if got := strings.Join(strings.Fields(testids(doc, "dead-total").Text()), " "); got != c.total {
			t.Errorf("/dead?%s: total %q, want %q", c.query, got, c.total)
		}
		if got := strings.Join(strings.Fields(testids(doc, "bulk-actions").Find(".bulk-label").First().Text()), " "); got != c.bulk {
			t.Errorf("/dead?%s: bulk label %q, want %q", c.query, got, c.bulk)
		}
		if n := testids(doc, "dead-row").Length(); n != c.rows {
			t.Errorf("/dead?%s: %d rows, want %d", c.query, n, c.rows)
		}
	}
	doc := f.page(nil, "/dead", http.StatusOK)
	if !strings.Contains(testids(doc, "dead-filter").Text(), "any case") {
		t.Error("the error filter does not say it ignores case")
	}
	var api view.Dead
	f.api(nil, "/api/dead?error=BAD+INPUT", http.StatusOK, &api)
	if api.Total != 2 || api.QueueTotal != 3 || len(api.Rows) != 2 {
		t.Errorf("api: total %d of %d, %d rows", api.Total, api.QueueTotal, len(api.Rows))
	}
}

func TestBulkConfirmShowsTheCount(t *testing.T) {
	checkBulkConfirmShowsTheCount(t, newFixture(t, testToken))
}

// A bulk action goes through a step that says exactly how many letters it
// will touch; the action then touches only the filter's letters, and the
// result says if the count moved in between.
func checkBulkConfirmShowsTheCount(t *testing.T, f *fixture) {
	c, _ := f.signIn()
	doc := f.page(c, "/dead?tenant=globex", http.StatusOK)
	doc = f.page(c, href(t, doc, "bulk-requeue"), http.StatusOK)
	if got := strings.Join(strings.Fields(testids(doc, "confirm-count").Text()), " "); got != "This will requeue 2 dead letters matching the filter." {
		t.Errorf("confirm says %q", got)
	}
	if got := strings.TrimSpace(testids(doc, "confirm-submit").Text()); got != "Requeue 2 letters" {
		t.Errorf("confirm button %q", got)
	}
	// A third globex letter dies while the person reads.
	f.must(f.q.Enqueue(context.Background(), contract.Item{Tenant: "globex", ID: "late"}))
	for {
		ls, err := f.q.Claim(context.Background(), contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
		f.must(err)
		if ls[0].Item.ID == "late" {
			_, err = f.q.Fail(context.Background(), ls[0], policy.Permanent(errors.New("late")))
			f.must(err)
			break
		}
	}
	resp, _ := f.submit(c, doc, "confirm-form")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("confirmed requeue: %d", resp.StatusCode)
	}
	doc = f.page(c, resp.Header.Get("Location"), http.StatusOK)
	if got := testids(doc, "flash").Text(); got != "Requeued 3 dead letters. 2 when you confirmed: more letters matching the filter died in between." {
		t.Errorf("flash %q", got)
	}
	if f.state("acme", "evil") != contract.StateDead {
		t.Error("the bulk action touched a letter outside its filter")
	}
	var prev struct {
		Count int64 `json:"count"`
	}
	f.api(c, "/api/dead/preview?action=purge&scope=filter&tenant=acme", http.StatusOK, &prev)
	if prev.Count != 1 {
		t.Errorf("api preview counts %d, want 1", prev.Count)
	}
	f.api(c, "/api/dead/preview?action=drop&scope=filter", http.StatusBadRequest, nil)
	f.api(c, "/api/dead/preview?action=purge&scope=everything", http.StatusBadRequest, nil)
}

// submit posts the form with the given testid as the browser would.
func (f *fixture) submit(c *http.Client, doc *goquery.Document, testid string) (*http.Response, string) {
	f.t.Helper()
	form := testids(doc, testid)
	action, _ := form.Attr("action")
	vals := url.Values{}
	form.Find("input").Each(func(_ int, s *goquery.Selection) {
		n, _ := s.Attr("name")
		v, _ := s.Attr("value")
		if n != "" {
			vals.Add(n, v)
		}
	})
	body, hdr := formBody(vals)
	return f.do(c, http.MethodPost, action, body, hdr)
}

func formBody(vals url.Values) (*strings.Reader, map[string]string) {
	return strings.NewReader(vals.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
}

func TestSelectionActsOnPickedOnly(t *testing.T) {
	checkSelectionActsOnPickedOnly(t, newFixture(t, testToken))
}

// Ticked rows are acted on alone, counted first; a pick from outside the
// page's filter is refused, and one that left the dead letter meanwhile
// is left out of the count.
func checkSelectionActsOnPickedOnly(t *testing.T, f *fixture) {
	c, _ := f.signIn()
	ids := f.killAll("acme", "s", "timeout", 6)
	doc := f.page(c, "/dead?queue=deadq", http.StatusOK)
	var picks []string
	testids(doc, "dead-pick").Each(func(i int, s *goquery.Selection) {
		if i == 1 || i == 3 || i == 4 {
			v, _ := s.Attr("value")
			picks = append(picks, v)
		}
	})
	q := url.Values{"queue": {"deadq"}, "scope": {"selection"}, "action": {"requeue"}, "pick": picks}
	// One picked letter goes away before the confirmation.
	_, gone, _ := parsePick(picks[2])
	if n, err := f.q.Purge(context.Background(), contract.DeadLetterFilter{Queue: "deadq", Tenant: "acme", ID: gone}); err != nil || n != 1 {
		t.Fatalf("purge %s: %d %v", gone, n, err)
	}
	doc = f.page(c, "/dead/confirm?"+q.Encode(), http.StatusOK)
	if got := strings.Join(strings.Fields(testids(doc, "confirm-count").Text()), " "); got != "This will requeue 2 dead letters, the ones you selected that are still dead." {
		t.Errorf("confirm says %q", got)
	}
	if n := testids(doc, "confirm-picked").Find("li.gone").Length(); n != 1 {
		t.Errorf("%d picked letters marked gone, want 1", n)
	}
	resp, _ := f.submit(c, doc, "confirm-form")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("requeue selection: %d", resp.StatusCode)
	}
	if got := testids(f.page(c, resp.Header.Get("Location"), http.StatusOK), "flash").Text(); got != "Requeued 2 dead letters." {
		t.Errorf("flash %q", got)
	}
	newest := reversed(ids)
	for i, id := range newest {
		want := contract.StateDead
		switch i {
		case 1, 3:
			want = contract.StateQueued
		case 4:
			want = "gone"
		}
		if got := f.stateIn("deadq", "acme", id); got != want {
			t.Errorf("%s (row %d) is %s, want %s", id, i, got, want)
		}
	}
	// A pick outside the filter the page showed is refused, and acts on nothing.
	q = url.Values{"queue": {"deadq"}, "tenant": {"other"}, "scope": {"selection"}, "action": {"purge"}, "pick": {pickValue("acme", newest[0])}}
	f.page(c, "/dead/confirm?"+q.Encode(), http.StatusBadRequest)
	hdr := map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"}
	resp, body := f.do(nil, http.MethodPost, "/api/dead/purge", strings.NewReader(`{"queue":"deadq","tenant":"other","scope":"selection","items":[{"tenant":"acme","id":"`+newest[0]+`"}]}`), hdr)
	if resp.StatusCode != http.StatusBadRequest || f.stateIn("deadq", "acme", newest[0]) != contract.StateDead {
		t.Errorf("api selection outside the filter: %d %s", resp.StatusCode, body)
	}
	resp, body = f.do(nil, http.MethodPost, "/api/dead/purge", strings.NewReader(`{"queue":"deadq","scope":"selection","items":[{"tenant":"acme","id":"`+newest[0]+`"},{"tenant":"acme","id":"`+newest[5]+`"}]}`), hdr)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"count":2`) || f.stateIn("deadq", "acme", newest[0]) != "gone" || f.stateIn("deadq", "acme", newest[2]) != contract.StateDead {
		t.Errorf("api selection purge: %d %s", resp.StatusCode, body)
	}
	// Without the confirmation a selection does nothing.
	b, h := formBody(url.Values{"csrf": {f.csrfOf(c)}, "queue": {"deadq"}, "scope": {"selection"}, "pick": {pickValue("acme", newest[2])}})
	if resp, _ := f.do(c, http.MethodPost, "/dead/purge", b, h); resp.StatusCode != http.StatusBadRequest || f.stateIn("deadq", "acme", newest[2]) != contract.StateDead {
		t.Errorf("unconfirmed selection purge: %d", resp.StatusCode)
	}
}

func (f *fixture) stateIn(queue, tenant, id string) contract.ItemState {
	f.t.Helper()
	info, err := f.insp.Item(context.Background(), contract.ItemKey{Tenant: tenant, Queue: queue, ID: id})
	if errors.Is(err, contract.ErrNotFound) {
		return "gone"
	}
	f.must(err)
	return info.Item.State
}

func (f *fixture) csrfOf(c *http.Client) string {
	f.t.Helper()
	v, _ := f.page(c, "/dead", http.StatusOK).Find(`input[name="csrf"]`).First().Attr("value")
	return v
}

func TestDeadErrorGroups(t *testing.T) { checkDeadErrorGroups(t, newFixture(t, testToken)) }

// Letters grouped by error, largest group first, each group a link to its
// letters and to a counted bulk action.
func checkDeadErrorGroups(t *testing.T, f *fixture) {
	f.killAll("acme", "t", "timeout calling the model", 5)
	f.killAll("globex", "d", "disk full", 3)
	f.killAll("acme", "x", "schema mismatch", 1)
	doc := f.page(nil, "/dead/errors?queue=deadq", http.StatusOK)
	var got []string
	testids(doc, "error-group").Each(func(_ int, s *goquery.Selection) {
		got = append(got, s.Find(`[data-testid="error-text"]`).Text()+"="+s.Find(`[data-testid="error-count"]`).Text())
	})
	if want := "timeout calling the model=5 disk full=3 schema mismatch=1"; strings.Join(got, " ") != want {
		t.Errorf("groups %q, want %q", strings.Join(got, " "), want)
	}
	if got := strings.Join(strings.Fields(testids(doc, "errors-total").Text()), " "); got != "9 dead letters in 3 groups by error." {
		t.Errorf("total %q", got)
	}
	show := f.page(nil, href(t, doc, "error-show"), http.StatusOK)
	if n := testids(show, "dead-row").Length(); n != 5 {
		t.Errorf("the largest group's letters: %d rows, want 5", n)
	}
	doc = f.page(nil, "/dead/errors?queue=deadq&tenant=globex", http.StatusOK)
	if n := testids(doc, "error-group").Length(); n != 1 {
		t.Errorf("globex's groups: %d, want 1", n)
	}
	var api view.DeadErrors
	f.api(nil, "/api/dead/errors?queue=deadq&error=TIMEOUT", http.StatusOK, &api)
	if api.Total != 5 || api.Distinct != 1 || len(api.Groups) != 1 || api.Groups[0].Share != 1 {
		t.Errorf("api errors: %+v", api)
	}
}
