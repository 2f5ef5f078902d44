package memstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
)

// checkInvariants verifies that the indexes agree with the tenants' item maps: every
// item sits in exactly the index its state names, counts match, and every
// tenant with queued work is placed in the rotation by its earliest item.
func checkInvariants(t *testing.T, st *Store) {
	s := st.s
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	perQueue := map[string]int{}
	perFinished := map[string]int{}
	liveSeen := 0
	for k, e := range allItems(s) {
		if k != e.item.Key() {
			t.Fatalf("item under key %v says it is %v", k, e.item.Key())
		}
		q := s.queues[k.Queue]
		tq := q.tenants[k.Tenant]
		if e.tq != tq {
			t.Fatalf("item %v points at another tenant's part of its queue", k)
		}
		perQueue[k.Queue]++
		if e.item.State == contract.StateCompleted || e.item.State == contract.StateCancelled {
			perFinished[k.Queue]++
		}
		switch e.item.State {
		case contract.StateQueued:
			get := tq.ready.Get
			if e.isLater {
				get = tq.later.Get
			}
			if got, ok := get(e.ready); !ok || got != e {
				t.Fatalf("queued item %v missing from its ready index (later: %v)", k, e.isLater)
			}
		case contract.StateWaiting:
			if got, ok := q.parked.Get(e.waitSeq); !ok || got != e || e.item.Waiting == nil {
				t.Fatalf("waiting item %v missing from the parked index", k)
			}
			if got, ok := q.timeouts.Get(e.ready); !ok || got != e {
				t.Fatalf("waiting item %v missing from the timeouts", k)
			}
		case contract.StateCancelled:
			if got, ok := q.cancelled.Get(e.ready); !ok || got != e {
				t.Fatalf("cancelled item %v missing from the cancelled index", k)
			}
			if got, ok := q.finished.Get(e.finKey()); !ok || got != e {
				t.Fatalf("cancelled item %v missing from the finished index", k)
			}
		case contract.StateCompleted:
			if got, ok := q.finished.Get(e.finKey()); !ok || got != e {
				t.Fatalf("completed item %v missing from the finished index", k)
			}
		case contract.StateLeased:
			if got, ok := q.leases.Get(e.leaseKey()); !ok || got != e {
				t.Fatalf("leased item %v missing from the lease index", k)
			}
			if s.live[e.token] != e {
				t.Fatalf("leased item %v missing from the live leases under its token %d", k, e.token)
			}
			liveSeen++
		case contract.StateDead:
			if got, ok := q.dead.Get(e.deadSeq); !ok || got != e {
				t.Fatalf("dead item %v missing from the dead letters", k)
			}
		default:
			t.Fatalf("item %v in state %q", k, e.item.State)
		}
	}
	if len(s.live) != liveSeen {
		t.Fatalf("the live leases hold %d entries, the items %d leases", len(s.live), liveSeen)
	}
	for name, q := range s.queues {
		if q.items != perQueue[name] {
			t.Fatalf("queue %s counts %d items, holds %d", name, q.items, perQueue[name])
		}
		if q.finished.Len() != perFinished[name] {
			t.Fatalf("queue %s holds %d finished items, its finished index %d", name, perFinished[name], q.finished.Len())
		}
		indexed := 0
		for id, e := range q.ids {
			var prev *entry
			for ; e != nil; prev, e = e, e.nextID {
				if e.item.ID != id || s.item(e.item.Key()) != e {
					t.Fatalf("queue %s indexes %v under ID %q, which its tenant's item map does not hold there", name, e.item.Key(), id)
				}
				if e.prevID != prev {
					t.Fatalf("queue %s: %v's back link in the index by ID does not name the item before it", name, e.item.Key())
				}
				indexed++
			}
		}
		if q.ids != nil && indexed != q.items {
			t.Fatalf("queue %s indexes %d items by ID, holds %d", name, indexed, q.items)
		}
		leased, dead, placed, waiting, cancelled := 0, 0, 0, 0, 0
		for _, tq := range q.tenants {
			leased += tq.leased
			dead += tq.dead
			waiting += tq.waiting
			cancelled += tq.cancelled
			check := func(later bool) func(readyKey, *entry) bool {
				return func(_ readyKey, e *entry) bool {
					if e.item.State != contract.StateQueued || e.item.Tenant != tq.name || e.isLater != later {
						t.Fatalf("ready index of %s holds %v in state %s", tq.name, e.item.Key(), e.item.State)
					}
					return true
				}
			}
			tq.ready.Ascend(check(false))
			tq.later.Ascend(nil, check(true))
			n := 0
			for i, l := range tq.ready.levels {
				n += l.t.Len()
				if l.t.Len() == 0 || (i > 0 && tq.ready.levels[i-1].rank >= l.rank) {
					t.Fatalf("tenant %s's ready levels are not one non-empty tree per rank in order", tq.name)
				}
			}
			if n != tq.ready.Len() {
				t.Fatalf("tenant %s's ready set counts %d, holds %d", tq.name, tq.ready.Len(), n)
			}
			k, _, _ := tq.later.Min()
			if tq.ready.Len() > 0 && tq.place != inDue {
				t.Fatalf("tenant %s has ready items but is not in due (%d)", tq.name, tq.place)
			}
			switch {
			case tq.queued() == 0 && tq.place != unplaced:
				t.Fatalf("tenant %s has no queued item but is placed (%d)", tq.name, tq.place)
			case tq.queued() > 0 && tq.place == unplaced:
				t.Fatalf("tenant %s has queued items but is not in the rotation", tq.name)
			case tq.place == inDue:
				placed++
				if got, ok := q.due.Get(tq.stamp); !ok || got != tq {
					t.Fatalf("tenant %s not in due under its stamp", tq.name)
				}
			case tq.place == inWaiting:
				placed++
				if !tq.waitAt.Equal(k.due) {
					t.Fatalf("tenant %s waits for %v, its first item is due %v", tq.name, tq.waitAt, k.due)
				}
				if got, ok := q.waiting.Get(waitKey{tq.waitAt, tq.stamp}); !ok || got != tq {
					t.Fatalf("tenant %s not in waiting under its key", tq.name)
				}
			}
		}
		if waiting != q.parked.Len() || waiting != q.timeouts.Len() || cancelled != q.cancelled.Len() {
			t.Fatalf("queue %s: waiting %d/%d/%d, cancelled %d/%d", name, waiting, q.parked.Len(), q.timeouts.Len(), cancelled, q.cancelled.Len())
		}
		if leased != q.leases.Len() || dead != q.dead.Len() || placed != q.due.Len()+q.waiting.Len() {
			t.Fatalf("queue %s: leased %d/%d, dead %d/%d, placed %d/%d", name, leased, q.leases.Len(), dead, q.dead.Len(), placed, q.due.Len()+q.waiting.Len())
		}
	}
}

