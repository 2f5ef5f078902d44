package contract_test

import (
	"context"
	"fmt"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
)

// The shortest use from the README: enqueue, claim and complete on the
// in-process store (redisstore and pgstore take the same calls).
func Example_readme() {
	fmt.Println(readme(context.Background()))
	// Output: <nil>
}

// readme is the README's shortest use, as it stands there.
func readme(ctx context.Context) error {
	store := memstore.New(contract.SystemClock{}, memstore.Settings{})
	_ = store.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run_1", Payload: []byte(`{"step":1}`)})
	leases, err := store.Claim(ctx, contract.ClaimRequest{Worker: "w1", LeaseFor: 30 * time.Second, Max: 10})
	if err != nil {
		return err // contract.ErrEmpty when nothing is due
	}
	return store.Complete(ctx, leases...)
}
