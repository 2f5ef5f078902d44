package dashboard

import (
	"cmp"
	"container/heap"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// replayCap bounds how many claims past the window the FIFO replay plays
// out to learn how long the items still waiting would wait; past it a
// wait is reported as at least what it had reached.
const replayCap = 200_000

// The fairness replay: the last window of claims (the Inspector's recent
// turns) played again as one first-in-first-out queue would have served
// them. FIFO hands each claim to the oldest waiting item of any tenant;
// adk hands it to the next tenant in rotation.
//
// The Inspector does not record when a served item was enqueued, so the
// replay estimates it: an item served at t waited its tenant's queue
// latency now (the age of its oldest waiting item), which under rotation
// is steady from one turn to the next; a tenant's items still waiting are
// spread evenly between its oldest and now. Within a tenant the order is
// exact (a tenant's items are served first in, first out under both).
// The claims keep their real instants, and after the window FIFO goes on
// at the window's claim rate until every item it holds has been served.

// replayItem is one item of a tenant's stream, in arrival order.
type replayStream struct {
	tenant string
	// served are the arrivals of the items adk served in the window, in
	// turn order; then waiting items arrive evenly over [from, to].
	served   []time.Time
	waiting  int64
	from, to time.Time
	next     int64 // items of the stream FIFO has served
	// longest is the longest wait FIFO gave one of the stream's items.
	longest time.Duration
	turns   int   // claims FIFO gave it within the window
	left    int64 // items never served within the replay cap
}

func (s *replayStream) len() int64 { return int64(len(s.served)) + s.waiting }

func (s *replayStream) arrival(i int64) time.Time {
	if i < int64(len(s.served)) {
		return s.served[i]
	}
	j := i - int64(len(s.served))
	if s.waiting <= 1 || !s.to.After(s.from) {
		return s.from
	}
	return s.from.Add(time.Duration(float64(s.to.Sub(s.from)) * float64(j) / float64(s.waiting-1)))
}

// streamHeap orders streams by the arrival of their next unserved item.
type streamHeap []*replayStream

func (h streamHeap) Len() int { return len(h) }
func (h streamHeap) Less(i, j int) bool {
	a, b := h[i].arrival(h[i].next), h[j].arrival(h[j].next)
	if !a.Equal(b) {
		return a.Before(b)
	}
	return h[i].tenant < h[j].tenant
}
func (h streamHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *streamHeap) Push(x any)   { *h = append(*h, x.(*replayStream)) }
func (h *streamHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// fifoReplay plays the window's claims as FIFO would have served them and
// returns, per tenant, the FIFO strip of the window and its stream.
func fifoReplay(turns []contract.Turn, stats []contract.TenantStats, now time.Time) ([]string, map[string]*replayStream) {
	latency := map[string]time.Duration{}
	streams := map[string]*replayStream{}
	get := func(t string) *replayStream {
		s := streams[t]
		if s == nil {
			s = &replayStream{tenant: t}
			streams[t] = s
		}
		return s
	}
	for _, st := range stats {
		s := get(st.Tenant)
		if !st.OldestReady.IsZero() && st.Ready > 0 {
			latency[st.Tenant] = max(0, now.Sub(st.OldestReady))
			s.waiting, s.from, s.to = st.Ready, st.OldestReady, now
		}
	}
	for _, t := range turns {
		s := get(t.Tenant)
		s.served = append(s.served, t.At.Add(-latency[t.Tenant]))
	}
	h := streamHeap{}
	for _, s := range streams {
		if s.len() > 0 {
			h = append(h, s)
		}
	}
	heap.Init(&h)
	serve := func(at time.Time) (string, bool) {
		if h.Len() == 0 || h[0].arrival(h[0].next).After(at) {
			return "", false // nothing had arrived yet: FIFO would have idled
		}
		s := h[0]
		s.longest = max(s.longest, at.Sub(s.arrival(s.next)))
		s.next++
		if s.next == s.len() {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
		return s.tenant, true
	}
	strip := make([]string, 0, len(turns))
	for _, t := range turns {
		tenant, ok := serve(t.At)
		if ok {
			streams[tenant].turns++
		}
		strip = append(strip, tenant)
	}
	// After the window, at the window's own claim rate.
	step := time.Second
	if n := len(turns); n >= 2 && turns[n-1].At.After(turns[0].At) {
		step = turns[n-1].At.Sub(turns[0].At) / time.Duration(n-1)
	}
	at := now
	if len(turns) > 0 && turns[len(turns)-1].At.After(at) {
		at = turns[len(turns)-1].At
	}
	for i := 0; i < replayCap && h.Len() > 0; i++ {
		at = at.Add(step)
		serve(at)
	}
	for _, s := range h {
		s.left = s.len() - s.next
		s.longest = max(s.longest, at.Sub(s.arrival(s.next)))
	}
	return strip, streams
}

func (s *Server) fairness(c echo.Context) (view.Fairness, int, error) {
	queue, n, err := s.rotationParams(c)
	if err != nil {
		return view.Fairness{}, 0, err
	}
	p := view.Fairness{Chrome: s.chrome(c, "What fairness buys", view.NavFairness, queue), Queue: queue}
	p.Chrome.Refresh = refreshOr(p.Chrome.Refresh, 5)
	stats, rot, err := s.rotation(c, queue, n)
	if err != nil {
		return p, 0, err
	}
	now := p.Now
	colors := s.colorsOf(stats)
	flows, enforced, err := s.flowStatus(c, queue)
	if err != nil {
		return p, 0, err
	}
	p.Flow = enforced
	flowOf := flowByTenant(flows)
	strip, streams := fifoReplay(rot.Recent, stats, now)
	p.Window = len(rot.Recent)
	if p.Window > 1 {
		p.WindowSeconds = rot.Recent[len(rot.Recent)-1].At.Sub(rot.Recent[0].At).Seconds()
	}
	adkTurns := map[string]int{}
	for i, t := range rot.Recent {
		adkTurns[t.Tenant]++
		p.Adk = append(p.Adk, view.TurnCell{Tenant: t.Tenant, ID: t.ID, Worker: t.Worker, At: t.At, Color: colors.of(t.Tenant)})
		cell := view.TurnCell{Tenant: strip[i], At: t.At, Color: colors.of(strip[i])}
		if strip[i] == "" {
			cell.Color = ""
		}
		p.FIFO = append(p.FIFO, cell)
	}
	for _, st := range stats {
		r := view.FairRow{Tenant: st.Tenant, Color: colors.of(st.Tenant), Queued: st.Ready, AdkTurns: adkTurns[st.Tenant]}
		if st.Ready > 0 && !st.OldestReady.IsZero() {
			r.AdkWaitSeconds = max(0, now.Sub(st.OldestReady).Seconds())
		}
		if rs := streams[st.Tenant]; rs != nil {
			r.FIFOTurns, r.FIFOWaitSeconds, r.FIFOUnserved = rs.turns, rs.longest.Seconds(), rs.left
		}
		if f := flowOf[st.Tenant]; f != nil {
			r.Held, r.Until = f.Held, f.Until
		}
		if r.Queued == 0 && r.AdkTurns == 0 && r.FIFOTurns == 0 {
			continue // nothing to compare for a tenant idle in the window
		}
		p.Rows = append(p.Rows, r)
		if r.AdkTurns > 0 || r.Queued > 0 {
			p.WithWork++
		}
		// A tenant its own limits hold back is passed over by design,
		// not starved by the rotation.
		if r.Queued > 0 && r.AdkTurns == 0 && p.Window > 0 && r.Held == "" {
			p.AdkStarved++
		}
		if (r.Queued > 0 || r.AdkTurns > 0) && r.FIFOTurns == 0 {
			p.FIFOStarved++
		}
		p.AdkWorstSeconds = max(p.AdkWorstSeconds, r.AdkWaitSeconds)
		p.FIFOWorstSeconds = max(p.FIFOWorstSeconds, r.FIFOWaitSeconds)
	}
	// The tenants FIFO makes wait longest first: the ones fairness is for.
	slices.SortFunc(p.Rows, func(a, b view.FairRow) int {
		return cmp.Or(cmp.Compare(b.FIFOWaitSeconds-b.AdkWaitSeconds, a.FIFOWaitSeconds-a.AdkWaitSeconds), cmp.Compare(a.Tenant, b.Tenant))
	})
	return p, http.StatusOK, nil
}
