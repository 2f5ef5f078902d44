//go:build integration

package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// scriptCalls counts the script calls of a client that ran: a call
// refused because the server lacked the script or the function (which
// the store then loads and calls again) does not count.
type scriptCalls struct{ n atomic.Int64 }

func (c *scriptCalls) count(cmd redis.Cmder) {
	name := cmd.Name()
	if (strings.HasPrefix(name, "eval") || strings.HasPrefix(name, "fcall")) && cmd.Err() == nil {
		c.n.Add(1)
	}
}

func (c *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		c.count(cmd)
		return err
	}
}
func (c *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return err
	}
}

// TestShardedClaimCalls: once a process has claimed, its next claim of a
// 3-shard queue is one script call per shard (the shards list their due
// tenants in their claim replies); an enqueue of the same process makes
// the next claim list them first, so a tenant it added is served at once;
// a tenant another process added to an empty shard is served from the
// claim after next.
func TestShardedClaimCalls(t *testing.T) {
	base := redistest.Client(t)
	ctx := context.Background()
	ns := redistest.Namespace(t, base)
	calls := &scriptCalls{}
	opt, err := redis.ParseURL(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opt)
	client.AddHook(calls)
	t.Cleanup(func() { _ = client.Close() })
	clock := contracttest.NewFakeClock(time.Unix(1_700_000_000, 0))
	q, err := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: ns, Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	other, err := redisstore.NewQueue(base, clock, redisstore.Settings{Namespace: ns, Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// Tenants on shards 0 and 1 only; "late" is on shard 2 (FNV-1a).
	onShard := func(k int, skip int) string {
		for i := 0; ; i++ {
			tn := fmt.Sprintf("t%d", i)
			if redisstore.ShardOf(tn, 3) == k {
				if skip == 0 {
					return tn
				}
				skip--
			}
		}
	}
	var items []contract.Item
	for _, tn := range []string{onShard(0, 0), onShard(0, 1), onShard(1, 0)} {
		for i := range 20 {
			items = append(items, contract.Item{Tenant: tn, ID: fmt.Sprintf("i%d", i)})
		}
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	claim := func(max int) ([]contract.Lease, int64) {
		t.Helper()
		before := calls.n.Load()
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: max})
		if err != nil {
			t.Fatal(err)
		}
		return ls, calls.n.Load() - before
	}
	if _, n := claim(3); n != 6 {
		t.Errorf("the first claim made %d script calls, want 6 (3 lists, then 3 shards)", n)
	}
	for i := range 3 {
		if ls, n := claim(3); n != 3 || len(ls) != 3 {
			t.Errorf("claim %d after the first: %d leases in %d script calls, want 3 in 3 (one per shard)", i+2, len(ls), n)
		}
	}
	mine := onShard(2, 0)
	if err := q.Enqueue(ctx, contract.Item{Tenant: mine, ID: "m"}); err != nil {
		t.Fatal(err)
	}
	ls, n := claim(4)
	if n != 6 || !served(ls, mine) {
		t.Errorf("the claim after this process's enqueue served %v in %d script calls, want %s among them in 6", tenants(ls), n, mine)
	}
	if _, n := claim(3); n != 3 {
		t.Errorf("the claim after that made %d script calls, want 3", n)
	}
	theirs := onShard(2, 1)
	if err := other.Enqueue(ctx, contract.Item{Tenant: theirs, ID: "o"}); err != nil {
		t.Fatal(err)
	}
	first, _ := claim(4)
	second, _ := claim(4)
	if !served(first, theirs) && !served(second, theirs) {
		t.Errorf("another process's tenant on an empty shard was not served in two claims: %v, %v", tenants(first), tenants(second))
	}
}

func served(ls []contract.Lease, tenant string) bool {
	for _, l := range ls {
		if l.Item.Tenant == tenant {
			return true
		}
	}
	return false
}

func tenants(ls []contract.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Item.Tenant
	}
	return out
}
