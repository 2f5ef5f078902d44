package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/adkit/adk/modules/contract"
)

// ErrNoItem is returned by Charge called with a context that is not (and
// does not derive from) a handler's.
var ErrNoItem = errors.New("runner: Charge needs the context the runner passed the handler")

// Charge reports what the work of the handler's item cost — a model
// call's price in micros and its tokens — against the item's tenant in
// the item's queue, where it counts toward the tenant's contract.Budget
// at once: a tenant over budget is held back from the next claim. Call it
// from a handler (or code it calls) with the handler's context, as often
// as the work spends; usage of zero is a no-op. It fails with
// errors.ErrUnsupported when the queue does not enforce limits and with
// a *contract.ValidationError for negative usage.
func Charge(ctx context.Context, u contract.Usage) error {
	c := handlingOf(ctx)
	if c == nil {
		return ErrNoItem
	}
	fc, ok := contract.AsFlowController(c.q)
	if !ok {
		return fmt.Errorf("runner: the queue does not enforce limits, so it keeps no usage: %w", errors.ErrUnsupported)
	}
	return fc.Charge(ctx, c.queue, c.tenant, u)
}
