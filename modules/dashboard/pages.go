package dashboard

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

const (
	defaultTurns = 120
	maxLanes     = 40
	previewBytes = 160
)

// chrome fills what every page shows around its content.
func (s *Server) chrome(c echo.Context, title, nav, queue string) view.Chrome {
	ch := view.Chrome{
		Title:    title,
		Active:   nav,
		Queue:    queue,
		Backing:  s.cfg.Backing,
		Writable: s.auth.writable(),
		Authed:   s.auth.mayAct(c),
		Now:      s.cfg.Clock.Now(),
	}
	if ch.Queue == "" {
		ch.Queue = cmp.Or(s.cfg.DefaultQueue, contract.DefaultQueue)
	}
	if ch.Backing == "" {
		ch.Backing = "unnamed"
	}
	if sess := sessionOf(c); sess.ID != "" {
		ch.CSRF = s.auth.csrf(sess)
	}
	switch {
	case !ch.Writable:
		ch.ReadOnlyReason = readOnlyReason
	case !ch.Authed && s.auth.tokenOf(c) != nil:
		ch.ReadOnlyReason = "token " + strconv.Quote(s.auth.tokenOf(c).Name) + " is read-only: sign in with a read-write token to act"
	case !ch.Authed:
		ch.ReadOnlyReason = "sign in with a read-write dashboard token to act"
	}
	if qs, err := s.insp(c).Queues(c.Request().Context()); err == nil {
		slices.Sort(qs)
		ch.Queues = qs
	}
	if lc, ok := s.lifecycle(); ok {
		ch.Lifecycle = true
		if s.scopeOf(c).queueOK(ch.Queue) && contract.ValidateName("queue", ch.Queue) == nil {
			if ps, err := lc.Paused(c.Request().Context(), ch.Queue); err == nil {
				ch.QueuePaused = ps.Paused
			}
		}
	}
	if t := s.auth.tokenOf(c); t != nil {
		ch.Token = t.Name
		ch.ReadOnlyToken = t.Access != ReadWrite
		ch.Scope = scopeOfToken(t).describe()
		ch.AllTenants = scopeOfToken(t).all()
	}
	ch.CanSignIn = s.auth.enabled()
	if ended, _ := c.Get(ctxEnded).(bool); ended {
		ch.Error = "Your session has ended (signed out, " + view.Dur(s.cfg.SessionIdle) + " without activity, or the dashboard restarted); sign in again to act."
	}
	if s.cfg.Refresh > 0 {
		ch.Refresh = max(1, int(s.cfg.Refresh/time.Second))
	}
	if f, ok := s.auth.readFlash(c); ok {
		ch.Flash = f.message()
	}
	return ch
}

// queueParam resolves the queue a request is about: the one it names
// (which must be in its scope), else the default one the scope sees.
func (s *Server) queueParam(c echo.Context) (string, error) {
	sc := s.scopeOf(c)
	if q := c.QueryParam("queue"); q != "" {
		if err := contract.ValidateName("queue", q); err != nil {
			return q, err
		}
		return q, sc.checkQueue(q)
	}
	if s.cfg.DefaultQueue != "" && sc.queueOK(s.cfg.DefaultQueue) {
		return s.cfg.DefaultQueue, nil
	}
	if qs, err := s.insp(c).Queues(c.Request().Context()); err == nil && len(qs) > 0 {
		slices.Sort(qs)
		if slices.Contains(qs, contract.DefaultQueue) {
			return contract.DefaultQueue, nil
		}
		return qs[0], nil
	}
	if sc.queues != nil && !sc.queueOK(contract.DefaultQueue) {
		qs := make([]string, 0, len(sc.queues))
		for q := range sc.queues {
			qs = append(qs, q)
		}
		slices.Sort(qs)
		return qs[0], nil
	}
	return contract.DefaultQueue, nil
}

func intParam(c echo.Context, name string, def, lo, hi int) (int, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, &contract.ValidationError{Field: name, Problem: fmt.Sprintf("is %q; give a whole number from %d to %d", v, lo, hi)}
	}
	return n, nil
}

