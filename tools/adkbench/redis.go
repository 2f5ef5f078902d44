package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/redis/go-redis/v9"
)

// newRedisBacking is redisstore on the shared Redis, under a namespace of
// its own per measurement whose keys cleanup deletes.
func newRedisBacking(o *redis.Options, claimers, batch int) backing {
	n := 0
	return &ourBacking{
		label: "redis",
		open: func(ctx context.Context, conc int) (*instance, error) {
			n++
			ns := fmt.Sprintf("adkbench_%d_%d", os.Getpid(), n)
			oo := *o
			oo.PoolSize = conc + 20
			c := redis.NewClient(&oo)
			q, err := redisstore.NewQueue(c, nil, redisstore.Settings{Namespace: ns})
			if err != nil {
				c.Close()
				return nil, err
			}
			size := func(ctx context.Context) (string, int64, error) {
				n, err := memoryMatching(ctx, c, "*"+ns+"*")
				return "redis bytes", n, err
			}
			return &instance{q: q, waker: q, size: size, serverMicros: func(ctx context.Context) (int64, error) { return scriptMicros(ctx, c) }, close: func(ctx context.Context) error {
				err := q.Close()
				if derr := deleteMatching(ctx, c, "*"+ns+"*"); err == nil {
					err = derr
				}
				c.Close()
				return err
			}}, nil
		},
		openState: func(ctx context.Context, conc int, p contract.RunPolicy) (*stateInstance, error) {
			n++
			ns := fmt.Sprintf("adkbench_state_%d_%d", os.Getpid(), n)
			oo := *o
			oo.PoolSize = conc + 10
			c := redis.NewClient(&oo)
			s, err := redisstore.NewState(c, nil, redisstore.Settings{Namespace: ns, Runs: p})
			if err != nil {
				c.Close()
				return nil, err
			}
			return &stateInstance{s: s, close: func(ctx context.Context) error {
				err := deleteMatching(ctx, c, "*"+ns+"*")
				c.Close()
				return err
			}}, nil
		},
		poll:     500 * time.Millisecond,
		claimers: claimers,
		maxBatch: batch,
		chunk:    500,
		loaders:  2,
	}
}

// scriptMicros is the time the server has spent in FCALL, EVALSHA and EVAL, by
// INFO commandstats: the single Redis thread's time in the queue's
// scripts, whatever the round trips. Every client of the server counts,
// so a figure from it means something on a server the run has to itself.
func scriptMicros(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval" && name != "cmdstat_fcall") {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
	}
	return total, nil
}

// memoryMatching sums MEMORY USAGE (every element counted, SAMPLES 0)
// over the keys matching pattern in c's database: the queue keeps an item
// as fields and members of a few keys, so their count says nothing of its
// size. SCAN walks the whole database: a sampler's pace at most.
func memoryMatching(ctx context.Context, c *redis.Client, pattern string) (int64, error) {
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	var n int64
	for iter.Next(ctx) {
		b, err := c.MemoryUsage(ctx, iter.Val(), 0).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return n, err
		}
		n += b
	}
	return n, iter.Err()
}
