package dashboard

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

//go:embed static
var staticFiles embed.FS

// Server is the dashboard: an http.Handler plus the sampler goroutine
// behind its charts. Close stops the goroutine.
type Server struct {
	cfg     Config
	echo    *echo.Echo
	auth    *auth
	audit   *audit
	trusted []*net.IPNet
	sampler *sampler
	metrics *metrics
	closing sync.Once
}

// New builds a dashboard over cfg's queue and inspector and starts its
// sampler. Call Close when done.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	a, err := newAuth(tokensOf(cfg), cfg.SessionTTL, cfg.SessionIdle, cfg.Clock)
	if err != nil {
		return nil, err
	}
	trusted, err := parseProxies(cfg.TrustedProxies)
	if err != nil {
		return nil, err
	}
	var scopes []scope
	for i := range a.tokens {
		sc := scopeOfToken(&a.tokens[i])
		scopes = append(scopes, sc)
		if !sc.all() {
			cfg.RequireSignIn = true // scopes would mean nothing if a visitor saw everything
		}
	}
	s := &Server{cfg: cfg, auth: a, trusted: trusted, audit: newAudit(cfg.AuditKeep),
		sampler: newSampler(cfg.Inspector, cfg.Clock, cfg.SampleEvery, cfg.SampleKeep, cfg.HistoryEvery, cfg.HistoryKeep, scopes)}
	if s.metrics, err = newMetrics(s.sampler); err != nil {
		return nil, err
	}
	s.echo = s.routes()
	s.sampler.start()
	return s, nil
}

// ServeHTTP serves the dashboard.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

// Close stops the sampler and the meter provider. It is safe to call more
// than once.
func (s *Server) Close() error {
	var err error
	s.closing.Do(func() {
		s.sampler.stop()
		err = s.metrics.shutdown(context.Background())
	})
	return err
}

