//go:build integration

package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// A run's state and its next step, kept in Redis. The shortest correct
// use: open both with Preflight, write the run, enqueue its work, claim,
// complete.
func Example() {
	ctx := context.Background()
	opt, err := redis.ParseURL(os.Getenv("ADK_TEST_REDIS_URL"))
	if err != nil {
		fmt.Println("set ADK_TEST_REDIS_URL:", err)
		return
	}
	client := redis.NewClient(opt)
	defer client.Close()

	settings := redisstore.Settings{
		Namespace: "example",
		Volatile:  true, // the test server keeps no AOF; production leaves this false
		Policy:    policy.Default(),
	}
	defer redistest.Purge(ctx, client, settings.Namespace)
	state, err := redisstore.OpenState(ctx, client, contract.SystemClock{}, settings)
	if err != nil {
		fmt.Println(err)
		return
	}
	queue, err := redisstore.OpenQueue(ctx, client, contract.SystemClock{}, settings)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer queue.Close()

	run, _ := state.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run_1", Data: []byte(`{"step":"plan"}`)})
	_ = queue.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run_1/step/1", Payload: []byte("run_1")})

	leases, _ := queue.Claim(ctx, contract.ClaimRequest{Worker: "worker-1", LeaseFor: 30 * time.Second, Max: 10})
	for _, l := range leases {
		run, _ = state.PatchRun(ctx, "acme", string(l.Item.Payload), contract.Patch{Counters: contract.Counters{Iterations: 1}, Status: "running"})
		_ = queue.Complete(ctx, l)
	}
	fmt.Println(run.ID, run.Status, run.Version, run.Counters.Iterations)
	// Output: run_1 running 2 1
}
