package contracttest_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

// faulty is the reference store with one deliberate fault, injected from
// outside through the public API: each fault breaks one promise the way a
// careless backing would, so the suite point meant to pin that promise
// can be shown to fail. With no fault it is memstore unchanged.
type faulty struct {
	*memstore.Store
	fault string

	mu        sync.Mutex
	lastLease *contract.Lease
	claims    int
	conflicts int
	// between is armed by loseReply: the next write's reply is lost, with
	// between run after the write took effect.
	between func()
	lost    bool
	// deleted remembers, by run, the fence and versions of a deleted run
	// (the "deleted-fence-remembered" and "delete-keeps-versions" faults).
	deleted map[[2]string]deletedRun
}

// deletedRun is what a careless backing keeps of a deleted run.
type deletedRun struct {
	fence    int64
	versions []contract.Run
}

// shared is the store the "factory-shares" faults hand out on every call.
var shared struct {
	sync.Mutex
	store *memstore.Store
}

func newFaulty(clock contract.Clock, fault string, settings ...memstore.Settings) *faulty {
	if len(settings) > 0 {
		settings[0].Runs = faultyRunPolicy(fault, settings[0].Runs)
	}
	if fault == "factory-shares" {
		shared.Lock()
		defer shared.Unlock()
		if shared.store == nil {
			shared.store = memstore.New(clock, firstSettings(settings))
		}
		return &faulty{Store: shared.store, fault: fault}
	}
	return &faulty{Store: memstore.New(clock, firstSettings(settings)), fault: fault}
}

// faultyRunPolicy is the policy the store is opened with instead of p: a
// backing that reads its settings wrong.
func faultyRunPolicy(fault string, p contract.RunPolicy) contract.RunPolicy {
	switch fault {
	case "require-fence-ignored":
		p.RequireFence = false
	case "keeps-one-more":
		if p.KeepVersions > 0 {
			p.KeepVersions++
		}
	case "keeps-one-fewer":
		if p.KeepVersions > 1 {
			p.KeepVersions--
		}
	case "age-ignored":
		if p.VersionAge > 0 && p.KeepVersions == 0 {
			p.KeepVersions = contract.MaxRunVersions
		}
		p.VersionAge = 0
	}
	return p
}

// blind hides every optional interface of the queue.
type blind struct{ contract.WorkQueue }

// mute is a Waker whose channels never fire.
type mute struct{ *faulty }

func (mute) Subscribe(string) (<-chan struct{}, func()) { return make(chan struct{}, 1), func() {} }

// ---- StateStore faults ----

// loseReply is the LoseReply of the reference store. Intact, it reports
// a lost reply the way a backing that never resends a write does: the
// write took effect, the call returns a retryable error. The replay faults
// resend it instead, as a careless backing would: "replay-reapplies" runs
// the write again against the state as it is now, "replay-answers-current"
// recognises the resend but answers with the run as it is now.
func (f *faulty) loseReply(between func()) func() bool {
	f.mu.Lock()
	f.between, f.lost = between, false
	f.mu.Unlock()
	return func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.lost
	}
}

// replayed runs write, the write whose reply is lost when one is armed.
func (f *faulty) replayed(ctx context.Context, tenant, id string, write func() (*contract.Run, error)) (*contract.Run, error) {
	f.mu.Lock()
	between := f.between
	f.between = nil
	f.lost = f.lost || between != nil
	f.mu.Unlock()
	if between == nil {
		return write()
	}
	r, err := write()
	between()
	switch f.fault {
	case "replay-reapplies":
		return write()
	case "replay-answers-current":
		if err != nil {
			return r, err
		}
		return f.Store.GetRun(ctx, tenant, id)
	}
	return nil, &contract.StatePersistenceError{Reason: contract.ReasonUnavailable, Transient: true, Err: errors.New("reply lost")}
}

func (f *faulty) GetRun(ctx context.Context, tenant, id string) (*contract.Run, error) {
	r, err := f.Store.GetRun(ctx, tenant, id)
	if f.fault == "invalid-as-not-found" && errors.Is(err, contract.ErrInvalid) {
		return nil, contract.ErrNotFound
	}
	return f.stamp(r), err
}

