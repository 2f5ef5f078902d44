//go:build integration

package main

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestShardsVerbOnACluster: a queue of 3 shards on a self-started
// 3-master cluster, read by adkctl through the cluster URL: one row per
// shard, each on its own master, the queued items adding up to what was
// enqueued and the claimed shard's rate above zero.
func TestShardsVerbOnACluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	addrs := cl.Addrs()
	client := cl.Client(t, &redis.ClusterOptions{})
	settings := redisstore.Settings{Shards: 3, Volatile: true}
	q, err := redisstore.NewQueue(client, nil, settings)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := t.Context()
	const tenants = 30
	for i := range tenants {
		if err := q.Enqueue(ctx, contract.Item{Tenant: "t" + strconv.Itoa(i), Queue: "agent", ID: "a"},
			contract.Item{Tenant: "t" + strconv.Itoa(i), Queue: "agent", ID: "b"}); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Queue: "agent", Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 10 {
		t.Fatalf("claim: %d, %v", len(ls), err)
	}
	env := map[string]string{"ADK_REDIS_DSN": "redis://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2]}
	code, out, errOut := runArgs(t, env, "shards", "--queue", "agent", "--redis-cluster", "--redis-shards", "3", "--redis-volatile", "--json")
	if code != exitOK {
		t.Fatalf("adkctl shards: exit %d, %q", code, errOut)
	}
	var got shardsOut
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err, out)
	}
	if !got.Sharded || len(got.Shards) != 3 {
		t.Fatalf("shards: %+v", got)
	}
	nodes := map[string]bool{}
	queued, leased, rate := 0, 0, 0.0
	for _, s := range got.Shards {
		nodes[s.Node] = true
		queued += s.Queued
		leased += s.Leased
		rate += s.ClaimRate
		if s.Slot < 0 || s.Slot >= 16384 {
			t.Errorf("shard %d has slot %d", s.Shard, s.Slot)
		}
	}
	if len(nodes) != 3 {
		t.Errorf("the 3 shards sit on %d masters: %+v", len(nodes), got.Shards)
	}
	if queued != 2*tenants-10 || leased != 10 || rate <= 0 {
		t.Errorf("queued %d, leased %d, claims/s %v; want %d, 10, above 0", queued, leased, rate, 2*tenants-10)
	}
	// Without --redis-shards the tool reads the one-shard keys: nothing.
	code, out, _ = runArgs(t, env, "shards", "--queue", "agent", "--redis-cluster", "--redis-volatile", "--json")
	var one shardsOut
	if err := json.Unmarshal([]byte(out), &one); err != nil || code != exitOK || one.Sharded {
		t.Errorf("without --redis-shards: exit %d, %+v, %v", code, one, err)
	}
}
