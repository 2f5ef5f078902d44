package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
)

const applyFix = "apply ExpectedSchema with your migration tool (adkctl schema apply in development)"

// Verify reads the database and refuses what this release cannot run on:
// no adk_schema table or a version other than SchemaVersion
// (*contract.SchemaError; for an earlier version its fix names the
// up-migrations, [MigrationFile] last), one of the tables (with version
// 3's {work}_pauses, version 4's {work}_retention, {work}_events and
// {work}_log, and version 5's {runs}_versions), the live-lease function or
// version 5's {runs}_drop_versions missing (*contract.SchemaError),
// or a statement_timeout of 0 (*contract.PreflightError: a statement that
// can run forever holds a pooled connection until the process dies). It
// only reads; it never creates or changes anything.
//
// Verify also looks for a connection pooler: PgBouncer, like every
// pooler, gives its clients a backend pid of its own, so a pid that
// differs from pg_backend_pid() means one is in between, and two
// connections served in turn by one backend mean it pools transactions.
// Behind a pooler the statement_timeout that counts is the one each
// server connection starts with (set by ALTER ROLE or ALTER DATABASE, or
// in postgresql.conf), because a transaction may run on any of them; a
// SET in AfterConnect stays on whichever server connection ran it and is
// not accepted. Behind transaction pooling an exec mode that keeps
// prepared statements between round trips (pgx's default,
// QueryExecModeCacheStatement, unless the pooler tracks them; or
// QueryExecModeDescribeExec) is refused with a *PoolerError. Errors a
// pooler causes come back as *PoolerError, which errors.As also matches
// as *contract.PreflightError.
func Verify(ctx context.Context, exec Executor, tables StateTables) error {
	t, err := tables.normalized()
	if err != nil {
		return err
	}
	e, conn, release, err := verifyConn(ctx, exec)
	if err != nil {
		return err
	}
	defer release()
	mode := execModeOf(e)
	fail := func(what string, err error) error {
		if perr := poolerErr(err, mode); perr != err {
			return perr
		}
		return fmt.Errorf("pgstore: verify: %s: %w", what, err)
	}

	var pool pooling
	if conn != nil {
		if pool, err = detectPooler(ctx, conn); err != nil {
			return fail("detect a connection pooler", err)
		}
	}
	if pool.transaction {
		if err := verifyExecMode(ctx, e, mode); err != nil {
			return fail("check the exec mode", err)
		}
	}

	var version int
	err = e.QueryRow(ctx, "SELECT version FROM adk_schema").Scan(&version)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42P01":
		return &contract.SchemaError{Object: "adk_schema", Found: "missing", Want: "version " + strconv.Itoa(SchemaVersion), Fix: applyFix}
	case errors.Is(err, pgx.ErrNoRows):
		return &contract.SchemaError{Object: "adk_schema.version", Found: "no row", Want: strconv.Itoa(SchemaVersion), Fix: applyFix}
	case err != nil:
		return fail("read adk_schema", err)
	case version == SchemaVersion-1:
		return &contract.SchemaError{Object: "adk_schema.version", Found: strconv.Itoa(version), Want: strconv.Itoa(SchemaVersion),
			Fix: "apply the migration " + MigrationFile + " (pgstore.Migration renders it with your table names) with your migration tool, then start this release"}
	case version >= 1 && version < SchemaVersion:
		return &contract.SchemaError{Object: "adk_schema.version", Found: strconv.Itoa(version), Want: strconv.Itoa(SchemaVersion),
			Fix: "apply the migrations " + strings.Join(migrationFiles[version-1:], " then ") + " in that order (pgstore.Migration(tables, " + strconv.Itoa(version) + ") renders them with your table names) with your migration tool, then start this release"}
	case version != SchemaVersion:
		return &contract.SchemaError{Object: "adk_schema.version", Found: strconv.Itoa(version), Want: strconv.Itoa(SchemaVersion),
			Fix: "run the migration that brings the schema to this release's version, or use the release written for version " + strconv.Itoa(version)}
	}
	for _, name := range []string{t.Runs, t.Work, t.Turns, t.Blobs, t.Work + "_limits", t.Work + "_usage", t.Work + "_pauses",
		t.Work + "_retention", t.Work + "_events", t.Work + "_log", t.Runs + "_versions"} {
		var found *string
		if err := e.QueryRow(ctx, "SELECT to_regclass($1)::text", name).Scan(&found); err != nil {
			return fail("look up table "+name, err)
		}
		if found == nil {
			return &contract.SchemaError{Object: "table " + name, Found: "missing", Want: "present (ExpectedSchema)", Fix: applyFix + ", or check StateTables and search_path"}
		}
	}
	for _, f := range []struct{ name, args string }{{t.Work + "_live_leases", "(text, text, timestamptz)"}, {t.Runs + "_drop_versions", "(text, text)"}} {
		var fn *string
		if err := e.QueryRow(ctx, "SELECT to_regprocedure($1)::text", f.name+f.args).Scan(&fn); err != nil {
			return fail("look up function "+f.name, err)
		}
		if fn == nil {
			return &contract.SchemaError{Object: "function " + f.name, Found: "missing", Want: "present (ExpectedSchema)", Fix: applyFix + ", or check StateTables and search_path"}
		}
	}
	if err := verifyTimeout(ctx, e, pool.pooled); err != nil {
		var pe *contract.PreflightError
		if errors.As(err, &pe) {
			return err
		}
		return fail("read statement_timeout", err)
	}
	return nil
}

