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

// The lifecycle actions.
const (
	actPause          action = "pause"
	actResume         action = "resume"
	actCancel         action = "cancel"
	actCancelMatching action = "cancel-matching"
	actSignal         action = "signal"
	actPurgeCancelled action = "purge-cancelled"
)

// flashCancelMarked is the flash of a cancel that marked a leased item.
const flashCancelMarked = "cancel-marked"

// Scopes of a pause or resume: the whole queue, or one tenant.
const scopeQueue = "queue"

// lifecycleBodyMax bounds a lifecycle request's JSON body: a signal's
// payload rides in it.
const lifecycleBodyMax = 2 << 20

// PauseRequest is the JSON body of POST /api/pause and /api/resume.
// Tenant "" pauses or resumes the whole queue.
type PauseRequest struct {
	Queue  string `json:"queue"`
	Tenant string `json:"tenant,omitempty"`
}

// PauseResult answers a pause or resume with what of the queue is paused
// after it (of the tenants, those the token sees).
type PauseResult struct {
	Action string              `json:"action"`
	Queue  string              `json:"queue"`
	Tenant string              `json:"tenant,omitempty"`
	State  contract.PauseState `json:"state"`
}

// CancelRequest is the JSON body of POST /api/cancel: one item, by key.
type CancelRequest struct {
	Queue  string `json:"queue"`
	Tenant string `json:"tenant"`
	ID     string `json:"id"`
	Reason string `json:"reason,omitempty"`
}

// CancelResult answers a cancel of one item: the state it was in, and
// whether it was marked rather than cancelled (a leased item stops at its
// holder's next heartbeat or settle).
type CancelResult struct {
	Action string             `json:"action"`
	Queue  string             `json:"queue"`
	Tenant string             `json:"tenant"`
	ID     string             `json:"id"`
	Was    contract.ItemState `json:"was"`
	Marked bool               `json:"marked"`
}

// CancelMatchingRequest is the JSON body of POST /api/cancel-matching.
// With DryRun it counts what the cancel would touch, changing nothing.
type CancelMatchingRequest struct {
	Filter contract.CancelFilter `json:"filter"`
	Reason string                `json:"reason,omitempty"`
	DryRun bool                  `json:"dry_run,omitempty"`
}

// CancelMatchingResult answers a bulk cancel: how many items it cancelled
// or marked (with DryRun, how many it would).
type CancelMatchingResult struct {
	Action string                `json:"action"`
	Filter contract.CancelFilter `json:"filter"`
	DryRun bool                  `json:"dry_run"`
	Count  int                   `json:"count"`
}

// SignalRequest is the JSON body of POST /api/signal. Payload is the
// signal's payload as text (its bytes are handed to the item's next
// handler); "" sends none.
type SignalRequest struct {
	Queue   string `json:"queue"`
	Tenant  string `json:"tenant"`
	ID      string `json:"id"`
	Signal  string `json:"signal"`
	Payload string `json:"payload,omitempty"`
}

// SignalResult answers a signal that resumed its item.
type SignalResult struct {
	Action string `json:"action"`
	Queue  string `json:"queue"`
	Tenant string `json:"tenant"`
	ID     string `json:"id"`
	Signal string `json:"signal"`
}

// PurgeCancelledRequest is the JSON body of POST /api/purge-cancelled:
// the items cancelled more than OlderThan (a Go duration, "0s" for all)
// ago are deleted.
type PurgeCancelledRequest struct {
	Queue     string `json:"queue"`
	OlderThan string `json:"older_than"`
}

// PurgeCancelledResult answers a purge of cancelled items.
type PurgeCancelledResult struct {
	Action string    `json:"action"`
	Queue  string    `json:"queue"`
	Before time.Time `json:"before"`
	Count  int       `json:"count"`
}

// lifecycle is the queue's LifecycleController, when its backing has
// lifecycle controls.
func (s *Server) lifecycle() (contract.LifecycleController, bool) {
	return contract.AsLifecycleController(s.cfg.Queue)
}

func noLifecycle() error { return echo.NewHTTPError(http.StatusNotImplemented, view.NoLifecycleNote) }

