//go:build integration

package pgstore_test

import (
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

// A heartbeat changes only unindexed lease columns, so PostgreSQL can
// make it a HOT update: no new index entries, less bloat on adk_work.
func TestHeartbeatIsHOTUpdate(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q := newQueue(t, d, pgstore.Settings{})
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x", Payload: []byte("p")}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// The backend's pending counters may still hold earlier statements
	// of the connection: compare before and after.
	counts := func() (updated, hot int64) {
		t.Helper()
		if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_updated('adk_work'::regclass),
			pg_stat_get_xact_tuples_hot_updated('adk_work'::regclass)`).Scan(&updated, &hot); err != nil {
			t.Fatal(err)
		}
		return updated, hot
	}
	updated0, hot0 := counts()
	bq := q.Bound(tx)
	l := ls[0]
	const beats = 20
	for range beats {
		if l, err = bq.Heartbeat(ctx, l, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	updated, hot := counts()
	updated, hot = updated-updated0, hot-hot0
	if updated != beats {
		t.Fatalf("%d heartbeats updated %d rows", beats, updated)
	}
	// A page can run out of room now and then; nearly all must be HOT.
	if hot < beats*3/4 {
		t.Errorf("%d of %d heartbeats were HOT updates; the lease columns must stay out of every index", hot, beats)
	}
}
