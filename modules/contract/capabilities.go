package contract

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/adkit/adk/modules/policy"
)

// Capabilities says which optional interfaces a queue can serve and which
// backing is behind it. A wrapper has every optional method, so that it
// needs no type per combination; it reports the capabilities of what it
// wraps, and callers ask [CapabilitiesOf] (or [AsInspector], [AsWaker],
// [AsStatsSource], [AsCompleteClaimer]) instead of asserting the type.
type Capabilities struct {
	Inspector        bool // Inspector's methods answer
	Waker            bool // Subscribe signals when work may be ready
	Stats            bool // Stats reports the backing's counters
	CompleteAndClaim bool // CompleteAndClaim saves a round trip
	Flow             bool // limits are enforced in the claim (FlowController)
	Lifecycle        bool // pause, cancel, snooze and signals (LifecycleController)
	History          bool // retention, events, uniqueness windows and Find (HistoryKeeper)
	// Backing names the backing as its Health does ("memory", "redis",
	// "postgresql"), "" when not known without asking.
	Backing string
}

// CapabilitiesReporter is implemented by queues that say what they can do:
// every backing's [QueueFront] and every wrapper in the kit.
type CapabilitiesReporter interface {
	Capabilities() Capabilities
}

// CapabilitiesOf returns what q can do: its own report when it makes one,
// otherwise what its methods show (a queue written without a report has
// a capability exactly when it has its interface) and the Backing of the
// queue its Unwrap method returns, if it has one.
func CapabilitiesOf(q WorkQueue) Capabilities {
	if r, ok := q.(CapabilitiesReporter); ok {
		return r.Capabilities()
	}
	_, ins := q.(Inspector)
	_, wk := q.(Waker)
	_, st := q.(StatsSource)
	_, cc := q.(CompleteClaimer)
	_, fl := q.(FlowController)
	_, lc := q.(LifecycleController)
	_, hk := q.(HistoryKeeper)
	caps := Capabilities{Inspector: ins, Waker: wk, Stats: st, CompleteAndClaim: cc, Flow: fl, Lifecycle: lc, History: hk}
	if u, ok := q.(interface{ Unwrap() WorkQueue }); ok && u.Unwrap() != nil {
		caps.Backing = CapabilitiesOf(u.Unwrap()).Backing
	}
	return caps
}

// AsInspector returns q's Inspector when q has one that answers.
func AsInspector(q WorkQueue) (Inspector, bool) {
	i, ok := q.(Inspector)
	return i, ok && CapabilitiesOf(q).Inspector
}

// AsWaker returns q's Waker when q has one that signals.
func AsWaker(q WorkQueue) (Waker, bool) {
	w, ok := q.(Waker)
	return w, ok && CapabilitiesOf(q).Waker
}

// AsStatsSource returns q's StatsSource when q has one that counts.
func AsStatsSource(q WorkQueue) (StatsSource, bool) {
	s, ok := q.(StatsSource)
	return s, ok && CapabilitiesOf(q).Stats
}

// AsCompleteClaimer returns q's CompleteClaimer when q has one.
func AsCompleteClaimer(q WorkQueue) (CompleteClaimer, bool) {
	c, ok := q.(CompleteClaimer)
	return c, ok && CapabilitiesOf(q).CompleteAndClaim
}

// Passthrough forwards every optional capability of a wrapped queue: a
// wrapper embeds one beside its own WorkQueue methods and so has the
// Inspector, Waker, StatsSource, CompleteClaimer, FlowController and
// LifecycleController and HistoryKeeper methods and the
// Capabilities of what it wraps, overriding the methods it changes. A
// method whose capability the wrapped queue lacks answers
// errors.ErrUnsupported (Subscribe: a channel that never fires; Stats:
// zero counters).
type Passthrough struct {
	caps Capabilities
	ins  Inspector
	wk   Waker
	st   StatsSource
	cc   CompleteClaimer
	fl   FlowController
	lc   LifecycleController
	hk   HistoryKeeper
}

