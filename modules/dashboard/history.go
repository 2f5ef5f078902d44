package dashboard

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// The history actions.
const (
	actSetRetention action = "set-retention"
	actPrune        action = "prune"
)

// defaultFinishedPage and defaultEventsPage are how many rows the
// finished page and the event log show by default.
const (
	defaultFinishedPage = 50
	defaultEventsPage   = 100
)

// pruneRounds bounds the Prune calls one press of the button makes, each
// removing up to contract.PruneBatch items.
const pruneRounds = 10

// eventReads bounds the reads that find a queue's latest events: the
// whole log, a page of MaxPageSize at a time.
const eventReads = contract.QueueEventLog/contract.MaxPageSize + 2

// RetentionRequest is the JSON body of PUT and POST /api/retention. Age
// is a Go duration ("1h", "0s" for no age limit).
type RetentionRequest struct {
	Queue     string             `json:"queue"`
	Retention view.RetentionView `json:"retention"`
}

// RetentionResult answers a change of retention (and GET
// /api/retention): what the queue keeps now.
type RetentionResult struct {
	Action    string             `json:"action,omitempty"`
	Queue     string             `json:"queue"`
	Retention view.RetentionView `json:"retention"`
}

// PruneRequest is the JSON body of POST /api/prune.
type PruneRequest struct {
	Queue string `json:"queue"`
}

// PruneResult answers a prune: how many finished items went, and
// whether more are past the retention (prune again).
type PruneResult struct {
	Action string `json:"action"`
	Queue  string `json:"queue"`
	Count  int    `json:"count"`
	More   bool   `json:"more"`
}

// historyKeeper is the queue's HistoryKeeper, when its backing keeps
// history.
func (s *Server) historyKeeper() (contract.HistoryKeeper, bool) {
	return contract.AsHistoryKeeper(s.cfg.Queue)
}

func noHistory() error { return echo.NewHTTPError(http.StatusNotImplemented, view.NoHistoryNote) }

// scrubber cleans text a backing recorded (an error may quote the DSN).
func (s *Server) scrubber() func(string) string {
	return func(t string) string { return scrub(t, s.cfg.DSN) }
}

// itemHistory fills the item page's timeline. A backing without history
// says so; an item whose history is gone (pruned between the two reads)
// shows none.
func (s *Server) itemHistory(c echo.Context, p *view.ItemView, key contract.ItemKey) error {
	hk, ok := s.historyKeeper()
	if !ok {
		p.HistoryNote = view.NoHistoryNote
		return nil
	}
	p.History = true
	ctx := c.Request().Context()
	h, err := hk.History(ctx, key)
	if err != nil && !errors.Is(err, contract.ErrNotFound) {
		return err
	}
	p.Events = make([]view.EventRow, 0, len(h.Events))
	for _, e := range h.Events {
		p.Events = append(p.Events, view.EventRowOf(e, s.scrubber()))
	}
	p.Dropped, p.Heartbeats = h.Dropped, h.Heartbeats
	if len(h.Events) == 0 {
		if r, err := hk.Retention(ctx, key.Queue); err == nil && r.Events == 0 {
			p.HistoryNote = view.NoEventsNote
		}
	}
	return nil
}

// timeParam reads an instant from a link or a form: RFC 3339, or the
// "2006-01-02T15:04" a datetime-local input sends (taken as UTC).
func timeParam(c echo.Context, name string) (time.Time, string, error) {
	v := strings.TrimSpace(c.QueryParam(name))
	if v == "" {
		return time.Time{}, "", nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), t.UTC().Format(time.RFC3339Nano), nil
		}
	}
	return time.Time{}, v, &contract.ValidationError{Field: name, Problem: "is " + quote(v) + "; give an instant such as 2026-01-02T15:04:05Z (UTC), or leave it empty"}
}

