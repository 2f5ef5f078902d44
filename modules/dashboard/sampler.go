package dashboard

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Bounds that keep the sampler's memory fixed however many queues and
// tenants a backing holds: every snapshot holds the totals of at most
// maxSampledQueues queues, and the per-tenant series of at most
// maxTenantQueues of them, maxTenantSeries tenants each. The two rings
// hold SampleKeep and HistoryKeep snapshots, so the whole history is a
// few megabytes at worst.
const (
	maxSampledQueues  = 32
	maxTenantQueues   = 8
	maxTenantSeries   = 8
	sampleCallTimeout = 10 * time.Second
)

// tenantSample is one tenant's numbers at one instant.
type tenantSample struct {
	Tenant                      string
	Depth, Leased, Dead, Served int64 // Depth is ready + later
	OldestReady                 time.Time
}

// queueSample is one queue's counts at one instant, with the tenants
// worth a line of their own.
type queueSample struct {
	Ready, Later, Leased, Dead, Served int64
	OldestReady                        time.Time // of the whole queue
	Tenants                            []tenantSample
}

func (q queueSample) tenant(name string) (tenantSample, bool) {
	for _, t := range q.Tenants {
		if t.Tenant == name {
			return t, true
		}
	}
	return tenantSample{}, false
}

type snapshot struct {
	At     time.Time
	Queues map[string]queueSample
	// Scoped holds the same sums over the tenants of each tenant-scoped
	// token only, by scope key, so a token's charts add up its own
	// tenants and nothing of the others'.
	Scoped map[string]map[string]queueSample
}

// project is the snapshot as a scope sees it: its tenants' sums, of its
// queues.
func (s snapshot) project(sc scope) snapshot {
	if sc.all() {
		return s
	}
	src := s.Queues
	if sc.tenants != nil {
		src = s.Scoped[sc.key()]
	}
	out := snapshot{At: s.At, Queues: make(map[string]queueSample, len(src))}
	for q, qs := range src {
		if sc.queueOK(q) {
			out.Queues[q] = qs
		}
	}
	return out
}

// ring is a fixed-size buffer of snapshots, oldest overwritten first.
type ring struct {
	buf  []snapshot
	next int // where the next snapshot goes
	n    int // how many are held
}

func newRing(size int) ring { return ring{buf: make([]snapshot, size)} }

func (r *ring) push(s snapshot) {
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	r.n = min(r.n+1, len(r.buf))
}

// since returns the held snapshots at or after t, oldest first.
func (r *ring) since(t time.Time) []snapshot {
	out := make([]snapshot, 0, r.n)
	start := (r.next - r.n + len(r.buf)) % len(r.buf)
	for i := range r.n {
		s := r.buf[(start+i)%len(r.buf)]
		if !s.At.Before(t) {
			out = append(out, s)
		}
	}
	return out
}

func (r *ring) latest() (snapshot, bool) {
	if r.n == 0 {
		return snapshot{}, false
	}
	return r.buf[(r.next-1+len(r.buf))%len(r.buf)], true
}

// sampler snapshots the Inspector on a timer into two rings, for the
// charts and the /metrics gauges: every snapshot into the recent ring, and
// one every historyEvery into the long one. Downsampling by keeping whole
// snapshots is exact for what the charts draw: depths and ages are
// instants, and served turns are a running total whose difference over
// any span gives the claims in it. Its goroutine lives from start to stop;
// stop waits for it.
type sampler struct {
	insp         contract.Inspector
	clock        contract.Clock
	every        time.Duration
	historyEvery time.Duration
	// scopes are the tenant sets of the tenant-scoped tokens, by key.
	scopes map[string]scope

	mu       sync.Mutex
	recent   ring
	history  ring
	lastLong time.Time
	// served is the last snapshot's served count per tenant of each
	// queue, every tenant, to pick the busiest by claims; it is replaced
	// each time, so it never holds more than one listing.
	served  map[string]map[string]int64
	lastErr error
	lastAt  time.Time

	cancel context.CancelFunc
	done   chan struct{}
}

