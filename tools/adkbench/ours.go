package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// benchQueue is the queue our backings use; tenants share it and take turns.
const benchQueue = "bench"

// instance is one freshly opened backing of ours for one measurement.
type instance struct {
	q     contract.WorkQueue
	waker contract.Waker // nil when the backing offers no wake-up
	close func(ctx context.Context) error
	// settle, when set, brings the store to its steady state after a
	// load (the depth scenario measures claims there, not the server's
	// catching up with a million fresh rows).
	settle func(ctx context.Context) error
	// size, when set, reads how big the store is (what it names: Redis
	// bytes of the namespace's keys, PostgreSQL bytes of the schema's tables,
	// SQLite bytes in use), for the history scenario's prune-flat run.
	size func(ctx context.Context) (what string, n int64, err error)
	// serverMicros, when set, reads the server's own time in the queue's
	// scripts so far (Redis: INFO commandstats), so a row can say what
	// the server spent per item while the workers ran.
	serverMicros func(ctx context.Context) (int64, error)
}

// ourBacking drives a contract.WorkQueue with contract/runner, the loop
// users run, or (the runner scenario's reference) the harness's own
// worker pool.
type ourBacking struct {
	label string
	open  func(ctx context.Context, conc int) (*instance, error)
	// openState opens a fresh state store of the backing, under policy p,
	// for conc writers at once (the state scenario).
	openState func(ctx context.Context, conc int, p contract.RunPolicy) (*stateInstance, error)
	// poll is the re-poll interval after an empty claim: the safety net
	// when a waker exists, the only way to see new work otherwise.
	poll     time.Duration
	claimers int
	maxBatch int
	chunk    int
	loaders  int
	// carry: use CompleteAndClaim when the queue has it (-complete-and-claim).
	carry bool

	// viaPool makes start drive the queue with the harness's worker pool
	// instead of contract/runner.
	viaPool bool

	inst *instance
	w    workload
	pool consumer
	// serverAt is serverMicros when the workers started; serverPerItem
	// what it grew by per item handled, once they stopped (0: unknown).
	serverAt      int64
	serverPerItem float64
	// peakLeased is the most live leases the sampled tenant was seen
	// holding (workload.sampled); stopSampler ends the sampling.
	peakLeased  int
	stopSampler func()
}

// consumer is what works a queue during a measurement: the harness's
// worker pool or contract/runner.
type consumer interface {
	// halt stops claiming and returns once everything handled is settled.
	halt()
	// errs counts the errors the workers saw and returns the first.
	errs() (int64, error)
	// summary describes the calls made, "" when unknown.
	summary() string
}

func (b *ourBacking) name() string      { return b.label }
func (b *ourBacking) peer() bool        { return false }
func (b *ourBacking) enqueueChunk() int { return b.chunk }
func (b *ourBacking) enqueuers() int    { return b.loaders }

func (b *ourBacking) errs() (int64, error) {
	if b.pool == nil {
		return 0, nil
	}
	return b.pool.errs()
}

func (b *ourBacking) detail() string {
	if b.pool == nil {
		return ""
	}
	s := b.pool.summary()
	if b.serverPerItem > 0 {
		s += fmt.Sprintf("; server %.1f µs/item", b.serverPerItem)
	}
	return s
}

func (b *ourBacking) prepare(ctx context.Context, w workload) error {
	inst, err := b.open(ctx, w.conc)
	if err != nil {
		return err
	}
	b.inst, b.w, b.pool, b.serverPerItem = inst, w, nil, 0
	b.peakLeased, b.stopSampler = 0, nil
	if w.lifecycle != nil {
		if _, ok := contract.AsLifecycleController(inst.q); !ok {
			return fmt.Errorf("%s has no lifecycle controls (its queue's Capabilities().Lifecycle is false): the lifecycle scenario needs priorities and Snooze", b.label)
		}
	}
	if w.retention != nil {
		hk, ok := contract.AsHistoryKeeper(inst.q)
		if !ok {
			return fmt.Errorf("%s: %w", b.label, errNoHistory)
		}
		if err := hk.SetRetention(ctx, benchQueue, *w.retention); err != nil {
			return fmt.Errorf("set retention: %w", err)
		}
	}
	if len(w.limits) == 0 {
		return nil
	}
	fc, ok := contract.AsFlowController(inst.q)
	if !ok {
		return fmt.Errorf("%s does not enforce limits", b.label)
	}
	for t, l := range w.limits {
		if err := fc.SetLimits(ctx, benchQueue, tenantName(t), l); err != nil {
			return err
		}
	}
	return nil
}

