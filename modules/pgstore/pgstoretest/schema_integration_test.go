//go:build integration

package pgstoretest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
)

// The package example runs as a test in this lane.
func TestExample(t *testing.T) { testQueueInASchemaOfItsOwn(t) }

func schemaExists(t *testing.T, dsn, name string) bool {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// A schema holds pgstore's tables (Verify passes through its DSN) or,
// Bare, nothing; either is gone once its test ends.
func TestSchemaLifetime(t *testing.T) {
	dsn := pgstoretest.DSN(t)
	for _, bare := range []bool{false, true} {
		var name string
		t.Run(map[bool]string{false: "tables", true: "bare"}[bare], func(t *testing.T) {
			s := pgstoretest.TestSchema(t, dsn, &pgstoretest.SchemaOptions{Bare: bare})
			name = s.Name
			if !schemaExists(t, dsn, name) {
				t.Fatalf("schema %s missing during its test", name)
			}
			ctx := context.Background()
			c, err := pgx.Connect(ctx, s.DSN("statement_timeout=30s"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			var tables int
			if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").Scan(&tables); err != nil {
				t.Fatal(err)
			}
			if bare != (tables == 0) {
				t.Fatalf("bare=%v: %d tables in the schema its DSN reaches", bare, tables)
			}
			if bare {
				return
			}
			if err := pgstore.Verify(ctx, s.Pool(t), pgstore.StateTables{}); err != nil {
				t.Fatalf("Verify over the schema's pool: %v", err)
			}
		})
		if schemaExists(t, dsn, name) {
			t.Errorf("schema %s still there after its test", name)
		}
	}
}