func (s *Server) overview(c echo.Context) (view.Overview, int, error) {
	ctx := c.Request().Context()
	queue, err := s.queueParam(c)
	if err != nil {
		return view.Overview{}, 0, err
	}
	p := view.Overview{Chrome: s.chrome(c, "Overview", view.NavOverview, queue), Backing: s.cfg.Backing}
	p.Chrome.Refresh = refreshOr(p.Chrome.Refresh, 5)
	now := p.Now
	// The chrome's queue list tolerates a failure; the overview is that
	// list, so a backing that cannot list its queues fails the page
	// rather than show "no queue holds any item".
	insp := s.insp(c)
	queues, err := insp.Queues(ctx)
	if err != nil {
		return p, 0, err
	}
	slices.Sort(queues)
	var shown []contract.TenantStats // the selected queue's, for the chart colours
	for _, q := range queues {
		stats, err := insp.Tenants(ctx, q)
		if err != nil {
			return p, 0, err
		}
		if q == queue {
			shown = stats
		}
		t := view.Totals{Queue: q, Tenants: len(stats)}
		for _, st := range stats {
			t.Ready += st.Ready
			t.Later += st.Later
			t.Leased += st.Leased
			t.Dead += st.Dead
			t.Served += st.Served
			if !st.OldestReady.IsZero() {
				t.LatencySeconds = max(t.LatencySeconds, now.Sub(st.OldestReady).Seconds())
			}
		}
		p.Queues = append(p.Queues, t)
	}
	h, err := insp.Health(ctx)
	if err != nil {
		p.Health, p.HealthIssues = contract.HealthFail, 1
	} else {
		p.Health = h.Status()
		for _, ck := range h.Checks {
			if ck.Status != contract.HealthOK {
				p.HealthIssues++
			}
		}
		if p.Backing == "" {
			p.Backing = h.Backing
		}
	}
	span := chartRanges[0].span
	p.Range = chartRanges[0].key
	if r := c.QueryParam("range"); r != "" {
		found := false
		for _, cr := range chartRanges {
			if cr.key == r {
				span, p.Range, found = cr.span, cr.key, true
			}
		}
		if !found {
			return p, 0, &contract.ValidationError{Field: "range", Problem: fmt.Sprintf("is %q; give 30m, 6h or 24h", r)}
		}
	}
	for _, cr := range chartRanges {
		p.Ranges = append(p.Ranges, view.Range{Key: cr.key, Label: cr.label, Active: cr.key == p.Range})
	}
	sc := s.scopeOf(c)
	hist := s.sampler.windowOf(span, sc)
	p.Samples = len(hist)
	p.ClaimsPerSecond, p.DeadRatio = rates(s.sampler.windowOf(chartRanges[0].span, sc), queue)
	p.Charts = charts(hist, queue, s.colorsOf(shown), now, span)
	if sc.tenants != nil {
		// The line under the tenants' is the scope's sum, not the queue's.
		for i := range p.Charts {
			for j := range p.Charts[i].Series {
				if p.Charts[i].Series[j].Total {
					p.Charts[i].Series[j].Name = "all of " + sc.token + "'s tenants"
				}
			}
		}
	}
	return p, http.StatusOK, nil
}

// colorsOf gives the queue's tenants their colours, the same on every
// page.
func (s *Server) colorsOf(stats []contract.TenantStats) tenantColors {
	names := make([]string, len(stats))
	for i, st := range stats {
		names[i] = st.Tenant
	}
	slices.Sort(names)
	return newTenantColors(names)
}

func refreshOr(r, def int) int {
	if r == 0 {
		return 0
	}
	return max(r, def)
}

// rotationParams reads the queue and the window of turns a rotation page
// shows.
func (s *Server) rotationParams(c echo.Context) (queue string, turns int, err error) {
	if queue, err = s.queueParam(c); err != nil {
		return "", 0, err
	}
	turns, err = intParam(c, "turns", defaultTurns, 1, 1000)
	return queue, turns, err
}

