//go:build integration

package pgstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

// One tenant holding 100,000 items and fifty holding ten each: every small
// tenant's first item is claimed within the first 60 claims, one at a
// time and in batches of ten.
func TestFairnessUnderBacklog(t *testing.T) {
	for _, batch := range []int{1, 10} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			d := newTestDB(t)
			ctx := ctxT(t, 2*time.Minute)
			q := newQueue(t, d, pgstore.Settings{})
			// The backlog arrives first, so the big tenant is ahead in
			// every respect but the rotation.
			if err := q.Enqueue(ctx, contract.Item{Tenant: "big", ID: "first"}); err != nil {
				t.Fatal(err)
			}
			if _, err := d.pool.Exec(ctx, `
				INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at)
				SELECT 'default', 'big', 'b' || g, 'queued', now() - interval '1 hour', now() FROM generate_series(1, 99999) g;
				ANALYZE adk_work`); err != nil {
				t.Fatal(err)
			}
			var small []contract.Item
			for s := range 50 {
				for i := range 10 {
					small = append(small, contract.Item{Tenant: fmt.Sprintf("small-%02d", s), ID: fmt.Sprint(i)})
				}
			}
			if err := q.Enqueue(ctx, small...); err != nil {
				t.Fatal(err)
			}
			first := map[string]int{}
			claims := 0
			for claims < 60 {
				ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: min(batch, 60-claims)})
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range ls {
					claims++
					if _, ok := first[l.Item.Tenant]; !ok {
						first[l.Item.Tenant] = claims
					}
				}
				if err := q.Complete(ctx, ls...); err != nil {
					t.Fatal(err)
				}
			}
			for s := range 50 {
				name := fmt.Sprintf("small-%02d", s)
				if _, ok := first[name]; !ok {
					t.Errorf("%s not served within the first 60 claims", name)
				}
			}
		})
	}
}

// Recent turns never show a gap: when a busy tenant has taken more turns
// than its row keeps, the listing is cut to the window every tenant's
// history still covers, so the strip on the dashboard cannot make a busy
// tenant look starved.
func TestRecentTurnsHaveNoGaps(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q := newQueue(t, d, pgstore.Settings{})
	var items []contract.Item
	for i := range 120 {
		items = append(items, contract.Item{Tenant: "busy", ID: fmt.Sprint(i)})
	}
	for i := range 4 {
		items = append(items, contract.Item{Tenant: "quiet", ID: fmt.Sprint(i)})
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	var claimed []string
	for {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
		if errors.Is(err, contract.ErrEmpty) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		claimed = append(claimed, ls[0].Item.Tenant+"/"+ls[0].Item.ID)
		if err := q.Complete(ctx, ls...); err != nil {
			t.Fatal(err)
		}
	}
	if len(claimed) != len(items) {
		t.Fatalf("claimed %d of %d items", len(claimed), len(items))
	}
	rot, err := q.Rotation(ctx, contract.DefaultQueue, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rot.Recent) < 32 {
		t.Fatalf("Recent has %d turns; the busy tenant alone keeps 32", len(rot.Recent))
	}
	tail := claimed[len(claimed)-len(rot.Recent):]
	for i, turn := range rot.Recent {
		if got := turn.Tenant + "/" + turn.ID; got != tail[i] {
			t.Fatalf("Recent[%d] = %s, want %s: the listing is not the exact tail of the claims", i, got, tail[i])
		}
	}
}