// TestRandomOperationsKeepInvariants runs a long random mix of every
// queue operation and checks the invariants after each.
func TestRandomOperationsKeepInvariants(t *testing.T) {
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	s := New(clock, Settings{Policy: policy.Policy{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: 4 * time.Second, Jitter: policy.Fixed(0.5)}})
	ctx := t.Context()
	r := rand.New(rand.NewPCG(7, 7))
	var held []contract.Lease
	queues := []string{"", "q2"}
	// q2 keeps its finished items and records events; the default queue
	// keeps only those with a uniqueness window.
	if err := s.SetRetention(ctx, "q2", contract.Retention{Age: 3 * time.Second, Count: 10, Events: 5}); err != nil {
		t.Fatal(err)
	}
	// q2 is searched by ID from the start, so it keeps its index by ID
	// throughout; the default queue builds it halfway.
	if _, err := s.Find(ctx, "q2", "0"); err != nil {
		t.Fatal(err)
	}
	for step := range 2500 {
		if step == 1250 {
			if _, err := s.Find(ctx, "", "0"); err != nil {
				t.Fatal(err)
			}
		}
		qn := queues[r.IntN(2)]
		switch op := r.IntN(16); op {
		case 10:
			tenant := ""
			if r.IntN(2) == 0 {
				tenant = fmt.Sprintf("t%d", r.IntN(6))
			}
			if r.IntN(2) == 0 {
				_ = s.Pause(ctx, qn, tenant)
			} else {
				_ = s.Resume(ctx, qn, tenant)
			}
		case 11:
			k := contract.ItemKey{Tenant: fmt.Sprintf("t%d", r.IntN(6)), Queue: contract.QueueName(qn), ID: fmt.Sprint(r.IntN(40))}
			_, _ = s.Cancel(ctx, k, "random")
		case 12:
			if len(held) > 0 {
				i := r.IntN(len(held))
				_, _ = s.Snooze(ctx, held[i], time.Duration(r.IntN(3000))*time.Millisecond)
				held = append(held[:i], held[i+1:]...)
			}
		case 13:
			if len(held) > 0 {
				i := r.IntN(len(held))
				_ = s.Wait(ctx, held[i], contract.WaitRequest{Signal: "go", Timeout: time.Duration(1+r.IntN(4000)) * time.Millisecond})
				held = append(held[:i], held[i+1:]...)
			}
		case 14:
			k := contract.ItemKey{Tenant: fmt.Sprintf("t%d", r.IntN(6)), Queue: contract.QueueName(qn), ID: fmt.Sprint(r.IntN(40))}
			_ = s.Signal(ctx, k, "go", []byte("p"))
		case 15:
			if r.IntN(4) == 0 {
				_, _ = s.PurgeCancelled(ctx, qn, clock.Now())
			} else {
				_, _ = s.CancelMatching(ctx, contract.CancelFilter{Queue: qn, Tenant: fmt.Sprintf("t%d", r.IntN(6)), IDPrefix: fmt.Sprint(r.IntN(4))}, "bulk")
			}
		case 0, 1:
			it := contract.Item{Tenant: fmt.Sprintf("t%d", r.IntN(6)), ID: fmt.Sprint(r.IntN(40)), Queue: qn, Priority: r.IntN(5) - 2}
			if r.IntN(3) == 0 {
				it.NotBefore = clock.Now().Add(time.Duration(r.IntN(5000)) * time.Millisecond)
			}
			if r.IntN(4) == 0 {
				it.UniqueFor = time.Duration(1+r.IntN(3)) * time.Second
			}
			if err := s.Enqueue(ctx, it); err != nil {
				t.Fatal(err)
			}
		case 2, 3:
			ls, err := s.Claim(ctx, contract.ClaimRequest{Queue: qn, LeaseFor: time.Duration(1+r.IntN(3)) * time.Second, Max: 1 + r.IntN(4)})
			if err != nil && !errors.Is(err, contract.ErrEmpty) {
				t.Fatal(err)
			}
			held = append(held, ls...)
		case 4:
			if len(held) > 0 {
				i := r.IntN(len(held))
				_ = s.Complete(ctx, held[i])
				held = append(held[:i], held[i+1:]...)
			}
		case 5:
			if len(held) > 0 {
				i := r.IntN(len(held))
				_, _ = s.Fail(ctx, held[i], errors.New("nope"))
				held = append(held[:i], held[i+1:]...)
			}
		case 6:
			if len(held) > 0 {
				i := r.IntN(len(held))
				if l, err := s.Heartbeat(ctx, held[i], time.Second); err == nil {
					held[i] = l
				}
			}
		case 7:
			if _, err := s.Reap(ctx, qn); err != nil {
				t.Fatal(err)
			}
		case 8:
			f := contract.DeadLetterFilter{Queue: qn}
			if r.IntN(2) == 0 {
				f.Tenant = fmt.Sprintf("t%d", r.IntN(6))
			}
			if r.IntN(2) == 0 {
				_, _ = s.Requeue(ctx, f)
			} else {
				_, _ = s.Purge(ctx, f)
			}
		case 9:
			clock.Advance(time.Duration(r.IntN(1500)) * time.Millisecond)
			if _, err := s.Prune(ctx, qn); err != nil {
				t.Fatal(err)
			}
		}
		if step%4 == 0 {
			checkInvariants(t, s)
			if t.Failed() {
				t.Fatalf("after step %d", step)
			}
		}
	}
}

