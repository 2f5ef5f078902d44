package contract

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/adkit/adk/modules/policy"
)

// Lifecycle bounds.
const (
	// MinPriority and MaxPriority bound Item.Priority.
	MinPriority = -100
	MaxPriority = 100
	// MaxSnooze is the longest Snooze and MaxWait the longest wait
	// timeout.
	MaxSnooze = 366 * 24 * time.Hour
	MaxWait   = 366 * 24 * time.Hour
	// MaxReasonBytes caps a cancel's reason.
	MaxReasonBytes = 1024
)

// The states lifecycle controls add to an item's life.
const (
	// StateWaiting: the item waits for a signal (see
	// [LifecycleController.Wait]); it holds no lease and no worker.
	StateWaiting ItemState = "waiting"
	// StateCancelled: the item was cancelled. It is terminal: it is never
	// claimed again, an Enqueue of its ID leaves it as it is, and it is
	// kept, for the record, until PurgeCancelled removes it.
	StateCancelled ItemState = "cancelled"
)

// ErrCancelled is matched by every *CancelledError.
var ErrCancelled = errors.New("adk: item cancelled")

// ErrNotWaiting is matched by every *NotWaitingError.
var ErrNotWaiting = errors.New("adk: item not waiting for that signal")

// CancelledError: a heartbeat or settle presented the lease of an item
// that was cancelled while it was leased. Nothing the call asked for was
// written; the item is now cancelled (it is not retried, not completed
// and not dead-lettered). A handler seeing it should stop its work.
type CancelledError struct {
	Items []ItemKey
}

func (e *CancelledError) Error() string {
	return describeKeys("adk: cancelled while leased,", e.Items)
}

// Is makes errors.Is(err, ErrCancelled) true.
func (e *CancelledError) Is(target error) bool { return target == ErrCancelled }

// NotWaitingError: a Signal for an item that is not waiting for that
// signal (it waits for another, it was already resumed by an earlier
// signal or by its timeout, or it is in another state). Nothing changed:
// a signal is delivered to one wait exactly once.
type NotWaitingError struct {
	Key    ItemKey
	Signal string    // the signal sent
	State  ItemState // the item's state when the signal arrived
	// Waiting is the signal the item waits for, when State is waiting.
	Waiting string
}

func (e *NotWaitingError) Error() string {
	if e.State == StateWaiting {
		return fmt.Sprintf("adk: item %q/%q/%q waits for signal %q, not %q (send the signal it waits for)",
			e.Key.Tenant, e.Key.Queue, e.Key.ID, e.Waiting, e.Signal)
	}
	return fmt.Sprintf("adk: item %q/%q/%q is %s, not waiting for signal %q (a signal resumes one wait once)",
		e.Key.Tenant, e.Key.Queue, e.Key.ID, e.State, e.Signal)
}

// Is makes errors.Is(err, ErrNotWaiting) true.
func (e *NotWaitingError) Is(target error) bool { return target == ErrNotWaiting }

// WaitInfo says what a waiting item waits for: Item.Waiting while its
// state is StateWaiting.
type WaitInfo struct {
	Signal string    `json:"signal"`
	Since  time.Time `json:"since"`
	// Until is when the wait times out: the item is then due again with
	// a Resume whose TimedOut is true.
	Until time.Time `json:"until"`
}

// Resume is how an item's last wait ended: Item.Resumed on every claim
// after it, until the item waits again or ends.
type Resume struct {
	Signal   string    `json:"signal"`
	Payload  []byte    `json:"payload,omitempty"` // the signal's payload; nil on a timeout
	TimedOut bool      `json:"timed_out,omitempty"`
	At       time.Time `json:"at"` // when the signal arrived, or the wait's Until
}

// WaitRequest asks for a leased item to wait for a signal.
type WaitRequest struct {
	// Signal names what the item waits for; a Signal call with this name
	// resumes it.
	Signal string
	// Timeout is how long it waits at most, from 1 ms to MaxWait: then it
	// is due again, its Resume saying TimedOut.
	Timeout time.Duration
}

// PauseState is which parts of a queue are paused.
type PauseState struct {
	Queue string `json:"queue"`
	// Paused: the whole queue is paused.
	Paused bool `json:"paused"`
	// Tenants are the paused tenants, by name (whatever Paused says).
	Tenants []string `json:"tenants"`
}

