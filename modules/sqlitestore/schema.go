package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/adkit/adk/modules/contract"
)

// SchemaVersion is the version of the schema this release reads and
// creates. Open refuses a file that holds another. Version 2 added flow
// control (tenant limits, rate buckets, weighted turns, budget usage);
// version 3 the lifecycle controls (pauses, cancels, priorities, snoozes,
// waits for a signal); version 4 finished items and their history
// (retention, events, uniqueness windows, Find by ID); version 5 fenced
// run writes and run versions (the fence of each run, the table of
// earlier versions); version 6 the data of kept versions in a table of
// its own (adk_run_blobs), out of the versions' rows; version 7 keeps
// tenants whose queued items are all delayed out of the claims' walk.
const SchemaVersion = 7

//go:embed schema/*.sql schema/migrations/*.sql
var schemaFS embed.FS

// ExpectedSchema is the SQL of the schema: what Open runs in a new, empty
// file.
var ExpectedSchema = readSQL(schemaFS, "schema/007_schema.sql")

// A Migration brings a file from one schema version to the next. The
// library never applies one: the owner of the file does, after a backup,
// with the processes that use it stopped.
type Migration struct {
	From, To int
	// Name is the file's path in this module, which Verify names in the
	// fix when it meets a file at From.
	Name string
	// SQL is the migration: one transaction that refuses a file at any
	// version other than From before it writes anything.
	SQL string
}

// Migrations are the published up-migrations, oldest first; the last
// ends at SchemaVersion.
var Migrations = []Migration{
	{From: 1, To: 2, Name: "schema/migrations/001_to_002.sql", SQL: readSQL(schemaFS, "schema/migrations/001_to_002.sql")},
	{From: 2, To: 3, Name: "schema/migrations/002_to_003.sql", SQL: readSQL(schemaFS, "schema/migrations/002_to_003.sql")},
	{From: 3, To: 4, Name: "schema/migrations/003_to_004.sql", SQL: readSQL(schemaFS, "schema/migrations/003_to_004.sql")},
	{From: 4, To: 5, Name: "schema/migrations/004_to_005.sql", SQL: readSQL(schemaFS, "schema/migrations/004_to_005.sql")},
	{From: 5, To: 6, Name: "schema/migrations/005_to_006.sql", SQL: readSQL(schemaFS, "schema/migrations/005_to_006.sql")},
	{From: 6, To: 7, Name: "schema/migrations/006_to_007.sql", SQL: readSQL(schemaFS, "schema/migrations/006_to_007.sql")},
}

// tables are the tables of the schema, each checked by Verify.
var tables = []string{"adk_schema", "adk_counters", "adk_runs", "adk_work", "adk_queues", "adk_turns", "adk_recent", "adk_blobs", "adk_limits", "adk_usage", "adk_pauses", "adk_retention", "adk_events", "adk_event_log", "adk_run_versions", "adk_run_blobs"}

// columns are columns a later version added to a table of an earlier
// one, each checked by Verify.
var columns = map[string][]string{
	"adk_runs":         {"fence"},
	"adk_run_versions": {"blob"},
	"adk_turns":        {"credit", "tat", "ranked", "asleep"},
	"adk_queues":       {"paused", "paused_tenants", "wait_next"},
	"adk_work": {"priority", "snoozes", "wait_signal", "wait_since", "wait_until", "resumed_signal", "resumed_payload",
		"resumed_timed_out", "resumed_at", "cancelled_at", "cancel_reason", "unique_for", "finished_at", "unique_until", "heartbeats"},
}

// migrationFix says how to bring a file at version from to SchemaVersion.
func migrationFix(from int) string {
	var names []string
	for _, m := range Migrations {
		if m.From >= from {
			names = append(names, m.Name)
		}
	}
	if len(names) == 0 || Migrations[0].From > from {
		return fmt.Sprintf("this release reads schema version %d and publishes migrations from version %d only; migrate the file with an earlier release first, or start on a new path", SchemaVersion, Migrations[0].From)
	}
	return fmt.Sprintf("stop the processes that use the file, back it up, and apply %s (modules/sqlitestore, also sqlitestore.Migrations) in that order, e.g. sqlite3 -bail FILE < %s; the library never alters a file",
		strings.Join(names, ", then "), names[0])
}

func readSQL(fs embed.FS, name string) string {
	b, err := fs.ReadFile(name)
	if err != nil {
		panic("sqlitestore: missing embedded " + name)
	}
	return string(b)
}