func (f *faulty) PutRun(ctx context.Context, run contract.Run) (*contract.Run, error) {
	switch f.fault {
	case "put-skips-version-check":
		if cur, err := f.Store.GetRun(ctx, run.Tenant, run.ID); err == nil && run.Version != 0 {
			run.Version = cur.Version
		}
	case "put-writes-counters":
		if cur, err := f.Store.GetRun(ctx, run.Tenant, run.ID); err == nil && run.Version == cur.Version {
			delta := contract.Counters{
				InputTokens: run.Counters.InputTokens - cur.Counters.InputTokens, OutputTokens: run.Counters.OutputTokens - cur.Counters.OutputTokens,
				CostMicros: run.Counters.CostMicros - cur.Counters.CostMicros, Iterations: run.Counters.Iterations - cur.Counters.Iterations,
				Cursor: run.Counters.Cursor - cur.Counters.Cursor,
			}
			if p, err := f.Store.PatchRun(ctx, run.Tenant, run.ID, contract.Patch{Counters: delta}); err == nil {
				run.Version = p.Version
			}
		}
	case "malformed-json-accepted":
		if len(run.Data) > 0 && !jsonValid(run.Data) {
			run.Data = nil
		}
	case "deadline-ignored":
		ctx = context.WithoutCancel(ctx)
	}
	if err := f.putFenceFault(ctx, &run); err != nil {
		return nil, err
	}
	r, err := f.replayed(ctx, run.Tenant, run.ID, func() (*contract.Run, error) { return f.Store.PutRun(ctx, run) })
	r, err = f.staleFault(ctx, r, err, run.Fence, func() (*contract.Run, error) {
		unfenced := run
		unfenced.Fence = 0
		return f.Store.PutRun(ctx, unfenced)
	})
	var ce *contract.StateConflictError
	if f.fault == "conflict-numbers-swapped" && errors.As(err, &ce) {
		ce.Expected, ce.Actual = ce.Actual, ce.Expected
	}
	if f.fault == "conflict-version-read-later" && errors.As(err, &ce) {
		// The version read in a second step after the failed check, with
		// the run deleted and created again in between: now and then that
		// is the version the caller held.
		f.mu.Lock()
		f.conflicts++
		if f.conflicts%5 == 0 {
			ce.Actual = ce.Expected
		}
		f.mu.Unlock()
	}
	var pe *contract.StatePersistenceError
	if f.fault == "too-large-retryable" && errors.As(err, &pe) {
		pe.Transient = true
	}
	return f.stamp(r), err
}

func (f *faulty) PatchRun(ctx context.Context, tenant, id string, p contract.Patch) (*contract.Run, error) {
	switch f.fault {
	case "patch-drops-status":
		p.Status = ""
	case "patch-creates-missing":
		if _, err := f.Store.GetRun(ctx, tenant, id); errors.Is(err, contract.ErrNotFound) {
			_, _ = f.Store.PutRun(ctx, contract.Run{Tenant: tenant, ID: id})
		}
	case "deadline-ignored":
		ctx = context.WithoutCancel(ctx)
	}
	if err := f.patchFenceFault(ctx, tenant, id, &p); err != nil {
		return nil, err
	}
	r, err := f.replayed(ctx, tenant, id, func() (*contract.Run, error) { return f.Store.PatchRun(ctx, tenant, id, p) })
	r, err = f.staleFault(ctx, r, err, p.Fence, func() (*contract.Run, error) {
		if f.fault == "stale-patch-adds-counters" {
			return f.Store.PatchRun(ctx, tenant, id, contract.Patch{Counters: p.Counters})
		}
		unfenced := p
		unfenced.Fence = 0
		return f.Store.PatchRun(ctx, tenant, id, unfenced)
	})
	return f.stamp(r), err
}

func (f *faulty) DeleteRun(ctx context.Context, tenant, id string) error {
	f.rememberDeleted(ctx, tenant, id)
	_, err := f.replayed(ctx, tenant, id, func() (*contract.Run, error) { return nil, f.Store.DeleteRun(ctx, tenant, id) })
	return err
}

// ---- fence and version faults ----

// current is the run as stored, or nil.
func (f *faulty) current(ctx context.Context, tenant, id string) *contract.Run {
	r, err := f.Store.GetRun(ctx, tenant, id)
	if err != nil {
		return nil
	}
	return r
}

func staleErr(r *contract.Run, fence int64) error {
	return &contract.StaleFenceError{Tenant: r.Tenant, ID: r.ID, Fence: fence, Stored: r.Fence}
}

