package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/pgstore"
)

func runArgs(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb, func(k string) string { return env[k] })
	return code, out.String(), errb.String()
}

func TestSchemaPrint(t *testing.T) {
	code, out, _ := runArgs(t, nil, "schema", "print")
	if code != 0 || out != pgstore.ExpectedSchema {
		t.Fatalf("schema print: exit %d, output differs from ExpectedSchema", code)
	}
	code, out, _ = runArgs(t, nil, "schema", "print", "--work-table", "app_work")
	if code != 0 || !strings.Contains(out, "CREATE TABLE IF NOT EXISTS app_work") {
		t.Fatalf("schema print --work-table app_work: exit %d", code)
	}
}

func TestSchemaRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage"},
		{[]string{"nope"}, 2, "unknown verb"},
		{[]string{"schema"}, 2, "usage"},
		{[]string{"schema", "frob"}, 2, "unknown command"},
		{[]string{"schema", "print", "--runs-table", "runs; drop table x"}, 2, "plain identifier"},
		{[]string{"schema", "apply"}, 2, "ADK_POSTGRES_DSN"},
		{[]string{"schema", "verify", "extra"}, 2, "unexpected argument"},
		{[]string{"schema", "verify", "--dsn", "postgres://u:hunter2@[bad"}, 1, "cannot be parsed"},
	} {
		code, out, errOut := runArgs(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("adkctl %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errOut, tc.code, tc.want)
		}
		if strings.Contains(out+errOut, "hunter2") {
			t.Errorf("adkctl %v printed the password", tc.args)
		}
	}
}

func TestHelp(t *testing.T) {
	if code, out, _ := runArgs(t, nil, "schema", "-h"); code != 0 || !strings.Contains(out, "-dsn") {
		t.Errorf("schema -h: exit %d, %q", code, out)
	}
}