// Prepare makes the file behind db ready: in a file that holds no table
// it creates the schema (in one transaction, so a crash leaves the file
// empty or whole), and in any other it runs Verify. It never alters a
// file that holds a schema.
func Prepare(ctx context.Context, db *sql.DB, s Settings) error {
	if db == nil {
		return nilDB()
	}
	s, err := s.normalized()
	if err != nil {
		return err
	}
	if err := verifyConn(ctx, db, s); err != nil {
		return err
	}
	d := newDB(db)
	err = d.write(ctx, func(ctx context.Context, e execer) error {
		var n int
		if err := e.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		_, err := e.ExecContext(ctx, ExpectedSchema)
		return err
	})
	if err != nil {
		return schemaErr(err)
	}
	return Verify(ctx, db, s)
}

// Verify checks the file behind db without changing it: the connection's
// journal mode (WAL), busy timeout (not zero) and synchronous level (FULL
// unless Settings.Durability is DurabilityNormal), the schema version and
// the tables. Each refusal is a *contract.PreflightError or a
// *contract.SchemaError that names the fix.
func Verify(ctx context.Context, db *sql.DB, s Settings) error {
	if db == nil {
		return nilDB()
	}
	s, err := s.normalized()
	if err != nil {
		return err
	}
	if err := verifyConn(ctx, db, s); err != nil {
		return err
	}
	have := map[string]bool{}
	rows, err := db.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE type = 'table'")
	if err != nil {
		return schemaErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		have[name] = true
	}
	if err := rows.Err(); err != nil {
		return schemaErr(err)
	}
	if !have["adk_schema"] {
		return &contract.SchemaError{Object: "adk_schema", Found: "missing in a file that holds other tables", Want: "version " + strconv.Itoa(SchemaVersion),
			Fix: "give the backing a file of its own: a new path, which Open creates the schema in"}
	}
	var version int
	if err := db.QueryRowContext(ctx, "SELECT version FROM adk_schema").Scan(&version); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return &contract.SchemaError{Object: "adk_schema.version", Found: "empty", Want: strconv.Itoa(SchemaVersion),
				Fix: "the file's schema is damaged; restore it from a backup, or start on a new path"}
		}
		return schemaErr(err)
	}
	if version != SchemaVersion {
		fix := fmt.Sprintf("this release reads schema version %d and never alters a file; open the file with the release that created it", SchemaVersion)
		if version < SchemaVersion {
			fix = migrationFix(version)
		}
		return &contract.SchemaError{Object: "adk_schema.version", Found: strconv.Itoa(version), Want: strconv.Itoa(SchemaVersion), Fix: fix}
	}
	for _, t := range tables {
		if !have[t] {
			return &contract.SchemaError{Object: "table " + t, Found: "missing", Want: "the tables of schema version " + strconv.Itoa(SchemaVersion),
				Fix: "the file's schema is incomplete; restore it from a backup, or start on a new path"}
		}
	}
	for t, cols := range columns {
		for _, c := range cols {
			var n int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", t, c).Scan(&n); err != nil {
				return schemaErr(err)
			}
			if n == 0 {
				return &contract.SchemaError{Object: "column " + t + "." + c, Found: "missing", Want: "the columns of schema version " + strconv.Itoa(SchemaVersion),
					Fix: "the file says version " + strconv.Itoa(SchemaVersion) + " but lacks a column the migration adds; restore it from a backup, or start on a new path"}
			}
		}
	}
	return nil
}

// verifyConn checks the settings of one connection of the pool. Every
// connection opened from one DSN has the same, so one stands for all.
func verifyConn(ctx context.Context, db *sql.DB, s Settings) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return schemaErr(err)
	}
	defer c.Close()
	var mode string
	if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return schemaErr(err)
	}
	if !strings.EqualFold(mode, "wal") {
		return &contract.PreflightError{Setting: "journal_mode", Value: mode,
			Fix: "open the database with sqlitestore.OpenDB (or add _journal_mode=WAL to the DSN): without WAL, readers block the writer and processes sharing the file stall"}
	}
	var busy int64
	if err := c.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
		return err
	}
	if busy <= 0 {
		return &contract.PreflightError{Setting: "busy_timeout", Value: "0",
			Fix: "open the database with sqlitestore.OpenDB (or add _busy_timeout=5000 to the DSN): without it a write that meets another process's lock fails at once"}
	}
	var sync int
	if err := c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return err
	}
	names := map[int]string{0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
	switch {
	case sync < 1 || (sync < 2 && s.Durability == DurabilityFull):
		return &contract.PreflightError{Setting: "synchronous", Value: names[sync],
			Fix: "open the database with sqlitestore.OpenDB (or add _synchronous=FULL to the DSN) so an acknowledged write survives a power cut; to accept losing the last writes on a power cut, set Settings.Durability = DurabilityNormal"}
	}
	return nil
}

func nilDB() error {
	return &contract.ValidationError{Field: "db", Problem: "is nil; pass the *sql.DB that sqlitestore.OpenDB returned"}
}
