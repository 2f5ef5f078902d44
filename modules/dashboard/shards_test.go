package dashboard

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
)

// shardedStore is a memstore that reports shards as a sharded backing
// would: what the test sets, or the test's error.
type shardedStore struct {
	*memstore.Store
	mu     sync.Mutex
	shards []contract.ShardStats
	err    error
	asked  []string
}

func (s *shardedStore) Shards(_ context.Context, queue string) ([]contract.ShardStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, queue)
	return s.shards, s.err
}

func (s *shardedStore) set(shards []contract.ShardStats, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shards, s.err = shards, err
}

func newShardedFixture(t *testing.T) (*fixture, *shardedStore) {
	t.Helper()
	clock := contracttest.NewFakeClock(time.Time{})
	store := &shardedStore{Store: memstore.New(clock, memstore.Settings{Policy: fixturePolicy})}
	f := newFixtureOn(t, testToken, clock, "memory", store, store, store, func(c *Config) { c.Tokens = scopedTokens })
	f.store = store.Store
	return f, store
}

var threeShards = []contract.ShardStats{
	{Shard: 0, Node: "10.0.0.1:7000", Slot: 866, Tenants: 2, Queued: 30, Leased: 1, ClaimRate: 1.5},
	{Shard: 1, Node: "10.0.0.2:7001", Slot: 5061, Tenants: 1, Queued: 4, Leased: 2, ClaimRate: 0.25},
	{Shard: 2, Node: "10.0.0.3:7002", Slot: 13598, Tenants: 3, Queued: 7, Leased: 0, ClaimRate: 0},
}

// The queue page shows a sharded queue's shards, one row each with its
// server, slot and numbers, and their sums; /api/shards and /api/queue
// carry the same.
func TestShardsSection(t *testing.T) {
	f, store := newShardedFixture(t)
	store.set(threeShards, nil)
	all := bearer(roSecret)

	resp, body := f.do(nil, http.MethodGet, "/queue", nil, all)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/queue: %d\n%s", resp.StatusCode, body)
	}
	doc := docOf(t, body)
	if got := testids(doc, "shards-count").Text(); got != "3 shards" {
		t.Errorf("shards count %q", got)
	}
	rows := testids(doc, "shard-row")
	if rows.Length() != 3 {
		t.Fatalf("%d shard rows, want 3", rows.Length())
	}
	for i, want := range [][]string{
		{"0", "10.0.0.1:7000", "866", "2", "30", "1", "1.5/s"},
		{"1", "10.0.0.2:7001", "5061", "1", "4", "2", "0.2/s"},
		{"2", "10.0.0.3:7002", "13598", "3", "7", "0", "0.0/s"},
	} {
		r := rows.Eq(i)
		var got []string
		for _, id := range []string{"shard-index", "shard-node", "shard-slot", "shard-tenants", "shard-queued", "shard-leased", "shard-rate"} {
			got = append(got, strings.TrimSpace(r.Find(`[data-testid="`+id+`"]`).Text()))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("shard row %d: %v, want %v", i, got, want)
		}
	}
	for id, want := range map[string]string{"shards-total-tenants": "6", "shards-total-queued": "41", "shards-total-leased": "3", "shards-total-rate": "1.8/s"} {
		if got := testids(doc, id).Text(); got != want {
			t.Errorf("%s %q, want %q", id, got, want)
		}
	}
	if testids(doc, "queue-pause").Length() != 1 {
		t.Error("the queue's controls are gone beside the shards")
	}

	var api struct {
		Queue   string
		Sharded bool
		Count   int
		Rows    []struct {
			Shard, Slot, Tenants, Queued, Leased int
			Node                                 string
			Rate                                 float64 `json:"claims_per_second"`
		}
		Total struct {
			Tenants, Queued, Leased int
			Rate                    float64 `json:"claims_per_second"`
		}
	}
	f.apiAs(all, "/api/shards?queue=default", http.StatusOK, &api)
	if api.Queue != "default" || !api.Sharded || api.Count != 3 || len(api.Rows) != 3 {
		t.Fatalf("/api/shards: %+v", api)
	}
	for i, r := range api.Rows {
		w := threeShards[i]
		if r.Shard != w.Shard || r.Node != w.Node || r.Slot != w.Slot || r.Tenants != w.Tenants || r.Queued != w.Queued || r.Leased != w.Leased || r.Rate != w.ClaimRate {
			t.Errorf("/api/shards row %d: %+v, want %+v", i, r, w)
		}
	}
	if api.Total.Tenants != 6 || api.Total.Queued != 41 || api.Total.Leased != 3 || api.Total.Rate != 1.75 {
		t.Errorf("/api/shards total %+v", api.Total)
	}
	var qp struct {
		Shards *struct {
			Count int
			Rows  []struct{ Node string }
		}
	}
	f.apiAs(all, "/api/queue", http.StatusOK, &qp)
	if qp.Shards == nil || qp.Shards.Count != 3 || len(qp.Shards.Rows) != 3 || qp.Shards.Rows[2].Node != "10.0.0.3:7002" {
		t.Errorf("/api/queue shards: %+v", qp.Shards)
	}

	// A token scoped to its queue sees all of the queue's tenants, and so
	// the shards' numbers; one outside the queue is refused.
	otherQ := bearer(otherQSecret)
	var other struct {
		Sharded bool
		Rows    []struct{ Node string }
	}
	store.set(threeShards, nil)
	f.apiAs(otherQ, "/api/shards?queue=other", http.StatusOK, &other)
	if !other.Sharded || len(other.Rows) != 3 {
		t.Errorf("queue-scoped token's shards: %+v", other)
	}
	if resp, body := f.do(nil, http.MethodGet, "/api/shards?queue=default", nil, otherQ); resp.StatusCode != http.StatusForbidden {
		t.Errorf("queue-scoped token on another queue: %d %s", resp.StatusCode, body)
	}
	store.mu.Lock()
	asked := store.asked
	store.mu.Unlock()
	if asked[len(asked)-1] != "other" {
		t.Errorf("the backing was asked for the shards of %q", asked[len(asked)-1])
	}
}

