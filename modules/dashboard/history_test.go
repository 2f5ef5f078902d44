package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// keptHistory is a memstore queue with a history set by hand: the pages'
// tests give it exactly the events, finished items and log they show,
// whatever the backing itself records.
type keptHistory struct {
	*memstore.Store
	mu       sync.Mutex
	ret      map[string]contract.Retention
	hist     map[contract.ItemKey]contract.History
	finished []contract.Item // newest first
	log      []contract.Event
	toPrune  int
	prunes   int
}

func newKeptHistory(store *memstore.Store) *keptHistory {
	return &keptHistory{Store: store, ret: map[string]contract.Retention{}, hist: map[contract.ItemKey]contract.History{}}
}

func (k *keptHistory) Capabilities() contract.Capabilities {
	c := k.Store.Capabilities()
	c.History = true
	return c
}

func (k *keptHistory) SetRetention(_ context.Context, queue string, r contract.Retention) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ret[queue] = r
	return nil
}

func (k *keptHistory) Retention(_ context.Context, queue string) (contract.Retention, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ret[queue], nil
}

func (k *keptHistory) History(_ context.Context, key contract.ItemKey) (contract.History, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	h, ok := k.hist[key]
	if !ok {
		return h, contract.ErrNotFound
	}
	return h, nil
}

// Finished pages by position: "o<n>" starts at row n going older, "n<n>"
// ends before row n going newer.
func (k *keptHistory) Finished(_ context.Context, q contract.FinishedQuery) (contract.FinishedPage, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var rows []contract.Item
	for _, it := range k.finished {
		if contract.QueueName(it.Queue) != q.Queue || (q.Tenant != "" && it.Tenant != q.Tenant) || (q.State != "" && it.State != q.State) ||
			(q.ID != "" && it.ID != q.ID) || (!q.Since.IsZero() && it.FinishedAt.Before(q.Since)) || (!q.Until.IsZero() && !it.FinishedAt.Before(q.Until)) {
			continue
		}
		rows = append(rows, it)
	}
	start, end := 0, min(q.Page.Limit, len(rows))
	if c := q.Page.Cursor; c != "" {
		n, err := strconv.Atoi(c[1:])
		if err != nil || n < 0 || n > len(rows) {
			return contract.FinishedPage{}, &contract.ValidationError{Field: "cursor", Problem: "is not a cursor of this listing"}
		}
		if c[0] == 'o' {
			start, end = n, min(n+q.Page.Limit, len(rows))
		} else {
			start, end = max(0, n-q.Page.Limit), n
		}
	}
	p := contract.FinishedPage{Items: slices.Clone(rows[start:end])}
	if end < len(rows) {
		p.Next = "o" + strconv.Itoa(end)
	}
	if start > 0 {
		p.Prev = "n" + strconv.Itoa(start)
	}
	return p, nil
}

func (k *keptHistory) Find(_ context.Context, queue, id string) ([]contract.Item, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []contract.Item
	for key, h := range k.hist {
		if key.Queue == queue && key.ID == id {
			out = append(out, h.Item)
		}
	}
	slices.SortFunc(out, func(a, b contract.Item) int { return strings.Compare(a.Tenant, b.Tenant) })
	return out, nil
}

// QueueEvents's cursor is the position in the log.
func (k *keptHistory) QueueEvents(_ context.Context, queue, cursor string, limit int) (contract.EventPage, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	at := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 || n > len(k.log) {
			return contract.EventPage{}, &contract.ValidationError{Field: "cursor", Problem: "is not a cursor of this log"}
		}
		at = n
	}
	end := min(at+limit, len(k.log))
	return contract.EventPage{Events: slices.Clone(k.log[at:end]), Next: strconv.Itoa(end)}, nil
}

func (k *keptHistory) Prune(context.Context, string) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.prunes++
	n := min(k.toPrune, contract.PruneBatch)
	k.toPrune -= n
	return n, nil
}

// hiddenHistory is a queue whose backing keeps no history.
type hiddenHistory struct{ *memstore.Store }

func (h hiddenHistory) Capabilities() contract.Capabilities {
	c := h.Store.Capabilities()
	c.History = false
	return c
}

// newHistoryFixture serves a dashboard over a keptHistory.
func newHistoryFixture(t *testing.T, configure ...func(*Config)) (*fixture, *keptHistory) {
	t.Helper()
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{Policy: fixturePolicy})
	kh := newKeptHistory(store)
	f := newFixtureOn(t, testToken, clock, "memory", kh, store, store, configure...)
	f.store = store
	return f, kh
}

