package backing_test

import (
	"context"
	"fmt"
	"log"

	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/contract"
)

// Open the backing the environment names: here neither ADK_REDIS_DSN nor
// ADK_POSTGRES_DSN is set, so it is the in-memory store.
func ExampleOpen() {
	getenv := func(string) string { return "" } // os.Getenv in a real command
	ctx := context.Background()
	b, err := backing.Open(ctx, backing.FromEnv(getenv))
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	if b.Verdict != nil {
		log.Fatal("the server is not fit for the kit: ", b.Verdict)
	}
	_ = b.Queue.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-1"})
	tenants, _ := b.Inspector.Tenants(ctx, contract.DefaultQueue)
	fmt.Println(b.Name, tenants[0].Tenant, tenants[0].Ready)
	// Output: memory acme 1
}
