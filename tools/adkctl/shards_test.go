package main

import (
	"context"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// shardedQueue is the fixture's queue reporting three shards.
type shardedQueue struct {
	contract.WorkQueue
	asked string
}

func (q *shardedQueue) Shards(_ context.Context, queue string) ([]contract.ShardStats, error) {
	q.asked = queue
	return []contract.ShardStats{
		{Shard: 0, Node: "10.0.0.1:7000", Slot: 12, Tenants: 3, Queued: 40, Leased: 2, ClaimRate: 12.5},
		{Shard: 1, Node: "10.0.0.2:7000", Slot: 5500, Tenants: 1, Queued: 7},
		{Shard: 2, Node: "rtl\u202Eevil", Slot: -1},
	}, nil
}

func TestShardsVerb(t *testing.T) {
	f := newFixture(t)
	sq := &shardedQueue{WorkQueue: f.store}
	f.queue = sq
	v := f.json(exitOK, "shards", "--queue", "agent")
	keysOf(t, "shards --json", v, "queue", "sharded", "shards")
	rows := v["shards"].([]any)
	if sq.asked != "agent" || v["sharded"] != true || len(rows) != 3 {
		t.Fatalf("shards: %v (asked for %q)", v, sq.asked)
	}
	keysOf(t, "a shard", rows[0], "shard", "node", "slot", "tenants", "queued", "leased", "claims_per_second")
	if r := rows[0].(map[string]any); r["node"] != "10.0.0.1:7000" || r["queued"] != 40.0 || r["claims_per_second"] != 12.5 {
		t.Errorf("shard 0: %v", r)
	}
	out := f.ok("shards", "--queue", "agent")
	if !strings.Contains(out, "10.0.0.2:7000") || !strings.Contains(out, "12.5") || strings.Contains(out, "\u202E") {
		t.Errorf("the table:\n%s", out)
	}

	f.queue = nil // the memstore: one piece
	v = f.json(exitOK, "shards")
	if v["sharded"] != false || len(v["shards"].([]any)) != 0 {
		t.Errorf("an unsharded queue: %v", v)
	}
	if out := f.ok("shards"); !strings.Contains(out, "is not sharded") {
		t.Errorf("an unsharded queue: %q", out)
	}
}
