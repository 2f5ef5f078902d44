package sqlitestore_test

import (
	"context"
	"fmt"
	"os"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/claimcheck"
	"github.com/adkit/adk/modules/sqlitestore"
)

// The shortest use from the README: open a file, both halves and the
// blob store on it, write a run and enqueue its work.
func Example_readme() {
	dir, err := os.MkdirTemp("", "adk-readme")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(dir); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(readme(context.Background())) // in a fresh folder: the README opens adk.db where it runs
	// Output: <nil>
}

// readme is the README's shortest use, as it stands there.
func readme(ctx context.Context) error {
	db, err := sqlitestore.OpenDB("adk.db", sqlitestore.Settings{})
	if err != nil {
		return err
	}
	defer db.Close()
	runs, work, err := sqlitestore.Open(ctx, db, nil, sqlitestore.Settings{})
	if err != nil {
		return err // a *contract.SchemaError names what the file holds and the fix
	}
	blobs, err := sqlitestore.NewBlobStore(db, nil)
	if err != nil {
		return err
	}
	queue := claimcheck.Wrap(work, blobs, 64<<10) // payloads above 64 KiB go to the blob table
	if _, err := runs.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run_1"}); err != nil {
		return err
	}
	return queue.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run_1/1"})
}