// rotation reads a queue's tenants and its rotation with the last n turns.
func (s *Server) rotation(c echo.Context, queue string, n int) ([]contract.TenantStats, contract.Rotation, error) {
	ctx, insp := c.Request().Context(), s.insp(c)
	stats, err := insp.Tenants(ctx, queue)
	if err != nil {
		return nil, contract.Rotation{}, err
	}
	rot, err := insp.Rotation(ctx, queue, n)
	return stats, rot, err
}

func (s *Server) tenants(c echo.Context) (view.Tenants, int, error) {
	queue, n, err := s.rotationParams(c)
	if err != nil {
		return view.Tenants{}, 0, err
	}
	p := view.Tenants{Chrome: s.chrome(c, "Tenants & rotation", view.NavTenants, queue), Queue: queue, Window: n}
	stats, rot, err := s.rotation(c, queue, n)
	if err != nil {
		return p, 0, err
	}
	colors := s.colorsOf(stats)
	flows, enforced, err := s.flowStatus(c, queue)
	if err != nil {
		return p, 0, err
	}
	p.Flow = enforced
	flowOf := flowByTenant(flows)
	p.Held = map[string]string{}
	for _, f := range flows {
		if f.Held != "" {
			p.Held[f.Tenant] = f.Held
		}
	}

	p.Lifecycle, p.QueuePaused = p.Chrome.Lifecycle, p.Chrome.QueuePaused
	p.Order = rot.Order
	if p.Order == nil {
		p.Order = []string{}
	}
	pos := make(map[string]int, len(rot.Order))
	for i, t := range rot.Order {
		pos[t] = i + 1
	}
	turns := make(map[string][]int)
	p.Turns = make([]view.TurnCell, 0, len(rot.Recent))
	for i, t := range rot.Recent {
		p.Turns = append(p.Turns, view.TurnCell{Tenant: t.Tenant, ID: t.ID, Worker: t.Worker, At: t.At, Color: colors.of(t.Tenant)})
		turns[t.Tenant] = append(turns[t.Tenant], i)
	}
	p.Window = max(len(p.Turns), 1)
	now := p.Now
	p.Rows = make([]view.TenantRow, 0, len(stats))
	p.Delayed = map[string]bool{}
	for _, st := range stats {
		if st.Ready == 0 && st.Later > 0 {
			p.Delayed[st.Tenant] = true
		}
		r := view.TenantRow{
			Tenant: st.Tenant, Color: colors.of(st.Tenant),
			Ready: st.Ready, Later: st.Later, Leased: st.Leased, Dead: st.Dead, Served: st.Served,
			TurnsInWindow: len(turns[st.Tenant]), Position: pos[st.Tenant], Latency: "—",
		}
		if !st.OldestReady.IsZero() {
			age := now.Sub(st.OldestReady)
			r.LatencySeconds = age.Seconds()
			r.Latency = view.Dur(age)
		}
		r.Flow = flowOf[st.Tenant]
		r.WaitingItems, r.Cancelled, r.Paused = st.Waiting, st.Cancelled, st.Paused
		// Waiting means starved: ready work older than the whole window
		// of turns, and not one of those turns. Work that arrived during
		// the window has simply not come up yet, and a tenant its own
		// limits hold back is not starved by the rotation.
		r.Waiting = st.Ready > 0 && r.TurnsInWindow == 0 && len(rot.Recent) > 0 &&
			!st.OldestReady.IsZero() && st.OldestReady.Before(rot.Recent[0].At) &&
			p.Held[st.Tenant] == "" && !st.Paused && !p.QueuePaused
		p.Rows = append(p.Rows, r)
	}
	// Busiest first: the tenants a person came to look at.
	slices.SortFunc(p.Rows, func(a, b view.TenantRow) int {
		return cmp.Or(cmp.Compare(b.Ready+b.Later+b.Leased, a.Ready+a.Later+a.Leased), cmp.Compare(a.Tenant, b.Tenant))
	})
	for _, r := range p.Rows {
		if len(p.Lanes) == maxLanes {
			break
		}
		if r.Ready > 0 || r.TurnsInWindow > 0 {
			p.Lanes = append(p.Lanes, view.Lane{Tenant: r.Tenant, Color: r.Color, Ready: r.Ready, Columns: turns[r.Tenant], Starving: r.Waiting})
		}
	}
	return p, http.StatusOK, nil
}

