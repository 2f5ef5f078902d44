//go:build integration

package redisstore

import (
	"context"
	"errors"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// TestShardedLayoutCheck: keys of the earlier layout in any shard of a
// sharded namespace are found by Preflight and by InspectLayout, which
// read every shard's keys; a namespace of one shard does not read them.
func TestShardedLayoutCheck(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	k := shardQueueKeys(ns, 2, 3)
	keys := []string{k.queues(), k.queue("default") + "tenants", oldReadyKey(k, "default", "acme")}
	t.Cleanup(func() { client.Del(ctx, keys...) })
	pipe := client.Pipeline()
	pipe.SAdd(ctx, keys[0], "default")
	pipe.SAdd(ctx, keys[1], "acme")
	pipe.ZAdd(ctx, keys[2], redis.Z{Member: "x"})
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var pe *contract.PreflightError
	if _, err := Preflight(ctx, client, Settings{Namespace: ns, Shards: 3, Volatile: true}); !errors.As(err, &pe) || pe.Setting != SettingQueueLayout {
		t.Errorf("preflight of 3 shards with an old key in shard 2: %v, want a %s refusal", err, SettingQueueLayout)
	}
	if _, err := Preflight(ctx, client, Settings{Namespace: ns, Volatile: true}); errors.As(err, &pe) && pe.Setting == SettingQueueLayout {
		t.Errorf("preflight of one shard refused another layout's keys: %v", err)
	}
	q, err := NewQueue(client, nil, Settings{Namespace: ns, Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	rep, err := q.InspectLayout(ctx)
	if err != nil || len(rep.Queues) != 1 || rep.Queues[0].Queue != "default" || rep.Queues[0].Keys != 1 {
		t.Errorf("InspectLayout = %+v, %v; want queue default with 1 old key", rep, err)
	}
}
