package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard"
	"github.com/adkit/adk/modules/policy"
)

// deadSeed are the dead letters the dashboard fuzz target filters: tenant,
// id and the error each died with.
var deadSeed = []struct{ tenant, id, cause string }{
	{"acme", "i1", "timeout talking to the model"},
	{"acme", "i2", "rate limited: 429"},
	{"a:b", "x", "bad tool call <script>alert(1)</script>"},
	{"a", "b:x", "panic: nil map"},
	{"{x}", "y", "context deadline exceeded"},
	{"ünï", "ĉ", "ünïcode error ✓"},
}

// FuzzDashboardDeadFilter drives the dashboard's dead-letter filter (the
// queue, tenant, id and error query parameters of /dead and /api/dead)
// with arbitrary strings. The dashboard exports no parsing function, so
// the target goes through its HTTP handler, in process: a filter
// contract.ValidateFilter accepts lists exactly the dead letters it
// matches; any other is a 400 with a JSON error; nothing is ever a 5xx;
// and markup in a parameter never reaches the page unescaped.
func FuzzDashboardDeadFilter(f *testing.F) {
	ctx := context.Background()
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{Policy: policy.Policy{MaxAttempts: 1, Jitter: policy.Fixed(0)}})
	for _, d := range deadSeed {
		if err := store.Enqueue(ctx, contract.Item{Tenant: d.tenant, ID: d.id, Payload: []byte("p")}); err != nil {
			f.Fatal(err)
		}
	}
	for range deadSeed {
		ls, err := store.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
		if err != nil {
			f.Fatal(err)
		}
		for _, d := range deadSeed {
			if d.tenant == ls[0].Item.Tenant && d.id == ls[0].Item.ID {
				if _, err := store.Fail(ctx, ls[0], policy.Permanent(errors.New(d.cause))); err != nil {
					f.Fatal(err)
				}
			}
		}
	}
	srv, err := dashboard.New(dashboard.Config{Queue: store, Inspector: store, Clock: clock, SampleEvery: time.Hour, Refresh: -1})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = srv.Close() })

	f.Add("", "", "", "")
	f.Add("default", "acme", "", "")
	f.Add("default", "a:b", "x", "script")
	f.Add("", "{x}", "", "deadline")
	f.Add("default", "", "", "<xss onload=1>")
	f.Add("de\x00fault", "a\xff", "", "")
	f.Add("other", "acme", "i1", "")
	f.Add("default", "ünï", "ĉ", "✓")
	f.Fuzz(func(t *testing.T, queue, tenant, id, errText string) {
		q := url.Values{}
		for k, v := range map[string]string{"queue": queue, "tenant": tenant, "id": id, "error": errText} {
			if v != "" {
				q.Set(k, v)
			}
		}
		filter := contract.DeadLetterFilter{Queue: contract.QueueName(queue), Tenant: tenant, ID: id, ErrorContains: errText}
		valid := contract.ValidateFilter(filter) == nil

		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/dead?"+q.Encode(), nil))
		switch {
		case rec.Code >= 500:
			t.Fatalf("/api/dead?%s: %d %s", q.Encode(), rec.Code, rec.Body)
		case !valid && rec.Code != http.StatusBadRequest:
			t.Fatalf("invalid filter %+v answered %d, want 400", filter, rec.Code)
		case !valid:
			var e map[string]string
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e["error"] == "" {
				t.Fatalf("400 without a JSON error: %s", rec.Body)
			}
		case rec.Code != http.StatusOK:
			t.Fatalf("valid filter %+v answered %d: %s", filter, rec.Code, rec.Body)
		default:
			var page struct {
				Rows []struct {
					Tenant, ID string
				} `json:"dead_letters"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
				t.Fatalf("bad JSON: %v", err)
			}
			var got, want []string
			for _, r := range page.Rows {
				got = append(got, r.Tenant+"/"+r.ID)
			}
			if filter.Queue == contract.DefaultQueue {
				for _, d := range deadSeed {
					if filter.Matches(contract.Item{Tenant: d.tenant, ID: d.id, LastError: d.cause}) {
						want = append(want, d.tenant+"/"+d.id)
					}
				}
			}
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("filter %+v listed %q, want %q", filter, got, want)
			}
		}

		rec = httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/dead?"+q.Encode(), nil))
		if rec.Code >= 500 {
			t.Fatalf("/dead?%s: %d", q.Encode(), rec.Code)
		}
		body := rec.Body.String()
		for _, v := range []string{queue, tenant, id, errText} {
			if strings.Contains(v, "<xss") && strings.Contains(body, "<xss") {
				t.Fatalf("parameter %q reached the page unescaped", v)
			}
		}
	})
}
