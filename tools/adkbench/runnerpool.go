package main

import (
	"context"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
)

// runnerPool works a queue with contract/runner, the loop users run: one
// claim loop asking for every free slot, one goroutine per slot, each
// running item heartbeated, completes batched for CompleteDelay. The
// runner scenario sets it beside the harness's worker pool on the same
// backing.
type runnerPool struct {
	cancel context.CancelFunc
	done   chan struct{}
	calls  *countingQueue

	errCounter
}

// startRunner runs a runner over q with handle until halt.
// BatchSize is what users get by leaving it 0, the concurrency (or
// -batch where that is lower): a larger one would also make each
// Complete wait for up to that many items.
// With carry the runner carries its completes into its next claim
// (Config.CarryCompletes) when the queue is a contract.CompleteClaimer.
func startRunner(q contract.WorkQueue, handle runner.Handler, conc, maxBatch int, poll time.Duration, carry bool) (*runnerPool, error) {
	p := &runnerPool{done: make(chan struct{}), calls: &countingQueue{WorkQueue: q, Passthrough: contract.NewPassthrough(q)}}
	r, err := runner.New(p.calls, handle, runner.Config{
		Queue: benchQueue, Worker: "adkbench-runner", Concurrency: conc, BatchSize: min(maxBatch, conc),
		LeaseFor: 5 * time.Minute, PollInterval: poll, ReapInterval: -1,
		CarryCompletes: carry,
		OnError:        p.fail,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.done)
		_ = r.Run(ctx)
	}()
	return p, nil
}

// halt cancels Run, which stops claiming and flushes the pending
// completes before it returns.
func (p *runnerPool) halt() {
	p.cancel()
	<-p.done
}

func (p *runnerPool) summary() string { return p.calls.summary() }

// countingQueue times the runner's Claim and Complete calls.
//
// Its Passthrough gives the runner the Waker of the queue under it, so
// that it still claims as soon as it is woken, and its CompleteAndClaim
// when it has one.
type countingQueue struct {
	contract.WorkQueue
	contract.Passthrough
	callStats
}

func (c *countingQueue) Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	t0 := time.Now()
	ls, err := c.WorkQueue.Claim(ctx, req)
	c.claimDone(time.Since(t0), len(ls), 0)
	return ls, err
}

func (c *countingQueue) Complete(ctx context.Context, leases ...contract.Lease) error {
	t0 := time.Now()
	err := c.WorkQueue.Complete(ctx, leases...)
	c.completeDone(time.Since(t0), len(leases))
	return err
}

func (c *countingQueue) CompleteAndClaim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest) ([]contract.Lease, error) {
	t0 := time.Now()
	ls, err := c.Passthrough.CompleteAndClaim(ctx, done, req)
	c.claimDone(time.Since(t0), len(ls), len(done))
	return ls, err
}
