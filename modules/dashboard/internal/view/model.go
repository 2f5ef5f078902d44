// Package view holds the dashboard's templ components and the page models
// they render. The same models are marshalled as the /api/ JSON twins, so a
// page and its twin never disagree; fields only a browser needs are tagged
// json:"-".
package view

import (
	"encoding/json"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Nav keys, one per page.
const (
	NavOverview = "overview"
	NavTenants  = "tenants"
	NavLeases   = "leases"
	NavDead     = "dead"
	NavItem     = "item"
	NavFairness = "fairness"
	NavHealth   = "health"
	NavLogin    = "login"
	NavAudit    = "audit"
)

// Chrome is what every page shows around its content: navigation, the
// queue selector, the sign-in state and the CSRF token for forms.
type Chrome struct {
	Title  string
	Active string
	Queue  string
	Queues []string
	// Backing names the store ("memory", "redis", "postgresql"); never a DSN.
	Backing string
	// Writable is true when a token is configured; Authed when this
	// request may mutate (session or bearer).
	Writable bool
	Authed   bool
	// Token names the token the request holds ("" for none);
	// ReadOnlyToken is true when it may not act, and Scope says what it
	// sees ("every tenant and queue", or which). AllTenants is true when
	// it sees every tenant and queue. CanSignIn is true when any token
	// is configured.
	Token         string
	ReadOnlyToken bool
	Scope         string
	AllTenants    bool
	CanSignIn     bool
	// ReadOnlyReason says why the action buttons are disabled.
	ReadOnlyReason string
	CSRF           string
	// Refresh is the live-refresh period in seconds; 0 turns it off.
	Refresh int
	Now     time.Time
	Flash   string
	Error   string
	// Lifecycle is true when the queue has lifecycle controls;
	// QueuePaused when the shown queue is paused.
	Lifecycle   bool
	QueuePaused bool
}

// CanAct reports whether mutating buttons are enabled.
func (c Chrome) CanAct() bool { return c.Writable && c.Authed }

// Totals are one queue's counts summed over its tenants.
type Totals struct {
	Queue   string `json:"queue"`
	Tenants int    `json:"tenants"`
	Ready   int64  `json:"ready"`
	Later   int64  `json:"later"`
	Leased  int64  `json:"leased"`
	Dead    int64  `json:"dead"`
	Served  int64  `json:"served"`
	// LatencySeconds is the age of the oldest ready item over all tenants.
	LatencySeconds float64 `json:"latency_seconds"`
}

// Overview is the landing page.
type Overview struct {
	Chrome       `json:"-"`
	Backing      string   `json:"backing"`
	Queues       []Totals `json:"queues"`
	Health       string   `json:"health"`
	HealthIssues int      `json:"health_issues"`
	// Rates over the sampler's last two snapshots of the selected queue.
	ClaimsPerSecond float64 `json:"claims_per_second"`
	DeadRatio       float64 `json:"dead_ratio"`
	Samples         int     `json:"samples"`
	// Range is the span the charts show ("30m", "6h", "24h").
	Range  string  `json:"range"`
	Ranges []Range `json:"-"`
	Charts []Chart `json:"charts"`
}

// Chart is an inline SVG line chart with its axes: time along the
// bottom, the value up the side from zero. Coordinates are in the SVG's
// own units; the JSON twin carries the raw points instead.
type Chart struct {
	TestID string `json:"id"`
	Title  string `json:"title"`
	// Caption explains what is drawn; Unit names the value axis.
	Caption string `json:"caption"`
	Unit    string `json:"unit"`
	Width   int    `json:"-"`
	Height  int    `json:"-"`
	// Plot is the area inside the axes.
	PlotX, PlotY, PlotW, PlotH int      `json:"-"`
	XTicks                     []Tick   `json:"-"`
	YTicks                     []Tick   `json:"-"`
	Series                     []Series `json:"series"`
	Empty                      bool     `json:"empty"`
	// Note says why a chart is empty or what its span is.
	Note string `json:"note,omitempty"`
}

// Tick is one labelled mark on an axis, at Pos along it.
type Tick struct {
	Pos   float64
	Label string
}

// Series is one line of a chart.
type Series struct {
	Name string `json:"name"`
	// Total is the queue-wide line drawn under the tenants' lines.
	Total  bool    `json:"total,omitempty"`
	Color  string  `json:"-"`
	Path   string  `json:"-"` // "x,y x,y ..." in chart coordinates
	Last   string  `json:"-"` // the latest value, formatted
	Points []Point `json:"points"`
}

// Point is one value of a series at one instant. In JSON it is the pair
// [unix milliseconds, value], which keeps a day of points small.
type Point struct {
	At    time.Time
	Value float64
}

// MarshalJSON writes the point as [unix milliseconds, value].
func (p Point) MarshalJSON() ([]byte, error) {
	return json.Marshal([2]float64{float64(p.At.UnixMilli()), p.Value})
}

// UnmarshalJSON reads the pair MarshalJSON writes.
func (p *Point) UnmarshalJSON(b []byte) error {
	var v [2]float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	p.At, p.Value = time.UnixMilli(int64(v[0])).UTC(), v[1]
	return nil
}

// Range is one span the charts can show.
type Range struct {
	Key, Label string
	Active     bool
}

// TenantRow is one tenant on the tenants page.
type TenantRow struct {
	Tenant         string  `json:"tenant"`
	Color          string  `json:"-"`
	Ready          int64   `json:"ready"`
	Later          int64   `json:"later"`
	Leased         int64   `json:"leased"`
	Dead           int64   `json:"dead"`
	Served         int64   `json:"served"`
	LatencySeconds float64 `json:"latency_seconds"`
	Latency        string  `json:"-"`
	// TurnsInWindow counts this tenant's turns among the recent turns shown.
	TurnsInWindow int `json:"turns_in_window"`
	// Waiting: the tenant has ready work but got no turn in the window.
	Waiting bool `json:"waiting"`
	// Position in the rotation order (1 = next), 0 if not in it.
	Position int `json:"position"`
	// Flow is the tenant's flow-control standing, nil on a backing that
	// does not enforce limits.
	Flow *FlowRow `json:"flow,omitempty"`
	// WaitingItems counts items waiting for a signal, Cancelled the
	// cancelled ones kept for the record; Paused: claims pass the tenant
	// over until it is resumed.
	WaitingItems int64 `json:"waiting_items"`
	Cancelled    int64 `json:"cancelled"`
	Paused       bool  `json:"paused"`
}

// TurnCell is one recent turn in the rotation strip.
type TurnCell struct {
	Tenant string    `json:"tenant"`
	ID     string    `json:"id"`
	Worker string    `json:"worker"`
	At     time.Time `json:"at"`
	Color  string    `json:"-"`
}

// Lane is one tenant's row in the turn matrix: the columns where it was
// served. A lane with ready work and no marks is a starving tenant.
type Lane struct {
	Tenant  string
	Color   string
	Ready   int64
	Columns []int
	// Starving mirrors TenantRow.Waiting.
	Starving bool
}

// Tenants is the tenants and rotation page.
type Tenants struct {
	Chrome `json:"-"`
	Queue  string   `json:"queue"`
	Order  []string `json:"order"`
	// Delayed are the tenants in Order with nothing due yet: all their
	// queued items wait for a NotBefore or a retry's backoff.
	Delayed map[string]bool `json:"-"`
	Turns   []TurnCell      `json:"recent_turns"`
	Rows    []TenantRow     `json:"tenants"`
	Lanes   []Lane          `json:"-"`
	Window  int             `json:"window"`
	// Flow is true when the backing enforces limits (each row then has
	// its standing); Held names why each held tenant is passed over.
	Flow bool              `json:"flow_enforced"`
	Held map[string]string `json:"-"`
	// Lifecycle is true when the backing has lifecycle controls (each
	// row then says whether the tenant is paused); QueuePaused when the
	// whole queue is.
	Lifecycle   bool `json:"lifecycle"`
	QueuePaused bool `json:"queue_paused"`
}

// LeaseRow is one live lease.
type LeaseRow struct {
	Tenant   string    `json:"tenant"`
	Queue    string    `json:"queue"`
	ID       string    `json:"id"`
	Worker   string    `json:"worker"`
	Attempts int       `json:"attempts"`
	Expires  time.Time `json:"expires_at"`
	// TimeLeftSeconds is negative once the lease has expired.
	TimeLeftSeconds float64 `json:"time_left_seconds"`
	TimeLeft        string  `json:"-"`
	// Expired: past expiry but not reaped yet.
	Expired bool  `json:"expired"`
	Token   int64 `json:"token"`
}

// Leases is the leases page.
type Leases struct {
	Chrome  `json:"-"`
	Queue   string     `json:"queue"`
	Leased  int64      `json:"leased_total"`
	Expired int        `json:"expired_on_page"`
	Rows    []LeaseRow `json:"leases"`
	Cursor  string     `json:"cursor"`
	Next    string     `json:"next"`
	Limit   int        `json:"limit"`
	// Offset is the index of the first row, for display.
	Offset int `json:"offset"`
}

// Filter is a dead-letter filter as the forms and the API carry it.
type Filter struct {
	Queue         string `json:"queue"`
	Tenant        string `json:"tenant,omitempty"`
	ID            string `json:"id,omitempty"`
	ErrorContains string `json:"error_contains,omitempty"`
}

// Narrowed reports whether any field beyond the queue is set.
func (f Filter) Narrowed() bool { return f.Tenant != "" || f.ID != "" || f.ErrorContains != "" }

// DeadRow is one dead letter.
type DeadRow struct {
	Tenant    string    `json:"tenant"`
	Queue     string    `json:"queue"`
	ID        string    `json:"id"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error"`
	DeadAt    time.Time `json:"dead_at"`
	Enqueued  time.Time `json:"enqueued_at"`
	// Payload is a preview: text as text, binary as hex, cut short.
	Payload      string `json:"payload_preview"`
	PayloadBytes int    `json:"payload_bytes"`
	// Pick is the row's value in a selection (tenant and id encoded).
	Pick string `json:"-"`
}

// Dead is the dead-letters page: newest first, a page at a time.
type Dead struct {
	Chrome `json:"-"`
	Filter Filter `json:"filter"`
	// Total is exactly how many letters the filter matches; QueueTotal
	// how many the queue holds in all.
	Total      int64     `json:"total"`
	QueueTotal int64     `json:"queue_total"`
	Rows       []DeadRow `json:"dead_letters"`
	// Page of Pages, newest first; Newer and Older are the cursors of the
	// pages beside this one, "" at either end.
	Page  int    `json:"page"`
	Pages int    `json:"pages"`
	Limit int    `json:"limit"`
	Newer string `json:"newer,omitempty"`
	Older string `json:"older,omitempty"`
	// NewerJump and OlderJump are the page numbers to link instead where
	// no cursor is known (beside a page reached by number); 0 for none.
	NewerJump int `json:"-"`
	OlderJump int `json:"-"`
}

// FirstRow is the 1-based number of the page's first row.
func (d Dead) FirstRow() int64 { return int64(d.Page-1)*int64(d.Limit) + 1 }

// ErrorGroup is one error and how many letters died of it.
type ErrorGroup struct {
	Error      string    `json:"error"`
	Count      int64     `json:"count"`
	Share      float64   `json:"share"` // of the letters the filter matches
	LastDeadAt time.Time `json:"last_dead_at"`
}

// DeadErrors is the dead letters of a filter grouped by error.
type DeadErrors struct {
	Chrome   `json:"-"`
	Filter   Filter       `json:"filter"`
	Total    int64        `json:"total"`
	Distinct int64        `json:"distinct_errors"`
	Groups   []ErrorGroup `json:"groups"`
}

// Picked is one letter of a selection.
type Picked struct {
	Tenant string `json:"tenant"`
	ID     string `json:"id"`
	// Dead is false when the letter has left the dead letter (or no longer
	// matches the filter) since it was selected.
	Dead bool `json:"dead"`
}

// Confirm is the step before a bulk action: what it will touch, counted.
type Confirm struct {
	Chrome `json:"-"`
	Action string `json:"action"` // requeue or purge
	Scope  string `json:"scope"`  // filter or selection
	Filter Filter `json:"filter"`
	// Count is exactly how many letters the action would touch now.
	Count  int64    `json:"count"`
	Picked []Picked `json:"selection,omitempty"`
	// Groups are the largest error groups among the letters (filter scope).
	Groups []ErrorGroup `json:"groups,omitempty"`
}

// KV is a display pair.
type KV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// ItemView is the lookup page.
type ItemView struct {
	Chrome `json:"-"`
	Tenant string `json:"tenant"`
	Queue  string `json:"queue"`
	ID     string `json:"id"`
	Asked  bool   `json:"-"`
	Found  bool   `json:"found"`
	// Problem says why the lookup could not be made (a field missing or
	// malformed); the page keeps the form beside it.
	Problem string `json:"error,omitempty"`
	// Fields of the item when found.
	State        string    `json:"state,omitempty"`
	Attempts     int       `json:"attempts"`
	LastError    string    `json:"last_error,omitempty"`
	EnqueuedAt   time.Time `json:"enqueued_at,omitzero"`
	NotBefore    time.Time `json:"not_before,omitzero"`
	DeadAt       time.Time `json:"dead_at,omitzero"`
	Payload      string    `json:"payload_preview,omitempty"`
	PayloadBytes int       `json:"payload_bytes"`
	Metadata     []KV      `json:"metadata,omitempty"`
	Lease        *LeaseRow `json:"lease,omitempty"`
	Run          *RunInfo  `json:"run,omitempty"`
	// The lifecycle fields: its priority, how often it was snoozed, what
	// it waits for (while waiting), how its last wait ended, and when and
	// why it was cancelled. CancelPending: it is leased and marked, so its
	// holder's next heartbeat or settle stops it.
	Priority      int         `json:"priority"`
	Snoozes       int         `json:"snoozes"`
	Waiting       *WaitView   `json:"waiting,omitempty"`
	Resumed       *ResumeInfo `json:"resumed,omitempty"`
	CancelledAt   time.Time   `json:"cancelled_at,omitzero"`
	CancelReason  string      `json:"cancel_reason,omitempty"`
	CancelPending bool        `json:"cancel_pending,omitempty"`
	// FinishedAt is when a completed or cancelled item finished.
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// The history: History is false on a backing that keeps none
	// (HistoryNote then says so); Events are the item's recorded
	// transitions, oldest first, Dropped the older ones its cap let go,
	// Heartbeats the heartbeats its leases received while recording.
	History     bool       `json:"history"`
	HistoryNote string     `json:"history_note,omitempty"`
	Events      []EventRow `json:"events,omitempty"`
	Dropped     int64      `json:"events_dropped"`
	Heartbeats  int64      `json:"heartbeats"`
}

// Cancellable reports whether the item page offers to cancel the item.
func (p ItemView) Cancellable() bool {
	switch p.State {
	case "queued", "waiting", "dead":
		return true
	case "leased":
		return !p.CancelPending
	}
	return false
}

// Check is one health check.
type Check struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Status string `json:"status"` // ok, warn, fail
	Fix    string `json:"fix,omitempty"`
	Source string `json:"source"` // the backing, or "dashboard"
}

