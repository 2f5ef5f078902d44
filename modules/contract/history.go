package contract

import (
	"context"
	"fmt"
	"time"
)

// StateCompleted: the item completed and is kept for the record, under
// its queue's [Retention] or its own uniqueness window (Item.UniqueFor),
// until [HistoryKeeper.Prune] removes it. It is terminal: it is never
// claimed again. An Enqueue of its ID replaces it with the new item,
// unless the ID's uniqueness window is still open. A queue without a
// retention keeps no completed item and so never shows this state, except
// for an item that asked for a uniqueness window.
const StateCompleted ItemState = "completed"

// History bounds.
const (
	// PruneBatch is the most finished items one Prune call removes.
	PruneBatch = 1000
	// MaxFound is the most items one Find returns.
	MaxFound = 100
	// QueueEventLog is how many of a queue's latest events QueueEvents
	// can return; older ones are dropped from the queue's log (an item's
	// own events stay until its Retention.Events cap or its prune).
	QueueEventLog = 10000
	// MaxItemEvents is the largest Retention.Events.
	MaxItemEvents = 1000
	// MaxUniqueFor is the longest Item.UniqueFor and MaxRetentionAge the
	// longest Retention.Age.
	MaxUniqueFor    = 366 * 24 * time.Hour
	MaxRetentionAge = 366 * 24 * time.Hour
	// MaxRetentionCount is the largest Retention.Count.
	MaxRetentionCount = 100_000_000
)

// Retention says what a queue keeps of its finished items. The zero
// value keeps nothing, as a queue did before retention existed: a
// completed item is deleted at once (unless it asked for a uniqueness
// window), a cancelled one stays until PurgeCancelled, and no event is
// recorded.
type Retention struct {
	// Age keeps completed and cancelled items for this long after they
	// finished; Count keeps at most this many of them per queue, the
	// most recently finished. With both set an item goes when either
	// says so; with neither, completed items are not kept. Prune does
	// the removing.
	Age   time.Duration `json:"age"`
	Count int           `json:"count"`
	// Events, when positive, makes the backing record an item's
	// transitions (see EventKind) in the same write as the transition,
	// keeping its latest Events of them, and the queue's latest
	// QueueEventLog in its log. Zero records none.
	Events int `json:"events"`
}

// Keeps reports whether r keeps completed items.
func (r Retention) Keeps() bool { return r.Age > 0 || r.Count > 0 }

// Expired reports whether an item that finished at finished is past r's
// age at now (never when r has no Age).
func (r Retention) Expired(finished, now time.Time) bool {
	return r.Age > 0 && !finished.Add(r.Age).After(now)
}

// ValidateRetention checks r, naming the field and the fix.
func ValidateRetention(r Retention) error {
	switch {
	case r.Age < 0 || r.Age > MaxRetentionAge:
		return &ValidationError{Field: "retention.age", Problem: fmt.Sprintf("is %s; give 0 (no age limit) to %s", r.Age, MaxRetentionAge)}
	case r.Age > 0 && r.Age < time.Millisecond:
		return &ValidationError{Field: "retention.age", Problem: fmt.Sprintf("is %s; give at least 1ms, or 0 for no age limit", r.Age)}
	case r.Count < 0 || r.Count > MaxRetentionCount:
		return &ValidationError{Field: "retention.count", Problem: fmt.Sprintf("is %d; give 0 (no count limit) to %d", r.Count, MaxRetentionCount)}
	case r.Events < 0 || r.Events > MaxItemEvents:
		return &ValidationError{Field: "retention.events", Problem: fmt.Sprintf("is %d; give 0 (record no events) to %d", r.Events, MaxItemEvents)}
	}
	return nil
}

