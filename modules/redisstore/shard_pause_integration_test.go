//go:build integration

package redisstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestShardedPausedTenant: a paused tenant is dealt no turn and keeps its
// place: with p (paused) and q on one shard and r and s on the others,
// single claims serve q, r and s in turn (p's shard does not take a turn
// for p too), and p first once resumed.
func TestShardedPausedTenant(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	// Tenants by shard: p and q on one, r and s on the two others.
	byShard := map[int][]string{}
	for i := 0; len(byShard[0]) < 2 || len(byShard[1]) < 1 || len(byShard[2]) < 1; i++ {
		tn := fmt.Sprintf("t%d", i)
		byShard[shardOf(tn, 3)] = append(byShard[shardOf(tn, 3)], tn)
	}
	p, q, r, s := byShard[0][0], byShard[0][1], byShard[1][0], byShard[2][0]
	clock := contracttest.NewFakeClock(time.Unix(1_700_000_000, 0))
	wq, err := NewQueue(client, clock, Settings{Namespace: ns, Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer wq.Close()
	t.Cleanup(func() {
		for i := range 3 {
			k := shardQueueKeys(ns, i, 3)
			it := client.Scan(ctx, 0, "{"+k.tag()+"}:*", 1000).Iterator()
			for it.Next(ctx) {
				client.Del(ctx, it.Val())
			}
		}
	})
	for _, tn := range []string{p, q, r, s} {
		var items []contract.Item
		for i := range 10 {
			items = append(items, contract.Item{Tenant: tn, ID: fmt.Sprintf("i%d", i)})
		}
		if err := wq.Enqueue(ctx, items...); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Millisecond)
	}
	if err := wq.Pause(ctx, "", p); err != nil {
		t.Fatal(err)
	}
	served := map[string]int{}
	for range 9 {
		ls, err := wq.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
		if err != nil {
			t.Fatal(err)
		}
		served[ls[0].Item.Tenant]++
	}
	if served[p] != 0 || served[q] != 3 || served[r] != 3 || served[s] != 3 {
		t.Errorf("9 claims with %s paused served %v, want 3 each of %s, %s and %s", p, served, q, r, s)
	}
	if err := wq.Resume(ctx, "", p); err != nil {
		t.Fatal(err)
	}
	ls, err := wq.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
	if err != nil || ls[0].Item.Tenant != p {
		t.Errorf("after resuming %s the claim served %v (%v), want %s", p, ls, err, p)
	}
}
