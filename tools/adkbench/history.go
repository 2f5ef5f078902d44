package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// errNoHistory: the backing's queue does not keep history
// (contract.AsHistoryKeeper), so the history scenario cannot run on it.
var errNoHistory = errors.New("not supported: its queue keeps no history (contract.AsHistoryKeeper is false)")

// historyOn is the retention the history scenario's measured side runs
// under: every completed item kept (for longer than any run) with its
// latest 50 events.
var historyOn = contract.Retention{Age: 24 * time.Hour, Events: 50}

// historyScenario runs the three parts of the history scenario (issue 18)
// on one of our backings: the throughput load with retention and events
// off against the same load with them on, in interleaved pairs (target
// ≥ 0.85×); claim latency with none and then historyRetained finished
// items kept (target ≤ 1.5× at p50); and the prune-flat run. A backing
// whose queue keeps no history gets one row saying so.
func (h *harness) historyScenario(ctx context.Context, b *ourBacking, conc int) {
	if err := historySupported(ctx, b); err != nil {
		r := row{Scenario: "history", Backing: b.name(), Concurrency: conc, Metric: "history"}
		if errors.Is(err, errNoHistory) {
			r.Note = errNoHistory.Error()
			h.logf("  history   %-9s %s", b.name(), r.Note)
		} else {
			r.Error = err.Error()
		}
		h.rows = append(h.rows, r)
		return
	}
	h.medianOfPairs(
		func() row { return h.measureHistory(ctx, b, conc, nil) },
		func() row { return h.measureHistory(ctx, b, conc, &historyOn) },
		"vs retention and events off")
	// medianOfPairs added the row; give it its target.
	if r := &h.rows[len(h.rows)-1]; r.Error == "" && r.Ratio > 0 {
		r.Target, r.Met = "≥ 0.85× off", ptr(r.Ratio >= 0.85)
	}
	h.historyLatency(ctx, b)
	h.pruneFlat(ctx, b, conc)
}

// historySupported opens the backing once to see whether its queue keeps
// history.
func historySupported(ctx context.Context, b *ourBacking) error {
	inst, err := b.open(ctx, 1)
	if err != nil {
		return err
	}
	defer func() { _ = inst.close(context.Background()) }()
	if _, ok := contract.AsHistoryKeeper(inst.q); !ok {
		return errNoHistory
	}
	return nil
}

// measureHistory is the throughput scenario's load (one busy tenant)
// under retention r (nil: none set). Both sides check the queue holds no
// live item after; the side with retention that the first item was kept
// with its events.
func (h *harness) measureHistory(ctx context.Context, b *ourBacking, conc int, r *contract.Retention) row {
	jobs, rec := throughputJobs(h.cfg.items, 1, 0, false)
	w := workload{tenants: 1, busy: 1, conc: conc, rec: rec, checkDrained: true, retention: r, checkKept: r != nil}
	note := "retention and events off"
	if r != nil {
		note = fmt.Sprintf("completed items kept (Age %v), the latest %d events of each recorded", r.Age, r.Events)
	}
	h.logf("history %s conc=%d items=%d retention=%v", b.name(), conc, h.cfg.items, r != nil)
	return h.drainRow(ctx, "history", b, w, jobs, note)
}

// checkKept checks that the completed item key was kept with its events
// (when events are on): the retention did what it says.
func checkKept(ctx context.Context, q contract.WorkQueue, key contract.ItemKey, events bool) error {
	hk, ok := contract.AsHistoryKeeper(q)
	if !ok {
		return errNoHistory
	}
	hist, err := hk.History(ctx, key)
	if err != nil {
		return fmt.Errorf("history of %s/%s under a retention that keeps it: %w", key.Tenant, key.ID, err)
	}
	if hist.Item.State != contract.StateCompleted {
		return fmt.Errorf("item %s/%s kept as %q, want %q", key.Tenant, key.ID, hist.Item.State, contract.StateCompleted)
	}
	if !events {
		return nil
	}
	var kinds []string
	for _, e := range hist.Events {
		kinds = append(kinds, string(e.Kind))
	}
	if !slices.Contains(kinds, string(contract.EventClaimed)) || !slices.Contains(kinds, string(contract.EventCompleted)) {
		return fmt.Errorf("item %s/%s kept with events [%s], want claimed and completed among them", key.Tenant, key.ID, strings.Join(kinds, " "))
	}
	return nil
}

