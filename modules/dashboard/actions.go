package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"
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

// Scopes of an action: one dead letter (tenant and id required), a
// selection of letters, or every dead letter the filter matches.
const (
	scopeOne       = "one"
	scopeSelection = "selection"
	scopeFilter    = "filter"
)

// ActionRequest is the JSON body of POST /api/dead/requeue and
// /api/dead/purge. The same filter object drives the listing, so a bulk
// action touches exactly what the listing showed; a selection is narrowed
// by that filter too.
type ActionRequest struct {
	Queue         string `json:"queue"`
	Tenant        string `json:"tenant,omitempty"`
	ID            string `json:"id,omitempty"`
	ErrorContains string `json:"error_contains,omitempty"`
	// Scope is "one" (Tenant and ID required), "selection" (Items
	// required) or "filter".
	Scope string    `json:"scope"`
	Items []ItemRef `json:"items,omitempty"`
}

// ItemRef names one dead letter of a selection.
type ItemRef struct {
	Tenant string `json:"tenant"`
	ID     string `json:"id"`
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
	case scopeSelection:
		if len(r.Items) == 0 {
			return f, &contract.ValidationError{Field: "items", Problem: `is empty; "selection" acts on the letters it names`}
		}
	case scopeFilter:
	default:
		return f, &contract.ValidationError{Field: "scope", Problem: `is ` + quote(r.Scope) + `; give "one", "selection" or "filter"`}
	}
	return f, contract.ValidateFilter(f)
}

func quote(s string) string { return strconv.Quote(s) }

func (s *Server) run(c echo.Context, a action, r ActionRequest) (ActionResult, error) {
	f, err := actionFilter(r)
	if err != nil {
		return ActionResult{}, err
	}
	targets := []contract.DeadLetterFilter{f}
	if r.Scope == scopeSelection {
		vf := view.Filter{Queue: f.Queue, Tenant: f.Tenant, ID: f.ID, ErrorContains: f.ErrorContains}
		values := make([]string, len(r.Items))
		for i, it := range r.Items {
			values[i] = pickValue(it.Tenant, it.ID)
		}
		ps, err := picks(vf, values)
		if err != nil {
			return ActionResult{}, err
		}
		targets = targets[:0]
		for _, p := range ps {
			pf := pickFilter(vf, p)
			if err := contract.ValidateFilter(pf); err != nil {
				return ActionResult{}, err
			}
			targets = append(targets, pf)
		}
	}
	// Every target is checked against the token's scope before the first
	// write: one letter outside it refuses the whole request, and a
	// filter naming no tenant acts on the scope's tenants only.
	sc := s.scopeOf(c)
	var scoped []contract.DeadLetterFilter
	for _, t := range targets {
		fs, err := sc.narrow(t)
		if err != nil {
			return ActionResult{}, err
		}
		scoped = append(scoped, fs...)
	}
	ctx := c.Request().Context()
	n := 0
	for _, t := range scoped {
		var moved int
		if a == actRequeue {
			moved, err = s.cfg.Queue.Requeue(ctx, t)
		} else {
			moved, err = s.cfg.Queue.Purge(ctx, t)
		}
		n += moved
		if err != nil {
			break
		}
	}
	if n > 0 {
		s.metrics.actions.Add(ctx, int64(n), metric.WithAttributes(attribute.String("action", string(a)), attribute.String("scope", r.Scope)))
	}
	res := ActionResult{Action: string(a), Scope: r.Scope, Count: n,
		Filter: view.Filter{Queue: f.Queue, Tenant: f.Tenant, ID: f.ID, ErrorContains: f.ErrorContains}}
	noteAction(c, res)
	if err != nil {
		return ActionResult{}, err
	}
	return res, nil
}

// formRequest reads an action from a page's form.
func formRequest(c echo.Context) (ActionRequest, error) {
	r := ActionRequest{Queue: c.FormValue("queue"), Tenant: c.FormValue("tenant"), ID: c.FormValue("id"),
		ErrorContains: c.FormValue("error"), Scope: c.FormValue("scope")}
	if r.Scope == scopeSelection {
		form, err := c.FormParams()
		if err != nil {
			return r, err
		}
		for _, v := range form["pick"] {
			t, id, ok := parsePick(v)
			if !ok {
				return r, &contract.ValidationError{Field: "pick", Problem: "is not a letter this dashboard listed"}
			}
			r.Items = append(r.Items, ItemRef{Tenant: t, ID: id})
		}
	}
	return r, nil
}

