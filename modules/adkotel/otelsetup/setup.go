package otelsetup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The OTLP protocols Setup understands, as spelled in
// OTEL_EXPORTER_OTLP_PROTOCOL.
const (
	protocolHTTP = "http/protobuf"
	protocolGRPC = "grpc"
)

// Setup builds an SDK tracer provider and meter provider from the standard
// OTEL_* environment variables, installs them and a propagator as the
// globals, and returns the func that flushes and stops them — the three
// lines a main needs:
//
//	shutdown, err := otelsetup.Setup(ctx)
//	if err != nil { ... }
//	defer shutdown(context.Background())
//
// What it reads:
//   - OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER: "otlp" (the default) or
//     "none", which leaves that signal's global untouched.
//   - OTEL_EXPORTER_OTLP_PROTOCOL, or the per-signal
//     OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_METRICS_PROTOCOL:
//     "http/protobuf" (the default) or "grpc".
//   - OTEL_PROPAGATORS: a comma-separated list of "tracecontext" and
//     "baggage" (both by default), or "none".
//   - everything the exporters and the SDK read themselves: endpoints,
//     headers, timeouts and certificates (OTEL_EXPORTER_OTLP_*), the
//     sampler (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG), the export
//     interval (OTEL_METRIC_EXPORT_INTERVAL), and the resource
//     (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
//
// A value it does not understand is an error, and nothing is installed.
func Setup(ctx context.Context) (shutdown func(context.Context) error, err error) {
	prop, err := propagatorFromEnv()
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost(), resource.WithProcessRuntimeName())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("otelsetup: resource: %w", err)
	}
	if merged, mErr := resource.Merge(resource.Default(), res); mErr == nil {
		res = merged
	}

	var stops []func(context.Context) error
	stopAll := func(ctx context.Context) error {
		var errs []error
		for _, stop := range stops {
			errs = append(errs, stop(ctx))
		}
		return errors.Join(errs...)
	}

	var tp *sdktrace.TracerProvider
	if on, err := signalEnabled("OTEL_TRACES_EXPORTER"); err != nil {
		return nil, err
	} else if on {
		exp, err := traceExporter(ctx)
		if err != nil {
			return nil, err
		}
		tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		stops = append(stops, tp.Shutdown)
	}

	var mp *sdkmetric.MeterProvider
	if on, err := signalEnabled("OTEL_METRICS_EXPORTER"); err != nil {
		return nil, errors.Join(err, stopAll(ctx))
	} else if on {
		exp, err := metricExporter(ctx)
		if err != nil {
			return nil, errors.Join(err, stopAll(ctx))
		}
		mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		stops = append(stops, mp.Shutdown)
	}

	if tp != nil {
		otel.SetTracerProvider(tp)
	}
	if mp != nil {
		otel.SetMeterProvider(mp)
	}
	otel.SetTextMapPropagator(prop)
	return stopAll, nil
}

func propagatorFromEnv() (propagation.TextMapPropagator, error) {
	v := strings.TrimSpace(os.Getenv("OTEL_PROPAGATORS"))
	if v == "" {
		return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}), nil
	}
	var props []propagation.TextMapPropagator
	for name := range strings.SplitSeq(v, ",") {
		switch strings.TrimSpace(name) {
		case "tracecontext":
			props = append(props, propagation.TraceContext{})
		case "baggage":
			props = append(props, propagation.Baggage{})
		case "none":
			return propagation.NewCompositeTextMapPropagator(), nil
		default:
			return nil, fmt.Errorf("otelsetup: OTEL_PROPAGATORS names %q: only tracecontext, baggage and none are built in (set the propagator yourself with otel.SetTextMapPropagator and drop it from the variable)", name)
		}
	}
	return propagation.NewCompositeTextMapPropagator(props...), nil
}

func signalEnabled(env string) (bool, error) {
	switch v := strings.TrimSpace(os.Getenv(env)); v {
	case "", "otlp":
		return true, nil
	case "none":
		return false, nil
	default:
		return false, fmt.Errorf("otelsetup: %s=%q: only otlp and none are supported", env, v)
	}
}

func protocol(signalEnv string) (string, error) {
	v := strings.TrimSpace(os.Getenv(signalEnv))
	if v == "" {
		v = strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch v {
	case "", protocolHTTP:
		return protocolHTTP, nil
	case protocolGRPC:
		return protocolGRPC, nil
	default:
		return "", fmt.Errorf("otelsetup: OTLP protocol %q is not supported: use %s or %s", v, protocolHTTP, protocolGRPC)
	}
}

func traceExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	p, err := protocol("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if err != nil {
		return nil, err
	}
	if p == protocolGRPC {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}

func metricExporter(ctx context.Context) (sdkmetric.Exporter, error) {
	p, err := protocol("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
	if err != nil {
		return nil, err
	}
	if p == protocolGRPC {
		return otlpmetricgrpc.New(ctx)
	}
	return otlpmetrichttp.New(ctx)
}
