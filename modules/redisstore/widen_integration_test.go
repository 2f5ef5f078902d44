//go:build integration

package redisstore_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// TestLeaseKeysHashed: a queue's lease hash and lease set are kept in
// Redis's hashed encodings from its first enqueue on, and a queue whose
// lease keys are still packed (as an earlier release left them) gets them
// hashed by its next enqueue; the entry that does it is seen by no reader.
func TestLeaseKeysHashed(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	q, err := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: ns})
	must(t, err)
	defer q.Close()
	p := "{" + ns + ":queue}:q:" + lp("default") + ":"
	check := func(when string) {
		t.Helper()
		if enc := client.ObjectEncoding(ctx, p+"lease").Val(); enc != "hashtable" {
			t.Errorf("%s: lease hash encoded %q; want hashtable", when, enc)
		}
		if enc := client.ObjectEncoding(ctx, p+"leases").Val(); enc != "skiplist" {
			t.Errorf("%s: lease set encoded %q; want skiplist", when, enc)
		}
	}
	must(t, q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "1"}, contract.Item{Tenant: "a", ID: "2"}))
	check("after the first enqueue")

	// An earlier release's queue: packed lease keys holding only their
	// placeholders, and no mark in the lifecycle hash.
	must(t, client.HDel(ctx, p+"life", "wd").Err())
	must(t, client.Del(ctx, p+"lease", p+"leases").Err())
	must(t, client.HSet(ctx, p+"lease", "", "").Err())
	must(t, client.ZAdd(ctx, p+"leases", redis.Z{Score: math.Inf(1), Member: ""}).Err())
	if enc := client.ObjectEncoding(ctx, p+"leases").Val(); enc == "skiplist" {
		t.Fatalf("the packed lease set of the earlier release's queue is already %q", enc)
	}
	must(t, q.Enqueue(ctx, contract.Item{Tenant: "b", ID: "1"}))
	check("after the next enqueue")

	// Readers see the leases only.
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 2})
	must(t, err)
	if len(ls) != 2 {
		t.Fatalf("claimed %d; want 2", len(ls))
	}
	var leased int64
	ts, err := q.Tenants(ctx, "default")
	must(t, err)
	for _, s := range ts {
		leased += s.Leased
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