// TestItemTimeline: the item page shows every recorded event with its
// fields, the dropped and heartbeat counts, a completed item the
// Inspector no longer lists, and error text scrubbed and inert; the
// /api/item twin carries the same.
func TestItemTimeline(t *testing.T) {
	f, kh := newHistoryFixture(t)
	now := f.clock.Now()
	key := contract.ItemKey{Tenant: "acme", Queue: contract.DefaultQueue, ID: "done-1"}
	at := func(s int) time.Time { return now.Add(time.Duration(s) * time.Second) }
	kh.hist[key] = contract.History{
		Item: contract.Item{Tenant: "acme", Queue: contract.DefaultQueue, ID: "done-1", State: contract.StateCompleted, Attempts: 2,
			EnqueuedAt: at(-60), FinishedAt: at(-5)},
		Events: []contract.Event{
			{Kind: contract.EventEnqueued, At: at(-60), NextDue: at(-50)},
			{Kind: contract.EventClaimed, At: at(-40), Worker: "w-1", Attempt: 1, Token: 77},
			{Kind: contract.EventFailed, At: at(-30), Worker: "w-1", Attempt: 1, Error: "dial " + testDSN + " " + xss, NextDue: at(-20)},
			{Kind: contract.EventWaiting, At: at(-19), Worker: "w-2", Signal: "approve", NextDue: at(3600)},
			{Kind: contract.EventSignalled, At: at(-15), Signal: "approve"},
			{Kind: contract.EventCancelled, At: at(-12), Reason: "operator said stop"},
			{Kind: contract.EventCompleted, At: at(-5), Worker: "w-2", Attempt: 2, RunTime: 1500 * time.Millisecond},
		},
		Dropped: 3, Heartbeats: 9,
	}
	doc := f.page(nil, "/item?tenant=acme&id=done-1", http.StatusOK)
	if got := testids(doc, "item-state").Text(); got != "completed" {
		t.Errorf("state %q, want completed", got)
	}
	if testids(doc, "item-finished").Length() != 1 {
		t.Error("no finished time on a completed item")
	}
	rows := testids(doc, "timeline-row")
	if rows.Length() != 7 {
		t.Fatalf("%d timeline rows, want 7", rows.Length())
	}
	var kinds []string
	rows.Each(func(_ int, r goquerySel) { kinds = append(kinds, r.AttrOr("data-kind", "")) })
	if strings.Join(kinds, ",") != "enqueued,claimed,failed,waiting,signalled,cancelled,completed" {
		t.Errorf("kinds in order: %v", kinds)
	}
	if got := strings.TrimSpace(rows.Eq(1).Find(`[data-testid="event-worker"]`).Text()); got != "w-1" {
		t.Errorf("claimed worker %q", got)
	}
	if got := strings.TrimSpace(rows.Eq(1).Find(`[data-testid="event-attempt"]`).Text()); got != "1" {
		t.Errorf("claimed attempt %q", got)
	}
	if got := rows.Eq(1).Find(`[data-testid="event-details"]`).Text(); !strings.Contains(got, "77") {
		t.Errorf("claimed token missing: %q", got)
	}
	errText := rows.Eq(2).Find(`[data-testid="event-error"]`).Text()
	if strings.Contains(errText, "hunter2") || !strings.Contains(errText, "[redacted]") || !strings.Contains(errText, xss) {
		t.Errorf("failed error text %q: want the DSN redacted and the markup as text", errText)
	}
	if doc.Find(`[data-testid="item-timeline"] img`).Length() != 0 {
		t.Error("the error's markup became an element")
	}
	if rows.Eq(2).Find(`[data-testid="event-next-due"]`).Length() != 1 || rows.Eq(3).Find(`[data-testid="event-signal"]`).Length() != 1 {
		t.Error("next due or signal missing")
	}
	if got := rows.Eq(5).Find(`[data-testid="event-reason"]`).Text(); got != "operator said stop" {
		t.Errorf("reason %q", got)
	}
	if got := rows.Eq(6).Find(`[data-testid="event-run-time"]`).Text(); got == "" {
		t.Error("no run time on the completion")
	}
	if got := testids(doc, "timeline-counts").Text(); !strings.Contains(got, "3 dropped") || !strings.Contains(got, "9 heartbeats") {
		t.Errorf("counts %q", got)
	}
	if testids(doc, "timeline-dropped").Length() != 1 {
		t.Error("no word on the dropped events")
	}

	var api view.ItemView
	f.api(nil, "/api/item?tenant=acme&id=done-1", http.StatusOK, &api)
	if !api.Found || !api.History || api.State != "completed" || len(api.Events) != 7 || api.Dropped != 3 || api.Heartbeats != 9 || api.FinishedAt.IsZero() {
		t.Fatalf("api twin: %+v", api)
	}
	if e := api.Events[6]; e.Kind != "completed" || e.RunTimeSeconds != 1.5 || e.Worker != "w-2" || e.Attempt != 2 {
		t.Errorf("api completed event %+v", e)
	}
	if e := api.Events[1]; e.Token != 77 {
		t.Errorf("api claimed event %+v", e)
	}
	_, body := f.do(nil, http.MethodGet, "/api/item?tenant=acme&id=done-1", nil, nil)
	if strings.Contains(body, "hunter2") || strings.Contains(body, testToken) {
		t.Error("the api twin holds a secret")
	}

	// A live item with no recorded event, on a queue that records none.
	doc = f.page(nil, "/item?tenant=acme&id=acme-1", http.StatusOK)
	if got := testids(doc, "history-note").Text(); got != view.NoEventsNote {
		t.Errorf("note on a queue recording nothing: %q", got)
	}
	// An unknown item offers to find its id everywhere.
	doc = f.page(nil, "/item?tenant=acme&id=nope", http.StatusNotFound)
	if href, _ := testids(doc, "item-find-id").Attr("href"); href != "/find?id=nope" {
		t.Errorf("find link %q", href)
	}
}

