package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Runner claims items from one queue, or from several (Config.Queues),
// and runs a Handler on each. Build it with New; a Runner runs once at a
// time (Run may be called again after it returned).
type Runner struct {
	q        contract.WorkQueue
	cfg      Config
	queues   []queueSpec
	periodic *Periodic // nil without Config.Schedules
	running  atomic.Bool
}

// queueSpec is one served queue with its handler wrapped in the
// middleware.
type queueSpec struct {
	QueueConfig
	handler Handler
}

// New returns a runner for q. It checks cfg and returns a
// *contract.ValidationError for a value it cannot use. h may be nil when
// every entry of cfg.Queues has a Handler of its own.
func New(q contract.WorkQueue, h Handler, cfg Config) (*Runner, error) {
	if q == nil {
		return nil, &contract.ValidationError{Field: "q", Problem: "is nil; pass the WorkQueue to work on"}
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	for i, m := range cfg.Middleware {
		if m == nil {
			return nil, &contract.ValidationError{Field: fmt.Sprintf("Config.Middleware[%d]", i), Problem: "is nil"}
		}
	}
	specs := make([]queueSpec, len(cfg.Queues))
	for i, qc := range cfg.Queues {
		handler := qc.Handler
		if handler == nil {
			handler = h
		}
		if handler == nil {
			if len(cfg.Queues) == 1 {
				return nil, &contract.ValidationError{Field: "h", Problem: "is nil; pass the Handler that does the work"}
			}
			return nil, &contract.ValidationError{Field: "h", Problem: fmt.Sprintf("is nil and queue %q has no Handler; pass the Handler that does the work", qc.Name)}
		}
		for j := len(cfg.Middleware) - 1; j >= 0; j-- {
			handler = cfg.Middleware[j](qc.Name, handler)
		}
		specs[i] = queueSpec{QueueConfig: qc, handler: handler}
	}
	r := &Runner{q: q, cfg: cfg, queues: specs}
	if len(cfg.Schedules) > 0 {
		pcfg, scheds, err := PeriodicConfig{
			Schedules: cfg.Schedules, State: cfg.ScheduleState, Clock: cfg.Clock,
			Logger: cfg.Logger, OnError: cfg.OnError,
		}.withDefaults("Config.", "Config.ScheduleState")
		if err != nil {
			return nil, err
		}
		r.periodic = &Periodic{q: q, cfg: pcfg, sched: scheds}
	}
	return r, nil
}

// Periodic returns the runner's Periodic, or nil when Config.Schedules
// is empty. Its Pass lets a test enqueue the ticks after moving the
// clock.
func (r *Runner) Periodic() *Periodic { return r.periodic }

// Config returns the runner's configuration with the defaults filled in.
// Its Queues lists every queue served, the single queue included.
func (r *Runner) Config() Config {
	cfg := r.cfg
	cfg.Queues = append([]QueueConfig(nil), cfg.Queues...)
	cfg.Middleware = append([]Middleware(nil), cfg.Middleware...)
	return cfg
}

// Run works until ctx is cancelled, then shuts down gracefully and returns
// nil. It returns an error at once only if the runner is already running.
//
// While running it keeps up to Concurrency handlers of each queue busy:
// it claims as many items as the queue has free slots (at most its
// BatchSize per claim), as soon as the queue wakes it (when the queue is
// a contract.Waker) and every PollInterval regardless; after a claim
// that failed with a retryable error, again within milliseconds (backing
// off, at most PollInterval). Each running item's lease is heartbeated
// every HeartbeatEvery. Handlers that return nil are completed in
// batches; handlers that return an error or panic are failed with it,
// those that return Snooze or WaitForSignal snoozed or parked. A
// heartbeat that finds the item cancelled cancels its handler's context
// with the *contract.CancelledError as the cause, and nothing more is
// written for that lease.
//
// When ctx is cancelled Run stops claiming and gives running handlers
// Grace to finish; then it cancels their contexts and waits for them to
// return. Whatever a handler returns is settled as usual, so an item whose
// handler gave up on the cancelled context is failed back to the queue,
// never dropped. Pending completes, and the fails, snoozes and waits
// being written, land before Run returns. These settles use a context
// detached from ctx, bounded by SettleTimeout.
func (r *Runner) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("runner: Run called while the runner is already running")
	}
	defer r.running.Store(false)

	cfg := r.cfg
	detached := context.WithoutCancel(ctx)
	handlerCtx, stopHandlers := context.WithCancelCause(detached)
	defer stopHandlers(nil)
	rn := &run{r: r, cfg: cfg, log: cfg.Logger.With("worker", cfg.Worker), detached: detached, handlerCtx: handlerCtx}
	if cc, ok := contract.AsCompleteClaimer(r.q); ok && cfg.CarryCompletes {
		rn.cc = cc
	}
	if lc, ok := contract.AsLifecycleController(r.q); ok {
		rn.lc = lc // not the methods of a queue that says it has none
	}
	rn.beats = newHeartbeats(rn)
	rn.done = newCompleter(rn)
	loops := make([]*queueLoop, len(r.queues))
	slots := 0
	for i, spec := range r.queues {
		loops[i] = newQueueLoop(rn, spec)
		slots += spec.Concurrency
	}
	rn.asideFree = make(chan struct{}, slots)

	var background sync.WaitGroup
	background.Go(rn.done.run)
	reapCtx, stopReaping := context.WithCancel(ctx)
	defer stopReaping()
	if cfg.ReapInterval > 0 {
		background.Go(func() { rn.reapLoop(reapCtx) })
	}
	if r.periodic != nil {
		background.Go(func() { _ = r.periodic.Run(reapCtx) })
	}

	var claiming sync.WaitGroup
	waker, _ := contract.AsWaker(r.q)
	for _, l := range loops {
		var wake <-chan struct{}
		if waker != nil {
			ch, unsubscribe := waker.Subscribe(l.name)
			defer unsubscribe()
			wake = ch
		}
		claiming.Go(func() { l.claimLoop(ctx, wake) })
	}
	claiming.Wait()

	stopReaping()
	rn.drain(loops, stopHandlers)
	rn.aside.Wait()
	rn.beats.close()
	rn.done.close()
	background.Wait()
	return nil
}

