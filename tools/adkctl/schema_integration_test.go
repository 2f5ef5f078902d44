//go:build integration

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// scratchDSN creates a private schema and returns a DSN whose connections
// use it, with the given statement_timeout; the schema is dropped after.
func scratchDSN(t *testing.T, statementTimeout string) string {
	t.Helper()
	dsn := os.Getenv("ADK_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Fatal("set ADK_TEST_POSTGRES_DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the adkctl integration tests")
	}
	schema := "adk_t_" + randomHex()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("statement_timeout", statementTimeout)
	u.RawQuery = q.Encode()
	return u.String()
}

func TestSchemaApplyThenVerify(t *testing.T) {
	dsn := scratchDSN(t, "30s")
	env := map[string]string{"ADK_POSTGRES_DSN": dsn}
	if code, _, errOut := runArgs(t, env, "schema", "verify"); code != 1 || !strings.Contains(errOut, "adk_schema is missing") {
		t.Fatalf("verify before apply: exit %d, %q; want exit 1 naming adk_schema", code, errOut)
	}
	if code, out, errOut := runArgs(t, env, "schema", "apply"); code != 0 || !strings.Contains(out, "applied") {
		t.Fatalf("apply: exit %d, %q %q", code, out, errOut)
	}
	// Applying twice is harmless.
	if code, _, errOut := runArgs(t, nil, "schema", "apply", "--dsn", dsn); code != 0 {
		t.Fatalf("second apply: exit %d, %q", code, errOut)
	}
	code, out, errOut := runArgs(t, env, "schema", "verify")
	if code != 0 || !strings.HasPrefix(out, "ok") {
		t.Fatalf("verify after apply: exit %d, %q %q", code, out, errOut)
	}
	if strings.Contains(out+errOut, dsn) {
		t.Error("the DSN was printed")
	}
}

func TestSchemaVerifyRefusesNoStatementTimeout(t *testing.T) {
	dsn := scratchDSN(t, "0")
	if code, _, errOut := runArgs(t, nil, "schema", "apply", "--dsn", dsn); code != 0 {
		t.Fatalf("apply: exit %d, %q", code, errOut)
	}
	code, _, errOut := runArgs(t, nil, "schema", "verify", "--dsn", dsn)
	if code != 1 || !strings.Contains(errOut, "statement_timeout") {
		t.Fatalf("verify with statement_timeout 0: exit %d, %q; want exit 1 naming statement_timeout", code, errOut)
	}
}

func randomHex() string {
	var raw [6]byte
	_, _ = rand.Read(raw[:])
	return hex.EncodeToString(raw[:])
}