// putFenceFault changes a put, or refuses it, as a careless backing's
// fence and version checks would.
func (f *faulty) putFenceFault(ctx context.Context, run *contract.Run) error {
	cur := f.current(ctx, run.Tenant, run.ID)
	switch {
	case f.fault == "fenced-create-drops-fence" && run.Version == 0:
		run.Fence = 0
	case f.fault == "version-checked-before-fence" && cur != nil && run.Version != cur.Version:
		return &contract.StateConflictError{Tenant: run.Tenant, ID: run.ID, Expected: run.Version, Actual: cur.Version}
	case f.fault == "deleted-fence-remembered" && cur == nil && run.Version == 0:
		f.mu.Lock()
		run.Fence = max(run.Fence, f.deleted[[2]string{run.Tenant, run.ID}].fence)
		f.mu.Unlock()
	}
	return f.fenceFault(cur, &run.Fence)
}

// patchFenceFault is putFenceFault for a patch.
func (f *faulty) patchFenceFault(ctx context.Context, tenant, id string, p *contract.Patch) error {
	cur := f.current(ctx, tenant, id)
	switch {
	case f.fault == "overflow-checked-before-fence" && cur != nil:
		if err := contract.CheckPatch(tenant, id, cur.Counters, p.Counters); err != nil {
			return err
		}
	case f.fault == "deleted-fence-remembered" && cur == nil:
		if err := f.deletedFence(tenant, id, p.Fence); err != nil {
			return err
		}
	case f.fault == "counter-patch-keeps-version" && cur != nil && p.Status == "":
		// Written as a put and a patch, so the put keeps a version.
		if _, err := f.Store.PutRun(ctx, *cur); err != nil {
			return err
		}
	}
	return f.fenceFault(cur, &p.Fence)
}

// fenceFault applies the faults of the fence comparison itself.
func (f *faulty) fenceFault(cur *contract.Run, fence *int64) error {
	if cur == nil {
		return nil
	}
	switch {
	case f.fault == "equal-fence-refused" && *fence != 0 && *fence == cur.Fence:
		return staleErr(cur, *fence)
	case f.fault == "fence-not-raised" && cur.Fence > 0 && *fence > cur.Fence:
		*fence = cur.Fence
	case f.fault == "unfenced-refused" && *fence == 0 && cur.Fence > 0:
		return staleErr(cur, 0)
	}
	return nil
}

// deletedFence is the refusal of a backing that remembers the fence of a
// deleted run.
func (f *faulty) deletedFence(tenant, id string, fence int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.deleted[[2]string{tenant, id}]; ok && fence != 0 && fence < d.fence {
		return &contract.StaleFenceError{Tenant: tenant, ID: id, Fence: fence, Stored: d.fence}
	}
	return nil
}

