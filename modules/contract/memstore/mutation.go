package memstore

import (
	"context"
	"runtime"

	"github.com/adkit/adk/modules/contract"
)

// mutation is a set of deliberate faults. Production code never sets one:
// only this package's tests do, to prove that the conformance suites catch
// each fault (see mutation_test.go).
type mutation uint32

const (
	mutNoFencing            mutation = 1 << iota // settles ignore the lease token
	mutNoRotation                                // a claim keeps serving the head tenant until it runs dry
	mutLostPatch                                 // PatchRun reads, lets go of the lock, then writes: concurrent deltas get lost
	mutReseqOnWrite                              // every write gives the run a new Seq, so paging repeats updated runs
	mutReapIgnoresHeartbeat                      // Reap judges a lease by the expiry its claim set
	mutJoinedKeys                                // runs are keyed by tenant+":"+id, so tenants collide
	mutIgnoreNotBefore                           // delayed items are due at once
	mutEnqueueReplaces                           // enqueue of a live ID replaces the item
	mutAttemptToken                              // the token is the attempt number, reused after a re-enqueue
	mutRacyClaim                                 // a claim picks its item, lets go of the lock, then leases it: two workers get one item
	mutAllOrNothingComplete                      // one lost lease in a batch fails the whole Complete
	mutRequeueIgnoresError                       // Requeue drops the ErrorContains part of its filter
	mutDeadPagingRepeats                         // a dead-letter page's cursor points one before its last item
	mutIgnoreContext                             // calls go ahead with a cancelled context
	mutDelayedLosesPlace                         // a tenant whose items were all delayed rejoins at the back when one falls due
	mutWrapCounters                              // PatchRun lets a counter wrap past the int64 range instead of refusing the patch
)

func (m mutation) has(f mutation) bool { return m&f != 0 }

// patchUnlocked is PatchRun done wrong on purpose (mutLostPatch): the read
// and the write are separate critical sections, so a patch landing in
// between is overwritten.
func (s *Store) patchUnlocked(ctx context.Context, tenant, id string, patch contract.Patch) (*contract.Run, error) {
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
	s.touch(stored, s.clock.Now())
	return copyRun(stored), nil
}

// claimRacy is Claim done wrong on purpose (mutRacyClaim): it picks the
// item in one critical section and leases it in another without checking
// that it is still queued, so concurrent claimers can lease one item twice.
func (s *Store) claimRacy(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	q := s.queues[contract.QueueName(req.Queue)]
	var tq *tenantQueue
	if q != nil {
		tq = q.next(s.clock.Now(), s.mutations)
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
	e.claimExpires = e.expires
	q.leases.Put(e.leaseKey(), e)
	return []contract.Lease{e.lease()}, nil
}