// actionForm handles the page's buttons and redirects back to the page
// the button was on, with the outcome in a signed flash. A bulk action
// comes from the confirmation step, which carries the count it showed.
func (s *Server) actionForm(a action) echo.HandlerFunc {
	return func(c echo.Context) error {
		r, err := formRequest(c)
		if err != nil {
			return err
		}
		bulk := r.Scope == scopeFilter || r.Scope == scopeSelection
		if bulk && c.FormValue("confirm") != "yes" {
			return echo.NewHTTPError(http.StatusBadRequest, "confirm the bulk action first: its confirmation step shows how many letters it will touch")
		}
		expected := -1
		if bulk {
			if n, err := strconv.Atoi(c.FormValue("expected")); err == nil && n >= 0 {
				expected = n
			}
		}
		res, err := s.run(c, a, r)
		if err != nil {
			return err
		}
		s.auth.setFlash(c, flash{Action: string(a), Count: res.Count, Expected: expected})
		if c.FormValue("back") == "item" && r.Scope == scopeOne {
			return c.Redirect(http.StatusSeeOther, string(view.Link("/item", "queue", res.Filter.Queue, "tenant", res.Filter.Tenant, "id", res.Filter.ID)))
		}
		// Back to the listing the action came from: after one letter, the
		// filter the page showed; after a bulk action, its own filter.
		tenant, id, errText := res.Filter.Tenant, res.Filter.ID, res.Filter.ErrorContains
		if r.Scope == scopeOne {
			tenant, id, errText = c.FormValue("back_tenant"), c.FormValue("back_id"), c.FormValue("back_error")
		}
		return c.Redirect(http.StatusSeeOther, string(view.Link("/dead", "queue", res.Filter.Queue, "tenant", tenant, "id", id, "error", errText)))
	}
}

// actionAPI handles scripts: a JSON body (or a form) in, a JSON count
// out. GET /api/dead/preview gives the count first, as the confirmation
// step does for a person.
func (s *Server) actionAPI(a action) echo.HandlerFunc {
	return func(c echo.Context) error {
		var r ActionRequest
		if strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEApplicationJSON) {
			dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, 256<<10))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil {
				return &contract.ValidationError{Field: "body", Problem: "is not an action request: " + err.Error()}
			}
		} else {
			var err error
			if r, err = formRequest(c); err != nil {
				return err
			}
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
	if c.QueryParam("ended") != "" && p.Chrome.Error == "" && p.Chrome.Token == "" {
		p.Chrome.Error = "Your session has ended; sign in again."
	}
	return s.render(c, http.StatusOK, view.LoginView(p))
}

// login checks the form's CSRF token against the anonymous session, then
// the token (under the throttle), and on success starts a new session (a
// new id, so a session planted before sign-in is worthless after it).
func (s *Server) login(c echo.Context) error {
	if !s.auth.enabled() {
		return echo.NewHTTPError(http.StatusForbidden, readOnlyReason)
	}
	if !s.auth.csrfOK(sessionOf(c), csrfToken(c)) {
		return echo.NewHTTPError(http.StatusForbidden, "missing or wrong CSRF token; reload the sign-in page and try again")
	}
	name := strings.TrimSpace(c.FormValue("name"))
	t, err := s.auth.attempt(c.RealIP(), name, c.FormValue("token"))
	// The entry names the token only when the name given is one of
	// them, so a guess's text never reaches the trail.
	claimed := ""
	if nt, ok := s.auth.named(name); ok {
		claimed = nt.Name
	}
	if te, ok := errors.AsType[*throttledError](err); ok {
		s.record(c, view.AuditEntry{Action: "sign-in", Outcome: auditRefused, Status: http.StatusTooManyRequests, Token: claimed, Reason: te.Error()})
		return tooMany(c, te)
	}
	if err != nil {
		s.record(c, view.AuditEntry{Action: "sign-in", Outcome: auditRefused, Status: http.StatusUnauthorized, Token: claimed, Reason: "not one of the dashboard's tokens"})
		p := view.Login{Chrome: s.chrome(c, "Sign in", view.NavLogin, ""), Failed: true}
		p.Chrome.Refresh = 0
		return s.render(c, http.StatusUnauthorized, view.LoginView(p))
	}
	s.auth.end(sessionOf(c)) // a session signed in before ends with the new sign-in
	ns, err := s.auth.newSession(t.Name)
	if err != nil {
		return err
	}
	s.auth.setCookie(c, ns)
	s.record(c, view.AuditEntry{Action: "sign-in", Outcome: auditDone, Status: http.StatusSeeOther, Token: t.Name})
	return c.Redirect(http.StatusSeeOther, "/dead")
}

func (s *Server) logout(c echo.Context) error {
	if !s.auth.csrfOK(sessionOf(c), csrfToken(c)) {
		return echo.NewHTTPError(http.StatusForbidden, "missing or wrong CSRF token")
	}
	if t := s.auth.tokenOf(c); t != nil {
		s.record(c, view.AuditEntry{Action: "sign-out", Outcome: auditDone, Status: http.StatusSeeOther, Token: t.Name})
	}
	s.auth.end(sessionOf(c))
	ns, err := s.auth.newSession("")
	if err != nil {
		return err
	}
	s.auth.setCookie(c, ns)
	return c.Redirect(http.StatusSeeOther, "/")
}
