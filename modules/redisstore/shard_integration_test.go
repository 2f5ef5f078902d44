//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
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

// TestShardedDeadLetterPaging pages 30 tenants' dead letters, spread over
// 3 shards and dead at 30 moments, four at a time oldest first and newest
// first, and turns around from a cursor half-way: each listing is the
// letters in the order they died, every one once.
func TestShardedDeadLetterPaging(t *testing.T) {
	client := redistest.Client(t)
	ctx := context.Background()
	ns := redistest.Namespace(t, client)
	clock := contracttest.NewFakeClock(time.Unix(1_700_000_000, 0))
	q, err := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: ns, Shards: 3, Policy: policy.Policy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var died []string
	for i := range 30 {
		tn := fmt.Sprintf("t%02d", i)
		if err := q.Enqueue(ctx, contract.Item{Tenant: tn, ID: "x"}); err != nil {
			t.Fatal(err)
		}
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Fail(ctx, ls[0], errors.New("boom")); err != nil {
			t.Fatal(err)
		}
		died = append(died, tn)
		clock.Advance(time.Millisecond)
	}
	list := func(cursor string, newest bool, pages int) ([]string, string) {
		t.Helper()
		var got []string
		for range pages {
			p, err := q.DeadLetters(ctx, contract.DeadLetterQuery{Page: contract.PageRequest{Cursor: cursor, Limit: 4}, Newest: newest})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range p.Items {
				got = append(got, it.Tenant)
			}
			if cursor = p.Next; cursor == "" {
				break
			}
		}
		return got, cursor
	}
	if got, _ := list("", false, 100); !slices.Equal(got, died) {
		t.Errorf("oldest first: %v, want %v", got, died)
	}
	back := slices.Clone(died)
	slices.Reverse(back)
	if got, _ := list("", true, 100); !slices.Equal(got, back) {
		t.Errorf("newest first: %v, want %v", got, back)
	}
	// Three pages oldest first, then newest first from that place: the
	// twelve letters before it, newest first.
	first, mid := list("", false, 3)
	again, _ := list(mid, true, 100)
	want := slices.Clone(first)
	slices.Reverse(want)
	if !slices.Equal(again, want) {
		t.Errorf("newest first from the cursor after 12: %v, want %v", again, want)
	}
	if rest, _ := list(mid, false, 100); !slices.Equal(rest, died[12:]) {
		t.Errorf("oldest first from the cursor after 12: %v, want %v", rest, died[12:])
	}
	if n, err := q.Requeue(ctx, contract.DeadLetterFilter{}); err != nil || n != 30 {
		t.Errorf("Requeue = %d, %v; want all 30", n, err)
	}
}

// TestPurgeRemovesShards: redistest.Purge (what Namespace runs when a test
// ends) deletes the keys of every shard of a sharded queue.
func TestPurgeRemovesShards(t *testing.T) {
	client := redistest.Client(t)
	ctx := context.Background()
	ns := redistest.Namespace(t, client)
	q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Namespace: ns, Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var items []contract.Item
	for i := range 30 {
		items = append(items, contract.Item{Tenant: fmt.Sprintf("t%d", i), ID: "x"})
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	keys, err := redistest.Keys(ctx, client, ns)
	if err != nil {
		t.Fatal(err)
	}
	shards := map[string]bool{}
	for _, k := range keys {
		if tag, _, ok := strings.Cut(k, "}"); ok && strings.Contains(tag, ":queue:") {
			shards[tag] = true
		}
	}
	if len(shards) != 3 {
		t.Fatalf("the sharded queue's keys fall in %d shards' tags (%d keys), want 3", len(shards), len(keys))
	}
	if err := redistest.Purge(ctx, client, ns); err != nil {
		t.Fatal(err)
	}
	if keys, err = redistest.Keys(ctx, client, ns); err != nil || len(keys) != 0 {
		t.Fatalf("after Purge %d keys are left (%v): %v", len(keys), err, keys[:min(len(keys), 5)])
	}
}
