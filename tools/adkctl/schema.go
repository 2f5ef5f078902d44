package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

const schemaUsage = `usage: adkctl schema <print|apply|verify> [flags]

  print    write the expected schema (SQL) to standard output
  apply    apply it to the database (the explicit way; the library never does)
  verify   check the database as OpenState does; exit 1 with the reason

examples:
  adkctl schema print > migrations/0001_adk.sql
  adkctl schema apply --dsn postgres://localhost/dev
  ADK_POSTGRES_DSN="$DATABASE_URL" adkctl schema verify --json

flags:
`

func runSchema(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, schemaUsage)
		return 2
	}
	sub := args[0]
	fs := flag.NewFlagSet("adkctl schema "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, schemaUsage)
		fs.PrintDefaults()
	}
	dsnFlag := fs.String("dsn", "", "PostgreSQL connection string (default $ADK_POSTGRES_DSN); never printed")
	fs.StringVar(dsnFlag, "postgres", "", "the same as --dsn, as the other verbs spell it")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	asJSON := fs.Bool("json", false, `print JSON: {"schema_version","sql"} for print, {"schema_version","ok"[,"error"]} for apply and verify`)
	var tables pgstore.StateTables
	fs.StringVar(&tables.Runs, "runs-table", "", "runs table name (default adk_runs)")
	fs.StringVar(&tables.Work, "work-table", "", "work table name (default adk_work)")
	fs.StringVar(&tables.Turns, "turns-table", "", "tenant rotation table name (default adk_queue_turns)")
	fs.StringVar(&tables.Blobs, "blobs-table", "", "claim-check blob table name (default adk_blobs)")
	if sub == "-h" || sub == "--help" || sub == "help" {
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, schemaUsage)
		fs.PrintDefaults()
		return 0
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "adkctl schema %s: unexpected argument %q\n", sub, fs.Arg(0))
		return 2
	}
	sql, err := pgstore.Schema(tables)
	if err != nil {
		fmt.Fprintln(stderr, "adkctl:", err)
		return 2
	}
	switch sub {
	case "print":
		if *asJSON {
			return emitSchema(stdout, schemaOut{SchemaVersion: pgstore.SchemaVersion, SQL: sql})
		}
		fmt.Fprint(stdout, sql)
		return 0
	case "apply", "verify":
	default:
		fmt.Fprintf(stderr, "adkctl schema: unknown command %q\n", sub)
		fs.Usage()
		return 2
	}

	dsn := contract.Secret(*dsnFlag)
	if !dsn.IsSet() {
		dsn = contract.Secret(getenv("ADK_POSTGRES_DSN"))
	}
	if !dsn.IsSet() {
		fmt.Fprintln(stderr, "adkctl: no database: pass --dsn or set ADK_POSTGRES_DSN")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	conn, err := connect(ctx, dsn)
	if err != nil {
		fmt.Fprintln(stderr, "adkctl:", err)
		return 1
	}
	// fail reports a refusal: on stderr, and in the JSON for scripts.
	fail := func(msg string) int {
		msg = backing.Redact(msg, dsn)
		if *asJSON {
			emitSchema(stdout, schemaOut{SchemaVersion: pgstore.SchemaVersion, OK: new(false), Error: msg})
		}
		fmt.Fprintln(stderr, msg)
		return 1
	}
	defer conn.Close(context.Background())

	if sub == "apply" {
		// One simple-protocol round trip: PostgreSQL runs the statements
		// as one transaction, so a failure applies none of them.
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fail("adkctl: apply the schema: " + err.Error())
		}
		if *asJSON {
			return emitSchema(stdout, schemaOut{SchemaVersion: pgstore.SchemaVersion, OK: new(true)})
		}
		fmt.Fprintf(stdout, "schema version %d applied\n", pgstore.SchemaVersion)
		return 0
	}
	if err := pgstore.Verify(ctx, conn, tables); err != nil {
		return fail(err.Error())
	}
	if *asJSON {
		return emitSchema(stdout, schemaOut{SchemaVersion: pgstore.SchemaVersion, OK: new(true)})
	}
	fmt.Fprintf(stdout, "ok: schema version %d, tables present, statement_timeout set\n", pgstore.SchemaVersion)
	return 0
}

// schemaOut is `adkctl schema ... --json`.
type schemaOut struct {
	SchemaVersion int    `json:"schema_version"`
	SQL           string `json:"sql,omitempty"`
	OK            *bool  `json:"ok,omitempty"`
	Error         string `json:"error,omitempty"`
}

func emitSchema(w io.Writer, v schemaOut) int {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return 1
	}
	return 0
}

// connect opens one connection. Parse and connect errors are reported
// without the DSN, which may hold a password.
func connect(ctx context.Context, dsn contract.Secret) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn.Reveal())
	if err != nil {
		return nil, errors.New("the DSN cannot be parsed as a PostgreSQL connection string")
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		msg := backing.Redact(err.Error(), dsn)
		if cfg.Password != "" {
			msg = strings.ReplaceAll(msg, cfg.Password, "[redacted]")
		}
		return nil, fmt.Errorf("connect to %s:%d as %s: %s (check the DSN and that the server is up)", cfg.Host, cfg.Port, cfg.User, msg)
	}
	return conn, nil
}
