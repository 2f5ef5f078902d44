package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// limitsTenants is how many busy tenants the limits scenario spreads its
// items over, each with limits that never bind.
const limitsTenants = 1000

// limitsPairs measures the cost of checking limits in the claim: the
// throughput scenario's load spread over 1,000 busy tenants, each with a
// cap and a rate too loose to bind, in interleaved pairs with the same
// load without limits. The ratio (limits / none) is what enforcing limits
// costs when they hold nobody back.
func (h *harness) limitsPairs(ctx context.Context, b *ourBacking, conc int) {
	loose := contract.Limits{MaxLeased: 10_000, Rate: contract.MaxRate, Burst: contract.MaxLimitLeased}
	limits := make(map[int]contract.Limits, limitsTenants)
	for t := range limitsTenants {
		limits[t] = loose
	}
	h.medianOfPairs(
		func() row { return h.measureLimits(ctx, "limits", b, conc, nil, "1,000 tenants without limits") },
		func() row {
			return h.measureLimits(ctx, "limits", b, conc, limits, "1,000 tenants, each with a cap and a rate that never bind")
		},
		"vs no limits")
}

// measureLimits is measureThroughput over limitsTenants busy tenants with
// the given limits set first.
func (h *harness) measureLimits(ctx context.Context, scenario string, b *ourBacking, conc int, limits map[int]contract.Limits, note string) row {
	jobs, rec := throughputJobs(h.cfg.items, limitsTenants, 0, false)
	w := workload{tenants: limitsTenants, busy: limitsTenants, conc: conc, rec: rec, limits: limits}
	h.logf("%s %s conc=%d items=%d tenants=%d limits=%d", scenario, b.name(), conc, h.cfg.items, limitsTenants, len(limits))
	return h.drainRow(ctx, scenario, b, w, jobs, note)
}

// capTenants is how many uncapped tenants share the queue with the capped
// one in the limits-cap scenario, and capItems the capped tenant's items.
const (
	capTenants = 20
	capItems   = 1000
	capMax     = 2
)

// capPairs measures a cap that binds: a tenant capped at 2 leases with
// 1,000 items beside 20 uncapped tenants that share the throughput
// scenario's items. The figure is how fast the 20 drain, in interleaved
// pairs with the same 20 alone; the ratio (with the capped tenant / alone)
// is what it costs them to have a held-back neighbour. The capped
// tenant's live leases are sampled throughout, and a sample above the cap
// fails the row.
func (h *harness) capPairs(ctx context.Context, b *ourBacking, conc int) {
	h.medianOfPairs(
		func() row { return h.measureCap(ctx, b, conc, false) },
		func() row { return h.measureCap(ctx, b, conc, true) },
		"vs without the capped tenant")
}

func (h *harness) measureCap(ctx context.Context, b *ourBacking, conc int, capped bool) row {
	n := h.cfg.items
	extra := 0
	if capped {
		extra = capItems
	}
	rec := newRecorder(n + extra)
	watch := make([]bool, n+extra)
	jobs := make([]job, 0, n+extra)
	// Tenant 0 is the capped one; the others are 1..capTenants.
	for i := range n {
		t := 1 + i%capTenants
		jobs = append(jobs, job{seq: int64(i), tenant: t})
		rec.tenant[i] = int32(t)
		watch[i] = true
	}
	for k := range extra {
		seq := n + k
		jobs = append(jobs, job{seq: int64(seq), tenant: 0})
	}
	rec.watchOnly(watch)
	w := workload{tenants: capTenants + 1, busy: capTenants, conc: conc, rec: rec}
	note := "20 tenants alone"
	if capped {
		w.limits = map[int]contract.Limits{0: {MaxLeased: capMax}}
		w.sampled = tenantName(0)
		note = fmt.Sprintf("beside a tenant capped at %d with %d items", capMax, capItems)
	}
	h.logf("limits-cap %s conc=%d items=%d capped=%v", b.name(), conc, n, capped)
	r := h.drainRow(ctx, "limits-cap", b, w, jobs, note)
	if capped && r.Error == "" {
		r.Note = fmt.Sprintf("capped tenant's peak live leases %d (cap %d); %s", b.peakLeased, capMax, r.Note)
		if b.peakLeased > capMax {
			r.Error = fmt.Sprintf("the capped tenant held %d live leases, over its cap of %d", b.peakLeased, capMax)
		}
	}
	return r
}