// A tenant-scoped token learns how many shards there are and nothing of
// what is on them: each shard's counts sum tenants it does not see.
func TestShardsHiddenFromATenantScope(t *testing.T) {
	f, store := newShardedFixture(t)
	store.set(threeShards, nil)
	acme := bearer(acmeROSecret)
	resp, body := f.do(nil, http.MethodGet, "/queue", nil, acme)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/queue as acme: %d\n%s", resp.StatusCode, body)
	}
	doc := docOf(t, body)
	if testids(doc, "shards").Length() != 1 || testids(doc, "shards-count").Text() != "3 shards" {
		t.Errorf("acme's queue page: no shards section, or count %q", testids(doc, "shards-count").Text())
	}
	if testids(doc, "shard-row").Length() != 0 || testids(doc, "shards-partial").Length() != 1 {
		t.Error("acme's queue page lists the shards' rows, or says nothing of why not")
	}
	for _, apiPath := range []string{"/api/shards", "/api/queue"} {
		_, body := f.do(nil, http.MethodGet, apiPath, nil, acme)
		for _, leak := range []string{"10.0.0.", `"queued"`, `"rows"`, `"total"`} {
			if strings.Contains(body, leak) {
				t.Errorf("%s as acme holds %s:\n%s", apiPath, leak, body)
			}
		}
		if !strings.Contains(body, `"count":3`) || !strings.Contains(body, `"partial"`) {
			t.Errorf("%s as acme: no count or partial note:\n%s", apiPath, body)
		}
	}
	if strings.Contains(body, "10.0.0.") {
		t.Errorf("acme's queue page names a shard's server:\n%s", body)
	}
}

// A queue of one shard (every redisstore queue reports one) shows no
// section; a failed report is the section's error, scrubbed of the DSN,
// and the rest of the page still serves.
func TestShardsOneShardAndFailures(t *testing.T) {
	f, store := newShardedFixture(t)
	all := bearer(roSecret)
	store.set(threeShards[:1], nil)
	_, body := f.do(nil, http.MethodGet, "/queue", nil, all)
	if doc := docOf(t, body); testids(doc, "shards").Length() != 0 || testids(doc, "queue-tenants").Length() != 1 {
		t.Errorf("one shard: the section shows, or the page lost its tenants\n%s", body)
	}
	var api struct {
		Sharded bool
		Count   int
		Rows    []any
	}
	f.apiAs(all, "/api/shards", http.StatusOK, &api)
	if api.Sharded || api.Count != 1 || api.Rows != nil {
		t.Errorf("/api/shards of one shard: %+v", api)
	}
	if _, body := f.do(nil, http.MethodGet, "/api/queue", nil, all); strings.Contains(body, `"shards"`) {
		t.Errorf("/api/queue of one shard holds shards:\n%s", body)
	}

	store.set(nil, errors.New("dial "+testDSN+": connection refused"))
	resp, body := f.do(nil, http.MethodGet, "/queue", nil, all)
	doc := docOf(t, body)
	if resp.StatusCode != http.StatusOK || testids(doc, "queue-tenants").Length() != 1 {
		t.Fatalf("/queue with the shards failing: %d\n%s", resp.StatusCode, body)
	}
	if msg := testids(doc, "shards-error").Text(); !strings.Contains(msg, "connection refused") || strings.Contains(msg, "hunter2") {
		t.Errorf("shards error %q", msg)
	}
	resp, body = f.do(nil, http.MethodGet, "/api/shards", nil, all)
	if resp.StatusCode < 500 || !strings.Contains(body, "connection refused") || strings.Contains(body, "hunter2") {
		t.Errorf("/api/shards failing: %d %s", resp.StatusCode, body)
	}

	// A backing that has no ShardReporter shows no section either.
	plain := newFixture(t, testToken)
	if doc := plain.page(nil, "/queue", http.StatusOK); testids(doc, "shards").Length() != 0 {
		t.Error("a queue without a ShardReporter shows a shards section")
	}
	var none struct{ Sharded bool }
	plain.api(nil, "/api/shards", http.StatusOK, &none)
	if none.Sharded {
		t.Error("/api/shards without a ShardReporter says sharded")
	}
}

func (f *fixture) apiAs(hdr map[string]string, path string, wantCode int, into any) {
	f.t.Helper()
	resp, body := f.do(nil, http.MethodGet, path, nil, hdr)
	if resp.StatusCode != wantCode {
		f.t.Fatalf("GET %s: status %d, want %d\n%s", path, resp.StatusCode, wantCode, body)
	}
	if into != nil {
		if err := jsonOf(body, into); err != nil {
			f.t.Fatalf("GET %s: %v\n%s", path, err, body)
		}
	}
}