// finishedTenant is the tenant a finished listing is narrowed to within
// the request's scope: the one asked for (which must be in it), the
// scope's only tenant, or a refusal for a scope of several when none is
// named.
func (s *Server) finishedTenant(c echo.Context, queue, tenant string) (string, error) {
	sc := s.scopeOf(c)
	if err := sc.checkQueue(queue); err != nil {
		return tenant, err
	}
	if tenant != "" {
		if !sc.tenantOK(tenant) {
			return tenant, sc.refuse("tenant")
		}
		return tenant, nil
	}
	switch ts := sc.tenantList(); {
	case ts == nil:
		return "", nil
	case len(ts) == 1:
		return ts[0], nil
	}
	return "", &contract.ValidationError{Field: "tenant", Problem: "is empty; a token of several tenants lists one tenant's finished items at a time, so name one"}
}

// finished lists the queue's finished items, newest first.
func (s *Server) finished(c echo.Context) (view.Finished, int, error) {
	queue, err := s.queueParam(c)
	if err != nil {
		return view.Finished{}, 0, err
	}
	limit, err := intParam(c, "limit", defaultFinishedPage, 1, contract.MaxPageSize)
	if err != nil {
		return view.Finished{}, 0, err
	}
	cur, err := parsePageCursor(c.QueryParam("cursor"))
	if err != nil {
		return view.Finished{}, 0, err
	}
	p := view.Finished{Chrome: s.chrome(c, "Finished", view.NavFinished, queue), Queue: queue, Limit: limit, Cursor: cur.String(), Rows: []view.FinishedRow{}}
	p.Chrome.Refresh = 0 // people page through it
	p.Filter = view.FinishedFilter{Tenant: c.QueryParam("tenant"), State: c.QueryParam("state"), ID: c.QueryParam("id")}
	since, sinceText, err := timeParam(c, "since")
	if err != nil {
		return p, 0, err
	}
	until, untilText, err := timeParam(c, "until")
	if err != nil {
		return p, 0, err
	}
	p.Filter.Since, p.Filter.Until = sinceText, untilText
	hk, ok := s.historyKeeper()
	if !ok {
		p.Note = view.NoHistoryNote
		return p, http.StatusOK, nil
	}
	p.History = true
	tenant, err := s.finishedTenant(c, queue, p.Filter.Tenant)
	if err != nil {
		return p, 0, err
	}
	q := contract.FinishedQuery{Queue: queue, Tenant: tenant, State: contract.ItemState(p.Filter.State), ID: p.Filter.ID,
		Since: since, Until: until, Page: contract.PageRequest{Cursor: cur.Backing, Limit: limit}}
	if _, err := contract.ValidateFinishedQuery(q); err != nil {
		return p, 0, err
	}
	ctx := c.Request().Context()
	page, err := hk.Finished(ctx, q)
	if err != nil {
		return p, 0, err
	}
	for _, it := range page.Items {
		p.Rows = append(p.Rows, view.FinishedRow{Tenant: it.Tenant, Queue: contract.QueueName(it.Queue), ID: it.ID, State: string(it.State),
			FinishedAt: it.FinishedAt, EnqueuedAt: it.EnqueuedAt, Attempts: it.Attempts, LastError: scrub(it.LastError, s.cfg.DSN), CancelReason: it.CancelReason})
	}
	p.Next = pageCursor{Backing: page.Next, Older: true}.String()
	p.Prev = pageCursor{Backing: page.Prev}.String()
	if r, err := hk.Retention(ctx, queue); err == nil {
		rv := view.RetentionViewOf(r)
		p.Retention = &rv
	}
	return p, http.StatusOK, nil
}

