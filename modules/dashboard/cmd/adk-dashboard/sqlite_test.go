package main

import (
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/sqlitestore"
)

// `ADK_SQLITE_PATH=adk.db make demo`: the workload runs on a file, the
// health page shows the file's rows, and a restarted demo finds the items
// and dead letters the first one left.
func TestDemoOnSQLiteSurvivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "adk.db")
	getenv := env("ADK_SQLITE_PATH", path)
	runDemo(t, []string{"--addr", "127.0.0.1:0", "--demo"}, getenv, "sqlite",
		`"name":"wal size"`, `"name":"checkpoint lag"`, `"name":"busy waits"`, `"page count"`, `"freelist pages"`)

	b, err := backing.Open(t.Context(), backing.Config{SQLitePath: path})
	if err != nil {
		t.Fatal(err)
	}
	before, err := b.Inspector.Tenants(t.Context(), contract.DefaultQueue)
	b.Close()
	if err != nil || len(before) == 0 {
		t.Fatalf("the file kept no tenants: %+v %v", before, err)
	}
	var items int64
	for _, ts := range before {
		items += ts.Ready + ts.Later + ts.Leased + ts.Dead
	}
	if items == 0 {
		t.Fatalf("the file kept no items: %+v", before)
	}
	runDemo(t, []string{"--addr", "127.0.0.1:0", "--demo"}, getenv, "sqlite")
}

// A file that holds someone else's tables is refused at the start, with
// the schema error's fix, and left as it was.
func TestSQLiteForeignFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sqlitestore.OpenDB(path, sqlitestore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE orders (id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	err = run(t.Context(), []string{"--addr", "127.0.0.1:0"}, env("ADK_SQLITE_PATH", path), io.Discard, io.Discard)
	if _, ok := errors.AsType[*contract.SchemaError](err); !ok {
		t.Fatalf("run on a foreign file: %v, want a *contract.SchemaError", err)
	}
}
