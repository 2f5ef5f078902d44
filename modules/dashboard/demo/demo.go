// Package demo runs a synthetic multi-tenant workload against any
// contract.WorkQueue, so the dashboard has something worth watching: many
// small tenants and one noisy tenant with a large backlog, workers with
// random latency, a few failures (some permanent, so dead letters pile
// up), and now and then a worker that dies holding a lease, which the
// reaper returns. Given a state store, the workers also write each item's
// run, fenced by their lease, in several steps, so the run's versions have
// something to show.
package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
	"github.com/adkit/adk/modules/policy"
)

// HostilePayload is enqueued once and dead-lettered with itself as the
// error, to show that the dashboard renders such text inert.
const HostilePayload = `<img src=x onerror=alert(1)>`

// HostileTenant and HostileID name that item.
const (
	HostileTenant = "acme"
	HostileID     = "hostile-payload"
)

// DefaultRetention is what the demo's queue keeps: an hour of finished
// items, at most 10,000 of them, and each item's latest 50 events.
var DefaultRetention = contract.Retention{Age: time.Hour, Count: 10_000, Events: 50}

// DefaultKeepVersions is how many earlier versions of each run the demo
// asks its store to keep when nothing else says: enough for every step of
// a few attempts.
const DefaultKeepVersions = 10

// NoisyTenant is the tenant with the large backlog.
const NoisyTenant = "bigcorp-noisy"

var smallTenants = []string{
	"acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka", "tyrell", "cyberdyne",
	"aperture", "oscorp", "soylent", "vandelay", "dunder", "piedpiper", "massive", "gringotts", "monarch",
}

// Config shapes the workload. Zero fields take the defaults beside them.
type Config struct {
	// Queue is where the work goes; required.
	Queue contract.WorkQueue
	// Inspector reads the noisy tenant's depth for the top-ups; nil means
	// Queue when it is one (a tracing wrapper usually is not). Without
	// either, the backlog is topped up by a tenth every five seconds.
	Inspector contract.Inspector
	// Middleware wraps the workers' handler (adkotel.ProcessMiddleware
	// traces each item).
	Middleware []runner.Middleware
	// QueueName is the queue's name; "" means contract.DefaultQueue.
	QueueName string
	// Tenants is the number of tenants, the noisy one included (default
	// 20, at most 20).
	Tenants int
	// Backlog is the noisy tenant's queue depth; it is topped up when it
	// falls below half (default 20,000).
	Backlog int
	// Arrivals is how many items each small tenant enqueues per second,
	// on average (default 1.5).
	Arrivals float64
	// Workers and Concurrency: how many runners, each running how many
	// handlers at once (defaults 2 and 8).
	Workers     int
	Concurrency int
	// Latency bounds a handler's random run time (default 20ms–400ms).
	MinLatency, MaxLatency time.Duration
	// FailureRate is the share of attempts that fail (default 0.03);
	// PermanentShare the share of those failures marked permanent, which
	// go to the dead letter at once (default 0.4).
	FailureRate    float64
	PermanentShare float64
	// CrashEvery is how often a worker claims an item and dies holding
	// it (default 7s; negative never). Its lease is CrashLease (default 3s).
	CrashEvery time.Duration
	CrashLease time.Duration
	// LeaseFor is the runners' lease; expired leases are reaped at this
	// interval too (default 5s).
	LeaseFor time.Duration
	// History keeps the queue's finished items and events; nil means
	// Queue's when its backing keeps history. Retention is set on the
	// queue at the start (nil means DefaultRetention; a zero Retention
	// turns history off); the runners' reaper prunes what is past it.
	History   contract.HistoryKeeper
	Retention *contract.Retention
	// State, when set, is where the workers write each item's run (the
	// run of the item's tenant and id), through runner.Runs so every write
	// carries the lease's fence: one write as the attempt starts, one as
	// the model answers (with its counters), one with the outcome. Give it
	// a store that keeps versions (RunPolicy.KeepVersions, see
	// DefaultKeepVersions) and the dashboard's version pages have each
	// step to show. nil writes no runs.
	State contract.StateStore
	// Seed makes the random choices repeatable; 0 picks one.
	Seed uint64
	// Clock must be the queue's clock; nil means the wall clock.
	Clock contract.Clock
	// Logger receives the workload's events; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Queue == nil {
		return c, errors.New("demo: Config.Queue is required")
	}
	c.QueueName = contract.QueueName(c.QueueName)
	if c.Inspector == nil {
		c.Inspector, _ = contract.AsInspector(c.Queue)
	}
	if c.Tenants <= 0 || c.Tenants > len(smallTenants)+1 {
		c.Tenants = len(smallTenants) + 1
	}
	if c.Backlog <= 0 {
		c.Backlog = 20_000
	}
	if c.Arrivals <= 0 {
		c.Arrivals = 1.5
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	if c.MinLatency <= 0 {
		c.MinLatency = 20 * time.Millisecond
	}
	if c.MaxLatency <= c.MinLatency {
		c.MaxLatency = max(400*time.Millisecond, c.MinLatency+time.Millisecond)
	}
	if c.FailureRate == 0 {
		c.FailureRate = 0.03
	}
	if c.PermanentShare == 0 {
		c.PermanentShare = 0.4
	}
	if c.CrashEvery == 0 {
		c.CrashEvery = 7 * time.Second
	}
	if c.CrashLease <= 0 {
		c.CrashLease = 3 * time.Second
	}
	if c.LeaseFor <= 0 {
		c.LeaseFor = 5 * time.Second
	}
	if c.History == nil {
		if hk, ok := contract.AsHistoryKeeper(c.Queue); ok {
			c.History = hk
		}
	}
	if c.Retention == nil {
		r := DefaultRetention
		c.Retention = &r
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	if c.Clock == nil {
		c.Clock = contract.SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Tenants returns the tenant names a workload of n tenants uses, the noisy
// one first.
func Tenants(n int) []string {
	n = min(max(n, 1), len(smallTenants)+1)
	return append([]string{NoisyTenant}, smallTenants[:n-1]...)
}

// Run drives the workload until ctx is cancelled, then stops its workers
// (they settle what they hold) and returns. Items it leaves queued stay in
// the queue.
func Run(ctx context.Context, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	w := &workload{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), tenants: Tenants(cfg.Tenants)}
	if cfg.History != nil {
		if err := cfg.History.SetRetention(ctx, cfg.QueueName, *cfg.Retention); err != nil {
			return err
		}
	}
	if err := w.seed(ctx); err != nil {
		return err
	}
	var runners []*runner.Runner
	for i := range cfg.Workers {
		r, err := runner.New(cfg.Queue, w.handle, runner.Config{
			Queue: cfg.QueueName, Worker: fmt.Sprintf("worker-%c", 'a'+i), Concurrency: cfg.Concurrency,
			LeaseFor: cfg.LeaseFor, Grace: time.Second, Clock: cfg.Clock, Logger: cfg.Logger,
			Middleware: cfg.Middleware,
		})
		if err != nil {
			return err
		}
		runners = append(runners, r)
	}
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(func() { _ = r.Run(ctx) })
	}
	wg.Go(func() { w.produce(ctx) })
	if cfg.CrashEvery > 0 {
		wg.Go(func() { w.crash(ctx) })
	}
	wg.Wait()
	return nil
}

type workload struct {
	cfg     Config
	mu      sync.Mutex // guards rng and seq
	rng     *rand.Rand
	seq     int
	tenants []string
}

func (w *workload) float() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rng.Float64()
}