func newSampler(insp contract.Inspector, clock contract.Clock, every time.Duration, keep int, historyEvery time.Duration, historyKeep int, scopes []scope) *sampler {
	s := &sampler{insp: insp, clock: clock, every: every, historyEvery: historyEvery,
		recent: newRing(keep), history: newRing(historyKeep), scopes: map[string]scope{}}
	for _, sc := range scopes {
		if sc.tenants != nil {
			s.scopes[sc.key()] = sc
		}
	}
	return s
}

func (s *sampler) start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		s.sample(ctx)
		t := time.NewTicker(s.every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.sample(ctx)
			}
		}
	}()
}

func (s *sampler) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	<-s.done
}

// sample takes one snapshot; a failure is kept for the health page and the
// previous snapshots stay.
func (s *sampler) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, sampleCallTimeout)
	defer cancel()
	s.mu.Lock()
	prev := s.served
	s.mu.Unlock()
	snap, served, err := s.take(ctx, prev)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = err
	if err != nil {
		return
	}
	s.lastAt = snap.At
	s.served = served
	s.recent.push(snap)
	if s.lastLong.IsZero() || snap.At.Sub(s.lastLong) >= s.historyEvery {
		s.history.push(snap)
		s.lastLong = snap.At
	}
}

func (s *sampler) take(ctx context.Context, prevServed map[string]map[string]int64) (snapshot, map[string]map[string]int64, error) {
	queues, err := s.insp.Queues(ctx)
	if err != nil {
		return snapshot{}, nil, err
	}
	slices.Sort(queues)
	if len(queues) > maxSampledQueues {
		queues = queues[:maxSampledQueues]
	}
	snap := snapshot{At: s.clock.Now(), Queues: make(map[string]queueSample, len(queues))}
	served := make(map[string]map[string]int64, len(queues))
	for i, q := range queues {
		stats, err := s.insp.Tenants(ctx, q)
		if err != nil {
			return snapshot{}, nil, err
		}
		series := 0
		if i < maxTenantQueues {
			series = maxTenantSeries
		}
		snap.Queues[q] = summarize(stats, prevServed[q], snap.At, series)
		for key, sc := range s.scopes {
			if snap.Scoped == nil {
				snap.Scoped = make(map[string]map[string]queueSample, len(s.scopes))
			}
			if snap.Scoped[key] == nil {
				snap.Scoped[key] = make(map[string]queueSample, len(queues))
			}
			own := slices.DeleteFunc(slices.Clone(stats), func(t contract.TenantStats) bool { return !sc.tenantOK(t.Tenant) })
			snap.Scoped[key][q] = summarize(own, prevServed[q], snap.At, series)
		}
		byTenant := make(map[string]int64, len(stats))
		for _, t := range stats {
			byTenant[t.Tenant] = t.Served
		}
		served[q] = byTenant
	}
	return snap, served, nil
}

// summarize sums a queue's tenants and keeps up to n of them for lines of
// their own: the deepest, the most served since the last snapshot and the
// longest waiting, in turns, so each chart has its busiest tenants.
func summarize(stats []contract.TenantStats, prevServed map[string]int64, now time.Time, n int) queueSample {
	var qs queueSample
	for _, t := range stats {
		qs.Ready += t.Ready
		qs.Later += t.Later
		qs.Leased += t.Leased
		qs.Dead += t.Dead
		qs.Served += t.Served
		if !t.OldestReady.IsZero() && (qs.OldestReady.IsZero() || t.OldestReady.Before(qs.OldestReady)) {
			qs.OldestReady = t.OldestReady
		}
	}
	if n == 0 || len(stats) == 0 {
		return qs
	}
	claims := func(t contract.TenantStats) int64 {
		p, ok := prevServed[t.Tenant]
		if !ok || t.Served < p {
			return 0
		}
		return t.Served - p
	}
	age := func(t contract.TenantStats) time.Duration {
		if t.OldestReady.IsZero() {
			return 0
		}
		return now.Sub(t.OldestReady)
	}
	rank := func(key func(contract.TenantStats) int64) []contract.TenantStats {
		out := slices.Clone(stats)
		slices.SortFunc(out, func(a, b contract.TenantStats) int {
			return cmp.Or(cmp.Compare(key(b), key(a)), cmp.Compare(a.Tenant, b.Tenant))
		})
		return out
	}
	orders := [][]contract.TenantStats{
		rank(func(t contract.TenantStats) int64 { return t.Ready + t.Later }),
		rank(claims),
		rank(func(t contract.TenantStats) int64 { return int64(age(t)) }),
		rank(func(t contract.TenantStats) int64 { return t.Dead }),
	}
	picked := map[string]bool{}
	for i := 0; len(qs.Tenants) < n && i < len(stats); i++ {
		for _, order := range orders {
			if len(qs.Tenants) == n {
				break
			}
			t := order[i]
			if picked[t.Tenant] {
				continue
			}
			picked[t.Tenant] = true
			qs.Tenants = append(qs.Tenants, tenantSample{Tenant: t.Tenant, Depth: t.Ready + t.Later, Leased: t.Leased,
				Dead: t.Dead, Served: t.Served, OldestReady: t.OldestReady})
		}
	}
	return qs
}

