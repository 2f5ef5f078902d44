package oracle

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
	"github.com/adkit/adk/modules/policy"
)

// EnvWorker, when set in the environment of the test binary, makes it a
// worker: its value is the WorkerConfig as JSON.
const EnvWorker = "ADK_ORACLE_WORKER"

// WorkerConfig is what a worker process does.
type WorkerConfig struct {
	Target      Target        `json:"target"`
	Worker      string        `json:"worker"`
	Concurrency int           `json:"concurrency"`
	LeaseFor    time.Duration `json:"lease_for"`
	// HeartbeatEvery 0 means a third of LeaseFor.
	HeartbeatEvery time.Duration `json:"heartbeat_every"`
	ReapInterval   time.Duration `json:"reap_interval"`
	PollInterval   time.Duration `json:"poll_interval"`
	// HandlerDelay is how long each handler works before its writes;
	// items whose N is a multiple of SlowEvery take SlowDelay instead.
	HandlerDelay time.Duration `json:"handler_delay"`
	SlowEvery    int           `json:"slow_every"`
	SlowDelay    time.Duration `json:"slow_delay"`
	// DelayAfterEffect moves the delay after the writes: a worker killed
	// then has applied its effect but not completed the item.
	DelayAfterEffect bool `json:"delay_after_effect"`
	// ClockSkew is subtracted from the wall clock this worker's stores
	// and runner read: a worker whose clock runs behind.
	ClockSkew   time.Duration `json:"clock_skew"`
	Listen      bool          `json:"listen"`
	ListenerApp string        `json:"listener_app"`
	PoolSize    int           `json:"pool_size"`
	PoolTimeout time.Duration `json:"pool_timeout"`
	// Transactional (PostgreSQL) writes the effect and completes the item
	// in one transaction: a holder whose lease was lost rolls its effect
	// back, so each item's effect lands exactly once.
	Transactional bool `json:"transactional"`
	// HogEvery, when set, makes the worker take every connection of its
	// own pool for HogFor at that interval: a burst of other work in the
	// same process, during which the store's calls find the pool empty.
	HogEvery time.Duration `json:"hog_every"`
	HogFor   time.Duration `json:"hog_for"`
	// NoClientRetries: see OpenOptions.
	NoClientRetries bool `json:"no_client_retries"`
	// StateLoad adds versioned puts and deletes to each execution: it
	// appends its mark to a log of its tenant and hands the tenant's slot
	// on (see state.go).
	StateLoad bool `json:"state_load"`
	// FencedRuns adds a fenced write to each execution: it appends itself
	// to its item's FenceRunID run through runner.Runs (see fences.go).
	FencedRuns bool `json:"fenced_runs"`
	// Zombie (with FencedRuns and DelayAfterEffect) makes each execution
	// write its fenced run twice, once before the delay and once after
	// it, and wait the delay without watching its context, the second
	// write sent with the context's cancellation cut off: a handler that
	// does not notice its lease was taken back while it was paused (a
	// long GC pause, a stopped process), whose late write only the fence
	// keeps out.
	Zombie      bool `json:"zombie"`
	MaxAttempts int  `json:"max_attempts"`
}

// Event is one line a worker writes on its standard output.
type Event struct {
	Kind string `json:"k"` // "ready", "lease", "ack", "err", "state", "stats"
	// lease: a lease a Claim returned to the worker (Claimed and At are
	// when the claim returned), told before its handler begins.
	// ack: an execution whose two writes were both acknowledged.
	Tenant   string `json:"t,omitempty"`
	ID       string `json:"i,omitempty"`
	Attempts int    `json:"a,omitempty"`
	Token    int64  `json:"tok,omitempty"`
	At       int64  `json:"at,omitempty"` // wall-clock unix nanoseconds (never skewed)
	Started  int64  `json:"st,omitempty"` // when the handler began, same clock
	Claimed  int64  `json:"cl,omitempty"` // when the claim that leased it returned, same clock
	// Mark is the execution's mark, appended to its log (state load), and
	// Took says it took its tenant's slot and created it again holding
	// the mark.
	Mark string `json:"m,omitempty"`
	Took bool   `json:"took,omitempty"`
	// err: a failed call, by class; state: what the state load saw (see
	// the classes in state.go), detail in Where; stats: counts by class.
	Where  string `json:"w,omitempty"`
	Class  string `json:"c,omitempty"`
	Fenced int    `json:"fenced,omitempty"` // items named by a LeaseLostError
	// fence: a fenced write of the item's FenceRunID run (Class
	// FenceLanded or FenceRefused): Token is the execution's claim token,
	// Fence the fence the write carried, Stored the run's fence after it
	// (landed) or when it was refused.
	// Final marks the second fenced write of a Zombie execution.
	Fence  int64            `json:"fence,omitempty"`
	Stored int64            `json:"stored,omitempty"`
	Final  bool             `json:"final,omitempty"`
	Counts map[string]int64 `json:"counts,omitempty"`
	// Reconnects of the LISTEN connection (stats).
	Reconnects int64  `json:"reconnects,omitempty"`
	Worker     string `json:"worker,omitempty"`
}

