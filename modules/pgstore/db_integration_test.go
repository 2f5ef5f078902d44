//go:build integration

package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/pgstore"
)

// testDSN returns the server the integration lane runs against.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("ADK_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Fatal("set ADK_TEST_POSTGRES_DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the PostgreSQL integration tests")
	}
	return dsn
}

// testDB is one test's private schema on the shared server.
type testDB struct {
	dsn    string
	schema string
	pool   *pgxpool.Pool
}

type dbOption func(*pgxpool.Config)

func withMaxConns(n int32) dbOption { return func(c *pgxpool.Config) { c.MaxConns = n } }

// newTestDB creates a schema adk_t_<random>, applies ExpectedSchema in it
// and returns a pool whose connections use it; the schema is dropped when
// the test ends.
func newTestDB(t testing.TB, opts ...dbOption) *testDB {
	t.Helper()
	dsn := testDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var raw [6]byte
	_, _ = rand.Read(raw[:])
	schema := "adk_t_" + hex.EncodeToString(raw[:])

	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})

	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse dsn: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "30s"
	cfg.MaxConns = 8
	for _, o := range opts {
		o(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, pgstore.ExpectedSchema); err != nil {
		t.Fatalf("apply schema: %v", err)
	}
	return &testDB{dsn: dsn, schema: schema, pool: pool}
}

// connConfig is a connection config for the test's schema (for listeners).
func (d *testDB) connConfig(t testing.TB) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = d.schema
	cfg.RuntimeParams["statement_timeout"] = "30s"
	return cfg
}

// listener starts a listener on the test's own channel (the schema
// name: channels are database-wide, and other tests notify too), closed
// at cleanup. Queues of the test use it through settings.
func (d *testDB) listener(t testing.TB, s pgstore.ListenerSettings) *pgstore.Listener {
	t.Helper()
	l, err := pgstore.NewListener(d.connConfig(t), s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Start(ctx); err != nil {
		t.Fatalf("listener start: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	if err := l.Listen(ctx, d.schema); err != nil {
		t.Fatalf("listen: %v", err)
	}
	return l
}

// settings returns s with the test's channel.
func (d *testDB) settings(s pgstore.Settings) pgstore.Settings {
	s.Channel = d.schema
	return s
}