// TenantPaused reports whether a claim would pass tenant over for a pause.
func (p PauseState) TenantPaused(tenant string) bool {
	if p.Paused {
		return true
	}
	for _, t := range p.Tenants {
		if t == tenant {
			return true
		}
	}
	return false
}

// CancelFilter selects the items a bulk cancel touches: those of Queue
// ("" means DefaultQueue) in the given State and, when set, of Tenant and
// whose ID starts with IDPrefix. State "" selects live work: queued
// (delayed or due), waiting and leased items. Dead letters are selected
// only by State StateDead; cancelled items never.
type CancelFilter struct {
	Queue    string    `json:"queue"`
	Tenant   string    `json:"tenant,omitempty"`
	State    ItemState `json:"state,omitempty"`
	IDPrefix string    `json:"id_prefix,omitempty"`
}

// Matches reports whether it is selected by f (its Queue aside).
func (f CancelFilter) Matches(it Item) bool {
	switch {
	case f.Tenant != "" && it.Tenant != f.Tenant:
		return false
	case !strings.HasPrefix(it.ID, f.IDPrefix):
		return false
	case f.State == "":
		return it.State == StateQueued || it.State == StateWaiting || it.State == StateLeased
	default:
		return it.State == f.State
	}
}

// LifecycleController is implemented by queues with lifecycle controls:
// pause and resume, cancel, snooze, and wait for a signal. Every backing
// in the kit. Everything it changes is kept by the backing as durably as
// the items themselves.
type LifecycleController interface {
	// Pause stops claims of queue's tenant, or of the whole queue when
	// tenant is "". A paused tenant keeps its place in the rotation and
	// is passed over until resumed; a paused queue claims nothing. Live
	// leases run to their end; Enqueue goes on. Pausing what is paused
	// is a no-op.
	Pause(ctx context.Context, queue, tenant string) error
	// Resume ends a pause set by Pause with the same arguments (resuming
	// the queue leaves its paused tenants paused) and wakes claimers.
	// Resuming what is not paused is a no-op.
	Resume(ctx context.Context, queue, tenant string) error
	// Paused reports what of queue is paused.
	Paused(ctx context.Context, queue string) (PauseState, error)

	// Cancel cancels one item and returns the state it was in. A queued,
	// waiting or dead item is cancelled at once. A leased one is marked:
	// the holder's next Heartbeat or settle (Complete, Fail, Snooze,
	// Wait) writes nothing, gets a *CancelledError, and the item is then
	// cancelled; a marked lease that expires is cancelled by Reap instead
	// of retried. An item already cancelled is left as it is. An unknown
	// key is ErrNotFound. reason (at most MaxReasonBytes) is kept in
	// Item.CancelReason.
	Cancel(ctx context.Context, key ItemKey, reason string) (ItemState, error)
	// CancelMatching cancels every item f selects, as Cancel would each,
	// and returns how many it cancelled or marked. It never touches an
	// item outside f.
	CancelMatching(ctx context.Context, f CancelFilter, reason string) (int, error)
	// CountMatching returns how many items CancelMatching with f would
	// touch now, changing nothing: what a confirmation shows.
	CountMatching(ctx context.Context, f CancelFilter) (int, error)
	// PurgeCancelled deletes queue's cancelled items cancelled before
	// before and returns how many; their IDs may then be enqueued again.
	PurgeCancelled(ctx context.Context, queue string, before time.Time) (int, error)

	// Snooze ends the lease and puts the item back, due at now+d, with
	// no attempt charged and Item.Snoozes one higher; the policy's
	// MaxSnoozes caps it (policy.Policy.DecideSnooze), past which the
	// item goes to the dead letter. It returns the decision.
	// *LeaseLostError if the token no longer matches; *CancelledError if
	// the item was cancelled meanwhile.
	Snooze(ctx context.Context, lease Lease, d time.Duration) (policy.Decision, error)
	// Wait ends the lease and parks the item until Signal(key, w.Signal)
	// or until now+w.Timeout, whichever comes first; then it is due at
	// once, Item.Resumed saying which (and carrying the signal's
	// payload). A waiting item holds no lease, no worker and no attempt.
	// Errors as for Snooze.
	Wait(ctx context.Context, lease Lease, w WaitRequest) error
	// Signal resumes the item key if it waits for signal, handing it
	// payload (at most the backing's MaxValueBytes). A signal resumes a
	// wait exactly once: of two concurrent Signal calls for one wait one
	// resumes it and the other gets a *NotWaitingError, as does a signal
	// for an item that waits for another or does not wait. An unknown key
	// is ErrNotFound. Claimers are woken.
	Signal(ctx context.Context, key ItemKey, signal string, payload []byte) error
	// Waiting pages through queue's waiting items, longest waiting first.
	Waiting(ctx context.Context, queue string, page PageRequest) (ItemPage, error)
}