// queueWide refuses a token that does not see every tenant of queue: a
// change of the whole queue is every tenant's.
func (s *Server) queueWide(c echo.Context, queue, what string) error {
	sc := s.scopeOf(c)
	if err := sc.checkQueue(queue); err != nil {
		return err
	}
	if sc.tenants != nil {
		return sc.refuse(what + " (it touches every tenant of the queue, so it needs a token that sees every tenant)")
	}
	return nil
}

// tenantScope refuses a tenant or queue outside the request's scope.
func (s *Server) tenantScope(c echo.Context, queue, tenant string) error {
	sc := s.scopeOf(c)
	if err := sc.checkQueue(queue); err != nil {
		return err
	}
	if !sc.tenantOK(tenant) {
		return sc.refuse("tenant")
	}
	return nil
}

// mayActOnQueue reports whether the request may pause, resume or purge
// the whole queue, and why not otherwise.
func (s *Server) mayActOnQueue(c echo.Context, queue string) (bool, string) {
	if !s.auth.writable() {
		return false, readOnlyReason
	}
	t := s.auth.tokenOf(c)
	switch {
	case t == nil:
		return false, "sign in with a read-write dashboard token to pause, resume or purge"
	case t.Access != ReadWrite:
		return false, "token " + quote(t.Name) + " is read-only: sign in with a read-write token to pause, resume or purge"
	}
	if err := s.queueWide(c, queue, "change of the whole queue"); err != nil {
		return false, err.Error()
	}
	return true, ""
}

func (s *Server) count(c echo.Context, a action, scope string, n int) {
	if n > 0 {
		s.metrics.actions.Add(c.Request().Context(), int64(n), metric.WithAttributes(attribute.String("action", string(a)), attribute.String("scope", scope)))
	}
	if e, ok := c.Get(ctxAudit).(*view.AuditEntry); ok {
		e.Count = n
	}
}

func validQueueTenant(queue, tenant string) (string, error) {
	queue = contract.QueueName(queue)
	if err := contract.ValidateName("queue", queue); err != nil {
		return queue, err
	}
	if tenant != "" {
		if err := contract.ValidateName("tenant", tenant); err != nil {
			return queue, err
		}
	}
	return queue, nil
}

// notFound is the 404 of an item key that names no item.
func notFound(key contract.ItemKey) error {
	return echo.NewHTTPError(http.StatusNotFound, "no item "+quote(key.ID)+" of tenant "+quote(key.Tenant)+" in queue "+quote(key.Queue)+": it was completed, purged, or never enqueued")
}

// pause pauses or resumes the queue or one tenant.
func (s *Server) pause(c echo.Context, a action, r PauseRequest) (PauseResult, error) {
	lc, ok := s.lifecycle()
	if !ok {
		return PauseResult{}, noLifecycle()
	}
	queue, err := validQueueTenant(r.Queue, r.Tenant)
	if err != nil {
		return PauseResult{}, err
	}
	if r.Tenant == "" {
		err = s.queueWide(c, queue, "pause or resume of the whole queue")
	} else {
		err = s.tenantScope(c, queue, r.Tenant)
	}
	if err != nil {
		return PauseResult{}, err
	}
	ctx := c.Request().Context()
	if a == actPause {
		err = lc.Pause(ctx, queue, r.Tenant)
	} else {
		err = lc.Resume(ctx, queue, r.Tenant)
	}
	if err != nil {
		return PauseResult{}, err
	}
	sc := scopeQueue
	if r.Tenant != "" {
		sc = scopeTenant
	}
	s.count(c, a, sc, 1)
	st, err := lc.Paused(ctx, queue)
	if err != nil {
		return PauseResult{}, err
	}
	st.Tenants = s.seenTenants(c, st.Tenants)
	return PauseResult{Action: string(a), Queue: queue, Tenant: r.Tenant, State: st}, nil
}

// seenTenants keeps the tenants the request's scope sees.
func (s *Server) seenTenants(c echo.Context, tenants []string) []string {
	sc := s.scopeOf(c)
	out := make([]string, 0, len(tenants))
	for _, t := range tenants {
		if sc.tenantOK(t) {
			out = append(out, t)
		}
	}
	return out
}

