package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/sqlitestore"
)

// Create a run and enqueue its first step in one transaction: both land,
// or neither does.
func ExampleSQLiteWorkQueue_Bound() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "adk-example")
	defer os.RemoveAll(dir)
	db, _ := sqlitestore.OpenDB(filepath.Join(dir, "adk.db"), sqlitestore.Settings{})
	defer db.Close()
	runs, _ := sqlitestore.OpenState(ctx, db, nil, sqlitestore.Settings{})
	work, _ := sqlitestore.OpenQueue(ctx, db, nil, sqlitestore.Settings{})

	tx, _ := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: OpenDB's DSN asks for it
	_, _ = runs.Bound(tx).PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-1"})
	_ = work.Bound(tx).Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-1"})
	fmt.Println(tx.Commit())

	info, _ := work.Item(ctx, contract.ItemKey{Tenant: "acme", ID: "run-1"})
	fmt.Println(info.Item.State)
	// Output:
	// <nil>
	// queued
}
