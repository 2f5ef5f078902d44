package main

import (
	"context"
	"fmt"
	"os"
	"time"

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
			return &instance{q: q, waker: q, close: func(ctx context.Context) error {
				err := q.Close()
				if derr := deleteMatching(ctx, c, "*"+ns+"*"); err == nil {
					err = derr
				}
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
