package backing

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/sqlitestore"
)

// ADK_SQLITE_PATH opens a file that keeps the queue and the runs across
// a restart: a second Open of the same path sees what the first wrote.
func TestOpenSQLiteKeepsItsFileAcrossRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "adk.db")
	c := FromEnv(env(EnvSQLitePath, path))
	if c.Kind() != SQLite {
		t.Fatalf("Kind = %q with %s set", c.Kind(), EnvSQLitePath)
	}
	b, err := Open(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != SQLite || b.Verdict != nil || b.Queue == nil || b.State == nil || b.Inspector == nil {
		t.Fatalf("sqlite backing: %+v", b)
	}
	ctx := t.Context()
	if err := b.Queue.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "a"}, contract.Item{Tenant: "acme", ID: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.State.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-1", Status: "started"}); err != nil {
		t.Fatal(err)
	}
	ls, err := b.Queue.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Queue.Fail(ctx, ls[0], contract.ErrLeaseExpired); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b, err = Open(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run, err := b.State.GetRun(ctx, "acme", "run-1")
	if err != nil || run.Status != "started" {
		t.Fatalf("the run after a restart: %+v %v", run, err)
	}
	ts, err := b.Inspector.Tenants(ctx, contract.DefaultQueue)
	if err != nil || len(ts) != 1 || ts[0].Ready+ts[0].Later != 2 || ts[0].Served != 1 {
		t.Fatalf("the queue after a restart: %+v %v", ts, err)
	}
	h, err := b.Inspector.Health(ctx)
	if err != nil || h.Backing != SQLite {
		t.Fatalf("health: %+v %v", h, err)
	}
	for _, name := range []string{"wal size", "checkpoint lag", "busy waits", "synchronous"} {
		if !hasCheck(h, name) {
			t.Errorf("health has no %q check: %+v", name, h.Checks)
		}
	}
	for _, name := range []string{"page count", "freelist pages"} {
		if h.Details[name] == "" {
			t.Errorf("health has no %q detail: %+v", name, h.Details)
		}
	}
}

func hasCheck(h contract.Health, name string) bool {
	for _, c := range h.Checks {
		if c.Name == name {
			return true
		}
	}
	return false
}

// A file of someone else's tables opens for showing, with the refusal as
// the verdict, and is left as it was.
func TestOpenSQLiteReportsAForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sqlitestore.OpenDB(path, sqlitestore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE orders (id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err := Open(t.Context(), Config{SQLitePath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, ok := errors.AsType[*contract.SchemaError](b.Verdict); !ok {
		t.Fatalf("verdict = %v, want a *contract.SchemaError", b.Verdict)
	}
}

func TestSQLiteAndAServerAreRefusedTogether(t *testing.T) {
	err := Config{SQLitePath: "x.db", PostgresDSN: "postgres://u:hunter2@h/db"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "pick one backing") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Validate = %v", err)
	}
	c := FromEnv(env(EnvSQLitePath, "x.db", EnvRedisDSN, "redis://h"))
	if _, err := Open(t.Context(), c); err == nil || errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("Open with a path and a DSN: %v", err)
	}
}
