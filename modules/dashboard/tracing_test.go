package dashboard

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/adkit/adk/modules/contract/memstore"
)

func TestEveryRequestIsASpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(t.Context()) }()
	store := memstore.New(nil, memstore.Settings{})
	srv, err := New(Config{Queue: store, Inspector: store, TracerProvider: tp, SampleEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, p := range []string{"/tenants", "/api/dead", "/healthz"} {
		srv.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, p, nil))
	}
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	for i, want := range []string{"GET /tenants", "GET /api/dead", "GET /healthz"} {
		if spans[i].Name() != want {
			t.Errorf("span %d named %q, want %q", i, spans[i].Name(), want)
		}
	}
}