// AsLifecycleController returns q's LifecycleController when q has one.
func AsLifecycleController(q WorkQueue) (LifecycleController, bool) {
	l, ok := q.(LifecycleController)
	return l, ok && CapabilitiesOf(q).Lifecycle
}

// ValidatePriority checks Item.Priority.
func ValidatePriority(p int) error {
	if p < MinPriority || p > MaxPriority {
		return &ValidationError{Field: "Item.Priority", Problem: fmt.Sprintf("is %d; give %d to %d (higher is served first within its tenant, 0 by default)", p, MinPriority, MaxPriority)}
	}
	return nil
}

// ValidateSnooze checks a snooze's delay.
func ValidateSnooze(d time.Duration) error {
	if d < 0 || d > MaxSnooze {
		return &ValidationError{Field: "snooze", Problem: fmt.Sprintf("is %v; give 0 (due at once) to %v", d, MaxSnooze)}
	}
	return nil
}

// ValidateWait checks a wait request.
func ValidateWait(w WaitRequest) error {
	if err := ValidateName("WaitRequest.Signal", w.Signal); err != nil {
		return err
	}
	if w.Timeout < time.Millisecond || w.Timeout > MaxWait {
		return &ValidationError{Field: "WaitRequest.Timeout", Problem: fmt.Sprintf("is %v; give how long to wait at most, 1ms to %v", w.Timeout, MaxWait)}
	}
	return nil
}

// ValidateReason checks a cancel's reason: at most MaxReasonBytes of
// valid UTF-8 without NUL bytes; it may be empty.
func ValidateReason(reason string) error {
	if reason == "" {
		return nil
	}
	if len(reason) > MaxReasonBytes {
		return &ValidationError{Field: "reason", Problem: fmt.Sprintf("is %d bytes; keep it to %d", len(reason), MaxReasonBytes)}
	}
	return ValidateName("reason", reason)
}

// ValidateCancelFilter checks a bulk cancel's filter, its Queue filled in.
func ValidateCancelFilter(f CancelFilter) error {
	if err := ValidateName("CancelFilter.Queue", f.Queue); err != nil {
		return err
	}
	if f.Tenant != "" {
		if err := ValidateName("CancelFilter.Tenant", f.Tenant); err != nil {
			return err
		}
	}
	switch f.State {
	case "", StateQueued, StateWaiting, StateLeased, StateDead:
	default:
		return &ValidationError{Field: "CancelFilter.State", Problem: fmt.Sprintf("is %q; give \"\" (live work), queued, waiting, leased or dead", f.State)}
	}
	if len(f.IDPrefix) > MaxNameBytes {
		return &ValidationError{Field: "CancelFilter.IDPrefix", Problem: fmt.Sprintf("is %d bytes; keep it to %d", len(f.IDPrefix), MaxNameBytes)}
	}
	if f.IDPrefix != "" {
		if err := ValidateName("CancelFilter.IDPrefix", f.IDPrefix); err != nil {
			return err
		}
	}
	return nil
}

// SnoozeLimitText is the LastError of an item dead-lettered because its
// snoozes reached the policy's cap.
func SnoozeLimitText(snoozes int) string {
	return fmt.Sprintf("adk: snoozed %d times, the policy's MaxSnoozes; the item went to the dead letter", snoozes)
}

// SettleError is the error of a batch settle: nil when every lease was
// settled, a *LeaseLostError naming the lost, a *CancelledError naming the
// cancelled, or both joined (errors.As finds either) when there were both.
func SettleError(lost, cancelled []ItemKey) error {
	switch {
	case lost == nil && cancelled == nil:
		return nil
	case cancelled == nil:
		return &LeaseLostError{Items: lost}
	case lost == nil:
		return &CancelledError{Items: cancelled}
	}
	return errors.Join(&LeaseLostError{Items: lost}, &CancelledError{Items: cancelled})
}
