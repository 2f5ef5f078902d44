package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// The flow-control actions.
const (
	actSetLimits    action = "set-limits"
	actRemoveLimits action = "remove-limits"
)

// Scopes of a change of limits: one tenant's own, or the queue's default.
const (
	scopeTenant  = "tenant"
	scopeDefault = "default"
)

// LimitsRequest is the JSON body of PUT and POST /api/limits, and of
// DELETE /api/limits without Limits (which may instead name the queue and
// tenant in its query). Tenant "" is the queue's default. The zero Limits
// remove the limits, as a DELETE does.
type LimitsRequest struct {
	Queue  string          `json:"queue"`
	Tenant string          `json:"tenant,omitempty"`
	Limits view.FlowLimits `json:"limits"`
}

// LimitsResult answers a change of limits: what was set, and the standing
// after it of the tenant (of every tenant, for the queue's default).
type LimitsResult struct {
	Action string          `json:"action"`
	Queue  string          `json:"queue"`
	Tenant string          `json:"tenant,omitempty"`
	Limits view.FlowLimits `json:"limits"`
	Status []view.FlowRow  `json:"status"`
}

// contractLimits reads limits as the pages and the API carry them.
func contractLimits(f view.FlowLimits) (contract.Limits, error) {
	l := contract.Limits{MaxLeased: f.MaxLeased, Rate: f.Rate, Burst: f.Burst, Weight: f.Weight,
		Budget: contract.Budget{CostMicros: f.Budget.CostMicros, Tokens: f.Budget.Tokens}}
	if w := strings.TrimSpace(f.Budget.Window); w != "" {
		d, err := time.ParseDuration(w)
		if err != nil {
			return l, &contract.ValidationError{Field: "Limits.Budget.Window", Problem: "is " + quote(w) + "; give a duration such as 1h, 30m or 90s"}
		}
		l.Budget.Window = d
	}
	return l, nil
}

// formFields are the limits form's fields: the input name, and the
// contract's name for it (which a refusal names).
var formFields = []struct{ input, field string }{
	{"max_leased", "Limits.MaxLeased"},
	{"rate", "Limits.Rate"},
	{"burst", "Limits.Burst"},
	{"weight", "Limits.Weight"},
	{"cost_micros", "Limits.Budget.CostMicros"},
	{"tokens", "Limits.Budget.Tokens"},
	{"window", "Limits.Budget.Window"},
}

// inputOf is the form input a contract field name is typed into.
func inputOf(field string) string {
	for _, f := range formFields {
		if f.field == field {
			return f.input
		}
	}
	return ""
}

// formLimits reads the limits form: the fields as typed (to show them
// again when refused) and the limits they give. An empty field is 0: no
// limit.
func formLimits(c echo.Context) (view.FlowForm, contract.Limits, error) {
	v := func(name string) string { return strings.TrimSpace(c.FormValue(name)) }
	ff := view.FlowForm{MaxLeased: v("max_leased"), Rate: v("rate"), Burst: v("burst"), Weight: v("weight"),
		CostMicros: v("cost_micros"), Tokens: v("tokens"), Window: v("window")}
	var fl view.FlowLimits
	whole := func(s, field string, into *int64) error {
		if s == "" {
			return nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return &contract.ValidationError{Field: field, Problem: "is " + quote(s) + "; give a whole number, or leave it empty for no limit"}
		}
		*into = n
		return nil
	}
	var maxLeased, burst, weight int64
	for _, w := range []struct {
		s, field string
		into     *int64
	}{
		{ff.MaxLeased, "Limits.MaxLeased", &maxLeased},
		{ff.Burst, "Limits.Burst", &burst},
		{ff.Weight, "Limits.Weight", &weight},
		{ff.CostMicros, "Limits.Budget.CostMicros", &fl.Budget.CostMicros},
		{ff.Tokens, "Limits.Budget.Tokens", &fl.Budget.Tokens},
	} {
		if err := whole(w.s, w.field, w.into); err != nil {
			return ff, contract.Limits{}, err
		}
	}
	// Out of an int's range is out of the contract's: keep it out, so
	// the contract refuses it rather than a wrapped-around value pass.
	clamp := func(n int64) int { return int(max(min(n, 1<<31), -1<<31)) }
	fl.MaxLeased, fl.Burst, fl.Weight = clamp(maxLeased), clamp(burst), clamp(weight)
	if ff.Rate != "" {
		r, err := strconv.ParseFloat(ff.Rate, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return ff, contract.Limits{}, &contract.ValidationError{Field: "Limits.Rate", Problem: "is " + quote(ff.Rate) + "; give claims per second (such as 2.5), or leave it empty for no rate"}
		}
		fl.Rate = r
	}
	fl.Budget.Window = ff.Window
	l, err := contractLimits(fl)
	return ff, l, err
}

