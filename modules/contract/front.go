package contract

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/adkit/adk/modules/policy"
)

// QueueDriver is the face a backing shows the [QueueFront]: every
// operation of a [WorkQueue] and of the optional interfaces, with the
// same signatures, called only with input the front has checked and
// normalised. A driver may trust that:
//
//   - every name is valid and every queue name is filled in (an empty
//     Queue is DefaultQueue by then), in items, leases, requests, filters
//     and keys;
//   - a ClaimRequest has a positive LeaseFor and a Max of 1 to
//     MaxClaimBatch (CompleteAndClaim: 0 to MaxClaimBatch), an extension
//     is positive, an Enqueue batch is not empty and its payloads fit the
//     front's MaxValueBytes;
//   - a page's Limit is already the effective one (1 to MaxPageSize), a
//     dead-letter query's Skip is not negative, a Rotation's n is 0 to
//     MaxRecentTurns and a summary's groups 0 to MaxErrorGroups.
//
// What only the backing can judge (the form of its own cursors, its
// server's refusals) stays the driver's to check.
type QueueDriver interface {
	WorkQueue
	CompleteClaimer
	Inspector
	Waker
	StatsSource
}

// StateDriver is the face a backing shows the [StateFront]: the
// operations of a [StateStore], called only with valid names, a run that
// passed [ValidateRun] against the front's MaxValueBytes, a valid patch,
// and a page whose Limit is the effective one.
type StateDriver interface {
	StateStore
}

// MaxRecentTurns is the largest n Inspector.Rotation may ask for.
const MaxRecentTurns = 1000

// QueueFront is the front door of a backing's work queue: it checks and
// normalises every call once, here, then calls the backing's
// [QueueDriver]. A backing embeds one, so its exported queue methods are
// the front's, and it implements the driver on a type of its own.
//
// A QueueFront has every optional capability as a method; [Capabilities]
// says which a wrapper may use.
type QueueFront struct {
	d        QueueDriver
	fl       FlowController      // d's, when it enforces limits
	lc       LifecycleController // d's, when it has lifecycle controls
	hk       HistoryKeeper       // d's, when it keeps history
	maxBytes int
	backing  string
}

// NewQueueFront returns the front door of d, refusing payloads above
// maxValueBytes (zero or less: DefaultMaxValueBytes). backing names the
// backing as Health reports it ("memory", "redis", "postgresql").
func NewQueueFront(d QueueDriver, maxValueBytes int, backing string) QueueFront {
	if maxValueBytes <= 0 {
		maxValueBytes = DefaultMaxValueBytes
	}
	fl, _ := d.(FlowController)
	lc, _ := d.(LifecycleController)
	hk, _ := d.(HistoryKeeper)
	return QueueFront{d: d, fl: fl, lc: lc, hk: hk, maxBytes: maxValueBytes, backing: backing}
}

// Capabilities reports that a backing's queue has every optional
// capability, and names the backing.
func (f QueueFront) Capabilities() Capabilities {
	return Capabilities{Inspector: true, Waker: true, Stats: true, CompleteAndClaim: true, Flow: f.fl != nil, Lifecycle: f.lc != nil, History: f.hk != nil, Backing: f.backing}
}

// normalizedItems returns items with every Queue filled in and the
// fields only the queue sets (snoozes, waits, cancels) cleared, copying
// the slice only when one needs it.
func normalizedItems(items []Item) []Item {
	for i := range items {
		if needsNormalizing(items[i]) {
			out := make([]Item, len(items))
			copy(out, items)
			for j := i; j < len(out); j++ {
				out[j].Queue = QueueName(out[j].Queue)
				out[j].Snoozes, out[j].Waiting, out[j].Resumed = 0, nil, nil
				out[j].CancelledAt, out[j].CancelReason = time.Time{}, ""
				out[j].FinishedAt = time.Time{}
			}
			return out
		}
	}
	return items
}

func needsNormalizing(it Item) bool {
	return it.Queue == "" || it.Snoozes != 0 || it.Waiting != nil || it.Resumed != nil ||
		!it.CancelledAt.IsZero() || it.CancelReason != "" || !it.FinishedAt.IsZero()
}

