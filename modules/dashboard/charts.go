package dashboard

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// Chart geometry, in SVG units: the plot sits inside room for the value
// labels on the left and the time labels below.
const (
	chartW, chartH         = 640, 220
	padL, padR, padT, padB = 74, 14, 12, 28
	linesPerChart          = 5
)

// chartRanges are the spans the overview offers, shortest first; the
// first is the default.
var chartRanges = []struct {
	key   string
	label string
	span  time.Duration
}{
	{"30m", "30 minutes", 30 * time.Minute},
	{"6h", "6 hours", 6 * time.Hour},
	{"24h", "24 hours", 24 * time.Hour},
}

// point is one chart value at one instant.
type point struct {
	at time.Time
	v  float64
}

// chartMetric is what one chart draws: a value for the queue and for each
// tenant at snapshot i (some need the snapshot before it), an axis that
// starts at zero and tops out no lower than minTop, and the labels.
type chartMetric struct {
	id, title, caption, unit string
	minTop                   float64
	steps                    []float64 // allowed tick steps, ascending; nil means 1-2-5 decades
	integer                  bool      // counts: no fractional ticks
	format                   func(float64) string
	// scale is the factor a tick label shows its value at (100 for a
	// percentage), so ticks get just the decimals their step needs.
	scale      float64
	unitSuffix string
	queue      func(prev, cur queueSample, dt time.Duration, at time.Time, havePrev bool) (float64, bool)
	tenant     func(prev, cur tenantSample, dt time.Duration, at time.Time, havePrev bool) (float64, bool)
	// weight ranks the tenants that get a line, where the value itself
	// would not (a ratio of one item of one is 100%); nil ranks by value.
	weight func(tenantSample) float64
}

// minRatioItems is how many items a tenant must hold for its dead ratio to
// get a line: below it the ratio is one letter's noise.
const minRatioItems = 20

var durationSteps = []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400}

var chartMetrics = []chartMetric{
	{
		id: "chart-claims", title: "Claims per second", caption: "turns served between samples, per tenant and in all", unit: "claims/s",
		minTop: 1, scale: 1, unitSuffix: "/s", format: func(v float64) string { return strconv.FormatFloat(v, 'f', decimals(v), 64) + "/s" },
		queue: func(p, c queueSample, dt time.Duration, _ time.Time, ok bool) (float64, bool) {
			return perSecond(p.Served, c.Served, dt), ok
		},
		tenant: func(p, c tenantSample, dt time.Duration, _ time.Time, ok bool) (float64, bool) {
			return perSecond(p.Served, c.Served, dt), ok
		},
	},
	{
		id: "chart-depth", title: "Depth", caption: "items queued (ready and later), per tenant and in all", unit: "items",
		minTop: 1, integer: true, format: func(v float64) string { return view.Num(int64(math.Round(v))) },
		queue: func(_, c queueSample, _ time.Duration, _ time.Time, _ bool) (float64, bool) {
			return float64(c.Ready + c.Later), true
		},
		tenant: func(_, c tenantSample, _ time.Duration, _ time.Time, _ bool) (float64, bool) {
			return float64(c.Depth), true
		},
	},
	{
		id: "chart-dead", title: "Dead ratio", caption: "dead letters ÷ all items held, in all and for the tenants with the most dead letters", unit: "share",
		minTop: 0.01, scale: 100, unitSuffix: "%", format: pct,
		queue: func(_, c queueSample, _ time.Duration, _ time.Time, _ bool) (float64, bool) {
			return deadRatio(c.Ready+c.Later, c.Leased, c.Dead), true
		},
		tenant: func(_, c tenantSample, _ time.Duration, _ time.Time, _ bool) (float64, bool) {
			return deadRatio(c.Depth, c.Leased, c.Dead), c.Depth+c.Leased+c.Dead >= minRatioItems
		},
		weight: func(c tenantSample) float64 { return float64(c.Dead) },
	},
	{
		id: "chart-latency", title: "Queue latency", caption: "age of the oldest ready item, per tenant and the oldest in all", unit: "seconds",
		minTop: 1, steps: durationSteps, format: func(v float64) string { return view.Dur(time.Duration(v * float64(time.Second))) },
		queue: func(_, c queueSample, _ time.Duration, at time.Time, _ bool) (float64, bool) {
			return age(c.OldestReady, at), true
		},
		tenant: func(_, c tenantSample, _ time.Duration, at time.Time, _ bool) (float64, bool) {
			return age(c.OldestReady, at), true
		},
	},
}

