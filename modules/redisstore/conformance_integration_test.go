//go:build integration

package redisstore_test

import (
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// stateFactory makes stores over client, each in a namespace of its own
// that is deleted when the subtest ends.
func stateFactory(client redis.UniversalClient) contracttest.StateFactory {
	return func(t *testing.T, clock contract.Clock) contract.StateStore {
		s, err := redisstore.NewState(client, clock, redisstore.Settings{Namespace: redistest.Namespace(t, client)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func queueFactory(client redis.UniversalClient) contracttest.QueueFactory {
	return func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
		q, err := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: redistest.Namespace(t, client), Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		return q
	}
}

func TestStateStoreConformance(t *testing.T) {
	contracttest.StateStore(t, stateFactory(redistest.Client(t)))
}

func TestWorkQueueConformance(t *testing.T) {
	contracttest.WorkQueue(t, queueFactory(redistest.Client(t)))
}