// normalizedLeases is normalizedItems for the items of leases.
func normalizedLeases(leases []Lease) []Lease {
	for i := range leases {
		if leases[i].Item.Queue == "" {
			out := make([]Lease, len(leases))
			copy(out, leases)
			for j := i; j < len(out); j++ {
				out[j].Item.Queue = QueueName(out[j].Item.Queue)
			}
			return out
		}
	}
	return leases
}

func normalizedLease(l Lease) Lease {
	l.Item.Queue = QueueName(l.Item.Queue)
	return l
}

// Enqueue implements [WorkQueue].
func (f QueueFront) Enqueue(ctx context.Context, items ...Item) error {
	if err := ValidateItems(items, f.maxBytes); err != nil {
		return err
	}
	return f.d.Enqueue(ctx, normalizedItems(items)...)
}

// Claim implements [WorkQueue].
func (f QueueFront) Claim(ctx context.Context, req ClaimRequest) ([]Lease, error) {
	if err := ValidateClaim(req); err != nil {
		return nil, err
	}
	req.Queue = QueueName(req.Queue)
	return f.d.Claim(ctx, req)
}

// Heartbeat implements [WorkQueue].
func (f QueueFront) Heartbeat(ctx context.Context, lease Lease, extend time.Duration) (Lease, error) {
	if err := validateLease(&lease); err != nil {
		return Lease{}, err
	}
	if err := ValidateExtend(extend); err != nil {
		return Lease{}, err
	}
	return f.d.Heartbeat(ctx, normalizedLease(lease), extend)
}

// Complete implements [WorkQueue].
func (f QueueFront) Complete(ctx context.Context, leases ...Lease) error {
	for i := range leases {
		if err := validateLease(&leases[i]); err != nil {
			return err
		}
	}
	return f.d.Complete(ctx, normalizedLeases(leases)...)
}

// CompleteAndClaim implements [CompleteClaimer].
func (f QueueFront) CompleteAndClaim(ctx context.Context, done []Lease, req ClaimRequest) ([]Lease, error) {
	if err := ValidateCompleteAndClaim(done, req); err != nil {
		return nil, err
	}
	req.Queue = QueueName(req.Queue)
	return f.d.CompleteAndClaim(ctx, normalizedLeases(done), req)
}

// Fail implements [WorkQueue].
func (f QueueFront) Fail(ctx context.Context, lease Lease, cause error) (policy.Decision, error) {
	if err := validateLease(&lease); err != nil {
		return policy.Decision{}, err
	}
	return f.d.Fail(ctx, normalizedLease(lease), cause)
}

// Reap implements [WorkQueue].
func (f QueueFront) Reap(ctx context.Context, queue string) (int, error) {
	name := QueueName(queue)
	if err := ValidateName("queue", name); err != nil {
		return 0, err
	}
	return f.d.Reap(ctx, name)
}

// DeadLetters implements [WorkQueue].
func (f QueueFront) DeadLetters(ctx context.Context, q DeadLetterQuery) (ItemPage, error) {
	limit, err := ValidateDeadQuery(q)
	if err != nil {
		return ItemPage{}, err
	}
	q.Queue = QueueName(q.Queue)
	q.Page.Limit = limit
	return f.d.DeadLetters(ctx, q)
}

// Requeue implements [WorkQueue].
func (f QueueFront) Requeue(ctx context.Context, filter DeadLetterFilter) (int, error) {
	if err := ValidateFilter(filter); err != nil {
		return 0, err
	}
	filter.Queue = QueueName(filter.Queue)
	return f.d.Requeue(ctx, filter)
}

// Purge implements [WorkQueue].
func (f QueueFront) Purge(ctx context.Context, filter DeadLetterFilter) (int, error) {
	if err := ValidateFilter(filter); err != nil {
		return 0, err
	}
	filter.Queue = QueueName(filter.Queue)
	return f.d.Purge(ctx, filter)
}

// Queues implements [Inspector].
func (f QueueFront) Queues(ctx context.Context) ([]string, error) { return f.d.Queues(ctx) }