// sample reads the sampled tenant's live leases from FlowStatus until
// stopped, keeping the peak.
func (b *ourBacking) sample(ctx context.Context) {
	fc, ok := contract.AsFlowController(b.inst.q)
	if !ok || b.w.sampled == "" {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	b.stopSampler = func() { cancel(); <-done }
	name := b.w.sampled
	go func() {
		defer close(done)
		// Often enough to catch a cap overrun that lasts a claim's
		// round trips, seldom enough not to load the backing measured.
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if st, err := fc.FlowStatus(ctx, benchQueue); err == nil {
				for _, tf := range st {
					if tf.Tenant == name {
						b.peakLeased = max(b.peakLeased, tf.Leased)
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

func (b *ourBacking) enqueue(ctx context.Context, jobs []job) error {
	items := make([]contract.Item, len(jobs))
	now := time.Now()
	for i, j := range jobs {
		items[i] = contract.Item{Tenant: tenantName(j.tenant), ID: strconv.FormatInt(j.seq, 10), Queue: benchQueue, Priority: j.priority}
		if j.delay > 0 {
			items[i].NotBefore = now.Add(j.delay)
		}
	}
	return b.inst.q.Enqueue(ctx, items...)
}

func (b *ourBacking) start(ctx context.Context) error {
	if b.inst.serverMicros != nil {
		if us, err := b.inst.serverMicros(ctx); err == nil {
			b.serverAt = us
		}
	}
	b.sample(ctx)
	if b.w.lifecycle != nil && b.viaPool {
		return errors.New("the harness pool cannot snooze: the lifecycle scenario runs under the runner")
	}
	if !b.viaPool {
		handle := func(_ context.Context, l contract.Lease) error {
			b.w.rec.handleID(l.Item.ID)
			return nil
		}
		if b.w.lifecycle != nil {
			handle = b.w.lifecycle.handler(b.w.rec)
		}
		p, err := startRunner(b.inst.q, handle, b.w.conc, b.maxBatch, b.poll, b.carry)
		if err != nil {
			return err
		}
		b.pool = p
		return nil
	}
	p := &workerPool{
		q: b.inst.q, waker: b.inst.waker, rec: b.w.rec,
		conc: b.w.conc, claimers: b.claimers, maxBatch: b.maxBatch, poll: b.poll, carry: b.carry,
	}
	p.run()
	b.pool = p
	return nil
}

func (b *ourBacking) stop(ctx context.Context) error {
	if b.pool != nil {
		b.pool.halt()
	}
	if b.stopSampler != nil {
		b.stopSampler()
		b.stopSampler = nil
	}
	if b.inst.serverMicros != nil {
		if us, err := b.inst.serverMicros(ctx); err == nil && b.w.rec.processed.Load() > 0 {
			b.serverPerItem = float64(us-b.serverAt) / float64(b.w.rec.processed.Load())
		}
	}
	if b.w.checkDrained {
		if err := checkDrained(ctx, b.inst.q); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	if r := b.w.retention; r != nil && b.w.checkKept {
		if err := checkKept(ctx, b.inst.q, contract.ItemKey{Tenant: tenantName(0), Queue: benchQueue, ID: "0"}, r.Events > 0); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	return nil
}

func (b *ourBacking) cleanup(ctx context.Context) error {
	if b.inst == nil {
		return nil
	}
	err := b.inst.close(ctx)
	b.inst = nil
	return err
}

// workerPool is the consumer loop the harness runs on our backings, built
// like River's producer and batch completer: claimers take as many items
// as there are free worker slots (conc in all, at most maxBatch per
// claim), run the handler, free the slots, and hand the leases to
// completers that settle everything pending in one Complete call. The
// hand-off holds a few batches at most, so a completer that falls behind
// stops the claimers. With carry, when the queue is a
// contract.CompleteClaimer, a claimer instead carries the leases it
// handled into its next claim (one round trip for both); the completers
// then only settle what is left when the run stops or a combined call
// fails. Carrying is off by default: the completers already overlap their
// round trips with the claims, and carrying puts the complete's script
// time on the claim's path (measured slower on redis at batch 100).
type workerPool struct {
	q        contract.WorkQueue
	waker    contract.Waker
	rec      *recorder
	conc     int
	claimers int
	maxBatch int
	poll     time.Duration
	carry    bool

	slotMu   sync.Mutex
	slotCond *sync.Cond
	free     int // worker slots not running a handler
	settle   chan []contract.Lease
	cancel   context.CancelFunc
	claimWG  sync.WaitGroup
	settleWG sync.WaitGroup
	errCounter

	callStats
}

// callStats records a consumer's queue calls: the claims that returned
// items and the Complete calls.
type callStats struct {
	statMu    sync.Mutex
	claimLat  []time.Duration // claims that returned items
	claimed   int
	settleLat []time.Duration
	settled   int
	carriers  int // claims that carried completes (CompleteAndClaim)
	carried   int // completes they carried
}

// claimDone records a claim that took took and returned n items,
// carrying carried completes.
func (s *callStats) claimDone(took time.Duration, n, carried int) {
	s.statMu.Lock()
	defer s.statMu.Unlock()
	if carried > 0 {
		s.carriers++
		s.carried += carried
	}
	if n > 0 {
		s.claimLat = append(s.claimLat, took)
		s.claimed += n
	}
}

// completeDone records a Complete call of n leases that took took.
func (s *callStats) completeDone(took time.Duration, n int) {
	s.statMu.Lock()
	defer s.statMu.Unlock()
	s.settleLat = append(s.settleLat, took)
	s.settled += n
}

// summary says how the calls went: the claims that returned items (count,
// mean batch, p50 and max latency) and the Complete calls.
func (s *callStats) summary() string {
	s.statMu.Lock()
	defer s.statMu.Unlock()
	if len(s.claimLat) == 0 {
		return ""
	}
	c := slices.Clone(s.claimLat)
	slices.Sort(c)
	out := fmt.Sprintf("claims %d×%.1f p50 %s max %s", len(c), float64(s.claimed)/float64(len(c)),
		percentile(c, 0.5).Round(10*time.Microsecond), c[len(c)-1].Round(10*time.Microsecond))
	if s.carriers > 0 {
		out += fmt.Sprintf(" (%d of them carrying %.1f completes)", s.carriers, float64(s.carried)/float64(s.carriers))
	}
	if len(s.settleLat) > 0 {
		d := slices.Clone(s.settleLat)
		slices.Sort(d)
		out += fmt.Sprintf("; completes %d×%.1f p50 %s max %s", len(d), float64(s.settled)/float64(len(d)),
			percentile(d, 0.5).Round(10*time.Microsecond), d[len(d)-1].Round(10*time.Microsecond))
	}
	return out
}

// errCounter counts a consumer's errors and keeps the first.
type errCounter struct {
	n     atomic.Int64
	mu    sync.Mutex
	first error
}

func (e *errCounter) fail(err error) {
	e.n.Add(1)
	e.mu.Lock()
	if e.first == nil {
		e.first = err
	}
	e.mu.Unlock()
}

func (e *errCounter) errs() (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n.Load(), e.first
}

func (p *workerPool) run() {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.free = p.conc
	p.slotCond = sync.NewCond(&p.slotMu)
	// A cancelled run must wake claimers that wait for slots.
	context.AfterFunc(ctx, func() {
		p.slotMu.Lock()
		p.slotCond.Broadcast()
		p.slotMu.Unlock()
	})
	p.settle = make(chan []contract.Lease, 4)
	claimers := max(1, min(p.claimers, p.conc))
	for i := range claimers {
		p.claimWG.Add(1)
		go p.claimLoop(ctx, fmt.Sprintf("adkbench-%d", i))
	}
	for range 2 {
		p.settleWG.Add(1)
		go p.completeLoop()
	}
}

// halt stops claiming, then lets the completers settle what was handled.
func (p *workerPool) halt() {
	p.cancel()
	p.claimWG.Wait()
	close(p.settle)
	p.settleWG.Wait()
}

// release frees n slots at once, so a waiting claimer sees them together
// and asks for one batch, not for several fragments of it.
func (p *workerPool) release(n int) {
	if n <= 0 {
		return
	}
	p.slotMu.Lock()
	p.free += n
	p.slotCond.Broadcast()
	p.slotMu.Unlock()
}

// acquire waits for at least one free slot and takes up to max of them;
// 0 means the run was cancelled.
func (p *workerPool) acquire(ctx context.Context, max int) int {
	p.slotMu.Lock()
	defer p.slotMu.Unlock()
	for p.free == 0 {
		if ctx.Err() != nil {
			return 0
		}
		p.slotCond.Wait()
	}
	if ctx.Err() != nil {
		return 0
	}
	n := min(p.free, max)
	p.free -= n
	return n
}

func (p *workerPool) claimLoop(ctx context.Context, worker string) {
	defer p.claimWG.Done()
	var wake <-chan struct{}
	if p.waker != nil {
		ch, unsubscribe := p.waker.Subscribe(benchQueue)
		defer unsubscribe()
		wake = ch
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var cc contract.CompleteClaimer
	if p.carry {
		cc, _ = contract.AsCompleteClaimer(p.q)
	}
	var done []contract.Lease // handled, to be carried by the next claim (cc only)
	defer func() {
		if len(done) > 0 {
			p.settle <- done // the completers are still running until claimWG is done
		}
	}()
	for {
		n := p.acquire(ctx, p.maxBatch)
		if n == 0 {
			return
		}
		req := contract.ClaimRequest{Queue: benchQueue, Worker: worker, LeaseFor: 5 * time.Minute, Max: n}
		t0 := time.Now()
		var leases []contract.Lease
		var err error
		carried := len(done)
		if carried > 0 {
			leases, err = cc.CompleteAndClaim(ctx, done, req)
			var lost *contract.LeaseLostError
			switch {
			case errors.As(err, &lost):
				p.fail(fmt.Errorf("complete: %w", err))
				err = nil
				done = nil
			case err == nil || errors.Is(err, contract.ErrEmpty):
				done = nil
			default:
				// Whether the completes landed is unknown (a run stopped
				// mid-call, say): complete them again on a context of
				// their own; those that had landed come back lost, which
				// is expected here.
				cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				if cerr := p.q.Complete(cctx, done...); cerr != nil && !errors.As(cerr, &lost) {
					p.fail(fmt.Errorf("complete: %w", cerr))
				}
				cancel()
				done = nil
				carried = 0
			}
		} else {
			leases, err = p.q.Claim(ctx, req)
		}
		p.claimDone(time.Since(t0), len(leases), carried)
		p.release(n - len(leases))
		if len(leases) == 0 {
			if ctx.Err() != nil {
				return
			}
			if err != nil && !errors.Is(err, contract.ErrEmpty) {
				p.fail(err)
			}
			timer.Reset(p.poll)
			select {
			case <-wake:
			case <-timer.C:
			case <-ctx.Done():
				return
			}
			continue
		}
		for _, l := range leases {
			p.rec.handleID(l.Item.ID)
		}
		p.release(len(leases))
		if cc != nil {
			done = leases
		} else {
			p.settle <- leases
		}
	}
}

func (p *workerPool) completeLoop() {
	defer p.settleWG.Done()
	for first := range p.settle {
		batch := first
	more:
		for len(batch) < contract.MaxClaimBatch {
			select {
			case next, ok := <-p.settle:
				if !ok {
					break more
				}
				batch = append(batch, next...)
			default:
				break more
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t0 := time.Now()
		if err := p.q.Complete(ctx, batch...); err != nil {
			p.fail(fmt.Errorf("complete: %w", err))
		}
		p.completeDone(time.Since(t0), len(batch))
		cancel()
	}
}
