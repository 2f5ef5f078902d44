package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Runner claims items from one queue and runs a Handler on each. Build it
// with New; a Runner runs once at a time (Run may be called again after it
// returned).
type Runner struct {
	q       contract.WorkQueue
	handler Handler
	cfg     Config
	running atomic.Bool
}

// New returns a runner for q. It checks cfg and returns a
// *contract.ValidationError for a value it cannot use.
func New(q contract.WorkQueue, h Handler, cfg Config) (*Runner, error) {
	if q == nil {
		return nil, &contract.ValidationError{Field: "q", Problem: "is nil; pass the WorkQueue to work on"}
	}
	if h == nil {
		return nil, &contract.ValidationError{Field: "h", Problem: "is nil; pass the Handler that does the work"}
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	for i := len(cfg.Middleware) - 1; i >= 0; i-- {
		if cfg.Middleware[i] == nil {
			return nil, &contract.ValidationError{Field: fmt.Sprintf("Config.Middleware[%d]", i), Problem: "is nil"}
		}
		h = cfg.Middleware[i](cfg.Queue, h)
	}
	return &Runner{q: q, handler: h, cfg: cfg}, nil
}

// Config returns the runner's configuration with the defaults filled in.
func (r *Runner) Config() Config { return r.cfg }

// Run works until ctx is cancelled, then shuts down gracefully and returns
// nil. It returns an error at once only if the runner is already running.
//
// While running it keeps up to Concurrency handlers busy: it claims as
// many items as there are free slots (at most BatchSize per claim), as
// soon as the queue wakes it (when the queue is a contract.Waker) and every
// PollInterval regardless; after a claim that failed with a retryable
// error, again within milliseconds (backing off, at most PollInterval).
// Each running item's lease is heartbeated every
// HeartbeatEvery. Handlers that return nil are completed in batches;
// handlers that return an error or panic are failed with it.
//
// When ctx is cancelled Run stops claiming and gives running handlers
// Grace to finish; then it cancels their contexts and waits for them to
// return. Whatever a handler returns is settled as usual, so an item whose
// handler gave up on the cancelled context is failed back to the queue,
// never dropped. Pending completes are flushed before Run returns. These
// settles use a context detached from ctx, bounded by SettleTimeout.
func (r *Runner) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("runner: Run called while the runner is already running")
	}
	defer r.running.Store(false)

	cfg := r.cfg
	detached := context.WithoutCancel(ctx)
	handlerCtx, stopHandlers := context.WithCancelCause(detached)
	defer stopHandlers(nil)
	l := &loop{
		r:         r,
		cfg:       cfg,
		log:       cfg.Logger.With("queue", cfg.Queue, "worker", cfg.Worker),
		detached:  detached,
		finished:  make(chan struct{}, cfg.Concurrency),
		jobs:      make(chan contract.Lease, cfg.Concurrency),
		completes: make(chan contract.Lease, completeBatch(cfg)),
	}
	if cc, ok := r.q.(contract.CompleteClaimer); ok && cfg.CarryCompletes {
		l.cc = cc
	}

	var wake <-chan struct{}
	if w, ok := r.q.(contract.Waker); ok {
		ch, unsubscribe := w.Subscribe(cfg.Queue)
		defer unsubscribe()
		wake = ch
	}

	var background sync.WaitGroup
	background.Go(l.completeLoop)
	reapCtx, stopReaping := context.WithCancel(ctx)
	defer stopReaping()
	if cfg.ReapInterval > 0 {
		background.Go(func() { l.reapLoop(reapCtx) })
	}
	l.handlerCtx = handlerCtx

	l.claimLoop(ctx, wake)

	stopReaping()
	l.drain(stopHandlers)
	close(l.jobs)
	l.slots.Wait()
	close(l.completes)
	background.Wait()
	return nil
}

// loop is the state of one Run.
type loop struct {
	r        *Runner
	cfg      Config
	log      *slog.Logger
	detached context.Context // Run's context without its cancellation, for settles

	inflight int                 // handlers running; touched by the claim goroutine only
	jobs     chan contract.Lease // claimed leases for the slot goroutines
	finished chan struct{}       // one value per handler that returned
	// Slot goroutines run the handlers, one item at a time, for the whole
	// Run; they are started as the number of running items first needs
	// them (never more than Concurrency). A goroutine per item would start
	// each handler on a fresh stack and grow it, item after item.
	slots      sync.WaitGroup
	started    int // slot goroutines started; touched by the claim goroutine only
	handlerCtx context.Context
	completes  chan contract.Lease

	// cc is the queue when it can complete and claim in one call; the
	// claim loop then takes the pending completes along with each claim,
	// and completeLoop only flushes what waits longer than CompleteDelay
	// (or fills a batch, or is left at shutdown).
	cc      contract.CompleteClaimer
	pendMu  sync.Mutex
	pending []contract.Lease // finished leases not yet sent to the queue
}

