package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/dashboard/demo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

const strongToken = "c0ffee-Dashboard-token-0123456789abcdef"

func TestParse(t *testing.T) {
	o, err := parse(nil, env("ADK_REDIS_DSN", "redis://:pw@127.0.0.1:6379/0", "ADK_DASHBOARD_TOKEN", strongToken), io.Discard)
	if err != nil || o.backing.Kind() != backing.Redis || o.addr != "127.0.0.1:8080" || len(o.tokens) != 1 {
		t.Fatalf("parse: %+v %v", o, err)
	}
	if o, err := parse([]string{"--require-sign-in", "--trusted-proxy", "10.0.0.1"}, env(), io.Discard); err != nil || !o.signIn || len(o.proxies) != 1 {
		t.Errorf("--require-sign-in --trusted-proxy: %+v %v", o, err)
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

// With --demo the store keeps demo.DefaultKeepVersions versions of each
// run, unless --keep-versions or --version-age says what to keep (0
// included); without --demo it keeps what the flags say.
func TestDemoKeepsVersions(t *testing.T) {
	for _, c := range []struct {
		args []string
		keep int
		age  time.Duration
	}{
		{nil, 0, 0},
		{[]string{"--demo"}, demo.DefaultKeepVersions, 0},
		{[]string{"--demo", "--keep-versions", "3"}, 3, 0},
		{[]string{"--demo", "--keep-versions", "0"}, 0, 0},
		{[]string{"--demo", "--version-age", "1h"}, 0, time.Hour},
		{[]string{"--keep-versions", "4"}, 4, 0},
	} {
		o, err := parse(c.args, env(), io.Discard)
		if err != nil || o.backing.Runs.KeepVersions != c.keep || o.backing.Runs.VersionAge != c.age {
			t.Errorf("%v: runs %+v (%v), want keep %d, age %v", c.args, o.backing.Runs, err, c.keep, c.age)
		}
	}
}

// TestWeakTokenRefusesStart: a weak token stops the command before it
// opens anything, with how to generate a strong one, and never quotes it.
func TestWeakTokenRefusesStart(t *testing.T) {
	for _, e := range []func(string) string{
		env("ADK_DASHBOARD_TOKEN", "a"),
		env("ADK_DASHBOARD_TOKEN", "s3cret-but-short"),
		env("ADK_DASHBOARD_TOKENS", "name=acme&tenant=acme&secret=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
	} {
		var stdout strings.Builder
		err := run(t.Context(), []string{"--addr", "127.0.0.1:0"}, e, &stdout, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "openssl rand -hex 32") || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "aaaaaaaa") {
			t.Errorf("weak token: %v", err)
		}
		if stdout.Len() != 0 {
			t.Errorf("the command announced itself: %q", stdout.String())
		}
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
	// The workers wrote a completed item's run in steps, and the store
	// kept them as its versions. (Not checked on SQLite: under -race its
	// seeding of the 20,000-item backlog outlasts the wait, and the
	// workers start after it.)
	var versions struct {
		Kept     bool `json:"versions_kept"`
		Versions []struct {
			Status string
			Fence  int64
		}
	}
	deadline = time.Now().Add(30 * time.Second)
	for backing != "sqlite" && time.Now().Before(deadline) && len(versions.Versions) < 3 {
		var fin struct {
			Items []struct{ Tenant, ID string }
		}
		if json.Unmarshal([]byte(get("api/finished?state=completed&limit=1")), &fin) == nil && len(fin.Items) == 1 {
			_ = json.Unmarshal([]byte(get("api/run/versions?tenant="+fin.Items[0].Tenant+"&id="+fin.Items[0].ID)), &versions)
		}
		if len(versions.Versions) < 3 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if backing != "sqlite" && (!versions.Kept || len(versions.Versions) < 3 || versions.Versions[0].Status != "done" || versions.Versions[0].Fence <= 0) {
		t.Errorf("a completed item's run versions: %+v", versions)
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

// TestAuditLinesWithoutVerbose: the audit trail reaches standard error
// without -v, and nothing else does; the token's secret never.
func TestAuditLinesWithoutVerbose(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	var stderr syncWriter
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0"}, env("ADK_DASHBOARD_TOKEN", strongToken), pw, &stderr)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		cancel()
		t.Fatalf("no URL (run: %v)", <-done)
	}
	url := strings.TrimPrefix(lines.Text(), "adk dashboard: ")
	go func() {
		for lines.Scan() {
		}
	}()
	for _, secret := range []string{"wrong-" + strongToken, strongToken} {
		req, _ := http.NewRequest(http.MethodPost, url+"api/dead/purge", strings.NewReader(`{"queue":"default","tenant":"acme","scope":"filter"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	http.DefaultClient.CloseIdleConnections()
	out := stderr.String()
	if strings.Count(out, `msg="dashboard audit"`) != 2 || !strings.Contains(out, "outcome=refused status=401") || !strings.Contains(out, "outcome=done status=200 token=admin") {
		t.Errorf("stderr without -v:\n%s", out)
	}
	if strings.Contains(out, strongToken) {
		t.Error("a secret reached the log")
	}
	if lines := strings.Count(out, "\n"); lines != 2 {
		t.Errorf("%d lines on stderr, want the 2 audit lines:\n%s", lines, out)
	}
}

type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
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

// The way to serve `make demo` on another port is written where a user
// looks (make help, the Makefile's comment, the README, the dashboard's
// README), and the documented line does what it says: make passes the
// flag on, and the command listens there.
func TestMakeDemoPortIsDocumented(t *testing.T) {
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	const example = `DEMO_FLAGS="--addr 127.0.0.1:9090" make demo`
	for _, f := range []string{"Makefile", "README.md", "modules/dashboard/README.md"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), example) {
			t.Errorf("%s does not show how to change the demo's port (%s)", f, example)
		}
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed; install it (apt-get install make) to run this test")
	}
	makeCmd := func(args ...string) string {
		cmd := exec.Command("make", append([]string{"-s", "-C", root}, args...)...)
		cmd.Env = append(os.Environ(), "DEMO_FLAGS=--addr 127.0.0.1:9090")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("make %v: %v", args, err)
		}
		return string(out)
	}
	if help := makeCmd("help"); !strings.Contains(help, example) {
		t.Errorf("make help does not show how to change the demo's port:\n%s", help)
	}
	dry := makeCmd("-n", "demo")
	_, flags, ok := strings.Cut(dry, "./cmd/adk-dashboard ")
	if !ok {
		t.Fatalf("make -n demo runs no adk-dashboard: %q", dry)
	}
	o, err := parse(strings.Fields(flags), env(), io.Discard)
	if err != nil || o.addr != "127.0.0.1:9090" || !o.demo {
		t.Fatalf("make demo with DEMO_FLAGS=--addr runs %q: addr %q, demo %v, %v", strings.TrimSpace(flags), o.addr, o.demo, err)
	}
}