// run is the state of one Run shared by its queues.
type run struct {
	r          *Runner
	cfg        Config
	log        *slog.Logger
	detached   context.Context // Run's context without its cancellation, for settles
	handlerCtx context.Context // the parent of every handler's context
	beats      *heartbeats
	done       *completer
	// cc is the queue when it can complete and claim in one call and
	// CarryCompletes is on: the claim loops then take the pending
	// completes along with their claims.
	cc contract.CompleteClaimer
	// lc is the queue's lifecycle controls, nil when it has none: what a
	// handler's Snooze and WaitForSignal are settled with.
	lc contract.LifecycleController
	// aside counts the settles running apart from the slots (settleAside);
	// asideFree bounds them to as many as the queues have slots, a token
	// held per settle.
	aside     sync.WaitGroup
	asideFree chan struct{}
}

// settleAside runs settle on a goroutine of its own, so that the slot
// that asked can take its next item at once, and reports whether it did:
// not when as many settles as the queues have slots are running already,
// so that a slow queue slows the slots again instead of piling up
// goroutines (the caller then settles as before). Run waits for them
// before it returns.
func (rn *run) settleAside(settle func()) bool {
	select {
	case rn.asideFree <- struct{}{}:
	default:
		return false
	}
	rn.aside.Go(func() {
		defer func() { <-rn.asideFree }()
		settle()
	})
	return true
}

func (rn *run) report(err error, msg string, args ...any) {
	rn.log.Error(msg, append(args, "err", err)...)
	if rn.cfg.OnError != nil {
		rn.cfg.OnError(err)
	}
}

// drain waits for the running handlers of every queue, cancelling them
// when the grace period ends.
func (rn *run) drain(loops []*queueLoop, stopHandlers context.CancelCauseFunc) {
	running := 0
	for _, l := range loops {
		running += l.conc - int(l.free.Load())
		close(l.jobs) // the slots finish what was handed to them, then return
	}
	returned := make(chan struct{})
	go func() {
		for _, l := range loops {
			l.slots.Wait()
		}
		close(returned)
	}()
	if running == 0 {
		<-returned
		return
	}
	var expired <-chan time.Time
	if rn.cfg.Grace > 0 {
		t := time.NewTimer(rn.cfg.Grace)
		defer t.Stop()
		expired = t.C
	} else {
		stopHandlers(ErrGraceExpired)
	}
	rn.log.Info("stopping: waiting for running handlers", "running", running, "grace", rn.cfg.Grace)
	for {
		select {
		case <-returned:
			return
		case <-expired:
			expired = nil
			rn.log.Warn("grace period over: cancelling running handlers")
			stopHandlers(ErrGraceExpired)
		}
	}
}

// maxPruneCalls bounds the Prune calls one reaper tick makes per queue:
// at most maxPruneCalls × contract.PruneBatch finished items go per tick,
// so a large backlog is worked off over several ticks instead of holding
// the reaper on one queue.
const maxPruneCalls = 20

// reapLoop reaps every served queue each ReapInterval until ctx is
// cancelled, and prunes it when the queue keeps history.
func (rn *run) reapLoop(ctx context.Context) {
	t := time.NewTicker(rn.cfg.ReapInterval)
	defer t.Stop()
	hk, keeps := contract.AsHistoryKeeper(rn.r.q)
	if !keeps {
		hk = nil
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, qc := range rn.cfg.Queues {
			n, err := rn.r.q.Reap(ctx, qc.Name)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				rn.report(err, "reap failed", "queue", qc.Name)
			case n > 0:
				rn.log.Info("reaped expired leases", "queue", qc.Name, "reaped", n)
			}
			if hk != nil && !rn.prune(ctx, hk, qc.Name) {
				return
			}
		}
	}
}

// prune removes the queue's finished items past its retention, up to
// maxPruneCalls batches, and reports false when ctx was cancelled. An
// error ends this tick's pruning of the queue; the next tick tries again.
func (rn *run) prune(ctx context.Context, hk contract.HistoryKeeper, queue string) bool {
	total := 0
	defer func() {
		if total > 0 {
			rn.log.Info("pruned finished items", "queue", queue, "pruned", total)
		}
	}()
	for range maxPruneCalls {
		n, err := hk.Prune(ctx, queue)
		total += n
		switch {
		case ctx.Err() != nil:
			return false
		case err != nil:
			rn.report(err, "prune failed", "queue", queue)
			return true
		case n < contract.PruneBatch:
			return true
		}
	}
	return true
}
