//go:build integration

package main

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/pgstore/pgstoretest"
)

// scratchDSN creates a private schema and returns a DSN whose connections
// use it, with the given statement_timeout; the schema is dropped after.
func scratchDSN(t *testing.T, statementTimeout string) string {
	t.Helper()
	schema := pgstoretest.TestSchema(t, pgstoretest.DSN(t), &pgstoretest.SchemaOptions{Bare: true})
	return schema.DSN("statement_timeout=" + statementTimeout)
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