// cancelOne cancels (or marks) one item.
func (s *Server) cancelOne(c echo.Context, r CancelRequest) (CancelResult, error) {
	lc, ok := s.lifecycle()
	if !ok {
		return CancelResult{}, noLifecycle()
	}
	key := contract.ItemKey{Tenant: r.Tenant, Queue: contract.QueueName(r.Queue), ID: r.ID}
	if err := contract.ValidateItemKey(key); err != nil {
		return CancelResult{}, err
	}
	if err := contract.ValidateReason(r.Reason); err != nil {
		return CancelResult{}, err
	}
	if err := s.tenantScope(c, key.Queue, key.Tenant); err != nil {
		return CancelResult{}, err
	}
	was, err := lc.Cancel(c.Request().Context(), key, r.Reason)
	if errors.Is(err, contract.ErrNotFound) {
		return CancelResult{}, notFound(key)
	}
	if err != nil {
		return CancelResult{}, err
	}
	n := 1
	if was == contract.StateCancelled {
		n = 0
	}
	s.count(c, actCancel, scopeOne, n)
	return CancelResult{Action: string(actCancel), Queue: key.Queue, Tenant: key.Tenant, ID: key.ID, Was: was, Marked: was == contract.StateLeased}, nil
}

// cancelTargets checks a bulk cancel's filter and turns it into the
// filters the request's scope may act on: itself when it names a tenant
// of the scope (or the scope sees every tenant), one per tenant of the
// scope when it names none.
func (s *Server) cancelTargets(c echo.Context, f contract.CancelFilter) (contract.CancelFilter, []contract.CancelFilter, error) {
	f.Queue = contract.QueueName(f.Queue)
	if err := contract.ValidateCancelFilter(f); err != nil {
		return f, nil, err
	}
	sc := s.scopeOf(c)
	if err := sc.checkQueue(f.Queue); err != nil {
		return f, nil, err
	}
	if f.Tenant != "" {
		if !sc.tenantOK(f.Tenant) {
			return f, nil, sc.refuse("tenant")
		}
		return f, []contract.CancelFilter{f}, nil
	}
	if sc.tenants == nil {
		return f, []contract.CancelFilter{f}, nil
	}
	out := make([]contract.CancelFilter, 0, len(sc.tenants))
	for _, t := range sc.tenantList() {
		nf := f
		nf.Tenant = t
		out = append(out, nf)
	}
	return f, out, nil
}

// countMatching counts what a bulk cancel of f would touch now, within
// the request's scope.
func (s *Server) countMatching(c echo.Context, lc contract.LifecycleController, f contract.CancelFilter) (contract.CancelFilter, int, error) {
	f, targets, err := s.cancelTargets(c, f)
	if err != nil {
		return f, 0, err
	}
	n := 0
	for _, t := range targets {
		k, err := lc.CountMatching(c.Request().Context(), t)
		if err != nil {
			return f, 0, err
		}
		n += k
	}
	return f, n, nil
}

// cancelMatching cancels (or with DryRun counts) every item the filter
// selects within the request's scope.
func (s *Server) cancelMatching(c echo.Context, r CancelMatchingRequest) (CancelMatchingResult, error) {
	lc, ok := s.lifecycle()
	if !ok {
		return CancelMatchingResult{}, noLifecycle()
	}
	if err := contract.ValidateReason(r.Reason); err != nil {
		return CancelMatchingResult{}, err
	}
	if r.DryRun {
		f, n, err := s.countMatching(c, lc, r.Filter)
		if err != nil {
			return CancelMatchingResult{}, err
		}
		return CancelMatchingResult{Action: string(actCancelMatching), Filter: f, DryRun: true, Count: n}, nil
	}
	f, targets, err := s.cancelTargets(c, r.Filter)
	if err != nil {
		return CancelMatchingResult{}, err
	}
	n := 0
	for _, t := range targets {
		var k int
		k, err = lc.CancelMatching(c.Request().Context(), t, r.Reason)
		n += k
		if err != nil {
			break
		}
	}
	s.count(c, actCancelMatching, scopeFilter, n)
	if err != nil {
		return CancelMatchingResult{}, err
	}
	return CancelMatchingResult{Action: string(actCancelMatching), Filter: f, Count: n}, nil
}

