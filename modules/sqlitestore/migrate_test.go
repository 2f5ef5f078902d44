package sqlitestore_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/sqlitestore"
)

// versionOneFile makes a file holding schema version 1, as the release
// before flow control created it, with a few rows of each kind that
// release wrote: a run, queued items of two tenants in the rotation, a
// leased item and a dead letter.
func versionOneFile(t testing.TB, withData bool) (*sql.DB, string) {
	t.Helper()
	db, path := fileAtSchema(t, 1)
	if !withData {
		return db, path
	}
	at := contracttest.FakeEpoch.UnixNano()
	for _, stmt := range []string{
		fmt.Sprintf(`INSERT INTO adk_runs (tenant, id, status, version, input_tokens, created_at, updated_at) VALUES ('acme', 'r1', 'running', 3, 42, %d, %d)`, at, at),
		`UPDATE adk_counters SET value = 7 WHERE name = 'token'`,
		`UPDATE adk_counters SET value = 5 WHERE name = 'seq'`,
		`INSERT INTO adk_queues (queue, stamp, turn) VALUES ('default', 2, 1)`,
		fmt.Sprintf(`INSERT INTO adk_work (queue, tenant, id, state, seq, due_at, enqueued_at) VALUES
			('default', 'acme', 'a1', 'queued', 1, %[1]d, %[1]d),
			('default', 'acme', 'a2', 'queued', 2, %[1]d, %[1]d),
			('default', 'beta', 'b1', 'queued', 3, %[1]d, %[1]d)`, at),
		fmt.Sprintf(`INSERT INTO adk_work (queue, tenant, id, state, seq, due_at, enqueued_at, attempts, worker, lease_expires_at, token) VALUES
			('default', 'beta', 'b0', 'leased', 4, %[1]d, %[1]d, 0, 'w', %[2]d, 7)`, at, at+int64(time.Hour)),
		fmt.Sprintf(`INSERT INTO adk_work (queue, tenant, id, state, seq, due_at, enqueued_at, attempts, last_error, dead_at) VALUES
			('default', 'acme', 'd1', 'dead', 5, %[1]d, %[1]d, 3, 'boom', %[1]d)`, at),
		fmt.Sprintf(`INSERT INTO adk_turns (queue, tenant, stamp, wake_at, served) VALUES ('default', 'acme', 1, %[1]d, 0), ('default', 'beta', 2, %[1]d, 1)`, at),
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return db, path
}

// migrate applies the published migrations from the file's version on,
// in order, each on a connection of its own as the sqlite3 shell would,
// rolling back what a failed one began.
func migrate(t testing.TB, db *sql.DB) error {
	t.Helper()
	if last := sqlitestore.Migrations[len(sqlitestore.Migrations)-1]; last.To != sqlitestore.SchemaVersion {
		t.Fatalf("the last migration ends at version %d, want %d", last.To, sqlitestore.SchemaVersion)
	}
	var version int
	if err := db.QueryRow("SELECT version FROM adk_schema").Scan(&version); err != nil {
		t.Fatal(err)
	}
	for _, m := range sqlitestore.Migrations {
		if m.From < version {
			continue
		}
		if err := applyMigration(t, db, m); err != nil {
			return err
		}
	}
	return nil
}

// applyMigration runs one migration as the sqlite3 shell would.
func applyMigration(t testing.TB, db *sql.DB, m sqlitestore.Migration) error {
	t.Helper()
	c, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(t.Context(), m.SQL); err != nil {
		_, _ = c.ExecContext(t.Context(), "ROLLBACK")
		return err
	}
	return nil
}

// Open meets a version 1 file with the migration's name in the fix and
// leaves it alone; after the migration the file opens and every row the
// old release wrote reads and works as before.
func TestMigrationFromVersionOne(t *testing.T) {
	ctx := t.Context()
	db, _ := versionOneFile(t, true)
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	_, _, err := sqlitestore.Open(ctx, db, clock, sqlitestore.Settings{})
	se, ok := errors.AsType[*contract.SchemaError](err)
	if !ok || !strings.Contains(se.Fix, sqlitestore.Migrations[0].Name) {
		t.Fatalf("Open on version 1: %v, want a *contract.SchemaError naming %s", err, sqlitestore.Migrations[0].Name)
	}
	if err := migrate(t, db); err != nil {
		t.Fatalf("migration: %v", err)
	}
	runs, q, err := sqlitestore.Open(ctx, db, clock, sqlitestore.Settings{})
	if err != nil {
		t.Fatalf("Open after the migration: %v", err)
	}
	r, err := runs.GetRun(ctx, "acme", "r1")
	if err != nil || r.Status != "running" || r.Version != 3 || r.Counters.InputTokens != 42 {
		t.Fatalf("run after the migration: %+v, %v", r, err)
	}
	info, err := q.Item(ctx, contract.ItemKey{Tenant: "beta", ID: "b0"})
	if err != nil || info.Lease == nil || info.Lease.Token != 7 {
		t.Fatalf("lease after the migration: %+v, %v", info, err)
	}
	dead, err := q.DeadLetters(ctx, contract.DeadLetterQuery{Page: contract.PageRequest{Limit: 10}})
	if err != nil || len(dead.Items) != 1 || dead.Items[0].LastError != "boom" {
		t.Fatalf("dead letters after the migration: %+v, %v", dead, err)
	}
	// The rotation goes on where it was (acme, then beta), under limits
	// set on the migrated file, with tokens above the old counter.
	if err := q.SetLimits(ctx, "", "acme", contract.Limits{MaxLeased: 1}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range ls {
		got = append(got, l.Item.Tenant+"/"+l.Item.ID)
		if l.Token <= 7 {
			t.Fatalf("token %d not above the migrated counter's 7", l.Token)
		}
	}
	if want := []string{"acme/a1", "beta/b1"}; !slices.Equal(got, want) {
		t.Fatalf("claimed %v after the migration, want %v (acme capped at 1)", got, want)
	}
}

// Each migration refuses a file at any other version before it writes
// anything.
func TestMigrationRefusesAnotherVersion(t *testing.T) {
	for _, m := range sqlitestore.Migrations {
		for _, other := range []string{"new", "older"} {
			db := newFile(t, sqlitestore.Settings{})
			if other == "older" {
				if m.From == 1 {
					db, _ = versionTwoFile(t, false)
				} else {
					db, _ = versionOneFile(t, false)
				}
			}
			before := schemaShape(t, db)
			if err := applyMigration(t, db, m); err == nil {
				t.Fatalf("%s ran on a %s file", m.Name, other)
			}
			if after := schemaShape(t, db); !slices.Equal(before, after) {
				t.Fatalf("a refused %s changed the file:\n%v\n%v", m.Name, before, after)
			}
		}
	}
}

// A migrated file has the shape of a new one: the same tables, columns
// and indexes, whether it began at version 1 or 2.
func TestMigrationMatchesANewFile(t *testing.T) {
	one, _ := versionOneFile(t, false)
	two, _ := versionTwoFile(t, false)
	fresh := newFile(t, sqlitestore.Settings{})
	for name, db := range map[string]*sql.DB{"version 1": one, "version 2": two} {
		if err := migrate(t, db); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, want := schemaShape(t, db), schemaShape(t, fresh); !slices.Equal(got, want) {
			t.Fatalf("the shape migrated from %s differs from a new file's:\nmigrated %v\nnew      %v", name, got, want)
		}
	}
}

// schemaShape lists the file's tables with their columns and its indexes
// with their definitions, sorted.
func schemaShape(t testing.TB, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT m.type, m.name, coalesce(p.name, ''), coalesce(p.type, ''), coalesce(p."notnull", 0), coalesce(p.dflt_value, ''), coalesce(p.pk, 0),
		CASE WHEN m.type = 'index' THEN coalesce(m.sql, '') ELSE '' END
		FROM sqlite_schema m LEFT JOIN pragma_table_info(m.name) p ON m.type = 'table'
		WHERE m.name NOT LIKE 'sqlite_%' ORDER BY 1, 2, 3`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, name, col, ctype, dflt, def string
		var notnull, pk int
		if err := rows.Scan(&typ, &name, &col, &ctype, &notnull, &dflt, &pk, &def); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s %s %s %d %s %d %s", typ, name, col, ctype, notnull, dflt, pk, def))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var version int
	if err := db.QueryRow("SELECT version FROM adk_schema").Scan(&version); err != nil {
		t.Fatal(err)
	}
	return append(out, fmt.Sprintf("version %d", version))
}

// The queue suite passes on a file that began at version 1 and was
// migrated.
func TestWorkQueueContractOnAMigratedFile(t *testing.T) {
	t.Parallel() // the slowest tests of the package, each on files of its own
	contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
		db, _ := versionOneFile(t, false)
		if err := migrate(t, db); err != nil {
			t.Fatal(err)
		}
		s := sqlitestore.Settings{Policy: p}
		q, err := sqlitestore.OpenQueue(t.Context(), db, clock, s)
		if err != nil {
			t.Fatal(err)
		}
		return q
	})
}

// fileAtSchema makes a file in a temporary folder holding schema version
// n as that release created it (schema/00n_schema.sql), with no rows, and
// returns it open (closed when the test ends) with its path.
func fileAtSchema(t testing.TB, n int) (*sql.DB, string) {
	t.Helper()
	old, err := os.ReadFile(fmt.Sprintf("schema/%03d_schema.sql", n))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "adk.db")
	db, err := sqlitestore.OpenDB(path, sqlitestore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(string(old)); err != nil {
		t.Fatal(err)
	}
	return db, path
}
