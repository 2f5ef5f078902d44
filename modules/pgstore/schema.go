package pgstore

import (
	"embed"
	"fmt"
	"strings"

	"github.com/adkit/adk/modules/contract"
)

// SchemaVersion is the version of the schema this release reads. Verify
// refuses a database whose adk_schema holds another.
const SchemaVersion = 6

// MigrationFile names the published up-migration that brings a database
// from the previous schema version (5) to SchemaVersion: the file in this
// module, also rendered by [Migration].
const MigrationFile = "schema/migrations/006_ready_by_priority.sql"

// migrationFiles are the up-migrations in order: the one at index i
// brings version i+1 to version i+2.
var migrationFiles = []string{"schema/migrations/002_flow_control.sql", "schema/migrations/003_lifecycle.sql",
	"schema/migrations/004_history.sql", "schema/migrations/005_run_versions.sql", MigrationFile}

//go:embed schema/*.sql schema/migrations/*.sql
var schemaFS embed.FS

// ExpectedSchema is the SQL of the schema the backings read, with the
// default table names. It is published for the deployment's migration
// tool to own: the library never applies it. `adkctl schema apply` applies
// it for development.
var ExpectedSchema = mustRender(DefaultTables())

// Schema returns the expected schema with the given table names (zero
// fields take the defaults), or a *contract.ValidationError for a name
// that is not a plain identifier.
func Schema(tables StateTables) (string, error) {
	t, err := tables.normalized()
	if err != nil {
		return "", err
	}
	return render(t, readSQL(schemaFS, "schema/006_schema.sql")), nil
}

// Migration returns the up-migration from schema version from to
// SchemaVersion, with the given table names, for the deployment's
// migration tool: [MigrationFile] from version 5, and from an earlier
// version the migrations in between followed by it. The library never
// runs them.
func Migration(tables StateTables, from int) (string, error) {
	t, err := tables.normalized()
	if err != nil {
		return "", err
	}
	if from < 1 || from >= SchemaVersion {
		return "", &contract.ValidationError{Field: "from", Problem: fmt.Sprintf("is %d; this release publishes the migrations from versions 1 to %d to version %d", from, SchemaVersion-1, SchemaVersion)}
	}
	var b strings.Builder
	for _, f := range migrationFiles[from-1:] {
		b.WriteString(render(t, readSQL(schemaFS, f)))
		b.WriteString("\n")
	}
	return b.String(), nil
}

func mustRender(t StateTables) string {
	s, err := Schema(t)
	if err != nil {
		panic(err)
	}
	return s
}

func readSQL(fs embed.FS, name string) string {
	b, err := fs.ReadFile(name)
	if err != nil {
		panic("pgstore: missing embedded " + name)
	}
	return string(b)
}

// render puts validated table names in place of the braces. Only
// identifiers that passed ValidateIdentifier ever reach the SQL. The flow
// control tables are named after the work table: {work}_limits and
// {work}_usage.
func render(t StateTables, sql string) string {
	return strings.NewReplacer("{runs}", t.Runs, "{work}", t.Work, "{turns}", t.Turns, "{blobs}", t.Blobs).Replace(sql)
}