type goquerySel = *goquery.Selection

// finishedItems puts n finished items in the keptHistory, newest first,
// one a second, alternating tenant and state.
func finishedItems(kh *keptHistory, now time.Time, n int) {
	for i := range n {
		st, tenant := contract.StateCompleted, "acme"
		if i%3 == 2 {
			st = contract.StateCancelled
		}
		if i%2 == 1 {
			tenant = "globex"
		}
		it := contract.Item{Tenant: tenant, Queue: contract.DefaultQueue, ID: fmt.Sprintf("f-%03d", i), State: st, Attempts: 1,
			FinishedAt: now.Add(-time.Duration(i) * time.Second)}
		if st == contract.StateCancelled {
			it.CancelReason = "no longer needed"
		}
		kh.finished = append(kh.finished, it)
	}
}

// TestFinishedPage: the finished items newest first, filtered by tenant,
// state, id and time, paged older and newer by the links; the /api/
// twin's cursors page the same; bad input is refused naming the field.
func TestFinishedPage(t *testing.T) {
	f, kh := newHistoryFixture(t)
	now := f.clock.Now()
	finishedItems(kh, now, 120)
	kh.ret[contract.DefaultQueue] = contract.Retention{Age: time.Hour, Count: 10000, Events: 50}

	doc := f.page(nil, "/finished", http.StatusOK)
	rows := testids(doc, "finished-row")
	if rows.Length() != 50 || strings.TrimSpace(rows.First().Find(`[data-testid="finished-item"]`).Text()) != "f-000" {
		t.Fatalf("first page: %d rows, first %q", rows.Length(), rows.First().Find(`[data-testid="finished-item"]`).Text())
	}
	if testids(doc, "finished-newer").Length() != 0 {
		t.Error("the first page offers newer items")
	}
	if got := testids(doc, "finished-retention").Text(); !strings.Contains(got, "1h0m0s") || !strings.Contains(got, "10,000") {
		t.Errorf("retention line %q", got)
	}
	older, _ := testids(doc, "finished-older").Attr("href")
	doc = f.page(nil, older, http.StatusOK)
	if got := strings.TrimSpace(testids(doc, "finished-item").First().Text()); got != "f-050" {
		t.Errorf("older page starts at %q, want f-050", got)
	}
	newer, _ := testids(doc, "finished-newer").Attr("href")
	doc = f.page(nil, newer, http.StatusOK)
	if got := strings.TrimSpace(testids(doc, "finished-item").First().Text()); got != "f-000" {
		t.Errorf("newer page starts at %q, want f-000", got)
	}

	// Filters: tenant, state, id and a time range.
	doc = f.page(nil, "/finished?tenant=globex&state=cancelled", http.StatusOK)
	testids(doc, "finished-row").Each(func(_ int, r goquerySel) {
		id := strings.TrimSpace(r.Find(`[data-testid="finished-item"]`).Text())
		n, _ := strconv.Atoi(strings.TrimPrefix(id, "f-"))
		if n%2 != 1 || n%3 != 2 {
			t.Errorf("%s is not a cancelled globex item", id)
		}
	})
	if testids(doc, "finished-row").Length() != 20 {
		t.Errorf("%d cancelled globex rows, want 20", testids(doc, "finished-row").Length())
	}
	since := now.Add(-10 * time.Second).UTC().Format(time.RFC3339)
	until := now.Add(-4 * time.Second).UTC().Format(time.RFC3339)
	var api view.Finished
	f.api(nil, "/api/finished?since="+url.QueryEscape(since)+"&until="+url.QueryEscape(until), http.StatusOK, &api)
	if len(api.Rows) != 6 || api.Rows[0].ID != "f-005" || api.Rows[5].ID != "f-010" || !api.History {
		t.Errorf("time range: %+v", api.Rows)
	}
	f.api(nil, "/api/finished?id=f-007", http.StatusOK, &api)
	if len(api.Rows) != 1 || api.Rows[0].Tenant != "globex" {
		t.Errorf("by id: %+v", api.Rows)
	}

	// The twin pages with its cursors.
	f.api(nil, "/api/finished?limit=40", http.StatusOK, &api)
	if len(api.Rows) != 40 || api.Next == "" || api.Prev != "" {
		t.Fatalf("api first page: %d rows next %q prev %q", len(api.Rows), api.Next, api.Prev)
	}
	f.api(nil, "/api/finished?limit=40&cursor="+url.QueryEscape(api.Next), http.StatusOK, &api)
	if api.Rows[0].ID != "f-040" || api.Prev == "" {
		t.Errorf("api older page starts %q prev %q", api.Rows[0].ID, api.Prev)
	}

	for _, bad := range []struct{ query, field string }{
		{"since=yesterday", "since"},
		{"state=dead", "state"},
		{"cursor=garbage", "cursor"},
		{"since=" + url.QueryEscape(until) + "&until=" + url.QueryEscape(since), "until"},
		{"limit=0", "limit"},
	} {
		_, body := f.do(nil, http.MethodGet, "/api/finished?"+bad.query, nil, nil)
		var e map[string]string
		if err := jsonOf(body, &e); err != nil || !strings.Contains(e["error"], bad.field) {
			t.Errorf("%s: %s, want a refusal naming %s", bad.query, body, bad.field)
		}
	}
}