// find lists the items with one id, in the queue asked for or in every
// queue the request's scope sees.
func (s *Server) find(c echo.Context) (view.Find, int, error) {
	id := strings.TrimSpace(c.QueryParam("id"))
	in := c.QueryParam("queue")
	p := view.Find{Chrome: s.chrome(c, "Find by id", view.NavFind, in), ID: id, InQueue: in, Searched: []string{}, Rows: []view.FoundRow{}}
	p.Chrome.Refresh = 0
	hk, ok := s.historyKeeper()
	if !ok {
		p.Note = view.NoHistoryNote
		return p, http.StatusOK, nil
	}
	p.History = true
	if id == "" {
		return p, http.StatusOK, nil
	}
	if err := contract.ValidateName("id", id); err != nil {
		return p, 0, err
	}
	ctx := c.Request().Context()
	sc := s.scopeOf(c)
	queues := []string{in}
	if in != "" {
		if err := contract.ValidateName("queue", in); err != nil {
			return p, 0, err
		}
		if err := sc.checkQueue(in); err != nil {
			return p, 0, err
		}
	} else {
		qs, err := s.insp(c).Queues(ctx)
		if err != nil {
			return p, 0, err
		}
		slices.Sort(qs)
		queues = qs
	}
	p.Asked = true
	for _, q := range queues {
		items, err := hk.Find(ctx, q, id)
		if err != nil {
			return p, 0, err
		}
		p.Searched = append(p.Searched, q)
		p.Capped = p.Capped || len(items) >= contract.MaxFound
		for _, it := range items {
			if !sc.tenantOK(it.Tenant) {
				continue
			}
			p.Rows = append(p.Rows, view.FoundRow{Tenant: it.Tenant, Queue: contract.QueueName(it.Queue), ID: it.ID, State: string(it.State),
				Attempts: it.Attempts, EnqueuedAt: it.EnqueuedAt, FinishedAt: it.FinishedAt})
		}
	}
	slices.SortStableFunc(p.Rows, func(a, b view.FoundRow) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Tenant, b.Tenant))
	})
	return p, http.StatusOK, nil
}

// events shows the queue's event log: without a cursor its latest
// events, with one those recorded after it; newest first either way.
func (s *Server) events(c echo.Context) (view.Events, int, error) {
	queue, err := s.queueParam(c)
	if err != nil {
		return view.Events{}, 0, err
	}
	limit, err := intParam(c, "limit", defaultEventsPage, 1, contract.MaxPageSize)
	if err != nil {
		return view.Events{}, 0, err
	}
	cur, err := parsePageCursor(c.QueryParam("cursor"))
	if err != nil {
		return view.Events{}, 0, err
	}
	p := view.Events{Chrome: s.chrome(c, "Events", view.NavEvents, queue), Queue: queue, Limit: limit, Cursor: cur.String(), Rows: []view.EventRow{}}
	hk, ok := s.historyKeeper()
	if !ok {
		p.Note = view.NoHistoryNote
		p.Chrome.Refresh = 0
		return p, http.StatusOK, nil
	}
	p.History = true
	ctx := c.Request().Context()
	r, err := hk.Retention(ctx, queue)
	if err != nil {
		return p, 0, err
	}
	p.Recording = r.Events > 0
	if !p.Recording {
		p.Note = view.NoEventsNote
	}
	sc := s.scopeOf(c)
	var got []contract.Event
	backing := cur.Backing
	if cur.Backing != "" {
		// The events after the cursor: one read, as a follower reads.
		page, err := hk.QueueEvents(ctx, queue, backing, limit)
		if err != nil {
			return p, 0, err
		}
		got, backing, p.Gap = page.Events, page.Next, page.Gap
	} else {
		// The latest: read the log through to its end, keeping the last
		// limit events seen. The log holds at most QueueEventLog.
		for range eventReads {
			page, err := hk.QueueEvents(ctx, queue, backing, contract.MaxPageSize)
			if err != nil {
				return p, 0, err
			}
			got = append(got, page.Events...)
			if len(got) > limit {
				got = got[len(got)-limit:]
			}
			moved := page.Next != backing
			backing = page.Next
			if len(page.Events) < contract.MaxPageSize || !moved {
				break
			}
		}
	}
	p.Next = pageCursor{Backing: backing}.String()
	for i := len(got) - 1; i >= 0; i-- {
		if sc.tenantOK(got[i].Tenant) {
			p.Rows = append(p.Rows, view.EventRowOf(got[i], s.scrubber()))
		}
	}
	return p, http.StatusOK, nil
}

// queueHistory fills the queue page's retention panel.
func (s *Server) queueHistory(c echo.Context, p *view.QueuePage) error {
	hk, ok := s.historyKeeper()
	if !ok {
		p.HistoryNote = view.NoHistoryNote
		return nil
	}
	p.History = true
	r, err := hk.Retention(c.Request().Context(), p.Queue)
	if err != nil {
		return err
	}
	rv := view.RetentionViewOf(r)
	p.Retention = &rv
	p.RetentionForm = view.RetentionForm{Age: r.Age.String(), Count: strconv.Itoa(r.Count), Events: strconv.Itoa(r.Events)}
	return nil
}