func (s *Server) leases(c echo.Context) (view.Leases, int, error) {
	ctx := c.Request().Context()
	queue, err := s.queueParam(c)
	if err != nil {
		return view.Leases{}, 0, err
	}
	limit, err := intParam(c, "limit", contract.DefaultPageSize, 1, contract.MaxPageSize)
	if err != nil {
		return view.Leases{}, 0, err
	}
	offset, err := intParam(c, "offset", 0, 0, 1<<40)
	if err != nil {
		return view.Leases{}, 0, err
	}
	cur, err := parsePageCursor(c.QueryParam("cursor"))
	if err != nil {
		return view.Leases{}, 0, err
	}
	p := view.Leases{Chrome: s.chrome(c, "Leases", view.NavLeases, queue), Queue: queue, Limit: limit, Offset: offset, Cursor: cur.String()}
	insp := s.insp(c)
	page, err := insp.Leases(ctx, queue, contract.PageRequest{Cursor: cur.Backing, Limit: limit})
	if err != nil {
		return p, 0, err
	}
	stats, err := insp.Tenants(ctx, queue)
	if err != nil {
		return p, 0, err
	}
	for _, st := range stats {
		p.Leased += st.Leased
	}
	p.Next = pageCursor{Backing: page.Next}.String()
	p.Rows = make([]view.LeaseRow, 0, len(page.Leases))
	for _, l := range page.Leases {
		r := leaseRow(l, p.Now)
		if r.Expired {
			p.Expired++
		}
		p.Rows = append(p.Rows, r)
	}
	return p, http.StatusOK, nil
}

func leaseRow(l contract.Lease, now time.Time) view.LeaseRow {
	left := l.ExpiresAt.Sub(now)
	r := view.LeaseRow{
		Tenant: l.Item.Tenant, Queue: contract.QueueName(l.Item.Queue), ID: l.Item.ID, Worker: l.Worker,
		Attempts: l.Item.Attempts, Expires: l.ExpiresAt, TimeLeftSeconds: left.Seconds(), Token: l.Token,
		Expired: left <= 0,
	}
	if r.Expired {
		r.TimeLeft = "expired " + view.Dur(left) + " ago, awaiting reap"
	} else {
		r.TimeLeft = view.Dur(left) + " left"
	}
	return r
}

// message is the sentence a flash shows. It is built from the signed
// action and counts only, so no request text reaches the page.
func (f flash) message() string {
	switch action(f.Action) {
	case actSetLimits:
		return "Limits saved."
	case actRemoveLimits:
		return "Limits removed."
	}
	if m := f.lifecycleMessage(); m != "" {
		return m
	}
	if m := f.historyMessage(); m != "" {
		return m
	}
	verb := map[string]string{string(actRequeue): "Requeued", string(actPurge): "Purged"}[f.Action]
	if verb == "" {
		return ""
	}
	msg := verb + " " + view.Count(f.Count, "dead letter") + "."
	switch {
	case f.Expected < 0 || f.Expected == f.Count:
	case f.Count < f.Expected:
		msg += fmt.Sprintf(" %s when you confirmed: the others had left the dead letter in between.", view.Num(f.Expected))
	default:
		msg += fmt.Sprintf(" %s when you confirmed: more letters matching the filter died in between.", view.Num(f.Expected))
	}
	return msg
}

