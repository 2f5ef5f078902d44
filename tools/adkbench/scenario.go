package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// measurement is what one run of a workload on one backing yields.
type measurement struct {
	elapsed   time.Duration // start of the workers → the last watched item handled
	loadTime  time.Duration // loading the items before the workers start
	processed int64
	expected  int64
	dups      int64
	errs      int64
	err       error
}

// load enqueues jobs in the backing's chunk size from its number of
// concurrent loaders, in order within each loader.
func load(ctx context.Context, b backing, jobs []job, rec *recorder, markCommit bool) error {
	chunk := max(1, b.enqueueChunk())
	var chunks [][]job
	for i := 0; i < len(jobs); i += chunk {
		chunks = append(chunks, jobs[i:min(i+chunk, len(jobs))])
	}
	work := make(chan []job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range max(1, b.enqueuers()) {
		wg.Go(func() {
			for c := range work {
				if err := b.enqueue(ctx, c); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					continue
				}
				if markCommit {
					for _, j := range c {
						rec.markCommitted(j.seq)
					}
				}
			}
		})
	}
	for _, c := range chunks {
		work <- c
	}
	close(work)
	wg.Wait()
	return first
}

// drain loads jobs, starts the workers, and waits until the recorder says
// done or the timeout passes.
func drain(ctx context.Context, b backing, w workload, jobs []job, timeout time.Duration) measurement {
	m := measurement{expected: w.rec.target}
	if w.rec.watch != nil {
		m.expected = w.rec.watchLeft.Load()
	}
	if err := b.prepare(ctx, w); err != nil {
		m.err = fmt.Errorf("prepare: %w", err)
		_ = b.cleanup(context.Background())
		return m
	}
	defer func() {
		if err := b.cleanup(context.Background()); err != nil && m.err == nil {
			m.err = fmt.Errorf("cleanup: %w", err)
		}
	}()
	t0 := time.Now()
	if err := load(ctx, b, jobs, w.rec, false); err != nil {
		m.err = fmt.Errorf("enqueue: %w", err)
		return m
	}
	m.loadTime = time.Since(t0)
	runtime.GC() // as in depth: the load's garbage is not the workers' cost
	t1 := time.Now()
	if err := b.start(ctx); err != nil {
		m.err = fmt.Errorf("start: %w", err)
		return m
	}
	select {
	case <-w.rec.done:
	case <-time.After(timeout):
		m.err = fmt.Errorf("timed out after %s", timeout)
	case <-ctx.Done():
		m.err = ctx.Err()
	}
	m.elapsed = time.Since(t1)
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.stop(stopCtx); err != nil && m.err == nil {
		m.err = fmt.Errorf("stop: %w", err)
	}
	m.processed = w.rec.processed.Load()
	if w.rec.watch != nil {
		m.processed = m.expected - w.rec.watchLeft.Load()
	}
	m.dups = w.rec.dups.Load()
	n, err := b.errs()
	m.errs = n
	if err != nil && m.err == nil && n > 0 {
		m.err = fmt.Errorf("%d worker errors, first: %w", n, err)
	}
	return m
}

// throughputJobs spreads n items over busy tenants round robin; our
// backings also get one parked (not yet due) item per idle tenant.
func throughputJobs(n, busy, idle int, peer bool) ([]job, *recorder) {
	total := n
	if !peer {
		total += idle
	}
	rec := newRecorder(total)
	rec.target = int64(n)
	jobs := make([]job, 0, total)
	for i := range n {
		t := i % busy
		jobs = append(jobs, job{seq: int64(i), tenant: t})
		rec.tenant[i] = int32(t)
	}
	if !peer {
		for k := range idle {
			seq := n + k
			jobs = append(jobs, job{seq: int64(seq), tenant: busy + k, delay: time.Hour})
			rec.tenant[seq] = int32(busy + k)
		}
	}
	return jobs, rec
}

func (h *harness) throughput(ctx context.Context, scenario string, b backing, conc, busy, idle int) {
	h.add(h.measureThroughput(ctx, scenario, b, conc, h.cfg.items, busy, idle))
}

// interleaved measures the scenario on every backing in turn, -pairs
// rounds of them, and adds each backing's median row, its rounds' values
// kept in the row: the peer ratios are then the medians of ratios taken
// within one round, a minute apart at most, rather than of two figures
// the machine's other work may have landed on differently.
func (h *harness) interleaved(ctx context.Context, scenario string, bs []backing, conc, busy int) {
	rounds := make([][]row, len(bs))
	for range max(1, h.cfg.pairs) {
		for i, b := range bs {
			rounds[i] = append(rounds[i], h.measureThroughput(ctx, scenario, b, conc, h.cfg.items, busy, 0))
		}
	}
	for _, rs := range rounds {
		h.add(medianRow(rs))
	}
}

