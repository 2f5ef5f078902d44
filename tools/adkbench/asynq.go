package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// asynqDB is the Redis logical database Asynq gets on the shared server,
// so its keys never mix with our backings'. Within it every run names its
// queues with a prefix of its own and deletes only those queues' keys, so
// two runs at once (a smoke test beside a full run) stay apart.
const asynqDB = 15

// asynqBacking runs Asynq on the shared Redis, in its own logical database.
type asynqBacking struct {
	opts   *redis.Options
	rdb    *redis.Client
	client *asynq.Client
	srv    *asynq.Server
	w      workload
	nerr   atomic.Int64
	seq    int
	prefix string // of this measurement's queue names
}

func (b *asynqBacking) queue(tenant int) string { return b.prefix + tenantName(tenant) }

// clear deletes this measurement's queues: their keys (Asynq puts the
// queue name in braces in each) and their entries in the set of queues.
func (b *asynqBacking) clear(ctx context.Context) error {
	if err := deleteMatching(ctx, b.rdb, "asynq:{"+b.prefix+"*"); err != nil {
		return err
	}
	names := make([]any, b.w.tenants)
	for i := range names {
		names[i] = b.queue(i)
	}
	return b.rdb.SRem(ctx, "asynq:queues", names...).Err()
}

func (b *asynqBacking) name() string      { return "asynq" }
func (b *asynqBacking) peer() bool        { return true }
func (b *asynqBacking) enqueueChunk() int { return 100 }
func (b *asynqBacking) enqueuers() int    { return 8 }
func (b *asynqBacking) detail() string    { return "" }

func (b *asynqBacking) errs() (int64, error) {
	return b.nerr.Load(), nil
}

func (b *asynqBacking) prepare(ctx context.Context, w workload) error {
	b.w = w
	o := *b.opts
	o.DB = asynqDB
	o.PoolSize = w.conc + 20
	b.rdb = redis.NewClient(&o)
	b.seq++
	b.prefix = fmt.Sprintf("adkbench%d_%d_", os.Getpid(), b.seq)
	if err := b.clear(ctx); err != nil {
		return err
	}
	b.client = asynq.NewClientFromRedisClient(b.rdb)
	queues := map[string]int{}
	for i := range w.tenants {
		queues[b.queue(i)] = 1
	}
	b.srv = asynq.NewServerFromRedisClient(b.rdb, asynq.Config{
		Concurrency: w.conc,
		Queues:      queues,
		LogLevel:    asynq.FatalLevel,
	})
	return nil
}

func (b *asynqBacking) enqueue(ctx context.Context, jobs []job) error {
	for _, j := range jobs {
		var p [8]byte
		binary.LittleEndian.PutUint64(p[:], uint64(j.seq))
		if _, err := b.client.EnqueueContext(ctx, asynq.NewTask("adkbench", p[:]), asynq.Queue(b.queue(j.tenant)), asynq.MaxRetry(0)); err != nil {
			return err
		}
	}
	return nil
}

func (b *asynqBacking) start(ctx context.Context) error {
	rec := b.w.rec
	return b.srv.Start(asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		p := t.Payload()
		if len(p) != 8 {
			b.nerr.Add(1)
			return nil
		}
		rec.handle(int64(binary.LittleEndian.Uint64(p)))
		return nil
	}))
}

func (b *asynqBacking) stop(ctx context.Context) error {
	b.srv.Shutdown()
	return nil
}

func (b *asynqBacking) cleanup(ctx context.Context) error {
	if b.rdb == nil {
		return nil
	}
	err := b.clear(ctx)
	b.client.Close()
	b.rdb.Close()
	b.rdb, b.client, b.srv = nil, nil, nil
	return err
}

// deleteMatching removes the keys matching pattern in c's database only.
func deleteMatching(ctx context.Context, c *redis.Client, pattern string) error {
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			if err := c.Unlink(ctx, batch...).Err(); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	if len(batch) > 0 {
		return c.Unlink(ctx, batch...).Err()
	}
	return nil
}