// TestFindByID: the search box on every page finds an id in every queue
// and tenant, and the results link to the item pages; a scoped token
// finds only its own tenants' items.
func TestFindByID(t *testing.T) {
	f, kh := newHistoryFixture(t, func(c *Config) { c.Tokens = scopedTokens })
	ctx := t.Context()
	f.must(f.store.Enqueue(ctx, contract.Item{Tenant: "initech", Queue: "billing", ID: "order-9"}))
	for _, k := range []contract.ItemKey{{Tenant: "acme", Queue: "default", ID: "order-9"}, {Tenant: "globex", Queue: "default", ID: "order-9"}, {Tenant: "initech", Queue: "billing", ID: "order-9"}} {
		kh.hist[k] = contract.History{Item: contract.Item{Tenant: k.Tenant, Queue: k.Queue, ID: k.ID, State: contract.StateCompleted, FinishedAt: f.clock.Now()}}
	}
	ro := map[string]string{"Authorization": "Bearer " + roSecret}
	pageAs := func(path string) *goquery.Document {
		resp, body := f.do(nil, http.MethodGet, path, nil, ro)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, body)
		}
		return docOf(t, body)
	}
	doc := pageAs("/")
	if act, _ := testids(doc, "id-search").Attr("action"); act != "/find" || testids(doc, "id-search-input").AttrOr("name", "") != "id" {
		t.Fatalf("no search box in the layout: %q", act)
	}
	doc = pageAs("/find?id=order-9")
	rows := testids(doc, "find-row")
	if rows.Length() != 3 {
		t.Fatalf("%d rows, want 3", rows.Length())
	}
	href, _ := rows.Find(`[data-testid="find-item"]`).First().Attr("href")
	if href != "/item?id=order-9&queue=billing&tenant=initech" {
		t.Errorf("first result links to %q", href)
	}
	var api view.Find
	_, body := f.do(nil, http.MethodGet, "/api/find?id=order-9&queue=default", nil, ro)
	f.must(jsonOf(body, &api))
	if len(api.Rows) != 2 || !slices.Equal(api.Searched, []string{"default"}) || api.Rows[0].Tenant != "acme" {
		t.Errorf("in one queue: %+v", api)
	}
	// A token of acme sees acme's only, from every queue it sees.
	resp, body := f.do(nil, http.MethodGet, "/api/find?id=order-9", nil, map[string]string{"Authorization": "Bearer " + acmeROSecret})
	api = view.Find{}
	if err := jsonOf(body, &api); resp.StatusCode != http.StatusOK || err != nil || len(api.Rows) != 1 || api.Rows[0].Tenant != "acme" {
		t.Errorf("acme's token: %d %s", resp.StatusCode, body)
	}
	if strings.Contains(body, "globex") || strings.Contains(body, "initech") {
		t.Errorf("acme's token sees another tenant: %s", body)
	}
	resp, _ = f.do(nil, http.MethodGet, "/api/find?id=order-9&queue=billing", nil, map[string]string{"Authorization": "Bearer " + otherQSecret})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a token of another queue asking for billing: %d", resp.StatusCode)
	}
	_, body = f.do(nil, http.MethodGet, "/api/find?id="+url.QueryEscape("bad id\x00"), nil, map[string]string{"Authorization": "Bearer " + roSecret})
	if !strings.Contains(body, "id") || !strings.Contains(body, "error") {
		t.Errorf("a bad id: %s", body)
	}
}