// Health is the health page.
type Health struct {
	Chrome  `json:"-"`
	Backing string `json:"backing"`
	// Partial, when set, says why values, fixes and details are hidden:
	// the token does not see every tenant and queue.
	Partial string  `json:"partial,omitempty"`
	Status  string  `json:"status"`
	Checks  []Check `json:"checks"`
	Details []KV    `json:"details"`
}

// Login is the sign-in page.
type Login struct {
	Chrome
	Failed bool
}

// ErrorPage is shown for failures a page cannot recover from.
type ErrorPage struct {
	Chrome
	Code    int
	Message string
}

// RunInfo is the run of the same tenant and id, when a StateStore is given.
type RunInfo struct {
	Status    string            `json:"status"`
	Version   int64             `json:"version"`
	Counters  contract.Counters `json:"counters"`
	UpdatedAt time.Time         `json:"updated_at"`
	DataBytes int               `json:"data_bytes"`
	// Fence is the highest lease token that has written the run (0: only
	// unfenced writes have).
	Fence int64 `json:"fence,omitempty"`
	// Versions is the path of the run's versions page (its /api/ twin
	// is the same path under /api).
	Versions string `json:"versions"`
}

// FairRow compares one tenant under adk's rotation and under the FIFO
// replay of the same claims.
type FairRow struct {
	Tenant string `json:"tenant"`
	Color  string `json:"-"`
	// Queued is the tenant's ready items now.
	Queued int64 `json:"queued"`
	// AdkTurns are its claims in the window as adk served them;
	// AdkWaitSeconds the age of its oldest waiting item now.
	AdkTurns       int     `json:"adk_turns"`
	AdkWaitSeconds float64 `json:"adk_wait_seconds"`
	// FIFOTurns are its claims in the window under the replay;
	// FIFOWaitSeconds the longest any of its items waited, or would wait,
	// under FIFO; FIFOUnserved the items FIFO had still not served when
	// the replay stopped (its wait is then at least the figure given).
	FIFOTurns       int     `json:"fifo_turns"`
	FIFOWaitSeconds float64 `json:"fifo_wait_seconds"`
	FIFOUnserved    int64   `json:"fifo_unserved,omitempty"`
	// Held is why a claim would pass the tenant over now ("cap", "rate",
	// "budget"), and Until when a rate or budget hold ends: a tenant its
	// limits hold back is not starved by the rotation.
	Held  string    `json:"held,omitempty"`
	Until time.Time `json:"until,omitzero"`
}

