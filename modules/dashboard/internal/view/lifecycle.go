package view

import (
	"time"
)

// Nav keys of the lifecycle pages.
const (
	NavQueue   = "queue"
	NavWaiting = "waiting"
)

// NoLifecycleNote is what the pages say on a backing whose queue has no
// lifecycle controls.
const NoLifecycleNote = "This backing has no lifecycle controls: pause, resume, cancel and signals cannot be used here."

// PausedTenant is one tenant on the queue page, with its lifecycle
// counts and whether it is paused.
type PausedTenant struct {
	Tenant    string `json:"tenant"`
	Ready     int64  `json:"ready"`
	Later     int64  `json:"later"`
	Leased    int64  `json:"leased"`
	Waiting   int64  `json:"waiting"`
	Cancelled int64  `json:"cancelled"`
	Dead      int64  `json:"dead"`
	Paused    bool   `json:"paused"`
}

// CancelForm is the bulk-cancel filter as the forms carry it.
type CancelForm struct {
	Tenant   string `json:"tenant,omitempty"`
	State    string `json:"state,omitempty"`
	IDPrefix string `json:"id_prefix,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// CancelStates are the states a bulk cancel may select, as the form
// offers them: the value and its label.
var CancelStates = []KV{
	{"", "live work (queued, waiting, leased)"},
	{"queued", "queued"},
	{"waiting", "waiting"},
	{"leased", "leased"},
	{"dead", "dead letters"},
}

// QueuePage is the queue's controls: whether it is paused, its tenants
// with their pauses, the bulk cancel and the purge of cancelled items.
type QueuePage struct {
	Chrome `json:"-"`
	Queue  string `json:"queue"`
	// Lifecycle is false on a backing without lifecycle controls; Note
	// then says so and nothing else is filled.
	Lifecycle bool   `json:"lifecycle"`
	Note      string `json:"note,omitempty"`
	Paused    bool   `json:"paused"`
	// PausedTenants are the paused tenants the request's scope sees.
	PausedTenants []string       `json:"paused_tenants"`
	Tenants       []PausedTenant `json:"tenants"`
	Waiting       int64          `json:"waiting"`
	Cancelled     int64          `json:"cancelled"`
	// CanQueue says whether the request may pause, resume or purge the
	// whole queue, and QueueReason why not.
	CanQueue    bool       `json:"-"`
	QueueReason string     `json:"-"`
	Form        CancelForm `json:"-"`
	// History is false on a backing that keeps none (HistoryNote then
	// says so); Retention is what the queue keeps. RetentionForm,
	// RetentionProblem and RetentionField bring a refused change back.
	History          bool           `json:"history"`
	HistoryNote      string         `json:"history_note,omitempty"`
	Retention        *RetentionView `json:"retention,omitempty"`
	RetentionForm    RetentionForm  `json:"-"`
	RetentionProblem string         `json:"-"`
	RetentionField   string         `json:"-"`
	// Shards is the queue's shards when its backing spreads it over more
	// than one (nil otherwise).
	Shards *ShardsPanel `json:"shards,omitempty"`
}

// CancelConfirm is the step before a bulk cancel: what it will touch,
// counted.
type CancelConfirm struct {
	Chrome   `json:"-"`
	Queue    string `json:"queue"`
	Tenant   string `json:"tenant,omitempty"`
	State    string `json:"state,omitempty"`
	IDPrefix string `json:"id_prefix,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Count is exactly how many items the cancel would touch now.
	Count int `json:"count"`
}

// StateText names a bulk cancel's state filter in words.
func StateText(state string) string {
	for _, s := range CancelStates {
		if s.Key == state {
			return s.Value
		}
	}
	return state
}

// WaitingRow is one waiting item.
type WaitingRow struct {
	Tenant   string    `json:"tenant"`
	Queue    string    `json:"queue"`
	ID       string    `json:"id"`
	Signal   string    `json:"signal"`
	Since    time.Time `json:"since"`
	Until    time.Time `json:"until"`
	Attempts int       `json:"attempts"`
	// AgeSeconds is how long it has waited; LeftSeconds how long until
	// its wait times out (negative once past, before the queue notices).
	AgeSeconds  float64 `json:"age_seconds"`
	LeftSeconds float64 `json:"left_seconds"`
	Payload     string  `json:"payload_preview,omitempty"`
}

// Waiting is the waiting page: the queue's items waiting for a signal,
// longest waiting first, a page at a time.
type Waiting struct {
	Chrome    `json:"-"`
	Queue     string       `json:"queue"`
	Lifecycle bool         `json:"lifecycle"`
	Note      string       `json:"note,omitempty"`
	Rows      []WaitingRow `json:"waiting"`
	Total     int64        `json:"waiting_total"`
	Limit     int          `json:"limit"`
	Cursor    string       `json:"cursor,omitempty"`
	Next      string       `json:"next,omitempty"`
}

// WaitText is a waiting item's time left, in words.
func WaitText(until, now time.Time) string {
	left := until.Sub(now)
	if left <= 0 {
		return "timed out " + Dur(-left) + " ago"
	}
	return Dur(left) + " left"
}

// ResumeInfo is how an item's last wait ended, as the item page shows it.
type ResumeInfo struct {
	Signal   string    `json:"signal"`
	TimedOut bool      `json:"timed_out,omitempty"`
	At       time.Time `json:"at"`
	// Payload is a preview of the signal's payload (text as text, binary
	// as hex, cut short); PayloadBytes its whole size.
	Payload      string `json:"payload_preview,omitempty"`
	PayloadBytes int    `json:"payload_bytes"`
}

// WaitView is what a waiting item waits for, as the item page shows it.
type WaitView struct {
	Signal string    `json:"signal"`
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
}