// TestEventsPage: without a cursor the page shows the queue's latest
// events, newest first, read through the whole log; its newer link reads
// what was recorded since; the twin says the same.
func TestEventsPage(t *testing.T) {
	f, kh := newHistoryFixture(t)
	now := f.clock.Now()
	kh.ret[contract.DefaultQueue] = contract.Retention{Events: 50}
	for i := range 2500 {
		kh.log = append(kh.log, contract.Event{Kind: contract.EventClaimed, At: now.Add(time.Duration(i) * time.Millisecond), Tenant: "acme", ID: fmt.Sprintf("e-%04d", i), Worker: "w", Attempt: 1})
	}
	doc := f.page(nil, "/events", http.StatusOK)
	rows := testids(doc, "events-row")
	if rows.Length() != 100 {
		t.Fatalf("%d rows, want 100", rows.Length())
	}
	if got := strings.TrimSpace(rows.First().Find(`[data-testid="event-item"]`).Text()); !strings.Contains(got, "e-2499") {
		t.Errorf("newest row %q, want e-2499", got)
	}
	href, _ := rows.First().Find(`[data-testid="event-item"]`).Attr("href")
	if href != "/item?id=e-2499&queue=default&tenant=acme" {
		t.Errorf("event links to %q", href)
	}
	next, _ := testids(doc, "events-newer").Attr("href")
	kh.log = append(kh.log, contract.Event{Kind: contract.EventCompleted, At: now.Add(time.Hour), Tenant: "globex", ID: "late", RunTime: time.Second})
	doc = f.page(nil, next, http.StatusOK)
	if rows := testids(doc, "events-row"); rows.Length() != 1 || rows.AttrOr("data-kind", "") != "completed" {
		t.Errorf("events since: %d rows", rows.Length())
	}
	var api view.Events
	f.api(nil, "/api/events?limit=10", http.StatusOK, &api)
	if len(api.Rows) != 10 || api.Rows[0].ID != "late" || api.Next == "" || !api.Recording {
		t.Errorf("api: %+v", api)
	}
	f.api(nil, "/api/events?cursor="+url.QueryEscape(api.Next), http.StatusOK, &api)
	if len(api.Rows) != 0 || api.Next == "" {
		t.Errorf("api at the end: %+v", api)
	}
	kh.ret[contract.DefaultQueue] = contract.Retention{}
	doc = f.page(nil, "/events", http.StatusOK)
	if testids(doc, "events-note").Text() != view.NoEventsNote {
		t.Error("a queue recording nothing does not say so")
	}
}

