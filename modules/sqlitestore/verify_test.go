package sqlitestore_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/sqlitestore"
)

// openRaw opens path with a DSN of the test's own, closed at the end.
func openRaw(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(sqlitestore.DriverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func tableCount(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A new file gets the schema; opening it again verifies it and changes
// nothing.
func TestPrepareCreatesThenVerifies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "adk.db")
	db, err := sqlitestore.OpenDB(path, sqlitestore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := sqlitestore.OpenQueue(t.Context(), db, nil, sqlitestore.Settings{}); err != nil {
		t.Fatalf("OpenQueue on a new file: %v", err)
	}
	n := tableCount(t, db)
	if n == 0 {
		t.Fatal("no schema was created")
	}
	if _, err := sqlitestore.OpenState(t.Context(), db, nil, sqlitestore.Settings{}); err != nil {
		t.Fatalf("OpenState on the prepared file: %v", err)
	}
	if got := tableCount(t, db); got != n {
		t.Fatalf("opening again changed the schema: %d objects, then %d", n, got)
	}
}

// A file of another schema version is refused with the fix and left as
// it is.
func TestVerifyRefusesAnotherVersion(t *testing.T) {
	for _, v := range []int{0, 1, sqlitestore.SchemaVersion + 1} {
		db := newFile(t, sqlitestore.Settings{})
		if _, err := db.Exec("UPDATE adk_schema SET version = ?", v); err != nil {
			t.Fatal(err)
		}
		_, err := sqlitestore.OpenQueue(t.Context(), db, nil, sqlitestore.Settings{})
		se, ok := errors.AsType[*contract.SchemaError](err)
		if !ok {
			t.Fatalf("version %d: err = %v, want a *contract.SchemaError", v, err)
		}
		if se.Object != "adk_schema.version" || se.Found == "" || se.Fix == "" {
			t.Fatalf("version %d: %+v does not name the version and the fix", v, se)
		}
		if v == 1 && !strings.Contains(se.Fix, "schema/migrations/001_to_002.sql") {
			t.Fatalf("a version 1 file's fix should name the migration: %q", se.Fix)
		}
		var stored int
		if err := db.QueryRow("SELECT version FROM adk_schema").Scan(&stored); err != nil || stored != v {
			t.Fatalf("the refused file was altered: version %d, %v", stored, err)
		}
	}
}

// A file that holds someone else's tables is refused, not joined.
func TestVerifyRefusesAForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sqlitestore.OpenDB(path, sqlitestore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE orders (id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	_, err = sqlitestore.OpenState(t.Context(), db, nil, sqlitestore.Settings{})
	if _, ok := errors.AsType[*contract.SchemaError](err); !ok {
		t.Fatalf("err = %v, want a *contract.SchemaError", err)
	}
	if got := tableCount(t, db); got != 1 {
		t.Fatalf("the foreign file was altered: %d objects", got)
	}
}

// Connections that would lose data or stall are refused, naming the
// setting and the fix.
func TestVerifyRefusesUnsafeConnections(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, dsn, setting string
		s                  sqlitestore.Settings
	}{
		{"rollback journal", "file:" + filepath.Join(dir, "a.db") + "?_busy_timeout=5000&_synchronous=FULL", "journal_mode", sqlitestore.Settings{}},
		{"no busy timeout", "file:" + filepath.Join(dir, "b.db") + "?_journal_mode=WAL&_synchronous=FULL", "busy_timeout", sqlitestore.Settings{}},
		{"synchronous normal by default", "file:" + filepath.Join(dir, "c.db") + "?_journal_mode=WAL&_busy_timeout=5000&_synchronous=NORMAL", "synchronous", sqlitestore.Settings{}},
		{"synchronous off", "file:" + filepath.Join(dir, "d.db") + "?_journal_mode=WAL&_busy_timeout=5000&_synchronous=OFF", "synchronous", sqlitestore.Settings{Durability: sqlitestore.DurabilityNormal}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := openRaw(t, c.dsn)
			_, err := sqlitestore.OpenQueue(t.Context(), db, nil, c.s)
			pe, ok := errors.AsType[*contract.PreflightError](err)
			if !ok || pe.Setting != c.setting || pe.Fix == "" {
				t.Fatalf("err = %v, want a *contract.PreflightError on %s with a fix", err, c.setting)
			}
			if got := tableCount(t, db); got != 0 {
				t.Fatalf("a refused connection created %d objects", got)
			}
		})
	}
}

// DurabilityNormal is an explicit choice: with it, a NORMAL connection is
// accepted and Health says what it loses.
func TestDurabilityNormalIsExplicit(t *testing.T) {
	s := sqlitestore.Settings{Durability: sqlitestore.DurabilityNormal}
	db := newFile(t, s)
	q, err := sqlitestore.OpenQueue(t.Context(), db, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	h, err := q.Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range h.Checks {
		if c.Name == "synchronous" {
			if c.Value != "NORMAL" || c.Status != contract.HealthWarn || !strings.Contains(c.Fix, "power cut") {
				t.Fatalf("synchronous check = %+v, want NORMAL, warn, saying what a power cut loses", c)
			}
			return
		}
	}
	t.Fatalf("no synchronous check in %+v", h.Checks)
}

func TestSettingsRefuseAnUnknownDurability(t *testing.T) {
	_, err := sqlitestore.OpenDB(filepath.Join(t.TempDir(), "x.db"), sqlitestore.Settings{Durability: 7})
	if _, ok := errors.AsType[*contract.ValidationError](err); !ok {
		t.Fatalf("err = %v, want a *contract.ValidationError", err)
	}
	if _, err := sqlitestore.NewQueue(nil, nil, sqlitestore.Settings{}); err == nil {
		t.Fatal("NewQueue(nil) was accepted")
	}
}
