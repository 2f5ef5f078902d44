package contract_test

import (
	"context"
	"fmt"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
)

// A tenant capped at two live leases gets two items of a claim of ten;
// the batch fills from the other tenants, and the claim's report says who
// was held back and why.
func ExampleFlowController() {
	ctx := context.Background()
	store := memstore.New(contract.SystemClock{}, memstore.Settings{})
	_ = store.SetLimits(ctx, "", "acme", contract.Limits{MaxLeased: 2})
	for i := range 5 {
		_ = store.Enqueue(ctx,
			contract.Item{Tenant: "acme", ID: fmt.Sprint("a", i)},
			contract.Item{Tenant: "globex", ID: fmt.Sprint("g", i)})
	}
	leases, _ := store.Claim(ctx, contract.ClaimRequest{Worker: "w1", LeaseFor: time.Minute, Max: 10})
	n := map[string]int{}
	for _, l := range leases {
		n[l.Item.Tenant]++
	}
	fmt.Println("first claim:", n)

	report := &contract.ClaimReport{}
	leases, err := store.Claim(contract.WithClaimReport(ctx, report), contract.ClaimRequest{Worker: "w1", LeaseFor: time.Minute, Max: 10})
	fmt.Println("second claim:", len(leases), err, "held:", report.Held)
	// Output:
	// first claim: map[acme:2 globex:5]
	// second claim: 0 adk: queue empty held: map[cap:1]
}
