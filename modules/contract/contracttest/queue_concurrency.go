package contracttest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// queueConcurrencyCases pin that workers claiming at once never get the
// same item, and that nothing is lost.
func queueConcurrencyCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"ConcurrentClaimsMax1", func(t *testing.T, f QueueFactory) { testConcurrentClaims(t, f, 1, false) }},
		{"ConcurrentClaimsMax5", func(t *testing.T, f QueueFactory) { testConcurrentClaims(t, f, 5, false) }},
		{"ConcurrentClaimCompleteMax5", func(t *testing.T, f QueueFactory) { testConcurrentClaims(t, f, 5, true) }},
		{"ConcurrentEnqueueAndClaim", testConcurrentEnqueueAndClaim},
	}
}

func testConcurrentClaims(t *testing.T, f QueueFactory, max int, complete bool) {
	const workers, total = 10, 200
	q, _ := newQueue(t, f, testPolicy())
	var all []contract.Item
	for i := range 4 {
		all = append(all, items(fmt.Sprintf("tenant-%d", i), "job", total/4)...)
	}
	enqueue(t, q, all...)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		leases []contract.Lease
		errs   []error
	)
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req := contract.ClaimRequest{Worker: fmt.Sprintf("worker-%d", w), LeaseFor: time.Hour, Max: max}
			for range total {
				ls, err := q.Claim(t.Context(), req)
				if errors.Is(err, contract.ErrEmpty) {
					return
				}
				if err == nil && complete {
					err = q.Complete(t.Context(), ls...)
				}
				mu.Lock()
				leases = append(leases, ls...)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		t.Errorf("concurrent claim (Max %d) failed: %v", max, err)
	}
	// Under SKIP LOCKED a claimer may see nothing while its peers hold
	// the rows they are about to take; whatever is left must still be due.
	leases = append(leases, drain(t, q, "", "sweeper", contract.MaxClaimBatch)...)
	seen := map[contract.ItemKey]int{}
	for _, l := range leases {
		seen[normKey(l.Key())]++
		if max > 0 && l.Worker == "" {
			t.Errorf("lease of %v names no worker", l.Key())
		}
	}
	twice := 0
	for _, it := range all {
		switch n := seen[it.Key()]; {
		case n == 0:
			t.Errorf("item %s/%s was never claimed", it.Tenant, it.ID)
		case n > 1:
			twice++
			if twice <= 5 {
				t.Errorf("item %s/%s was claimed %d times by concurrent workers", it.Tenant, it.ID, n)
			}
		}
	}
	if len(leases) != total {
		t.Errorf("%d workers claiming %d items got %d leases in all, want %d", workers, total, len(leases), total)
	}
}

func testConcurrentEnqueueAndClaim(t *testing.T, f QueueFactory) {
	const producers, each, consumers = 4, 50, 6
	q, _ := newQueue(t, f, testPolicy())
	var (
		wg        sync.WaitGroup
		done      atomic.Int64
		mu        sync.Mutex
		completed = map[contract.ItemKey]int{}
	)
	errc := make(chan error, producers+consumers)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := q.Enqueue(t.Context(), item(fmt.Sprintf("p%d", p), fmt.Sprintf("job-%d", i))); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < producers*each && time.Now().Before(deadline) {
				ls, err := q.Claim(t.Context(), contract.ClaimRequest{Worker: fmt.Sprintf("c%d", c), LeaseFor: time.Hour, Max: 3})
				if errors.Is(err, contract.ErrEmpty) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err == nil {
					err = q.Complete(t.Context(), ls...)
				}
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				for _, l := range ls {
					completed[normKey(l.Key())]++
				}
				mu.Unlock()
				done.Add(int64(len(ls)))
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("concurrent enqueue/claim/complete failed: %v", err)
	}
	if n := done.Load(); n != producers*each {
		t.Errorf("completed %d items, want %d (real-time limit 60s)", n, producers*each)
	}
	for k, n := range completed {
		if n != 1 {
			t.Errorf("item %v completed %d times", k, n)
		}
	}
	if len(completed) != producers*each {
		t.Errorf("%d distinct items completed, want %d", len(completed), producers*each)
	}
}