// medianRow is the row of median value among rs, carrying every round's
// value (0 for a round that failed) in Rounds; a failed round makes the
// row the failed one, so no error hides behind a median.
func medianRow(rs []row) row {
	vals := make([]float64, len(rs))
	for i, r := range rs {
		if r.Error != "" {
			return r
		}
		vals[i] = r.Value
	}
	if len(rs) == 1 {
		return rs[0]
	}
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b row) int { return cmp.Compare(a.Value, b.Value) })
	m := sorted[len(sorted)/2]
	m.Rounds = vals
	shown := make([]string, len(vals))
	for i, v := range vals {
		shown[i] = fnum(v)
	}
	m.Note = fmt.Sprintf("median of %d interleaved rounds (%s); %s", len(vals), strings.Join(shown, ", "), m.Note)
	return m
}

// idlePairs measures the idle scenario on one of our backings as
// interleaved pairs: the one-tenant figure, then the same with 49 idle
// tenants beside it.
func (h *harness) idlePairs(ctx context.Context, b backing, conc int) {
	h.medianOfPairs(
		func() row { return h.measureThroughput(ctx, "idle", b, conc, h.cfg.items, 1, 0) },
		func() row { return h.measureThroughput(ctx, "idle", b, conc, h.cfg.items, 1, 49) },
		"vs 1 tenant")
}

// runnerPairs measures one busy tenant on one of our backings driven by
// contract/runner (which every other scenario uses) in interleaved pairs
// with the harness's own worker pool, the diagnostic reference: how much
// of what the queue can give a user's worker gets. Half the throughput
// items is enough for a ratio taken pair by pair, and keeps make bench
// within its ten minutes.
func (h *harness) runnerPairs(ctx context.Context, b *ourBacking, conc int) {
	n := max(1, h.cfg.items/2)
	h.medianOfPairs(
		func() row {
			b.viaPool = true
			defer func() { b.viaPool = false }()
			return h.measureThroughput(ctx, "runner", b, conc, n, 1, 0)
		},
		func() row { return h.measureThroughput(ctx, "runner", b, conc, n, 1, 0) },
		"vs harness pool")
}

// pairInTurn measures base and alt back to back, base first in pair i
// when i is even and alt first when it is odd, and returns their rows.
func pairInTurn(i int, base, alt func() row) (one, two row) {
	if i%2 == 0 {
		one = base()
		return one, alt()
	}
	two = alt()
	return base(), two
}

// medianOfPairs measures base and alt back to back, h.cfg.pairs times,
// and adds alt's median row with the median of the pairs' ratios (alt /
// base), named ratioOf. On a shared machine two figures taken minutes
// apart differ by more than the 10% a target may allow; a pair taken back
// to back sees the same machine, and the median of the pairs' ratios
// discounts the one a burst of other work landed in. The pairs take turns
// at which side runs first (base first in the first pair), so that what
// the first run of a pair leaves to the second (a warm server, a heap
// the collector has not caught up with) favours neither side: with both
// sides the same load, Redis's pairs read 1.08×–1.10× when the second
// side was always the same.
func (h *harness) medianOfPairs(base, alt func() row, ratioOf string) {
	var ratios []float64
	var alts []row
	for i := range max(1, h.cfg.pairs) {
		one, two := pairInTurn(i, base, alt)
		if one.Error != "" || two.Error != "" || one.Value == 0 {
			if two.Error == "" {
				two = one
			}
			h.add(two)
			return
		}
		ratios = append(ratios, two.Value/one.Value)
		alts = append(alts, two)
	}
	slices.SortFunc(alts, func(a, b row) int { return cmp.Compare(a.Value, b.Value) })
	r := alts[len(alts)/2]
	var shown []string
	for _, x := range ratios {
		shown = append(shown, fmt.Sprintf("%.2f", x))
	}
	slices.Sort(ratios)
	r.Ratio, r.RatioOf = ratios[len(ratios)/2], ratioOf
	r.Note = fmt.Sprintf("median of %d interleaved pairs (%s); %s", len(ratios), strings.Join(shown, ", "), r.Note)
	h.add(r)
}

func (h *harness) measureThroughput(ctx context.Context, scenario string, b backing, conc, items, busy, idle int) row {
	jobs, rec := throughputJobs(items, busy, idle, b.peer())
	w := workload{tenants: busy + idle, busy: busy, conc: conc, rec: rec}
	h.logf("%s %s conc=%d items=%d tenants=%d busy", scenario, b.name(), conc, items, busy)
	m := drain(ctx, b, w, jobs, h.cfg.timeout)
	r := h.row(scenario, b, conc, m)
	r.Metric, r.Unit = "claim→complete", "items/s"
	if m.elapsed > 0 {
		r.Value = float64(m.processed) / m.elapsed.Seconds()
	}
	if m.loadTime > 0 {
		r.EnqueueRate = float64(len(jobs)) / m.loadTime.Seconds()
	}
	r.Detail = b.detail()
	return r
}

