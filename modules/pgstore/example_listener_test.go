package pgstore_test

import (
	"context"
	"errors"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

// A claimer that sleeps until LISTEN/NOTIFY says work may be ready, and
// re-polls every second regardless (a wake is a hint, never a delivery).
func ExampleListener() {
	ctx := context.Background()
	dsn := contract.Secret(os.Getenv("ADK_POSTGRES_DSN"))
	pool, err := pgxpool.New(ctx, dsn.Reveal())
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	// One connection outside the pool: budget pool size + 1.
	listener, err := pgstore.Listen(ctx, dsn, pgstore.ListenerSettings{}, pgstore.NotifyChannel(pgstore.StateTables{}))
	if err != nil {
		log.Fatal(err)
	}
	defer listener.Close()
	queue, err := pgstore.OpenQueue(ctx, pool, contract.SystemClock{}, pgstore.Settings{Listener: listener})
	if err != nil {
		log.Fatal(err)
	}
	wake, stop := queue.Subscribe(contract.DefaultQueue)
	defer stop()
	for {
		leases, err := queue.Claim(ctx, contract.ClaimRequest{Worker: "worker-1", LeaseFor: 30 * time.Second, Max: 50})
		switch {
		case errors.Is(err, contract.ErrEmpty):
			select {
			case <-wake:
			case <-time.After(time.Second):
			}
			continue
		case err != nil:
			log.Fatal(err)
		}
		// ... do the work, then settle the whole batch in one statement.
		if err := queue.Complete(ctx, leases...); err != nil {
			log.Print(err) // a *contract.LeaseLostError names the leases that expired meanwhile
		}
	}
}