// ValidateUniqueFor checks Item.UniqueFor.
func ValidateUniqueFor(d time.Duration) error {
	if d < 0 || d > MaxUniqueFor {
		return &ValidationError{Field: "item.unique_for", Problem: fmt.Sprintf("is %s; give 0 (no uniqueness window) to %s", d, MaxUniqueFor)}
	}
	if d > 0 && d < time.Millisecond {
		return &ValidationError{Field: "item.unique_for", Problem: fmt.Sprintf("is %s; give at least 1ms, or 0 for no window", d)}
	}
	return nil
}

// EventKind names one transition of an item.
type EventKind string

// The events a backing records, each in the same write as its
// transition.
const (
	EventEnqueued  EventKind = "enqueued"  // NextDue: when it falls due, if delayed
	EventClaimed   EventKind = "claimed"   // Worker, Attempt (the execution, from 1), Token
	EventFailed    EventKind = "failed"    // Attempt, Error, NextDue (the retry); Worker when a worker failed it, "" when its lease expired
	EventDead      EventKind = "dead"      // Attempt, Error; Worker as for failed
	EventRequeued  EventKind = "requeued"  // back from the dead letter
	EventSnoozed   EventKind = "snoozed"   // Worker, NextDue
	EventWaiting   EventKind = "waiting"   // Worker, Signal, NextDue (the timeout)
	EventSignalled EventKind = "signalled" // Signal
	EventTimedOut  EventKind = "timed_out" // Signal: the wait that timed out
	EventCancelled EventKind = "cancelled" // Reason
	EventCompleted EventKind = "completed" // Worker, Attempt, RunTime
)

// Event is one recorded transition.
type Event struct {
	Kind EventKind `json:"kind"`
	At   time.Time `json:"at"`
	// Tenant and ID name the item in a queue's log (QueueEvents); an
	// item's own History leaves them empty.
	Tenant  string        `json:"tenant,omitempty"`
	ID      string        `json:"id,omitempty"`
	Worker  string        `json:"worker,omitempty"`
	Attempt int           `json:"attempt,omitempty"`
	Token   int64         `json:"token,omitempty"`
	Error   string        `json:"error,omitempty"`
	NextDue time.Time     `json:"next_due,omitzero"`
	Signal  string        `json:"signal,omitempty"`
	Reason  string        `json:"reason,omitempty"`
	RunTime time.Duration `json:"run_time,omitempty"` // completed: since the claim that completed it
}

// History is what is recorded of one item.
type History struct {
	Item Item `json:"item"`
	// Events are the item's recorded transitions, oldest first: the
	// latest Retention.Events of them. Dropped counts the older ones
	// the cap let go.
	Events  []Event `json:"events"`
	Dropped int64   `json:"dropped"`
	// Heartbeats counts the heartbeats its leases received while events
	// were recorded; they are counted, not listed.
	Heartbeats int64 `json:"heartbeats"`
}

// EnqueueResult is what one item's enqueue did.
type EnqueueResult struct {
	// Duplicate: the ID was already there (queued, leased, waiting, dead
	// or cancelled, or completed within its uniqueness window) and the
	// item was left as it was. State is the state it was found in.
	Duplicate bool      `json:"duplicate"`
	State     ItemState `json:"state,omitempty"`
	// UniqueUntil is when a completed duplicate's uniqueness window
	// closes, after which its ID may be enqueued again.
	UniqueUntil time.Time `json:"unique_until,omitzero"`
}

// FinishedQuery selects finished items (completed and cancelled) of one
// queue, newest first.
type FinishedQuery struct {
	Queue  string    `json:"queue"`            // "" means DefaultQueue
	Tenant string    `json:"tenant,omitempty"` // only this tenant's
	State  ItemState `json:"state,omitempty"`  // StateCompleted or StateCancelled; "" both
	ID     string    `json:"id,omitempty"`     // only items with this ID
	// Since and Until bound FinishedAt: Since ≤ FinishedAt < Until, each
	// ignored when zero.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// Page's cursor comes from a FinishedPage's Next (older items) or
	// Prev (newer ones).
	Page PageRequest `json:"-"`
}

