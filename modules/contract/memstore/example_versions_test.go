package memstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
)

// Two executions of one item write its run: the first holds lease token
// 7, loses its lease, and the second claims the item with token 9. Once
// the second has written the run, the first's writes are refused.
func Example_fencedWrites() {
	ctx := context.Background()
	store := memstore.New(nil, memstore.Settings{})

	run, _ := store.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-1", Data: json.RawMessage(`{"by":"first"}`), Fence: 7})

	// The second execution takes over.
	run.Data, run.Fence = json.RawMessage(`{"by":"second"}`), 9
	run, _ = store.PutRun(ctx, *run)

	// The first, unaware, writes again: refused, nothing written.
	_, err := store.PatchRun(ctx, "acme", "run-1", contract.Patch{Status: "done", Fence: 7})
	var stale *contract.StaleFenceError
	if errors.As(err, &stale) {
		fmt.Println("refused:", errors.Is(err, contract.ErrFenced), "fence", stale.Fence, "stored", stale.Stored)
	}

	got, _ := store.GetRun(ctx, "acme", "run-1")
	fmt.Println(string(got.Data), got.Version, got.Fence)
	// Output:
	// refused: true fence 7 stored 9
	// {"by":"second"} 2 9
}

// A store that keeps versions lists a run's history newest first, reads
// any kept version back and forks a new run from one.
func Example_runVersions() {
	ctx := context.Background()
	store := memstore.New(nil, memstore.Settings{Runs: contract.RunPolicy{KeepVersions: 10}})

	run, _ := store.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-1", Status: "planning", Data: json.RawMessage(`{"plan":"a"}`)})
	store.PatchRun(ctx, "acme", "run-1", contract.Patch{Counters: contract.Counters{Iterations: 1}}) // counters only: no version kept
	run, _ = store.GetRun(ctx, "acme", "run-1")
	run.Status, run.Data = "acting", json.RawMessage(`{"plan":"b"}`)
	store.PutRun(ctx, *run) // keeps version 2

	page, _ := store.ListRunVersions(ctx, "acme", "run-1", contract.PageRequest{})
	for _, v := range page.Versions {
		fmt.Println(v.Version, v.Status, string(v.Data), v.Counters.Iterations)
	}

	// Branch off from the plan before the change.
	fork, _ := store.ForkRun(ctx, "acme", "run-1", 2, "run-1-retry")
	fmt.Println(fork.ID, fork.Version, fork.Status, string(fork.Data))

	_, err := store.GetRunVersion(ctx, "acme", "run-1", 1)
	fmt.Println(errors.Is(err, contract.ErrNotFound)) // the create was replaced by a counter patch
	// Output:
	// 3 acting {"plan":"b"} 1
	// 2 planning {"plan":"a"} 1
	// run-1-retry 1 planning {"plan":"a"}
	// true
}