// rememberDeleted records what the deleted-run faults keep of a run about
// to be deleted.
func (f *faulty) rememberDeleted(ctx context.Context, tenant, id string) {
	if f.fault != "deleted-fence-remembered" && f.fault != "delete-keeps-versions" {
		return
	}
	cur := f.current(ctx, tenant, id)
	if cur == nil {
		return
	}
	var versions []contract.Run
	if p, err := f.Store.ListRunVersions(ctx, tenant, id, contract.PageRequest{Limit: contract.MaxPageSize}); err == nil {
		versions = p.Versions
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deleted == nil {
		f.deleted = map[[2]string]deletedRun{}
	}
	f.deleted[[2]string{tenant, id}] = deletedRun{fence: cur.Fence, versions: versions}
}

// staleFault changes what a write refused for its fence answers: it lands
// anyway (again, unfenced), lands in part, or is reported wrong.
func (f *faulty) staleFault(ctx context.Context, r *contract.Run, err error, fence int64, unfenced func() (*contract.Run, error)) (*contract.Run, error) {
	se, ok := errors.AsType[*contract.StaleFenceError](err)
	switch {
	case ok && (f.fault == "stale-put-lands" || f.fault == "stale-patch-lands"):
		return unfenced()
	case ok && (f.fault == "stale-put-writes-first" || f.fault == "stale-patch-adds-counters"):
		_, _ = unfenced()
		return nil, err
	case ok && f.fault == "stale-fence-untyped":
		return nil, errors.New(se.Error())
	case ok && f.fault == "stale-fence-numbers-swapped":
		se.Fence, se.Stored = se.Stored, se.Fence
	case err == nil && r != nil && fence == 0 && f.fault == "unfenced-reports-no-fence":
		r.Fence = 0
	}
	return r, err
}

func (f *faulty) DeleteRunFenced(ctx context.Context, tenant, id string, fence int64) error {
	cur := f.current(ctx, tenant, id)
	if f.fault == "deleted-fence-remembered" && cur == nil {
		if err := f.deletedFence(tenant, id, fence); err != nil {
			return err
		}
	}
	if err := f.fenceFault(cur, &fence); err != nil {
		return err
	}
	f.rememberDeleted(ctx, tenant, id)
	err := f.Store.DeleteRunFenced(ctx, tenant, id, fence)
	if f.fault == "stale-delete-lands" && errors.Is(err, contract.ErrFenced) {
		return f.Store.DeleteRun(ctx, tenant, id)
	}
	_, err = f.staleFault(ctx, nil, err, fence, func() (*contract.Run, error) { return nil, nil })
	return err
}

// showCurrent overwrites a field of the kept versions (all but the run as
// it is) with the run's own: a backing that reads it from the wrong row.
func (f *faulty) showCurrent(ctx context.Context, v *contract.Run) {
	cur := f.current(ctx, v.Tenant, v.ID)
	if cur == nil || v.Version == cur.Version {
		return
	}
	switch f.fault {
	case "version-counters-current":
		v.Counters = cur.Counters
	case "version-fence-current":
		v.Fence = cur.Fence
	case "version-updated-current":
		v.UpdatedAt = cur.UpdatedAt
	case "version-data-current":
		v.Data = cur.Data
	}
}

func (f *faulty) ListRunVersions(ctx context.Context, tenant, id string, page contract.PageRequest) (contract.RunVersionPage, error) {
	var p contract.RunVersionPage
	var err error
	if f.fault == "version-cursor-by-position" {
		p, err = f.versionsByPosition(ctx, tenant, id, page)
	} else {
		p, err = f.Store.ListRunVersions(ctx, tenant, id, page)
	}
	for i := range p.Versions {
		f.showCurrent(ctx, &p.Versions[i])
	}
	switch {
	case f.fault == "current-not-listed" && page.Cursor == "" && len(p.Versions) > 0:
		p.Versions = p.Versions[1:]
	case f.fault == "delete-keeps-versions" && err == nil && p.Next == "":
		f.mu.Lock()
		p.Versions = append(p.Versions, f.deleted[[2]string{tenant, id}].versions...)
		f.mu.Unlock()
	}
	return p, err
}

// versionsByPosition pages by offset into the listing as it is at each
// call, as a backing whose cursor counts rows would.
func (f *faulty) versionsByPosition(ctx context.Context, tenant, id string, page contract.PageRequest) (contract.RunVersionPage, error) {
	all, err := f.Store.ListRunVersions(ctx, tenant, id, contract.PageRequest{Limit: contract.MaxPageSize})
	if err != nil {
		return all, err
	}
	off := 0
	if page.Cursor != "" {
		off, _ = strconv.Atoi(strings.TrimPrefix(page.Cursor, "at-"))
	}
	limit := page.Limit
	if limit == 0 {
		limit = contract.DefaultPageSize
	}
	off = min(off, len(all.Versions))
	end := min(off+limit, len(all.Versions))
	out := contract.RunVersionPage{Versions: all.Versions[off:end]}
	if end < len(all.Versions) {
		out.Next = "at-" + strconv.Itoa(end)
	}
	return out, nil
}

func (f *faulty) GetRunVersion(ctx context.Context, tenant, id string, version int64) (*contract.Run, error) {
	r, err := f.Store.GetRunVersion(ctx, tenant, id, version)
	switch {
	case f.fault == "get-version-missing-is-current" && errors.Is(err, contract.ErrNotFound):
		return f.Store.GetRun(ctx, tenant, id)
	case f.fault == "delete-keeps-versions" && errors.Is(err, contract.ErrNotFound):
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, v := range f.deleted[[2]string{tenant, id}].versions {
			if v.Version == version {
				return &v, nil
			}
		}
	case r != nil:
		f.showCurrent(ctx, r)
	}
	return r, err
}

func (f *faulty) ForkRun(ctx context.Context, tenant, id string, version int64, newID string) (*contract.Run, error) {
	cur := f.current(ctx, tenant, id)
	switch {
	case f.fault == "fork-copies-current" && cur != nil:
		version = cur.Version
	case f.fault == "fork-overwrites":
		_ = f.Store.DeleteRun(ctx, tenant, newID)
	}
	r, err := f.Store.ForkRun(ctx, tenant, id, version, newID)
	if f.fault == "fork-missing-forks-current" && errors.Is(err, contract.ErrNotFound) && cur != nil {
		return f.Store.ForkRun(ctx, tenant, id, cur.Version, newID)
	}
	if ce, ok := errors.AsType[*contract.StateConflictError](err); ok && f.fault == "fork-conflict-names-source" {
		ce.ID = id
	}
	return r, err
}

// stamp replaces the clock's timestamps with the wall clock's.
func (f *faulty) stamp(r *contract.Run) *contract.Run {
	if r != nil && f.fault == "wall-clock-timestamps" {
		r.UpdatedAt = time.Now()
	}
	return r
}

func (f *faulty) ListRuns(ctx context.Context, tenant string, page contract.PageRequest) (contract.RunPage, error) {
	switch f.fault {
	case "page-limit-clamped":
		page.Limit = min(page.Limit, contract.MaxPageSize)
	case "page-default-50":
		if page.Limit == 0 {
			page.Limit = 50
		}
	}
	p, err := f.Store.ListRuns(ctx, tenant, page)
	if f.fault == "page-skips-last" && p.Next != "" && len(p.Runs) > 1 {
		p.Runs = p.Runs[:len(p.Runs)-1]
	}
	return p, err
}

func (f *faulty) ListSessionRuns(ctx context.Context, tenant, session string, page contract.PageRequest) (contract.RunPage, error) {
	if f.fault == "session-ignored" {
		return f.Store.ListRuns(ctx, tenant, page)
	}
	return f.Store.ListSessionRuns(ctx, tenant, session, page)
}

// ---- WorkQueue faults ----

func (f *faulty) Enqueue(ctx context.Context, items ...contract.Item) error {
	if f.fault == "enqueue-cancel-ignored" {
		ctx = context.WithoutCancel(ctx)
	}
	if f.fault == "enqueue-batch-stops-at-live" && len(items) > 0 {
		// Takes a batch whose first item is there as sent already.
		if _, err := f.Store.Item(ctx, items[0].Key()); err == nil {
			return nil
		}
	}
	err := f.Store.Enqueue(ctx, items...)
	var pe *contract.StatePersistenceError
	if f.fault == "payload-too-large-retryable" && errors.As(err, &pe) {
		pe.Transient = true
	}
	return err
}

func (f *faulty) Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	switch f.fault {
	case "claim-caps-batch":
		req.Max = min(req.Max, 1)
	case "claim-clamps-max":
		req.Max = min(req.Max, contract.MaxClaimBatch)
	}
	ls, err := f.Store.Claim(ctx, req)
	f.mirrorTokens(ls)
	switch f.fault {
	case "claim-nil-on-empty":
		if errors.Is(err, contract.ErrEmpty) {
			return nil, nil
		}
	case "expiry-from-wall-clock":
		for i := range ls {
			ls[i].ExpiresAt = time.Now().Add(req.LeaseFor)
		}
	case "claim-strips-metadata":
		for i := range ls {
			ls[i].Item.Metadata = nil
		}
	case "claim-sorts-batch":
		sort.SliceStable(ls, func(i, j int) bool { return ls[i].Item.Tenant < ls[j].Item.Tenant })
	case "claim-repeats-lease":
		// Every fifth claim hands out the previous claim's lease again:
		// the item it really took is lost, the other is held twice.
		f.mu.Lock()
		f.claims++
		if len(ls) > 0 {
			if f.claims%5 == 0 && f.lastLease != nil {
				ls[0] = *f.lastLease
			}
			last := ls[0]
			f.lastLease = &last
		}
		f.mu.Unlock()
	}
	return ls, err
}