// Tenants implements [Inspector].
func (f QueueFront) Tenants(ctx context.Context, queue string) ([]TenantStats, error) {
	name := QueueName(queue)
	if err := ValidateName("queue", name); err != nil {
		return nil, err
	}
	return f.d.Tenants(ctx, name)
}

// Rotation implements [Inspector].
func (f QueueFront) Rotation(ctx context.Context, queue string, n int) (Rotation, error) {
	name := QueueName(queue)
	if err := ValidateName("queue", name); err != nil {
		return Rotation{}, err
	}
	if err := ValidateRecentTurns(n); err != nil {
		return Rotation{}, err
	}
	return f.d.Rotation(ctx, name, n)
}

// Leases implements [Inspector].
func (f QueueFront) Leases(ctx context.Context, queue string, page PageRequest) (LeasePage, error) {
	name := QueueName(queue)
	if err := ValidateName("queue", name); err != nil {
		return LeasePage{}, err
	}
	limit, err := ValidatePage(page)
	if err != nil {
		return LeasePage{}, err
	}
	page.Limit = limit
	return f.d.Leases(ctx, name, page)
}

// Item implements [Inspector].
func (f QueueFront) Item(ctx context.Context, key ItemKey) (ItemInfo, error) {
	key.Queue = QueueName(key.Queue)
	if err := ValidateItemKey(key); err != nil {
		return ItemInfo{}, err
	}
	return f.d.Item(ctx, key)
}

// Health implements [Inspector].
func (f QueueFront) Health(ctx context.Context) (Health, error) { return f.d.Health(ctx) }

// DeadLetterSummary implements [Inspector].
func (f QueueFront) DeadLetterSummary(ctx context.Context, filter DeadLetterFilter, groups int) (DeadLetterSummary, error) {
	if err := ValidateSummary(filter, groups); err != nil {
		return DeadLetterSummary{}, err
	}
	filter.Queue = QueueName(filter.Queue)
	return f.d.DeadLetterSummary(ctx, filter, groups)
}

// Subscribe implements [Waker].
func (f QueueFront) Subscribe(queue string) (<-chan struct{}, func()) {
	return f.d.Subscribe(QueueName(queue))
}

// Stats implements [StatsSource].
func (f QueueFront) Stats() Stats { return f.d.Stats() }

func (f QueueFront) flow() (FlowController, error) {
	if f.fl == nil {
		return nil, unsupported("FlowController")
	}
	return f.fl, nil
}

// SetLimits implements [FlowController].
func (f QueueFront) SetLimits(ctx context.Context, queue, tenant string, l Limits) error {
	fl, err := f.flow()
	if err != nil {
		return err
	}
	name := QueueName(queue)
	if err := ValidateName("queue", name); err != nil {
		return err
	}
	if tenant != "" {
		if err := ValidateName("tenant", tenant); err != nil {
			return err
		}
	}
	if err := ValidateLimits(l); err != nil {
		return err
	}
	return fl.SetLimits(ctx, name, tenant, l)
}

// Limits implements [FlowController].
func (f QueueFront) Limits(ctx context.Context, queue string) (QueueLimits, error) {
	fl, err := f.flow()
	if err != nil {
		return QueueLimits{}, err
	}
	name := QueueName(queue)
	if err := ValidateName("queue", name); err != nil {
		return QueueLimits{}, err
	}
	return fl.Limits(ctx, name)
}

// Charge implements [FlowController].
func (f QueueFront) Charge(ctx context.Context, queue, tenant string, u Usage) error {
	fl, err := f.flow()
	if err != nil {
		return err
	}
	name := QueueName(queue)
	if err := ValidateName("queue", name); err != nil {
		return err
	}
	if err := ValidateName("tenant", tenant); err != nil {
		return err
	}
	if err := ValidateUsage(u); err != nil {
		return err
	}
	if u == (Usage{}) {
		return ctx.Err()
	}
	return fl.Charge(ctx, name, tenant, u)
}

// FlowStatus implements [FlowController].
func (f QueueFront) FlowStatus(ctx context.Context, queue string) ([]TenantFlow, error) {
	fl, err := f.flow()
	if err != nil {
		return nil, err
	}
	name := QueueName(queue)
	if err := ValidateName("queue", name); err != nil {
		return nil, err
	}
	return fl.FlowStatus(ctx, name)
}

