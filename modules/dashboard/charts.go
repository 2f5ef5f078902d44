package dashboard

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/dashboard/internal/view"
)

const (
	chartW = 300
	chartH = 80
)

// point is one chart value at one instant.
type point struct {
	at time.Time
	v  float64
}

// charts draws the overview's three charts for one queue from the
// sampler's history.
func charts(hist []snapshot, queue string) []view.Chart {
	return []view.Chart{depthChart(hist, queue), claimsChart(hist, queue), deadChart(hist, queue)}
}

func depthChart(hist []snapshot, queue string) view.Chart {
	c := view.Chart{TestID: "chart-depth", Title: "Depth per tenant", Caption: "ready + later, deepest tenants"}
	// The tenants drawn are the deepest in the newest snapshot, so the
	// lines a person sees are the ones that matter now.
	var names []string
	if len(hist) > 0 {
		last := hist[len(hist)-1].Queues[queue]
		for t := range last.Depth {
			names = append(names, t)
		}
		slices.SortFunc(names, func(a, b string) int {
			return cmp.Or(cmp.Compare(last.Depth[b], last.Depth[a]), cmp.Compare(a, b))
		})
	}
	var lines [][]point
	for _, name := range names {
		var pts []point
		for _, s := range hist {
			if q, ok := s.Queues[queue]; ok {
				pts = append(pts, point{s.At, float64(q.Depth[name])})
			}
		}
		lines = append(lines, pts)
	}
	return draw(c, names, lines, func(v float64) string { return view.Num(int64(v)) })
}

func claimsChart(hist []snapshot, queue string) view.Chart {
	c := view.Chart{TestID: "chart-claims", Title: "Claims per second", Caption: "turns served between samples"}
	var pts []point
	for i := 1; i < len(hist); i++ {
		p, ok1 := hist[i-1].Queues[queue]
		q, ok2 := hist[i].Queues[queue]
		if ok1 && ok2 {
			pts = append(pts, point{hist[i].At, perSecond(p.Served, q.Served, hist[i].At.Sub(hist[i-1].At))})
		}
	}
	return draw(c, []string{"claims/s"}, [][]point{pts}, func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) })
}

func deadChart(hist []snapshot, queue string) view.Chart {
	c := view.Chart{TestID: "chart-dead", Title: "Dead ratio", Caption: "dead ÷ all items held"}
	var pts []point
	for _, s := range hist {
		if q, ok := s.Queues[queue]; ok {
			pts = append(pts, point{s.At, deadRatio(q)})
		}
	}
	return draw(c, []string{"dead ratio"}, [][]point{pts}, view.Pct)
}

// draw scales every line into the chart box, sharing one time axis and one
// value axis starting at zero.
func draw(c view.Chart, names []string, lines [][]point, format func(float64) string) view.Chart {
	c.Width, c.Height = chartW, chartH
	var t0, t1 time.Time
	maxV := 0.0
	n := 0
	for _, l := range lines {
		for _, p := range l {
			if t0.IsZero() || p.at.Before(t0) {
				t0 = p.at
			}
			if p.at.After(t1) {
				t1 = p.at
			}
			maxV = max(maxV, p.v)
			n++
		}
	}
	if n < 2 {
		c.Empty = true
		return c
	}
	span := t1.Sub(t0).Seconds()
	if maxV == 0 {
		maxV = 1
	}
	c.YMax = format(maxV)
	for i, l := range lines {
		var b strings.Builder
		for j, p := range l {
			x := 0.0
			if span > 0 {
				x = p.at.Sub(t0).Seconds() / span * chartW
			}
			y := chartH - 2 - p.v/maxV*(chartH-4)
			if j > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", x, y)
		}
		s := view.Series{Name: names[i], Color: seriesColor(i), Points: b.String()}
		if len(l) > 0 {
			s.Last = format(l[len(l)-1].v)
		}
		c.Series = append(c.Series, s)
	}
	return c
}

// seriesColor spaces hues by the golden angle so neighbouring series
// never look alike.
func seriesColor(i int) string {
	return fmt.Sprintf("hsl(%d, 65%%, 45%%)", (i*137+210)%360)
}

// tenantColors gives each tenant a colour, stable across pages: by its
// index in the sorted list of the queue's tenants, with a hash for any
// tenant not listed (one whose work all completed).
type tenantColors map[string]string

func newTenantColors(sorted []string) tenantColors {
	m := make(tenantColors, len(sorted))
	for i, t := range sorted {
		m[t] = fmt.Sprintf("hsl(%d, 62%%, 50%%)", (i*137)%360)
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
