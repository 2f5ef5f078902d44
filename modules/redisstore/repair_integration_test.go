//go:build integration

package redisstore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestHalfWrittenEnqueueIsRepaired builds by hand what a script of an
// earlier release left when Redis stopped it half-way through an enqueue
// (the record written, the item in no ready set and its tenant in no
// rotation) and checks that the producer's retry queues the item, while a
// repeated enqueue of a healthy item, a leased one or a dead one still
// changes nothing.
func TestHalfWrittenEnqueueIsRepaired(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	clock := contracttest.NewFakeClock(time.Time{})
	q, _ := NewQueue(client, clock, Settings{Namespace: redistest.Namespace(t, client)})
	defer q.Close()
	p := q.d.keys.queue("default")
	// "leased" first, so that it is the one the first claim takes.
	items := []contract.Item{{Tenant: "b", ID: "leased"}, {Tenant: "acme", ID: "half"}, {Tenant: "acme", ID: "whole"}}
	if err := q.Enqueue(ctx, items[0]); err != nil {
		t.Fatal(err)
	}
	leased, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
	if err != nil || len(leased) != 1 || leased[0].Item.ID != "leased" {
		t.Fatalf("claim: %v %v", leased, err)
	}
	if err := q.Enqueue(ctx, items[1:]...); err != nil {
		t.Fatal(err)
	}
	// Take "half" out of READY and its tenant out of the rotation: the
	// record alone is left, as after a script stopped between its writes.
	raw, err := client.HGet(ctx, p+"items", itemRef("acme", "half")).Result()
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := parseRecord(raw)
	if err := client.ZRem(ctx, p+"ready", rec[fMember]).Err(); err != nil {
		t.Fatal(err)
	}
	// "whole" stays queued, but its tenant is taken out of the rotation
	// too: the worst case, nothing points at the tenant's items.
	if err := client.ZRem(ctx, p+"rot", "acme").Err(); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 10})
		if errors.Is(err, contract.ErrEmpty) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			got = append(got, l.Item.ID)
		}
		if err := q.Complete(ctx, ls...); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	// "half" repaired, "whole" once, the leased item not queued again.
	if want := []string{"half", "whole"}; !slices.Equal(got, want) {
		t.Fatalf("claimed after the retry %v, want %v", got, want)
	}
	if err := q.Complete(ctx, leased...); err != nil {
		t.Errorf("the leased item's lease was disturbed by the repeated enqueue: %v", err)
	}
}
