package main

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

func newRedisBacking(o *redis.Options, claimers, batch int) backing {
	return &ourBacking{label: "redis", open: func(context.Context, int) (*instance, error) {
		return nil, errors.New("redisstore queue not available yet")
	}, claimers: claimers, maxBatch: batch, chunk: 500, loaders: 2}
}

func newPGBacking(dsn string, listen bool, claimers, batch int) backing {
	name := "pg-poll"
	if listen {
		name = "pg-listen"
	}
	return &ourBacking{label: name, open: func(context.Context, int) (*instance, error) {
		return nil, errors.New("pgstore queue not available yet")
	}, claimers: claimers, maxBatch: batch, chunk: 500, loaders: 2}
}