// retentionOf reads a retention as the form and the API carry it.
func retentionOf(age, count, events string) (contract.Retention, error) {
	var r contract.Retention
	if age = strings.TrimSpace(age); age != "" {
		d, err := time.ParseDuration(age)
		if err != nil {
			return r, &contract.ValidationError{Field: "retention.age", Problem: "is " + quote(age) + "; give a duration such as 1h, 30m or 0s (no age limit)"}
		}
		r.Age = d
	}
	for _, f := range []struct {
		s, field string
		into     *int
	}{{count, "retention.count", &r.Count}, {events, "retention.events", &r.Events}} {
		v := strings.TrimSpace(f.s)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return r, &contract.ValidationError{Field: f.field, Problem: "is " + quote(v) + "; give a whole number, or 0"}
		}
		*f.into = int(max(min(n, 1<<31), -1<<31))
	}
	return r, nil
}

// setRetention changes what the queue keeps after every check: the
// backing keeps history, the queue's name is valid, the token sees every
// tenant of the queue, and the contract accepts the retention.
func (s *Server) setRetention(c echo.Context, queue string, r contract.Retention) (RetentionResult, error) {
	hk, ok := s.historyKeeper()
	if !ok {
		return RetentionResult{}, noHistory()
	}
	queue, err := validQueueTenant(queue, "")
	if err != nil {
		return RetentionResult{}, err
	}
	if err := s.queueWide(c, queue, "change of retention"); err != nil {
		return RetentionResult{}, err
	}
	if err := contract.ValidateRetention(r); err != nil {
		return RetentionResult{}, err
	}
	ctx := c.Request().Context()
	if err := hk.SetRetention(ctx, queue, r); err != nil {
		return RetentionResult{}, err
	}
	s.count(c, actSetRetention, scopeQueue, 1)
	got, err := hk.Retention(ctx, queue)
	if err != nil {
		return RetentionResult{}, err
	}
	return RetentionResult{Action: string(actSetRetention), Queue: queue, Retention: view.RetentionViewOf(got)}, nil
}

// prune removes the queue's finished items past its retention, up to
// pruneRounds batches.
func (s *Server) prune(c echo.Context, r PruneRequest) (PruneResult, error) {
	hk, ok := s.historyKeeper()
	if !ok {
		return PruneResult{}, noHistory()
	}
	queue, err := validQueueTenant(r.Queue, "")
	if err != nil {
		return PruneResult{}, err
	}
	if err := s.queueWide(c, queue, "prune"); err != nil {
		return PruneResult{}, err
	}
	res := PruneResult{Action: string(actPrune), Queue: queue}
	for range pruneRounds {
		n, err := hk.Prune(c.Request().Context(), queue)
		res.Count += n
		if err != nil {
			s.count(c, actPrune, scopeQueue, res.Count)
			return PruneResult{}, err
		}
		res.More = n >= contract.PruneBatch
		if !res.More {
			break
		}
	}
	s.count(c, actPrune, scopeQueue, res.Count)
	return res, nil
}

// retentionAPI answers GET /api/retention: what the queue keeps.
func (s *Server) retentionAPI(c echo.Context) error {
	hk, ok := s.historyKeeper()
	if !ok {
		return noHistory()
	}
	queue, err := s.queueParam(c)
	if err != nil {
		return err
	}
	r, err := hk.Retention(c.Request().Context(), queue)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, RetentionResult{Queue: queue, Retention: view.RetentionViewOf(r)})
}

func retentionFromForm(c echo.Context) RetentionRequest {
	return RetentionRequest{Queue: c.FormValue("queue"), Retention: view.RetentionView{Age: c.FormValue("age")}}
}

