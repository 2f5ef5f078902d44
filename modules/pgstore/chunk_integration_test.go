//go:build integration

package pgstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

// With a single tenant a claim takes its items as one chunk of the
// index: still first in, first out, exactly Max of them.
func TestSingleTenantChunkKeepsOrder(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q := newQueue(t, d, pgstore.Settings{})
	const n = 250
	items := make([]contract.Item, n)
	for i := range items {
		items[i] = contract.Item{Tenant: "solo", ID: fmt.Sprintf("%04d", i)}
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	next := 0
	for _, want := range []int{1, 100, 100, 49} {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: want})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) != want {
			t.Fatalf("Claim(Max %d) returned %d leases", want, len(ls))
		}
		for _, l := range ls {
			if l.Item.ID != fmt.Sprintf("%04d", next) {
				t.Fatalf("lease %d is item %s; want %04d (first in, first out)", next, l.Item.ID, next)
			}
			next++
		}
	}
	if _, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 100}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("claim after the last item: %v, want ErrEmpty", err)
	}
}

// Concurrent chunk claims of one tenant take every item exactly once.
func TestSingleTenantChunkConcurrent(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, 2*time.Minute)
	q := newQueue(t, d, pgstore.Settings{})
	const n = 2000
	items := make([]contract.Item, n)
	for i := range items {
		items[i] = contract.Item{Tenant: "solo", ID: fmt.Sprint(i)}
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
		errs = make(chan error, 4)
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: fmt.Sprint("w", w), LeaseFor: time.Minute, Max: 50})
				if errors.Is(err, contract.ErrEmpty) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, l := range ls {
					seen[l.Item.ID]++
				}
				mu.Unlock()
				if err := q.Complete(ctx, ls...); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Errorf("claimed %d distinct items of %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("item %s claimed %d times", id, c)
		}
	}
}
