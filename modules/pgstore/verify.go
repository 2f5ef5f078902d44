package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/adkit/adk/modules/contract"
)

const applyFix = "apply ExpectedSchema with your migration tool (adkctl schema apply in development)"

// Verify reads the database and refuses what this release cannot run on:
// no adk_schema table or a version other than SchemaVersion
// (*contract.SchemaError), one of the tables missing (*contract.SchemaError),
// or a statement_timeout of 0 on the connection (*contract.PreflightError:
// a statement that can run forever holds a pooled connection until the
// process dies). It only reads; it never creates or changes anything.
func Verify(ctx context.Context, exec Executor, tables StateTables) error {
	t, err := tables.normalized()
	if err != nil {
		return err
	}
	var version int
	err = exec.QueryRow(ctx, "SELECT version FROM adk_schema").Scan(&version)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42P01":
		return &contract.SchemaError{Object: "adk_schema", Found: "missing", Want: "version " + strconv.Itoa(SchemaVersion), Fix: applyFix}
	case errors.Is(err, pgx.ErrNoRows):
		return &contract.SchemaError{Object: "adk_schema.version", Found: "no row", Want: strconv.Itoa(SchemaVersion), Fix: applyFix}
	case err != nil:
		return fmt.Errorf("pgstore: verify: read adk_schema: %w", err)
	case version != SchemaVersion:
		return &contract.SchemaError{Object: "adk_schema.version", Found: strconv.Itoa(version), Want: strconv.Itoa(SchemaVersion),
			Fix: "run the migration that brings the schema to this release's version, or use the release written for version " + strconv.Itoa(version)}
	}
	for _, name := range []string{t.Runs, t.Work, t.Turns, t.Blobs} {
		var found *string
		if err := exec.QueryRow(ctx, "SELECT to_regclass($1)::text", name).Scan(&found); err != nil {
			return fmt.Errorf("pgstore: verify: look up table %s: %w", name, err)
		}
		if found == nil {
			return &contract.SchemaError{Object: "table " + name, Found: "missing", Want: "present (ExpectedSchema)", Fix: applyFix + ", or check StateTables and search_path"}
		}
	}
	var timeout string
	if err := exec.QueryRow(ctx, "SELECT current_setting('statement_timeout')").Scan(&timeout); err != nil {
		return fmt.Errorf("pgstore: verify: read statement_timeout: %w", err)
	}
	if timeout == "0" {
		return &contract.PreflightError{Setting: "statement_timeout", Value: timeout,
			Fix: "set a timeout for the connections the kit uses, e.g. RuntimeParams[\"statement_timeout\"] = \"30s\" in the pool config, or ALTER ROLE ... SET statement_timeout"}
	}
	return nil
}
