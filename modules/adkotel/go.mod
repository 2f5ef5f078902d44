module github.com/adkit/adk/modules/adkotel

go 1.26.0

// What the wrappers (package adkotel) import: the OpenTelemetry API.
require (
	github.com/adkit/adk/modules/contract v0.1.0
	github.com/adkit/adk/modules/policy v0.1.0
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/metric v1.47.0
	go.opentelemetry.io/otel/trace v1.47.0
)

// What package otelsetup imports: the SDK and the OTLP exporters. The
// wrappers never import it, so a program that only wraps its queue does
// not link them.
require (
	go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc v1.47.0
	go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp v1.47.0
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc v1.47.0
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp v1.47.0
	go.opentelemetry.io/otel/sdk v1.47.0
	go.opentelemetry.io/otel/sdk/metric v1.47.0
	// Linked through the OTLP exporters; the tests' receiver imports them.
	go.opentelemetry.io/proto/otlp v1.11.1
	google.golang.org/grpc v1.84.0
	google.golang.org/protobuf v1.36.12
)

// Imported by tests only (go.mod has no test section): the backings and
// their instrumented clients for the end-to-end test, and goleak. The
// library package never imports them, so a program that imports adkotel
// does not link them.
require (
	github.com/adkit/adk/modules/pgstore v0.1.0
	github.com/adkit/adk/modules/redisstore v0.1.0
	github.com/exaring/otelpgx v0.13.0
	github.com/jackc/pgx/v5 v5.13.0
	github.com/redis/go-redis/extra/redisotel/v9 v9.23.0
	github.com/redis/go-redis/v9 v9.23.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cenkalti/backoff/v5 v5.0.3 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.31.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/redis/go-redis/extra/rediscmd/v9 v9.23.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.47.0 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260928230214-8a89bd6388cc // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260928230214-8a89bd6388cc // indirect
)

replace (
	github.com/adkit/adk/modules/contract => ../contract
	github.com/adkit/adk/modules/pgstore => ../pgstore
	github.com/adkit/adk/modules/policy => ../policy
	github.com/adkit/adk/modules/redisstore => ../redisstore
)