// maxChartSnapshots bounds the snapshots one chart draws: about one per
// pixel of the plot is all a line can show.
const maxChartSnapshots = 480

// windowOf is window as a scope sees it.
func (s *sampler) windowOf(span time.Duration, sc scope) []snapshot {
	w := s.window(span)
	if sc.all() {
		return w
	}
	for i := range w {
		w[i] = w[i].project(sc)
	}
	return w
}

// window returns the snapshots of the last span, oldest first: the long
// history's up to where the recent ring begins, then the recent ring's,
// thinned evenly to at most maxChartSnapshots (the newest always kept).
// Thinning keeps whole snapshots, so rates between kept ones are the
// average over the longer step.
func (s *sampler) window(span time.Duration) []snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := s.clock.Now().Add(-span)
	recent := s.recent.since(from)
	var out []snapshot
	for _, snap := range s.history.since(from) {
		if len(recent) > 0 && !snap.At.Before(recent[0].At) {
			break
		}
		out = append(out, snap)
	}
	out = append(out, recent...)
	if len(out) <= maxChartSnapshots {
		return out
	}
	thin := make([]snapshot, 0, maxChartSnapshots)
	step := float64(len(out)-1) / float64(maxChartSnapshots-1)
	for i := range maxChartSnapshots {
		thin = append(thin, out[int(float64(i)*step+0.5)])
	}
	thin[len(thin)-1] = out[len(out)-1]
	return thin
}

// historyAll returns every snapshot of the recent ring, oldest first.
func (s *sampler) historyAll() []snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recent.since(time.Time{})
}

// latest returns the newest snapshot, if any.
func (s *sampler) latest() (snapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recent.latest()
}

// status reports the last sample time and the last error.
func (s *sampler) status() (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastAt, s.lastErr
}

// rates returns claims per second and the dead ratio of a queue over the
// last two snapshots (the ratio from the newest alone).
func rates(hist []snapshot, queue string) (claims, dead float64) {
	if len(hist) == 0 {
		return 0, 0
	}
	last, ok := hist[len(hist)-1].Queues[queue]
	if !ok {
		return 0, 0
	}
	dead = deadRatio(last.Ready+last.Later, last.Leased, last.Dead)
	if len(hist) >= 2 {
		prev := hist[len(hist)-2]
		if p, ok := prev.Queues[queue]; ok {
			claims = perSecond(p.Served, last.Served, hist[len(hist)-1].At.Sub(prev.At))
		}
	}
	return claims, dead
}

func perSecond(from, to int64, dt time.Duration) float64 {
	if dt <= 0 || to < from {
		return 0
	}
	return float64(to-from) / dt.Seconds()
}

// deadRatio is dead ÷ every item held.
func deadRatio(queued, leased, dead int64) float64 {
	all := queued + leased + dead
	if all == 0 {
		return 0
	}
	return float64(dead) / float64(all)
}
