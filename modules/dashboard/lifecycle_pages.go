package dashboard

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// defaultWaitingPage is how many waiting items a page lists by default.
const defaultWaitingPage = 50

// queuePage builds the queue's controls and their twin: whether the
// queue is paused, its tenants with their pauses and lifecycle counts.
func (s *Server) queuePage(c echo.Context) (view.QueuePage, int, error) {
	queue, err := s.queueParam(c)
	if err != nil {
		return view.QueuePage{}, 0, err
	}
	p := view.QueuePage{Chrome: s.chrome(c, "Queue controls", view.NavQueue, queue), Queue: queue,
		PausedTenants: []string{}, Tenants: []view.PausedTenant{}}
	p.Chrome.Refresh = 0 // people act on this page
	if err := s.queueHistory(c, &p); err != nil {
		return p, 0, err
	}
	p.CanQueue, p.QueueReason = s.mayActOnQueue(c, queue)
	p.Shards = s.shardsPanel(c, queue)
	lc, ok := s.lifecycle()
	if !ok {
		p.Note = view.NoLifecycleNote
		return p, http.StatusOK, nil
	}
	p.Lifecycle = true
	ctx := c.Request().Context()
	st, err := lc.Paused(ctx, queue)
	if err != nil {
		return p, 0, err
	}
	p.Paused, p.PausedTenants = st.Paused, s.seenTenants(c, st.Tenants)
	stats, err := s.insp(c).Tenants(ctx, queue)
	if err != nil {
		return p, 0, err
	}
	for _, t := range stats {
		p.Tenants = append(p.Tenants, view.PausedTenant{Tenant: t.Tenant, Ready: t.Ready, Later: t.Later, Leased: t.Leased,
			Waiting: t.Waiting, Cancelled: t.Cancelled, Dead: t.Dead, Paused: t.Paused})
		p.Waiting += t.Waiting
		p.Cancelled += t.Cancelled
	}
	slices.SortFunc(p.Tenants, func(a, b view.PausedTenant) int { return cmp.Compare(a.Tenant, b.Tenant) })
	p.Form = view.CancelForm{Tenant: c.QueryParam("tenant"), State: c.QueryParam("state"), IDPrefix: c.QueryParam("id_prefix")}
	return p, http.StatusOK, nil
}

// cancelConfirm counts what a bulk cancel would touch, for the step
// before it (and, as GET /api/cancel/preview, for scripts).
func (s *Server) cancelConfirm(c echo.Context) (view.CancelConfirm, int, error) {
	queue := c.QueryParam("queue")
	if queue == "" {
		var err error
		if queue, err = s.queueParam(c); err != nil {
			return view.CancelConfirm{}, 0, err
		}
	}
	lc, ok := s.lifecycle()
	if !ok {
		return view.CancelConfirm{}, 0, noLifecycle()
	}
	reason := c.QueryParam("reason")
	if err := contract.ValidateReason(reason); err != nil {
		return view.CancelConfirm{}, 0, err
	}
	f := contract.CancelFilter{Queue: queue, Tenant: c.QueryParam("tenant"), State: contract.ItemState(c.QueryParam("state")), IDPrefix: c.QueryParam("id_prefix")}
	f, n, err := s.countMatching(c, lc, f)
	if err != nil {
		return view.CancelConfirm{}, 0, err
	}
	p := view.CancelConfirm{Chrome: s.chrome(c, "Confirm cancel", view.NavQueue, f.Queue), Queue: f.Queue, Tenant: f.Tenant,
		State: string(f.State), IDPrefix: f.IDPrefix, Reason: reason, Count: n}
	p.Chrome.Refresh = 0
	return p, http.StatusOK, nil
}

// waitingPage lists the queue's waiting items the request's scope sees,
// longest waiting first, a page at a time.
func (s *Server) waitingPage(c echo.Context) (view.Waiting, int, error) {
	queue, err := s.queueParam(c)
	if err != nil {
		return view.Waiting{}, 0, err
	}
	limit, err := intParam(c, "limit", defaultWaitingPage, 1, contract.MaxPageSize)
	if err != nil {
		return view.Waiting{}, 0, err
	}
	cur, err := parsePageCursor(c.QueryParam("cursor"))
	if err != nil {
		return view.Waiting{}, 0, err
	}
	p := view.Waiting{Chrome: s.chrome(c, "Waiting", view.NavWaiting, queue), Queue: queue, Limit: limit, Cursor: cur.String(), Rows: []view.WaitingRow{}}
	p.Chrome.Refresh = 0 // people type into the rows' forms
	lc, ok := s.lifecycle()
	if !ok {
		p.Note = view.NoLifecycleNote
		return p, http.StatusOK, nil
	}
	p.Lifecycle = true
	ctx := c.Request().Context()
	stats, err := s.insp(c).Tenants(ctx, queue)
	if err != nil {
		return p, 0, err
	}
	for _, t := range stats {
		p.Total += t.Waiting
	}
	// A scoped token's page is filled from as many of the backing's
	// pages as it takes, within a bound, like a scoped page of leases.
	sc := s.scopeOf(c)
	backing := cur.Backing
	for range scopedLeaseReads {
		page, err := lc.Waiting(ctx, queue, contract.PageRequest{Cursor: backing, Limit: limit})
		if err != nil {
			return p, 0, err
		}
		for _, it := range page.Items {
			if sc.tenantOK(it.Tenant) && len(p.Rows) < limit {
				p.Rows = append(p.Rows, waitingRow(it, p.Now))
			}
		}
		backing = page.Next
		if page.Next == "" || len(p.Rows) >= limit || sc.tenants == nil {
			break
		}
	}
	p.Next = pageCursor{Backing: backing}.String()
	return p, http.StatusOK, nil
}

func waitingRow(it contract.Item, now time.Time) view.WaitingRow {
	r := view.WaitingRow{Tenant: it.Tenant, Queue: contract.QueueName(it.Queue), ID: it.ID, Attempts: it.Attempts, Payload: preview(it.Payload)}
	if w := it.Waiting; w != nil {
		r.Signal, r.Since, r.Until = w.Signal, w.Since, w.Until
		r.AgeSeconds, r.LeftSeconds = now.Sub(w.Since).Seconds(), w.Until.Sub(now).Seconds()
	}
	return r
}
