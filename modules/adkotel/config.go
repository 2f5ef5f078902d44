package adkotel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Values of messaging.system this package reports. The messaging semantic
// conventions name no value for these backings, so they are ours.
const (
	SystemMemory     = "memory"
	SystemRedis      = "redis"
	SystemPostgreSQL = "postgresql"
	// SystemADK is reported when the backing cannot be told.
	SystemADK = "adk"
)

// defaultTenantLimit bounds the tenants a queue reports per-tenant gauges
// for; the rest are summed under OtherTenant so a deployment with many
// tenants does not explode the metric cardinality.
const defaultTenantLimit = 100

// OtherTenant is the adk.tenant value of the gauges that sum the tenants
// beyond the limit set by [WithTenantLimit].
const OtherTenant = "_other"

// config is the result of applying the options.
type config struct {
	tracerProvider   trace.TracerProvider
	meterProvider    metric.MeterProvider
	propagator       propagation.TextMapPropagator
	parentFromMsg    bool
	system           string
	tenantLimit      int
	skipEmptyReceive bool
}

func newConfig(opts []Option) config {
	c := config{tenantLimit: defaultTenantLimit}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	// The globals are read when the decorator is built, not at package
	// init, so a Setup in main that runs first is seen.
	if c.tracerProvider == nil {
		c.tracerProvider = otel.GetTracerProvider()
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	if c.propagator == nil {
		c.propagator = otel.GetTextMapPropagator()
	}
	return c
}

func (c config) tracer() trace.Tracer {
	return c.tracerProvider.Tracer(ScopeName, trace.WithInstrumentationVersion(Version()))
}

func (c config) meter() metric.Meter {
	return c.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(Version()))
}

// Option configures [WrapQueue], [WrapState] and [ProcessMiddleware].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithTracerProvider sets the tracer provider. The default is the global
// one (otel.GetTracerProvider) at the time the decorator is built.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tracerProvider = tp })
}

// WithMeterProvider sets the meter provider. The default is the global one
// at the time the decorator is built.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithPropagators sets the propagator that writes the trace context into
// [contract.Item.Metadata] on enqueue and reads it back on process. The
// default is the global one, which is a no-op until something (such as
// otelsetup.Setup or otel.SetTextMapPropagator) sets it: without a propagator the
// consumer cannot link back to the producer.
func WithPropagators(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) { c.propagator = p })
}

// WithParentFromMessage makes the process span of an item's first attempt
// a child of the producer's span, so producer and consumer share one trace.
// By default, and for every retry even with this option, the process span
// starts from the handler's context and only links to the producer: a
// retry hours later would otherwise stretch one trace over hours.
func WithParentFromMessage() Option {
	return optionFunc(func(c *config) { c.parentFromMsg = true })
}

// WithSystem sets the messaging.system attribute: [SystemMemory],
// [SystemRedis], [SystemPostgreSQL], or a name of your own. Without it
// [WrapQueue] asks the queue (see [WrapQueue]) and [ProcessMiddleware]
// reports [SystemADK].
func WithSystem(name string) Option {
	return optionFunc(func(c *config) { c.system = name })
}

// WithTenantLimit bounds how many tenants per queue get gauges of their
// own (default 100): the tenants with the most work are reported by name
// and the rest summed under [OtherTenant]. Zero or less reports every
// tenant under OtherTenant only.
func WithTenantLimit(n int) Option {
	return optionFunc(func(c *config) { c.tenantLimit = max(n, 0) })
}

// WithoutEmptyReceiveSpans drops the receive span of a claim that found
// nothing, for workers that poll often. The claim latency metric still
// counts it. Spans are then recorded after the claim returns, so database
// spans of the claim are not nested under them.
func WithoutEmptyReceiveSpans() Option {
	return optionFunc(func(c *config) { c.skipEmptyReceive = true })
}