// burndown is River's published benchmark (river bench with
// --num-total-jobs): every item of one tenant queued first, then drained
// by many workers; River gets the settings its bench command uses (see
// riverBacking.benchMode), our backing the runner with its default batch.
func (h *harness) burndown(ctx context.Context, b backing) {
	switch rb := b.(type) {
	case *riverBacking:
		rb.benchMode = true
		defer func() { rb.benchMode = false }()
	case *ourBacking:
		batch := rb.maxBatch
		rb.maxBatch = contract.MaxClaimBatch
		defer func() { rb.maxBatch = batch }()
	}
	saved := h.cfg.timeout
	h.cfg.timeout = max(saved, 10*time.Minute) // a million items at a few thousand a second
	defer func() { h.cfg.timeout = saved }()
	h.add(h.measureThroughput(ctx, "burndown", b, h.cfg.burndownConc, h.cfg.burndown, 1, 0))
}

// fairness: one tenant holds big items, 50 others hold 10 each, loaded
// after it; the claim index of each small tenant's first item.
func (h *harness) fairness(ctx context.Context, b backing, conc int) {
	r := h.fairnessRow(ctx, "fairness", b, conc, 60)
	if !b.peer() {
		r.Target = "≤ 60"
		r.Met = ptr(r.Value > 0 && r.Value <= 60)
	}
	h.add(r)
}

// fairnessRow measures the fairness load on b and returns its row: the
// largest claim index of a small tenant's first item (-1 when one was
// never claimed), noting how many came within bound.
func (h *harness) fairnessRow(ctx context.Context, scenario string, b backing, conc, bound int) row {
	big, small, each := h.cfg.items, 50, 10
	total := big + small*each
	rec := newRecorder(total)
	watch := make([]bool, total)
	jobs := make([]job, 0, total)
	for i := range big {
		jobs = append(jobs, job{seq: int64(i), tenant: 0})
	}
	for k := range small * each {
		seq := big + k
		t := 1 + k%small
		jobs = append(jobs, job{seq: int64(seq), tenant: t})
		rec.tenant[seq] = int32(t)
		watch[seq] = true
	}
	rec.watchOnly(watch)
	w := workload{tenants: 1 + small, conc: conc, rec: rec}
	h.logf("fairness %s conc=%d big=%d small=%dx%d", b.name(), conc, big, small, each)
	m := drain(ctx, b, w, jobs, h.cfg.timeout)
	firsts := make(map[int32]int64)
	for seq := big; seq < total; seq++ {
		o := rec.order[seq].Load()
		if o == 0 {
			continue
		}
		t := rec.tenant[seq]
		if cur, ok := firsts[t]; !ok || o < cur {
			firsts[t] = o
		}
	}
	var worst int64
	within := 0
	for _, o := range firsts {
		worst = max(worst, o)
		if o <= int64(bound) {
			within++
		}
	}
	if len(firsts) < small {
		worst = -1
	}
	r := h.row(scenario, b, conc, m)
	r.Metric, r.Unit, r.Value = "max first-claim index", "claims", float64(worst)
	r.Note = fmt.Sprintf("%d/%d small tenants within %d", within, small, bound)
	return r
}

// wake: the workers wait idle; items arrive one at a time at a steady
// rate; enqueue return → handler start.
func (h *harness) wake(ctx context.Context, b backing, conc int) {
	n := h.cfg.wakeItems
	rec := newRecorder(n)
	w := workload{tenants: 1, conc: conc, rec: rec}
	h.logf("wake %s n=%d rate=%d/s", b.name(), n, h.cfg.wakeRate)
	m := measurement{expected: int64(n)}
	err := func() error {
		if err := b.prepare(ctx, w); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		if err := b.start(ctx); err != nil {
			return fmt.Errorf("start: %w", err)
		}
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = b.stop(stopCtx)
		}()
		time.Sleep(500 * time.Millisecond) // let the workers reach their idle wait
		tick := time.NewTicker(time.Second / time.Duration(h.cfg.wakeRate))
		defer tick.Stop()
		for i := range n {
			<-tick.C
			if err := b.enqueue(ctx, []job{{seq: int64(i)}}); err != nil {
				return fmt.Errorf("enqueue: %w", err)
			}
			rec.markCommitted(int64(i))
		}
		select {
		case <-rec.done:
		case <-time.After(h.cfg.timeout):
			return errors.New("timed out waiting for the last item")
		}
		return nil
	}()
	m.err = err
	if cerr := b.cleanup(context.Background()); cerr != nil && m.err == nil {
		m.err = cerr
	}
	m.processed = rec.processed.Load()
	m.dups = rec.dups.Load()
	m.errs, _ = b.errs()
	lat := rec.latencies()
	for _, q := range []struct {
		name string
		p    float64
	}{{"p50", 0.50}, {"p99", 0.99}, {"max", 1}} {
		r := h.row("wake", b, conc, m)
		r.Metric, r.Unit = "wake latency "+q.name, "ms"
		r.Value = float64(percentile(lat, q.p).Nanoseconds()) / 1e6
		if b.name() == "pg-listen" {
			switch q.name {
			case "p50":
				r.Target, r.Met = "≤ 5 ms", ptr(r.Value <= 5)
			case "p99":
				r.Target, r.Met = "≤ 25 ms", ptr(r.Value <= 25)
			}
		}
		h.add(r)
	}
}