func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	// The client address the throttle and the audit trail use: the
	// connection's, unless it comes from a proxy the Config trusts.
	e.IPExtractor = echo.ExtractIPDirect()
	if len(s.cfg.TrustedProxies) > 0 {
		var opts []echo.TrustOption
		opts = append(opts, echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false))
		for _, n := range s.trusted {
			opts = append(opts, echo.TrustIPRange(n))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(opts...)
	}
	otelOpts := []otelecho.Option{}
	if s.cfg.TracerProvider != nil {
		otelOpts = append(otelOpts, otelecho.WithTracerProvider(s.cfg.TracerProvider))
	}
	e.Use(middleware.Recover())
	e.Use(otelecho.Middleware("adk-dashboard", otelOpts...))
	e.Use(s.metrics.middleware)
	e.Use(securityHeaders)
	if len(s.cfg.AllowedHosts) > 0 {
		e.Use(hostCheck(s.cfg.AllowedHosts))
	}

	static, _ := fs.Sub(staticFiles, "static")
	get(e, "/static/*", echo.WrapHandler(http.StripPrefix("/static/", http.FileServer(http.FS(static)))))
	get(e, "/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	get(e, "/metrics", echo.WrapHandler(s.metrics.handler), s.auth.sessionMiddleware, s.requireAllTenants)

	// Middleware is attached per route, never to a group: a group with
	// middleware catches every unknown path, so a typo would be answered
	// by the sign-in check instead of 404, and a wrong method by 404
	// instead of 405.
	sess := s.auth.sessionMiddleware
	read := []echo.MiddlewareFunc{sess, s.requireRead}
	write := func(a action) []echo.MiddlewareFunc {
		return []echo.MiddlewareFunc{s.audited(a), sess, s.requireRead, s.auth.requireWrite}
	}
	get(e, "/", htmlPage(s, s.overview, view.OverviewView), read...)
	get(e, "/api/overview", apiPage(s.overview), read...)
	get(e, "/tenants", htmlPage(s, s.tenants, view.TenantsView), read...)
	get(e, "/api/tenants", apiPage(s.tenants), read...)
	get(e, "/fairness", htmlPage(s, s.fairness, view.FairnessView), read...)
	get(e, "/api/fairness", apiPage(s.fairness), read...)
	get(e, "/limits", htmlPage(s, s.limitsPage, view.LimitsView), read...)
	get(e, "/api/limits", apiPage(s.limitsPage), read...)
	get(e, "/queue", htmlPage(s, s.queuePage, view.QueueView), read...)
	get(e, "/api/queue", apiPage(s.queuePage), read...)
	get(e, "/api/shards", apiPage(s.shardsAPI), read...)
	get(e, "/waiting", htmlPage(s, s.waitingPage, view.WaitingView), read...)
	get(e, "/api/waiting", apiPage(s.waitingPage), read...)
	get(e, "/cancel/confirm", htmlPage(s, s.cancelConfirm, view.CancelConfirmView), read...)
	get(e, "/api/cancel/preview", apiPage(s.cancelConfirm), read...)
	get(e, "/leases", htmlPage(s, s.leases, view.LeasesView), read...)
	get(e, "/api/leases", apiPage(s.leases), read...)
	get(e, "/dead", htmlPage(s, s.dead, view.DeadView), read...)
	get(e, "/api/dead", apiPage(s.dead), read...)
	get(e, "/dead/errors", htmlPage(s, s.deadErrors, view.DeadErrorsView), read...)
	get(e, "/api/dead/errors", apiPage(s.deadErrors), read...)
	get(e, "/dead/confirm", htmlPage(s, s.confirm, view.ConfirmView), read...)
	get(e, "/api/dead/preview", apiPage(s.confirm), read...)
	get(e, "/item", htmlPage(s, s.item, view.ItemLookup), read...)
	get(e, "/api/item", apiPage(s.item), read...)
	get(e, "/run/versions", htmlPage(s, s.runVersions, view.RunVersionsView), read...)
	get(e, "/api/run/versions", apiPage(s.runVersions), read...)
	get(e, "/run/version", htmlPage(s, s.runVersion, view.RunVersionView), read...)
	get(e, "/api/run/version", apiPage(s.runVersion), read...)
	get(e, "/finished", htmlPage(s, s.finished, view.FinishedView), read...)
	get(e, "/api/finished", apiPage(s.finished), read...)
	get(e, "/find", htmlPage(s, s.find, view.FindView), read...)
	get(e, "/api/find", apiPage(s.find), read...)
	get(e, "/events", htmlPage(s, s.events, view.EventsView), read...)
	get(e, "/api/events", apiPage(s.events), read...)
	get(e, "/api/retention", s.retentionAPI, read...)
	get(e, "/audit", htmlPage(s, s.auditPage, view.AuditView), read...)
	get(e, "/api/audit", apiPage(s.auditPage), read...)
	get(e, "/health", htmlPage(s, s.health, view.HealthView), read...)
	get(e, "/api/health", apiPage(s.health), read...)

	get(e, "/login", s.loginForm, sess)
	e.POST("/login", s.login, sess)
	e.POST("/logout", s.logout, sess)

	e.POST("/dead/requeue", s.actionForm(actRequeue), write(actRequeue)...)
	e.POST("/dead/purge", s.actionForm(actPurge), write(actPurge)...)
	e.POST("/api/dead/requeue", s.actionAPI(actRequeue), write(actRequeue)...)
	e.POST("/api/dead/purge", s.actionAPI(actPurge), write(actPurge)...)
	e.POST("/limits", s.limitsForm, write(actSetLimits)...)
	e.PUT("/api/limits", s.limitsAPI(actSetLimits), write(actSetLimits)...)
	e.POST("/api/limits", s.limitsAPI(actSetLimits), write(actSetLimits)...)
	e.DELETE("/api/limits", s.limitsAPI(actRemoveLimits), write(actRemoveLimits)...)
	e.POST("/pause", s.pauseForm(actPause), write(actPause)...)
	e.POST("/resume", s.pauseForm(actResume), write(actResume)...)
	e.POST("/cancel", s.cancelForm, write(actCancel)...)
	e.POST("/cancel-matching", s.cancelMatchingForm, write(actCancelMatching)...)
	e.POST("/signal", s.signalFormPost, write(actSignal)...)
	e.POST("/purge-cancelled", s.purgeCancelledForm, write(actPurgeCancelled)...)
	e.POST("/retention", s.retentionFormPost, write(actSetRetention)...)
	e.POST("/prune", s.pruneForm, write(actPrune)...)
	e.PUT("/api/retention", s.setRetentionAPI, write(actSetRetention)...)
	e.POST("/api/retention", s.setRetentionAPI, write(actSetRetention)...)
	e.POST("/api/prune", lifecycleAPI(pruneFromForm, s.prune), write(actPrune)...)
	pauseAPI := func(a action) echo.HandlerFunc {
		return lifecycleAPI(pauseFromForm, func(c echo.Context, r PauseRequest) (PauseResult, error) { return s.pause(c, a, r) })
	}
	e.POST("/api/pause", pauseAPI(actPause), write(actPause)...)
	e.POST("/api/resume", pauseAPI(actResume), write(actResume)...)
	e.POST("/api/cancel", lifecycleAPI(cancelFromForm, s.cancelOne), write(actCancel)...)
	e.POST("/api/cancel-matching", lifecycleAPI(cancelMatchingFromForm, s.cancelMatching), write(actCancelMatching)...)
	e.POST("/api/signal", lifecycleAPI(signalFromForm, s.signal), write(actSignal)...)
	e.POST("/api/purge-cancelled", lifecycleAPI(purgeFromForm, s.purgeCancelled), write(actPurgeCancelled)...)
	return e
}

