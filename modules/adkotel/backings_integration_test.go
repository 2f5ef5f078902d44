//go:build integration

package adkotel_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// The backings of the end-to-end test. Redis and PostgreSQL are imported
// by these test files only: the adkotel library never imports a backing.
func e2eBackings() []backing {
	return []backing{memoryBacking(), redisBacking(), postgresBacking()}
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// redisBacking runs on the shared server of ADK_TEST_REDIS_URL, in a
// namespace of its own that is deleted afterwards. Each side gets its own
// client, instrumented with redisotel against that side's provider, so
// the Redis command spans land under our spans.
func redisBacking() backing {
	return backing{name: "redis", system: adkotel.SystemRedis,
		fresh: func(t *testing.T, p policy.Policy) func(*testing.T, trace.TracerProvider) contract.WorkQueue {
			url := mustEnv(t, "ADK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
			opt, err := redis.ParseURL(url)
			if err != nil {
				t.Fatalf("ADK_TEST_REDIS_URL: %v", err)
			}
			ns := "adkotel-" + randomSuffix()
			t.Cleanup(func() {
				c := redis.NewClient(opt)
				defer c.Close()
				ctx := context.Background()
				for _, pattern := range []string{ns + ":*", "{" + ns + ":*"} {
					iter := c.Scan(ctx, 0, pattern, 500).Iterator()
					for iter.Next(ctx) {
						c.Del(ctx, iter.Val())
					}
					if err := iter.Err(); err != nil {
						t.Errorf("cleaning namespace %s: %v", ns, err)
					}
				}
			})
			return func(t *testing.T, tp trace.TracerProvider) contract.WorkQueue {
				c := redis.NewClient(opt)
				if err := redisotel.InstrumentTracing(c, redisotel.WithTracerProvider(tp)); err != nil {
					t.Fatal(err)
				}
				q, err := redisstore.NewQueue(c, nil, redisstore.Settings{Namespace: ns, Policy: p})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					_ = q.Close()
					_ = c.Close()
				})
				return q
			}
		}}
}

// postgresBacking runs on the server of ADK_TEST_POSTGRES_DSN, in a schema
// of its own holding pgstore's published schema, dropped afterwards. Each
// side gets its own pool, traced with otelpgx against its provider.
func postgresBacking() backing {
	return backing{name: "postgresql", system: adkotel.SystemPostgreSQL,
		fresh: func(t *testing.T, p policy.Policy) func(*testing.T, trace.TracerProvider) contract.WorkQueue {
			dsn := mustEnv(t, "ADK_TEST_POSTGRES_DSN", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
			schema := "adkotel_" + randomSuffix()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
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
			pool := func(t *testing.T, tracer pgx.QueryTracer) *pgxpool.Pool {
				cfg, err := pgxpool.ParseConfig(dsn)
				if err != nil {
					t.Fatalf("ADK_TEST_POSTGRES_DSN: %v", err)
				}
				cfg.ConnConfig.RuntimeParams["search_path"] = schema
				cfg.ConnConfig.RuntimeParams["statement_timeout"] = "30s"
				cfg.ConnConfig.Tracer = tracer
				cfg.MaxConns = 4
				pl, err := pgxpool.NewWithConfig(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pl.Close)
				return pl
			}
			setup := pool(t, nil)
			if _, err := setup.Exec(ctx, pgstore.ExpectedSchema); err != nil {
				t.Fatalf("apply schema: %v", err)
			}
			return func(t *testing.T, tp trace.TracerProvider) contract.WorkQueue {
				pl := pool(t, otelpgx.NewTracer(otelpgx.WithTracerProvider(tp)))
				q, err := pgstore.NewWorkQueue(pl, nil, pgstore.Settings{Policy: p, PollInterval: 20 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				return q
			}
		}}
}
