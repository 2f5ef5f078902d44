package contract

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Fences and versions of runs.
//
// # Fenced writes
//
// A worker whose lease was taken back (it stalled past its expiry, the
// queue reaped it, another worker claimed the item) may still be running.
// Left alone, it can overwrite the run that the item's new holder is
// writing. A fence stops it: every write of a run may carry the lease
// token of the execution doing it (Run.Fence for PutRun, Patch.Fence for
// PatchRun, the fence argument of [RunKeeper.DeleteRunFenced]). Tokens
// increase from one claim of an item to the next, and with every
// heartbeat (a rule of [WorkQueue]), so the newer execution always holds
// the larger fence.
//
// The store keeps, with each run, the highest fence that has written it
// (Run.Fence as read back). A fenced write whose fence is lower is
// refused with a [*StaleFenceError] and writes nothing. A write whose
// fence is equal or higher lands (higher raises the stored fence). An
// unfenced write (fence 0) lands as it did before fences existed and
// leaves the stored fence as it is, unless [RunPolicy.RequireFence] is
// set: then the front refuses it with a *ValidationError before anything
// is sent.
//
// The checks run in this order, and the first that fails decides: the
// run exists (PatchRun, DeleteRunFenced; ErrNotFound), the fence, then
// PutRun's version (a *StateConflictError) or PatchRun's counters (a
// *CounterOverflowError). A fenced PutRun with Version 0 creates the run
// with its fence. Deleting a run forgets its fence with the rest of it.
//
// Fences compare tokens of one queue: write a run from the items of one
// queue (tokens of different queues are not ordered against each other).
//
// # Versions
//
// With [RunPolicy.KeepVersions] or [RunPolicy.VersionAge] set, every
// PutRun, every PatchRun that changes the status, keeps the run as it was
// before the write (Data, Status, Session, Counters, Fence, Version and
// UpdatedAt) as a version of the run, in the same step as the write. A
// patch that only adds to the counters keeps no version (the next one
// kept carries its sums). The run as it is now is its newest version:
// [RunKeeper.GetRunVersion] with the current Version returns it, and
// [RunKeeper.ListRunVersions] lists it first.
//
// A kept version stays while it is one of the run's newest KeepVersions
// kept versions and (when VersionAge is set) its UpdatedAt is younger than
// VersionAge by the store's clock. Reads never return a version past
// those bounds. Writes do the deleting, at most [VersionPruneBatch]
// versions per write, so no write's cost grows with the backlog. Each
// version is one stored value no larger than the run's MaxValueBytes.
// DeleteRun and DeleteRunFenced remove the run's versions with it.
//
// [RunKeeper.ForkRun] starts a new run from a version: the new run has
// that version's Data, Status, Session and Counters, Version 1, no fence
// and no versions of its own, and a new Seq; the source run is not
// changed.

// Bounds of run versions.
const (
	// MaxRunVersions is the largest RunPolicy.KeepVersions, and how many
	// versions a run keeps when only VersionAge is set.
	MaxRunVersions = 1000
	// MaxVersionAge is the longest RunPolicy.VersionAge.
	MaxVersionAge = 366 * 24 * time.Hour
	// VersionPruneBatch is the most kept versions one write deletes.
	VersionPruneBatch = 100
)

// RunPolicy says how a state store treats fences and versions. It is set
// when the store is opened (each backing's Settings.Runs). The zero value
// is the behaviour before fences and versions existed: unfenced writes
// land, and no version is kept.
type RunPolicy struct {
	// RequireFence refuses every PutRun, PatchRun and DeleteRun(Fenced)
	// without a fence, before anything is sent.
	RequireFence bool `json:"require_fence"`
	// KeepVersions is how many earlier versions of each run are kept
	// (0 to MaxRunVersions). 0 with VersionAge set keeps up to
	// MaxRunVersions.
	KeepVersions int `json:"keep_versions"`
	// VersionAge, when positive, drops a kept version once its UpdatedAt
	// is this old (at most MaxVersionAge).
	VersionAge time.Duration `json:"version_age"`
}

// KeepsVersions reports whether p keeps any version.
func (p RunPolicy) KeepsVersions() bool { return p.KeepVersions > 0 || p.VersionAge > 0 }

// MaxKept is how many earlier versions of a run p keeps at most: 0 when
// it keeps none.
func (p RunPolicy) MaxKept() int {
	switch {
	case p.KeepVersions > 0:
		return p.KeepVersions
	case p.VersionAge > 0:
		return MaxRunVersions
	}
	return 0
}

