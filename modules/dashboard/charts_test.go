package dashboard

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/dashboard/internal/view"
)

var chartT0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

// history builds n snapshots 5 s apart of one queue with two tenants.
func history(n int, each func(i int, q *queueSample)) []snapshot {
	var out []snapshot
	for i := range n {
		q := queueSample{Ready: 100, Leased: 5, Served: int64(i * 50), OldestReady: chartT0.Add(-time.Minute),
			Tenants: []tenantSample{
				{Tenant: "noisy", Depth: 90, Served: int64(i * 40), OldestReady: chartT0.Add(-time.Minute)},
				{Tenant: "small", Depth: 10, Served: int64(i * 10), OldestReady: chartT0.Add(time.Duration(i)*5*time.Second - 2*time.Second)},
			}}
		if each != nil {
			each(i, &q)
		}
		out = append(out, snapshot{At: chartT0.Add(time.Duration(i) * 5 * time.Second), Queues: map[string]queueSample{"q": q}})
	}
	return out
}

func chartByID(cs []view.Chart, id string) view.Chart {
	for _, c := range cs {
		if c.TestID == id {
			return c
		}
	}
	return view.Chart{}
}

func ys(s view.Series) []float64 {
	var out []float64
	for _, p := range strings.Fields(s.Path) {
		_, y, _ := strings.Cut(p, ",")
		v, _ := strconv.ParseFloat(y, 64)
		out = append(out, v)
	}
	return out
}

// A dead ratio of 0.004% is a line along the bottom of an axis that runs
// from 0 to at least 1%, not a line at the top of an axis scaled to it.
func TestDeadRatioAxisStartsAtZero(t *testing.T) {
	hist := history(6, func(_ int, q *queueSample) { q.Dead = 0; q.Ready = 25_000; q.Dead = 1 })
	now := hist[len(hist)-1].At
	c := chartByID(charts(hist, "q", newTenantColors(nil), now, 30*time.Minute), "chart-dead")
	if c.Empty || len(c.YTicks) < 2 {
		t.Fatalf("dead chart %+v", c)
	}
	if first, last := c.YTicks[0].Label, c.YTicks[len(c.YTicks)-1].Label; first != "0.0%" || last != "1.0%" {
		t.Errorf("value axis %q to %q, want 0.0%% to 1.0%%", first, last)
	}
	bottom := float64(c.PlotY + c.PlotH)
	for _, y := range ys(c.Series[0]) {
		if bottom-y > 1 {
			t.Errorf("a 0.004%% ratio is drawn %.1f units above the axis of %d", bottom-y, c.PlotH)
		}
	}
}

// Every chart has its axes: value labels from zero up and UTC times along
// the bottom, inside the span drawn.
func TestChartsHaveAxes(t *testing.T) {
	hist := history(60, nil) // five minutes
	now := hist[len(hist)-1].At
	for _, c := range charts(hist, "q", newTenantColors([]string{"noisy", "small"}), now, 30*time.Minute) {
		if c.Empty {
			t.Errorf("%s empty after 60 samples", c.TestID)
			continue
		}
		if len(c.YTicks) < 2 || !strings.HasPrefix(c.YTicks[0].Label, "0") {
			t.Errorf("%s: value ticks %+v, want several from zero", c.TestID, c.YTicks)
		}
		if len(c.XTicks) < 3 || len(c.XTicks) > 7 {
			t.Errorf("%s: %d time ticks, want 3 to 7", c.TestID, len(c.XTicks))
		}
		var labels []string
		for _, x := range c.XTicks {
			labels = append(labels, x.Label)
			tm, err := time.Parse("15:04:05", x.Label)
			if err != nil && !strings.Contains(x.Label, ":") {
				t.Errorf("%s: time tick %q", c.TestID, x.Label)
			}
			_ = tm
			if x.Pos < float64(c.PlotX) || x.Pos > float64(c.PlotX+c.PlotW) {
				t.Errorf("%s: tick %q outside the plot", c.TestID, x.Label)
			}
		}
		if !slices.IsSorted(labels) {
			t.Errorf("%s: time ticks out of order %v", c.TestID, labels)
		}
		names := map[string]bool{}
		for _, s := range c.Series {
			names[s.Name] = true
		}
		if !names["all tenants"] {
			t.Errorf("%s has no queue-wide line", c.TestID)
		}
		if c.TestID != "chart-dead" && (!names["noisy"] || !names["small"]) {
			t.Errorf("%s draws %v, want a line per tenant", c.TestID, names)
		}
	}
	claims := chartByID(charts(hist, "q", nil, now, 30*time.Minute), "chart-claims")
	for _, s := range claims.Series {
		want := map[string]float64{"all tenants": 10, "noisy": 8, "small": 2}[s.Name]
		if got := s.Points[len(s.Points)-1].Value; got != want {
			t.Errorf("claims/s of %s = %v, want %v", s.Name, got, want)
		}
	}
	latency := chartByID(charts(hist, "q", nil, now, 30*time.Minute), "chart-latency")
	// The oldest item is 5m55s old at the end: the axis runs to 6m in 2m steps.
	if got := latency.YTicks[len(latency.YTicks)-1].Label + " " + latency.YTicks[1].Label; got != "6m00s 2m00s" {
		t.Errorf("latency axis top and step %q, want 6m00s and 2m00s", got)
	}
}

