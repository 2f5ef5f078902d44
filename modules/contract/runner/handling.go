package runner

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// handling is a handler's context, and what it carries of the item: the
// queue, the item's queue name and tenant (for Charge), and the latest
// token of its lease, which the heartbeats move on (for Fence and Runs).
// It keeps no copy of the lease: one is made for every item a runner
// handles, and anything more would be garbage on every one.
//
// It is cancelled when its lease is lost or cancelled (with that cause),
// when the runner stops its handlers (through parent) and when the
// handler returns. The cancellation itself is made only when the handler
// asks for it (Done, context.Cause, a context derived from this one):
// until then a cancel only records its cause, and Err answers from that
// and from parent. A handler that never waits on its context, as many
// short ones do not, costs no cancel context and no registration with
// the runner's; measured on memstore, that context was a tenth of the
// runner's time per item.
type handling struct {
	parent        context.Context // the runner's context of every handler
	q             contract.WorkQueue
	queue, tenant string
	token         atomic.Int64

	// made is the item's own cancel context once made: read without
	// the lock, so Done in a handler's select loop costs what a cancel
	// context's own Done does. mu orders making it against end.
	made  atomic.Pointer[madeCtx]
	mu    sync.Mutex
	cause error // why it ended before the cancel context was made
}

type madeCtx struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newHandling(parent context.Context, q contract.WorkQueue, lease contract.Lease) *handling {
	h := &handling{parent: parent, q: q, queue: lease.Item.Queue, tenant: lease.Item.Tenant}
	h.token.Store(lease.Token)
	return h
}

// ctx returns the item's cancel context, making it on first use,
// cancelled at once with the cause of a cancel that came before.
func (h *handling) ctx() context.Context {
	if m := h.made.Load(); m != nil {
		return m.ctx
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.made.Load()
	if m == nil {
		m = &madeCtx{}
		m.ctx, m.cancel = context.WithCancelCause(h.parent)
		if h.cause != nil {
			m.cancel(h.cause)
		}
		h.made.Store(m)
	}
	return m.ctx
}

// end cancels the context with cause (context.Canceled when nil); the
// first cause stays.
func (h *handling) end(cause error) {
	h.mu.Lock()
	m := h.made.Load()
	if m == nil {
		if h.cause == nil {
			if cause == nil {
				cause = context.Canceled
			}
			h.cause = cause
		}
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	m.cancel(cause)
}

// causeNow is what context.Cause would say of the handler's context,
// read without making its cancel context when the handler never asked
// for it.
func (h *handling) causeNow() error {
	if m := h.made.Load(); m != nil {
		return context.Cause(m.ctx)
	}
	h.mu.Lock()
	c := h.cause
	h.mu.Unlock()
	if c != nil {
		return c
	}
	return context.Cause(h.parent)
}

// Deadline implements context.Context.
func (h *handling) Deadline() (time.Time, bool) { return h.parent.Deadline() }

// Done implements context.Context.
func (h *handling) Done() <-chan struct{} { return h.ctx().Done() }

// Err implements context.Context.
func (h *handling) Err() error {
	if m := h.made.Load(); m != nil {
		return m.ctx.Err()
	}
	h.mu.Lock()
	m, ended := h.made.Load(), h.cause != nil
	h.mu.Unlock()
	switch {
	case m != nil:
		return m.ctx.Err()
	case ended:
		return context.Canceled
	}
	return h.parent.Err()
}

// Value returns the handling itself for handlingKey. context.Cause's
// question goes to the item's cancel context, made for it; every other
// key to parent, as the cancel context would send it.
func (h *handling) Value(key any) any {
	if _, ok := key.(handlingKey); ok {
		return h
	}
	if cancelCtxKey == nil || key == cancelCtxKey {
		return h.ctx().Value(key)
	}
	return h.parent.Value(key)
}

// String names the context, as the context package's own types do, so
// that printing one reads none of its fields.
func (h *handling) String() string { return "runner.handlerContext" }

type handlingKey struct{}

func handlingOf(ctx context.Context) *handling {
	h, _ := ctx.Value(handlingKey{}).(*handling)
	return h
}

// cancelCtxKey is the key context.Cause asks a cancelled context's Value
// for to find the cancel context it derives from; learned once by asking
// Cause about a cancelled context that records it. Were it not learned (a context package that
// asks otherwise), every handling makes its cancel context on the first
// Value, which is correct, only slower.
var cancelCtxKey = func() any {
	p := &keyProbe{Context: context.Background()}
	_ = context.Cause(p)
	if _, ok := p.key.(*int); !ok {
		return nil
	}
	return p.key
}()

type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Err() error { return context.Canceled }

func (p *keyProbe) Value(key any) any {
	if p.key == nil {
		p.key = key
	}
	return nil
}