func (f QueueFront) lifecycle() (LifecycleController, error) {
	if f.lc == nil {
		return nil, unsupported("LifecycleController")
	}
	return f.lc, nil
}

// queueTenant checks a queue name (filling in the default) and a tenant
// that may be "".
func queueTenant(queue, tenant string) (string, error) {
	name := QueueName(queue)
	if err := ValidateName("queue", name); err != nil {
		return "", err
	}
	if tenant != "" {
		if err := ValidateName("tenant", tenant); err != nil {
			return "", err
		}
	}
	return name, nil
}

// Pause implements [LifecycleController].
func (f QueueFront) Pause(ctx context.Context, queue, tenant string) error {
	lc, err := f.lifecycle()
	if err != nil {
		return err
	}
	name, err := queueTenant(queue, tenant)
	if err != nil {
		return err
	}
	return lc.Pause(ctx, name, tenant)
}

// Resume implements [LifecycleController].
func (f QueueFront) Resume(ctx context.Context, queue, tenant string) error {
	lc, err := f.lifecycle()
	if err != nil {
		return err
	}
	name, err := queueTenant(queue, tenant)
	if err != nil {
		return err
	}
	return lc.Resume(ctx, name, tenant)
}

// Paused implements [LifecycleController].
func (f QueueFront) Paused(ctx context.Context, queue string) (PauseState, error) {
	lc, err := f.lifecycle()
	if err != nil {
		return PauseState{}, err
	}
	name, err := queueTenant(queue, "")
	if err != nil {
		return PauseState{}, err
	}
	return lc.Paused(ctx, name)
}

// Cancel implements [LifecycleController].
func (f QueueFront) Cancel(ctx context.Context, key ItemKey, reason string) (ItemState, error) {
	lc, err := f.lifecycle()
	if err != nil {
		return "", err
	}
	key.Queue = QueueName(key.Queue)
	if err := ValidateItemKey(key); err != nil {
		return "", err
	}
	if err := ValidateReason(reason); err != nil {
		return "", err
	}
	return lc.Cancel(ctx, key, reason)
}

func cancelFilter(filter CancelFilter) (CancelFilter, error) {
	filter.Queue = QueueName(filter.Queue)
	return filter, ValidateCancelFilter(filter)
}

// CancelMatching implements [LifecycleController].
func (f QueueFront) CancelMatching(ctx context.Context, filter CancelFilter, reason string) (int, error) {
	lc, err := f.lifecycle()
	if err != nil {
		return 0, err
	}
	if filter, err = cancelFilter(filter); err != nil {
		return 0, err
	}
	if err := ValidateReason(reason); err != nil {
		return 0, err
	}
	return lc.CancelMatching(ctx, filter, reason)
}

// CountMatching implements [LifecycleController].
func (f QueueFront) CountMatching(ctx context.Context, filter CancelFilter) (int, error) {
	lc, err := f.lifecycle()
	if err != nil {
		return 0, err
	}
	if filter, err = cancelFilter(filter); err != nil {
		return 0, err
	}
	return lc.CountMatching(ctx, filter)
}

// PurgeCancelled implements [LifecycleController].
func (f QueueFront) PurgeCancelled(ctx context.Context, queue string, before time.Time) (int, error) {
	lc, err := f.lifecycle()
	if err != nil {
		return 0, err
	}
	name, err := queueTenant(queue, "")
	if err != nil {
		return 0, err
	}
	return lc.PurgeCancelled(ctx, name, before)
}

// Snooze implements [LifecycleController].
func (f QueueFront) Snooze(ctx context.Context, lease Lease, d time.Duration) (policy.Decision, error) {
	lc, err := f.lifecycle()
	if err != nil {
		return policy.Decision{}, err
	}
	if err := ValidateLease(lease); err != nil {
		return policy.Decision{}, err
	}
	if err := ValidateSnooze(d); err != nil {
		return policy.Decision{}, err
	}
	return lc.Snooze(ctx, normalizedLease(lease), d)
}