// ValidateRunPolicy checks p. field names the setting in the error, for
// example "Settings.Runs".
func ValidateRunPolicy(field string, p RunPolicy) error {
	if p.KeepVersions < 0 || p.KeepVersions > MaxRunVersions {
		return &ValidationError{Field: field + ".KeepVersions", Problem: fmt.Sprintf("is %d; give 0 to %d (0 keeps no versions unless VersionAge is set)", p.KeepVersions, MaxRunVersions)}
	}
	if p.VersionAge < 0 || p.VersionAge > MaxVersionAge {
		return &ValidationError{Field: field + ".VersionAge", Problem: fmt.Sprintf("is %v; give 0 (no age limit) to %v", p.VersionAge, MaxVersionAge)}
	}
	return nil
}

// ValidateFence checks a write's fence against the store's policy. field
// names it: "Run.Fence", "Patch.Fence" or "fence".
func ValidateFence(field string, fence int64, p RunPolicy) error {
	switch {
	case fence < 0:
		return &ValidationError{Field: field, Problem: fmt.Sprintf("is %d; pass the lease's Token (positive) or 0 for an unfenced write", fence)}
	case fence == 0 && p.RequireFence:
		return &ValidationError{Field: field, Problem: "is 0 and the store requires a fence (RunPolicy.RequireFence); pass the Token of the lease the write is done under (runner.Runs does it for a handler)"}
	}
	return nil
}

// ErrFenced is matched by every *StaleFenceError.
var ErrFenced = errors.New("adk: write fenced out")

// StaleFenceError is a fenced write refused because a newer execution has
// written the run: its fence is below the run's stored fence. Nothing was
// written. It is not retryable: the execution holding the lower fence has
// lost its item and should stop writing the run.
type StaleFenceError struct {
	Tenant, ID string
	Fence      int64 // the write's fence
	Stored     int64 // the run's fence when the write was refused (> Fence)
}

func (e *StaleFenceError) Error() string {
	return fmt.Sprintf("adk: run %q/%q: write fenced out, nothing written: its fence %d is below %d, the fence of a newer execution that wrote the run "+
		"(this execution's lease was taken back; stop writing the run)", e.Tenant, e.ID, e.Fence, e.Stored)
}

// Is makes errors.Is(err, ErrFenced) true.
func (e *StaleFenceError) Is(target error) bool { return target == ErrFenced }

// RunVersionPage is one page of a run's versions, newest first. Next is
// the cursor of the following (older) page, "" when this is the last.
type RunVersionPage struct {
	Versions []Run
	Next     string
}

// RunKeeper is what a state store offers beyond [StateStore]: fenced
// deletes and the versions of runs (see [RunPolicy]). Every backing's
// [StateFront] has it; ask [AsRunKeeper] for it.
type RunKeeper interface {
	// DeleteRunFenced is DeleteRun under a fence: refused with a
	// *StaleFenceError, deleting nothing, when fence is below the run's.
	DeleteRunFenced(ctx context.Context, tenant, id string, fence int64) error
	// ListRunVersions pages through the run's versions, newest first:
	// the run as it is, then the kept earlier versions by descending
	// Version. Versions kept while paging appear on no later page, and
	// none still kept is skipped or repeated. ErrNotFound when the run
	// does not exist.
	ListRunVersions(ctx context.Context, tenant, id string, page PageRequest) (RunVersionPage, error)
	// GetRunVersion returns the run as it was at version (the current
	// run when version is its Version), or ErrNotFound when the run or
	// that version is not kept.
	GetRunVersion(ctx context.Context, tenant, id string, version int64) (*Run, error)
	// ForkRun creates run tenant/newID from version of run tenant/id and
	// returns it. ErrNotFound when the version is not kept (checked
	// first, so also when newID exists); a *StateConflictError
	// (Expected 0) when the version is kept and newID exists.
	ForkRun(ctx context.Context, tenant, id string, version int64, newID string) (*Run, error)
}

// AsRunKeeper returns s's RunKeeper when it has one that answers.
func AsRunKeeper(s StateStore) (RunKeeper, bool) {
	k, ok := s.(RunKeeper)
	if !ok {
		return nil, false
	}
	if r, ok := s.(interface{ KeepsRuns() bool }); ok && !r.KeepsRuns() {
		return nil, false
	}
	return k, true
}

// ValidateVersion checks a version number given to GetRunVersion or
// ForkRun.
func ValidateVersion(version int64) error {
	if version <= 0 {
		return &ValidationError{Field: "version", Problem: fmt.Sprintf("is %d; give a run version (1 or more, see ListRunVersions)", version)}
	}
	return nil
}