func TestNiceAxis(t *testing.T) {
	depth := chartByMetric("chart-depth")
	ratio := chartByMetric("chart-dead")
	for _, c := range []struct {
		m         chartMetric
		max       float64
		step, top float64
	}{
		{depth, 0, 1, 1}, {depth, 3, 1, 3}, {depth, 37, 10, 40}, {depth, 20_000, 5000, 20_000}, {depth, 21_000, 10_000, 30_000},
		{ratio, 0, 0.005, 0.01}, {ratio, 0.00004, 0.005, 0.01}, {ratio, 0.3, 0.1, 0.3}, {ratio, 1, 0.5, 1},
	} {
		step, top := niceAxis(c.max, c.m)
		if !near(step, c.step) || !near(top, c.top) {
			t.Errorf("niceAxis(%v, %s) = step %v top %v, want %v and %v", c.max, c.m.id, step, top, c.step, c.top)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func chartByMetric(id string) chartMetric {
	for _, m := range chartMetrics {
		if m.id == id {
			return m
		}
	}
	panic(id)
}

// The overview draws the charts with their axes, offers the longer spans,
// and its JSON twin carries the points.
func TestOverviewCharts(t *testing.T) {
	f := newFixture(t, "")
	for range 4 {
		f.srv.sampler.sample(t.Context())
		f.clock.Advance(5 * time.Second)
	}
	doc := f.page(nil, "/", http.StatusOK)
	for _, id := range []string{"chart-claims", "chart-depth", "chart-dead", "chart-latency"} {
		c := testids(doc, id)
		if c.Find(`[data-testid="chart-x-tick"]`).Length() < 2 || c.Find(`[data-testid="chart-y-tick"]`).Length() < 2 {
			t.Errorf("%s lacks axis labels", id)
		}
		if c.Find(`[data-testid="chart-line-total"]`).Length() != 1 {
			t.Errorf("%s lacks the queue's line", id)
		}
	}
	if testids(doc, "chart-depth").Find(`[data-testid="chart-line"]`).Length() < 2 {
		t.Error("the depth chart has no line per tenant")
	}
	for _, r := range []string{"30m", "6h", "24h"} {
		if testids(doc, "range-"+r).Length() != 1 {
			t.Errorf("no %s span link", r)
		}
	}
	f.page(nil, "/?range=6h", http.StatusOK)
	f.page(nil, "/?range=1y", http.StatusBadRequest)
	var api view.Overview
	f.api(nil, "/api/overview", http.StatusOK, &api)
	if len(api.Charts) != 4 || len(api.Charts[0].Series) == 0 || len(api.Charts[0].Series[0].Points) < 2 || api.Range != "30m" {
		t.Errorf("api overview charts: %+v", api.Charts)
	}
}
