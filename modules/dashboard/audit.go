package dashboard

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// DefaultAuditKeep is how many audit entries a Server keeps by default.
const DefaultAuditKeep = 1000

// AuditMessage is the message of every audit log line.
const AuditMessage = "dashboard audit"

// Outcomes of an audited request.
const (
	auditDone    = "done"
	auditRefused = "refused"
	auditFailed  = "failed"
)

// audit is the bounded in-process trail: the newest keep entries, oldest
// overwritten first.
type audit struct {
	mu   sync.Mutex
	buf  []view.AuditEntry
	next int
	n    int
}

func newAudit(keep int) *audit { return &audit{buf: make([]view.AuditEntry, keep)} }

func (a *audit) add(e view.AuditEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.buf[a.next] = e
	a.next = (a.next + 1) % len(a.buf)
	a.n = min(a.n+1, len(a.buf))
}

// list returns the entries keep accepts, newest first.
func (a *audit) list(keep func(view.AuditEntry) bool) []view.AuditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]view.AuditEntry, 0, a.n)
	for i := range a.n {
		e := a.buf[(a.next-1-i+2*len(a.buf))%len(a.buf)]
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// record writes one entry three ways: a structured log line, an event on
// the request's span, and the in-process list. An entry holds the token's
// name, never its secret, and nothing of a sign-in but its outcome.
func (s *Server) record(c echo.Context, e view.AuditEntry) {
	e.At = s.cfg.Clock.Now()
	e.Client = c.RealIP()
	if e.Token == "" {
		if t := s.auth.tokenOf(c); t != nil {
			e.Token = t.Name
		}
	}
	level := s.cfg.Logger.Info
	if e.Outcome != auditDone {
		level = s.cfg.Logger.Warn
	}
	level(AuditMessage, "action", e.Action, "outcome", e.Outcome, "status", e.Status,
		"token", e.Token, "client", e.Client, "queue", e.Filter.Queue, "tenant", e.Filter.Tenant, "id", e.Filter.ID,
		"error_contains", e.Filter.ErrorContains, "scope", e.Scope, "selected", e.Selected, "count", e.Count, "reason", e.Reason, "limits", e.Limits, "detail", e.Detail)
	trace.SpanFromContext(c.Request().Context()).AddEvent("adk.dashboard.audit", trace.WithAttributes(
		attribute.String("adk.dashboard.action", e.Action),
		attribute.String("adk.dashboard.outcome", e.Outcome),
		attribute.Int("http.response.status_code", e.Status),
		attribute.String("adk.dashboard.token", e.Token),
		attribute.String("client.address", e.Client),
		attribute.String("messaging.destination.name", e.Filter.Queue),
		attribute.String("adk.tenant", e.Filter.Tenant),
		attribute.String("adk.item.id", e.Filter.ID),
		attribute.String("adk.dashboard.error_contains", e.Filter.ErrorContains),
		attribute.String("adk.dashboard.scope", e.Scope),
		attribute.Int("adk.dashboard.selected", e.Selected),
		attribute.Int("adk.dashboard.count", e.Count),
		attribute.String("adk.dashboard.reason", e.Reason),
		attribute.String("adk.dashboard.limits", e.Limits),
		attribute.String("adk.dashboard.detail", e.Detail),
	))
	s.audit.add(e)
}

// ctxAudit carries what an action handler learned (its filter and count)
// to the audit middleware around it.
const ctxAudit = "adk.audit"

// audited wraps an action route, outermost: whatever becomes of the
// request — done, refused by the sign-in, the throttle, the CSRF check,
// the token's access or scope, or bad input, or failed in the backing —
// it is recorded with what it asked for.
func (s *Server) audited(a action) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			e := view.AuditEntry{Action: string(a)}
			switch a {
			case actSetLimits, actRemoveLimits:
				describeLimits(c, &e)
			case actPause, actResume, actCancel, actCancelMatching, actSignal, actPurgeCancelled:
				describeLifecycle(c, a, &e)
			case actSetRetention, actPrune:
				describeHistory(c, a, &e)
			default:
				describeAction(c, &e)
			}
			c.Set(ctxAudit, &e)
			err := next(c)
			switch {
			case err == nil && e.Outcome == "":
				e.Outcome, e.Status = auditDone, http.StatusOK
			case err != nil:
				code, msg := statusOf(err)
				e.Status, e.Reason = code, scrub(msg, s.cfg.DSN)
				e.Outcome = auditRefused
				if code >= 500 {
					e.Outcome = auditFailed
				}
			}
			s.record(c, e)
			return err
		}
	}
}

// describeAction reads what an action asks for, before any check runs,
// so that a refused request is recorded with it too. A JSON body is read
// and put back for the handler.
func describeAction(c echo.Context, e *view.AuditEntry) {
	req := c.Request()
	var r ActionRequest
	if strings.HasPrefix(req.Header.Get(echo.HeaderContentType), echo.MIMEApplicationJSON) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 256<<10+1))
		if err != nil {
			return
		}
		req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), req.Body))
		_ = json.Unmarshal(body, &r)
	} else if fr, err := formRequest(c); err == nil {
		r = fr
	} else {
		r = ActionRequest{Queue: c.FormValue("queue"), Tenant: c.FormValue("tenant"), ID: c.FormValue("id"), ErrorContains: c.FormValue("error"), Scope: c.FormValue("scope")}
	}
	e.Filter = view.Filter{Queue: r.Queue, Tenant: r.Tenant, ID: r.ID, ErrorContains: r.ErrorContains}
	e.Scope, e.Selected = r.Scope, len(r.Items)
}

// noteAction tells the audit middleware what the action touched (when a
// backing failed part way, what it touched before).
func noteAction(c echo.Context, res ActionResult) {
	if e, ok := c.Get(ctxAudit).(*view.AuditEntry); ok {
		e.Count = res.Count
		if res.Filter.Queue != "" {
			e.Filter = res.Filter
		}
	}
}

// sees reports whether an audit entry is shown to the request's token:
// one that sees every tenant sees every entry, any other its own only
// (an entry of another token may name any tenant).
func (s *Server) sees(c echo.Context) func(view.AuditEntry) bool {
	t := s.auth.tokenOf(c)
	return func(e view.AuditEntry) bool { return t != nil && (t.AllTenants() || e.Token == t.Name) }
}

// auditPage lists the trail for a read-write token.
func (s *Server) auditPage(c echo.Context) (view.Audit, int, error) {
	t := s.auth.tokenOf(c)
	if t == nil {
		return view.Audit{}, 0, echo.NewHTTPError(http.StatusUnauthorized, "sign in with a read-write token to see the audit trail")
	}
	if t.Access != ReadWrite {
		return view.Audit{}, 0, echo.NewHTTPError(http.StatusForbidden, "token "+quote(t.Name)+" is read-only; the audit trail is shown to read-write tokens")
	}
	p := view.Audit{Chrome: s.chrome(c, "Audit trail", view.NavAudit, ""), Keep: len(s.audit.buf), Own: !t.AllTenants()}
	p.Chrome.Refresh = 0
	p.Entries = s.audit.list(s.sees(c))
	return p, http.StatusOK, nil
}
