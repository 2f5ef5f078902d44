package main

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// recorder is the no-op handler every backing calls when it starts an item.
// Items are numbered 0..n-1 (their seq); the recorder keeps, per seq, the
// moment the handler started it and its claim index (1 = first handled),
// so every scenario reads the same figures whatever the backing.
type recorder struct {
	started []atomic.Int64 // unix nanos of the first handler start, 0 until then
	commit  []atomic.Int64 // unix nanos when the enqueue of the item returned
	order   []atomic.Int64 // claim index, 1-based
	tenant  []int32        // which tenant the item belongs to

	next      atomic.Int64
	processed atomic.Int64
	dups      atomic.Int64
	target    int64
	done      chan struct{}
	doneOnce  sync.Once

	// watch, when set, marks items whose handling alone decides the end of
	// the scenario (fairness stops once every small tenant's items ran).
	watch     []bool
	watchLeft atomic.Int64
}

func newRecorder(n int) *recorder {
	return &recorder{
		started: make([]atomic.Int64, n),
		commit:  make([]atomic.Int64, n),
		order:   make([]atomic.Int64, n),
		tenant:  make([]int32, n),
		target:  int64(n),
		done:    make(chan struct{}),
	}
}

// watchOnly makes done close once every item with w[seq] set was handled.
func (r *recorder) watchOnly(w []bool) {
	r.watch = w
	var c int64
	for _, b := range w {
		if b {
			c++
		}
	}
	r.watchLeft.Store(c)
}

// handleID is handle for an item of our backings, whose ID is its seq.
func (r *recorder) handleID(id string) {
	seq, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		seq = -1 // not ours: handle counts it as an anomaly
	}
	r.handle(seq)
}

// handle is the no-op handler. It is safe for concurrent use.
func (r *recorder) handle(seq int64) {
	if seq < 0 || seq >= int64(len(r.started)) {
		r.dups.Add(1) // not ours: count it as an anomaly
		return
	}
	now := time.Now().UnixNano()
	if !r.started[seq].CompareAndSwap(0, now) {
		r.dups.Add(1)
		return
	}
	r.order[seq].Store(r.next.Add(1))
	p := r.processed.Add(1)
	if r.watch != nil {
		if r.watch[seq] && r.watchLeft.Add(-1) == 0 {
			r.finish()
		}
		return
	}
	if p == r.target {
		r.finish()
	}
}

func (r *recorder) finish() { r.doneOnce.Do(func() { close(r.done) }) }

// markCommitted records that the enqueue of seq returned now.
func (r *recorder) markCommitted(seq int64) { r.commit[seq].Store(time.Now().UnixNano()) }

// latencies returns commit→start durations of the items that have both,
// sorted. A start seen before the enqueue call returned counts as zero.
func (r *recorder) latencies() []time.Duration {
	var out []time.Duration
	for i := range r.started {
		s, c := r.started[i].Load(), r.commit[i].Load()
		if s == 0 || c == 0 {
			continue
		}
		d := time.Duration(s - c)
		if d < 0 {
			d = 0
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}