// Fairness replays the last window of claims as a FIFO queue would have
// served them, beside how adk served them.
type Fairness struct {
	Chrome `json:"-"`
	Queue  string `json:"queue"`
	// Window is how many claims the replay covers, over WindowSeconds.
	Window        int        `json:"window"`
	WindowSeconds float64    `json:"window_seconds"`
	Adk           []TurnCell `json:"adk"`
	FIFO          []TurnCell `json:"fifo"`
	Rows          []FairRow  `json:"tenants"`
	// WithWork counts the tenants with work in the window; AdkStarved and
	// FIFOStarved those of them that got no turn in it.
	WithWork         int     `json:"tenants_with_work"`
	AdkStarved       int     `json:"adk_starved"`
	FIFOStarved      int     `json:"fifo_starved"`
	AdkWorstSeconds  float64 `json:"adk_worst_wait_seconds"`
	FIFOWorstSeconds float64 `json:"fifo_worst_wait_seconds"`
	// Flow is true when the backing enforces limits.
	Flow bool `json:"flow_enforced"`
}

// AuditEntry is one audited request: an action (requeue, purge) done,
// refused or failed, or a sign-in or sign-out. It names the token, never
// its secret.
type AuditEntry struct {
	At      time.Time `json:"at"`
	Token   string    `json:"token"` // "" when the request held none
	Client  string    `json:"client"`
	Action  string    `json:"action"`  // requeue, purge, set-limits, remove-limits, sign-in, sign-out
	Outcome string    `json:"outcome"` // done, refused, failed
	Status  int       `json:"status"`
	Filter  Filter    `json:"filter"`
	// Scope is the action's "one", "selection" or "filter" ("tenant" or
	// "default" for limits); Selected
	// the letters a selection named; Count the letters it touched.
	Scope    string `json:"scope,omitempty"`
	Selected int    `json:"selected,omitempty"`
	Count    int    `json:"count"`
	Reason   string `json:"reason,omitempty"`
	// Limits are the limits a set-limits action asked for, in one line.
	Limits string `json:"limits,omitempty"`
	// Detail is what else a lifecycle action asked for, in one line (a
	// bulk cancel's state and id prefix, a signal's name, a purge's age).
	Detail string `json:"detail,omitempty"`
}

// Audit is the audit trail page, newest first.
type Audit struct {
	Chrome  `json:"-"`
	Entries []AuditEntry `json:"entries"`
	// Keep is how many entries the trail holds at most; Own is true when
	// the token sees only its own entries.
	Keep int  `json:"keep"`
	Own  bool `json:"own_only"`
}
