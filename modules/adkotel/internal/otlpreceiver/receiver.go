// Package otlpreceiver is a minimal OTLP collector for the tests of
// adkotel and otelsetup: it takes trace and metric exports over HTTP
// (protobuf) and gRPC on loopback ports and keeps what it was sent.
package otlpreceiver

import (
	"cmp"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Receiver is a minimal OTLP collector: it accepts trace and metric
// exports over HTTP (protobuf) and gRPC on loopback ports and keeps what
// it was sent, decoded with the OTLP protobuf types.
type Receiver struct {
	HTTPAddr string // host:port of the OTLP/HTTP endpoint
	GRPCAddr string // host:port of the OTLP/gRPC endpoint

	mu      sync.Mutex
	spans   []Span
	metrics []*metricspb.ResourceMetrics
	// requests counts export requests by transport ("http", "grpc").
	requests map[string]int
}

// Span is one received span with the service that sent it.
type Span struct {
	Service string
	Scope   string // instrumentation scope name
	*tracepb.Span
}

// Start starts a receiver on loopback ports and stops it when the test
// ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{requests: map[string]int{}}

	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var in coltracepb.ExportTraceServiceRequest
		if !decodeHTTP(w, req, &in) {
			return
		}
		r.addTraces("http", in.GetResourceSpans())
		writeProto(w, &coltracepb.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		var in colmetricspb.ExportMetricsServiceRequest
		if !decodeHTTP(w, req, &in) {
			return
		}
		r.addMetrics("http", in.GetResourceMetrics())
		writeProto(w, &colmetricspb.ExportMetricsServiceResponse{})
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(hl) }()
	r.HTTPAddr = hl.Addr().String()

	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, grpcTraces{r: r})
	colmetricspb.RegisterMetricsServiceServer(gs, grpcMetrics{r: r})
	go func() { _ = gs.Serve(gl) }()
	r.GRPCAddr = gl.Addr().String()

	t.Cleanup(func() {
		gs.Stop()
		_ = hs.Close()
	})
	return r
}

func decodeHTTP(w http.ResponseWriter, req *http.Request, msg proto.Message) bool {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		defer zr.Close()
		body = zr
	}
	b, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err == nil {
		err = proto.Unmarshal(b, msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeProto(w http.ResponseWriter, msg proto.Message) {
	b, _ := proto.Marshal(msg)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

type grpcTraces struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (g grpcTraces) Export(_ context.Context, in *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.r.addTraces("grpc", in.GetResourceSpans())
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type grpcMetrics struct {
	colmetricspb.UnimplementedMetricsServiceServer
	r *Receiver
}

func (g grpcMetrics) Export(_ context.Context, in *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	g.r.addMetrics("grpc", in.GetResourceMetrics())
	return &colmetricspb.ExportMetricsServiceResponse{}, nil
}

func (r *Receiver) addTraces(transport string, rss []*tracepb.ResourceSpans) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests[transport]++
	for _, rs := range rss {
		svc := AttrString(rs.GetResource().GetAttributes(), "service.name")
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, Span{Service: svc, Scope: ss.GetScope().GetName(), Span: s})
			}
		}
	}
}

func (r *Receiver) addMetrics(transport string, rms []*metricspb.ResourceMetrics) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests[transport]++
	r.metrics = append(r.metrics, rms...)
}

// Spans returns what was received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// MetricNames returns the names of the metrics received so far.
func (r *Receiver) MetricNames() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := map[string]bool{}
	for _, rm := range r.metrics {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				names[m.GetName()] = true
			}
		}
	}
	return names
}

// Requests counts the export requests received over transport ("http"
// or "grpc").
func (r *Receiver) Requests(transport string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[transport]
}

// AttrString returns the attribute key of kvs as text, "" when absent.
func AttrString(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return anyString(kv.GetValue())
		}
	}
	return ""
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	default:
		return v.String()
	}
}

// HexID renders a trace or span id in hex.
func HexID(b []byte) string { return hex.EncodeToString(b) }

// SpanTree renders the received spans as an indented tree per trace, with
// the links of each span, for the test log.
func SpanTree(spans []Span) string {
	byID := map[string]Span{}
	children := map[string][]Span{}
	var traces []string
	seenTrace := map[string]bool{}
	for _, s := range spans {
		byID[HexID(s.SpanId)] = s
	}
	var roots []Span
	for _, s := range spans {
		tid := HexID(s.TraceId)
		if !seenTrace[tid] {
			seenTrace[tid] = true
			traces = append(traces, tid)
		}
		if _, ok := byID[HexID(s.ParentSpanId)]; ok {
			children[HexID(s.ParentSpanId)] = append(children[HexID(s.ParentSpanId)], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(a, b Span) int { return cmp.Compare(a.StartTimeUnixNano, b.StartTimeUnixNano) }
	var sb strings.Builder
	var walk func(s Span, depth int)
	walk = func(s Span, depth int) {
		kind := strings.TrimPrefix(s.Kind.String(), "SPAN_KIND_")
		fmt.Fprintf(&sb, "%s%s [%s, %s] span=%s", strings.Repeat("  ", depth+1), s.Name, strings.ToLower(kind), s.Service, HexID(s.SpanId)[:8])
		if a := AttrString(s.Attributes, "adk.attempt"); a != "" {
			fmt.Fprintf(&sb, " attempt=%s", a)
		}
		if id := AttrString(s.Attributes, "messaging.message.id"); id != "" {
			fmt.Fprintf(&sb, " id=%s", id)
		}
		if s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
			fmt.Fprintf(&sb, " ERROR(%s)", s.Status.GetMessage())
		}
		for _, l := range s.Links {
			fmt.Fprintf(&sb, " ->link trace=%s span=%s", HexID(l.TraceId)[:8], HexID(l.SpanId)[:8])
		}
		sb.WriteString("\n")
		kids := children[HexID(s.SpanId)]
		slices.SortFunc(kids, byStart)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	slices.SortFunc(roots, byStart)
	for _, tid := range traces {
		fmt.Fprintf(&sb, "trace %s\n", tid[:8])
		for _, r := range roots {
			if HexID(r.TraceId) == tid {
				walk(r, 0)
			}
		}
	}
	return sb.String()
}
