package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestParse(t *testing.T) {
	o, err := parse(nil, env("ADK_REDIS_DSN", "redis://:pw@127.0.0.1:6379/0", "ADK_DASHBOARD_TOKEN", "t"), io.Discard)
	if err != nil || !o.redisDSN.IsSet() || o.postgresDSN.IsSet() || o.addr != "127.0.0.1:8080" || !o.token.IsSet() {
		t.Fatalf("parse: %+v %v", o, err)
	}
	if _, err := parse(nil, env("ADK_REDIS_DSN", "redis://x", "ADK_POSTGRES_DSN", "postgres://y"), io.Discard); err == nil {
		t.Error("two backings accepted")
	}
	if _, err := parse([]string{"--apply-schema"}, env(), io.Discard); err == nil {
		t.Error("--apply-schema without PostgreSQL accepted")
	}
	if _, err := parse([]string{"extra"}, env(), io.Discard); err == nil {
		t.Error("stray argument accepted")
	}
}

// TestRunDemoOnMemory starts the command as `make demo` does (on a free
// port), reads the URL it prints, fetches a page, and stops it.
func TestRunDemoOnMemory(t *testing.T) {
	runDemo(t, []string{"--addr", "127.0.0.1:0", "--demo"}, env(), "memory")
}

// runDemo runs the command until the demo's tenants show in the API and
// the health page names the backing, then stops it.
func runDemo(t *testing.T, args []string, getenv func(string) string, backing string, wantHealth ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, getenv, pw, io.Discard)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "adk dashboard: http://127.0.0.1:") {
		cancel()
		t.Fatalf("first line %q (run: %v)", lines.Text(), <-done)
	}
	url := strings.TrimPrefix(lines.Text(), "adk dashboard: ")
	go func() {
		for lines.Scan() {
		}
	}()
	get := func(path string) string {
		resp, err := http.Get(url + path)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return ""
		}
		return string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	ok := false
	for time.Now().Before(deadline) && !ok {
		ok = strings.Contains(get("api/tenants"), "bigcorp-noisy")
		if !ok {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !ok {
		t.Error("the demo's tenants never showed up")
	}
	h := get("api/health")
	for _, want := range append([]string{`"backing":"` + backing + `"`}, wantHealth...) {
		if !strings.Contains(h, want) {
			t.Errorf("health lacks %s: %s", want, h)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestRedisBadDSNNeverPrintsPassword(t *testing.T) {
	err := run(t.Context(), []string{"--addr", "127.0.0.1:0", "--redis", "redis://user:pa55word@[bad"}, env(), io.Discard, io.Discard)
	if err == nil || strings.Contains(err.Error(), "pa55word") {
		t.Fatalf("err = %v", err)
	}
	err = run(t.Context(), []string{"--addr", "127.0.0.1:0", "--postgres", "postgres://user:pa55word@host:notaport/db"}, env(), io.Discard, io.Discard)
	if err == nil || strings.Contains(err.Error(), "pa55word") {
		t.Fatalf("err = %v", err)
	}
}

// With an OTLP endpoint configured, the demo's work is exported as traces
// (here to a stand-in collector that counts what it receives).
func TestDemoExportsTraces(t *testing.T) {
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	runDemo(t, []string{"--addr", "127.0.0.1:0", "--demo"}, func(k string) string { return os.Getenv(k) }, "memory")
	if posts.Load() == 0 {
		t.Error("no trace export reached the collector")
	}
}
