package memstore

import (
	"bytes"
	"context"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// runKey identifies a run (or, in sessionRuns, a tenant's session). A
// struct key keeps tenant "a:b" with id "x" apart from tenant "a" with id
// "b:x".
type runKey struct{ tenant, id string }

func (s *store) runKey(tenant, id string) runKey {
	return runKey{tenant, id}
}

// GetRun returns a copy of the run, or contract.ErrNotFound.
func (s *store) GetRun(ctx context.Context, tenant, id string) (*contract.Run, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r, ok := s.runs[s.runKey(tenant, id)]
	if !ok {
		return nil, contract.ErrNotFound
	}
	return copyRun(r), nil
}

// PutRun creates the run (Version 0) or replaces its Session, Status and
// Data when Version matches the stored one.
func (s *store) PutRun(ctx context.Context, run contract.Run) (*contract.Run, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	k := s.runKey(run.Tenant, run.ID)
	stored, exists := s.runs[k]
	var actual int64
	if exists {
		if err := fenced(stored, run.Fence); err != nil {
			return nil, err
		}
		actual = stored.Version
	}
	if run.Version != actual {
		return nil, &contract.StateConflictError{Tenant: run.Tenant, ID: run.ID, Expected: run.Version, Actual: actual}
	}
	now := s.clock.Now()
	if !exists {
		stored = s.create(k, contract.Run{Tenant: run.Tenant, ID: run.ID, Session: run.Session, Status: run.Status, Data: bytes.Clone(run.Data), Fence: run.Fence}, now)
		return copyRun(stored), nil
	}
	s.keep(k, stored, now)
	if stored.Session != run.Session {
		s.unindex(stored)
		stored.Session = run.Session
		s.index(stored)
	}
	stored.Status = run.Status
	stored.Data = bytes.Clone(run.Data)
	s.touch(stored, run.Fence, now)
	return copyRun(stored), nil
}

// create stores a new run from r (its Tenant, ID, Session, Status, Data,
// Counters and Fence), with Version 1 and the next Seq.
func (s *store) create(k runKey, r contract.Run, now time.Time) *contract.Run {
	s.runSeq++
	r.Version, r.Seq = 1, s.runSeq
	r.CreatedAt, r.UpdatedAt = now, now
	stored := &r
	s.runs[k] = stored
	s.index(stored)
	return stored
}

// fenced returns the *contract.StaleFenceError a write with fence must be
// refused with, or nil when it may land: unfenced, or a fence not below
// the run's.
func fenced(stored *contract.Run, fence int64) error {
	if fence != 0 && fence < stored.Fence {
		return &contract.StaleFenceError{Tenant: stored.Tenant, ID: stored.ID, Fence: fence, Stored: stored.Fence}
	}
	return nil
}

// PatchRun adds the patch's counters to the run and sets its status when
// the patch has one.
func (s *store) PatchRun(ctx context.Context, tenant, id string, patch contract.Patch) (*contract.Run, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	k := s.runKey(tenant, id)
	stored, ok := s.runs[k]
	if !ok {
		return nil, contract.ErrNotFound
	}
	if err := fenced(stored, patch.Fence); err != nil {
		return nil, err
	}
	if err := contract.CheckPatch(tenant, id, stored.Counters, patch.Counters); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	if patch.Status != "" && patch.Status != stored.Status {
		s.keep(k, stored, now)
	}
	stored.Counters = stored.Counters.Add(patch.Counters)
	if patch.Status != "" {
		stored.Status = patch.Status
	}
	s.touch(stored, patch.Fence, now)
	return copyRun(stored), nil
}

// touch records a write under fence: a new version and update time, and
// the fence when it is higher than the run's. Seq stays.
func (s *store) touch(r *contract.Run, fence int64, now time.Time) {
	r.Version++
	r.UpdatedAt = now
	r.Fence = max(r.Fence, fence)
}

// ListRuns pages through the tenant's runs in Seq order.
func (s *store) ListRuns(ctx context.Context, tenant string, page contract.PageRequest) (contract.RunPage, error) {
	return s.listRuns(ctx, page, func() *tree[int64, *contract.Run] { return s.tenantRuns[tenant] })
}

// ListSessionRuns pages through the runs of one session of the tenant in
// Seq order.
func (s *store) ListSessionRuns(ctx context.Context, tenant, session string, page contract.PageRequest) (contract.RunPage, error) {
	return s.listRuns(ctx, page, func() *tree[int64, *contract.Run] { return s.sessionRuns[runKey{tenant, session}] })
}

func (s *store) listRuns(ctx context.Context, page contract.PageRequest, index func() *tree[int64, *contract.Run]) (contract.RunPage, error) {
	limit := page.Limit
	after, err := parseSeqCursor(page.Cursor)
	if err != nil {
		return contract.RunPage{}, err
	}
	if err := s.lock(ctx); err != nil {
		return contract.RunPage{}, err
	}
	defer s.mu.Unlock()
	out := contract.RunPage{Runs: []contract.Run{}}
	t := index()
	if t == nil {
		return out, nil
	}
	t.Ascend(after, func(seq int64, r *contract.Run) bool {
		if len(out.Runs) == limit {
			out.Next = seqCursor(out.Runs[limit-1].Seq)
			return false
		}
		out.Runs = append(out.Runs, *copyRun(r))
		return true
	})
	return out, nil
}

// DeleteRun removes the run, or returns contract.ErrNotFound.
func (s *store) DeleteRun(ctx context.Context, tenant, id string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.deleteRun(tenant, id, 0)
}

// DeleteRunFenced removes the run unless fence is below its fence.
func (s *store) DeleteRunFenced(ctx context.Context, tenant, id string, fence int64) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.deleteRun(tenant, id, fence)
}

// deleteRun removes the run and its versions: its fence goes with it.
func (s *store) deleteRun(tenant, id string, fence int64) error {
	k := s.runKey(tenant, id)
	r, ok := s.runs[k]
	if !ok {
		return contract.ErrNotFound
	}
	if err := fenced(r, fence); err != nil {
		return err
	}
	delete(s.runs, k)
	delete(s.kept, k)
	s.unindex(r)
	return nil
}

func (s *store) index(r *contract.Run) {
	t := s.tenantRuns[r.Tenant]
	if t == nil {
		t = newTree[int64, *contract.Run](cmpInt64)
		s.tenantRuns[r.Tenant] = t
	}
	t.Put(r.Seq, r)
	if r.Session == "" {
		return
	}
	sk := runKey{r.Tenant, r.Session}
	st := s.sessionRuns[sk]
	if st == nil {
		st = newTree[int64, *contract.Run](cmpInt64)
		s.sessionRuns[sk] = st
	}
	st.Put(r.Seq, r)
}

func (s *store) unindex(r *contract.Run) {
	if t := s.tenantRuns[r.Tenant]; t != nil {
		t.Delete(r.Seq)
		if t.Len() == 0 {
			delete(s.tenantRuns, r.Tenant)
		}
	}
	if r.Session == "" {
		return
	}
	sk := runKey{r.Tenant, r.Session}
	if st := s.sessionRuns[sk]; st != nil {
		st.Delete(r.Seq)
		if st.Len() == 0 {
			delete(s.sessionRuns, sk)
		}
	}
}
