//go:build integration

package dashboard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/redisstore"
)

// The page and security checks of the unit lane, on the real backings.
var backingChecks = []struct {
	name  string
	token string
	check func(*testing.T, *fixture)
}{
	{"overview", "", checkOverviewPage},
	{"tenants", "", checkTenantsPage},
	{"leases", "", checkLeasesPage},
	{"dead", "", checkDeadPage},
	{"item", "", checkItemPage},
	{"healthz-metrics", "", checkHealthzMetricsStatic},
	{"read-only", "", checkReadOnlyRefusesActions},
	{"token-and-csrf", testToken, checkActionsNeedTokenAndCSRF},
	{"bulk-filter", testToken, checkBulkActionStaysInsideFilter},
	{"xss", testToken, checkXSSRendersAsText},
	{"dsn", testToken, checkDSNNeverRendered},
	{"bad-cursors", "", checkBadCursorsAre400},
	{"bidi", "", checkBidiControlsAreVisible},
	{"dead-newest-first", "", checkDeadNewestFirstPaging},
	{"dead-counts", "", checkDeadCountsHonourFilters},
	{"dead-confirm", testToken, checkBulkConfirmShowsTheCount},
	{"dead-selection", testToken, checkSelectionActsOnPickedOnly},
	{"dead-errors", testToken, checkDeadErrorGroups},
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func TestPagesOnRedis(t *testing.T) {
	url := os.Getenv("ADK_TEST_REDIS_URL")
	if url == "" {
		t.Fatal("set ADK_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/0) to run the dashboard's Redis integration tests")
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	defer client.Close()
	for _, c := range backingChecks {
		t.Run(c.name, func(t *testing.T) {
			ns := randomName("adkdash")
			t.Cleanup(func() { deleteRedisNamespace(t, client, ns) })
			clock := contracttest.NewFakeClock(time.Time{})
			settings := redisstore.Settings{Namespace: ns, Policy: fixturePolicy}
			q, err := redisstore.NewQueue(client, clock, settings)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = q.Close() })
			st, err := redisstore.NewState(client, clock, settings)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, newFixtureOn(t, c.token, clock, "redis", q, q, st))
		})
	}
}

func deleteRedisNamespace(t *testing.T, c *redis.Client, ns string) {
	ctx := context.Background()
	iter := c.Scan(ctx, 0, "*"+ns+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Errorf("scan namespace %s: %v", ns, err)
	}
	for _, k := range keys {
		c.Del(ctx, k)
	}
}

func TestPagesOnPostgres(t *testing.T) {
	dsn := os.Getenv("ADK_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Fatal("set ADK_TEST_POSTGRES_DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the dashboard's PostgreSQL integration tests")
	}
	for _, c := range backingChecks {
		t.Run(c.name, func(t *testing.T) {
			pool := postgresSchema(t, dsn)
			clock := contracttest.NewFakeClock(time.Time{})
			settings := pgstore.Settings{Policy: fixturePolicy}
			q, err := pgstore.NewWorkQueue(pool, clock, settings)
			if err != nil {
				t.Fatal(err)
			}
			st, err := pgstore.NewStateStore(pool, clock, settings)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, newFixtureOn(t, c.token, clock, "postgresql", q, q, st))
		})
	}
}

// postgresSchema gives the test a schema of its own, with the expected
// tables applied, dropped when the test ends.
func postgresSchema(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	schema := randomName("adkdash_")
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "30s"
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, pgstore.ExpectedSchema); err != nil {
		t.Fatalf("apply schema: %v", err)
	}
	return pool
}
