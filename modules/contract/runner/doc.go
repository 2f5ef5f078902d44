// Package runner is the worker loop most users run on top of a
// [contract.WorkQueue]: it claims items, runs a [Handler] on each, keeps
// their leases alive and settles them.
//
//	r, err := runner.New(queue, func(ctx context.Context, l contract.Lease) error {
//		return advance(ctx, l.Item.Tenant, l.Item.Payload)
//	}, runner.Config{Queue: "agent-steps", Concurrency: 16})
//	if err != nil {
//		return err
//	}
//	return r.Run(ctx) // until ctx is cancelled, then a graceful stop
//
// # What a Run does
//
//   - Keeps up to Concurrency handlers busy, claiming only as many items as
//     there are free slots, in batches of at most BatchSize. With fewer
//     slots free than a batch while handlers run, a claim first waits up
//     to as long as the last claim took (at most 2 ms) for more of them to
//     return, so that fast handlers share claims instead of taking turns
//     with half a batch each.
//   - Claims as soon as the queue signals work when it is a
//     [contract.Waker], and every PollInterval regardless, because a wake
//     is a hint that can be lost. A claim that fails with a retryable
//     error (a dropped connection, a busy pool) is tried again after a
//     short backoff: 10 ms, doubling with each failure in a row, never
//     longer than PollInterval.
//   - Heartbeats every running item's lease (by default every third of
//     the lease). A heartbeat that finds the lease lost cancels that
//     handler's context with the [*contract.LeaseLostError] as its cause,
//     and the runner settles nothing for it: the item is someone else's.
//   - Completes the items whose handler returned nil in batches: a
//     finished item waits up to CompleteDelay for others to share its
//     Complete call, which is what lets a database-backed queue go faster
//     than one commit per item. Two Complete calls may be in flight at
//     once, and items that finish meanwhile wait for the next batch, so
//     a slow Complete holds up no handler slot. With Config.CarryCompletes and a queue
//     that is a [contract.CompleteClaimer], the next claim carries the
//     finished items along (one round trip for both); Complete is then
//     only for items that wait CompleteDelay without a claim, full
//     batches, and what is left when Run stops.
//   - Fails the items whose handler returned an error, or panicked (the
//     panic becomes a [*PanicError] carrying the value); the queue's
//     policy decides between a retry and the dead letter.
//   - Reaps the queue's expired leases every ReapInterval, so the items of
//     crashed workers come back.
//
// # Several queues
//
// One runner can serve several queues, each with its own slots, batch
// size and (optionally) handler, the way a River client serves its
// Queues map:
//
//	r, err := runner.New(queue, nil, runner.Config{Queues: []runner.QueueConfig{
//		{Name: "agent-steps", Concurrency: 16, Handler: advanceStep},
//		{Name: "notifications", Concurrency: 2, BatchSize: 1, Handler: notify},
//	}})
//
// Each queue has a claim loop of its own, so a busy queue never takes the
// slots of a quiet one. What a process needs once is shared: one set of
// heartbeats (one timer for every running item, whatever its queue), one
// completer (a Complete call may carry the items of several queues), and
// one reaper that reaps each queue in turn. Lease, poll, heartbeat, grace
// and settle settings are the runner's and apply to every queue; stopping
// gives every queue's handlers the same grace period.
//
// # Stopping
//
// Cancelling Run's context stops claiming. Running handlers get Grace to
// finish; after that their contexts are cancelled with [ErrGraceExpired]
// as the cause. Each handler's result is settled as usual, so a handler
// that gives up returns its item to the queue through Fail (one attempt
// used), and one that finishes is completed; pending completes are flushed
// before Run returns nil. Nothing is dropped: at worst a process killed
// outright leaves leases that expire and are reaped.
//
// # Time
//
// Lease arithmetic reads Config.Clock, the clock the queue uses. The
// pacing intervals are real time, measured with the runtime's timers; they
// keep a live process moving and cannot wait on a fake clock. Tests move
// the fake clock for lease expiry and use short real intervals for the
// pacing.
package runner
