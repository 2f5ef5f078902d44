package contract

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotFound: the run or item does not exist.
	ErrNotFound = errors.New("adk: not found")
	// ErrEmpty: Claim found nothing due.
	ErrEmpty = errors.New("adk: queue empty")
	// ErrLeaseExpired is the cause Reap records against an expired lease.
	ErrLeaseExpired = errors.New("adk: lease expired")
	// ErrInvalid is matched by every *ValidationError.
	ErrInvalid = errors.New("adk: invalid argument")
)

// Retryable reports whether err, or an error it wraps, says that the same
// call may succeed later (it answers Retryable() bool with true).
func Retryable(err error) bool {
	var r interface{ Retryable() bool }
	return errors.As(err, &r) && r.Retryable()
}

// ValidationError is bad input refused before anything was sent or changed.
type ValidationError struct {
	Field   string // the argument or field, e.g. "Item.Tenant"
	Problem string // what is wrong with it and how to fix it
}

func (e *ValidationError) Error() string {
	return "adk: invalid " + e.Field + ": " + e.Problem
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// StateConflictError is a PutRun holding a stale version. Nothing was written.
type StateConflictError struct {
	Tenant, ID string
	Expected   int64 // the version the caller held
	// Actual is the version stored at the moment the check failed (0: the
	// run did not exist), read in the same step as the check, so it never
	// equals Expected.
	Actual int64
}

func (e *StateConflictError) Error() string {
	return fmt.Sprintf("adk: run %q/%q version conflict: expected %d, stored %d (re-read the run and apply the change again)",
		e.Tenant, e.ID, e.Expected, e.Actual)
}

// CounterOverflowError is a PatchRun refused because a delta would take a
// counter of the run past the int64 range. The patch is refused whole:
// no counter, status or version changed. It matches ErrInvalid, because
// the patch, not the store, has to change.
type CounterOverflowError struct {
	Tenant, ID string
	Counter    string // the first counter, in Counters' field order, that would overflow: "InputTokens", ..., "Cursor"
	Stored     int64  // its value when the patch was refused
	Delta      int64  // the patch's delta for it
}

func (e *CounterOverflowError) Error() string {
	return fmt.Sprintf("adk: run %q/%q: patch refused, nothing written: Counters.%s is %d and %+d would take it past the int64 range "+
		"(count in coarser units, or carry the total over to a new run)", e.Tenant, e.ID, e.Counter, e.Stored, e.Delta)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *CounterOverflowError) Is(target error) bool { return target == ErrInvalid }

// Reasons of a StatePersistenceError.
const (
	ReasonTooLarge    = "too_large"   // never retryable
	ReasonUnavailable = "unavailable" // retryable, after the backing's retry budget
)

// StatePersistenceError is a value the backing refused or could not write.
type StatePersistenceError struct {
	Reason string // ReasonTooLarge or ReasonUnavailable
	// Transient is what Retryable reports: true for unavailable.
	Transient bool
	Size      int    // for too_large: the size in bytes
	Limit     int    // for too_large: the backing's MaxValueBytes
	What      string // for too_large: "run data" or "item payload"
	Err       error
}

func (e *StatePersistenceError) Error() string {
	if e.Reason == ReasonTooLarge {
		hint := "keep large state out of the run blob"
		if strings.HasSuffix(e.What, "payload") {
			hint = "put the payload behind a claim check (claimcheck.Wrap)"
		}
		return fmt.Sprintf("adk: %s is %d bytes, over the %d-byte limit (too_large): %s", e.What, e.Size, e.Limit, hint)
	}
	if e.Err != nil {
		return "adk: state store " + e.Reason + ": " + e.Err.Error()
	}
	return "adk: state store " + e.Reason
}

func (e *StatePersistenceError) Unwrap() error { return e.Err }

// Retryable reports whether the call may succeed later.
func (e *StatePersistenceError) Retryable() bool { return e.Transient }

// TooLarge returns the error for a value of size bytes over limit.
// what names the value: "run data" or "item payload".
func TooLarge(what string, size, limit int) *StatePersistenceError {
	return &StatePersistenceError{Reason: ReasonTooLarge, What: what, Size: size, Limit: limit}
}

// QueueUnavailableError: the queue's server could not be reached within the
// retry budget. Retryable.
type QueueUnavailableError struct{ Err error }

func (e *QueueUnavailableError) Error() string {
	return "adk: queue unavailable: " + errString(e.Err)
}
func (e *QueueUnavailableError) Unwrap() error { return e.Err }

// Retryable is always true.
func (e *QueueUnavailableError) Retryable() bool { return true }

// PoolExhaustedError: no connection could be had from the client's pool in
// time. It is reported at once, never retried into: the server is fine and
// the process is over-subscribed. Size the pool to the worker count.
type PoolExhaustedError struct {
	Backing string // "redis" or "postgresql"
	Err     error
}

func (e *PoolExhaustedError) Error() string {
	return "adk: " + e.Backing + " connection pool exhausted (size the pool to the worker count): " + errString(e.Err)
}
func (e *PoolExhaustedError) Unwrap() error { return e.Err }

// Retryable is false: the kit never retries into an exhausted pool.
func (e *PoolExhaustedError) Retryable() bool { return false }

// LeaseLostError: a settle or heartbeat presented a token that no longer
// matches (the lease expired and was reaped, or another worker holds the
// item). Nothing was written for the items it names.
type LeaseLostError struct {
	Items []ItemKey
}

func (e *LeaseLostError) Error() string {
	return describeKeys("adk: lease lost for", e.Items)
}

// describeKeys is head, the number of keys, and the first five of them.
func describeKeys(head string, keys []ItemKey) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d item(s):", head, len(keys))
	for i, k := range keys {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(keys)-5)
			break
		}
		fmt.Fprintf(&b, " %q/%q/%q", k.Tenant, k.Queue, k.ID)
	}
	return b.String()
}

// SchemaError: the database schema is not what this release reads.
type SchemaError struct {
	Object string // table, column or setting, e.g. "adk_schema.version"
	Found  string
	Want   string
	Fix    string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("adk: schema: %s is %s, want %s: %s", e.Object, e.Found, e.Want, e.Fix)
}

// PreflightError: the server is configured in a way that would lose data.
type PreflightError struct {
	Setting string // e.g. "maxmemory-policy"
	Value   string
	Fix     string
}

func (e *PreflightError) Error() string {
	return fmt.Sprintf("adk: preflight: %s = %q: %s", e.Setting, e.Value, e.Fix)
}

func errString(err error) string {
	if err == nil {
		return "unknown cause"
	}
	return err.Error()
}
