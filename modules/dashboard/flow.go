package dashboard

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// flow is the queue's FlowController, when its backing enforces limits
// in the claim.
func (s *Server) flow() (contract.FlowController, bool) {
	return contract.AsFlowController(s.cfg.Queue)
}

// flowStatus reads the flow standing of the queue's tenants the request's
// scope sees, by tenant name; enforced is false (and rows nil) on a
// backing without flow control.
func (s *Server) flowStatus(c echo.Context, queue string) (rows []view.FlowRow, enforced bool, err error) {
	fc, ok := s.flow()
	if !ok {
		return nil, false, nil
	}
	sc := s.scopeOf(c)
	if err := sc.checkQueue(queue); err != nil {
		return nil, true, err
	}
	status, err := fc.FlowStatus(c.Request().Context(), queue)
	if err != nil {
		return nil, true, err
	}
	rows = make([]view.FlowRow, 0, len(status))
	for _, tf := range status {
		if sc.tenantOK(tf.Tenant) {
			rows = append(rows, view.FlowRowOf(tf))
		}
	}
	return rows, true, nil
}

// flowByTenant indexes rows by tenant.
func flowByTenant(rows []view.FlowRow) map[string]*view.FlowRow {
	m := make(map[string]*view.FlowRow, len(rows))
	for i := range rows {
		m[rows[i].Tenant] = &rows[i]
	}
	return m
}

// limitsPage builds the flow-control page and its twin: the queue's
// default and every tenant's standing, or one tenant's when the request
// names it.
func (s *Server) limitsPage(c echo.Context) (view.Limits, int, error) {
	queue, err := s.queueParam(c)
	if err != nil {
		return view.Limits{}, 0, err
	}
	tenant := c.QueryParam("tenant")
	if tenant != "" {
		if err := contract.ValidateName("tenant", tenant); err != nil {
			return view.Limits{}, 0, err
		}
		if !s.scopeOf(c).tenantOK(tenant) {
			return view.Limits{}, 0, s.scopeOf(c).refuse("tenant")
		}
	}
	p, own, err := s.buildLimits(c, queue, tenant)
	if err != nil {
		return p, 0, err
	}
	p.Form = view.FlowFormOf(own)
	return p, http.StatusOK, nil
}

// buildLimits reads what the flow-control page shows, and the limits its
// form edits as they stand (the tenant's own, or the queue's default).
func (s *Server) buildLimits(c echo.Context, queue, tenant string) (view.Limits, view.FlowLimits, error) {
	p := view.Limits{Chrome: s.chrome(c, "Limits", view.NavLimits, queue), Queue: queue, Tenant: tenant, Tenants: []view.FlowRow{}}
	// A form being filled in must not be replaced under the pointer.
	p.Chrome.Refresh = 0
	p.CanEdit, p.EditReason = s.mayEditLimits(c, queue)
	fc, ok := s.flow()
	if !ok {
		p.Note = view.NoFlowNote
		return p, view.FlowLimits{}, nil
	}
	p.Enforced = true
	ql, err := fc.Limits(c.Request().Context(), queue)
	if err != nil {
		return p, view.FlowLimits{}, err
	}
	p.Default = view.FlowLimitsOf(ql.Default)
	rows, _, err := s.flowStatus(c, queue)
	if err != nil {
		return p, view.FlowLimits{}, err
	}
	for _, r := range rows {
		if tenant == "" || r.Tenant == tenant {
			p.Tenants = append(p.Tenants, r)
		}
	}
	if tenant == "" {
		return p, p.Default, nil
	}
	own, ok := ql.Tenants[tenant]
	p.Own = ok
	if len(p.Tenants) == 0 {
		// A tenant with neither items nor limits: what it would get.
		l, _ := ql.For(tenant)
		p.Tenants = append(p.Tenants, view.FlowRow{Tenant: tenant, Limits: view.FlowLimitsOf(l), Own: ok})
	}
	return p, view.FlowLimitsOf(own), nil
}

// mayEditLimits reports whether the request may change the queue's
// limits, and why not otherwise. Limits share a queue among all its
// tenants (one tenant's cap or weight is every other tenant's share), so
// a token must see every tenant of the queue to change them.
func (s *Server) mayEditLimits(c echo.Context, queue string) (bool, string) {
	if _, ok := s.flow(); !ok {
		return false, view.NoFlowNote
	}
	if !s.auth.writable() {
		return false, readOnlyReason
	}
	t := s.auth.tokenOf(c)
	switch {
	case t == nil:
		return false, "sign in with a read-write dashboard token to change limits"
	case t.Access != ReadWrite:
		return false, "token " + quote(t.Name) + " is read-only: sign in with a read-write token to change limits"
	}
	if err := s.limitsScope(c, queue); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// limitsScope refuses a token that does not see every tenant of queue.
func (s *Server) limitsScope(c echo.Context, queue string) error {
	sc := s.scopeOf(c)
	if err := sc.checkQueue(queue); err != nil {
		return err
	}
	if sc.tenants != nil {
		return sc.refuse("change of limits (limits share the queue among all its tenants, so changing them needs a token that sees every tenant)")
	}
	return nil
}
