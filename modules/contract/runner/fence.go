package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/adkit/adk/modules/contract"
)

// Fence returns the latest token of the lease the handler runs under:
// the claim's Token until the first heartbeat, then the one the last
// heartbeat issued. It is the fence for the handler's writes of its run
// (Run.Fence, Patch.Fence, [contract.RunKeeper.DeleteRunFenced]); Runs
// fills it in by itself. ok is false when ctx is not (and does not
// derive from) a handler's context.
//
// After the lease is lost Fence keeps returning its last token: a write
// fenced with it is refused once the item's new holder has written the
// run, which is the point.
func Fence(ctx context.Context) (token int64, ok bool) {
	h := handlingOf(ctx)
	if h == nil {
		return 0, false
	}
	return h.token.Load(), true
}

// Runs returns store as the handler whose context is ctx should write
// it: fenced by the lease it runs under. PutRun and PatchRun carry
// Fence(ctx) when the run or patch leaves Fence 0; DeleteRun is
// [contract.RunKeeper.DeleteRunFenced] with that fence (a plain DeleteRun
// when store has no RunKeeper); DeleteRunFenced given 0 takes it too.
// Reads, and the other RunKeeper methods, go to store unchanged, and
// [contract.AsRunKeeper] finds the RunKeeper of the view when store has
// one.
//
// A write the store refuses with a *contract.StaleFenceError means the
// item's lease was taken back and a newer execution has written the run:
// the handler should stop (its context is cancelled too, at the next
// heartbeat). One refusal is not final: when the stored fence is this
// lease's own (a heartbeat issued a new token between the moment a write
// read the fence and the moment it reached the store, and a write of
// another goroutine of the handler carried the new one), the view sends
// the write again with the latest token.
//
// Called with a context that is not a handler's, Runs returns store
// itself: its writes go unfenced (and a store with
// RunPolicy.RequireFence refuses them). Runs is cheap (no call to the
// store): a handler may call it for every write. Fences compare the tokens of one
// queue, so a run should be written from the items of one queue.
func Runs(ctx context.Context, store contract.StateStore) contract.StateStore {
	h := handlingOf(ctx)
	if h == nil {
		return store
	}
	return fencedRuns{StateStore: store, h: h}
}

// fencedRuns is the view Runs returns.
type fencedRuns struct {
	contract.StateStore
	h *handling
}

// again returns the token to send a refused write again with, when err
// refused it under a fence this lease holds itself (see Runs).
func (f fencedRuns) again(err error, sent int64) (int64, bool) {
	se, ok := errors.AsType[*contract.StaleFenceError](err)
	if !ok {
		return 0, false
	}
	latest := f.h.token.Load()
	return latest, latest > sent && se.Stored <= latest
}

// PutRun implements [contract.StateStore].
func (f fencedRuns) PutRun(ctx context.Context, run contract.Run) (*contract.Run, error) {
	if run.Fence != 0 {
		return f.StateStore.PutRun(ctx, run)
	}
	run.Fence = f.h.token.Load()
	for {
		out, err := f.StateStore.PutRun(ctx, run)
		next, ok := f.again(err, run.Fence)
		if !ok {
			return out, err
		}
		run.Fence = next
	}
}

// PatchRun implements [contract.StateStore].
func (f fencedRuns) PatchRun(ctx context.Context, tenant, id string, patch contract.Patch) (*contract.Run, error) {
	if patch.Fence != 0 {
		return f.StateStore.PatchRun(ctx, tenant, id, patch)
	}
	patch.Fence = f.h.token.Load()
	for {
		out, err := f.StateStore.PatchRun(ctx, tenant, id, patch)
		next, ok := f.again(err, patch.Fence)
		if !ok {
			return out, err
		}
		patch.Fence = next
	}
}

// DeleteRun implements [contract.StateStore]: DeleteRunFenced under the
// lease's latest token, or store's DeleteRun when it has no RunKeeper.
func (f fencedRuns) DeleteRun(ctx context.Context, tenant, id string) error {
	if _, ok := contract.AsRunKeeper(f.StateStore); !ok {
		return f.StateStore.DeleteRun(ctx, tenant, id)
	}
	return f.DeleteRunFenced(ctx, tenant, id, 0)
}

func (f fencedRuns) keeper() (contract.RunKeeper, error) {
	rk, ok := contract.AsRunKeeper(f.StateStore)
	if !ok {
		return nil, fmt.Errorf("runner: the state store has no RunKeeper: %w", errors.ErrUnsupported)
	}
	return rk, nil
}

// KeepsRuns reports whether store's RunKeeper answers (see
// [contract.AsRunKeeper]).
func (f fencedRuns) KeepsRuns() bool {
	_, ok := contract.AsRunKeeper(f.StateStore)
	return ok
}

// DeleteRunFenced implements [contract.RunKeeper]; fence 0 is the
// lease's latest token.
func (f fencedRuns) DeleteRunFenced(ctx context.Context, tenant, id string, fence int64) error {
	rk, err := f.keeper()
	if err != nil {
		return err
	}
	if fence != 0 {
		return rk.DeleteRunFenced(ctx, tenant, id, fence)
	}
	fence = f.h.token.Load()
	for {
		err := rk.DeleteRunFenced(ctx, tenant, id, fence)
		next, ok := f.again(err, fence)
		if !ok {
			return err
		}
		fence = next
	}
}

// ListRunVersions implements [contract.RunKeeper].
func (f fencedRuns) ListRunVersions(ctx context.Context, tenant, id string, page contract.PageRequest) (contract.RunVersionPage, error) {
	rk, err := f.keeper()
	if err != nil {
		return contract.RunVersionPage{}, err
	}
	return rk.ListRunVersions(ctx, tenant, id, page)
}

// GetRunVersion implements [contract.RunKeeper].
func (f fencedRuns) GetRunVersion(ctx context.Context, tenant, id string, version int64) (*contract.Run, error) {
	rk, err := f.keeper()
	if err != nil {
		return nil, err
	}
	return rk.GetRunVersion(ctx, tenant, id, version)
}

// ForkRun implements [contract.RunKeeper]. The new run starts with no
// fence, as every fork does.
func (f fencedRuns) ForkRun(ctx context.Context, tenant, id string, version int64, newID string) (*contract.Run, error) {
	rk, err := f.keeper()
	if err != nil {
		return nil, err
	}
	return rk.ForkRun(ctx, tenant, id, version, newID)
}

var _ contract.RunKeeper = fencedRuns{}
