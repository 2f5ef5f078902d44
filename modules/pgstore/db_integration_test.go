//go:build integration

package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
)

// testDB is one test's private schema on the shared server.
type testDB struct {
	dsn    string
	schema string
	pool   *pgxpool.Pool
	s      *pgstoretest.Schema
}

type dbOption func(*pgxpool.Config)

func withMaxConns(n int32) dbOption { return func(c *pgxpool.Config) { c.MaxConns = n } }

// newTestDB creates a schema holding ExpectedSchema on the server of
// ADK_TEST_POSTGRES_DSN and returns a pool (8 connections unless opts say
// otherwise) whose connections use it; the schema is dropped when the
// test ends.
func newTestDB(t testing.TB, opts ...dbOption) *testDB {
	t.Helper()
	dsn := pgstoretest.DSN(t)
	s := pgstoretest.TestSchema(t, dsn, nil)
	configure := []func(*pgxpool.Config){withMaxConns(8)}
	for _, o := range opts {
		configure = append(configure, o)
	}
	return &testDB{dsn: dsn, schema: s.Name, pool: s.Pool(t, configure...), s: s}
}

// connConfig is a connection config for the test's schema (for listeners).
func (d *testDB) connConfig(t testing.TB) *pgx.ConnConfig { return d.s.ConnConfig(t) }

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
