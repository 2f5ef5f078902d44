package dashboard

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

const meterName = "github.com/adkit/adk/modules/dashboard"

// metrics is the dashboard's own OpenTelemetry meter provider, exported
// through a private Prometheus registry (not the global one, so two
// dashboards in one process, as in tests, never collide).
type metrics struct {
	provider *sdkmetric.MeterProvider
	handler  http.Handler
	requests metric.Float64Histogram
	actions  metric.Int64Counter
}

func newMetrics(s *sampler) (*metrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	m := &metrics{provider: mp, handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	meter := mp.Meter(meterName)
	if m.requests, err = meter.Float64Histogram("http.server.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of dashboard HTTP requests.")); err != nil {
		return nil, err
	}
	if m.actions, err = meter.Int64Counter("adk.dashboard.actions", metric.WithUnit("{item}"),
		metric.WithDescription("Dead letters moved by dashboard actions.")); err != nil {
		return nil, err
	}
	items, err := meter.Int64ObservableGauge("adk.queue.items", metric.WithUnit("{item}"),
		metric.WithDescription("Items per queue and state, as last sampled from the Inspector."))
	if err != nil {
		return nil, err
	}
	served, err := meter.Int64ObservableCounter("adk.queue.served", metric.WithUnit("{turn}"),
		metric.WithDescription("Turns given by claims per queue, as last sampled."))
	if err != nil {
		return nil, err
	}
	// The gauges read the sampler's newest snapshot rather than the
	// backing, so a scrape never adds load to the store.
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		snap, ok := s.latest()
		if !ok {
			return nil
		}
		for q, qs := range snap.Queues {
			qa := attribute.String("messaging.destination.name", q)
			for _, st := range []struct {
				name string
				v    int64
			}{{"ready", qs.Ready}, {"later", qs.Later}, {"leased", qs.Leased}, {"dead", qs.Dead}} {
				o.ObserveInt64(items, st.v, metric.WithAttributes(qa, attribute.String("state", st.name)))
			}
			o.ObserveInt64(served, qs.Served, metric.WithAttributes(qa))
		}
		return nil
	}, items, served)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// middleware records each request's duration by route pattern (never the
// raw path, which would carry tenant names into label values).
func (m *metrics) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		status := c.Response().Status
		if he, ok := err.(*echo.HTTPError); ok {
			status = he.Code
		}
		m.requests.Record(c.Request().Context(), time.Since(start).Seconds(), metric.WithAttributes(
			attribute.String("http.route", c.Path()),
			attribute.String("http.request.method", c.Request().Method),
			attribute.String("http.response.status_code", strconv.Itoa(status)),
		))
		return err
	}
}

func (m *metrics) shutdown(ctx context.Context) error { return m.provider.Shutdown(ctx) }
