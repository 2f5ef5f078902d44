package claimcheck_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/claimcheck"
	"github.com/adkit/adk/modules/contract/memstore"
)

// A payload above the threshold travels behind a claim check: the queue
// stores only the reference, the worker gets the bytes back.
func ExampleWrap() {
	ctx := context.Background()
	store := memstore.New(nil, memstore.Settings{})
	blobs := claimcheck.NewMemory()
	q := claimcheck.Wrap(store, blobs, 1<<10) // offload payloads over 1 KiB

	report := bytes.Repeat([]byte("x"), 300<<10)
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "summarise-1", Payload: report}); err != nil {
		panic(err)
	}
	info, _ := store.Item(ctx, contract.ItemKey{Tenant: "acme", Queue: contract.DefaultQueue, ID: "summarise-1"})
	fmt.Println("stored payload bytes:", len(info.Item.Payload), "size noted:", info.Item.Metadata[claimcheck.MetadataSizeKey])

	leases, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w1", LeaseFor: time.Minute, Max: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println("claimed payload bytes:", len(leases[0].Item.Payload))

	if err := q.Complete(ctx, leases...); err != nil {
		panic(err)
	}
	fmt.Println("blobs left:", blobs.Len())
	// Output:
	// stored payload bytes: 0 size noted: 307200
	// claimed payload bytes: 307200
	// blobs left: 0
}
