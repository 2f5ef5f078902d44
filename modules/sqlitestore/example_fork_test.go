package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/sqlitestore"
)

// Fork a run from an earlier version and enqueue the fork's first step in
// one transaction: both land, or neither does.
func ExampleSQLiteStateStore_ForkRun() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "adk-example")
	defer os.RemoveAll(dir)
	s := sqlitestore.Settings{Runs: contract.RunPolicy{KeepVersions: 10}}
	db, _ := sqlitestore.OpenDB(filepath.Join(dir, "adk.db"), s)
	defer db.Close()
	runs, _ := sqlitestore.OpenState(ctx, db, nil, s)
	work, _ := sqlitestore.OpenQueue(ctx, db, nil, s)

	r, _ := runs.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-1", Data: []byte(`{"plan":"a"}`)})
	_, _ = runs.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-1", Data: []byte(`{"plan":"b"}`), Version: r.Version})

	tx, _ := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: OpenDB's DSN asks for it
	fork, err := runs.Bound(tx).ForkRun(ctx, "acme", "run-1", 1, "run-1-retry")
	if err != nil {
		_ = tx.Rollback()
		fmt.Println(err)
		return
	}
	_ = work.Bound(tx).Enqueue(ctx, contract.Item{Tenant: "acme", ID: fork.ID})
	fmt.Println(tx.Commit())

	got, _ := runs.GetRun(ctx, "acme", "run-1-retry")
	fmt.Println(string(got.Data), got.Version)
	info, _ := work.Item(ctx, contract.ItemKey{Tenant: "acme", ID: "run-1-retry"})
	fmt.Println(info.Item.State)
	// Output:
	// <nil>
	// {"plan":"a"} 1
	// queued
}