// setRetentionAPI handles scripts: PUT or POST a RetentionRequest (JSON,
// or the page's form fields).
func (s *Server) setRetentionAPI(c echo.Context) error {
	var r contract.Retention
	var queue string
	if isJSON(c) {
		req, err := readRequest(c, retentionFromForm)
		if err != nil {
			return err
		}
		queue = req.Queue
		if r, err = retentionOf(req.Retention.Age, strconv.Itoa(req.Retention.Count), strconv.Itoa(req.Retention.Events)); err != nil {
			return err
		}
	} else {
		var err error
		queue = c.FormValue("queue")
		if r, err = retentionOf(c.FormValue("age"), c.FormValue("count"), c.FormValue("events")); err != nil {
			return err
		}
	}
	res, err := s.setRetention(c, queue, r)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// retentionFormPost handles the queue page's retention form. A retention
// the contract refuses brings the page back with the form as it was
// sent and the refusal beside the field; nothing is changed.
func (s *Server) retentionFormPost(c echo.Context) error {
	queue := contract.QueueName(c.FormValue("queue"))
	ff := view.RetentionForm{Age: strings.TrimSpace(c.FormValue("age")), Count: strings.TrimSpace(c.FormValue("count")), Events: strings.TrimSpace(c.FormValue("events"))}
	r, err := retentionOf(ff.Age, ff.Count, ff.Events)
	if err == nil {
		_, err = s.setRetention(c, queue, r)
	}
	if ve, ok := errors.AsType[*contract.ValidationError](err); ok && strings.HasPrefix(ve.Field, "retention.") {
		c.QueryParams().Set("queue", queue)
		p, _, berr := s.queuePage(c)
		if berr != nil {
			return berr
		}
		p.RetentionForm, p.RetentionProblem, p.RetentionField = ff, err.Error()+".", strings.TrimPrefix(ve.Field, "retention.")
		if e, ok := c.Get(ctxAudit).(*view.AuditEntry); ok {
			e.Outcome, e.Status, e.Reason = auditRefused, http.StatusBadRequest, err.Error()
		}
		return s.render(c, http.StatusBadRequest, view.QueueView(p))
	}
	if err != nil {
		return err
	}
	s.auth.setFlash(c, flash{Action: string(actSetRetention), Count: 1, Expected: -1})
	return c.Redirect(http.StatusSeeOther, string(view.Link("/queue", "queue", queue)))
}

func pruneFromForm(c echo.Context) PruneRequest { return PruneRequest{Queue: c.FormValue("queue")} }

func (s *Server) pruneForm(c echo.Context) error {
	res, err := s.prune(c, pruneFromForm(c))
	if err != nil {
		return err
	}
	f := flash{Action: string(actPrune), Count: res.Count, Expected: -1}
	if res.More {
		f.Expected = res.Count + 1 // more are left: the message says so
	}
	s.auth.setFlash(c, f)
	return c.Redirect(http.StatusSeeOther, string(view.Link("/queue", "queue", res.Queue)))
}

// historyMessage is the flash of a history action, "" for another.
func (f flash) historyMessage() string {
	switch f.Action {
	case string(actSetRetention):
		return "Retention saved."
	case string(actPrune):
		msg := "Pruned " + view.Count(f.Count, "finished item") + "."
		if f.Expected > f.Count {
			msg += " More are past the retention: prune again."
		}
		return msg
	}
	return ""
}

// describeHistory reads what a history action asks for, for its audit
// entry, before any check runs.
func describeHistory(c echo.Context, a action, e *view.AuditEntry) {
	e.Scope = scopeQueue
	switch a {
	case actSetRetention:
		if isJSON(c) {
			r := peekRequest(c, retentionFromForm)
			e.Filter = view.Filter{Queue: contract.QueueName(r.Queue)}
			e.Detail = "age " + quote(r.Retention.Age) + ", count " + strconv.Itoa(r.Retention.Count) + ", events " + strconv.Itoa(r.Retention.Events)
			return
		}
		e.Filter = view.Filter{Queue: contract.QueueName(c.FormValue("queue"))}
		e.Detail = "age " + quote(c.FormValue("age")) + ", count " + quote(c.FormValue("count")) + ", events " + quote(c.FormValue("events"))
	case actPrune:
		r := peekRequest(c, pruneFromForm)
		e.Filter = view.Filter{Queue: contract.QueueName(r.Queue)}
	}
}
