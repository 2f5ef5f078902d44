package memstore

// This file is not part of the package: the mutation table of
// mutation_test.go adds it to the build of the lost-patch and racy-claim
// mutants only, beside the edits that call it.

import (
	"context"
	"runtime"

	"github.com/adkit/adk/modules/contract"
)

// patchUnlocked is PatchRun done wrong on purpose (lost-patch): the read
// and the write are separate critical sections, so a patch landing in
// between is overwritten.
func (s *store) patchUnlocked(ctx context.Context, tenant, id string, patch contract.Patch) (*contract.Run, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	stored, ok := s.runs[s.runKey(tenant, id)]
	if !ok {
		s.mu.Unlock()
		return nil, contract.ErrNotFound
	}
	read := *stored
	s.mu.Unlock()
	runtime.Gosched()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := contract.CheckPatch(tenant, id, read.Counters, patch.Counters); err != nil {
		return nil, err
	}
	stored.Counters = read.Counters.Add(patch.Counters)
	if patch.Status != "" {
		stored.Status = patch.Status
	}
	s.touch(stored, patch.Fence, s.clock.Now())
	return copyRun(stored), nil
}

// claimRacy is Claim done wrong on purpose (racy-claim): it picks the item
// in one critical section and leases it in another without checking that
// it is still queued, so concurrent claimers can lease one item twice.
func (s *store) claimRacy(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	q := s.queues[contract.QueueName(req.Queue)]
	var tq *tenantQueue
	if q != nil {
		tq = q.next(s.clock.Now())
	}
	if tq == nil {
		s.mu.Unlock()
		return nil, contract.ErrEmpty
	}
	_, e, _ := tq.ready.Min()
	s.mu.Unlock()
	runtime.Gosched()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if e.item.State == contract.StateQueued {
		q.unplace(tq)
		tq.ready.Delete(e.ready)
		q.turn++
		tq.stamp = q.turn
		q.place(tq, now)
		tq.served++
		tq.leased++
	} else {
		q.leases.Delete(e.leaseKey())
	}
	e.item.State = contract.StateLeased
	e.token = s.newToken(e)
	e.worker = req.Worker
	e.expires = now.Add(req.LeaseFor)
	q.leases.Put(e.leaseKey(), e)
	return []contract.Lease{e.lease()}, nil
}