// NewPassthrough returns the capabilities of q, ready to forward.
func NewPassthrough(q WorkQueue) Passthrough {
	p := Passthrough{caps: CapabilitiesOf(q)}
	p.ins, _ = AsInspector(q)
	p.wk, _ = AsWaker(q)
	p.st, _ = AsStatsSource(q)
	p.cc, _ = AsCompleteClaimer(q)
	p.fl, _ = AsFlowController(q)
	p.lc, _ = AsLifecycleController(q)
	p.hk, _ = AsHistoryKeeper(q)
	return p
}

// Capabilities returns the wrapped queue's capabilities.
func (p Passthrough) Capabilities() Capabilities { return p.caps }

// Inspector returns the wrapped queue's Inspector, nil when it has none.
func (p Passthrough) Inspector() Inspector { return p.ins }

func unsupported(what string) error {
	return fmt.Errorf("contract: the wrapped queue has no %s: %w", what, errors.ErrUnsupported)
}

// Queues forwards [Inspector.Queues].
func (p Passthrough) Queues(ctx context.Context) ([]string, error) {
	if p.ins == nil {
		return nil, unsupported("Inspector")
	}
	return p.ins.Queues(ctx)
}

// Tenants forwards [Inspector.Tenants].
func (p Passthrough) Tenants(ctx context.Context, queue string) ([]TenantStats, error) {
	if p.ins == nil {
		return nil, unsupported("Inspector")
	}
	return p.ins.Tenants(ctx, queue)
}

// Rotation forwards [Inspector.Rotation].
func (p Passthrough) Rotation(ctx context.Context, queue string, n int) (Rotation, error) {
	if p.ins == nil {
		return Rotation{}, unsupported("Inspector")
	}
	return p.ins.Rotation(ctx, queue, n)
}

// Leases forwards [Inspector.Leases].
func (p Passthrough) Leases(ctx context.Context, queue string, page PageRequest) (LeasePage, error) {
	if p.ins == nil {
		return LeasePage{}, unsupported("Inspector")
	}
	return p.ins.Leases(ctx, queue, page)
}

// Item forwards [Inspector.Item].
func (p Passthrough) Item(ctx context.Context, key ItemKey) (ItemInfo, error) {
	if p.ins == nil {
		return ItemInfo{}, unsupported("Inspector")
	}
	return p.ins.Item(ctx, key)
}

// Health forwards [Inspector.Health].
func (p Passthrough) Health(ctx context.Context) (Health, error) {
	if p.ins == nil {
		return Health{}, unsupported("Inspector")
	}
	return p.ins.Health(ctx)
}

// DeadLetterSummary forwards [Inspector.DeadLetterSummary].
func (p Passthrough) DeadLetterSummary(ctx context.Context, f DeadLetterFilter, groups int) (DeadLetterSummary, error) {
	if p.ins == nil {
		return DeadLetterSummary{}, unsupported("Inspector")
	}
	return p.ins.DeadLetterSummary(ctx, f, groups)
}

// Subscribe forwards [Waker.Subscribe].
func (p Passthrough) Subscribe(queue string) (<-chan struct{}, func()) {
	if p.wk == nil {
		return make(chan struct{}), func() {}
	}
	return p.wk.Subscribe(queue)
}

// Stats forwards [StatsSource.Stats].
func (p Passthrough) Stats() Stats {
	if p.st == nil {
		return Stats{}
	}
	return p.st.Stats()
}

// CompleteAndClaim forwards [CompleteClaimer.CompleteAndClaim].
func (p Passthrough) CompleteAndClaim(ctx context.Context, done []Lease, req ClaimRequest) ([]Lease, error) {
	if p.cc == nil {
		return nil, unsupported("CompleteClaimer")
	}
	return p.cc.CompleteAndClaim(ctx, done, req)
}

// SetLimits forwards [FlowController.SetLimits].
func (p Passthrough) SetLimits(ctx context.Context, queue, tenant string, l Limits) error {
	if p.fl == nil {
		return unsupported("FlowController")
	}
	return p.fl.SetLimits(ctx, queue, tenant, l)
}

// Limits forwards [FlowController.Limits].
func (p Passthrough) Limits(ctx context.Context, queue string) (QueueLimits, error) {
	if p.fl == nil {
		return QueueLimits{}, unsupported("FlowController")
	}
	return p.fl.Limits(ctx, queue)
}

