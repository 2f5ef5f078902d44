package otelsetup_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/adkit/adk/modules/adkotel/otelsetup"
)

// These tests never reach an exporter: every case either switches both
// signals off or fails before building one.

func TestSetupRefusesUnknownValues(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "prometheus"}, "OTEL_METRICS_EXPORTER"},
		{map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "http/json"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "udp"}, "udp"},
		{map[string]string{"OTEL_PROPAGATORS": "tracecontext,b3"}, "b3"},
	} {
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		before := otel.GetTracerProvider()
		shutdown, err := otelsetup.Setup(context.Background())
		if err == nil {
			_ = shutdown(context.Background())
			t.Fatalf("%v: Setup worked", c.env)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %q does not name %q", c.env, err, c.want)
		}
		if otel.GetTracerProvider() != before {
			t.Errorf("%v: a failed Setup changed the global tracer provider", c.env)
		}
		for k := range c.env {
			t.Setenv(k, "")
		}
	}
}

func TestSetupNoneInstallsPropagatorOnly(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	t.Setenv("OTEL_PROPAGATORS", "tracecontext")
	prev := otel.GetTextMapPropagator()
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	tp := otel.GetTracerProvider()
	shutdown, err := otelsetup.Setup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if otel.GetTracerProvider() != tp {
		t.Errorf("OTEL_TRACES_EXPORTER=none replaced the tracer provider")
	}
	fields := otel.GetTextMapPropagator().Fields()
	if len(fields) != len((propagation.TraceContext{}).Fields()) {
		t.Errorf("propagator fields %v, want tracecontext's", fields)
	}
}