// drainRow drains the workload and makes its throughput row.
func (h *harness) drainRow(ctx context.Context, scenario string, b backing, w workload, jobs []job, note string) row {
	m := drain(ctx, b, w, jobs, h.cfg.timeout)
	r := h.row(scenario, b, w.conc, m)
	r.Metric, r.Unit = "claim→complete", "items/s"
	if m.elapsed > 0 {
		r.Value = float64(m.processed) / m.elapsed.Seconds()
	}
	r.Detail = b.detail()
	if note != "" {
		r.Note = note
	}
	return r
}

// limitsScale measures claim latency as the number of tenants with limits
// grows: a claim of 10 (and its Complete) sampled with 100 tenants, each
// with a loose cap and rate and work queued, then on a fresh queue with
// 10,000 such tenants (1,000 with -quick). The ratio (many / 100) is what
// the issue bounds at 1.5×.
func (h *harness) limitsScale(ctx context.Context, b *ourBacking) {
	rounds, perRound, many := 5, 60, 10_000
	const batch = 10
	if h.cfg.quick {
		rounds, perRound, many = 2, 20, 1000
	}
	loose := contract.Limits{MaxLeased: 10_000, Rate: contract.MaxRate, Burst: contract.MaxLimitLeased}
	var p50s [2]time.Duration
	var m measurement
	m.expected = int64(2 * rounds * perRound * batch)
	for i, tenants := range []int{100, many} {
		each := max(3, (rounds*perRound*batch)/tenants+1)
		jobs := make([]job, 0, tenants*each)
		for k := range tenants * each {
			jobs = append(jobs, job{seq: int64(k), tenant: k % tenants})
		}
		limits := make(map[int]contract.Limits, tenants)
		for t := range tenants {
			limits[t] = loose
		}
		rec := newRecorder(len(jobs))
		h.logf("limits-scale %s tenants=%d items=%d", b.name(), tenants, len(jobs))
		p, n, err := h.sampleClaims(ctx, b, workload{tenants: tenants, conc: 1, rec: rec, limits: limits}, jobs, rounds, perRound, batch)
		m.processed += n
		if err != nil {
			m.err = err
			break
		}
		p50s[i] = p
	}
	for i, tenants := range []int{100, many} {
		r := h.row("limits-scale", b, 1, m)
		r.Items = tenants
		r.Metric, r.Unit = fmt.Sprintf("claim p50 @%d tenants with limits", tenants), "ms"
		r.Value = float64(p50s[i].Nanoseconds()) / 1e6
		if i == 1 && p50s[0] > 0 {
			r.Ratio, r.RatioOf = float64(p50s[1])/float64(p50s[0]), "vs 100 tenants"
			r.Target, r.Met = "≤ 1.5× 100 tenants", ptr(r.Ratio <= 1.5)
		}
		r.Note = fmt.Sprintf("claims of %d and their Complete; the quietest of %d rounds of %d", batch, rounds, perRound)
		h.add(r)
	}
}

// sampleClaims opens the backing for w, loads jobs, and times claims of
// batch items with their Complete: rounds of perRound, a second apart,
// returning the quietest round's median and the items claimed.
func (h *harness) sampleClaims(ctx context.Context, b *ourBacking, w workload, jobs []job, rounds, perRound, batch int) (time.Duration, int64, error) {
	if err := b.prepare(ctx, w); err != nil {
		return 0, 0, err
	}
	defer func() { _ = b.cleanup(context.Background()) }()
	if err := load(ctx, b, jobs, w.rec, false); err != nil {
		return 0, 0, err
	}
	if b.inst.settle != nil {
		if err := b.inst.settle(ctx); err != nil {
			return 0, 0, err
		}
	}
	var best time.Duration
	var n int64
	for round := range rounds {
		if round > 0 {
			time.Sleep(time.Second)
		}
		runtime.GC()
		lat := make([]time.Duration, 0, perRound)
		for range perRound {
			t := time.Now()
			ls, err := b.inst.q.Claim(ctx, contract.ClaimRequest{Queue: benchQueue, Worker: "adkbench-scale", LeaseFor: time.Minute, Max: batch})
			if err != nil {
				return 0, n, err
			}
			if err := b.inst.q.Complete(ctx, ls...); err != nil {
				return 0, n, err
			}
			lat = append(lat, time.Since(t))
			n += int64(len(ls))
		}
		slices.Sort(lat)
		if p := percentile(lat, 0.5); round == 0 || p < best {
			best = p
		}
	}
	return best, n, nil
}
