package memstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
)

// Claims take turns between tenants: the tenant with a backlog does not
// hold back the one beside it.
func Example_queue() {
	ctx := context.Background()
	store := memstore.New(nil, memstore.Settings{})

	store.Enqueue(ctx,
		contract.Item{Tenant: "big", ID: "b1"},
		contract.Item{Tenant: "big", ID: "b2"},
		contract.Item{Tenant: "big", ID: "b3"},
		contract.Item{Tenant: "small", ID: "s1"},
	)
	leases, _ := store.Claim(ctx, contract.ClaimRequest{Worker: "w1", LeaseFor: 30 * time.Second, Max: 3})
	for _, l := range leases {
		fmt.Println("claimed", l.Item.Tenant, l.Item.ID)
	}

	// Each complete is fenced by the token its claim handed out.
	if err := store.Complete(ctx, leases...); err != nil {
		fmt.Println(err)
	}
	stale := leases[0]
	fmt.Println("complete again:", store.Complete(ctx, stale))
	// Output:
	// claimed big b1
	// claimed small s1
	// claimed big b2
	// complete again: adk: lease lost for 1 item(s): "big"/"default"/"b1"
}