// tick labels a value on the axis with the decimals its step needs: 0,
// 0.25%, 0.5% rather than 0.0%, 0.3%, 0.5%.
func (m chartMetric) tick(v, step float64) string {
	if m.scale == 0 {
		return m.format(v)
	}
	d := 0
	for x := step * m.scale; d < 6 && math.Abs(x-math.Round(x)) > 1e-6; d++ {
		x *= 10
	}
	return strconv.FormatFloat(v*m.scale, 'f', d, 64) + m.unitSuffix
}

func age(oldest, at time.Time) float64 {
	if oldest.IsZero() || oldest.After(at) {
		return 0
	}
	return at.Sub(oldest).Seconds()
}

// pct formats a ratio with as many decimals as small ratios need.
func pct(r float64) string {
	v := r * 100
	return strconv.FormatFloat(v, 'f', decimals(v), 64) + "%"
}

func decimals(v float64) int {
	switch v = math.Abs(v); {
	case v == 0 || v >= 10:
		return 0
	case v >= 1:
		return 1
	case v >= 0.1:
		return 2
	default:
		return 3
	}
}

// charts draws the overview's charts for one queue from the snapshots of
// the span ending now.
func charts(hist []snapshot, queue string, colors tenantColors, now time.Time, span time.Duration) []view.Chart {
	out := make([]view.Chart, 0, len(chartMetrics))
	for _, m := range chartMetrics {
		out = append(out, drawMetric(m, hist, queue, colors, now, span))
	}
	return out
}

// seriesOf reads one line of a metric: the queue's (tenant "") or one
// tenant's, skipping the snapshots where it has no value.
func seriesOf(m chartMetric, hist []snapshot, queue, tenant string) []point {
	var pts []point
	for i, cur := range hist {
		cq, ok := cur.Queues[queue]
		if !ok {
			continue
		}
		var pq queueSample
		havePrev := false
		var dt time.Duration
		if i > 0 {
			pq, havePrev = hist[i-1].Queues[queue]
			dt = cur.At.Sub(hist[i-1].At)
		}
		var v float64
		if tenant == "" {
			v, ok = m.queue(pq, cq, dt, cur.At, havePrev)
		} else {
			ct, in := cq.tenant(tenant)
			pt, inPrev := pq.tenant(tenant)
			if !in {
				continue
			}
			v, ok = m.tenant(pt, ct, dt, cur.At, havePrev && inPrev)
		}
		if ok {
			pts = append(pts, point{cur.At, v})
		}
	}
	return pts
}

func drawMetric(m chartMetric, hist []snapshot, queue string, colors tenantColors, now time.Time, span time.Duration) view.Chart {
	c := view.Chart{TestID: m.id, Title: m.title, Caption: m.caption, Unit: m.unit, Width: chartW, Height: chartH,
		PlotX: padL, PlotY: padT, PlotW: chartW - padL - padR, PlotH: chartH - padT - padB}
	total := seriesOf(m, hist, queue, "")
	if len(total) < 2 {
		c.Empty = true
		c.Note = "Collecting samples: a line needs two."
		if len(hist) > 0 {
			c.Note = "Collecting samples since " + view.Clock(hist[0].At, now) + " UTC: a line needs two."
		}
		return c
	}
	// The tenants drawn are those with the largest values over the span,
	// so a spike a few minutes ago still has its line.
	peak := map[string]float64{}
	for _, s := range hist {
		for _, t := range s.Queues[queue].Tenants {
			peak[t.Tenant] = 0
		}
	}
	lines := map[string][]point{}
	for name := range peak {
		pts := seriesOf(m, hist, queue, name)
		lines[name] = pts
		for _, p := range pts {
			peak[name] = max(peak[name], p.v)
		}
		if m.weight != nil && len(pts) > 0 {
			w := 0.0
			for _, s := range hist {
				if ts, ok := s.Queues[queue].tenant(name); ok {
					w = max(w, m.weight(ts))
				}
			}
			peak[name] = w
		}
	}
	names := make([]string, 0, len(peak))
	for name, v := range peak {
		if v > 0 {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(peak[b], peak[a]), cmp.Compare(a, b)) })
	names = names[:min(len(names), linesPerChart)]

	t1 := now
	t0 := now.Add(-span)
	if first := hist[0].At; first.After(t0) {
		t0 = first
	}
	if !t1.After(t0) {
		t1 = t0.Add(time.Second)
	}
	top := 0.0
	for _, p := range total {
		top = max(top, p.v)
	}
	for _, n := range names {
		for _, p := range lines[n] {
			top = max(top, p.v)
		}
	}
	step, top := niceAxis(top, m)
	for k := 0; float64(k)*step <= top+step/2; k++ {
		v := float64(k) * step
		c.YTicks = append(c.YTicks, view.Tick{Pos: yPos(v, top, c), Label: m.tick(v, step)})
	}
	c.XTicks = timeTicks(t0, t1, c)
	c.Note = "UTC, " + view.Clock(t0, now) + " to " + view.Clock(t1, now)

	add := func(name, color string, isTotal bool, pts []point) {
		s := view.Series{Name: name, Color: color, Total: isTotal}
		var b strings.Builder
		for j, p := range pts {
			if j > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", xPos(p.at, t0, t1, c), yPos(p.v, top, c))
			s.Points = append(s.Points, view.Point{At: p.at, Value: p.v})
		}
		s.Path = b.String()
		if len(pts) > 0 {
			s.Last = m.format(pts[len(pts)-1].v)
		}
		c.Series = append(c.Series, s)
	}
	add("all tenants", "", true, total)
	for _, n := range names {
		add(n, colors.of(n), false, lines[n])
	}
	return c
}