// TestRetentionForm: the queue page shows the retention and changes it
// through its form (CSRF-checked, like every form), refuses bad values
// naming the field and changing nothing, prunes on its button, and the
// /api/ twins do the same for a bearer.
func TestRetentionForm(t *testing.T) {
	f, kh := newHistoryFixture(t, func(c *Config) { c.Tokens = scopedTokens })
	c, _ := f.signIn()
	doc := f.page(c, "/queue", http.StatusOK)
	csrf, _ := testids(doc, "retention-form").Find(`input[name="csrf"]`).Attr("value")
	if csrf == "" {
		t.Fatal("the retention form has no CSRF field")
	}
	if got := testids(doc, "retention-text").Text(); !strings.Contains(got, "nothing") {
		t.Errorf("retention before any: %q", got)
	}
	get := func() contract.Retention { r, _ := kh.Retention(t.Context(), contract.DefaultQueue); return r }

	// Refused: no CSRF, a wrong one, no sign-in at all.
	vals := url.Values{"queue": {"default"}, "age": {"1h"}, "count": {"10000"}, "events": {"50"}}
	if resp, _ := f.postForm(c, "/retention", vals); resp.StatusCode != http.StatusForbidden {
		t.Errorf("without a CSRF token: %d", resp.StatusCode)
	}
	vals.Set("csrf", csrf+"0")
	if resp, _ := f.postForm(c, "/retention", vals); resp.StatusCode != http.StatusForbidden {
		t.Errorf("with a wrong CSRF token: %d", resp.StatusCode)
	}
	if resp, _ := f.postForm(nil, "/retention", vals); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("signed out: %d", resp.StatusCode)
	}
	if resp, _ := f.postForm(c, "/prune", url.Values{"queue": {"default"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("prune without a CSRF token: %d", resp.StatusCode)
	}
	if get() != (contract.Retention{}) || kh.prunes != 0 {
		t.Fatalf("refused requests changed something: %+v, %d prunes", get(), kh.prunes)
	}

	// Done.
	vals.Set("csrf", csrf)
	resp, body := f.postForm(c, "/retention", vals)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/queue?queue=default" {
		t.Fatalf("save: %d to %q\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if r := get(); r != (contract.Retention{Age: time.Hour, Count: 10000, Events: 50}) {
		t.Errorf("retention %+v", r)
	}
	doc = f.page(c, "/queue", http.StatusOK)
	if testids(doc, "flash").Text() != "Retention saved." || testids(doc, "retention-age").AttrOr("value", "") != "1h0m0s" {
		t.Errorf("after save: flash %q, age %q", testids(doc, "flash").Text(), testids(doc, "retention-age").AttrOr("value", ""))
	}

	// A bad value comes back naming the field, nothing changed.
	for _, bad := range []struct{ field, value string }{{"age", "forever"}, {"count", "-1"}, {"events", "5000"}, {"age", "400000h"}} {
		v := url.Values{"csrf": {csrf}, "queue": {"default"}, "age": {"2h"}, "count": {"5"}, "events": {"5"}}
		v.Set(bad.field, bad.value)
		resp, body := f.postForm(c, "/retention", v)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "retention."+bad.field) {
			t.Errorf("%s=%s: %d", bad.field, bad.value, resp.StatusCode)
		}
		d := docOf(t, body)
		if d.Find(`[data-testid="retention-`+bad.field+`"]`).AttrOr("aria-invalid", "") != "true" || d.Find(`[data-testid="retention-`+bad.field+`"]`).AttrOr("value", "") != bad.value {
			t.Errorf("%s=%s: the field is not marked or not kept as typed", bad.field, bad.value)
		}
	}
	if r := get(); r != (contract.Retention{Age: time.Hour, Count: 10000, Events: 50}) {
		t.Errorf("a refused change changed the retention: %+v", r)
	}

	// Prune: as many batches as it takes, within the bound.
	kh.toPrune = 1500
	resp, _ = f.postForm(c, "/prune", url.Values{"csrf": {csrf}, "queue": {"default"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("prune: %d", resp.StatusCode)
	}
	doc = f.page(c, "/queue", http.StatusOK)
	if got := testids(doc, "flash").Text(); got != "Pruned 1,500 finished items." {
		t.Errorf("prune flash %q", got)
	}

	// The API twins, with a bearer.
	bearer := func(secret string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + secret}
	}
	resp, body = f.do(nil, http.MethodPut, "/api/retention", strings.NewReader(`{"queue":"default","retention":{"age":"30m","count":0,"events":10}}`), bearer(testToken))
	var res RetentionResult
	if err := jsonOf(body, &res); resp.StatusCode != http.StatusOK || err != nil || res.Retention.Age != "30m0s" || res.Retention.Events != 10 || res.Retention.Keeps != true {
		t.Errorf("PUT /api/retention: %d %s", resp.StatusCode, body)
	}
	var got RetentionResult
	_, body = f.do(nil, http.MethodGet, "/api/retention", nil, bearer(roSecret))
	f.must(jsonOf(body, &got))
	if got.Retention != res.Retention || got.Queue != "default" {
		t.Errorf("GET /api/retention: %+v", got)
	}
	var qp view.QueuePage
	_, body = f.do(nil, http.MethodGet, "/api/queue", nil, bearer(roSecret))
	f.must(jsonOf(body, &qp))
	if !qp.History || qp.Retention == nil || *qp.Retention != res.Retention {
		t.Errorf("/api/queue retention: %+v", qp.Retention)
	}
	for _, refused := range []struct {
		name, secret, body string
		code               int
	}{
		{"a read-only token", roSecret, `{"queue":"default","retention":{"events":1}}`, http.StatusForbidden},
		{"a token of one tenant", acmeRWSecret, `{"queue":"default","retention":{"events":1}}`, http.StatusForbidden},
		{"a bad age", testToken, `{"queue":"default","retention":{"age":"1y"}}`, http.StatusBadRequest},
		{"an unknown field", testToken, `{"queue":"default","keep":true}`, http.StatusBadRequest},
	} {
		resp, body := f.do(nil, http.MethodPost, "/api/retention", strings.NewReader(refused.body), bearer(refused.secret))
		if resp.StatusCode != refused.code {
			t.Errorf("%s: %d, want %d: %s", refused.name, resp.StatusCode, refused.code, body)
		}
	}
	if r := get(); r != (contract.Retention{Age: 30 * time.Minute, Events: 10}) {
		t.Errorf("refused API calls changed the retention: %+v", r)
	}
	kh.toPrune = 10*contract.PruneBatch + 7
	resp, body = f.do(nil, http.MethodPost, "/api/prune", strings.NewReader(`{"queue":"default"}`), bearer(testToken))
	var pr PruneResult
	if err := jsonOf(body, &pr); resp.StatusCode != http.StatusOK || err != nil || pr.Count != 10*contract.PruneBatch || !pr.More {
		t.Errorf("POST /api/prune: %d %s", resp.StatusCode, body)
	}
	resp, _ = f.do(nil, http.MethodPost, "/api/prune", strings.NewReader(`{"queue":"default"}`), bearer(acmeRWSecret))
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("prune by a token of one tenant: %d", resp.StatusCode)
	}
	// The audit trail records both kinds.
	var audit view.Audit
	resp, body = f.do(nil, http.MethodGet, "/api/audit", nil, bearer(testToken))
	if err := jsonOf(body, &audit); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("audit: %d %s", resp.StatusCode, body)
	}
	seen := map[string]bool{}
	for _, e := range audit.Entries {
		seen[e.Action+"/"+e.Outcome] = true
	}
	for _, want := range []string{"set-retention/done", "set-retention/refused", "prune/done", "prune/refused"} {
		if !seen[want] {
			t.Errorf("no %s audit entry", want)
		}
	}
}

