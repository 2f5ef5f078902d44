package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one figure of the table.
type row struct {
	Scenario    string  `json:"scenario"`
	Backing     string  `json:"backing"`
	Concurrency int     `json:"concurrency"`
	Items       int     `json:"items"`
	Metric      string  `json:"metric"`
	Value       float64 `json:"value"`
	Unit        string  `json:"unit"`
	EnqueueRate float64 `json:"enqueue_per_s,omitempty"`
	// VsRiver and VsAsynq divide this value by the peer's figure for the
	// same scenario, metric and concurrency, measured in the same run.
	VsRiver float64 `json:"vs_river,omitempty"`
	VsAsynq float64 `json:"vs_asynq,omitempty"`
	// Ratio is a scenario's own ratio, named by RatioOf (e.g. the idle
	// throughput over the one-tenant throughput at the same concurrency).
	Ratio      float64 `json:"ratio,omitempty"`
	RatioOf    string  `json:"ratio_of,omitempty"`
	Target     string  `json:"target,omitempty"`
	Met        *bool   `json:"met,omitempty"`
	Processed  int64   `json:"processed"`
	Expected   int64   `json:"expected"`
	Duplicates int64   `json:"duplicates"`
	Errors     int64   `json:"errors"`
	Seconds    float64 `json:"seconds"`
	Note       string  `json:"note,omitempty"`
	// Rounds are the values of the interleaved rounds the row is the
	// median of (throughput, busy50); the peer ratios are then the
	// medians of the ratios within each round.
	Rounds []float64 `json:"rounds,omitempty"`
	// Detail is how our worker pool's calls went (claims and completes).
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
}

// result is the whole run.
type result struct {
	Started    time.Time `json:"started"`
	Seconds    float64   `json:"seconds"`
	Args       string    `json:"args"`
	LoadBefore string    `json:"loadavg_before"`
	LoadAfter  string    `json:"loadavg_after"`
	Rows       []row     `json:"rows"`
}

func (res *result) find(scenario, backing, metric string, conc int) *row {
	for i := range res.Rows {
		r := &res.Rows[i]
		if r.Scenario == scenario && r.Backing == backing && r.Metric == metric && (conc == 0 || r.Concurrency == conc) && r.Error == "" {
			return r
		}
	}
	return nil
}

// compare fills the ratios and the §9 targets.
func (res *result) compare() {
	evalRef := res.find("physical", "redis-benchmark", "EVAL (unpipelined)", 0)
	for i := range res.Rows {
		r := &res.Rows[i]
		if r.Error != "" || r.Backing == "river" || r.Backing == "riversqlite" || r.Backing == "asynq" || r.Scenario == "physical" || r.Value == 0 {
			continue
		}
		// River of the same storage is each backing's peer: riversqlite
		// for sqlite (the same file settings, driver and disk), River on
		// PostgreSQL for the others.
		riverPeer := "river"
		if r.Backing == "sqlite" {
			riverPeer = "riversqlite"
		}
		// The peers run no runner scenario: the runner's figure is set
		// against their throughput.
		peerScenario := r.Scenario
		if peerScenario == "runner" {
			peerScenario = "throughput"
		}
		if p := res.find(peerScenario, riverPeer, r.Metric, r.Concurrency); p != nil && p.Value > 0 {
			r.VsRiver = ratioTo(r, p)
		}
		if p := res.find(peerScenario, "asynq", r.Metric, r.Concurrency); p != nil && p.Value > 0 {
			r.VsAsynq = ratioTo(r, p)
		}
		if r.Scenario == "wake" && r.Met != nil && r.VsRiver > 0 {
			// Issue 23: LISTEN wakes at or below River's, beside §9's bound.
			r.Target += ", ≤ river"
			r.Met = ptr(*r.Met && r.VsRiver <= 1)
		}
		if r.Unit != "items/s" {
			continue
		}
		isPG := r.Backing == "pg-listen" || r.Backing == "pg-poll"
		switch r.Scenario {
		case "throughput":
			// §9 asks 1.5× River; issue 23 raised it to 2× at ten
			// workers and 2.5× at a hundred.
			if isPG && r.VsRiver > 0 {
				want := 2.0
				if r.Concurrency >= 100 {
					want = 2.5
				}
				r.Target, r.Met = fmt.Sprintf("≥ %.1f× river", want), ptr(r.VsRiver >= want)
			}
			if r.Backing == "sqlite" && r.VsRiver > 0 && r.Concurrency == 10 {
				// Issue 20: 1.5× River's SQLite driver at ten workers.
				r.Target, r.Met = "≥ 1.5× riversqlite", ptr(r.VsRiver >= 1.5)
			}
			if r.Backing == "redis" {
				var notes []string
				met := true
				if r.VsAsynq > 0 {
					notes = append(notes, "≥ 5× asynq")
					met = met && r.VsAsynq >= 5
				}
				if evalRef != nil && evalRef.Value > 0 {
					r.Ratio, r.RatioOf = r.Value/evalRef.Value, "vs EVAL ops/s"
					notes = append(notes, "≥ 1× EVAL")
					met = met && r.Ratio >= 1
				}
				if len(notes) > 0 {
					r.Target, r.Met = strings.Join(notes, ", "), ptr(met)
				}
			}
		case "idle":
			// A ratio measured in interleaved pairs is kept; otherwise it
			// is against the throughput scenario's one-tenant figure.
			if one := res.find("throughput", r.Backing, r.Metric, r.Concurrency); r.Ratio == 0 && one != nil && one.Value > 0 {
				r.Ratio, r.RatioOf = r.Value/one.Value, "vs 1 tenant"
			}
			if r.Ratio > 0 {
				r.Target, r.Met = "≥ 0.9× 1 tenant", ptr(r.Ratio >= 0.9)
			}
		case "limits", "limits-cap":
			// Issue 16: limits that bind nobody cost under 10%, and a
			// capped neighbour slows the others by under 10%.
			if r.Ratio > 0 {
				r.Target, r.Met = "≥ 0.9× "+strings.TrimPrefix(r.RatioOf, "vs "), ptr(r.Ratio >= 0.9)
			}
		case "lifecycle":
			// Issue 17: priorities on every item and 1% of the items
			// snoozing keep 0.9× of the plain throughput.
			if r.Ratio > 0 {
				r.Target, r.Met = "≥ 0.9× plain", ptr(r.Ratio >= 0.9)
			}
		case "busy50", "burndown":
			if isPG && r.VsRiver > 0 {
				r.Target, r.Met = "≥ 1.5× river", ptr(r.VsRiver >= 1.5)
			}
		}
	}
	// The peers' idle ratio too: it is the figure the spec contrasts with.
	for i := range res.Rows {
		r := &res.Rows[i]
		if r.Scenario == "idle" && (r.Backing == "river" || r.Backing == "riversqlite" || r.Backing == "asynq") && r.Error == "" {
			if one := res.find("throughput", r.Backing, r.Metric, r.Concurrency); one != nil && one.Value > 0 {
				r.Ratio, r.RatioOf = r.Value/one.Value, "vs 1 tenant"
			}
		}
	}
}