// signal sends an item its signal. An item that does not wait for it is
// 409 with the reason, an unknown one 404; nothing changes either way.
func (s *Server) signal(c echo.Context, r SignalRequest) (SignalResult, error) {
	lc, ok := s.lifecycle()
	if !ok {
		return SignalResult{}, noLifecycle()
	}
	key := contract.ItemKey{Tenant: r.Tenant, Queue: contract.QueueName(r.Queue), ID: r.ID}
	if err := contract.ValidateItemKey(key); err != nil {
		return SignalResult{}, err
	}
	if err := contract.ValidateName("signal", r.Signal); err != nil {
		return SignalResult{}, err
	}
	if err := s.tenantScope(c, key.Queue, key.Tenant); err != nil {
		return SignalResult{}, err
	}
	var payload []byte
	if r.Payload != "" {
		payload = []byte(r.Payload)
	}
	err := lc.Signal(c.Request().Context(), key, r.Signal, payload)
	if errors.Is(err, contract.ErrNotFound) {
		return SignalResult{}, notFound(key)
	}
	if nw, ok := errors.AsType[*contract.NotWaitingError](err); ok {
		return SignalResult{}, echo.NewHTTPError(http.StatusConflict, nw.Error()+"; nothing was changed")
	}
	if err != nil {
		return SignalResult{}, err
	}
	s.count(c, actSignal, scopeOne, 1)
	return SignalResult{Action: string(actSignal), Queue: key.Queue, Tenant: key.Tenant, ID: key.ID, Signal: r.Signal}, nil
}

// olderThan reads a purge's age: a Go duration, at least 0.
func olderThan(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, &contract.ValidationError{Field: "older_than", Problem: "is " + quote(v) + "; give how long ago the items were cancelled, such as 24h or 30m (0s purges every cancelled item)"}
	}
	return d, nil
}

// purgeCancelled deletes the queue's items cancelled more than OlderThan
// ago.
func (s *Server) purgeCancelled(c echo.Context, r PurgeCancelledRequest) (PurgeCancelledResult, error) {
	lc, ok := s.lifecycle()
	if !ok {
		return PurgeCancelledResult{}, noLifecycle()
	}
	queue, err := validQueueTenant(r.Queue, "")
	if err != nil {
		return PurgeCancelledResult{}, err
	}
	d, err := olderThan(r.OlderThan)
	if err != nil {
		return PurgeCancelledResult{}, err
	}
	if err := s.queueWide(c, queue, "purge of cancelled items"); err != nil {
		return PurgeCancelledResult{}, err
	}
	before := s.cfg.Clock.Now().Add(-d)
	n, err := lc.PurgeCancelled(c.Request().Context(), queue, before)
	s.count(c, actPurgeCancelled, scopeQueue, n)
	if err != nil {
		return PurgeCancelledResult{}, err
	}
	return PurgeCancelledResult{Action: string(actPurgeCancelled), Queue: queue, Before: before, Count: n}, nil
}

// The form readers: each request as a page's form (or a script's form
// post) carries it.

func pauseFromForm(c echo.Context) PauseRequest {
	return PauseRequest{Queue: c.FormValue("queue"), Tenant: c.FormValue("tenant")}
}

func cancelFromForm(c echo.Context) CancelRequest {
	return CancelRequest{Queue: c.FormValue("queue"), Tenant: c.FormValue("tenant"), ID: c.FormValue("id"), Reason: c.FormValue("reason")}
}

func cancelMatchingFromForm(c echo.Context) CancelMatchingRequest {
	dry, _ := strconv.ParseBool(c.FormValue("dry_run"))
	return CancelMatchingRequest{
		Filter: contract.CancelFilter{Queue: c.FormValue("queue"), Tenant: c.FormValue("tenant"),
			State: contract.ItemState(c.FormValue("state")), IDPrefix: c.FormValue("id_prefix")},
		Reason: c.FormValue("reason"), DryRun: dry,
	}
}

func signalFromForm(c echo.Context) SignalRequest {
	return SignalRequest{Queue: c.FormValue("queue"), Tenant: c.FormValue("tenant"), ID: c.FormValue("id"),
		Signal: c.FormValue("signal"), Payload: c.FormValue("payload")}
}