// TestNoHistory: on a backing that keeps no history every history page
// and twin says so plainly, and the changes are 501, changing nothing.
func TestNoHistory(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{Policy: fixturePolicy})
	f := newFixtureOn(t, testToken, clock, "memory", hiddenHistory{store}, store, store)
	f.store = store
	for _, path := range []string{"/finished", "/find?id=x", "/events"} {
		doc := f.page(nil, path, http.StatusOK)
		if got := testids(doc, "history-unsupported").Text(); got != view.NoHistoryNote {
			t.Errorf("%s: note %q", path, got)
		}
		var twin struct {
			History bool   `json:"history"`
			Note    string `json:"note"`
		}
		f.api(nil, "/api"+path, http.StatusOK, &twin)
		if twin.History || twin.Note != view.NoHistoryNote {
			t.Errorf("/api%s: %+v", path, twin)
		}
	}
	doc := f.page(nil, "/queue", http.StatusOK)
	if testids(doc, "retention-panel").Find(`[data-testid="history-unsupported"]`).Text() != view.NoHistoryNote || testids(doc, "retention-form").Length() != 0 {
		t.Error("the queue page offers retention on a backing without history")
	}
	doc = f.page(nil, "/item?tenant=acme&id=acme-1", http.StatusOK)
	if testids(doc, "history-note").Text() != view.NoHistoryNote || testids(doc, "timeline-row").Length() != 0 {
		t.Error("the item page does not say the backing keeps no history")
	}
	for _, path := range []string{"/api/retention", "/api/prune"} {
		resp, body := f.do(nil, http.MethodPost, path, strings.NewReader(`{"queue":"default"}`), map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + testToken})
		if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(body, "keeps no history") {
			t.Errorf("POST %s: %d %s", path, resp.StatusCode, body)
		}
	}
	if resp, _ := f.do(nil, http.MethodGet, "/api/retention", nil, nil); resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("GET /api/retention: %d", resp.StatusCode)
	}
}

func docOf(t *testing.T, body string) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestHistoryOnMemstore: the pages over a backing's own history. An item
// enqueued, failed once and completed under a retention shows its whole
// timeline, is listed as finished, found by its id alone and seen in the
// queue's log; a prune past the retention's age removes it.
func TestHistoryOnMemstore(t *testing.T) { checkHistoryPages(t, newFixture(t, testToken)) }

