package pgstoretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
)

// EnvDSN names the variable holding the shared test server's connection
// string, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const EnvDSN = "ADK_TEST_POSTGRES_DSN"

// DSN returns the shared test server's connection string, failing the
// test, with the fix, when the variable is not set or pgx cannot parse it.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := contracttest.Env(t, EnvDSN, "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "the PostgreSQL integration tests")
	if _, err := pgx.ParseConfig(dsn); err != nil {
		t.Fatalf("%s is not a connection string pgx reads: %v", EnvDSN, err)
	}
	return dsn
}

// SchemaOptions are what a test asks of its schema; nil asks for the
// defaults.
type SchemaOptions struct {
	// Bare leaves the schema empty, without pgstore's tables: for a test
	// of applying or verifying them.
	Bare bool
}

// Schema is a throwaway schema on a server: its name is one no other
// test uses, and it is dropped, with all it holds, when the test ends.
type Schema struct {
	// Name is the schema's name, a valid unquoted identifier.
	Name string
	dsn  string
}

// TestSchema creates a schema on the server at dsn, applies
// pgstore.ExpectedSchema in it (unless opts.Bare), and drops it when the
// test ends. Connections reach it through its search_path: use
// [Schema.Pool], [Schema.PoolConfig], [Schema.ConnConfig] or [Schema.DSN].
// Pools made by Pool close before the schema is dropped.
func TestSchema(t testing.TB, dsn string, opts *SchemaOptions) *Schema {
	t.Helper()
	if opts == nil {
		opts = &SchemaOptions{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var raw [6]byte
	_, _ = rand.Read(raw[:])
	s := &Schema{Name: "adk_t_" + hex.EncodeToString(raw[:]), dsn: dsn}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+s.Name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() { s.drop(t) })
	if opts.Bare {
		return s
	}
	if _, err := c.Exec(ctx, "SET search_path TO "+s.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, pgstore.ExpectedSchema); err != nil {
		t.Fatalf("apply pgstore.ExpectedSchema: %v", err)
	}
	return s
}

func (s *Schema) drop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		t.Errorf("drop schema %s: %v", s.Name, err)
		return
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "DROP SCHEMA "+s.Name+" CASCADE"); err != nil {
		t.Errorf("drop schema %s: %v", s.Name, err)
	}
}

// DSN returns the server's connection string with search_path set to the
// schema, plus params, each "name=value" (e.g. "statement_timeout=30s"),
// which replace what the string set before.
func (s *Schema) DSN(params ...string) string {
	u, err := url.Parse(s.dsn)
	if err != nil {
		// TestSchema connected with it; only a keyword/value string gets
		// here, and those take settings appended.
		return strings.Join(append([]string{s.dsn, "search_path=" + s.Name}, params...), " ")
	}
	q := u.Query()
	q.Set("search_path", s.Name)
	for _, p := range params {
		name, value, _ := strings.Cut(p, "=")
		q.Set(name, value)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// ConnConfig returns a connection configuration whose connections use
// the schema and carry a 30s statement timeout, as pgstore's Verify asks
// (for a pgstore.Listener, say).
func (s *Schema) ConnConfig(t testing.TB) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(s.dsn)
	if err != nil {
		t.Fatalf("parse the DSN: %v", err)
	}
	cfg.RuntimeParams["search_path"] = s.Name
	cfg.RuntimeParams["statement_timeout"] = "30s"
	return cfg
}

// PoolConfig returns a pool configuration whose connections use the
// schema and carry a 30s statement timeout, as pgstore's Verify asks.
func (s *Schema) PoolConfig(t testing.TB) *pgxpool.Config {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(s.dsn)
	if err != nil {
		t.Fatalf("parse the DSN: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = s.Name
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "30s"
	return cfg
}

// Pool returns a pool over [Schema.PoolConfig], changed by each of
// configure in turn (e.g. to set MaxConns or a tracer), closed when the
// test ends.
func (s *Schema) Pool(t testing.TB, configure ...func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg := s.PoolConfig(t)
	for _, c := range configure {
		c(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}