// changeLimits sets (or removes) limits after every check: the backing
// enforces limits, the names are valid, the token sees every tenant of
// the queue, and the contract accepts the limits. A refused change
// changes nothing.
func (s *Server) changeLimits(c echo.Context, a action, queue, tenant string, l contract.Limits) (LimitsResult, error) {
	fc, ok := s.flow()
	if !ok {
		return LimitsResult{}, echo.NewHTTPError(http.StatusNotImplemented, view.NoFlowNote)
	}
	queue = contract.QueueName(queue)
	if err := contract.ValidateName("queue", queue); err != nil {
		return LimitsResult{}, err
	}
	if tenant != "" {
		if err := contract.ValidateName("tenant", tenant); err != nil {
			return LimitsResult{}, err
		}
	}
	if err := s.limitsScope(c, queue); err != nil {
		return LimitsResult{}, err
	}
	if a == actRemoveLimits {
		l = contract.Limits{}
	}
	if err := contract.ValidateLimits(l); err != nil {
		return LimitsResult{}, err
	}
	ctx := c.Request().Context()
	if err := fc.SetLimits(ctx, queue, tenant, l); err != nil {
		return LimitsResult{}, err
	}
	sc := scopeTenant
	if tenant == "" {
		sc = scopeDefault
	}
	s.metrics.actions.Add(ctx, 1, metric.WithAttributes(attribute.String("action", string(a)), attribute.String("scope", sc)))
	res := LimitsResult{Action: string(a), Queue: queue, Tenant: tenant, Limits: view.FlowLimitsOf(l), Status: []view.FlowRow{}}
	if e, ok := c.Get(ctxAudit).(*view.AuditEntry); ok {
		e.Count = 1
		e.Limits = view.LimitsText(res.Limits)
	}
	rows, _, err := s.flowStatus(c, queue)
	if err != nil {
		return res, err
	}
	for _, r := range rows {
		if tenant == "" || r.Tenant == tenant {
			res.Status = append(res.Status, r)
		}
	}
	return res, nil
}

// limitsForm handles the limits page's form: save or remove, then back to
// the page with the outcome in a signed flash. Limits the contract
// refuses bring the form back as it was sent, with the refusal naming the
// field beside it; nothing is changed.
func (s *Server) limitsForm(c echo.Context) error {
	queue, tenant := contract.QueueName(c.FormValue("queue")), c.FormValue("tenant")
	a := actSetLimits
	if c.FormValue("remove") == "yes" {
		a = actRemoveLimits
	}
	ff, l, err := formLimits(c)
	if a == actRemoveLimits {
		err = nil
	}
	if err == nil {
		_, err = s.changeLimits(c, a, queue, tenant, l)
	}
	if ve, ok := errors.AsType[*contract.ValidationError](err); ok && strings.HasPrefix(ve.Field, "Limits.") {
		p, _, berr := s.buildLimits(c, queue, tenant)
		if berr != nil {
			return berr
		}
		p.Form, p.Problem, p.Field = ff, err.Error()+".", inputOf(ve.Field)
		p.Own = p.Own || tenant == ""
		if e, ok := c.Get(ctxAudit).(*view.AuditEntry); ok {
			e.Outcome, e.Status, e.Reason = auditRefused, http.StatusBadRequest, err.Error()
		}
		return s.render(c, http.StatusBadRequest, view.LimitsView(p))
	}
	if err != nil {
		return err
	}
	s.auth.setFlash(c, flash{Action: string(a), Count: 1, Expected: -1})
	return c.Redirect(http.StatusSeeOther, string(view.Link("/limits", "queue", queue, "tenant", tenant)))
}

