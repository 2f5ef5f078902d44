// Command adk-dashboard serves the adk operations dashboard over one
// backing: the embedded in-memory store (the default), Redis, PostgreSQL
// or a SQLite file. With --demo it also runs a synthetic multi-tenant workload
// on that backing, which is what `make demo` starts; its workers write each
// item's run in steps, and the store keeps demo.DefaultKeepVersions
// versions of each unless --keep-versions or --version-age says otherwise.
//
//	adk-dashboard [--addr 127.0.0.1:8080] [--demo] [--redis DSN | --postgres DSN [--apply-schema] | --sqlite PATH]
//
// Through make, the flags go in DEMO_FLAGS: DEMO_FLAGS="--addr
// 127.0.0.1:9090" make demo serves on another port.
//
// The DSNs may come from ADK_REDIS_DSN / ADK_POSTGRES_DSN instead (better:
// a flag shows in the process list), and the SQLite path from
// ADK_SQLITE_PATH (created with its schema when missing; a restarted demo
// finds its items and dead letters there). Requeue and purge are enabled only
// for a read-write token: ADK_DASHBOARD_TOKEN (one, over every tenant),
// or named tokens, read-only or read-write, over every tenant or some,
// from ADK_DASHBOARD_TOKENS or the file ADK_DASHBOARD_TOKENS_FILE names
// (see dashboard.ParseTokens). A weak token refuses the start, with how
// to generate a strong one. When an OTLP endpoint is configured
// (OTEL_EXPORTER_OTLP_ENDPOINT and the other standard OTEL_* variables),
// requests and the demo's queue calls are exported as traces.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/adkotel/otelsetup"
	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
	"github.com/adkit/adk/modules/dashboard"
	"github.com/adkit/adk/modules/dashboard/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "adk-dashboard:", err)
		os.Exit(1)
	}
}

// options are the parsed command line.
type options struct {
	addr    string
	backing backing.Config
	queue   string
	demo    bool
	tokens  []dashboard.Token
	proxies []string
	signIn  bool
	verbose bool
	// tracing is on when an OTLP endpoint is configured: requests, and the
	// demo's queue calls, are exported through otelsetup.Setup.
	tracing bool
	stderr  io.Writer
}

func parse(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	o := options{stderr: stderr}
	fs := flag.NewFlagSet("adk-dashboard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on; keep it on loopback unless a proxy in front adds TLS (make demo: DEMO_FLAGS=\"--addr 127.0.0.1:9090\")")
	o.backing.RegisterFlags(fs)
	fs.StringVar(&o.queue, "queue", "", "queue shown first (default: \"default\", else the first queue found)")
	fs.BoolVar(&o.demo, "demo", false, "run a synthetic 20-tenant workload on the backing")
	fs.BoolVar(&o.backing.ApplySchema, "apply-schema", false, "PostgreSQL only: apply the expected schema first (development databases only)")
	fs.BoolVar(&o.verbose, "v", false, "log sampler and workload events too (the audit trail's lines are always written to standard error)")
	fs.BoolVar(&o.signIn, "require-sign-in", false, "refuse every page to a visitor without a token (on by itself once any token is tenant- or queue-scoped)")
	fs.Func("trusted-proxy", "address or CIDR range of a reverse proxy whose X-Forwarded-For names the client (repeatable)", func(v string) error {
		o.proxies = append(o.proxies, v)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: adk-dashboard [flags]\n\nRequeue and purge are enabled for read-write tokens: ADK_DASHBOARD_TOKEN, or named tokens in\nADK_DASHBOARD_TOKENS or the file ADK_DASHBOARD_TOKENS_FILE names (one a line, e.g.\nname=acme&access=read-write&tenant=acme&secret=...). Generate a secret with `openssl rand -hex 32`.\n\nflags:")
		fs.PrintDefaults()
	}
	err := fs.Parse(args)
	if err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o.backing.FillFromEnv(getenv)
	if o.demo {
		// The demo's runs keep versions, so the version pages have its
		// steps to show, unless the command line says what to keep.
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "keep-versions" || f.Name == "version-age" })
		if !set && !o.backing.Runs.KeepsVersions() {
			o.backing.Runs.KeepVersions = demo.DefaultKeepVersions
		}
	}
	// On PostgreSQL a LISTEN connection wakes the demo's workers and puts
	// the listener's health on the health page.
	o.backing.Listen = true
	o.backing.Warn = func(msg string) { fmt.Fprintln(stderr, "adk-dashboard: warning:", msg) }
	// Tokens are checked before any connection is made: a weak one
	// refuses the start with how to generate a strong one.
	if o.tokens, err = dashboard.TokensFromEnv(getenv); err != nil {
		return o, err
	}
	if err := dashboard.ValidateTokens(o.tokens); err != nil {
		return o, err
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		o.tracing = o.tracing || getenv(k) != ""
	}
	return o, o.backing.Validate()
}