// takePending hands over the finished leases waiting to be completed.
func (l *loop) takePending() []contract.Lease {
	l.pendMu.Lock()
	defer l.pendMu.Unlock()
	b := l.pending
	l.pending = nil
	return b
}

// claim claims up to n items, carrying the pending completes along when
// the queue can take both at once.
func (l *loop) claim(ctx context.Context, n int) ([]contract.Lease, error) {
	req := contract.ClaimRequest{Queue: l.cfg.Queue, Worker: l.cfg.Worker, LeaseFor: l.cfg.LeaseFor, Max: n}
	var done []contract.Lease
	if l.cc != nil {
		done = l.takePending()
	}
	if len(done) == 0 {
		return l.r.q.Claim(ctx, req)
	}
	leases, err := l.cc.CompleteAndClaim(ctx, done, req)
	if lost, ok := errors.AsType[*contract.LeaseLostError](err); ok {
		// The other completes landed and the claim went ahead; only the
		// lost items will run again.
		l.report(lost, "complete: some leases were lost before their items completed; those items will run again", "items", len(done))
		return leases, nil
	}
	if err != nil && !errors.Is(err, contract.ErrEmpty) {
		// Whether the completes landed is unknown (a cancelled claim
		// included): settle them the ordinary way, with its retries, so
		// no finished item is left to expire for want of trying. Those
		// that had landed come back lost; that is expected, not reported.
		l.completeAgain(done)
	}
	return leases, err
}

// completeBatch is the most leases one Complete call carries.
func completeBatch(cfg Config) int {
	return min(max(cfg.Concurrency, cfg.BatchSize), contract.MaxClaimBatch)
}

func (l *loop) report(err error, msg string, args ...any) {
	l.log.Error(msg, append(args, "err", err)...)
	if l.cfg.OnError != nil {
		l.cfg.OnError(err)
	}
}

// claimLoop claims and starts handlers until ctx is cancelled.
func (l *loop) claimLoop(ctx context.Context, wake <-chan struct{}) {
	poll := time.NewTicker(l.cfg.PollInterval)
	defer poll.Stop()
	// retry fires after a claim failed with a retryable error: a dropped
	// connection or a busy pool should cost milliseconds, not a poll.
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	var retryC <-chan time.Time
	failures := 0 // claims failed in a row with a retryable error
	more := true  // work may be waiting
	var lastClaim time.Duration
	for ctx.Err() == nil {
		l.countFinished()
		if more && l.inflight < l.cfg.Concurrency {
			retry.Stop()
			retryC = nil
			l.gather(ctx, lastClaim)
			n := min(l.cfg.BatchSize, l.cfg.Concurrency-l.inflight)
			began := time.Now()
			leases, err := l.claim(ctx, n)
			if err == nil {
				lastClaim = time.Since(began)
			}
			// Leases that come with an error (a claim-check wrapper
			// reporting one broken item) are still ours to run.
			for _, lease := range leases {
				l.start(lease)
			}
			switch {
			case err == nil:
				more, failures = len(leases) == n, 0
			case errors.Is(err, contract.ErrEmpty), ctx.Err() != nil:
				more, failures = false, 0
			default:
				more = false
				l.report(err, "claim returned an error", "claimed", len(leases))
				if contract.Retryable(err) {
					retry.Reset(claimBackoff(failures, l.cfg.PollInterval))
					retryC = retry.C
					failures++
				} // otherwise the next poll or wake tries again
			}
			if more && l.inflight < l.cfg.Concurrency {
				continue
			}
		}
		select {
		case <-ctx.Done():
		case <-l.finished:
			l.inflight--
		case <-wake:
			more = true
		case <-poll.C:
			more = true
		case <-retryC:
			retryC = nil
			more = true
		}
	}
}

// Claim retries after a retryable error start at firstClaimRetry and
// double with each failure in a row, up to the poll interval.
const firstClaimRetry = 10 * time.Millisecond

// claimBackoff is how long to wait before retrying a claim after failures
// earlier failures in a row: firstClaimRetry doubled that many times,
// capped at limit, then drawn from its upper half so that workers cut off
// together do not come back in step.
func claimBackoff(failures int, limit time.Duration) time.Duration {
	d := limit
	if failures < 30 {
		d = min(firstClaimRetry<<failures, limit)
	}
	return d/2 + rand.N(d/2+1)
}

// maxGather bounds gather's wait.
const maxGather = 2 * time.Millisecond