func purgeFromForm(c echo.Context) PurgeCancelledRequest {
	return PurgeCancelledRequest{Queue: c.FormValue("queue"), OlderThan: c.FormValue("older_than")}
}

// readRequest reads a script's request: a JSON body (unknown fields
// refused), or the page's form fields.
func readRequest[T any](c echo.Context, fromForm func(echo.Context) T) (T, error) {
	var r T
	if !isJSON(c) {
		return fromForm(c), nil
	}
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, lifecycleBodyMax))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, &contract.ValidationError{Field: "body", Problem: "is not such a request: " + err.Error()}
	}
	return r, nil
}

// peekRequest reads a request for the audit entry before any check runs,
// putting a JSON body back for the handler.
func peekRequest[T any](c echo.Context, fromForm func(echo.Context) T) T {
	var r T
	if !isJSON(c) {
		return fromForm(c)
	}
	req := c.Request()
	body, err := io.ReadAll(io.LimitReader(req.Body, lifecycleBodyMax+1))
	if err != nil {
		return r
	}
	req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), req.Body))
	_ = json.Unmarshal(body, &r)
	return r
}

// describeLifecycle reads what a lifecycle action asks for, for its audit
// entry, before any check runs.
func describeLifecycle(c echo.Context, a action, e *view.AuditEntry) {
	switch a {
	case actPause, actResume:
		r := peekRequest(c, pauseFromForm)
		e.Filter = view.Filter{Queue: contract.QueueName(r.Queue), Tenant: r.Tenant}
		e.Scope = scopeQueue
		if r.Tenant != "" {
			e.Scope = scopeTenant
		}
	case actCancel:
		r := peekRequest(c, cancelFromForm)
		e.Filter = view.Filter{Queue: contract.QueueName(r.Queue), Tenant: r.Tenant, ID: r.ID}
		e.Scope = scopeOne
		e.Detail = reasonDetail(r.Reason)
	case actCancelMatching:
		r := peekRequest(c, cancelMatchingFromForm)
		e.Filter = view.Filter{Queue: contract.QueueName(r.Filter.Queue), Tenant: r.Filter.Tenant}
		e.Scope = scopeFilter
		var parts []string
		if r.DryRun {
			parts = append(parts, "dry run")
		}
		parts = append(parts, "state "+view.StateText(string(r.Filter.State)))
		if r.Filter.IDPrefix != "" {
			parts = append(parts, "id prefix "+quote(r.Filter.IDPrefix))
		}
		if d := reasonDetail(r.Reason); d != "" {
			parts = append(parts, d)
		}
		e.Detail = strings.Join(parts, ", ")
	case actSignal:
		r := peekRequest(c, signalFromForm)
		e.Filter = view.Filter{Queue: contract.QueueName(r.Queue), Tenant: r.Tenant, ID: r.ID}
		e.Scope = scopeOne
		e.Detail = "signal " + quote(r.Signal) + ", " + view.Count(len(r.Payload), "byte") + " of payload"
	case actPurgeCancelled:
		r := peekRequest(c, purgeFromForm)
		e.Filter = view.Filter{Queue: contract.QueueName(r.Queue)}
		e.Scope = scopeQueue
		e.Detail = "cancelled more than " + quote(r.OlderThan) + " ago"
	}
}

// reasonDetail is a cancel's reason for the audit entry, cut short.
func reasonDetail(reason string) string {
	if reason == "" {
		return ""
	}
	if len(reason) > 120 {
		reason = strings.ToValidUTF8(reason[:120], "") + "…"
	}
	return "reason " + quote(reason)
}

// lifecycleAPI serves a script's lifecycle action: the request read from
// JSON (or a form), the result as JSON.
func lifecycleAPI[T, R any](fromForm func(echo.Context) T, do func(echo.Context, T) (R, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		r, err := readRequest(c, fromForm)
		if err != nil {
			return err
		}
		res, err := do(c, r)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, res)
	}
}