// IsWorker reports whether this process was started as a worker.
func IsWorker() bool { return os.Getenv(EnvWorker) != "" }

type skewed struct{ by time.Duration }

func (s skewed) Now() time.Time { return time.Now().Add(-s.by) }

type worker struct {
	cfg    WorkerConfig
	state  contract.StateStore
	stores *Stores
	clock  contract.Clock
	claims *claimClock

	mu     sync.Mutex
	out    *bufio.Writer
	counts map[string]int64
	// handoffs are the slot hand-ons under way (state load).
	handoffs sync.WaitGroup
}

// WorkerMain runs a worker until its standard input closes, then stops
// gracefully; it returns the process exit code.
func WorkerMain() int {
	var cfg WorkerConfig
	if err := json.Unmarshal([]byte(os.Getenv(EnvWorker)), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker: bad config:", err)
		return 2
	}
	w := &worker{cfg: cfg, out: bufio.NewWriter(os.Stdout), counts: map[string]int64{}, clock: contract.SystemClock{}}
	if cfg.ClockSkew != 0 {
		w.clock = skewed{by: cfg.ClockSkew}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pol := policy.Policy{MaxAttempts: cfg.MaxAttempts, BaseDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond}
	openCtx, openCancel := context.WithTimeout(ctx, 30*time.Second)
	s, err := Open(openCtx, cfg.Target, OpenOptions{Clock: w.clock, Policy: pol, PoolSize: cfg.PoolSize, PoolTimeout: cfg.PoolTimeout,
		NoClientRetries: cfg.NoClientRetries, Listen: cfg.Listen, ListenerApp: cfg.ListenerApp})
	openCancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker: open:", err)
		return 2
	}
	defer s.Close()
	w.state, w.stores = s.State, s
	if cfg.Transactional && s.PGState == nil && s.SQLiteState == nil {
		fmt.Fprintln(os.Stderr, "worker: transactional handling needs PostgreSQL or SQLite")
		return 2
	}

	claims, q := newClaimClock(s.Queue)
	claims.onLease = func(l contract.Lease, at int64) {
		w.emit(Event{Kind: "lease", Tenant: l.Item.Tenant, ID: l.Item.ID, Attempts: l.Item.Attempts, Token: l.Token, Claimed: at, At: at, Worker: cfg.Worker})
	}
	w.claims = claims
	r, err := runner.New(q, w.handle, runner.Config{
		Worker: cfg.Worker, Concurrency: cfg.Concurrency, LeaseFor: cfg.LeaseFor, HeartbeatEvery: cfg.HeartbeatEvery,
		ReapInterval: cfg.ReapInterval, PollInterval: cfg.PollInterval, Grace: 3 * time.Second,
		SettleTimeout: 5 * time.Second, Clock: w.clock, OnError: w.onError,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker: runner:", err)
		return 2
	}
	if cfg.HogEvery > 0 {
		stopHog := w.hog(ctx, s)
		defer stopHog()
	}
	go func() {
		// The parent closes our stdin to stop us gracefully.
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	w.emit(Event{Kind: "ready", Worker: cfg.Worker})
	_ = r.Run(ctx)
	w.handoffs.Wait()
	st := Event{Kind: "stats", Worker: cfg.Worker, Counts: w.snapshot()}
	if s.Listener != nil {
		st.Reconnects = s.Listener.Stats().Reconnects
	}
	w.emit(st)
	return 0
}

// hog takes the whole pool for HogFor every HogEvery until stopped.
func (w *worker) hog(ctx context.Context, s *Stores) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(w.cfg.HogEvery)
		defer t.Stop()
		for first := true; ; first = false {
			if !first {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
			var wg sync.WaitGroup
			for range w.cfg.PoolSize {
				wg.Go(func() {
					if s.Pool != nil {
						c, err := s.Pool.Acquire(ctx)
						if err != nil {
							return
						}
						defer c.Release()
						pause(ctx, w.cfg.HogFor)
						return
					}
					// A blocking pop on a key nobody writes holds its
					// connection for the (fractional) timeout.
					s.Redis.Do(ctx, "BLPOP", "adkint:hog:none", strconv.FormatFloat(w.cfg.HogFor.Seconds(), 'f', 3, 64))
				})
			}
			wg.Wait()
			w.count("hogs", 1)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

func (w *worker) emit(e Event) {
	b, _ := json.Marshal(e)
	w.mu.Lock()
	defer w.mu.Unlock()
	// One write per line, flushed at once: a SIGKILL after the write
	// cannot take back what the parent was told.
	_, _ = w.out.Write(append(b, '\n'))
	_ = w.out.Flush()
}

func (w *worker) count(key string, n int64) {
	w.mu.Lock()
	w.counts[key] += n
	w.mu.Unlock()
}

func (w *worker) snapshot() map[string]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int64, len(w.counts))
	for k, v := range w.counts {
		out[k] = v
	}
	return out
}

// onError receives the runner's own failures: claims, heartbeats,
// settles and reaps.
func (w *worker) onError(err error) {
	class := errClass(err)
	w.count("runner_"+class, 1)
	var lost *contract.LeaseLostError
	if errors.As(err, &lost) {
		w.count("fenced_items", int64(len(lost.Items)))
		w.emit(Event{Kind: "err", Where: "runner", Class: class, Fenced: len(lost.Items), Worker: w.cfg.Worker})
	}
}

// handle is the effect: first the item's own run (Iterations counts the
// executions; InputTokens gets bit 2^attempts, so two executions of the
// same claim generation carry into a bit pattern whose population count
// differs from Iterations), then the tenant's tally. Only when both
// writes are acknowledged does it tell the parent.
func (w *worker) handle(ctx context.Context, l contract.Lease) error {
	started := time.Now().UnixNano()
	claimed := w.claims.claimed(l)
	var p Payload
	if err := json.Unmarshal(l.Item.Payload, &p); err != nil {
		return policy.Permanent(fmt.Errorf("bad payload: %w", err))
	}
	if p.Poison {
		return policy.Permanent(errors.New("poison item"))
	}
	if p.Wait {
		if l.Item.Resumed == nil {
			w.count("waits", 1)
			return runner.WaitForSignal(WaitSignal, WaitTimeout)
		}
		if err := checkResume(l, p.N); err != nil {
			return policy.Permanent(err)
		}
	}
	delay := w.cfg.HandlerDelay
	if w.cfg.SlowEvery > 0 && p.N%w.cfg.SlowEvery == 0 {
		delay = w.cfg.SlowDelay
	}
	if !w.cfg.DelayAfterEffect {
		if err := pause(ctx, delay); err != nil {
			return err
		}
	}
	d := Delta(p.N)
	if w.cfg.Transactional {
		return w.handleInTx(ctx, l, d, delay, started, claimed)
	}
	bit := int64(1) << min(l.Item.Attempts, 62)
	fx := contract.Patch{Counters: contract.Counters{Iterations: 1, InputTokens: bit, OutputTokens: d.OutputTokens, CostMicros: d.CostMicros}, Status: "by " + w.cfg.Worker}
	if _, err := w.state.PatchRun(ctx, l.Item.Tenant, FxID(l.Item.ID), fx); err != nil {
		w.count("handler_"+errClass(err), 1)
		return err
	}
	if _, err := w.state.PatchRun(ctx, l.Item.Tenant, AcctID, contract.Patch{Counters: d}); err != nil {
		w.count("handler_"+errClass(err), 1)
		return err
	}
	if w.cfg.FencedRuns {
		if err := w.writeFenced(ctx, l, false); err != nil {
			w.count("handler_"+errClass(err), 1)
			return err
		}
	}
	ack := Event{Kind: "ack", Tenant: l.Item.Tenant, ID: l.Item.ID, Attempts: l.Item.Attempts, Token: l.Token, Started: started, Claimed: claimed, Worker: w.cfg.Worker}
	if w.cfg.StateLoad {
		ack.Mark = Mark(l.Item.ID, l.Token)
		if err := w.appendMark(ctx, l, LogID(p.N%Logs), ack.Mark); err != nil {
			w.count("handler_"+errClass(err), 1)
			return err
		}
		if err := w.scratch(ctx, l, ack.Mark); err != nil {
			w.count("handler_"+errClass(err), 1)
			return err
		}
		took, err := w.handOn(ctx, l, ack.Mark)
		if err != nil {
			w.count("handler_"+errClass(err), 1)
			return err
		}
		ack.Took = took
	}
	ack.At = time.Now().UnixNano()
	w.emit(ack)
	if w.cfg.DelayAfterEffect && w.cfg.FencedRuns && w.cfg.Zombie {
		// Deaf to the context: a lost lease does not stop this handler
		// before its final write.
		time.Sleep(delay)
		if err := w.writeFenced(context.WithoutCancel(ctx), l, true); err != nil {
			w.count("handler_"+errClass(err), 1)
			return err
		}
		return nil
	}
	if w.cfg.DelayAfterEffect {
		return pause(ctx, delay)
	}
	return nil
}

// handleInTx writes both patches and completes the item in one
// transaction, waiting delay inside it (so a kill lands mid-transaction).
// A lost lease makes Complete fail and rolls the effect back. The runner's
// own Complete afterwards finds the item gone and is fenced: the item was
// settled here.
func (w *worker) handleInTx(ctx context.Context, l contract.Lease, d contract.Counters, delay time.Duration, started, claimed int64) error {
	bit := int64(1) << min(l.Item.Attempts, 62)
	fx := contract.Patch{Counters: contract.Counters{Iterations: 1, InputTokens: bit, OutputTokens: d.OutputTokens, CostMicros: d.CostMicros}, Status: "by " + w.cfg.Worker}
	var err error
	if w.stores.SQL != nil {
		err = w.sqliteTx(ctx, l, fx, d, delay)
	} else {
		err = w.pgTx(ctx, l, fx, d, delay)
	}
	if err != nil {
		w.count("handler_"+errClass(err), 1)
		return err
	}
	w.count("tx_committed", 1)
	w.emit(Event{Kind: "ack", Tenant: l.Item.Tenant, ID: l.Item.ID, Attempts: l.Item.Attempts, Token: l.Token, At: time.Now().UnixNano(), Started: started, Claimed: claimed, Worker: w.cfg.Worker})
	return nil
}

// sqliteTx is pgTx on a SQLite file: the transaction holds the file's
// write lock from BEGIN (IMMEDIATE) to its commit, delay included, so a
// kill lands while this process holds the lock with frames in the WAL.
func (w *worker) sqliteTx(ctx context.Context, l contract.Lease, fx contract.Patch, d contract.Counters, delay time.Duration) error {
	tx, err := w.stores.SQL.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st := w.stores.SQLiteState.Bound(tx)
	if _, err := st.PatchRun(ctx, l.Item.Tenant, FxID(l.Item.ID), fx); err != nil {
		return err
	}
	if err := pause(ctx, delay); err != nil {
		return err
	}
	if _, err := st.PatchRun(ctx, l.Item.Tenant, AcctID, contract.Patch{Counters: d}); err != nil {
		return err
	}
	if err := w.stores.SQLiteQueue.Bound(tx).Complete(ctx, l); err != nil {
		return err
	}
	return tx.Commit()
}

func (w *worker) pgTx(ctx context.Context, l contract.Lease, fx contract.Patch, d contract.Counters, delay time.Duration) error {
	return pgx.BeginFunc(ctx, w.stores.Pool, func(tx pgx.Tx) error {
		st := w.stores.PGState.Bound(tx)
		if _, err := st.PatchRun(ctx, l.Item.Tenant, FxID(l.Item.ID), fx); err != nil {
			return err
		}
		if err := pause(ctx, delay); err != nil {
			return err
		}
		// The tally row is every execution's of the tenant: lock it last,
		// just before the commit, or the tenant's workers queue behind it.
		if _, err := st.PatchRun(ctx, l.Item.Tenant, AcctID, contract.Patch{Counters: d}); err != nil {
			return err
		}
		return w.stores.PGQueue.Bound(tx).Complete(ctx, l)
	})
}

// pause waits d, or until the handler's context ends (its lease was lost,
// or the runner's grace ran out).
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