// gather waits, before a claim, for more running handlers to return when
// fewer slots are free than one claim could fill: at most window (the
// last claim's duration, capped at maxGather), since one claim more costs
// about that much. Handlers that return within moments of each other then
// share a claim; without the wait, fast handlers split into cohorts that
// take turns claiming half a batch each, for good (measured: 5 items per
// claim at concurrency 10, half the throughput). A slow handler's slot
// waits at most window longer for its next item.
func (l *loop) gather(ctx context.Context, window time.Duration) {
	want := min(l.cfg.BatchSize, l.cfg.Concurrency)
	if window <= 0 || l.inflight == 0 || l.cfg.Concurrency-l.inflight >= want {
		return
	}
	t := time.NewTimer(min(window, maxGather))
	defer t.Stop()
	for l.inflight > 0 && l.cfg.Concurrency-l.inflight < want {
		select {
		case <-l.finished:
			l.inflight--
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// countFinished counts the handlers that have returned since the last
// look, without waiting, so that a claim asks for every free slot rather
// than for the one whose handler happened to be noticed first.
func (l *loop) countFinished() {
	for {
		select {
		case <-l.finished:
			l.inflight--
		default:
			return
		}
	}
}

// drain waits for the running handlers, cancelling them when the grace
// period ends.
func (l *loop) drain(stopHandlers context.CancelCauseFunc) {
	if l.inflight == 0 {
		return
	}
	var expired <-chan time.Time
	if l.cfg.Grace > 0 {
		t := time.NewTimer(l.cfg.Grace)
		defer t.Stop()
		expired = t.C
	} else {
		stopHandlers(ErrGraceExpired)
	}
	l.log.Info("stopping: waiting for running handlers", "running", l.inflight, "grace", l.cfg.Grace)
	for l.inflight > 0 {
		select {
		case <-l.finished:
			l.inflight--
		case <-expired:
			expired = nil
			l.log.Warn("grace period over: cancelling running handlers", "running", l.inflight)
			stopHandlers(ErrGraceExpired)
		}
	}
}

// start hands a claimed lease to the slot goroutines, starting one more
// when every one started may be busy: there are never fewer of them than
// items running or waiting, so no item waits for a slot.
func (l *loop) start(lease contract.Lease) {
	l.inflight++
	if l.started < l.inflight {
		l.started++
		l.slots.Go(l.work)
	}
	l.jobs <- lease // never blocks: at most Concurrency are running or waiting
}

// work runs the handlers of the leases it is given, one at a time, until
// jobs is closed.
func (l *loop) work() {
	for lease := range l.jobs {
		l.process(l.handlerCtx, lease)
		l.finished <- struct{}{}
	}
}

// process runs the handler on one lease, heartbeating meanwhile, and
// settles the outcome.
func (l *loop) process(parent context.Context, lease contract.Lease) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	hb := l.startHeartbeat(lease, cancel)

	err := l.call(ctx, lease)

	// Stop heartbeating before reading the lease, so the settle presents
	// the last token a heartbeat obtained.
	current, lost := hb.stop()
	if err == nil && !lost {
		l.completes <- current
		return
	}
	l.unsuccessful(ctx, lease, current, lost, err)
}

// unsuccessful settles an item whose handler failed or whose lease was
// lost; the log fields are built here, off the path of items that
// succeed.
func (l *loop) unsuccessful(ctx context.Context, lease, current contract.Lease, lost bool, err error) {
	log := l.log.With("tenant", lease.Item.Tenant, "id", lease.Item.ID, "attempts", lease.Item.Attempts)
	if lost {
		log.Warn("lease lost while the handler ran; the item is someone else's now", "handler_err", err)
		return
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		log.Error("handler panicked", "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}
	sctx, scancel := context.WithTimeout(l.detached, l.cfg.SettleTimeout)
	defer scancel()
	dec, ferr := l.r.q.Fail(sctx, current, err)
	if ferr != nil {
		l.report(ferr, "fail failed; the lease will expire and be reaped", "tenant", lease.Item.Tenant, "id", lease.Item.ID)
		return
	}
	log.Info("handler failed", "handler_err", err, "retry", dec.Retry, "at", dec.At, "reason", dec.Reason)
}

// call runs the handler, turning a panic into a *PanicError.
func (l *loop) call(ctx context.Context, lease contract.Lease) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return l.r.handler(ctx, lease)
}

// heartbeats keep one running item's lease, extending it every
// HeartbeatEvery until stopped. They go on after the handler's context is
// cancelled: a handler that is slow to return still holds its item, and
// letting the lease lapse would hand the item to another worker while
// this one runs. Each beat runs on a timer of its own (time.AfterFunc), so
// an item whose handler returns before the first beat costs no goroutine
// for it.
type heartbeats struct {
	l      *loop
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	lease   contract.Lease // the current lease, which each beat replaces
	lost    bool
	timer   *time.Timer
	stopped bool
	beating sync.WaitGroup // a beat in progress
}

func (l *loop) startHeartbeat(lease contract.Lease, cancel context.CancelCauseFunc) *heartbeats {
	b := &heartbeats{l: l, cancel: cancel, lease: lease}
	b.mu.Lock()
	b.timer = time.AfterFunc(l.cfg.HeartbeatEvery, b.beat)
	b.mu.Unlock()
	return b
}

// stop ends the heartbeats, waits for a beat in progress and returns the
// last lease they obtained and whether it was lost.
func (b *heartbeats) stop() (contract.Lease, bool) {
	b.mu.Lock()
	b.stopped = true
	b.timer.Stop()
	b.mu.Unlock()
	b.beating.Wait()
	return b.get()
}

func (b *heartbeats) get() (contract.Lease, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lease, b.lost
}

func (b *heartbeats) beat() {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	b.beating.Add(1)
	b.mu.Unlock()
	defer b.beating.Done()
	if !b.extend() {
		return
	}
	b.mu.Lock()
	if !b.stopped {
		b.timer.Reset(b.l.cfg.HeartbeatEvery)
	}
	b.mu.Unlock()
}

// extend heartbeats the lease once and reports whether to go on.
func (b *heartbeats) extend() bool {
	l := b.l
	cur, _ := b.get()
	ctx, c := context.WithTimeout(l.detached, l.cfg.SettleTimeout)
	next, err := l.r.q.Heartbeat(ctx, cur, l.cfg.LeaseFor)
	c()
	if err == nil {
		b.mu.Lock()
		b.lease = next
		b.mu.Unlock()
		return true
	}
	if lost, ok := errors.AsType[*contract.LeaseLostError](err); ok {
		b.mu.Lock()
		b.lost = true
		b.mu.Unlock()
		b.cancel(lost)
		return false
	}
	l.report(err, "heartbeat failed", "tenant", cur.Item.Tenant, "id", cur.Item.ID)
	// Past its expiry the lease may be reaped and given to another
	// worker at any moment; stop the handler rather than run twice.
	if !l.cfg.Clock.Now().Before(cur.ExpiresAt) {
		b.cancel(fmt.Errorf("runner: lease expired at %v after heartbeats failed: %w", cur.ExpiresAt, contract.ErrLeaseExpired))
	}
	return true
}

// completeLoop completes finished leases in batches until l.completes is
// closed, then flushes what is left.
func (l *loop) completeLoop() {
	size := completeBatch(l.cfg)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var due <-chan time.Time
	flush := func() {
		if batch := l.takePending(); len(batch) > 0 {
			l.complete(batch)
		}
		timer.Stop()
		due = nil
	}
	for {
		select {
		case lease, ok := <-l.completes:
			if !ok {
				flush()
				return
			}
			l.pendMu.Lock()
			l.pending = append(l.pending, lease)
			n := len(l.pending)
			l.pendMu.Unlock()
			if n >= size {
				flush()
			} else if due == nil {
				timer.Reset(l.cfg.CompleteDelay)
				due = timer.C
			}
		case <-due:
			due = nil
			flush()
		}
	}
}

// completeRetries are the waits before retrying a Complete that failed
// with a retryable error; after them the leases are left to expire, and
// their items will be run again.
var completeRetries = []time.Duration{20 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond}

func (l *loop) complete(batch []contract.Lease) { l.settle(batch, false) }

// completeAgain completes leases that may have been completed already.
func (l *loop) completeAgain(batch []contract.Lease) { l.settle(batch, true) }

func (l *loop) settle(batch []contract.Lease, again bool) {
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(l.detached, l.cfg.SettleTimeout)
		err := l.r.q.Complete(ctx, batch...)
		cancel()
		if err == nil {
			return
		}
		// With a lost lease in the answer the others did complete (the
		// contract settles each lease on its own): never retry that.
		if _, lost := errors.AsType[*contract.LeaseLostError](err); lost {
			if again {
				return
			}
			l.report(err, "complete: some leases were lost before their items completed; those items will run again", "items", len(batch))
			return
		}
		if !contract.Retryable(err) || try == len(completeRetries) {
			l.report(err, "complete failed; the leases will expire and their items run again", "items", len(batch))
			return
		}
		time.Sleep(completeRetries[try])
	}
}

// reapLoop reaps the queue every ReapInterval until ctx is cancelled.
func (l *loop) reapLoop(ctx context.Context) {
	t := time.NewTicker(l.cfg.ReapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := l.r.q.Reap(ctx, l.cfg.Queue)
		switch {
		case err != nil && ctx.Err() == nil:
			l.report(err, "reap failed")
		case n > 0:
			l.log.Info("reaped expired leases", "reaped", n)
		}
	}
}
