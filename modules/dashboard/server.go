package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
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
	a, err := newAuth(cfg.Token, cfg.SessionTTL, cfg.Clock)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, auth: a, sampler: newSampler(cfg.Inspector, cfg.Clock, cfg.SampleEvery, cfg.SampleKeep)}
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
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", http.FileServer(http.FS(static)))))
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	e.GET("/metrics", echo.WrapHandler(s.metrics.handler))

	g := e.Group("", s.auth.sessionMiddleware)
	g.GET("/", htmlPage(s, s.overview, view.OverviewView))
	g.GET("/api/overview", apiPage(s.overview))
	g.GET("/tenants", htmlPage(s, s.tenants, view.TenantsView))
	g.GET("/api/tenants", apiPage(s.tenants))
	g.GET("/leases", htmlPage(s, s.leases, view.LeasesView))
	g.GET("/api/leases", apiPage(s.leases))
	g.GET("/dead", htmlPage(s, s.dead, view.DeadView))
	g.GET("/api/dead", apiPage(s.dead))
	g.GET("/item", htmlPage(s, s.item, view.ItemLookup))
	g.GET("/api/item", apiPage(s.item))
	g.GET("/health", htmlPage(s, s.health, view.HealthView))
	g.GET("/api/health", apiPage(s.health))

	g.GET("/login", s.loginForm)
	g.POST("/login", s.login)
	g.POST("/logout", s.logout)

	w := g.Group("", s.auth.requireWrite)
	w.POST("/dead/requeue", s.actionForm(actRequeue))
	w.POST("/dead/purge", s.actionForm(actPurge))
	w.POST("/api/dead/requeue", s.actionAPI(actRequeue))
	w.POST("/api/dead/purge", s.actionAPI(actPurge))
	return e
}

// htmlPage renders into a buffer first, so a failed render is a clean
// 500 rather than half a page under a 200.
func htmlPage[T any](s *Server, build func(echo.Context) (T, int, error), render func(T) templ.Component) echo.HandlerFunc {
	return func(c echo.Context) error {
		m, code, err := build(c)
		if err != nil {
			return err
		}
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

// handleError answers JSON under /api/ and a page elsewhere, with the
// message scrubbed of the DSN and its password.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, msg := http.StatusInternalServerError, "internal error"
	var he *echo.HTTPError
	switch {
	case errors.As(err, &he):
		code = he.Code
		msg = fmt.Sprint(he.Message)
	case errors.Is(err, contract.ErrInvalid):
		code, msg = http.StatusBadRequest, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		code, msg = http.StatusGatewayTimeout, "the backing did not answer in time"
	default:
		msg = err.Error()
		s.cfg.Logger.Error("dashboard request failed", "path", c.Path(), "err", scrub(msg, s.cfg.DSN))
	}
	msg = scrub(msg, s.cfg.DSN)
	if strings.HasPrefix(c.Request().URL.Path, "/api/") || c.Request().Method == http.MethodHead {
		_ = c.JSON(code, map[string]string{"error": msg})
		return
	}
	p := view.ErrorPage{Chrome: s.chrome(c, http.StatusText(code), "", ""), Code: code, Message: msg}
	if code == http.StatusUnauthorized {
		p.Message += " (sign in at /login)"
	}
	if rerr := s.render(c, code, view.ErrorView(p)); rerr != nil {
		_ = c.String(code, msg)
	}
}

// scrub removes a DSN, and the password inside it, from text that is
// about to be shown.
func scrub(text string, dsn contract.Secret) string {
	if !dsn.IsSet() {
		return text
	}
	raw := dsn.Reveal()
	text = strings.ReplaceAll(text, raw, "[redacted]")
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			text = strings.ReplaceAll(text, pw, "[redacted]")
		}
	}
	for _, field := range strings.Fields(raw) { // key=value DSNs
		if k, v, ok := strings.Cut(field, "="); ok && strings.EqualFold(k, "password") && v != "" {
			text = strings.ReplaceAll(text, v, "[redacted]")
		}
	}
	return text
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
