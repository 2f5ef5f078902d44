// Package otelsetup builds the OpenTelemetry SDK a program's main needs
// from the standard OTEL_* environment variables: a tracer provider and a
// meter provider exporting over OTLP (HTTP/protobuf or gRPC), installed
// as the globals with a propagator, in one call ([Setup]).
//
// It is a package of its own so that the instrumentation in
// [github.com/adkit/adk/modules/adkotel] depends on the OpenTelemetry API
// only: a library or a service that wraps its queue with adkotel.WrapQueue
// links neither the SDK nor an exporter, and an application that sets up
// its SDK another way (contrib's autoexport, a vendor's distribution, its
// own code) never imports this package. adkotel's wrappers take the
// globals by default, so they report to whatever Setup installed.
package otelsetup
