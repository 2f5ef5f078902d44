//go:build integration

package main

import (
	"strings"
	"testing"

	"github.com/adkit/adk/modules/pgstore/pgstoretest"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// `make demo` with ADK_REDIS_DSN: the workload runs on Redis (in a
// namespace of its own, deleted afterwards).
func TestDemoOnRedis(t *testing.T) {
	dsn := redistest.URL(t)
	ns := redistest.Namespace(t, redistest.Client(t))
	runDemo(t, []string{"--addr", "127.0.0.1:0", "--demo", "--redis-namespace", ns}, env("ADK_REDIS_DSN", dsn), "redis")
}

// `make demo` with ADK_POSTGRES_DSN and --apply-schema: the schema is
// applied (here in a schema of the test's own) and the workload runs.
func TestDemoOnPostgres(t *testing.T) {
	dsn := pgstoretest.TestSchema(t, pgstoretest.DSN(t), &pgstoretest.SchemaOptions{Bare: true}).DSN()

	// Without --apply-schema the empty schema is refused with the fix,
	// spelled for the command line and for make.
	err := run(t.Context(), []string{"--addr", "127.0.0.1:0"}, env("ADK_POSTGRES_DSN", dsn), nopWriter{}, nopWriter{})
	if err == nil || !strings.Contains(err.Error(), "add --apply-schema") || !strings.Contains(err.Error(), "DEMO_FLAGS=--apply-schema make demo") {
		t.Fatalf("unapplied schema: %v; want the fix as a flag and as DEMO_FLAGS=--apply-schema make demo", err)
	}
	runDemo(t, []string{"--addr", "127.0.0.1:0", "--demo", "--apply-schema"}, env("ADK_POSTGRES_DSN", dsn), "postgresql", `"name":"listener","value":"connected"`)
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
