package pgstore_test

import (
	"fmt"
	"strings"

	"github.com/adkit/adk/modules/pgstore"
)

// The schema is published for the deployment's migration tool; custom
// table names must be plain identifiers.
func ExampleSchema() {
	sql, err := pgstore.Schema(pgstore.StateTables{Runs: "agent_runs"})
	fmt.Println(err == nil && strings.Contains(sql, "CREATE TABLE IF NOT EXISTS agent_runs"))

	_, err = pgstore.Schema(pgstore.StateTables{Runs: "runs; drop table x"})
	fmt.Println(err)
	// Output:
	// true
	// adk: invalid StateTables.Runs: "runs; drop table x" is not a plain identifier: use lower-case letters, digits and underscores, starting with a letter or underscore, unquoted and without a schema prefix (set search_path instead)
}
