package pgstore_test

import (
	"context"
	"log"
	"os"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/policy"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The shortest correct use from the README: open both halves with
// Verify, then write a run and enqueue its next step in one transaction.
func Example_readme() {
	if err := readme(context.Background(), os.Getenv("ADK_POSTGRES_DSN"), contract.Run{Tenant: "acme", ID: "run_1"}); err != nil {
		log.Print(err)
	}
}

// readme is the README's shortest correct use, as it stands there.
func readme(ctx context.Context, dsn string, run contract.Run) error {
	pool, err := pgxpool.New(ctx, dsn) // size it to the worker count
	if err != nil {
		return err
	}
	defer pool.Close()
	state, queue, err := pgstore.Open(ctx, pool, contract.SystemClock{}, pgstore.Settings{Policy: policy.Default()})
	if err != nil {
		return err // a *contract.SchemaError names what Verify found and the fix
	}

	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := state.Bound(tx).PutRun(ctx, run); err != nil {
			return err // a stale version rolls the enqueue back too
		}
		return queue.Bound(tx).Enqueue(ctx, contract.Item{Tenant: run.Tenant, ID: run.ID + "/next"})
	})
}
