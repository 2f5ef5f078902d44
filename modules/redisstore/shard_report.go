package redisstore

import (
	"context"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/redis/go-redis/v9"
)

var _ contract.ShardReporter = (*RedisWorkQueue)(nil)

// Shards reports each of queue's shards: the server that holds it, its
// cluster slot, its tenants with queued or leased items, its queued items
// and live leases, and its claims per second over the last minute (from
// its log of recent claims, which keeps the last Settings.RecentTurns
// claims, so a busy shard's rate is that of those). A queue that never
// set Shards has one.
func (q *RedisWorkQueue) Shards(ctx context.Context, queue string) ([]contract.ShardStats, error) {
	name := contract.QueueName(queue)
	if err := contract.ValidateName("queue", name); err != nil {
		return nil, err
	}
	out := make([]contract.ShardStats, len(q.shards))
	errs := make([]error, len(q.shards))
	done := make(chan int, len(q.shards))
	for i, d := range q.shards {
		go func() {
			out[i], errs[i] = d.shardStats(ctx, i, name)
			done <- i
		}()
	}
	for range q.shards {
		<-done
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tag is the hash tag of the shard's keys, without its braces.
func (k queueKeys) tag() string {
	return strings.TrimSuffix(strings.TrimPrefix(k.ns, "{"), "}:")
}

func (q *workQueue) shardStats(ctx context.Context, i int, name string) (contract.ShardStats, error) {
	st := contract.ShardStats{Shard: i, Slot: -1}
	switch c := q.client.(type) {
	case *redis.ClusterClient:
		st.Slot = keySlot(q.keys.tag())
		err := q.read(ctx, func(ctx context.Context) error {
			m, err := c.MasterForKey(ctx, q.keys.queue(name)+"ready")
			if err == nil {
				st.Node = m.Options().Addr
			}
			return err
		})
		if err != nil {
			return st, err
		}
	case *redis.Client:
		st.Node = c.Options().Addr
	}
	tenants, err := q.Tenants(ctx, name)
	if err != nil {
		return st, err
	}
	for _, t := range tenants {
		if t.Ready+t.Later+t.Leased > 0 {
			st.Tenants++
		}
		st.Queued += int(t.Ready + t.Later)
		st.Leased += int(t.Leased)
	}
	var entries []string
	err = q.read(ctx, func(ctx context.Context) error {
		var err error
		entries, err = q.client.LRange(ctx, q.keys.queue(name)+"log", 0, int64(q.settings.RecentTurns-1)).Result()
		return err
	})
	if err != nil {
		return st, err
	}
	since := q.clock.Now().Add(-time.Minute)
	claimed := 0
	for _, e := range entries {
		turns := parseClaimLog(e)
		if len(turns) == 0 {
			continue
		}
		if turns[0].At.Before(since) {
			break // newest first: the rest are older
		}
		claimed += len(turns)
	}
	st.ClaimRate = float64(claimed) / time.Minute.Seconds()
	return st, nil
}