// back is where a lifecycle form returns to: the page it was on.
func back(c echo.Context, queue, tenant, id string) string {
	switch c.FormValue("back") {
	case "tenants":
		return string(view.Link("/tenants", "queue", queue))
	case "item":
		return string(view.Link("/item", "queue", queue, "tenant", tenant, "id", id))
	case "waiting":
		return string(view.Link("/waiting", "queue", queue))
	}
	return string(view.Link("/queue", "queue", queue))
}

func (s *Server) pauseForm(a action) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := pauseFromForm(c)
		res, err := s.pause(c, a, r)
		if err != nil {
			return err
		}
		n := 0
		if r.Tenant != "" {
			n = 1
		}
		s.auth.setFlash(c, flash{Action: string(a), Count: n, Expected: -1})
		return c.Redirect(http.StatusSeeOther, back(c, res.Queue, "", ""))
	}
}

func (s *Server) cancelForm(c echo.Context) error {
	res, err := s.cancelOne(c, cancelFromForm(c))
	if err != nil {
		return err
	}
	f := flash{Action: string(actCancel), Count: 1, Expected: -1}
	switch res.Was {
	case contract.StateLeased:
		f.Action = flashCancelMarked
	case contract.StateCancelled:
		f.Count = 0
	}
	s.auth.setFlash(c, f)
	return c.Redirect(http.StatusSeeOther, string(view.Link("/item", "queue", res.Queue, "tenant", res.Tenant, "id", res.ID)))
}

// cancelMatchingForm is the confirmation step's button: it acts only when
// confirmed, and reports the count the person saw beside the count done.
func (s *Server) cancelMatchingForm(c echo.Context) error {
	if c.FormValue("confirm") != "yes" {
		return echo.NewHTTPError(http.StatusBadRequest, "confirm the cancel first: its confirmation step shows how many items it will touch")
	}
	r := cancelMatchingFromForm(c)
	r.DryRun = false
	expected := -1
	if n, err := strconv.Atoi(c.FormValue("expected")); err == nil && n >= 0 {
		expected = n
	}
	res, err := s.cancelMatching(c, r)
	if err != nil {
		return err
	}
	s.auth.setFlash(c, flash{Action: string(actCancelMatching), Count: res.Count, Expected: expected})
	return c.Redirect(http.StatusSeeOther, string(view.Link("/queue", "queue", res.Filter.Queue)))
}

func (s *Server) signalFormPost(c echo.Context) error {
	r := signalFromForm(c)
	res, err := s.signal(c, r)
	if err != nil {
		return err
	}
	s.auth.setFlash(c, flash{Action: string(actSignal), Count: 1, Expected: -1})
	return c.Redirect(http.StatusSeeOther, back(c, res.Queue, res.Tenant, res.ID))
}

func (s *Server) purgeCancelledForm(c echo.Context) error {
	res, err := s.purgeCancelled(c, purgeFromForm(c))
	if err != nil {
		return err
	}
	s.auth.setFlash(c, flash{Action: string(actPurgeCancelled), Count: res.Count, Expected: -1})
	return c.Redirect(http.StatusSeeOther, string(view.Link("/queue", "queue", res.Queue)))
}

// lifecycleMessage is the flash of a lifecycle action, "" for another.
func (f flash) lifecycleMessage() string {
	what := "Queue"
	if f.Count > 0 {
		what = "Tenant"
	}
	switch f.Action {
	case string(actPause):
		return what + " paused."
	case string(actResume):
		return what + " resumed."
	case string(actCancel):
		if f.Count == 0 {
			return "The item was already cancelled."
		}
		return "Item cancelled."
	case flashCancelMarked:
		return "Cancel asked for: the item is leased, so its holder's next heartbeat or settle stops it."
	case string(actSignal):
		return "Signal sent: the item is due again."
	case string(actPurgeCancelled):
		return "Purged " + view.Count(f.Count, "cancelled item") + "."
	case string(actCancelMatching):
		msg := "Cancelled " + view.Count(f.Count, "item") + "."
		switch {
		case f.Expected < 0 || f.Expected == f.Count:
		case f.Count < f.Expected:
			msg += " " + view.Num(f.Expected) + " when you confirmed: the others had ended or been cancelled in between."
		default:
			msg += " " + view.Num(f.Expected) + " when you confirmed: more items matching the filter arrived in between."
		}
		return msg
	}
	return ""
}