func xPos(at, t0, t1 time.Time, c view.Chart) float64 {
	return float64(c.PlotX) + at.Sub(t0).Seconds()/t1.Sub(t0).Seconds()*float64(c.PlotW)
}

func yPos(v, top float64, c view.Chart) float64 {
	return float64(c.PlotY) + float64(c.PlotH)*(1-v/top)
}

// niceAxis picks the tick step and the top of a value axis that starts at
// zero: a round step (1, 2 or 5 times a power of ten, or a round duration)
// giving at most four intervals, and a top no lower than the metric's
// minimum, so a flat 0.004% line stays at the bottom instead of filling
// the chart.
func niceAxis(maxV float64, m chartMetric) (step, top float64) {
	maxV = max(maxV, m.minTop)
	raw := maxV / 4
	if m.steps != nil {
		step = m.steps[len(m.steps)-1]
		for _, s := range m.steps {
			if s >= raw {
				step = s
				break
			}
		}
	} else {
		exp := math.Pow(10, math.Floor(math.Log10(raw)))
		for _, f := range []float64{1, 2, 5, 10} {
			if f*exp >= raw*(1-1e-9) {
				step = f * exp
				break
			}
		}
		if m.integer {
			step = max(1, math.Ceil(step))
		}
	}
	top = step * math.Ceil(maxV/step-1e-9)
	return step, max(top, step)
}

var timeSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
}

// timeTicks marks round times of day (UTC) across [t0, t1], at most six.
func timeTicks(t0, t1 time.Time, c view.Chart) []view.Tick {
	span := t1.Sub(t0)
	step := timeSteps[len(timeSteps)-1]
	for _, s := range timeSteps {
		if span/s <= 6 {
			step = s
			break
		}
	}
	layout := "15:04"
	if step < time.Minute {
		layout = "15:04:05"
	}
	var out []view.Tick
	for t := t0.UTC().Truncate(step); !t.After(t1); t = t.Add(step) {
		if t.Before(t0) {
			continue
		}
		out = append(out, view.Tick{Pos: xPos(t, t0, t1, c), Label: t.UTC().Format(layout)})
	}
	if len(out) < 2 { // a span shorter than the finest step: label its ends
		out = []view.Tick{{Pos: xPos(t0, t0, t1, c), Label: t0.UTC().Format("15:04:05")}, {Pos: xPos(t1, t0, t1, c), Label: t1.UTC().Format("15:04:05")}}
	}
	return out
}

// tenantColors gives each tenant a colour, stable across pages: by its
// index in the sorted list of the queue's tenants, with a hash for any
// tenant not listed (one whose work all completed).
type tenantColors map[string]string

// palette is ten colours that stay apart from each other and readable on
// a light and a dark background; tenants past the tenth take hues spaced
// by the golden angle.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#8cd17d"}

func newTenantColors(sorted []string) tenantColors {
	m := make(tenantColors, len(sorted))
	for i, t := range sorted {
		if i < len(palette) {
			m[t] = palette[i]
		} else {
			m[t] = fmt.Sprintf("hsl(%d, 55%%, 52%%)", (i*137+20)%360)
		}
	}
	return m
}

func (m tenantColors) of(tenant string) string {
	if c, ok := m[tenant]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(tenant))
	return fmt.Sprintf("hsl(%d, 30%%, 55%%)", h.Sum32()%360)
}