// preview shows text payloads as text and anything else as hex, cut short.
// It is escaped by templ like every other string.
func preview(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	cut := b
	more := ""
	if len(cut) > previewBytes {
		cut, more = cut[:previewBytes], "…"
	}
	text := true
	for len(cut) > 0 {
		r, size := utf8.DecodeRune(cut)
		if r == utf8.RuneError && size <= 1 {
			// a rune cut at the preview boundary is fine; anything else is binary
			if len(cut) < utf8.UTFMax && more != "" {
				cut = nil
				break
			}
			text = false
			break
		}
		if !unicode.IsPrint(r) && !unicode.IsSpace(r) {
			text = false
			break
		}
		cut = cut[size:]
	}
	if text {
		return strings.ToValidUTF8(string(b[:min(len(b), previewBytes)]), "") + more
	}
	return "0x" + hex.EncodeToString(b[:min(len(b), previewBytes/4)]) + "…"
}

func (s *Server) item(c echo.Context) (view.ItemView, int, error) {
	ctx := c.Request().Context()
	queue := c.QueryParam("queue")
	if queue == "" {
		queue = contract.DefaultQueue
	}
	p := view.ItemView{Tenant: c.QueryParam("tenant"), ID: c.QueryParam("id"), Queue: queue}
	p.Chrome = s.chrome(c, "Find an item", view.NavItem, queue)
	p.Chrome.Refresh = 0
	if p.Tenant == "" && p.ID == "" {
		return p, http.StatusOK, nil
	}
	key := contract.ItemKey{Tenant: p.Tenant, Queue: queue, ID: p.ID}
	// A lookup that cannot be made keeps the form, filled as it was, with
	// the reason beside it: the person fixes one field instead of
	// starting over from a bare error page.
	for _, v := range []struct{ f, s string }{{"tenant", key.Tenant}, {"queue", key.Queue}, {"id", key.ID}} {
		if v.s == "" {
			p.Problem = "Give the item's " + v.f + " too: an item is found by tenant, queue and id together."
			return p, http.StatusBadRequest, nil
		}
		if err := contract.ValidateName(v.f, v.s); err != nil {
			p.Problem = err.Error()
			return p, http.StatusBadRequest, nil
		}
	}
	p.Asked = true
	info, err := s.insp(c).Item(ctx, key)
	if errors.Is(err, contract.ErrNotFound) {
		// A completed item kept for the record is read from its history
		// when the Inspector does not list it.
		if hk, ok := s.historyKeeper(); ok {
			if h, herr := hk.History(ctx, key); herr == nil {
				info, err = contract.ItemInfo{Item: h.Item}, nil
			}
		}
	}
	if errors.Is(err, contract.ErrNotFound) {
		if _, ok := s.historyKeeper(); !ok {
			p.HistoryNote = view.NoHistoryNote
		}
		return p, http.StatusNotFound, nil
	}
	if err != nil {
		return p, 0, err
	}
	it := info.Item
	p.Found = true
	p.FinishedAt = it.FinishedAt
	if err := s.itemHistory(c, &p, key); err != nil {
		return p, 0, err
	}
	p.State, p.Attempts, p.LastError = string(it.State), it.Attempts, scrub(it.LastError, s.cfg.DSN)
	p.EnqueuedAt, p.NotBefore, p.DeadAt = it.EnqueuedAt, it.NotBefore, it.DeadAt
	p.Payload, p.PayloadBytes = preview(it.Payload), len(it.Payload)
	for k, v := range it.Metadata {
		p.Metadata = append(p.Metadata, view.KV{Key: k, Value: v})
	}
	slices.SortFunc(p.Metadata, func(a, b view.KV) int { return cmp.Compare(a.Key, b.Key) })
	if info.Lease != nil {
		r := leaseRow(*info.Lease, p.Now)
		p.Lease = &r
	}
	p.Priority, p.Snoozes = it.Priority, it.Snoozes
	if w := it.Waiting; w != nil {
		p.Waiting = &view.WaitView{Signal: w.Signal, Since: w.Since, Until: w.Until}
	}
	if r := it.Resumed; r != nil {
		p.Resumed = &view.ResumeInfo{Signal: r.Signal, TimedOut: r.TimedOut, At: r.At, Payload: preview(r.Payload), PayloadBytes: len(r.Payload)}
	}
	p.CancelledAt, p.CancelReason = it.CancelledAt, it.CancelReason
	p.CancelPending = it.State == contract.StateLeased && !it.CancelledAt.IsZero()
	if s.cfg.State != nil {
		if run, err := s.cfg.State.GetRun(ctx, p.Tenant, p.ID); err == nil {
			p.Run = &view.RunInfo{Status: run.Status, Version: run.Version, Counters: run.Counters, UpdatedAt: run.UpdatedAt, DataBytes: len(run.Data),
				Fence: run.Fence, Versions: string(view.Link("/run/versions", "tenant", p.Tenant, "id", p.ID, "queue", queue))}
		}
	}
	return p, http.StatusOK, nil
}