// Wait implements [LifecycleController].
func (f QueueFront) Wait(ctx context.Context, lease Lease, w WaitRequest) error {
	lc, err := f.lifecycle()
	if err != nil {
		return err
	}
	if err := ValidateLease(lease); err != nil {
		return err
	}
	if err := ValidateWait(w); err != nil {
		return err
	}
	return lc.Wait(ctx, normalizedLease(lease), w)
}

// Signal implements [LifecycleController].
func (f QueueFront) Signal(ctx context.Context, key ItemKey, signal string, payload []byte) error {
	lc, err := f.lifecycle()
	if err != nil {
		return err
	}
	key.Queue = QueueName(key.Queue)
	if err := ValidateItemKey(key); err != nil {
		return err
	}
	if err := ValidateName("signal", signal); err != nil {
		return err
	}
	if len(payload) > f.maxBytes {
		return TooLarge("signal payload", len(payload), f.maxBytes)
	}
	return lc.Signal(ctx, key, signal, payload)
}

// Waiting implements [LifecycleController].
func (f QueueFront) Waiting(ctx context.Context, queue string, page PageRequest) (ItemPage, error) {
	lc, err := f.lifecycle()
	if err != nil {
		return ItemPage{}, err
	}
	name, err := queueTenant(queue, "")
	if err != nil {
		return ItemPage{}, err
	}
	limit, err := ValidatePage(page)
	if err != nil {
		return ItemPage{}, err
	}
	page.Limit = limit
	return lc.Waiting(ctx, name, page)
}

// StateFront is the front door of a backing's state store: it checks every
// call once, here, then calls the backing's [StateDriver]. It has the
// [RunKeeper] methods too, answering errors.ErrUnsupported while the
// driver has none.
type StateFront struct {
	d        StateDriver
	rk       RunKeeper // d's, when it fences deletes and keeps versions
	maxBytes int
	policy   RunPolicy
	bad      error // p's *ValidationError: every call answers it
}

// NewStateFront returns the front door of d, refusing run data above
// maxValueBytes (zero or less: DefaultMaxValueBytes) and unfenced writes
// when p requires a fence. The backing checks p with ValidateRunPolicy
// when it is opened, and its driver keeps versions as p says; a front
// given a p that fails ValidateRunPolicy answers every call with that
// *ValidationError.
func NewStateFront(d StateDriver, maxValueBytes int, p RunPolicy) StateFront {
	if maxValueBytes <= 0 {
		maxValueBytes = DefaultMaxValueBytes
	}
	rk, _ := d.(RunKeeper)
	return StateFront{d: d, rk: rk, maxBytes: maxValueBytes, policy: p, bad: ValidateRunPolicy("Settings.Runs", p)}
}

// RunPolicy returns the policy the store was opened with.
func (f StateFront) RunPolicy() RunPolicy { return f.policy }

// KeepsRuns reports whether the RunKeeper methods answer (see
// [AsRunKeeper]).
func (f StateFront) KeepsRuns() bool { return f.rk != nil }

// GetRun implements [StateStore].
func (f StateFront) GetRun(ctx context.Context, tenant, id string) (*Run, error) {
	if f.bad != nil {
		return nil, f.bad
	}
	if err := ValidateRunKey(tenant, id); err != nil {
		return nil, err
	}
	return f.d.GetRun(ctx, tenant, id)
}

// PutRun implements [StateStore].
func (f StateFront) PutRun(ctx context.Context, run Run) (*Run, error) {
	if f.bad != nil {
		return nil, f.bad
	}
	if err := ValidateRun(run, f.maxBytes); err != nil {
		return nil, err
	}
	if err := ValidateFence("Run.Fence", run.Fence, f.policy); err != nil {
		return nil, err
	}
	return f.d.PutRun(ctx, run)
}

// PatchRun implements [StateStore].
func (f StateFront) PatchRun(ctx context.Context, tenant, id string, patch Patch) (*Run, error) {
	if f.bad != nil {
		return nil, f.bad
	}
	if err := ValidateRunKey(tenant, id); err != nil {
		return nil, err
	}
	if err := ValidatePatch(patch); err != nil {
		return nil, err
	}
	if err := ValidateFence("Patch.Fence", patch.Fence, f.policy); err != nil {
		return nil, err
	}
	return f.d.PatchRun(ctx, tenant, id, patch)
}