// historyLatency times claims (Max 1, then Complete) on a queue under
// historyOn with no finished item kept, then on the same queue once
// historyRetained more items have been enqueued and completed (all kept).
// Each side has the same items queued (1,000, 200 with -quick, plus
// those the samples take), its load settled as in depth; each reports, of its rounds a
// second apart, the quietest round's p50 and p99.
func (h *harness) historyLatency(ctx context.Context, b *ourBacking) {
	rounds, perRound, queued := 5, 60, 1000
	if h.cfg.quick {
		rounds, perRound, queued = 2, 40, 200
	}
	side := queued + rounds*perRound
	n := h.cfg.historyRetained
	rec := newRecorder(2*side + n)
	w := workload{tenants: 1, conc: 1, rec: rec, retention: &historyOn}
	h.logf("history-latency %s retained 0 vs %d", b.name(), n)
	m := measurement{expected: int64(2 * rounds * perRound)}
	var lat [2][2]time.Duration // [side][p50, p99]
	mk := func(from, to int) []job {
		jobs := make([]job, 0, to-from)
		for i := from; i < to; i++ {
			jobs = append(jobs, job{seq: int64(i), tenant: i % 10})
		}
		return jobs
	}
	err := func() error {
		if err := b.prepare(ctx, w); err != nil {
			return err
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
		sample := func() ([2]time.Duration, error) {
			var best [2]time.Duration
			for round := range rounds {
				if round > 0 {
					time.Sleep(time.Second)
				}
				runtime.GC()
				ls := make([]time.Duration, 0, perRound)
				for range perRound {
					t := time.Now()
					got, err := b.inst.q.Claim(ctx, contract.ClaimRequest{Queue: benchQueue, Worker: "adkbench-history", LeaseFor: time.Minute, Max: 1})
					ls = append(ls, time.Since(t))
					if err != nil {
						return best, err
					}
					m.processed += int64(len(got))
					if err := b.inst.q.Complete(ctx, got...); err != nil {
						return best, err
					}
				}
				slices.Sort(ls)
				p50, p99 := percentile(ls, 0.5), percentile(ls, 0.99)
				if round == 0 || p50 < best[0] {
					best[0] = p50
				}
				if round == 0 || p99 < best[1] {
					best[1] = p99
				}
			}
			return best, nil
		}
		if err := settled(mk(0, side)); err != nil {
			return err
		}
		var err error
		if lat[0], err = sample(); err != nil {
			return err
		}
		// Finish what is left of the first side, then n more: all kept.
		if err := drainAll(ctx, b.inst.q); err != nil {
			return err
		}
		for from := side; from < side+n; from += 100_000 {
			if err := load(ctx, b, mk(from, min(from+100_000, side+n)), rec, false); err != nil {
				return err
			}
			if err := drainAll(ctx, b.inst.q); err != nil {
				return err
			}
		}
		if n > 0 {
			last := contract.ItemKey{Tenant: tenantName((side + n - 1) % 10), Queue: benchQueue, ID: strconv.Itoa(side + n - 1)}
			if err := checkKept(ctx, b.inst.q, last, true); err != nil {
				return err
			}
		}
		if err := settled(mk(side+n, 2*side+n)); err != nil {
			return err
		}
		lat[1], err = sample()
		return err
	}()
	m.err = err
	if cerr := b.cleanup(context.Background()); cerr != nil && m.err == nil {
		m.err = cerr
	}
	for i, kept := range []int{0, n} {
		for j, q := range []string{"p50", "p99"} {
			r := h.row("history", b, 1, m)
			r.Items = kept
			r.Metric, r.Unit = fmt.Sprintf("claim %s @%d finished kept", q, kept), "ms"
			r.Value = float64(lat[i][j].Nanoseconds()) / 1e6
			r.Note = fmt.Sprintf("claims of 1 and their Complete, %d queued; the quietest of %d rounds of %d", queued, rounds, perRound)
			if i == 1 && lat[0][j] > 0 {
				r.Ratio, r.RatioOf = float64(lat[1][j])/float64(lat[0][j]), "vs none kept"
				if q == "p50" {
					r.Target, r.Met = "≤ 1.5× none kept", ptr(r.Ratio <= 1.5)
				}
			}
			h.add(r)
		}
	}
}

// drainAll claims and completes everything ready in the bench queue.
func drainAll(ctx context.Context, q contract.WorkQueue) error {
	for {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Queue: benchQueue, Worker: "adkbench-history", LeaseFor: time.Minute, Max: contract.MaxClaimBatch})
		if errors.Is(err, contract.ErrEmpty) || (err == nil && len(ls) == 0) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := q.Complete(ctx, ls...); err != nil {
			return err
		}
	}
}

