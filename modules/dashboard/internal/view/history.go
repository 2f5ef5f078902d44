package view

import (
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Nav keys of the history pages.
const (
	NavFinished = "finished"
	NavEvents   = "events"
	NavFind     = "find"
)

// NoHistoryNote is what the pages say on a backing whose queue keeps no
// history.
const NoHistoryNote = "This backing keeps no history: finished items, event timelines, retention and find by id alone cannot be used here."

// NoEventsNote is what the pages say of a queue whose retention records
// no events.
const NoEventsNote = "This queue records no events: set its retention's events above 0 on the queue's controls page to record them from now on."

// EventRow is one recorded transition of an item, as the timeline and
// the queue's event log show it.
type EventRow struct {
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
	// Tenant and ID name the item in the queue's log; the item's own
	// timeline leaves them empty.
	Tenant  string    `json:"tenant,omitempty"`
	ID      string    `json:"id,omitempty"`
	Worker  string    `json:"worker,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Token   int64     `json:"token,omitempty"`
	Error   string    `json:"error,omitempty"`
	NextDue time.Time `json:"next_due,omitzero"`
	Signal  string    `json:"signal,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	// RunTimeSeconds is a completion's run time since its claim.
	RunTimeSeconds float64 `json:"run_time_seconds,omitempty"`
}

// EventRowOf shows an event; scrub cleans its error text.
func EventRowOf(e contract.Event, scrub func(string) string) EventRow {
	return EventRow{Kind: string(e.Kind), At: e.At, Tenant: e.Tenant, ID: e.ID, Worker: e.Worker, Attempt: e.Attempt,
		Token: e.Token, Error: scrub(e.Error), NextDue: e.NextDue, Signal: e.Signal, Reason: e.Reason,
		RunTimeSeconds: e.RunTime.Seconds()}
}

// KindClass is the badge class of an event kind.
func KindClass(kind string) string {
	switch contract.EventKind(kind) {
	case contract.EventCompleted:
		return "st-ok"
	case contract.EventDead, contract.EventFailed:
		return "st-fail"
	case contract.EventCancelled, contract.EventTimedOut, contract.EventSnoozed, contract.EventWaiting:
		return "st-warn"
	}
	return "st-none"
}

// RunTime formats a completion's run time ("" when none).
func (r EventRow) RunTime() string {
	if r.RunTimeSeconds <= 0 {
		return ""
	}
	return Dur(time.Duration(r.RunTimeSeconds * float64(time.Second)))
}

// RetentionView is what a queue keeps of its finished items. Age is a
// Go duration ("1h0m0s"; "0s" for no age limit).
type RetentionView struct {
	Age    string `json:"age"`
	Count  int    `json:"count"`
	Events int    `json:"events"`
	// Keeps: completed items are kept (Age or Count set).
	Keeps bool `json:"keeps"`
}

// RetentionViewOf shows a retention.
func RetentionViewOf(r contract.Retention) RetentionView {
	return RetentionView{Age: r.Age.String(), Count: r.Count, Events: r.Events, Keeps: r.Keeps()}
}

// RetentionText says in words what a retention keeps.
func RetentionText(r RetentionView) string {
	if !r.Keeps && r.Events == 0 {
		return "nothing: completed items are deleted at once and no event is recorded"
	}
	s := "completed and cancelled items "
	switch {
	case !r.Keeps:
		s = "no completed item"
	case r.Age != "0s" && r.Count > 0:
		s += "for " + r.Age + ", at most " + Num(r.Count) + " of them"
	case r.Count > 0:
		s += "up to the latest " + Num(r.Count)
	default:
		s += "for " + r.Age
	}
	if r.Events > 0 {
		s += "; the latest " + Count(r.Events, "event") + " of each item"
	} else {
		s += "; no events"
	}
	return s
}

// RetentionForm is the retention form's fields as typed.
type RetentionForm struct {
	Age    string
	Count  string
	Events string
}

// FinishedRow is one finished item (completed or cancelled).
type FinishedRow struct {
	Tenant       string    `json:"tenant"`
	Queue        string    `json:"queue"`
	ID           string    `json:"id"`
	State        string    `json:"state"`
	FinishedAt   time.Time `json:"finished_at"`
	EnqueuedAt   time.Time `json:"enqueued_at,omitzero"`
	Attempts     int       `json:"attempts"`
	LastError    string    `json:"last_error,omitempty"`
	CancelReason string    `json:"cancel_reason,omitempty"`
}

// FinishedFilter is the finished page's filter as the links carry it:
// Since and Until are RFC 3339 instants ("" for none).
type FinishedFilter struct {
	Tenant string `json:"tenant,omitempty"`
	State  string `json:"state,omitempty"`
	ID     string `json:"id,omitempty"`
	Since  string `json:"since,omitempty"`
	Until  string `json:"until,omitempty"`
}

// FinishedStates are the states the finished page's filter offers.
var FinishedStates = []KV{
	{"", "completed and cancelled"},
	{"completed", "completed"},
	{"cancelled", "cancelled"},
}

// Finished is the finished page: the queue's completed and cancelled
// items, newest first, a page at a time.
type Finished struct {
	Chrome `json:"-"`
	Queue  string `json:"queue"`
	// History is false on a backing that keeps none; Note then says so.
	History   bool           `json:"history"`
	Note      string         `json:"note,omitempty"`
	Retention *RetentionView `json:"retention,omitempty"`
	Filter    FinishedFilter `json:"filter"`
	Rows      []FinishedRow  `json:"items"`
	Limit     int            `json:"limit"`
	Cursor    string         `json:"cursor,omitempty"`
	// Next is the cursor of the older items, Prev of the newer ones.
	Next string `json:"next,omitempty"`
	Prev string `json:"prev,omitempty"`
}

// FoundRow is one item found by its id.
type FoundRow struct {
	Tenant     string    `json:"tenant"`
	Queue      string    `json:"queue"`
	ID         string    `json:"id"`
	State      string    `json:"state"`
	Attempts   int       `json:"attempts"`
	EnqueuedAt time.Time `json:"enqueued_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// Find is the find page: every item with one id, whatever its tenant
// and state, in one queue or all of them.
type Find struct {
	Chrome  `json:"-"`
	ID      string `json:"id"`
	InQueue string `json:"queue,omitempty"` // "" searched every queue
	History bool   `json:"history"`
	Note    string `json:"note,omitempty"`
	Asked   bool   `json:"-"`
	// Searched names the queues searched.
	Searched []string   `json:"searched"`
	Rows     []FoundRow `json:"items"`
	// Capped: a queue held more than contract.MaxFound items with the id.
	Capped bool `json:"capped,omitempty"`
}

// Events is the queue's event log: its latest events, newest first, or
// those after a cursor.
type Events struct {
	Chrome  `json:"-"`
	Queue   string `json:"queue"`
	History bool   `json:"history"`
	Note    string `json:"note,omitempty"`
	// Recording: the queue's retention records events.
	Recording bool       `json:"recording"`
	Rows      []EventRow `json:"events"`
	Limit     int        `json:"limit"`
	Cursor    string     `json:"cursor,omitempty"`
	// Next reads the events recorded after these; Gap says events after
	// the cursor were dropped from the log before they were read.
	Next string `json:"next"`
	Gap  bool   `json:"gap,omitempty"`
}
