//go:build integration

package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// Idle tenants (their items due later) do not take a busy tenant off the
// chunk path: round 1 finds it alone, so its batch is its first item and
// then one locking range of the index, not one step of the walk per item.
// auto_explain with ANALYZE shows it: the locking scan of the walk's
// recursive term runs once for the whole batch (it ran 49 times before).
func TestChunkPathWithIdleTenants(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	conn, q := newIdleBesideBusy(t, ctx, 200)
	for round := range 3 {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 50})
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range ls {
			if want := fmt.Sprintf("%04d", 50*round+i); l.Item.Tenant != "busy" || l.Item.ID != want {
				t.Fatalf("claim %d, lease %d: %s/%s; want busy/%s", round, i, l.Item.Tenant, l.Item.ID, want)
			}
		}
		if len(ls) != 50 {
			t.Fatalf("claim %d returned %d leases, want 50", round, len(ls))
		}
		plan := conn.plan(t, "WITH RECURSIVE")
		_, walk, _ := strings.Cut(plan, "WorkTable Scan on pick p")
		if rows, loops := lockScan(t, walk, plan); loops > 1 {
			t.Errorf("claim %d ran the walk's locking scan %d times (%d rows each) for one busy tenant beside 49 idle ones; want once (the chunk path):\n%s", round, loops, rows, plan)
		}
	}
}

// newIdleBesideBusy is an explained queue (see newExplainedQueue) holding
// busy items of tenant "busy", 0000 on, beside 49 tenants whose one item
// is due in an hour; auto_explain with ANALYZE is on from here.
func newIdleBesideBusy(t *testing.T, ctx context.Context, busy int) (*explainedConn, *pgstore.PostgresWorkQueue) {
	t.Helper()
	conn, q := newExplainedQueue(t, ctx, newTestDB(t), nil)
	later := time.Now().Add(time.Hour)
	var items []contract.Item
	for i := range 49 {
		items = append(items, contract.Item{Tenant: fmt.Sprintf("idle-%02d", i), ID: "later", NotBefore: later})
	}
	for i := range busy {
		items = append(items, contract.Item{Tenant: "busy", ID: fmt.Sprintf("%04d", i)})
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	conn.explain(t, ctx, true)
	return conn, q
}