// sizeSample is what the prune-flat run saw at one moment: how many
// finished items the queue kept and how big the store was.
type sizeSample struct {
	at   time.Duration
	kept int64
	size int64 // -1: the backing has no size reading
}

// pruneFlat enqueues at a steady rate (historyRate a second) for
// historyDuration while the runner works the queue under a retention of
// historyAge (events on), and Prune runs every 100 ms until it returns
// less than a full batch. Every twentieth of the run it samples the
// finished items kept (counted through Finished) and the store's size.
// The rows give the last half's peak over the first half's (after a
// warm-up of twice the age, when the kept set has reached its level):
// flat is a ratio near 1.
func (h *harness) pruneFlat(ctx context.Context, b *ourBacking, conc int) {
	rate, dur, age := h.cfg.historyRate, h.cfg.historyDuration, h.cfg.historyAge
	total := int(float64(rate) * dur.Seconds())
	ret := contract.Retention{Age: age, Events: historyOn.Events}
	rec := newRecorder(total)
	w := workload{tenants: 1, busy: 1, conc: conc, rec: rec, retention: &ret}
	h.logf("history-prune %s rate=%d/s for %v, age %v", b.name(), rate, dur, age)
	m := measurement{expected: int64(total)}
	var samples []sizeSample
	var what string
	var pruned, pruneCalls atomic.Int64
	var pruneErr errCounter
	err := func() error {
		if err := b.prepare(ctx, w); err != nil {
			return err
		}
		hk, _ := contract.AsHistoryKeeper(b.inst.q)
		if err := b.start(ctx); err != nil {
			return err
		}
		stopped := false
		defer func() {
			if !stopped {
				_ = b.stop(context.Background())
			}
		}()
		bg, stopBG := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer func() { stopBG(); wg.Wait() }()
		wg.Go(func() {
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				for {
					n, err := hk.Prune(bg, benchQueue)
					pruneCalls.Add(1)
					pruned.Add(int64(n))
					if err != nil {
						if bg.Err() == nil {
							pruneErr.fail(err)
						}
						break
					}
					if n < contract.PruneBatch {
						break
					}
				}
				select {
				case <-bg.Done():
					return
				case <-t.C:
				}
			}
		})
		t0 := time.Now()
		var mu sync.Mutex
		var sampleErr error
		wg.Go(func() {
			t := time.NewTicker(max(dur/20, 100*time.Millisecond))
			defer t.Stop()
			for {
				select {
				case <-bg.Done():
					return
				case <-t.C:
				}
				s, w, err := sampleSize(bg, b.inst, hk)
				mu.Lock()
				if err != nil && bg.Err() == nil && sampleErr == nil {
					sampleErr = err
				}
				if err == nil {
					s.at = time.Since(t0)
					samples = append(samples, s)
					what = w
				}
				mu.Unlock()
			}
		})
		// The steady rate: a tenth of a second's items every 100 ms.
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		per := max(1, rate/10)
		for from := 0; from < total; from += per {
			<-tick.C
			jobs := make([]job, 0, per)
			for i := from; i < min(from+per, total); i++ {
				jobs = append(jobs, job{seq: int64(i)})
			}
			if err := b.enqueue(ctx, jobs); err != nil {
				return fmt.Errorf("enqueue: %w", err)
			}
		}
		select {
		case <-rec.done:
		case <-time.After(h.cfg.timeout):
			return errors.New("timed out waiting for the last item")
		case <-ctx.Done():
			return ctx.Err()
		}
		m.elapsed = time.Since(t0)
		stopBG()
		wg.Wait()
		stopped = true
		if err := b.stop(ctx); err != nil {
			return fmt.Errorf("stop: %w", err)
		}
		if n, first := pruneErr.errs(); n > 0 {
			return fmt.Errorf("%d Prune calls failed, first: %w", n, first)
		}
		if sampleErr != nil {
			return fmt.Errorf("sampling sizes: %w", sampleErr)
		}
		if pruned.Load() == 0 {
			return fmt.Errorf("no item pruned in %v under an age of %v", dur, age)
		}
		return nil
	}()
	m.err = err
	m.processed = rec.processed.Load()
	m.dups = rec.dups.Load()
	m.errs, _ = b.errs()
	if cerr := b.cleanup(context.Background()); cerr != nil && m.err == nil {
		m.err = cerr
	}
	warm := 2 * age
	early, late, ok := flatHalves(samples, warm)
	if m.err == nil && !ok {
		m.err = fmt.Errorf("%d size samples, too few after the %v warm-up to compare halves: run longer (-history-duration)", len(samples), warm)
	}
	shown := make([]string, 0, len(samples))
	for _, s := range samples {
		v := fmt.Sprintf("%.1fs:%d", s.at.Seconds(), s.kept)
		if s.size >= 0 {
			v += "/" + strconv.FormatInt(s.size, 10)
		}
		shown = append(shown, v)
	}
	pruneNote := fmt.Sprintf("%d/s for %v, age %v; %d pruned in %d Prune calls; samples (t:kept", rate, dur, age, pruned.Load(), pruneCalls.Load())
	if what != "" {
		pruneNote += "/" + what
	}
	pruneNote += ") " + strings.Join(shown, " ")
	for _, q := range []struct {
		metric string
		get    func(sizeSample) int64
	}{
		{"finished kept, late/early peak", func(s sizeSample) int64 { return s.kept }},
		{what + ", late/early peak", func(s sizeSample) int64 { return s.size }},
	} {
		if q.metric == ", late/early peak" {
			continue // no size reading on this backing
		}
		r := h.row("history", b, conc, m)
		r.Metric, r.Unit = q.metric, "ratio"
		if ok {
			e, l := peak(early, q.get), peak(late, q.get)
			r.Value = float64(l)
			if e > 0 {
				r.Ratio, r.RatioOf = float64(l)/float64(e), "late/early half"
				r.Target, r.Met = "≤ 1.25 (flat)", ptr(r.Ratio <= 1.25)
			}
			r.Unit = "peak (late half)"
		}
		r.Note = pruneNote
		h.add(r)
	}
}