// run is main without the process: testable, and every resource it opens
// is closed before it returns.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parse(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	// The audit trail's lines are written whatever -v says; -v adds the
	// sampler's, the workload's and the rest.
	logger := slog.New(auditOnly{slog.NewTextHandler(stderr, nil)})
	if o.verbose {
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	}

	if o.tracing {
		shutdown, err := otelsetup.Setup(ctx)
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = shutdown(sctx)
		}()
	}

	b, err := openBacking(ctx, o.backing)
	if err != nil {
		return err
	}
	defer b.Close()

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	loopback := isLoopback(ln.Addr())
	cfg := dashboard.Config{
		Queue: b.Queue, Inspector: b.Inspector, State: b.State,
		Backing: b.Name, DSN: b.DSN, Tokens: o.tokens, TrustedProxies: o.proxies, RequireSignIn: o.signIn, DefaultQueue: o.queue, Logger: logger,
	}
	if loopback {
		cfg.AllowedHosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	srv, err := dashboard.New(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	defer srv.Close()

	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()

	workCtx, stopWork := context.WithCancel(ctx)
	workDone := make(chan error, 1)
	if o.demo {
		dc := demo.Config{Queue: b.Queue, Inspector: b.Inspector, State: b.State, Logger: logger}
		if o.tracing {
			// The workload's enqueues, claims and settles become spans,
			// and each handler call a process span linked to its producer.
			dc.Queue = adkotel.WrapQueue(b.Queue)
			if hk, ok := contract.AsHistoryKeeper(b.Queue); ok {
				dc.History = hk
			}
			dc.Middleware = []runner.Middleware{adkotel.ProcessMiddleware()}
		}
		go func() {
			workDone <- demo.Run(workCtx, dc)
		}()
	} else {
		workDone <- nil
	}

	announce(stdout, ln.Addr(), b.Name, o, loopback)

	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	stopWork()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdownCtx)
	// A workload cut short by the shutdown itself is not a failure.
	if werr := <-workDone; werr != nil && err == nil && !errors.Is(werr, context.Canceled) {
		err = werr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

func announce(w io.Writer, addr net.Addr, backing string, o options, loopback bool) {
	host := addr.String()
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", fmt.Sprint(ta.Port))
	}
	fmt.Fprintf(w, "adk dashboard: http://%s/\n", host)
	what := "backing: " + backing
	if o.demo {
		what += ", demo workload running (20 tenants, one noisy)"
	}
	fmt.Fprintln(w, "  "+what)
	writers := 0
	for _, t := range o.tokens {
		if t.Access == dashboard.ReadWrite {
			writers++
		}
	}
	switch {
	case len(o.tokens) == 0:
		fmt.Fprintln(w, "  actions: read-only (set ADK_DASHBOARD_TOKEN, or ADK_DASHBOARD_TOKENS, to enable requeue and purge)")
	case writers == 0:
		fmt.Fprintf(w, "  actions: read-only (%d token(s), none read-write)\n", len(o.tokens))
	default:
		fmt.Fprintf(w, "  actions: enabled for %d read-write token(s) of %d; sign in at /login\n", writers, len(o.tokens))
	}
	if !loopback {
		fmt.Fprintln(w, "  warning: listening beyond loopback; put TLS in front and set a strong token")
	}
	fmt.Fprintln(w, "  stop with Ctrl-C")
}

// auditOnly passes the dashboard's audit lines and drops every other.
type auditOnly struct{ slog.Handler }

func (a auditOnly) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != dashboard.AuditMessage {
		return nil
	}
	return a.Handler.Handle(ctx, r)
}

func (a auditOnly) WithAttrs(attrs []slog.Attr) slog.Handler {
	return auditOnly{a.Handler.WithAttrs(attrs)}
}

func (a auditOnly) WithGroup(name string) slog.Handler { return auditOnly{a.Handler.WithGroup(name)} }