// Charge forwards [FlowController.Charge].
func (p Passthrough) Charge(ctx context.Context, queue, tenant string, u Usage) error {
	if p.fl == nil {
		return unsupported("FlowController")
	}
	return p.fl.Charge(ctx, queue, tenant, u)
}

// FlowStatus forwards [FlowController.FlowStatus].
func (p Passthrough) FlowStatus(ctx context.Context, queue string) ([]TenantFlow, error) {
	if p.fl == nil {
		return nil, unsupported("FlowController")
	}
	return p.fl.FlowStatus(ctx, queue)
}

func (p Passthrough) lifecycle() (LifecycleController, error) {
	if p.lc == nil {
		return nil, unsupported("LifecycleController")
	}
	return p.lc, nil
}

// Pause forwards [LifecycleController.Pause].
func (p Passthrough) Pause(ctx context.Context, queue, tenant string) error {
	lc, err := p.lifecycle()
	if err != nil {
		return err
	}
	return lc.Pause(ctx, queue, tenant)
}

// Resume forwards [LifecycleController.Resume].
func (p Passthrough) Resume(ctx context.Context, queue, tenant string) error {
	lc, err := p.lifecycle()
	if err != nil {
		return err
	}
	return lc.Resume(ctx, queue, tenant)
}

// Paused forwards [LifecycleController.Paused].
func (p Passthrough) Paused(ctx context.Context, queue string) (PauseState, error) {
	lc, err := p.lifecycle()
	if err != nil {
		return PauseState{}, err
	}
	return lc.Paused(ctx, queue)
}

// Cancel forwards [LifecycleController.Cancel].
func (p Passthrough) Cancel(ctx context.Context, key ItemKey, reason string) (ItemState, error) {
	lc, err := p.lifecycle()
	if err != nil {
		return "", err
	}
	return lc.Cancel(ctx, key, reason)
}

// CancelMatching forwards [LifecycleController.CancelMatching].
func (p Passthrough) CancelMatching(ctx context.Context, f CancelFilter, reason string) (int, error) {
	lc, err := p.lifecycle()
	if err != nil {
		return 0, err
	}
	return lc.CancelMatching(ctx, f, reason)
}

// CountMatching forwards [LifecycleController.CountMatching].
func (p Passthrough) CountMatching(ctx context.Context, f CancelFilter) (int, error) {
	lc, err := p.lifecycle()
	if err != nil {
		return 0, err
	}
	return lc.CountMatching(ctx, f)
}

// PurgeCancelled forwards [LifecycleController.PurgeCancelled].
func (p Passthrough) PurgeCancelled(ctx context.Context, queue string, before time.Time) (int, error) {
	lc, err := p.lifecycle()
	if err != nil {
		return 0, err
	}
	return lc.PurgeCancelled(ctx, queue, before)
}

// Snooze forwards [LifecycleController.Snooze].
func (p Passthrough) Snooze(ctx context.Context, lease Lease, d time.Duration) (policy.Decision, error) {
	lc, err := p.lifecycle()
	if err != nil {
		return policy.Decision{}, err
	}
	return lc.Snooze(ctx, lease, d)
}

// Wait forwards [LifecycleController.Wait].
func (p Passthrough) Wait(ctx context.Context, lease Lease, w WaitRequest) error {
	lc, err := p.lifecycle()
	if err != nil {
		return err
	}
	return lc.Wait(ctx, lease, w)
}

// Signal forwards [LifecycleController.Signal].
func (p Passthrough) Signal(ctx context.Context, key ItemKey, signal string, payload []byte) error {
	lc, err := p.lifecycle()
	if err != nil {
		return err
	}
	return lc.Signal(ctx, key, signal, payload)
}

// Waiting forwards [LifecycleController.Waiting].
func (p Passthrough) Waiting(ctx context.Context, queue string, page PageRequest) (ItemPage, error) {
	lc, err := p.lifecycle()
	if err != nil {
		return ItemPage{}, err
	}
	return lc.Waiting(ctx, queue, page)
}
