//go:build integration

package pgstore_test

import (
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
