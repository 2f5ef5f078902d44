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
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// `make demo` with ADK_REDIS_DSN: the workload runs on Redis (in a
// namespace of its own, deleted afterwards).
func TestDemoOnRedis(t *testing.T) {
	dsn := os.Getenv("ADK_TEST_REDIS_URL")
	if dsn == "" {
		t.Fatal("set ADK_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/0) to run the command's Redis integration test")
	}
	ns := randomName("adkdemo")
	opts, err := redis.ParseURL(dsn)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	defer client.Close()
	defer func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, "*"+ns+"*", 1000).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
	}()
	runDemo(t, []string{"--addr", "127.0.0.1:0", "--demo", "--redis-namespace", ns}, env("ADK_REDIS_DSN", dsn), "redis")
}

// `make demo` with ADK_POSTGRES_DSN and --apply-schema: the schema is
// applied (here in a schema of the test's own) and the workload runs.
func TestDemoOnPostgres(t *testing.T) {
	dsn := os.Getenv("ADK_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Fatal("set ADK_TEST_POSTGRES_DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the command's PostgreSQL integration test")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	schema := randomName("adkdemo_")
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	}()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()

	// Without --apply-schema the empty schema is refused with the fix,
	// spelled for the command line and for make.
	err = run(t.Context(), []string{"--addr", "127.0.0.1:0"}, env("ADK_POSTGRES_DSN", u.String()), nopWriter{}, nopWriter{})
	if err == nil || !strings.Contains(err.Error(), "add --apply-schema") || !strings.Contains(err.Error(), "DEMO_FLAGS=--apply-schema make demo") {
		t.Fatalf("unapplied schema: %v; want the fix as a flag and as DEMO_FLAGS=--apply-schema make demo", err)
	}
	runDemo(t, []string{"--addr", "127.0.0.1:0", "--demo", "--apply-schema"}, env("ADK_POSTGRES_DSN", u.String()), "postgresql", `"name":"listener","value":"connected"`)
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
