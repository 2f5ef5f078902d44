package pgstore

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// snake is the file name of a queries field: deadListNewest is
// queries/dead_list_newest.sql.
func snake(field string) string {
	var b strings.Builder
	for _, r := range field {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// Every file in queries/ is a field of queries (claim.sql four: the
// full, the lean, the events and the priorities statement; claim_flow.sql, complete.sql
// and complete_flow.sql two each: the full and the lean), holding that file's SQL
// rendered whole: no {placeholder} of a table or a shared fragment is
// left for the server to choke on, and the dead-letter statements all read the
// one filter.
func TestQueriesRenderTablesAndFragments(t *testing.T) {
	tables, err := StateTables{Work: "app_work"}.normalized()
	if err != nil {
		t.Fatal(err)
	}
	q := loadQueries(tables)
	v := reflect.ValueOf(q)
	byName := map[string]string{}
	for i := range v.NumField() {
		byName[snake(v.Type().Field(i).Name)] = v.Field(i).String()
	}
	files, err := os.ReadDir("queries")
	if err != nil {
		t.Fatal(err)
	}
	r := renderer(tables)
	nfiles := 0
	for _, f := range files {
		if f.IsDir() {
			continue
		}
		nfiles++
		name := strings.TrimSuffix(f.Name(), ".sql")
		raw, err := os.ReadFile("queries/" + f.Name())
		if err != nil {
			t.Fatal(err)
		}
		sql, ok := byName[name]
		want := r(string(raw))
		// Four files are rendered in full and lean.
		for file, pair := range map[string][2]func(string) string{"claim": {claimFull.Replace, claimLean.Replace},
			"claim_flow":    {claimFull.Replace, claimFlowLean.Replace},
			"complete":      {completeFull.Replace, completeLean.Replace},
			"complete_flow": {completeFull.Replace, completeFlowLean.Replace}} {
			if name != file {
				continue
			}
			want = r(pair[0](string(raw)))
			if byName[file+"_lean"] != r(pair[1](string(raw))) {
				t.Errorf("field %sLean does not hold the lean rendering of queries/%s", file, f.Name())
			}
			nfiles++
		}
		// claim.sql twice more: its events and priorities renderings.
		if name == "claim" {
			if byName["claim_events"] != r(claimEvents.Replace(string(raw))) {
				t.Errorf("field claimEvents does not hold the events rendering of queries/claim.sql")
			}
			if byName["claim_prio"] != r(claimPrio.Replace(string(raw))) {
				t.Errorf("field claimPrio does not hold the priorities rendering of queries/claim.sql")
			}
			nfiles += 2
		}
		switch {
		case !ok:
			t.Errorf("queries/%s has no field in queries", f.Name())
		case sql != want:
			t.Errorf("field for queries/%s does not hold that file's SQL", f.Name())
		}
	}
	if nfiles != len(byName) {
		t.Errorf("%d query files, %d queries fields; want one field a file", nfiles, len(byName))
	}
	left := regexp.MustCompile(`\{[a-z_]+\}`)
	for name, sql := range byName {
		if m := left.FindString(sql); m != "" {
			t.Errorf("query %s keeps the placeholder %s", name, m)
		}
	}
	filter := fragment(readSQL(fragmentFS, "queries/fragments/dead_match.sql"))
	if strings.Contains(filter, "--") || !strings.HasPrefix(filter, "queue = $1 AND state = 'dead'") {
		t.Fatalf("dead_match fragment = %q; want the filter without its comment", filter)
	}
	for _, name := range []string{"dead_list", "dead_list_newest", "dead_count", "dead_summary", "purge", "requeue", "requeue_lock"} {
		if !strings.Contains(byName[name], "FROM app_work") && !strings.Contains(byName[name], "UPDATE app_work") {
			t.Errorf("query %s does not name the configured work table", name)
		}
		if !strings.Contains(byName[name], filter) {
			t.Errorf("query %s does not use the dead_match filter", name)
		}
	}
}

// A fragment's placeholder in a statement's comment would be replaced
// like any other, and a fragment of several lines would then run on
// outside the comment: statements name fragments by file in comments.
func TestQueryCommentsHoldNoFragment(t *testing.T) {
	frags, err := fragmentFS.ReadDir("queries/fragments")
	if err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir("queries")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.IsDir() {
			continue
		}
		raw, err := os.ReadFile("queries/" + f.Name())
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(raw)) {
			if !strings.HasPrefix(line, "--") {
				continue
			}
			for _, e := range frags {
				if p := "{" + strings.TrimSuffix(e.Name(), ".sql") + "}"; strings.Contains(line, p) {
					t.Errorf("queries/%s: a comment holds the placeholder %s: %q", f.Name(), p, line)
				}
			}
		}
	}
}