func (w *workload) nextID(tenant string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	return fmt.Sprintf("%s-%07d", tenant, w.seq)
}

func (w *workload) item(tenant string) contract.Item {
	id := w.nextID(tenant)
	return contract.Item{
		Tenant: tenant, ID: id, Queue: w.cfg.QueueName,
		Payload:  fmt.Appendf(nil, `{"run":%q,"step":"plan","model":"demo-1"}`, id),
		Metadata: map[string]string{"source": "adk-demo"},
	}
}

// seed enqueues the noisy tenant's backlog and the hostile item.
func (w *workload) seed(ctx context.Context) error {
	if err := w.topUp(ctx); err != nil {
		return err
	}
	return w.cfg.Queue.Enqueue(ctx, contract.Item{Tenant: HostileTenant, ID: HostileID, Queue: w.cfg.QueueName, Payload: []byte(HostilePayload)})
}

// topUp refills the noisy tenant's backlog when it has fallen below half.
func (w *workload) topUp(ctx context.Context) error {
	depth := int64(-1)
	if w.cfg.Inspector != nil {
		if stats, err := w.cfg.Inspector.Tenants(ctx, w.cfg.QueueName); err == nil {
			depth = 0
			for _, s := range stats {
				if s.Tenant == NoisyTenant {
					depth = s.Ready + s.Later
				}
			}
		}
	}
	if depth >= int64(w.cfg.Backlog/2) {
		return nil
	}
	missing := w.cfg.Backlog - int(max(depth, 0))
	if depth < 0 {
		missing = w.cfg.Backlog / 10 // no Inspector: add a steady slice instead
	}
	for missing > 0 {
		n := min(missing, contract.MaxClaimBatch)
		batch := make([]contract.Item, n)
		for i := range batch {
			batch[i] = w.item(NoisyTenant)
		}
		if err := w.cfg.Queue.Enqueue(ctx, batch...); err != nil {
			return err
		}
		missing -= n
	}
	return nil
}

