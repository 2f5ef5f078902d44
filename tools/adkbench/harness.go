package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// harness runs the selected scenarios on the selected backings and keeps
// the rows.
type harness struct {
	cfg  config
	log  io.Writer
	rows []row
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func (h *harness) row(scenario string, b backing, conc int, m measurement) row {
	r := row{
		Scenario: scenario, Backing: b.name(), Concurrency: conc, Items: int(m.expected),
		Processed: m.processed, Expected: m.expected, Duplicates: m.dups, Errors: m.errs,
		Seconds: m.elapsed.Seconds(),
	}
	if m.err != nil {
		r.Error = m.err.Error()
		h.logf("  %s %s: %v", scenario, b.name(), m.err)
	}
	return r
}

func (h *harness) add(r row) {
	h.rows = append(h.rows, r)
	if r.Error == "" {
		h.logf("  %-10s %-9s c=%-3d %s = %.2f %s %s", r.Scenario, r.Backing, r.Concurrency, r.Metric, r.Value, r.Unit, r.Detail)
	}
}

// backings builds the selected backings, ours first.
func (h *harness) backings() ([]backing, func(), error) {
	var out []backing
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	var ropts *redis.Options
	if h.cfg.redisURL != "" {
		o, err := redis.ParseURL(h.cfg.redisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("ADK_TEST_REDIS_URL: %w", err)
		}
		ropts = o
	}
	for _, name := range h.cfg.backings {
		var b backing
		switch name {
		case "memstore":
			b = newMemBacking(h.cfg.claimers, h.cfg.batch)
		case "redis":
			b = newRedisBacking(ropts, h.cfg.claimers, h.cfg.batch)
		case "pg-listen":
			b = newPGBacking(h.cfg.pgDSN, true, h.cfg.claimers, h.cfg.batch)
		case "pg-poll":
			b = newPGBacking(h.cfg.pgDSN, false, h.cfg.claimers, h.cfg.batch)
		case "river":
			b = &riverBacking{dsn: h.cfg.pgDSN, cooldown: h.cfg.riverCooldown}
		case "asynq":
			b = &asynqBacking{opts: ropts}
		case "sqlite":
			b = newSQLiteBacking(h.cfg.sqliteDir, h.cfg.claimers, h.cfg.batch)
		case "riversqlite":
			b = &riverSQLiteBacking{dir: h.cfg.sqliteDir, cooldown: h.cfg.riverCooldown}
		}
		if b == nil {
			continue
		}
		if ob, ok := b.(*ourBacking); ok {
			ob.carry = h.cfg.completeAndClaim
		}
		out = append(out, b)
	}
	return out, closeAll, nil
}

func (h *harness) runAll(ctx context.Context) (*result, error) {
	res := &result{Started: time.Now().UTC(), LoadBefore: loadAvg(), Args: strings.Join(os.Args[1:], " ")}
	bs, closeAll, err := h.backings()
	if err != nil {
		return nil, err
	}
	defer closeAll()
	c0 := h.cfg.conc[0]
	for _, sc := range h.cfg.scenarios {
		if ctx.Err() != nil {
			break
		}
		switch sc {
		case "throughput":
			for _, c := range h.cfg.conc {
				h.interleaved(ctx, "throughput", bs, c, 1)
			}
		case "runner":
			for _, b := range bs {
				if ob, ok := b.(*ourBacking); ok {
					h.runnerPairs(ctx, ob, c0)
				}
			}
		case "idle":
			for _, b := range bs {
				if b.peer() || h.cfg.pairs < 2 {
					h.throughput(ctx, "idle", b, c0, 1, 49)
				} else {
					h.idlePairs(ctx, b, c0)
				}
			}
		case "busy50":
			h.interleaved(ctx, "busy50", bs, c0, 50)
		case "fairness":
			for _, b := range bs {
				h.fairness(ctx, b, c0)
			}
		case "wake":
			for _, b := range bs {
				h.wake(ctx, b, c0)
			}
		case "depth":
			for _, b := range bs {
				// pg-poll claims with the very statement pg-listen uses;
				// only its wake-up differs, which depth does not exercise.
				if ob, ok := b.(*ourBacking); ok && (ob.label != "pg-poll" || !has(h.cfg.backings, "pg-listen")) {
					h.depth(ctx, ob)
				}
			}
		case "limits", "limits-cap", "limits-scale":
			for _, b := range bs {
				// pg-poll claims with the very statement pg-listen uses.
				if ob, ok := b.(*ourBacking); ok && ob.label != "pg-poll" {
					switch sc {
					case "limits":
						h.limitsPairs(ctx, ob, c0)
					case "limits-cap":
						h.capPairs(ctx, ob, c0)
					default:
						h.limitsScale(ctx, ob)
					}
				}
			}
		case "lifecycle":
			for _, b := range bs {
				// pg-poll claims with the very statement pg-listen uses.
				if ob, ok := b.(*ourBacking); ok && ob.label != "pg-poll" {
					h.lifecyclePairs(ctx, ob, c0)
				}
			}
		case "history":
			for _, b := range bs {
				// pg-poll claims with the very statement pg-listen uses.
				if ob, ok := b.(*ourBacking); ok && ob.label != "pg-poll" {
					h.historyScenario(ctx, ob, c0)
				}
			}
		case "state":
			for _, b := range bs {
				// pg-poll's state store is pg-listen's: the listener
				// wakes claimers, it does nothing for runs.
				if ob, ok := b.(*ourBacking); ok && ob.openState != nil && (ob.label != "pg-poll" || !has(h.cfg.backings, "pg-listen")) {
					h.stateScenario(ctx, ob, c0)
				}
			}
		case "cluster":
			h.clusterScenario(ctx)
		case "physical":
			h.physical(ctx, c0)
		case "burndown":
			for _, b := range bs {
				// River's own benchmark is on PostgreSQL: only the
				// PostgreSQL queues face it (pg-poll claims as pg-listen
				// does).
				if b.name() == "pg-listen" || b.name() == "river" {
					h.burndown(ctx, b)
				}
			}
		}
	}
	res.LoadAfter = loadAvg()
	res.Seconds = time.Since(res.Started).Seconds()
	res.Rows = h.rows
	res.compare()
	return res, nil
}

// loadAvg returns the first three fields of /proc/loadavg, or "" where the
// file does not exist.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
