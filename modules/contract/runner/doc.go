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
//     longer than PollInterval. When a tenant's rate or budget held work
//     back (the queue's [contract.ClaimReport] says until when), the
//     runner claims again as that hold ends, if it ends before the poll.
//   - Lets a handler report what its work cost with [Charge], against the
//     item's tenant: a tenant over its [contract.Budget] is held back from
//     the next claim.
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
//     policy decides between a retry and the dead letter. Like a
//     complete, a Fail (and a Snooze or Wait, below) is written apart
//     from the slot, which takes its next item meanwhile: at most as
//     many at once as the runner has slots, past that a slot writes its
//     own and waits for it, so a slow queue slows the slots again.
//   - Reaps the queue's expired leases every ReapInterval, so the items of
//     crashed workers come back. Over a queue that keeps history (a
//     [contract.HistoryKeeper]) it then prunes the finished items past
//     the queue's retention and uniqueness windows, a bounded number of
//     Prune batches per queue each time.
//
// # Fenced run state
//
// A handler usually writes a run: the agent's state that its item
// advances. If the worker stalls past its lease (a long pause, a
// partition), the queue gives the item to another worker while this one
// may still be running, and both would write the run. Fences keep the
// newer one's writes: the store remembers the highest lease token that
// wrote each run and refuses a write carrying a lower one (see
// [contract.RunPolicy]). [Runs] gives a handler its store with the fence
// filled in, the latest token of the lease it runs under (the claim's,
// then each heartbeat's; [Fence] returns it):
//
//	func step(ctx context.Context, l contract.Lease) error {
//		runs := runner.Runs(ctx, store)
//		run, err := runs.GetRun(ctx, l.Item.Tenant, l.Item.ID)
//		if err != nil {
//			return err
//		}
//		run.Data = advance(run.Data)
//		_, err = runs.PutRun(ctx, *run) // fenced by this lease
//		return err
//	}
//
// A write refused that way (errors.Is(err, contract.ErrFenced)) means the
// item is someone else's now: the handler should return, and settling
// its lease is refused as well (the runner reports the lost lease).
// PutRun and PatchRun through the view carry the fence unless the caller
// set one, and its DeleteRun is the fenced delete of the store's
// [contract.RunKeeper]; reads are the store's. A refused write wrote
// nothing. Tokens of one item only grow, across claims and heartbeats,
// so the latest execution always holds the highest fence. Over a store
// with RunPolicy.RequireFence, writes outside Runs (or without a fence of
// their own) are refused.
//
// # Snooze, wait for a signal, cancel
//
// Over a queue with lifecycle controls (a [contract.LifecycleController]:
// every backing in the kit) a handler can answer with more than done or
// failed, by returning one of two errors the runner finds with errors.As,
// wrapped or not:
//
//   - [Snooze](d): run the item again in d. The lease ends, no attempt is
//     charged and Item.Snoozes goes up by one; past the policy's
//     MaxSnoozes the item goes to the dead letter. A snooze shorter than
//     PollInterval has the runner claim again when the item is due,
//     since a delayed item coming due wakes no claimer.
//   - [WaitForSignal](signal, timeout): park the item until someone calls
//     the queue's Signal with its key and that signal (an approval, a
//     tool's result from outside), or until timeout passes. A waiting
//     item holds no lease, no worker and no attempt. It is then due at
//     once, and the handler that runs it finds how the wait ended in
//     lease.Item.Resumed: the signal's Payload, or TimedOut. [Resumed]
//     reads it for one signal.
//
// A step that asks a person first:
//
//	func approve(ctx context.Context, l contract.Lease) error {
//		res, ok := runner.Resumed(l, "approval")
//		if !ok {
//			notifyReviewer(l.Item)
//			return runner.WaitForSignal("approval", 24*time.Hour)
//		}
//		if res.TimedOut {
//			return policy.Permanent(errors.New("nobody approved it in a day"))
//		}
//		return deploy(ctx, l.Item.Payload, res.Payload)
//	}
//
// Both check their arguments where they are called: a delay or a timeout
// out of range, or an empty signal, gives the [*contract.ValidationError]
// instead, which fails the item like any handler error. Over a queue
// without lifecycle controls the item is failed (the policy may retry
// it) with an error saying the queue has none.
//
// When an operator cancels an item while its handler runs, the queue
// marks the lease, and the next heartbeat (at most HeartbeatEvery later)
// gets a [*contract.CancelledError]: the runner cancels the handler's
// context with it as the cause (errors.Is(context.Cause(ctx),
// contract.ErrCancelled)), stops heartbeating it, and writes nothing more
// for it, whatever the handler returns; the item stays cancelled. A
// cancel that lands after the last heartbeat meets the settle instead
// (Complete, Fail, Snooze or Wait get the CancelledError and write
// nothing): the runner logs it and moves on, as it does for the cancelled
// items a batched Complete names; none of these is reported to OnError.
//
// A paused queue claims nothing: the runner sees an empty claim and goes
// on polling and waiting for wakes; resuming the queue wakes it.
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
// # Periodic work
//
// Config.Schedules (or a [Periodic] of its own, in a process that only
// schedules) enqueues one item per tick of each [Schedule]: a fixed
// interval (Every, aligned on the Unix epoch) or a cron expression read
// in a time zone.
//
//	r, err := runner.New(queue, handle, runner.Config{Queue: "agent-steps", Schedules: []runner.Schedule{
//		{Name: "nightly-digest", Cron: "0 3 * * *", Location: berlin, Tenant: "ops"},
//		{Name: "refresh-tools", Every: 15 * time.Minute},
//	}})
//
// Every process may run the same schedules; there is no leader. A tick's
// item ID is derived from the schedule and the tick
// (nightly-digest@2026-12-02T02:00:00Z), and the item is enqueued ahead
// of time, between Horizon+Lead and Lead before its tick, due at the tick.
// Until the tick the item waits in the queue, so every other process's
// enqueue of the same tick finds it there and is a no-op; after the tick
// no process enqueues it any more. That makes each tick run once,
// provided the clocks of the processes and of the queue agree to better
// than Lead (2 s by default; NTP keeps hosts within milliseconds). Over a
// queue that keeps history (a [contract.HistoryKeeper]) the margin is
// wider: each tick's item asks for a uniqueness window of Lead + Horizon
// (Item.UniqueFor), so a tick that already ran stays a duplicate for that
// long after it finished, and a process whose clock lags still cannot
// enqueue it again. The item's Metadata names its schedule and tick
// (MetaSchedule, MetaTick).
//
// Ticks that pass while no process runs the schedule are skipped by
// default (SkipMissed). With CatchUp the schedule keeps a cursor (the
// latest tick enqueued) in a StateStore; the first process to start
// after downtime moves the cursor over the missed ticks with a versioned
// write and enqueues them (at most MaxCatchUp, the latest). Of several
// processes starting together exactly one wins them; if that process
// dies between moving the cursor and enqueueing, those missed ticks are
// lost rather than run twice.
//
// # Stopping
//
// Cancelling Run's context stops claiming. Running handlers get Grace to
// finish; after that their contexts are cancelled with [ErrGraceExpired]
// as the cause. Each handler's result is settled as usual, so a handler
// that gives up returns its item to the queue through Fail (one attempt
// used), and one that finishes is completed; pending completes, and the
// fails, snoozes and waits being written, land before Run returns nil.
// Nothing is dropped: at worst a process killed outright leaves leases
// that expire and are reaped.
//
// # Time
//
// Lease arithmetic reads Config.Clock, the clock the queue uses. The
// pacing intervals are real time, measured with the runtime's timers; they
// keep a live process moving and cannot wait on a fake clock. Tests move
// the fake clock for lease expiry and use short real intervals for the
// pacing.
package runner
