//go:build integration

package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestShardedFairness: one tenant with 100,000 items and 50 with 10 each,
// over 3 shards: every small tenant's first item is claimed within the
// first 2 × 51 claims.
func TestShardedFairness(t *testing.T) {
	client := redistest.Client(t)
	ctx := context.Background()
	ns := redistest.Namespace(t, client)
	t.Cleanup(func() { purgeShards(t, client, ns) })
	clock := contracttest.NewFakeClock(time.Unix(1_700_000_000, 0))
	q, err := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: ns, Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	big := make([]contract.Item, 0, 1000)
	for i := range 100_000 {
		big = append(big, contract.Item{Tenant: "big", ID: fmt.Sprintf("b%d", i)})
		if len(big) == cap(big) {
			if err := q.Enqueue(ctx, big...); err != nil {
				t.Fatal(err)
			}
			big = big[:0]
		}
	}
	clock.Advance(time.Millisecond)
	var small []contract.Item
	for s := range 50 {
		for i := range 10 {
			small = append(small, contract.Item{Tenant: fmt.Sprintf("s%02d", s), ID: fmt.Sprintf("i%d", i)})
		}
	}
	if err := q.Enqueue(ctx, small...); err != nil {
		t.Fatal(err)
	}
	shards, err := q.Shards(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shards {
		t.Logf("shard %d: %d tenants, %d queued", s.Shard, s.Tenants, s.Queued)
	}
	first := map[string]int{}
	for n := 1; n <= 2*51; n++ {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
		if err != nil {
			t.Fatalf("claim %d: %v", n, err)
		}
		if _, ok := first[ls[0].Item.Tenant]; !ok {
			first[ls[0].Item.Tenant] = n
		}
	}
	last := 0
	for s := range 50 {
		tn := fmt.Sprintf("s%02d", s)
		n, ok := first[tn]
		if !ok {
			t.Errorf("tenant %s was not served in the first %d claims", tn, 2*51)
		}
		last = max(last, n)
	}
	t.Logf("the last small tenant's first item: claim %d of %d", last, 2*51)
}