// checkHistoryPages runs the history pages over the fixture's backing,
// which must keep history.
func checkHistoryPages(t *testing.T, f *fixture) {
	hk, ok := contract.AsHistoryKeeper(f.q)
	if !ok {
		t.Fatal("the backing keeps no history")
	}
	ctx := t.Context()
	f.must(hk.SetRetention(ctx, "jobs", contract.Retention{Age: time.Hour, Count: 100, Events: 50}))
	f.must(f.q.Enqueue(ctx, contract.Item{Tenant: "acme", Queue: "jobs", ID: "job-1", Payload: []byte("x")}))
	claim := func() contract.Lease {
		t.Helper()
		ls, err := f.q.Claim(ctx, contract.ClaimRequest{Queue: "jobs", Worker: "w-9", LeaseFor: time.Minute, Max: 1})
		f.must(err)
		if len(ls) != 1 {
			t.Fatalf("claimed %d", len(ls))
		}
		return ls[0]
	}
	_, err := f.q.Fail(ctx, claim(), errors.New("flaky upstream"))
	f.must(err)
	f.clock.Advance(10 * time.Second)
	l := claim()
	f.clock.Advance(2 * time.Second)
	f.must(f.q.Complete(ctx, l))

	doc := f.page(nil, "/item?queue=jobs&tenant=acme&id=job-1", http.StatusOK)
	if got := testids(doc, "item-state").Text(); got != "completed" {
		t.Errorf("state %q", got)
	}
	var kinds []string
	testids(doc, "timeline-row").Each(func(_ int, r goquerySel) { kinds = append(kinds, r.AttrOr("data-kind", "")) })
	if strings.Join(kinds, ",") != "enqueued,claimed,failed,claimed,completed" {
		t.Errorf("timeline %v", kinds)
	}
	var item view.ItemView
	f.api(nil, "/api/item?queue=jobs&tenant=acme&id=job-1", http.StatusOK, &item)
	if n := len(item.Events); n != 5 || item.Events[2].Error != "flaky upstream" || item.Events[4].RunTimeSeconds != 2 || item.Events[4].Attempt != 2 {
		t.Errorf("api timeline: %+v", item.Events)
	}

	var fin view.Finished
	f.api(nil, "/api/finished?queue=jobs", http.StatusOK, &fin)
	if len(fin.Rows) != 1 || fin.Rows[0].ID != "job-1" || fin.Rows[0].State != "completed" || fin.Next != "" || fin.Prev != "" {
		t.Errorf("finished: %+v", fin)
	}
	doc = f.page(nil, "/finished?queue=jobs&state=completed", http.StatusOK)
	if testids(doc, "finished-row").Length() != 1 {
		t.Errorf("finished page rows: %d", testids(doc, "finished-row").Length())
	}
	var found view.Find
	f.api(nil, "/api/find?id=job-1&queue=jobs", http.StatusOK, &found)
	if len(found.Rows) != 1 || found.Rows[0].Queue != "jobs" || !slices.Equal(found.Searched, []string{"jobs"}) {
		t.Errorf("find in jobs: %+v", found)
	}
	if f.store != nil {
		// memstore lists a queue holding only kept items among its queues,
		// so the search of every queue reaches it.
		f.api(nil, "/api/find?id=job-1", http.StatusOK, &found)
		if len(found.Rows) != 1 || found.Rows[0].Queue != "jobs" || !slices.Contains(found.Searched, "default") {
			t.Errorf("find in every queue: %+v", found)
		}
	}
	var ev view.Events
	f.api(nil, "/api/events?queue=jobs", http.StatusOK, &ev)
	if len(ev.Rows) != 5 || ev.Rows[0].Kind != "completed" || ev.Rows[0].ID != "job-1" || ev.Rows[4].Kind != "enqueued" {
		t.Errorf("events: %+v", ev.Rows)
	}

	f.clock.Advance(2 * time.Hour)
	code, body := f.postJSON(testToken, "/api/prune", `{"queue":"jobs"}`)
	var pr PruneResult
	if err := jsonOf(body, &pr); code != http.StatusOK || err != nil || pr.Count != 1 || pr.More {
		t.Errorf("prune: %d %s", code, body)
	}
	f.page(nil, "/item?queue=jobs&tenant=acme&id=job-1", http.StatusNotFound)
}

// TestHistoryScoped: a token scoped to tenants sees its own tenants'
// finished items, events and timelines only.
func TestHistoryScoped(t *testing.T) {
	f, kh := newHistoryFixture(t, func(c *Config) { c.Tokens = scopedTokens })
	now := f.clock.Now()
	finishedItems(kh, now, 20)
	kh.ret[contract.DefaultQueue] = contract.Retention{Events: 5}
	kh.log = []contract.Event{{Kind: contract.EventClaimed, At: now, Tenant: "acme", ID: "a"}, {Kind: contract.EventClaimed, At: now, Tenant: "globex", ID: "g"}}
	kh.hist[contract.ItemKey{Tenant: "globex", Queue: "default", ID: "f-001"}] = contract.History{Item: kh.finished[1]}
	get := func(secret, path string) (int, string) {
		resp, body := f.do(nil, http.MethodGet, path, nil, map[string]string{"Authorization": "Bearer " + secret})
		return resp.StatusCode, body
	}
	var fin view.Finished
	code, body := get(acmeROSecret, "/api/finished")
	if err := jsonOf(body, &fin); code != http.StatusOK || err != nil || len(fin.Rows) != 10 {
		t.Fatalf("acme's finished: %d %s", code, body)
	}
	for _, r := range fin.Rows {
		if r.Tenant != "acme" {
			t.Errorf("acme's token sees %s's item", r.Tenant)
		}
	}
	if code, body := get(acmeGlxSecret, "/api/finished"); code != http.StatusBadRequest || !strings.Contains(body, "tenant") {
		t.Errorf("a token of two tenants naming none: %d %s", code, body)
	}
	if code, _ := get(acmeROSecret, "/api/finished?tenant=globex"); code != http.StatusForbidden {
		t.Errorf("acme's token asking for globex: %d", code)
	}
	var ev view.Events
	code, body = get(acmeROSecret, "/api/events")
	if err := jsonOf(body, &ev); code != http.StatusOK || err != nil || len(ev.Rows) != 1 || ev.Rows[0].Tenant != "acme" {
		t.Errorf("acme's events: %d %s", code, body)
	}
	if code, _ := get(acmeROSecret, "/api/item?tenant=globex&id=f-001"); code != http.StatusForbidden {
		t.Errorf("acme's token reading globex's timeline: %d", code)
	}
	if code, _ := get(roSecret, "/api/item?tenant=globex&id=f-001"); code != http.StatusOK {
		t.Errorf("an all-tenant token reading globex's finished item: %d", code)
	}
}
