package pgstore

import (
	"regexp"
	"strings"
	"testing"
)

// Every query is rendered whole: no {placeholder} of a table or a shared
// fragment is left for the server to choke on, and the dead-letter
// statements all read the one filter.
func TestQueriesRenderTablesAndFragments(t *testing.T) {
	tables, err := StateTables{Work: "app_work"}.normalized()
	if err != nil {
		t.Fatal(err)
	}
	q := loadQueries(tables)
	left := regexp.MustCompile(`\{[a-z_]+\}`)
	for name, sql := range q {
		if m := left.FindString(sql); m != "" {
			t.Errorf("query %s keeps the placeholder %s", name, m)
		}
	}
	filter := fragment(readSQL(queryFS, "queries/fragments/dead_match.sql"))
	if strings.Contains(filter, "--") || !strings.HasPrefix(filter, "queue = $1 AND state = 'dead'") {
		t.Fatalf("dead_match fragment = %q; want the filter without its comment", filter)
	}
	for _, name := range []string{"dead_list", "dead_list_newest", "dead_count", "dead_summary", "purge", "requeue", "requeue_lock"} {
		if !strings.Contains(q.get(name), "FROM app_work") && !strings.Contains(q.get(name), "UPDATE app_work") {
			t.Errorf("query %s does not name the configured work table", name)
		}
		if !strings.Contains(q.get(name), filter) {
			t.Errorf("query %s does not use the dead_match filter", name)
		}
	}
}
