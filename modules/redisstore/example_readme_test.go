package redisstore_test

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/redis/go-redis/v9"
)

// The shortest correct use from the README: open both halves with
// Preflight, write a run, enqueue its work, claim and complete.
func Example_readme() {
	if err := readme(context.Background()); err != nil {
		log.Print(err)
	}
}

// readme is the README's shortest correct use, as it stands there.
func readme(ctx context.Context) error {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}) // or NewClusterClient, NewFailoverClient
	settings := redisstore.Settings{
		DSN:    contract.Secret(os.Getenv("ADK_REDIS_DSN")), // kept for display; always printed as [redacted]
		Policy: policy.Default(),                            // retries, backoff, dead letters
	}
	state, queue, err := redisstore.Open(ctx, client, contract.SystemClock{}, settings)
	if err != nil {
		return err // a *contract.PreflightError names the setting and the fix
	}
	defer queue.Close() // ends wake subscriptions; the client stays yours

	if _, err := state.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run_1", Data: []byte(`{"step":"plan"}`)}); err != nil {
		return err
	}
	if err := queue.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run_1/1", Payload: []byte("run_1")}); err != nil {
		return err
	}
	leases, err := queue.Claim(ctx, contract.ClaimRequest{Worker: "w1", LeaseFor: 30 * time.Second, Max: 50})
	if err != nil {
		return err // contract.ErrEmpty when nothing is due
	}
	// ... work, then:
	return queue.Complete(ctx, leases...)
}
