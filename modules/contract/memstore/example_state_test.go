package memstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
)

// A run is created with Version 0, updated with the version it was read
// at, and patched without any version at all.
func Example_runState() {
	ctx := context.Background()
	store := memstore.New(nil, memstore.Settings{})

	run, _ := store.PutRun(ctx, contract.Run{
		Tenant: "acme",
		ID:     "run-1",
		Status: "planning",
		Data:   json.RawMessage(`{"goal":"summarise the inbox"}`),
	})
	fmt.Println("created at version", run.Version)

	// Workers add to the counters concurrently; patches never conflict.
	store.PatchRun(ctx, "acme", "run-1", contract.Patch{Counters: contract.Counters{InputTokens: 1200, OutputTokens: 300, Iterations: 1}})
	store.PatchRun(ctx, "acme", "run-1", contract.Patch{Counters: contract.Counters{InputTokens: 800, Iterations: 1}, Status: "calling tools"})

	// A put holding the version read before the patches is refused.
	run.Data = json.RawMessage(`{"goal":"summarise the inbox","step":2}`)
	_, err := store.PutRun(ctx, *run)
	var conflict *contract.StateConflictError
	if errors.As(err, &conflict) {
		fmt.Println("conflict: held", conflict.Expected, "stored", conflict.Actual)
	}

	got, _ := store.GetRun(ctx, "acme", "run-1")
	fmt.Println(got.Status, got.Version, got.Counters.InputTokens, got.Counters.Iterations)
	// Output:
	// created at version 1
	// conflict: held 1 stored 3
	// calling tools 3 2000 2
}