// limitsAPI handles scripts: PUT or POST a LimitsRequest (JSON, or the
// page's form fields) to set, DELETE to remove.
func (s *Server) limitsAPI(a action) echo.HandlerFunc {
	return func(c echo.Context) error {
		r, l, err := readLimitsRequest(c, a)
		if err != nil {
			return err
		}
		res, err := s.changeLimits(c, a, r.Queue, r.Tenant, l)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, res)
	}
}

// limitsBodyMax bounds a limits request's JSON body.
const limitsBodyMax = 64 << 10

func isJSON(c echo.Context) bool {
	return strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEApplicationJSON)
}

// readLimitsRequest reads a change of limits from a JSON body, the page's
// form fields, or (for a DELETE) the query.
func readLimitsRequest(c echo.Context, a action) (LimitsRequest, contract.Limits, error) {
	var r LimitsRequest
	del := c.Request().Method == http.MethodDelete
	switch {
	case isJSON(c):
		dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, limitsBodyMax))
		dec.DisallowUnknownFields()
		err := dec.Decode(&r)
		if del && errors.Is(err, io.EOF) {
			// A DELETE with no body names its target in the query.
			r.Queue, r.Tenant, err = c.QueryParam("queue"), c.QueryParam("tenant"), nil
		}
		if err != nil {
			return r, contract.Limits{}, &contract.ValidationError{Field: "body", Problem: "is not a limits request: " + err.Error()}
		}
	case del:
		r.Queue, r.Tenant = c.QueryParam("queue"), c.QueryParam("tenant")
	default:
		r.Queue, r.Tenant = c.FormValue("queue"), c.FormValue("tenant")
		if a == actSetLimits {
			_, l, err := formLimits(c)
			return r, l, err
		}
	}
	if a == actRemoveLimits {
		return r, contract.Limits{}, nil
	}
	l, err := contractLimits(r.Limits)
	return r, l, err
}

// describeLimits reads what a change of limits asks for (queue, tenant,
// set or remove) before any check runs, so a refused one is recorded with
// it too. A JSON body is read and put back for the handler.
func describeLimits(c echo.Context, e *view.AuditEntry) {
	req := c.Request()
	var r LimitsRequest
	switch {
	case isJSON(c):
		body, err := io.ReadAll(io.LimitReader(req.Body, limitsBodyMax+1))
		if err != nil {
			return
		}
		req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), req.Body))
		_ = json.Unmarshal(body, &r)
		if len(bytes.TrimSpace(body)) == 0 && req.Method == http.MethodDelete {
			r.Queue, r.Tenant = c.QueryParam("queue"), c.QueryParam("tenant")
		}
	case req.Method == http.MethodDelete:
		r.Queue, r.Tenant = c.QueryParam("queue"), c.QueryParam("tenant")
	default:
		r.Queue, r.Tenant = c.FormValue("queue"), c.FormValue("tenant")
		if c.FormValue("remove") == "yes" {
			e.Action = string(actRemoveLimits)
		}
	}
	e.Filter = view.Filter{Queue: contract.QueueName(r.Queue), Tenant: r.Tenant}
	e.Scope = scopeTenant
	if r.Tenant == "" {
		e.Scope = scopeDefault
	}
}
