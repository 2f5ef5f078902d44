package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"-concurrency", "5, 50", "-backings", "memstore,river", "-scenarios", "wake"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.conc) != 2 || c.conc[0] != 5 || c.conc[1] != 50 {
		t.Errorf("concurrency = %v, want [5 50]", c.conc)
	}
	if strings.Join(c.backings, ",") != "memstore,river" || strings.Join(c.scenarios, ",") != "wake" {
		t.Errorf("backings %v scenarios %v", c.backings, c.scenarios)
	}
	q, err := parseFlags([]string{"-quick"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if q.items != 2000 || q.depth != 5000 || q.wakeItems != 50 {
		t.Errorf("-quick gave items %d depth %d wake %d", q.items, q.depth, q.wakeItems)
	}
	for _, bad := range [][]string{{"-backings", "kafka"}, {"-scenarios", "soak"}, {"-concurrency", "0"}, {"-items", "-1"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestCompareRatiosAndTargets(t *testing.T) {
	res := &result{Rows: []row{
		{Scenario: "physical", Backing: "redis-benchmark", Metric: "EVAL (unpipelined)", Value: 50_000, Unit: "ops/s"},
		{Scenario: "throughput", Backing: "river", Concurrency: 10, Metric: "claim→complete", Value: 4_000, Unit: "items/s"},
		{Scenario: "throughput", Backing: "asynq", Concurrency: 10, Metric: "claim→complete", Value: 5_000, Unit: "items/s"},
		{Scenario: "throughput", Backing: "pg-listen", Concurrency: 10, Metric: "claim→complete", Value: 8_000, Unit: "items/s"},
		{Scenario: "throughput", Backing: "redis", Concurrency: 10, Metric: "claim→complete", Value: 30_000, Unit: "items/s"},
		{Scenario: "idle", Backing: "redis", Concurrency: 10, Metric: "claim→complete", Value: 24_000, Unit: "items/s"},
		{Scenario: "throughput", Backing: "river", Concurrency: 100, Metric: "claim→complete", Value: 1, Unit: "items/s", Error: "boom"},
		{Scenario: "throughput", Backing: "pg-poll", Concurrency: 100, Metric: "claim→complete", Value: 9_000, Unit: "items/s"},
	}}
	res.compare()
	pg := res.Rows[3]
	if pg.VsRiver != 2 || pg.Met == nil || !*pg.Met {
		t.Errorf("pg-listen: vs river %v met %v, want 2 and met", pg.VsRiver, pg.Met)
	}
	rd := res.Rows[4]
	if rd.VsAsynq != 6 || rd.Ratio != 0.6 || rd.Met == nil || *rd.Met {
		t.Errorf("redis: vs asynq %v, vs EVAL %v, met %v; want 6, 0.6, not met", rd.VsAsynq, rd.Ratio, rd.Met)
	}
	idle := res.Rows[5]
	if idle.Ratio != 0.8 || idle.Met == nil || *idle.Met {
		t.Errorf("idle: ratio %v met %v, want 0.8 and not met", idle.Ratio, idle.Met)
	}
	if p := res.Rows[7]; p.VsRiver != 0 || p.Met != nil {
		t.Errorf("a peer row with an error must not be compared against: %+v", p)
	}
	var text bytes.Buffer
	res.writeText(&text)
	if !strings.Contains(text.String(), "2.00×") || !strings.Contains(text.String(), "ERROR") {
		t.Errorf("text table lacks the ratio or the error:\n%s", text.String())
	}
	var js bytes.Buffer
	if err := res.writeJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back result
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Rows) != len(res.Rows) {
		t.Fatalf("JSON round trip: %v, %d rows", err, len(back.Rows))
	}
}

func TestRecorder(t *testing.T) {
	r := newRecorder(3)
	r.markCommitted(0)
	r.handle(0)
	r.handle(0) // a second delivery
	r.handle(7) // not an item of this run
	r.handle(2)
	r.handle(1)
	select {
	case <-r.done:
	default:
		t.Fatal("done not closed after every item was handled")
	}
	if r.dups.Load() != 2 || r.processed.Load() != 3 {
		t.Errorf("dups %d processed %d, want 2 and 3", r.dups.Load(), r.processed.Load())
	}
	if r.order[2].Load() != 2 || r.order[1].Load() != 3 {
		t.Errorf("claim order %d %d, want 2 3", r.order[2].Load(), r.order[1].Load())
	}
	if lat := r.latencies(); len(lat) != 1 || lat[0] < 0 {
		t.Errorf("latencies %v, want one non-negative figure", lat)
	}
	if got := percentile([]time.Duration{1, 2, 3, 4}, 0.5); got != 2 {
		t.Errorf("p50 = %v, want 2", got)
	}

	w := newRecorder(4)
	w.watchOnly([]bool{false, true, false, true})
	w.handle(1)
	w.handle(3)
	select {
	case <-w.done:
	default:
		t.Fatal("done not closed once the watched items were handled")
	}
}

// The sqlite rows are set against riversqlite (River of the same
// storage), never against River on PostgreSQL, and the throughput row at
// ten workers carries the 1.5× target.
func TestSQLitePeerIsRiverSQLite(t *testing.T) {
	res := &result{Rows: []row{
		{Scenario: "throughput", Backing: "sqlite", Concurrency: 10, Metric: "claim→complete", Unit: "items/s", Value: 900},
		{Scenario: "throughput", Backing: "riversqlite", Concurrency: 10, Metric: "claim→complete", Unit: "items/s", Value: 300},
		{Scenario: "throughput", Backing: "river", Concurrency: 10, Metric: "claim→complete", Unit: "items/s", Value: 9000},
		{Scenario: "throughput", Backing: "pg-listen", Concurrency: 10, Metric: "claim→complete", Unit: "items/s", Value: 18000},
	}}
	res.compare()
	sq, pg := res.Rows[0], res.Rows[3]
	if sq.VsRiver != 3 || sq.Target != "≥ 1.5× riversqlite" || sq.Met == nil || !*sq.Met {
		t.Errorf("sqlite row: vs %v, target %q, met %v; want 3× riversqlite, met", sq.VsRiver, sq.Target, sq.Met)
	}
	if pg.VsRiver != 2 {
		t.Errorf("pg-listen row: vs river %v, want 2 (River on PostgreSQL)", pg.VsRiver)
	}
	if res.Rows[1].VsRiver != 0 {
		t.Errorf("the peer row got a ratio of its own: %v", res.Rows[1].VsRiver)
	}
}