func (f *faulty) Heartbeat(ctx context.Context, l contract.Lease, extend time.Duration) (contract.Lease, error) {
	if f.fault == "heartbeat-doubles-extend" {
		extend *= 2
	}
	f.mirrorToken(&l)
	nl, err := f.Store.Heartbeat(ctx, l, extend)
	f.mirrorToken(&nl)
	f.mirrorToken(&l)
	if f.fault == "heartbeat-keeps-token" && err == nil {
		nl.Token = l.Token
	}
	var ll *contract.LeaseLostError
	if f.fault == "heartbeat-fakes-success" && errors.As(err, &ll) {
		l.ExpiresAt = l.ExpiresAt.Add(extend)
		return l, nil
	}
	return nl, f.loseLeaseLost(err)
}

func (f *faulty) Complete(ctx context.Context, leases ...contract.Lease) error {
	if f.fault == "complete-batch-by-item" {
		// Settles each item once, with the last lease given for it, and
		// counts every entry of a completed item as completed.
		last := map[contract.ItemKey]contract.Lease{}
		var keys []contract.ItemKey
		for _, l := range leases {
			if _, ok := last[l.Key()]; !ok {
				keys = append(keys, l.Key())
			}
			last[l.Key()] = l
		}
		leases = leases[:0:0]
		for _, k := range keys {
			leases = append(leases, last[k])
		}
	}
	if f.fault == "tokens-decrease" {
		leases = slices.Clone(leases)
		f.mirrorTokens(leases)
	}
	err := f.Store.Complete(ctx, leases...)
	var ll *contract.LeaseLostError
	if f.fault == "lease-lost-names-all" && errors.As(err, &ll) {
		ll.Items = nil
		for _, l := range leases {
			ll.Items = append(ll.Items, l.Key())
		}
	}
	return f.loseLeaseLost(err)
}