// get serves a read-only route for GET and HEAD alike: uptime checks often
// send HEAD, and net/http drops the body of a HEAD response by itself.
func get(e *echo.Echo, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	e.GET(path, h, m...)
	e.HEAD(path, h, m...)
}

// htmlPage renders into a buffer first, so a failed render is a clean
// 500 rather than half a page under a 200.
func htmlPage[T any](s *Server, build func(echo.Context) (T, int, error), render func(T) templ.Component) echo.HandlerFunc {
	return func(c echo.Context) error {
		m, code, err := build(c)
		if err != nil {
			return err
		}
		clearFlash(c) // shown by this page, if it came with one
		return s.render(c, code, render(m))
	}
}

func apiPage[T any](build func(echo.Context) (T, int, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		m, code, err := build(c)
		if err != nil {
			return err
		}
		return c.JSON(code, m)
	}
}

func (s *Server) render(c echo.Context, code int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(c.Request().Context(), &buf); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTMLBlob(code, buf.Bytes())
}

func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		// Scripts and styles only from the dashboard's own files: even
		// markup that slipped through escaping could not run.
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		return next(c)
	}
}

func hostCheck(allowed []string) echo.MiddlewareFunc {
	ok := make(map[string]bool, len(allowed))
	for _, h := range allowed {
		ok[strings.ToLower(h)] = true
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			host := c.Request().Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			host = strings.Trim(strings.ToLower(host), "[]")
			if !ok[host] {
				return echo.NewHTTPError(http.StatusMisdirectedRequest, "this dashboard does not answer to that host name")
			}
			return next(c)
		}
	}
}

// parseProxies reads the trusted proxies: addresses or CIDR ranges.
func parseProxies(list []string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, p := range list {
		if !strings.Contains(p, "/") {
			if ip := net.ParseIP(p); ip != nil {
				bits := 128
				if ip.To4() != nil {
					bits = 32
				}
				p = fmt.Sprintf("%s/%d", p, bits)
			}
		}
		_, n, err := net.ParseCIDR(p)
		if err != nil {
			return nil, &contract.ValidationError{Field: "Config.TrustedProxies", Problem: fmt.Sprintf("holds %q; give an address (10.0.0.7) or a range (10.0.0.0/8)", p)}
		}
		out = append(out, n)
	}
	return out, nil
}

// requireRead refuses a visitor holding no token when the dashboard needs
// a sign-in to be read: a page sends them to /login, an /api/ route
// answers 401.
func (s *Server) requireRead(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.cfg.RequireSignIn || s.auth.tokenOf(c) != nil {
			return next(c)
		}
		if strings.HasPrefix(c.Request().URL.Path, "/api/") || c.Request().Method != http.MethodGet {
			return echo.NewHTTPError(http.StatusUnauthorized, "this dashboard is read with a token: sign in at /login, or send Authorization: Bearer <token>")
		}
		if ended, _ := c.Get(ctxEnded).(bool); ended {
			return c.Redirect(http.StatusSeeOther, "/login?ended=1")
		}
		return c.Redirect(http.StatusSeeOther, "/login")
	}
}

// requireAllTenants guards /metrics, which sums every tenant: when the
// dashboard needs a sign-in, only a token that sees every tenant and
// queue may read it.
func (s *Server) requireAllTenants(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.cfg.RequireSignIn {
			return next(c)
		}
		t := s.auth.tokenOf(c)
		if t == nil {
			return echo.NewHTTPError(http.StatusUnauthorized, "/metrics needs a token that sees every tenant: send Authorization: Bearer <token>")
		}
		if !t.AllTenants() {
			return &ScopeError{Token: t.Name, Sees: scopeOfToken(t).describe(), Asked: "/metrics (which sums every tenant)"}
		}
		return next(c)
	}
}
