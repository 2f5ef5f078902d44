package dashboard

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// action is a dead-letter action.
type action string

const (
	actRequeue action = "requeue"
	actPurge   action = "purge"
)

// Scopes of an action: one dead letter (tenant and id required) or every
// dead letter the filter matches.
const (
	scopeOne    = "one"
	scopeFilter = "filter"
)

// ActionRequest is the JSON body of POST /api/dead/requeue and
// /api/dead/purge. The same filter object drives the listing, so a bulk
// action touches exactly what the listing showed.
type ActionRequest struct {
	Queue         string `json:"queue"`
	Tenant        string `json:"tenant,omitempty"`
	ID            string `json:"id,omitempty"`
	ErrorContains string `json:"error_contains,omitempty"`
	// Scope is "one" (Tenant and ID required) or "filter".
	Scope string `json:"scope"`
}

// ActionResult answers an action.
type ActionResult struct {
	Action string      `json:"action"`
	Scope  string      `json:"scope"`
	Filter view.Filter `json:"filter"`
	Count  int         `json:"count"`
}

// actionFilter checks the request and returns the filter it acts on.
func actionFilter(r ActionRequest) (contract.DeadLetterFilter, error) {
	f := contract.DeadLetterFilter{Queue: contract.QueueName(r.Queue), Tenant: r.Tenant, ID: r.ID, ErrorContains: r.ErrorContains}
	switch r.Scope {
	case scopeOne:
		if r.Tenant == "" || r.ID == "" {
			return f, &contract.ValidationError{Field: "scope", Problem: `"one" needs tenant and id; use "filter" for bulk actions`}
		}
		f.ErrorContains = ""
	case scopeFilter:
	default:
		return f, &contract.ValidationError{Field: "scope", Problem: `is ` + strconv.Quote(r.Scope) + `; give "one" or "filter"`}
	}
	return f, contract.ValidateFilter(f)
}

func (s *Server) run(c echo.Context, a action, r ActionRequest) (ActionResult, error) {
	f, err := actionFilter(r)
	if err != nil {
		return ActionResult{}, err
	}
	ctx := c.Request().Context()
	var n int
	if a == actRequeue {
		n, err = s.cfg.Queue.Requeue(ctx, f)
	} else {
		n, err = s.cfg.Queue.Purge(ctx, f)
	}
	if err != nil {
		return ActionResult{}, err
	}
	s.metrics.actions.Add(ctx, int64(n), metric.WithAttributes(attribute.String("action", string(a)), attribute.String("scope", r.Scope)))
	s.cfg.Logger.Info("dead letters "+string(a)+"d", "queue", f.Queue, "tenant", f.Tenant, "id", f.ID,
		"error_contains", f.ErrorContains, "scope", r.Scope, "count", n)
	return ActionResult{Action: string(a), Scope: r.Scope, Count: n,
		Filter: view.Filter{Queue: f.Queue, Tenant: f.Tenant, ID: f.ID, ErrorContains: f.ErrorContains}}, nil
}

// actionForm handles the page's buttons and redirects back to the page
// the button was on, with the outcome in a signed flash.
func (s *Server) actionForm(a action) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := ActionRequest{Queue: c.FormValue("queue"), Tenant: c.FormValue("tenant"), ID: c.FormValue("id"),
			ErrorContains: c.FormValue("error"), Scope: c.FormValue("scope")}
		if r.Scope == scopeFilter && c.FormValue("confirm") != "yes" {
			return echo.NewHTTPError(http.StatusBadRequest, "tick the box confirming the bulk action first")
		}
		res, err := s.run(c, a, r)
		if err != nil {
			return err
		}
		s.auth.setFlash(c, flash{Action: string(a), Count: res.Count, Expected: -1})
		if c.FormValue("back") == "item" && r.Scope == scopeOne {
			return c.Redirect(http.StatusSeeOther, string(view.Link("/item", "queue", res.Filter.Queue, "tenant", res.Filter.Tenant, "id", res.Filter.ID)))
		}
		back := url.Values{"queue": {res.Filter.Queue}}
		// After acting on one letter, return to the filter the page showed.
		tenant, id, errText := res.Filter.Tenant, res.Filter.ID, res.Filter.ErrorContains
		if r.Scope == scopeOne {
			tenant, id, errText = c.FormValue("back_tenant"), c.FormValue("back_id"), c.FormValue("back_error")
		}
		for k, v := range map[string]string{"tenant": tenant, "id": id, "error": errText} {
			if v != "" {
				back.Set(k, v)
			}
		}
		return c.Redirect(http.StatusSeeOther, "/dead?"+back.Encode())
	}
}

// actionAPI handles scripts: a JSON body (or a form) in, a JSON count out.
func (s *Server) actionAPI(a action) echo.HandlerFunc {
	return func(c echo.Context) error {
		var r ActionRequest
		if strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEApplicationJSON) {
			dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, 64<<10))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil {
				return &contract.ValidationError{Field: "body", Problem: "is not an action request: " + err.Error()}
			}
		} else {
			r = ActionRequest{Queue: c.FormValue("queue"), Tenant: c.FormValue("tenant"), ID: c.FormValue("id"),
				ErrorContains: c.FormValue("error"), Scope: c.FormValue("scope")}
		}
		res, err := s.run(c, a, r)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, res)
	}
}

func (s *Server) loginForm(c echo.Context) error {
	p := view.Login{Chrome: s.chrome(c, "Sign in", view.NavLogin, c.QueryParam("queue"))}
	p.Chrome.Refresh = 0
	return s.render(c, http.StatusOK, view.LoginView(p))
}

// login checks the form's CSRF token against the anonymous session, then
// the dashboard token, and on success starts a new session (a new id,
// so a session planted before sign-in is worthless after it).
func (s *Server) login(c echo.Context) error {
	if !s.auth.enabled() {
		return echo.NewHTTPError(http.StatusForbidden, readOnlyReason)
	}
	if !s.auth.csrfOK(sessionOf(c), csrfToken(c)) {
		return echo.NewHTTPError(http.StatusForbidden, "missing or wrong CSRF token; reload the sign-in page and try again")
	}
	if !s.auth.allowAttempt() {
		return echo.NewHTTPError(http.StatusTooManyRequests, "too many failed sign-ins; wait a minute and try again")
	}
	if !s.auth.tokenOK(c.FormValue("token")) {
		s.auth.failed()
		s.cfg.Logger.Warn("dashboard sign-in refused", "remote", c.RealIP())
		p := view.Login{Chrome: s.chrome(c, "Sign in", view.NavLogin, ""), Failed: true}
		p.Chrome.Refresh = 0
		return s.render(c, http.StatusUnauthorized, view.LoginView(p))
	}
	ns, err := s.auth.newSession(true)
	if err != nil {
		return err
	}
	s.auth.setCookie(c, ns)
	return c.Redirect(http.StatusSeeOther, "/dead")
}

func (s *Server) logout(c echo.Context) error {
	if !s.auth.csrfOK(sessionOf(c), csrfToken(c)) {
		return echo.NewHTTPError(http.StatusForbidden, "missing or wrong CSRF token")
	}
	ns, err := s.auth.newSession(false)
	if err != nil {
		return err
	}
	s.auth.setCookie(c, ns)
	return c.Redirect(http.StatusSeeOther, "/")
}
