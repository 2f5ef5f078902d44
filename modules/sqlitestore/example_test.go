package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/sqlitestore"
)

// Open a file, keep a run and its work in it, and claim the work.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "adk-example")
	defer os.RemoveAll(dir)

	db, err := sqlitestore.OpenDB(filepath.Join(dir, "adk.db"), sqlitestore.Settings{})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	runs, err := sqlitestore.OpenState(ctx, db, nil, sqlitestore.Settings{})
	if err != nil {
		panic(err)
	}
	work, err := sqlitestore.OpenQueue(ctx, db, nil, sqlitestore.Settings{})
	if err != nil {
		panic(err)
	}

	run, _ := runs.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-1", Status: "started"})
	_ = work.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-1"})
	leases, _ := work.Claim(ctx, contract.ClaimRequest{Worker: "w1", LeaseFor: time.Minute, Max: 10})
	fmt.Println(run.Version, len(leases), leases[0].Item.ID)
	fmt.Println(work.Complete(ctx, leases...))
	// Output:
	// 1 1 run-1
	// <nil>
}
