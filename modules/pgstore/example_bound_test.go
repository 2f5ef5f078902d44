package pgstore_test

import (
	"context"
	"encoding/json"
	"log"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

// A run's new state and the work it queues commit together or not at all.
func ExamplePostgresStateStore_Bound() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("ADK_POSTGRES_DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	state, err := pgstore.OpenState(ctx, pool, contract.SystemClock{}, pgstore.Settings{})
	if err != nil {
		log.Fatal(err) // a *contract.SchemaError or *contract.PreflightError says what to fix
	}
	queue, err := pgstore.OpenQueue(ctx, pool, contract.SystemClock{}, pgstore.Settings{})
	if err != nil {
		log.Fatal(err)
	}

	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		run, err := state.Bound(tx).GetRun(ctx, "acme", "run-42")
		if err != nil {
			return err
		}
		run.Data = json.RawMessage(`{"step":"call-tool"}`)
		if _, err := state.Bound(tx).PutRun(ctx, *run); err != nil {
			return err // a stale version rolls back the enqueue too
		}
		// The NOTIFY of this enqueue reaches claimers only on commit.
		return queue.Bound(tx).Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-42/step-3"})
	})
	if err != nil {
		log.Fatal(err)
	}
}
