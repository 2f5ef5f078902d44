//go:build integration

package pgstore_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/claimcheck"
	"github.com/adkit/adk/modules/pgstore"
)

// A payload four times the queue's limit travels behind the schema's blob
// table: the queue holds a reference, the claim restores the bytes, and
// completing the item deletes the blob.
func TestClaimCheckOnBlobTable(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	blobs, err := pgstore.NewBlobStore(d.pool, pgstore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	q := claimcheck.Wrap(newQueue(t, d, pgstore.Settings{}), blobs, 64<<10)
	big := bytes.Repeat([]byte("0123456789abcdef"), contract.DefaultMaxValueBytes/16*4)
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "big", Payload: big}); err != nil {
		t.Fatal(err)
	}
	countBlobs := func() int {
		var n int
		if err := d.pool.QueryRow(context.Background(), "SELECT count(*) FROM adk_blobs").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var stored int
	if err := d.pool.QueryRow(ctx, "SELECT coalesce(length(payload), 0) FROM adk_work WHERE id = 'big'").Scan(&stored); err != nil || stored != 0 {
		t.Fatalf("the work row holds %d payload bytes (%v); want only the reference", stored, err)
	}
	if n := countBlobs(); n != 1 {
		t.Fatalf("%d blobs stored, want 1", n)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ls[0].Item.Payload, big) {
		t.Fatalf("claim restored %d bytes, want %d", len(ls[0].Item.Payload), len(big))
	}
	if err := q.Complete(ctx, ls...); err != nil {
		t.Fatal(err)
	}
	if n := countBlobs(); n != 0 {
		t.Fatalf("%d blobs left after Complete, want 0", n)
	}
}
