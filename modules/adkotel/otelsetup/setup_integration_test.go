//go:build integration

package otelsetup_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/adkotel/internal/otlpreceiver"
	"github.com/adkit/adk/modules/adkotel/otelsetup"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
)

// Setup, configured only through OTEL_* variables, exports spans and
// metrics to a real OTLP receiver over each protocol.
func TestSetupExportsOverOTLP(t *testing.T) {
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			recv := otlpreceiver.Start(t)
			addr, transport := recv.HTTPAddr, "http"
			if proto == "grpc" {
				addr, transport = recv.GRPCAddr, "grpc"
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			t.Setenv("OTEL_SERVICE_NAME", "setup-test")
			t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "60000") // only the flush at shutdown exports

			prevTP, prevMP, prevProp := otel.GetTracerProvider(), otel.GetMeterProvider(), otel.GetTextMapPropagator()
			t.Cleanup(func() {
				otel.SetTracerProvider(prevTP)
				otel.SetMeterProvider(prevMP)
				otel.SetTextMapPropagator(prevProp)
			})
			ctx := context.Background()
			shutdown, err := otelsetup.Setup(ctx)
			if err != nil {
				t.Fatal(err)
			}

			q := adkotel.WrapQueue(memstore.New(nil, memstore.Settings{})) // every default: the globals Setup installed
			// The second item stays queued, so the depth gauges have a point.
			if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "1"}, contract.Item{Tenant: "acme", ID: "2"}); err != nil {
				t.Fatal(err)
			}
			leases, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
			if err != nil || len(leases) != 1 {
				t.Fatalf("claim: %v %v", leases, err)
			}
			if err := q.Complete(ctx, leases[0]); err != nil {
				t.Fatal(err)
			}
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := shutdown(sctx); err != nil {
				t.Fatal(err)
			}

			if recv.Requests(transport) == 0 {
				t.Fatalf("nothing arrived over %s", transport)
			}
			var send, receive *otlpreceiver.Span
			for _, s := range recv.Spans() {
				switch s.Name {
				case "send default":
					send = &s
				case "receive default":
					receive = &s
				}
			}
			if send == nil || receive == nil {
				t.Fatalf("spans missing: %v", recv.Spans())
			}
			if send.Service != "setup-test" {
				t.Errorf("service.name %q, want the OTEL_SERVICE_NAME", send.Service)
			}
			// The default propagator Setup installs carries the context.
			if len(receive.Links) != 1 || otlpreceiver.HexID(receive.Links[0].SpanId) != otlpreceiver.HexID(send.SpanId) || otlpreceiver.HexID(receive.Links[0].TraceId) != otlpreceiver.HexID(send.TraceId) {
				t.Errorf("receive span not linked to send: %v", receive.Links)
			}
			names := recv.MetricNames()
			for _, m := range []string{"messaging.client.sent.messages", "messaging.client.consumed.messages",
				adkotel.MetricClaimDuration, adkotel.MetricCompleted, adkotel.MetricQueueReady, adkotel.MetricWakes} {
				if !names[m] {
					t.Errorf("metric %s not exported (got %v)", m, names)
				}
			}
		})
	}
}