// depth: Claim latency (Max 1, then Complete) with 1,000 items queued and
// again with cfg.depth queued. Only for our backings: the peers expose no
// claim call to time.
func (h *harness) depth(ctx context.Context, b *ourBacking) {
	// Each side is sampled after its load has settled (PostgreSQL: a
	// VACUUM ANALYZE of the work table, waited for), in rounds a second
	// apart, and reports its quietest round's median: a round that met a
	// burst of other work (Redis rehashing a grown set, say) does not
	// decide the ratio, and both sides get the same treatment.
	const shallow, rounds, perRound = 1000, 5, 60
	const samples = rounds * perRound
	deep := max(h.cfg.depth, shallow+samples)
	rec := newRecorder(deep + samples)
	w := workload{tenants: 1, conc: 1, rec: rec}
	h.logf("depth %s %d vs %d", b.name(), shallow, deep)
	m := measurement{expected: 2 * samples}
	var p50s [2]time.Duration
	err := func() error {
		if err := b.prepare(ctx, w); err != nil {
			return err
		}
		mk := func(from, to int) []job {
			jobs := make([]job, 0, to-from)
			for i := from; i < to; i++ {
				jobs = append(jobs, job{seq: int64(i), tenant: i % 10})
			}
			return jobs
		}
		settled := func(jobs []job) error {
			if err := load(ctx, b, jobs, rec, false); err != nil {
				return err
			}
			if b.inst.settle != nil {
				return b.inst.settle(ctx)
			}
			return nil
		}
		if err := settled(mk(0, shallow)); err != nil {
			return err
		}
		sample := func() (time.Duration, error) {
			var best time.Duration
			for round := range rounds {
				if round > 0 {
					time.Sleep(time.Second)
				}
				// The loads leave garbage behind (a million items' worth
				// after memstore); collect it now so no GC pause lands in a
				// sample.
				runtime.GC()
				var lat []time.Duration
				for range perRound {
					t := time.Now()
					ls, err := b.inst.q.Claim(ctx, contract.ClaimRequest{Queue: benchQueue, Worker: "adkbench-depth", LeaseFor: time.Minute, Max: 1})
					lat = append(lat, time.Since(t))
					if err != nil {
						return 0, err
					}
					m.processed += int64(len(ls))
					if err := b.inst.q.Complete(ctx, ls...); err != nil {
						return 0, err
					}
				}
				slices.Sort(lat)
				if p := percentile(lat, 0.5); round == 0 || p < best {
					best = p
				}
			}
			return best, nil
		}
		var err error
		if p50s[0], err = sample(); err != nil {
			return err
		}
		// Top up to the deep figure (shallow-samples are still queued).
		if err := settled(mk(shallow, deep+samples)); err != nil {
			return err
		}
		if p50s[1], err = sample(); err != nil {
			return err
		}
		return nil
	}()
	m.err = err
	if cerr := b.cleanup(context.Background()); cerr != nil && m.err == nil {
		m.err = cerr
	}
	for i, d := range []int{shallow, deep} {
		r := h.row("depth", b, 1, m)
		r.Items = d
		r.Metric, r.Unit = fmt.Sprintf("claim p50 @%d queued", d), "ms"
		r.Value = float64(p50s[i].Nanoseconds()) / 1e6
		if i == 1 && p50s[0] > 0 {
			r.Ratio = float64(p50s[1]) / float64(p50s[0])
			r.RatioOf = "deep/shallow"
			r.Target, r.Met = "≤ 1.5", ptr(r.Ratio <= 1.5)
		}
		h.add(r)
	}
}

func ptr[T any](v T) *T { return &v }
