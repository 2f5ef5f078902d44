//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestNoKeyCarriesTTL runs a workload touching every kind of key, then
// checks that none of them can expire: a TTL would let volatile-* eviction
// or plain expiry drop a run.
func TestNoKeyCarriesTTL(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	clock := contracttest.NewFakeClock(time.Time{})
	settings := redisstore.Settings{Namespace: ns, Policy: policy.Policy{MaxAttempts: 2, Jitter: policy.Fixed(0)}}
	st, _ := redisstore.NewState(client, clock, settings)
	q, _ := redisstore.NewQueue(client, clock, settings)
	defer q.Close()

	for _, id := range []string{"r1", "r2"} {
		r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: id, Session: "s1", Data: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.PatchRun(ctx, "acme", id, contract.Patch{Counters: contract.Counters{InputTokens: 3}}); err != nil {
			t.Fatal(err)
		}
		r.Version++
		r.Session = "s2"
		if _, err := st.PutRun(ctx, *r); err != nil {
			t.Fatal(err)
		}
	}
	_, wake := q.Subscribe("")
	defer wake()
	var items []contract.Item
	for i, tenant := range []string{"a", "b", "c"} {
		items = append(items, contract.Item{Tenant: tenant, ID: "now"}, contract.Item{Tenant: tenant, ID: "later", NotBefore: clock.Now().Add(time.Duration(i+1) * time.Hour)})
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	leases, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil || len(leases) != 3 {
		t.Fatalf("claim: %v, %v", leases, err)
	}
	if err := q.Complete(ctx, leases[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Fail(ctx, leases[1], policy.Permanent(errors.New("poison"))); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Heartbeat(ctx, leases[2], time.Minute); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	if n, err := q.Reap(ctx, ""); err != nil || n != 1 {
		t.Fatalf("reap: %d, %v", n, err)
	}
	if _, err := q.Requeue(ctx, contract.DeadLetterFilter{}); err != nil {
		t.Fatal(err)
	}

	keys, err := redistest.Keys(ctx, client, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 15 {
		t.Fatalf("the workload wrote only %d keys: %v", len(keys), keys)
	}
	for _, k := range keys {
		ttl, err := client.TTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl != -1 {
			t.Errorf("key %q has TTL %v; durable keys must never expire", k, ttl)
		}
	}
}

// TestLostClaimReplyIsReaped: a claim whose leases never reach a worker
// (the worker died with the reply, or its retry came after the claim was
// forgotten) leaves its items leased to nobody. Nothing is lost: the next
// reap after the lease runs out puts them back, and they are claimed again.
func TestLostClaimReplyIsReaped(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	clock := contracttest.NewFakeClock(time.Time{})
	q, _ := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: redistest.Namespace(t, client), Policy: policy.Policy{Jitter: policy.Fixed(0)}})
	defer q.Close()
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "1"}, contract.Item{Tenant: "acme", ID: "2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Claim(ctx, contract.ClaimRequest{Worker: "lost", LeaseFor: 30 * time.Second, Max: 2}); err != nil {
		t.Fatal(err) // the leases are dropped: no worker ever sees them
	}
	if _, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: 30 * time.Second, Max: 2}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("while the orphaned leases live: got %v, want ErrEmpty", err)
	}
	clock.Advance(31 * time.Second)
	if n, err := q.Reap(ctx, ""); err != nil || n != 2 {
		t.Fatalf("reap: %d, %v; want 2", n, err)
	}
	leases, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: 30 * time.Second, Max: 2})
	if err != nil || len(leases) != 2 {
		t.Fatalf("after the reap: %v, %v", leases, err)
	}
	if err := q.Complete(ctx, leases...); err != nil {
		t.Fatal(err)
	}
}
