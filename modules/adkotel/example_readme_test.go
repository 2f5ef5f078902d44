package adkotel_test

import (
	"context"
	"log"
	"net/http"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/adkotel/otelsetup"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
)

// The README's snippets, as they stand there, compiled with the module so
// they cannot drift from the API: a traced worker on Redis, a producer
// inside an HTTP handler, and a traced PostgreSQL queue. They need an OTLP
// collector and the servers, so the example is compiled but not run.
func Example_readme() {
	readmeWorker()
	_ = readmeProducer
	_ = readmePostgres
}

// step stands for the worker's handler.
func step(ctx context.Context, lease contract.Lease) error { return nil }

// readmeWorker is the README's worker.
func readmeWorker() {
	ctx := context.Background()
	shutdown, err := otelsetup.Setup(ctx) // OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER...
	if err != nil {
		log.Fatal(err)
	}
	defer shutdown(context.Background())

	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	if err := redisotel.InstrumentTracing(rdb); err != nil { // Redis command spans nest under ours
		log.Fatal(err)
	}
	backing, err := redisstore.OpenQueue(ctx, rdb, nil, redisstore.Settings{})
	if err != nil {
		log.Fatal(err)
	}
	q := adkotel.WrapQueue(backing)
	r, err := runner.New(q, step, runner.Config{Queue: "runs",
		Middleware: []runner.Middleware{adkotel.ProcessMiddleware(adkotel.WithSystem(adkotel.SystemRedis))}})
	if err != nil {
		log.Fatal(err)
	}
	_ = r.Run(ctx) // until ctx is cancelled
}

// readmeProducer is the README's producer, in an HTTP handler.
func readmeProducer(q contract.WorkQueue, req *http.Request, tenant, runID string, body []byte) error {
	err := q.Enqueue(req.Context(), contract.Item{Tenant: tenant, ID: runID, Queue: "runs", Payload: body})
	return err
}

// readmePostgres is the README's PostgreSQL set-up.
func readmePostgres(ctx context.Context, dsn string) contract.WorkQueue {
	cfg, _ := pgxpool.ParseConfig(dsn)
	cfg.ConnConfig.Tracer = otelpgx.NewTracer() // SQL spans nest under ours
	pool, _ := pgxpool.NewWithConfig(ctx, cfg)
	backing, _ := pgstore.OpenQueue(ctx, pool, nil, pgstore.Settings{})
	q := adkotel.WrapQueue(backing)
	return q
}
