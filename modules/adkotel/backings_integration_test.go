//go:build integration

package adkotel_test

import (
	"testing"
	"time"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
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

// redisBacking runs on the shared server of ADK_TEST_REDIS_URL, in a
// namespace of its own that is deleted afterwards. Each side gets its own
// client, instrumented with redisotel against that side's provider, so
// the Redis command spans land under our spans.
func redisBacking() backing {
	return backing{name: "redis", system: adkotel.SystemRedis,
		fresh: func(t *testing.T, p policy.Policy) func(*testing.T, trace.TracerProvider) contract.WorkQueue {
			opt, err := redis.ParseURL(redistest.URL(t))
			if err != nil {
				t.Fatalf("%s: %v", redistest.EnvURL, err)
			}
			ns := redistest.Namespace(t, redistest.Client(t))
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
			schema := pgstoretest.TestSchema(t, pgstoretest.DSN(t), nil)
			pool := func(t *testing.T, tracer pgx.QueryTracer) *pgxpool.Pool {
				return schema.Pool(t, func(c *pgxpool.Config) {
					c.ConnConfig.Tracer = tracer
					c.MaxConns = 4
				})
			}
			return func(t *testing.T, tp trace.TracerProvider) contract.WorkQueue {
				pl := pool(t, otelpgx.NewTracer(otelpgx.WithTracerProvider(tp)))
				q, err := pgstore.NewQueue(pl, nil, pgstore.Settings{Policy: p, PollInterval: 20 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				return q
			}
		}}
}
