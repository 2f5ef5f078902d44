package redisstore

import (
	"context"

	"github.com/adkit/adk/modules/contract"
	"github.com/redis/go-redis/v9"
)

// Open runs Preflight once and returns a state store and a work queue over
// the same client and settings: the usual way to start a deployment that
// keeps both in one Redis. Close the queue when done; the client stays the
// caller's.
//
// Like OpenState and OpenQueue it refuses a namespace whose queues still
// hold data in the key layout of an earlier release (a
// *contract.PreflightError with Setting [SettingQueueLayout] naming the
// queues and the migration): started anyway, the store would see those
// items and dead letters as gone. [New] builds the same values without the
// check.
//
// Every backing has this shape: Open(ctx, conn, clock, Settings) checks
// the server first, New(conn, clock, Settings) builds the same values
// without the check, and OpenState, OpenQueue, NewState and NewQueue build
// one half.
func Open(ctx context.Context, client redis.UniversalClient, clock contract.Clock, settings Settings) (*RedisStateStore, *RedisWorkQueue, error) {
	st, err := OpenState(ctx, client, clock, settings)
	if err != nil {
		return nil, nil, err
	}
	q, err := NewQueue(client, clock, settings)
	if err != nil {
		return nil, nil, err
	}
	return st, q, nil
}

// New returns a state store and a work queue over client without running
// Preflight (tests and callers that checked the server themselves). A nil
// clock means the system clock.
func New(client redis.UniversalClient, clock contract.Clock, settings Settings) (*RedisStateStore, *RedisWorkQueue, error) {
	st, err := NewState(client, clock, settings)
	if err != nil {
		return nil, nil, err
	}
	q, err := NewQueue(client, clock, settings)
	if err != nil {
		return nil, nil, err
	}
	return st, q, nil
}