// ListRuns implements [StateStore].
func (f StateFront) ListRuns(ctx context.Context, tenant string, page PageRequest) (RunPage, error) {
	if f.bad != nil {
		return RunPage{}, f.bad
	}
	if err := ValidateName("tenant", tenant); err != nil {
		return RunPage{}, err
	}
	limit, err := ValidatePage(page)
	if err != nil {
		return RunPage{}, err
	}
	page.Limit = limit
	return f.d.ListRuns(ctx, tenant, page)
}

// ListSessionRuns implements [StateStore].
func (f StateFront) ListSessionRuns(ctx context.Context, tenant, session string, page PageRequest) (RunPage, error) {
	if f.bad != nil {
		return RunPage{}, f.bad
	}
	if err := ValidateName("tenant", tenant); err != nil {
		return RunPage{}, err
	}
	if err := ValidateName("session", session); err != nil {
		return RunPage{}, err
	}
	limit, err := ValidatePage(page)
	if err != nil {
		return RunPage{}, err
	}
	page.Limit = limit
	return f.d.ListSessionRuns(ctx, tenant, session, page)
}

// DeleteRun implements [StateStore]. A store that requires a fence
// refuses it: use DeleteRunFenced.
func (f StateFront) DeleteRun(ctx context.Context, tenant, id string) error {
	if f.bad != nil {
		return f.bad
	}
	if err := ValidateRunKey(tenant, id); err != nil {
		return err
	}
	if err := ValidateFence("fence", 0, f.policy); err != nil {
		return err
	}
	return f.d.DeleteRun(ctx, tenant, id)
}

func (f StateFront) keeper() (RunKeeper, error) {
	if f.rk == nil {
		return nil, fmt.Errorf("contract: this state store has no RunKeeper: %w", errors.ErrUnsupported)
	}
	return f.rk, nil
}

// DeleteRunFenced implements [RunKeeper].
func (f StateFront) DeleteRunFenced(ctx context.Context, tenant, id string, fence int64) error {
	if f.bad != nil {
		return f.bad
	}
	if err := ValidateRunKey(tenant, id); err != nil {
		return err
	}
	if err := ValidateFence("fence", fence, f.policy); err != nil {
		return err
	}
	rk, err := f.keeper()
	if err != nil {
		return err
	}
	return rk.DeleteRunFenced(ctx, tenant, id, fence)
}

// ListRunVersions implements [RunKeeper].
func (f StateFront) ListRunVersions(ctx context.Context, tenant, id string, page PageRequest) (RunVersionPage, error) {
	if f.bad != nil {
		return RunVersionPage{}, f.bad
	}
	if err := ValidateRunKey(tenant, id); err != nil {
		return RunVersionPage{}, err
	}
	limit, err := ValidatePage(page)
	if err != nil {
		return RunVersionPage{}, err
	}
	page.Limit = limit
	rk, err := f.keeper()
	if err != nil {
		return RunVersionPage{}, err
	}
	return rk.ListRunVersions(ctx, tenant, id, page)
}

// GetRunVersion implements [RunKeeper].
func (f StateFront) GetRunVersion(ctx context.Context, tenant, id string, version int64) (*Run, error) {
	if f.bad != nil {
		return nil, f.bad
	}
	if err := ValidateRunKey(tenant, id); err != nil {
		return nil, err
	}
	if err := ValidateVersion(version); err != nil {
		return nil, err
	}
	rk, err := f.keeper()
	if err != nil {
		return nil, err
	}
	return rk.GetRunVersion(ctx, tenant, id, version)
}

// ForkRun implements [RunKeeper].
func (f StateFront) ForkRun(ctx context.Context, tenant, id string, version int64, newID string) (*Run, error) {
	if f.bad != nil {
		return nil, f.bad
	}
	if err := ValidateRunKey(tenant, id); err != nil {
		return nil, err
	}
	if err := ValidateName("newID", newID); err != nil {
		return nil, err
	}
	if err := ValidateVersion(version); err != nil {
		return nil, err
	}
	rk, err := f.keeper()
	if err != nil {
		return nil, err
	}
	return rk.ForkRun(ctx, tenant, id, version, newID)
}