// TestConcurrentOperationsKeepInvariants runs workers, a reaper and an
// inspector at once (for the race detector), then checks the invariants
// and that no item was lost or duplicated.
func TestConcurrentOperationsKeepInvariants(t *testing.T) {
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	s := New(clock, Settings{Policy: policy.Policy{MaxAttempts: 100, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, Jitter: policy.Fixed(0)}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const items = 400
	var batch []contract.Item
	for i := range items {
		batch = append(batch, contract.Item{Tenant: fmt.Sprintf("t%d", i%7), ID: fmt.Sprint(i)})
	}
	if err := s.Enqueue(ctx, batch...); err != nil {
		t.Fatal(err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done = map[contract.ItemKey]int{}
	)
	for w := range 6 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for ctx.Err() == nil {
				ls, err := s.Claim(ctx, contract.ClaimRequest{Worker: fmt.Sprint("w", w), LeaseFor: time.Second, Max: 1 + r.IntN(5)})
				if errors.Is(err, contract.ErrEmpty) {
					mu.Lock()
					finished := len(done) == items
					mu.Unlock()
					if finished {
						return
					}
					clock.Advance(time.Millisecond)
					continue
				}
				if err != nil {
					return
				}
				for _, l := range ls {
					switch r.IntN(4) {
					case 0:
						_, _ = s.Fail(ctx, l, errors.New("flaky"))
					case 1:
						if l2, err := s.Heartbeat(ctx, l, time.Second); err == nil {
							l = l2
						}
						fallthrough
					default:
						if err := s.Complete(ctx, l); err == nil {
							mu.Lock()
							done[l.Key()]++
							mu.Unlock()
						}
					}
				}
			}
		})
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			_, _ = s.Reap(ctx, "")
			_, _ = s.Tenants(ctx, "")
			_, _ = s.Leases(ctx, "", contract.PageRequest{})
			mu.Lock()
			finished := len(done) == items
			mu.Unlock()
			if finished {
				return
			}
			clock.Advance(100 * time.Millisecond)
		}
	})
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		cancel()
		<-finished
		t.Fatalf("workers did not finish: %d of %d items completed", len(done), items)
	}
	for k, n := range done {
		if n != 1 {
			t.Errorf("item %v completed %d times", k, n)
		}
	}
	checkInvariants(t, s)
	if n := len(allItems(s.s)); n != 0 {
		t.Errorf("%d items left after all completed", n)
	}
}

// allItems returns every item the store holds, under the key each is
// indexed by: its queue, the tenant whose index holds it, and its ID
// there.
func allItems(s *store) map[contract.ItemKey]*entry {
	out := map[contract.ItemKey]*entry{}
	for qn, q := range s.queues {
		for tn, tq := range q.tenants {
			for id, e := range tq.items {
				out[contract.ItemKey{Queue: qn, Tenant: tn, ID: id}] = e
			}
		}
	}
	return out
}