// FinishedPage is one page of finished items, newest first: by
// FinishedAt (to the microsecond), then tenant, then ID, each
// descending. Next is the cursor of the older items past the page, ""
// when there are none; Prev the cursor of the newer items before it, ""
// on the first page. Paging is stable while items finish: a page read
// with a cursor never repeats or skips an item that was there before it.
type FinishedPage struct {
	Items []Item `json:"items"`
	Next  string `json:"next,omitempty"`
	Prev  string `json:"prev,omitempty"`
}

// EventPage is a stretch of a queue's event log, oldest first. Next is
// the cursor to read on from, never "" (a follower keeps reading from
// it); Gap reports that events were dropped from the log between the
// cursor asked for and the first event returned.
type EventPage struct {
	Events []Event `json:"events"`
	Next   string  `json:"next"`
	Gap    bool    `json:"gap,omitempty"`
}

// HistoryKeeper keeps finished items and the events of every item, under
// each queue's Retention. Every backing's queue implements it.
type HistoryKeeper interface {
	// SetRetention sets what the queue keeps. It applies to items that
	// finish, and events that happen, from then on; Prune applies a
	// shorter Age or Count to what is already kept.
	SetRetention(ctx context.Context, queue string, r Retention) error
	// Retention returns what the queue keeps (the zero Retention when
	// none was set).
	Retention(ctx context.Context, queue string) (Retention, error)
	// EnqueueReport enqueues as Enqueue does and says, item by item in
	// the order given, which were duplicates.
	EnqueueReport(ctx context.Context, items ...Item) ([]EnqueueResult, error)
	// History returns the item and its recorded events, or ErrNotFound.
	History(ctx context.Context, key ItemKey) (History, error)
	// Finished pages through the queue's finished items.
	Finished(ctx context.Context, q FinishedQuery) (FinishedPage, error)
	// Find returns the items of the queue with this ID, whatever their
	// tenant and state, at most MaxFound, by tenant.
	Find(ctx context.Context, queue, id string) ([]Item, error)
	// QueueEvents returns up to limit (1 to MaxPageSize) of the queue's
	// events recorded after the cursor ("" reads from the oldest kept).
	QueueEvents(ctx context.Context, queue, cursor string, limit int) (EventPage, error)
	// Prune removes up to PruneBatch finished items past the queue's
	// Retention and uniqueness windows, oldest first, with their events,
	// and returns how many went. It never removes a live item (queued,
	// leased, waiting or dead); call it again while it returns
	// PruneBatch.
	Prune(ctx context.Context, queue string) (int, error)
}

// AsHistoryKeeper returns q's HistoryKeeper when q keeps history.
func AsHistoryKeeper(q WorkQueue) (HistoryKeeper, bool) {
	h, ok := q.(HistoryKeeper)
	return h, ok && CapabilitiesOf(q).History
}

// ValidateFinishedQuery checks q and returns the effective page limit.
func ValidateFinishedQuery(q FinishedQuery) (int, error) {
	if err := ValidateName("queue", QueueName(q.Queue)); err != nil {
		return 0, err
	}
	if q.Tenant != "" {
		if err := ValidateName("tenant", q.Tenant); err != nil {
			return 0, err
		}
	}
	if q.ID != "" {
		if err := ValidateName("id", q.ID); err != nil {
			return 0, err
		}
	}
	switch q.State {
	case "", StateCompleted, StateCancelled:
	default:
		return 0, &ValidationError{Field: "state", Problem: fmt.Sprintf("is %q; give %q, %q or \"\" for both", q.State, StateCompleted, StateCancelled)}
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return 0, &ValidationError{Field: "until", Problem: "is not after since; give an until later than since, or leave one zero"}
	}
	return ValidatePage(q.Page)
}

// ValidateEventLimit checks QueueEvents' limit.
func ValidateEventLimit(limit int) error {
	if limit < 1 || limit > MaxPageSize {
		return &ValidationError{Field: "limit", Problem: fmt.Sprintf("is %d; ask for 1 to %d events", limit, MaxPageSize)}
	}
	return nil
}
