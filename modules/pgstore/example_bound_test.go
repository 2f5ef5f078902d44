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

// A fork and the first work item of the forked run commit together: a
// run branched from an earlier version, and the step that continues it,
// exist both or neither.
func ExamplePostgresStateStore_ForkRun() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("ADK_POSTGRES_DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	// Keep the last 20 versions of every run.
	settings := pgstore.Settings{Runs: contract.RunPolicy{KeepVersions: 20}}
	state, err := pgstore.OpenState(ctx, pool, contract.SystemClock{}, settings)
	if err != nil {
		log.Fatal(err)
	}
	queue, err := pgstore.OpenQueue(ctx, pool, contract.SystemClock{}, settings)
	if err != nil {
		log.Fatal(err)
	}

	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Version 7 of run-42, before the tool call that went wrong.
		fork, err := state.Bound(tx).ForkRun(ctx, "acme", "run-42", 7, "run-42-retry")
		if err != nil {
			return err // ErrNotFound: version 7 is no longer kept; a conflict: run-42-retry exists
		}
		return queue.Bound(tx).Enqueue(ctx, contract.Item{Tenant: fork.Tenant, ID: fork.ID + "/step-1"})
	})
	if err != nil {
		log.Fatal(err)
	}
}