// ratioTo is r's value over p's: the median of the per-round ratios when
// both were measured in the same interleaved rounds, else of the values.
func ratioTo(r, p *row) float64 {
	if len(r.Rounds) == 0 || len(r.Rounds) != len(p.Rounds) {
		return r.Value / p.Value
	}
	var ratios []float64
	for i := range r.Rounds {
		if p.Rounds[i] > 0 {
			ratios = append(ratios, r.Rounds[i]/p.Rounds[i])
		}
	}
	if len(ratios) == 0 {
		return r.Value / p.Value
	}
	slices.Sort(ratios)
	return ratios[len(ratios)/2]
}

func (res *result) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

func fnum(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	case v >= 0.01:
		return fmt.Sprintf("%.3f", v)
	default:
		return fmt.Sprintf("%.4f", v)
	}
}

func fratio(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 0.01:
		return fmt.Sprintf("%.4f×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

func (res *result) writeText(w io.Writer) {
	fmt.Fprintf(w, "adkbench %s  (started %s, %.0f s)\n", res.Args, res.Started.Format(time.RFC3339), res.Seconds)
	fmt.Fprintf(w, "load average before: %s   after: %s\n\n", res.LoadBefore, res.LoadAfter)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tbacking\tconc\titems\tmetric\tvalue\tunit\tvs river\tvs asynq\tratio\ttarget\tmet\tprocessed\tnote")
	for _, r := range res.Rows {
		met := ""
		if r.Met != nil {
			met = map[bool]string{true: "yes", false: "NO"}[*r.Met]
		}
		ratio := fratio(r.Ratio)
		if r.RatioOf != "" {
			ratio += " " + r.RatioOf
		}
		note := r.Note
		if r.EnqueueRate > 0 {
			note = strings.TrimSpace(note + fmt.Sprintf(" enqueue %.0f/s", r.EnqueueRate))
		}
		if r.Duplicates > 0 || r.Errors > 0 {
			note = strings.TrimSpace(note + fmt.Sprintf(" dups=%d errors=%d", r.Duplicates, r.Errors))
		}
		value := fnum(r.Value)
		if r.Error != "" {
			value, note = "ERROR", r.Error
		}
		processed := "-"
		if r.Expected > 0 {
			processed = fmt.Sprintf("%d/%d", r.Processed, r.Expected)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.Scenario, r.Backing, r.Concurrency, r.Items, r.Metric, value, r.Unit,
			fratio(r.VsRiver), fratio(r.VsAsynq), ratio, r.Target, met, processed, note)
	}
	tw.Flush()
	first := true
	for _, r := range res.Rows {
		if r.Detail == "" {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nour workers (claims that returned items × mean batch, latency; Complete calls × mean batch, latency):")
			first = false
		}
		fmt.Fprintf(w, "  %-10s %-9s c=%-3d %s\n", r.Scenario, r.Backing, r.Concurrency, r.Detail)
	}
}
