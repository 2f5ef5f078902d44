package contract

import (
	"context"
	"encoding/json"
	"time"
)

// Counters are the accumulating numbers of a run. Every field only ever
// grows by the deltas of [StateStore.PatchRun], so concurrent patches from
// several workers all land.
type Counters struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CostMicros is the cost in millionths of the currency unit: integers
	// add exactly under concurrent increments, floats do not.
	CostMicros int64 `json:"cost_micros"`
	Iterations int64 `json:"iterations"`
	Cursor     int64 `json:"cursor"`
}

// Add returns the field-wise sum of c and d.
func (c Counters) Add(d Counters) Counters {
	return Counters{
		InputTokens:  c.InputTokens + d.InputTokens,
		OutputTokens: c.OutputTokens + d.OutputTokens,
		CostMicros:   c.CostMicros + d.CostMicros,
		Iterations:   c.Iterations + d.Iterations,
		Cursor:       c.Cursor + d.Cursor,
	}
}

// counterNames are the names of the Counters fields, in field order.
var counterNames = [5]string{"InputTokens", "OutputTokens", "CostMicros", "Iterations", "Cursor"}

func (c Counters) fields() [5]int64 {
	return [5]int64{c.InputTokens, c.OutputTokens, c.CostMicros, c.Iterations, c.Cursor}
}

// CheckPatch returns the *CounterOverflowError a patch adding d to the
// counters c of run tenant/id must be refused with, naming the first
// counter whose sum would leave the int64 range, or nil when every sum
// fits. Backings call it before they write anything.
func CheckPatch(tenant, id string, c, d Counters) error {
	cs, ds := c.fields(), d.fields()
	for i := range cs {
		if s := cs[i] + ds[i]; (ds[i] > 0 && s < cs[i]) || (ds[i] < 0 && s > cs[i]) {
			return &CounterOverflowError{Tenant: tenant, ID: id, Counter: counterNames[i], Stored: cs[i], Delta: ds[i]}
		}
	}
	return nil
}

// CounterName is the name CounterOverflowError gives the i-th counter in
// field order (0 for InputTokens, ..., 4 for Cursor), for backings whose
// server reports an overflow by position.
func CounterName(i int) string { return counterNames[i] }

// Run is the durable state of one agent run: the JSON blob its worker last
// wrote plus the counters every worker adds to.
type Run struct {
	Tenant  string `json:"tenant"`
	ID      string `json:"id"`
	Session string `json:"session,omitempty"` // optional grouping, listed by ListSessionRuns
	Status  string `json:"status,omitempty"`  // free-form, set by PutRun and PatchRun
	// Data is the blob: a JSON document, at most the backing's MaxValueBytes.
	// Empty means JSON null.
	Data json.RawMessage `json:"data,omitempty"`
	// Version is bumped by every write. PutRun must be given the stored
	// version (0 to create); a mismatch is a *StateConflictError.
	Version  int64    `json:"version"`
	Counters Counters `json:"counters"`
	// Fence is the lease token of the execution writing the run (see
	// [RunPolicy] and [StaleFenceError]); 0 writes unfenced. In a run the
	// store returns it is the highest fence that has written the run, 0
	// when only unfenced writes have.
	Fence int64 `json:"fence,omitempty"`
	// Seq is assigned by the store when the run is created and never
	// rewritten; ListRuns pages by it.
	Seq       int64     `json:"seq"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Patch is an additive change to a run: the deltas are added to its
// counters, and Status, when not empty, replaces its status. A patch never
// conflicts; it bumps the version.
type Patch struct {
	Counters Counters
	Status   string
	// Fence is the lease token of the execution doing the patch, as
	// Run.Fence is for PutRun; 0 patches unfenced.
	Fence int64
}

// PageRequest asks for one page of a listing. Cursor is the Next of the
// previous page ("" for the first); Limit is the page size (0 means
// DefaultPageSize; above MaxPageSize is an error).
type PageRequest struct {
	Cursor string
	Limit  int
}

// Page sizes accepted by the listings.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// RunPage is one page of runs in ascending Seq order. Next is the cursor of
// the following page, "" when this is the last.
type RunPage struct {
	Runs []Run
	Next string
}

// StateStore keeps runs. Every backing passes contracttest.StateStore.
//
// A store is linearizable: each call takes effect at most once, at one
// instant between its invocation and its return, and reports the state
// at that instant. That holds when a reply is lost, too. A backing that
// sends a write again after losing its reply (a cut connection, a server
// restart, a failover) recognises its own earlier application and answers
// with that application's outcome: a put does not conflict with itself, a
// patch is not added twice, and a delete that landed returns nil and does
// not remove a run created after it.
//
// A write that returns an error other than its own refusal (ErrNotFound,
// *StateConflictError, *CounterOverflowError, *ValidationError, a
// too_large *StatePersistenceError) may or may not have taken effect:
// read the run before writing it again.
type StateStore interface {
	// GetRun returns the run, or ErrNotFound.
	GetRun(ctx context.Context, tenant, id string) (*Run, error)
	// PutRun writes the run's Session, Status and Data. With Version 0 it
	// creates the run (a *StateConflictError if it exists); otherwise
	// Version must equal the stored version. Counters and Seq in the
	// argument are ignored: counters change only through PatchRun. It
	// returns the run as this put left it, with its new version. A
	// conflict reports the version stored when the check failed.
	PutRun(ctx context.Context, run Run) (*Run, error)
	// PatchRun adds the patch's counters to the run and sets its status
	// when given, returning the run as this patch left it. ErrNotFound if
	// missing. A delta that would take a counter past the int64 range
	// refuses the whole patch with a *CounterOverflowError. One field may
	// be newer than the patch: a backing answering a resent patch from
	// what it recorded of the first (a lost reply) keeps the patch's
	// version, counters and status but not a copy of the blob, so when a
	// PutRun rewrote Data in between, the Data returned is the newer one.
	PatchRun(ctx context.Context, tenant, id string, patch Patch) (*Run, error)
	// ListRuns pages through a tenant's runs by Seq. Runs updated while
	// paging are neither skipped nor repeated.
	ListRuns(ctx context.Context, tenant string, page PageRequest) (RunPage, error)
	// ListSessionRuns is ListRuns restricted to one session.
	ListSessionRuns(ctx context.Context, tenant, session string, page PageRequest) (RunPage, error)
	// DeleteRun removes the run, or returns ErrNotFound.
	DeleteRun(ctx context.Context, tenant, id string) error
}