// CompleteAndClaim breaks the optional CompleteClaimer: it claims
// without completing, or reports no lost lease.
func (f *faulty) CompleteAndClaim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest) ([]contract.Lease, error) {
	switch f.fault {
	case "cc-drops-completes":
		return f.Store.Claim(ctx, req)
	case "cc-hides-lost":
		ls, err := f.Store.CompleteAndClaim(ctx, done, req)
		if _, lost := errors.AsType[*contract.LeaseLostError](err); lost {
			err = nil
		}
		return ls, err
	}
	if f.fault == "tokens-decrease" {
		done = slices.Clone(done)
		f.mirrorTokens(done)
		ls, err := f.Store.CompleteAndClaim(ctx, done, req)
		f.mirrorTokens(ls)
		return ls, err
	}
	return f.Store.CompleteAndClaim(ctx, done, req)
}

// tokenMirror is what "tokens-decrease" subtracts tokens from: the tokens
// it hands out are unique, and each is smaller than the one before.
const tokenMirror = 1 << 50

// mirrorToken turns a store's token into the one handed out, and back.
func (f *faulty) mirrorToken(l *contract.Lease) {
	if f.fault == "tokens-decrease" && l.Token != 0 {
		l.Token = tokenMirror - l.Token
	}
}

func (f *faulty) mirrorTokens(ls []contract.Lease) {
	for i := range ls {
		f.mirrorToken(&ls[i])
	}
}

// loseLeaseLost turns a *LeaseLostError into an untyped error.
func (f *faulty) loseLeaseLost(err error) error {
	var ll *contract.LeaseLostError
	if f.fault == "lease-lost-untyped" && errors.As(err, &ll) {
		return errors.New(ll.Error())
	}
	return err
}

func (f *faulty) Fail(ctx context.Context, l contract.Lease, cause error) (policy.Decision, error) {
	if f.fault == "permanent-unwrapped" && policy.IsPermanent(cause) {
		cause = errors.Unwrap(cause)
	}
	f.mirrorToken(&l)
	d, err := f.Store.Fail(ctx, l, cause)
	if f.fault == "fail-hides-decision" {
		d = policy.Decision{}
	}
	return d, f.loseLeaseLost(err)
}

func (f *faulty) Reap(ctx context.Context, queue string) (int, error) {
	n, err := f.Store.Reap(ctx, queue)
	if f.fault == "reap-reports-zero" {
		n = 0
	}
	return n, err
}

func (f *faulty) DeadLetters(ctx context.Context, q contract.DeadLetterQuery) (contract.ItemPage, error) {
	switch f.fault {
	case "newest-ignored":
		q.Newest = false
	case "skip-ignored":
		q.Skip = 0
	case "skip-one-short":
		q.Skip = max(q.Skip-1, 0)
	}
	p, err := f.Store.DeadLetters(ctx, q)
	switch f.fault {
	case "dead-letters-newest-first":
		slices.Reverse(p.Items)
	case "dead-letters-strip-metadata":
		for i := range p.Items {
			p.Items[i].Metadata = nil
		}
	case "dead-filter-case-sensitive":
		p.Items = slices.DeleteFunc(p.Items, func(it contract.Item) bool { return !strings.Contains(it.LastError, q.ErrorContains) })
	case "newest-cursor-at-letter":
		// The cursor names the page's last letter instead of the place
		// past it, so turning around there skips that letter.
		if n, err := strconv.ParseInt(p.Next, 10, 64); q.Newest && err == nil {
			p.Next = strconv.FormatInt(n+1, 10)
		}
	}
	return p, err
}

