//go:build integration

package redisstore_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// encodingQueue opens a queue on a namespace of its own, closed when the
// test ends, and returns it with its client, clock and the prefix of the
// default queue's keys.
func encodingQueue(t *testing.T) (*redisstore.RedisWorkQueue, *redis.Client, *contracttest.FakeClock, string) {
	t.Helper()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	q, err := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: ns})
	must(t, err)
	t.Cleanup(func() { _ = q.Close() })
	return q, client, clock, "{" + ns + ":queue}:q:" + lp("default") + ":"
}

// TestHotKeysHashed: a queue's lease hash and set, rotation, turns and
// served counts are kept in Redis's hashed encodings from its first
// enqueue on, and a queue whose keys are still packed (as an earlier
// release left them) gets them hashed by its next enqueue; the entry that
// does it is seen by no reader.
func TestHotKeysHashed(t *testing.T) {
	ctx := context.Background()
	q, client, clock, p := encodingQueue(t)
	want := map[string]string{"lease": "hashtable", "leases": "skiplist", "rot": "skiplist", "turns": "hashtable", "served": "hashtable"}
	check := func(when string) {
		t.Helper()
		for k, enc := range want {
			if got := client.ObjectEncoding(ctx, p+k).Val(); got != enc {
				t.Errorf("%s: %s encoded %q; want %s", when, k, got, enc)
			}
		}
	}
	must(t, q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "1"}, contract.Item{Tenant: "a", ID: "2"}))
	check("after the first enqueue")

	// An earlier release's queue: packed keys holding only their
	// placeholders (or the rotation's tenant), and no mark in the
	// lifecycle hash.
	must(t, client.HDel(ctx, p+"life", "wd").Err())
	must(t, client.Del(ctx, p+"lease", p+"leases", p+"rot", p+"turns", p+"served").Err())
	must(t, client.HSet(ctx, p+"lease", "", "").Err())
	must(t, client.ZAdd(ctx, p+"leases", redis.Z{Score: math.Inf(1), Member: ""}).Err())
	must(t, client.ZAdd(ctx, p+"rot", redis.Z{Score: math.Inf(1), Member: ""}, redis.Z{Score: 1, Member: "a"}).Err())
	must(t, client.HSet(ctx, p+"turns", "a", "1").Err())
	if enc := client.ObjectEncoding(ctx, p+"leases").Val(); enc == "skiplist" {
		t.Fatalf("the packed lease set of the earlier release's queue is already %q", enc)
	}
	must(t, q.Enqueue(ctx, contract.Item{Tenant: "b", ID: "1"}))
	check("after the next enqueue")

	// Readers see the leases, tenants and turns only.
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 2})
	must(t, err)
	if len(ls) != 2 || ls[0].Item.Tenant == ls[1].Item.Tenant {
		t.Fatalf("claimed %+v; want one item of a and one of b", ls)
	}
	rot, err := q.Rotation(ctx, "default", 10)
	must(t, err)
	if got := fmt.Sprint(rot.Order); got != "[a]" {
		t.Errorf("rotation order %s; want [a] (b has nothing left)", got)
	}
	var leased int64
	ts, err := q.Tenants(ctx, "default")
	must(t, err)
	for _, s := range ts {
		leased += s.Leased
		if s.Served != 1 {
			t.Errorf("tenant %s served %d turns; want 1", s.Tenant, s.Served)
		}
	}
	if leased != 2 {
		t.Errorf("tenant stats count %d leases; want 2: %+v", leased, ts)
	}
	page, err := q.Leases(ctx, "default", contract.PageRequest{Limit: 10})
	must(t, err)
	if len(page.Leases) != 2 {
		t.Errorf("the leases page lists %d; want 2: %+v", len(page.Leases), page)
	}
	clock.Advance(2 * time.Minute)
	n, err := q.Reap(ctx, "default")
	must(t, err)
	if n != 2 {
		t.Errorf("reaped %d; want the 2 expired leases", n)
	}
	check("after the reap")
}

// TestFlowKeysHashed: a queue's limits and flow state hashes, which every
// claim of a queue with limits reads per tenant, are kept in Redis's
// hashed encoding by their placeholders once the queue has limits, and a
// queue whose flow keys are still packed (as an earlier release left
// them) gets them hashed by its next SetLimits; readers of the limits see
// the rows only.
func TestFlowKeysHashed(t *testing.T) {
	ctx := context.Background()
	q, client, _, p := encodingQueue(t)
	check := func(when string) {
		t.Helper()
		for _, k := range []string{"limits", "fstate"} {
			if got := client.ObjectEncoding(ctx, p+k).Val(); got != "hashtable" {
				t.Errorf("%s: %s encoded %q; want hashtable", when, k, got)
			}
		}
	}
	must(t, q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "1"}))
	check("after the first enqueue")
	must(t, q.SetLimits(ctx, "default", "a", contract.Limits{MaxLeased: 1}))
	check("after SetLimits")

	// An earlier release's queue: packed flow keys with their
	// placeholders and a's row.
	must(t, client.Del(ctx, p+"limits", p+"fstate").Err())
	must(t, client.HSet(ctx, p+"limits", "", "", lp("a"), "1|0|0|0|0|0|0").Err())
	must(t, client.HSet(ctx, p+"fstate", "", "").Err())
	if enc := client.ObjectEncoding(ctx, p+"limits").Val(); enc == "hashtable" {
		t.Fatalf("the packed limits of the earlier release's queue are already %q", enc)
	}
	must(t, q.SetLimits(ctx, "default", "b", contract.Limits{MaxLeased: 2}))
	check("after the next SetLimits")

	ql, err := q.Limits(ctx, "default")
	must(t, err)
	if len(ql.Tenants) != 2 || ql.Tenants["a"].MaxLeased != 1 || ql.Tenants["b"].MaxLeased != 2 || !ql.Default.IsZero() {
		t.Fatalf("limits %+v; want a's cap of 1 and b's of 2, no default", ql)
	}
	must(t, q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "2"}))
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 5})
	must(t, err)
	if len(ls) != 1 || ls[0].Item.Tenant != "a" {
		t.Fatalf("claimed %+v; want one item of a, its cap", ls)
	}
}
