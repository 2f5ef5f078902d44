package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// SnoozeError is what Snooze returns: a handler's answer that its item is
// to run again in Delay, not a failure. The runner finds it with
// errors.As, wrapped or not, and snoozes the item instead of settling it
// (see [contract.LifecycleController.Snooze]).
type SnoozeError struct {
	Delay time.Duration
}

func (e *SnoozeError) Error() string {
	return fmt.Sprintf("runner: snooze the item for %v", e.Delay)
}

// Snooze returns the error a handler returns to have its item run again
// in d, 0 to contract.MaxSnooze: the lease ends, the item is due again at
// now+d, no attempt is charged, and its Item.Snoozes goes up by one. Past
// the policy's MaxSnoozes the item goes to the dead letter instead. Over
// a queue without lifecycle controls the item is failed, with an error
// that says so.
//
// A d out of range gives a *contract.ValidationError instead, which fails
// the item like any handler error.
func Snooze(d time.Duration) error {
	if err := contract.ValidateSnooze(d); err != nil {
		return err
	}
	return &SnoozeError{Delay: d}
}

// WaitError is what WaitForSignal returns: a handler's answer that its
// item is to wait for a signal, not a failure. The runner finds it with
// errors.As, wrapped or not, and parks the item instead of settling it
// (see [contract.LifecycleController.Wait]).
type WaitError struct {
	Signal  string
	Timeout time.Duration
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("runner: wait for signal %q, at most %v", e.Signal, e.Timeout)
}

// WaitForSignal returns the error a handler returns to park its item
// until contract.LifecycleController.Signal(key, signal, payload) arrives
// or timeout (1 ms to contract.MaxWait) passes, whichever is first. The
// lease ends; the waiting item holds no worker and is charged no attempt.
// Then it is due at once, and the handler that runs it next finds
// lease.Item.Resumed saying how the wait ended (see [Resumed]). Over a
// queue without lifecycle controls the item is failed, with an error
// that says so.
//
// An empty or invalid signal name or a timeout out of range gives a
// *contract.ValidationError instead, which fails the item like any
// handler error.
func WaitForSignal(signal string, timeout time.Duration) error {
	if err := contract.ValidateWait(contract.WaitRequest{Signal: signal, Timeout: timeout}); err != nil {
		return err
	}
	return &WaitError{Signal: signal, Timeout: timeout}
}

// Resumed returns how the item's last wait for signal ended, and false
// when the item never waited for it: the signal's payload, or TimedOut
// when the wait ran out first. The Resume stays on the item until it
// waits again, so a handler that waits more than once in its item's life
// asks for the signal of the step it is at.
func Resumed(lease contract.Lease, signal string) (contract.Resume, bool) {
	r := lease.Item.Resumed
	if r == nil || r.Signal != signal {
		return contract.Resume{}, false
	}
	return *r, true
}

// snooze settles the item of a handler that returned a *SnoozeError.
func (l *queueLoop) snooze(sctx context.Context, cause error, log *slog.Logger, current contract.Lease, sn *SnoozeError) error {
	if err := contract.ValidateSnooze(sn.Delay); err != nil {
		return l.fail(sctx, cause, log, current, fmt.Errorf("runner: the handler's snooze: %w", err))
	}
	if l.rn.lc == nil {
		return l.fail(sctx, cause, log, current, l.noLifecycle("snooze the item"))
	}
	dec, err := l.rn.lc.Snooze(sctx, current, sn.Delay)
	switch {
	case err != nil:
		return err
	case dec.Retry:
		l.wakeAt(dec.At)
		log.Info("handler snoozed the item", "until", dec.At, "snoozes", current.Item.Snoozes+1)
	default:
		log.Warn("handler snoozed the item once too often: it went to the dead letter", "snoozes", current.Item.Snoozes, "reason", dec.Reason)
	}
	return nil
}

// wait settles the item of a handler that returned a *WaitError.
func (l *queueLoop) wait(sctx context.Context, cause error, log *slog.Logger, current contract.Lease, w *WaitError) error {
	req := contract.WaitRequest{Signal: w.Signal, Timeout: w.Timeout}
	if err := contract.ValidateWait(req); err != nil {
		return l.fail(sctx, cause, log, current, fmt.Errorf("runner: the handler's wait: %w", err))
	}
	if l.rn.lc == nil {
		return l.fail(sctx, cause, log, current, l.noLifecycle(fmt.Sprintf("wait for signal %q", w.Signal)))
	}
	if err := l.rn.lc.Wait(sctx, current, req); err != nil {
		return err
	}
	log.Info("handler parked the item to wait for a signal", "signal", w.Signal, "timeout", w.Timeout)
	return nil
}

// noLifecycle is what an item is failed with when its handler asked for
// a lifecycle control the queue does not have.
func (l *queueLoop) noLifecycle(what string) error {
	backing := contract.CapabilitiesOf(l.rn.r.q).Backing
	if backing == "" {
		backing = "this queue"
	} else {
		backing = "the " + backing + " queue"
	}
	return fmt.Errorf("runner: the handler asked to %s, but %s has no lifecycle controls (contract.LifecycleController), so the item is failed instead: %w",
		what, backing, errors.ErrUnsupported)
}