func (f *faulty) DeadLetterSummary(ctx context.Context, fl contract.DeadLetterFilter, groups int) (contract.DeadLetterSummary, error) {
	switch f.fault {
	case "summary-ignores-error":
		fl.ErrorContains = ""
	case "summary-groups-whole-errors":
		if groups == 0 {
			return f.Store.DeadLetterSummary(ctx, fl, 0)
		}
		page, err := f.Store.DeadLetters(ctx, contract.DeadLetterQuery{DeadLetterFilter: fl, Page: contract.PageRequest{Limit: contract.MaxPageSize}})
		if err != nil {
			return contract.DeadLetterSummary{}, err
		}
		// Grouped by the whole error: letters that share only the first
		// ErrorGroupRunes characters count apart.
		byError := map[string]*contract.DeadLetterGroup{}
		var order []string
		for _, it := range page.Items {
			if byError[it.LastError] == nil {
				byError[it.LastError] = &contract.DeadLetterGroup{Error: it.LastError}
				order = append(order, it.LastError)
			}
			byError[it.LastError].Count++
			byError[it.LastError].LastDeadAt = it.DeadAt
		}
		s := contract.DeadLetterSummary{Total: int64(len(page.Items)), Distinct: int64(len(order))}
		for _, e := range order {
			s.Groups = append(s.Groups, *byError[e])
		}
		slices.SortFunc(s.Groups, func(a, b contract.DeadLetterGroup) int { return cmp.Compare(b.Count, a.Count) })
		s.Groups = s.Groups[:min(groups, len(s.Groups))]
		return s, nil
	}
	s, err := f.Store.DeadLetterSummary(ctx, fl, groups)
	if f.fault == "summary-smallest-first" {
		slices.Reverse(s.Groups)
	}
	return s, err
}

func (f *faulty) Requeue(ctx context.Context, fl contract.DeadLetterFilter) (int, error) {
	if f.fault == "requeue-ignores-tenant" {
		fl.Tenant = ""
	}
	return f.Store.Requeue(ctx, fl)
}

func (f *faulty) Purge(ctx context.Context, fl contract.DeadLetterFilter) (int, error) {
	if f.fault == "purge-ignores-id" {
		fl.ID = ""
	}
	return f.Store.Purge(ctx, fl)
}

// ---- Inspector faults ----

func (f *faulty) Tenants(ctx context.Context, queue string) ([]contract.TenantStats, error) {
	st, err := f.Store.Tenants(ctx, queue)
	if f.fault == "later-counted-ready" {
		for i := range st {
			st[i].Ready += st[i].Later
			st[i].Later = 0
		}
	}
	return st, err
}

func (f *faulty) Rotation(ctx context.Context, queue string, n int) (contract.Rotation, error) {
	r, err := f.Store.Rotation(ctx, queue, n)
	switch f.fault {
	case "rotation-order-reversed":
		slices.Reverse(r.Order)
	case "recent-newest-first":
		slices.Reverse(r.Recent)
	}
	return r, err
}

func (f *faulty) Leases(ctx context.Context, queue string, page contract.PageRequest) (contract.LeasePage, error) {
	p, err := f.Store.Leases(ctx, queue, page)
	if f.fault == "leases-latest-first" {
		slices.Reverse(p.Leases)
	}
	return p, err
}

func (f *faulty) Item(ctx context.Context, key contract.ItemKey) (contract.ItemInfo, error) {
	info, err := f.Store.Item(ctx, key)
	if f.fault == "item-hides-lease" {
		info.Lease = nil
	}
	return info, err
}

func jsonValid(b []byte) bool { return json.Valid(b) }

func (f *faulty) Health(ctx context.Context) (contract.Health, error) {
	if f.fault == "health-ignores-context" {
		ctx = context.WithoutCancel(ctx)
	}
	return f.Store.Health(ctx)
}

// firstSettings is the store settings a test passed, if any.
func firstSettings(s []memstore.Settings) memstore.Settings {
	if len(s) > 0 {
		return s[0]
	}
	return memstore.Settings{}
}
