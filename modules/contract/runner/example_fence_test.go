package runner_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/contract/runner"
)

// A handler writes its run through Runs, so every write carries the
// lease's latest token as its fence. The store here requires a fence:
// the same write made outside a handler, with none, is refused.
func ExampleRuns() {
	ctx, stop := context.WithCancel(context.Background())
	store := memstore.New(nil, memstore.Settings{Runs: contract.RunPolicy{RequireFence: true}})
	_ = store.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "step-1", Payload: []byte("plan")})

	_, err := store.PutRun(ctx, contract.Run{Tenant: "acme", ID: "session-1", Status: "new"})
	var ve *contract.ValidationError
	if errors.As(err, &ve) {
		fmt.Println("unfenced write refused:", ve.Field)
	}

	r, err := runner.New(store, func(ctx context.Context, l contract.Lease) error {
		defer stop()
		fence, _ := runner.Fence(ctx)
		fmt.Println("fence is the lease's token:", fence == l.Token)
		run, err := runner.Runs(ctx, store).PutRun(ctx, contract.Run{Tenant: "acme", ID: "session-1", Status: "planned"})
		if err != nil {
			return err
		}
		fmt.Println("written by the handler:", run.Status, "fenced by the lease:", run.Fence == fence)
		return nil
	}, runner.Config{PollInterval: 10 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	if err := r.Run(ctx); err != nil {
		panic(err)
	}
	// Output:
	// unfenced write refused: Run.Fence
	// fence is the lease's token: true
	// written by the handler: planned fenced by the lease: true
}
