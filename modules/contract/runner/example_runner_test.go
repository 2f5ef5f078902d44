package runner_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/contract/runner"
)

// A runner with a handler: it works through three items, then stops when
// its context is cancelled.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	q := memstore.New(nil, memstore.Settings{})
	_ = q.Enqueue(ctx,
		contract.Item{Tenant: "acme", ID: "step-1", Payload: []byte("plan")},
		contract.Item{Tenant: "acme", ID: "step-2", Payload: []byte("call the model")},
		contract.Item{Tenant: "acme", ID: "step-3", Payload: []byte("call the tools")},
	)

	var (
		mu   sync.Mutex
		done = map[string]string{}
	)
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		mu.Lock()
		defer mu.Unlock()
		done[l.Item.ID] = string(l.Item.Payload)
		if len(done) == 3 {
			stop() // a real worker runs until its process is told to stop
		}
		return nil
	}, runner.Config{Concurrency: 2, PollInterval: 10 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	if err := r.Run(ctx); err != nil {
		panic(err)
	}

	for _, id := range []string{"step-1", "step-2", "step-3"} {
		fmt.Println(id, done[id])
	}
	_, err = q.Claim(context.Background(), contract.ClaimRequest{Worker: "check", LeaseFor: time.Minute, Max: 10})
	fmt.Println("left in the queue:", err)
	// Output:
	// step-1 plan
	// step-2 call the model
	// step-3 call the tools
	// left in the queue: adk: queue empty
}
