//go:build integration

package dashboard

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestShardsOnACluster: a queue of 3 shards on a self-started 3-master
// Redis Cluster, with items of 40 tenants and some of them claimed. The
// queue page and /api/shards show 3 shards on 3 distinct masters of the
// cluster, whose queued and leased items add up to what was enqueued and
// claimed, and to the totals shown beneath them.
func TestShardsOnACluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	client := cl.Client(t, &redis.ClusterOptions{})
	settings := redisstore.Settings{Shards: 3, Volatile: true}
	st, q, err := redisstore.New(client, nil, settings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	ctx := t.Context()
	const tenants, each, claimed = 40, 3, 25
	for i := range tenants {
		var items []contract.Item
		for j := range each {
			items = append(items, contract.Item{Tenant: "t" + strconv.Itoa(i), Queue: "agent", ID: "item-" + strconv.Itoa(j)})
		}
		if err := q.Enqueue(ctx, items...); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Queue: "agent", Worker: "w", LeaseFor: time.Minute, Max: claimed})
	if err != nil || len(ls) != claimed {
		t.Fatalf("claim: %d, %v", len(ls), err)
	}
	srv := newTestServer(t, Config{Queue: q, Inspector: q, State: st, Backing: "redis"})

	var api struct {
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
	rec := srv.get(t, "/api/shards?queue=agent")
	if rec.Code != 200 {
		t.Fatalf("/api/shards: %d %s", rec.Code, rec.Body.String())
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &api); err != nil {
		t.Fatal(err)
	}
	if !api.Sharded || api.Count != 3 || len(api.Rows) != 3 {
		t.Fatalf("/api/shards: %+v", api)
	}
	nodes := map[string]bool{}
	queued, leased, ten, rate := 0, 0, 0, 0.0
	for i, r := range api.Rows {
		if r.Shard != i || r.Slot < 0 || r.Slot >= 16384 || !slices.Contains(cl.Addrs(), r.Node) {
			t.Errorf("shard row %d: %+v (the cluster's nodes are %v)", i, r, cl.Addrs())
		}
		nodes[r.Node] = true
		queued += r.Queued
		leased += r.Leased
		ten += r.Tenants
		rate += r.Rate
	}
	if len(nodes) != 3 {
		t.Errorf("the 3 shards sit on %d masters: %+v", len(nodes), api.Rows)
	}
	if queued != tenants*each-claimed || leased != claimed || ten != tenants || rate <= 0 {
		t.Errorf("shards hold %d queued, %d leased, %d tenants, %v claims/s; want %d, %d, %d, above 0",
			queued, leased, ten, rate, tenants*each-claimed, claimed, tenants)
	}
	if api.Total.Queued != queued || api.Total.Leased != leased || api.Total.Tenants != ten || api.Total.Rate != rate {
		t.Errorf("total %+v, the rows sum to %d queued, %d leased, %d tenants, %v/s", api.Total, queued, leased, ten, rate)
	}

	doc := srv.page(t, "/queue?queue=agent", 200)
	rows := testids(doc, "shard-row")
	if rows.Length() != 3 {
		t.Fatalf("the queue page shows %d shard rows", rows.Length())
	}
	pageNodes := map[string]bool{}
	for i := range rows.Length() {
		r := rows.Eq(i)
		n := strings.TrimSpace(r.Find(`[data-testid="shard-node"]`).Text())
		pageNodes[n] = true
		if n != api.Rows[i].Node || r.Find(`[data-testid="shard-queued"]`).Text() != strconv.Itoa(api.Rows[i].Queued) ||
			r.Find(`[data-testid="shard-leased"]`).Text() != strconv.Itoa(api.Rows[i].Leased) {
			t.Errorf("page row %d: %q, want %+v", i, r.Text(), api.Rows[i])
		}
	}
	if len(pageNodes) != 3 {
		t.Errorf("the page's shards sit on %d nodes", len(pageNodes))
	}
	if got := testids(doc, "shards-total-queued").Text(); got != strconv.Itoa(tenants*each-claimed) {
		t.Errorf("page total queued %q", got)
	}
	if got := testids(doc, "shards-total-leased").Text(); got != strconv.Itoa(claimed) {
		t.Errorf("page total leased %q", got)
	}
}
