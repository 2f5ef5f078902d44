package runner_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/contract/runner"
)

// One runner serving two queues, each with its own handler and slots.
func ExampleConfig_queues() {
	ctx, stop := context.WithCancel(context.Background())
	q := memstore.New(nil, memstore.Settings{})
	_ = q.Enqueue(ctx,
		contract.Item{Queue: "agent-steps", Tenant: "acme", ID: "step-1"},
		contract.Item{Queue: "agent-steps", Tenant: "acme", ID: "step-2"},
		contract.Item{Queue: "notifications", Tenant: "acme", ID: "mail-1"},
	)

	var (
		mu   sync.Mutex
		done []string
	)
	record := func(what string) runner.Handler {
		return func(ctx context.Context, l contract.Lease) error {
			mu.Lock()
			defer mu.Unlock()
			done = append(done, what+" "+l.Item.ID)
			if len(done) == 3 {
				stop()
			}
			return nil
		}
	}
	r, err := runner.New(q, nil, runner.Config{
		PollInterval: 10 * time.Millisecond,
		Queues: []runner.QueueConfig{
			{Name: "agent-steps", Concurrency: 8, Handler: record("advanced")},
			{Name: "notifications", Concurrency: 1, Handler: record("sent")},
		},
	})
	if err != nil {
		panic(err)
	}
	if err := r.Run(ctx); err != nil {
		panic(err)
	}
	sort.Strings(done)
	for _, d := range done {
		fmt.Println(d)
	}
	// Output:
	// advanced step-1
	// advanced step-2
	// sent mail-1
}