// sampleSize reads the kept finished items (paging through Finished) and
// the store's size.
func sampleSize(ctx context.Context, inst *instance, hk contract.HistoryKeeper) (sizeSample, string, error) {
	s := sizeSample{size: -1}
	cursor := ""
	for {
		p, err := hk.Finished(ctx, contract.FinishedQuery{Queue: benchQueue, Page: contract.PageRequest{Limit: contract.MaxPageSize, Cursor: cursor}})
		if err != nil {
			return s, "", err
		}
		s.kept += int64(len(p.Items))
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	if inst.size == nil {
		return s, "", nil
	}
	what, n, err := inst.size(ctx)
	s.size = n
	return s, what, err
}

// flatHalves splits the samples taken after warm into an early and a late
// half; ok is false when there are fewer than four.
func flatHalves(samples []sizeSample, warm time.Duration) (early, late []sizeSample, ok bool) {
	var after []sizeSample
	for _, s := range samples {
		if s.at >= warm {
			after = append(after, s)
		}
	}
	if len(after) < 4 {
		return nil, nil, false
	}
	return after[:len(after)/2], after[len(after)/2:], true
}

func peak(ss []sizeSample, get func(sizeSample) int64) int64 {
	var p int64
	for _, s := range ss {
		p = max(p, get(s))
	}
	return p
}
