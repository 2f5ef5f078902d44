package pgstore

import (
	"embed"
	"strings"
)

// SchemaVersion is the version of the schema this release reads. Verify
// refuses a database whose adk_schema holds another.
const SchemaVersion = 1

//go:embed schema/*.sql
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
	return render(t, readSQL(schemaFS, "schema/001_schema.sql")), nil
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
// identifiers that passed ValidateIdentifier ever reach the SQL.
func render(t StateTables, sql string) string {
	return strings.NewReplacer("{runs}", t.Runs, "{work}", t.Work, "{turns}", t.Turns, "{blobs}", t.Blobs).Replace(sql)
}