// verifyConn returns the executor Verify runs on, with the *pgx.Conn
// under it when there is one (nil for an executor that hides it): a
// connection of its own when exec is a pool, so that every check sees
// one client connection. release gives it back.
func verifyConn(ctx context.Context, exec Executor) (Executor, *pgx.Conn, func(), error) {
	switch c := exec.(type) {
	case *pgxpool.Pool:
		pc, err := c.Acquire(ctx)
		if err != nil {
			if perr := poolerErr(err, c.Config().ConnConfig.DefaultQueryExecMode); perr != err {
				return nil, nil, nil, perr
			}
			return nil, nil, nil, fmt.Errorf("pgstore: verify: connect: %w", err)
		}
		return pc, pc.Conn(), pc.Release, nil
	case *pgxpool.Conn:
		return c, c.Conn(), func() {}, nil
	case *pgx.Conn:
		return c, c, func() {}, nil
	case pgx.Tx:
		return c, c.Conn(), func() {}, nil
	}
	return exec, nil, func() {}, nil
}

// pooling is what Verify found between the client and PostgreSQL.
type pooling struct {
	pooled      bool // a pooler is in between
	transaction bool // it serves two client connections with one server connection in turn
}

// detectPooler compares the backend pid PostgreSQL reports with the one
// conn was given at start-up (a pooler answers the start-up itself, with
// a pid of its own), and, behind a pooler, looks for transaction pooling:
// a second connection served by the backend conn has just released. In
// session mode that never happens; in transaction mode a quiet pooler
// hands the last released server connection to the next transaction, so
// three tries find it unless other clients keep taking it first, and
// then prepared-statement errors still come back as *PoolerError.
func detectPooler(ctx context.Context, conn *pgx.Conn) (pooling, error) {
	pid, err := backendPID(ctx, conn)
	if err != nil || pid == conn.PgConn().PID() {
		return pooling{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	other, err := pgx.ConnectConfig(cctx, conn.Config())
	if err != nil {
		return pooling{pooled: true}, err
	}
	defer closeConn(other)
	for range 3 {
		mine, err := backendPID(ctx, conn)
		if err != nil {
			return pooling{pooled: true}, err
		}
		theirs, err := backendPID(ctx, other)
		if err != nil {
			return pooling{pooled: true}, err
		}
		if mine == theirs {
			return pooling{pooled: true, transaction: true}, nil
		}
	}
	return pooling{pooled: true}, nil
}

// backendPID asks the server for its pid, in the simple protocol, which
// no pooler can break.
func backendPID(ctx context.Context, e Executor) (uint32, error) {
	var pid int64
	err := e.QueryRow(ctx, "SELECT pg_backend_pid()", pgx.QueryExecModeSimpleProtocol).Scan(&pid)
	return uint32(pid), err
}

func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Close(ctx)
}

// verifyExecMode refuses, behind transaction pooling, the exec modes
// that leave a prepared statement on a server connection for a later
// round trip. pgx's default names and caches statements per client
// connection; it still works when the pooler tracks prepared statements
// itself (PgBouncer 1.21 and later with max_prepared_statements), which
// shows on the server as statements under the pooler's names instead of
// pgx's: the probe prepares one in pgx's way and looks.
func verifyExecMode(ctx context.Context, e Executor, mode pgx.QueryExecMode) error {
	switch mode {
	case pgx.QueryExecModeDescribeExec:
		return &PoolerError{Setting: "DefaultQueryExecMode", Value: execModeName(mode),
			Fix: "this mode describes a statement in one round trip and runs it in a second, and a transaction pooler may run the two on different server connections (SQLSTATE 26000); use pgx.QueryExecModeExec (default_query_exec_mode=exec in the DSN), pgx.QueryExecModeSimpleProtocol or pgx.QueryExecModeCacheDescribe"}
	case pgx.QueryExecModeCacheStatement:
		var passedThrough bool
		err := inTx(ctx, e, func(ctx context.Context, e Executor) error {
			return e.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_prepared_statements WHERE name LIKE 'stmtcache\_%'`).Scan(&passedThrough)
		})
		if err != nil {
			return err
		}
		if passedThrough {
			return &PoolerError{Setting: "DefaultQueryExecMode", Value: execModeName(mode) + " (pgx's default)", Fix: execModeFix}
		}
	}
	return nil
}

// timeoutSQL reads, in one statement and so on one server connection,
// the statement_timeout a transaction sees, the one the server
// connection started with, where that came from, and the most specific
// ALTER ROLE / ALTER DATABASE setting a new server connection would get.
const timeoutSQL = `SELECT current_setting('statement_timeout'), s.reset_val, current_user::text, current_database()::text,
  coalesce((SELECT substr(c, length('statement_timeout=') + 1)
              FROM pg_db_role_setting d, unnest(d.setconfig) c
             WHERE c LIKE 'statement\_timeout=%'
               AND d.setrole IN (0, (SELECT oid FROM pg_roles WHERE rolname = current_user))
               AND d.setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))
             ORDER BY (d.setrole <> 0 AND d.setdatabase <> 0) DESC, (d.setrole <> 0) DESC
             LIMIT 1), '')
  FROM pg_settings s WHERE s.name = 'statement_timeout'`

// verifyTimeout refuses a statement_timeout of 0. On a connection of its
// own that is the value the connection has now. Behind a pooler a
// transaction may run on any server connection, so what counts is the
// value each one starts with (reset_val) as well as the value on this
// one: a SET, in AfterConnect or by another client, is on this server
// connection only.
func verifyTimeout(ctx context.Context, e Executor, pooled bool) error {
	var shown, start, role, db, configured string
	if err := e.QueryRow(ctx, timeoutSQL).Scan(&shown, &start, &role, &db, &configured); err != nil {
		return err
	}
	if !pooled {
		if shown == "0" {
			return &contract.PreflightError{Setting: "statement_timeout", Value: shown,
				Fix: "set a timeout for the connections the kit uses: RuntimeParams[\"statement_timeout\"] = \"30s\" in the pool's ConnConfig (statement_timeout=30s in the DSN), or ALTER ROLE " +
					pgx.Identifier{role}.Sanitize() + " SET statement_timeout = '30s'"}
		}
		return nil
	}
	if shown != "0" && start != "0" {
		return nil
	}
	alter := "ALTER ROLE " + pgx.Identifier{role}.Sanitize() + " SET statement_timeout = '30s' (or ALTER DATABASE " + pgx.Identifier{db}.Sanitize() + " SET statement_timeout = '30s')"
	reconnect := "run RECONNECT in PgBouncer's admin console (psql -p <pgbouncer port> pgbouncer -c RECONNECT), or restart it, so that the server connections opened before the setting are replaced"
	switch {
	case configured != "" && configured != "0" && start == "0":
		return &contract.PreflightError{Setting: "statement_timeout", Value: shown + " on a server connection opened before statement_timeout = " + configured + " was set for this role or database",
			Fix: "behind a connection pooler each server connection keeps the settings it started with: " + reconnect}
	case shown != "0":
		return &contract.PreflightError{Setting: "statement_timeout", Value: shown + " on this server connection only (a SET: server connections start with 0)",
			Fix: "behind a connection pooler a SET (in AfterConnect, in PgBouncer's connect_query, or by another client) stays on whichever server connection ran it, so other transactions run without a timeout; set it where every server connection starts with it: " +
				alter + ", then " + reconnect}
	case start != "0":
		return &contract.PreflightError{Setting: "statement_timeout", Value: shown + " on this server connection (a SET by a client that ran on it before)",
			Fix: "behind a connection pooler a SET stays on the server connection that ran it; find the client that turns the timeout off, and keep " + alter}
	}
	return &contract.PreflightError{Setting: "statement_timeout", Value: shown,
		Fix: "behind a connection pooler set it where every server connection starts with it: " + alter + ", then " + reconnect +
			"; RuntimeParams[\"statement_timeout\"] and the options parameter are startup parameters PgBouncer refuses (or drops, when listed in ignore_startup_parameters), and a SET in AfterConnect stays on whichever server connection ran it"}
}
