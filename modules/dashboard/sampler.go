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
// tenants a backing holds.
const (
	maxSampledQueues  = 32
	maxTenantSeries   = 8
	sampleCallTimeout = 10 * time.Second
)

// queueSample is one queue's counts at one instant.
type queueSample struct {
	Ready, Later, Leased, Dead, Served int64
	// Depth holds ready+later for the deepest tenants only; Other sums
	// the rest, so the chart still adds up.
	Depth map[string]int64
	Other int64
}

type snapshot struct {
	At     time.Time
	Queues map[string]queueSample
}

// sampler snapshots the Inspector on a timer into a fixed-size ring, for
// the charts and the /metrics gauges. Its goroutine lives from start to
// stop; stop waits for it.
type sampler struct {
	insp  contract.Inspector
	clock contract.Clock
	every time.Duration

	mu      sync.Mutex
	ring    []snapshot
	next    int // where the next snapshot goes
	n       int // how many are held
	lastErr error
	lastAt  time.Time

	cancel context.CancelFunc
	done   chan struct{}
}

func newSampler(insp contract.Inspector, clock contract.Clock, every time.Duration, keep int) *sampler {
	return &sampler{insp: insp, clock: clock, every: every, ring: make([]snapshot, keep)}
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
	snap, err := s.take(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = err
	if err != nil {
		return
	}
	s.lastAt = snap.At
	s.ring[s.next] = snap
	s.next = (s.next + 1) % len(s.ring)
	s.n = min(s.n+1, len(s.ring))
}

func (s *sampler) take(ctx context.Context) (snapshot, error) {
	queues, err := s.insp.Queues(ctx)
	if err != nil {
		return snapshot{}, err
	}
	slices.Sort(queues)
	if len(queues) > maxSampledQueues {
		queues = queues[:maxSampledQueues]
	}
	snap := snapshot{At: s.clock.Now(), Queues: make(map[string]queueSample, len(queues))}
	for _, q := range queues {
		stats, err := s.insp.Tenants(ctx, q)
		if err != nil {
			return snapshot{}, err
		}
		snap.Queues[q] = summarize(stats)
	}
	return snap, nil
}

func summarize(stats []contract.TenantStats) queueSample {
	var qs queueSample
	for _, t := range stats {
		qs.Ready += t.Ready
		qs.Later += t.Later
		qs.Leased += t.Leased
		qs.Dead += t.Dead
		qs.Served += t.Served
	}
	deep := slices.Clone(stats)
	slices.SortFunc(deep, func(a, b contract.TenantStats) int {
		return cmp.Or(cmp.Compare(b.Ready+b.Later, a.Ready+a.Later), cmp.Compare(a.Tenant, b.Tenant))
	})
	qs.Depth = make(map[string]int64, maxTenantSeries)
	for i, t := range deep {
		if i < maxTenantSeries {
			qs.Depth[t.Tenant] = t.Ready + t.Later
		} else {
			qs.Other += t.Ready + t.Later
		}
	}
	return qs
}

// history returns the held snapshots, oldest first.
func (s *sampler) history() []snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]snapshot, 0, s.n)
	start := (s.next - s.n + len(s.ring)) % len(s.ring)
	for i := range s.n {
		out = append(out, s.ring[(start+i)%len(s.ring)])
	}
	return out
}

// latest returns the newest snapshot, if any.
func (s *sampler) latest() (snapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		return snapshot{}, false
	}
	return s.ring[(s.next-1+len(s.ring))%len(s.ring)], true
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
	dead = deadRatio(last)
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

func deadRatio(q queueSample) float64 {
	all := q.Ready + q.Later + q.Leased + q.Dead
	if all == 0 {
		return 0
	}
	return float64(q.Dead) / float64(all)
}
