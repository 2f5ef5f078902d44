package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/adkit/adk/modules/contract"
)

// Handler does the work of one claimed item. Returning nil completes the
// item; returning an error fails it, and the queue's policy decides
// whether it is retried or dead-lettered (wrap the error with
// policy.Permanent to dead-letter it at once). A panic counts as an error.
// Two errors are answers rather than failures: Snooze(d) puts the item
// back for d without charging an attempt, and WaitForSignal(s, t) parks
// it until signal s or t passes; the handler that runs it next reads
// lease.Item.Resumed (or [Resumed]) for the signal's payload.
//
// The runner owns the lease: it heartbeats it while the handler runs and
// settles it afterwards, so a handler never calls Complete, Fail or
// Heartbeat itself. The lease's Token is the one the claim issued; every
// heartbeat issues a new one, and the runner settles with the latest,
// which [Fence](ctx) returns. A handler that writes its run should write
// it through [Runs](ctx, store): its writes then carry that token as
// their fence, and once the lease is taken back and a newer execution
// has written the run, this one's writes are refused (a
// *contract.StaleFenceError) instead of overwriting it. ctx is cancelled when the lease is
// lost (the cause is the *contract.LeaseLostError), when the item is
// cancelled (the cause is the *contract.CancelledError, which
// errors.Is(cause, contract.ErrCancelled) matches; the runner then writes
// nothing more for the item, whatever the handler returns) or when a
// shutdown's grace period runs out (the cause is ErrGraceExpired); a
// handler should return promptly then.
type Handler func(ctx context.Context, lease contract.Lease) error

// Middleware wraps a handler, for example in a tracing span or with a
// timeout. queue is the queue the runner works on.
type Middleware func(queue string, next Handler) Handler

// ErrGraceExpired is the cause of a handler context cancelled because the
// runner was stopped and the grace period ran out.
var ErrGraceExpired = errors.New("runner: stopped, and the grace period ended before the handler returned")

// PanicError is what a handler's panic becomes: the item is failed with it,
// so the panic value reaches the item's LastError.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the panicking goroutine's stack, for logs
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("runner: handler panicked: %v", e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
