package runner_test

import (
	"context"
	"fmt"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/contract/runner"
)

// A step that needs a person's approval: the handler parks its item with
// WaitForSignal, which frees the worker; the approval arrives as a
// Signal, and the handler that runs the item next finds its payload.
func ExampleWaitForSignal() {
	ctx, stop := context.WithCancel(context.Background())
	q := memstore.New(nil, memstore.Settings{})
	step := contract.Item{Tenant: "acme", ID: "deploy-42", Payload: []byte("deploy v2 to production")}
	_ = q.Enqueue(ctx, step)

	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		res, ok := runner.Resumed(l, "approval")
		switch {
		case !ok:
			fmt.Printf("%s: asking for approval to %s\n", l.Item.ID, l.Item.Payload)
			return runner.WaitForSignal("approval", 24*time.Hour)
		case res.TimedOut:
			fmt.Printf("%s: nobody answered; giving up\n", l.Item.ID)
		default:
			fmt.Printf("%s: %s, deploying\n", l.Item.ID, res.Payload)
		}
		stop() // a real worker runs until its process is told to stop
		return nil
	}, runner.Config{Concurrency: 1, PollInterval: 10 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	// Elsewhere, a person looks at what waits for them (the dashboard
	// lists the same) and approves it.
	for {
		page, err := q.Waiting(ctx, "", contract.PageRequest{})
		if err != nil {
			panic(err)
		}
		if len(page.Items) == 1 {
			w := page.Items[0]
			fmt.Printf("%s waits for %s\n", w.ID, w.Waiting.Signal)
			break
		}
		time.Sleep(time.Millisecond) // the handler has not parked it yet
	}
	if err := q.Signal(ctx, step.Key(), "approval", []byte("approved by dana")); err != nil {
		panic(err)
	}
	if err := <-done; err != nil {
		panic(err)
	}
	// Output:
	// deploy-42: asking for approval to deploy v2 to production
	// deploy-42 waits for approval
	// deploy-42: approved by dana, deploying
}