func (s *Server) health(c echo.Context) (view.Health, int, error) {
	ctx := c.Request().Context()
	queue, err := s.queueParam(c)
	if err != nil {
		return view.Health{}, 0, err
	}
	p := view.Health{Chrome: s.chrome(c, "Health", view.NavHealth, queue), Backing: s.cfg.Backing}
	p.Chrome.Refresh = refreshOr(p.Chrome.Refresh, 10)
	h, err := s.cfg.Inspector.Health(ctx)
	// A check's value, and the details, may sum every tenant's items (a
	// table's size, memory used): a token that does not see every tenant
	// and queue sees each check's name, status and fix only.
	partial := !s.scopeOf(c).all()
	if partial {
		p.Partial = "Values, fixes and details are shown to tokens that see every tenant and queue; this one sees " + s.scopeOf(c).describe() + "."
	}
	if err != nil {
		p.Checks = append(p.Checks, view.Check{Name: "backing reachable", Value: scrub(err.Error(), s.cfg.DSN), Status: contract.HealthFail,
			Fix: "check that the server is up and that the dashboard can reach it", Source: "dashboard"})
	} else {
		if p.Backing == "" {
			p.Backing = h.Backing
		}
		for _, ck := range h.Checks {
			v, fix := scrub(ck.Value, s.cfg.DSN), ck.Fix
			if partial {
				v, fix = "—", "" // a fix may quote the values, or name another queue
			}
			p.Checks = append(p.Checks, view.Check{Name: ck.Name, Value: v, Status: ck.Status, Fix: fix, Source: h.Backing})
		}
		for k, v := range h.Details {
			if !partial {
				p.Details = append(p.Details, view.KV{Key: k, Value: scrub(v, s.cfg.DSN)})
			}
		}
		slices.SortFunc(p.Details, func(a, b view.KV) int { return cmp.Compare(a.Key, b.Key) })
	}
	sampler := s.samplerCheck()
	if partial && sampler.Status != contract.HealthOK {
		sampler.Value, sampler.Fix = "—", ""
	}
	p.Checks = append(p.Checks, sampler)
	worst := contract.Health{}
	for _, ck := range p.Checks {
		worst.Checks = append(worst.Checks, contract.HealthCheck{Status: ck.Status})
	}
	p.Status = worst.Status()
	mode := "read-only (no read-write token configured)"
	if s.auth.writable() {
		mode = "actions enabled for read-write token holders"
	}
	p.Details = append(p.Details, view.KV{Key: "dashboard mode", Value: mode})
	return p, http.StatusOK, nil
}

func (s *Server) samplerCheck() view.Check {
	at, err := s.sampler.status()
	ck := view.Check{Name: "dashboard sampler", Source: "dashboard", Status: contract.HealthOK}
	switch {
	case err != nil:
		ck.Status, ck.Value = contract.HealthWarn, scrub(err.Error(), s.cfg.DSN)
		ck.Fix = "the charts and /metrics are stale until the Inspector answers again; see the backing checks"
	case at.IsZero():
		ck.Value = "no sample yet"
	default:
		ck.Value = "last sample " + view.Ago(at, s.cfg.Clock.Now())
	}
	return ck
}
