//go:build integration

package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
)

func countTurns(t *testing.T, d *testDB) int {
	t.Helper()
	var n int
	if err := d.pool.QueryRow(context.Background(), "SELECT count(*) FROM adk_queue_turns").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Tenants that drained and stayed idle past TurnRetention lose their
// rotation row at the next Reap, so they cost claims nothing; one that
// comes back is served again.
func TestReapPrunesIdleTenants(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	clock := contracttest.NewFakeClock(time.Time{})
	q, err := pgstore.NewQueue(d.pool, clock, d.settings(pgstore.Settings{TurnRetention: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	var items []contract.Item
	for i := range 200 {
		items = append(items, contract.Item{Tenant: fmt.Sprintf("gone-%03d", i), ID: "x"})
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 200})
	if err != nil || len(ls) != 200 {
		t.Fatalf("claim: %d, %v", len(ls), err)
	}
	if err := q.Complete(ctx, ls...); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "busy", ID: "b1"}, contract.Item{Tenant: "later", ID: "l1", NotBefore: clock.Now().Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Reap(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if n := countTurns(t, d); n != 202 {
		t.Fatalf("within the retention %d turn rows, want all 202", n)
	}
	clock.Advance(2 * time.Hour)
	if _, err := q.Reap(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if n := countTurns(t, d); n != 2 {
		t.Fatalf("after the retention %d turn rows, want 2 (the tenants holding items)", n)
	}
	st, err := q.Tenants(ctx, "")
	if err != nil || len(st) != 2 {
		t.Fatalf("Tenants after pruning: %+v, %v", st, err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "gone-007", ID: "back"}); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for range 2 {
		ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
		if err != nil {
			t.Fatal(err)
		}
		got[ls[0].Item.Tenant] = true
	}
	if !got["gone-007"] || !got["busy"] {
		t.Fatalf("claims after a pruned tenant returned served %v", got)
	}
}

// Pruning racing enqueues for the same tenant never leaves an item
// without a rotation row (which would starve it).
func TestPruneRacesEnqueue(t *testing.T) {
	d := newTestDB(t, withMaxConns(6))
	ctx := ctxT(t, 2*time.Minute)
	q, err := pgstore.NewQueue(d.pool, contract.SystemClock{}, d.settings(pgstore.Settings{TurnRetention: time.Nanosecond}))
	if err != nil {
		t.Fatal(err)
	}
	const tenants, rounds = 8, 60
	for r := range rounds {
		var wg sync.WaitGroup
		for tn := range tenants {
			wg.Go(func() {
				if err := q.Enqueue(ctx, contract.Item{Tenant: fmt.Sprint("t", tn), ID: fmt.Sprint("r", r)}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Go(func() {
			if _, err := q.Reap(ctx, ""); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		var orphans int
		if err := d.pool.QueryRow(ctx, `SELECT count(*) FROM adk_work w
			WHERE NOT EXISTS (SELECT 1 FROM adk_queue_turns t WHERE t.queue = w.queue AND t.tenant = w.tenant)`).Scan(&orphans); err != nil {
			t.Fatal(err)
		}
		if orphans > 0 {
			t.Fatalf("round %d: %d items without a rotation row", r, orphans)
		}
		// Drain, so every tenant is prunable again in the next round.
		for {
			ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 100})
			if err != nil {
				break
			}
			if err := q.Complete(ctx, ls...); err != nil {
				t.Fatal(err)
			}
		}
	}
}