// produce enqueues the small tenants' arrivals and keeps the backlog up.
func (w *workload) produce(ctx context.Context) {
	const tick = 200 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	p := w.cfg.Arrivals * tick.Seconds()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var batch []contract.Item
		for _, tenant := range w.tenants[1:] {
			// A Bernoulli draw per tick (plus a second for rates above one
			// per tick) gives each tenant bursty, uneven arrivals.
			for k := p; k > 0; k-- {
				if w.float() < k {
					batch = append(batch, w.item(tenant))
				}
			}
		}
		if len(batch) > 0 {
			if err := w.cfg.Queue.Enqueue(ctx, batch...); err != nil && ctx.Err() == nil {
				w.cfg.Logger.Warn("demo enqueue failed", "err", err)
			}
		}
		if n%25 == 0 {
			if err := w.topUp(ctx); err != nil && ctx.Err() == nil {
				w.cfg.Logger.Warn("demo backlog top-up failed", "err", err)
			}
		}
	}
}

// Errors the handler fails with.
var (
	errTransient = errors.New("model call timed out after 30s (will retry)")
	errPermanent = errors.New("tool arguments do not match the tool's schema: missing field \"query\"")
)

func (w *workload) handle(ctx context.Context, l contract.Lease) error {
	if l.Item.ID == HostileID {
		return policy.Permanent(errors.New("tool returned " + HostilePayload))
	}
	run, err := w.startRun(ctx, l)
	if err != nil {
		return err
	}
	span := w.cfg.MaxLatency - w.cfg.MinLatency
	d := w.cfg.MinLatency + time.Duration(w.float()*float64(span))
	// Half the run time is the model call, the other half its tools.
	for half := range 2 {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(d / 2):
		}
		if half == 0 && run != nil {
			if run, err = w.modelAnswered(ctx, l); err != nil {
				return err
			}
		}
	}
	var fail error
	if w.float() < w.cfg.FailureRate {
		fail = errTransient
		if w.float() < w.cfg.PermanentShare {
			fail = policy.Permanent(errPermanent)
		}
	}
	if err := w.finishRun(ctx, l, run, fail); err != nil {
		return err
	}
	return fail
}

// startRun writes the item's run as its attempt begins: created on the
// first attempt, rewritten on a retry. It returns nil without a State.
func (w *workload) startRun(ctx context.Context, l contract.Lease) (*contract.Run, error) {
	if w.cfg.State == nil {
		return nil, nil
	}
	runs := runner.Runs(ctx, w.cfg.State)
	next := contract.Run{Tenant: l.Item.Tenant, ID: l.Item.ID, Status: "planning",
		Data: fmt.Appendf(nil, `{"step":"plan","attempt":%d,"model":"demo-1"}`, l.Item.Attempts+1)}
	cur, err := runs.GetRun(ctx, l.Item.Tenant, l.Item.ID)
	switch {
	case errors.Is(err, contract.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		next.Version = cur.Version
	}
	return runs.PutRun(ctx, next)
}

// modelAnswered records the model call's cost on the run and says the
// attempt is waiting on its tools.
func (w *workload) modelAnswered(ctx context.Context, l contract.Lease) (*contract.Run, error) {
	in := 200 + int64(w.float()*1800)
	out := 20 + int64(w.float()*400)
	return runner.Runs(ctx, w.cfg.State).PatchRun(ctx, l.Item.Tenant, l.Item.ID, contract.Patch{Status: "calling tools",
		Counters: contract.Counters{Iterations: 1, InputTokens: in, OutputTokens: out, CostMicros: 3*in + 15*out}})
}

// finishRun writes the attempt's outcome on the run.
func (w *workload) finishRun(ctx context.Context, l contract.Lease, run *contract.Run, fail error) error {
	if run == nil {
		return nil
	}
	run.Fence = 0 // the lease's latest token, which runner.Runs fills in
	run.Status, run.Data = "done", fmt.Appendf(nil, `{"step":"answer","attempt":%d,"answer":"ok"}`, l.Item.Attempts+1)
	if fail != nil {
		run.Status = "failed"
		run.Data = fmt.Appendf(nil, `{"step":"answer","attempt":%d,"error":%q}`, l.Item.Attempts+1, fail.Error())
	}
	_, err := runner.Runs(ctx, w.cfg.State).PutRun(ctx, *run)
	return err
}

// crash claims one item now and then and walks away from it, as a worker
// that dies mid-lease would; the runners' reaper returns it.
func (w *workload) crash(ctx context.Context) {
	t := time.NewTicker(w.cfg.CrashEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		leases, err := w.cfg.Queue.Claim(ctx, contract.ClaimRequest{Queue: w.cfg.QueueName, Worker: "worker-doomed", LeaseFor: w.cfg.CrashLease, Max: 1})
		if err == nil && len(leases) > 0 {
			w.cfg.Logger.Info("demo worker died holding a lease", "tenant", leases[0].Item.Tenant, "id", leases[0].Item.ID)
		}
	}
}
