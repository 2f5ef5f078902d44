package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// physical runs redis-benchmark and pgbench, when installed, against the
// same servers: what one unpipelined script call and one small write
// transaction cost on this machine.
func (h *harness) physical(ctx context.Context, conc int) {
	if h.cfg.redisURL != "" {
		h.redisBenchmark(ctx, conc)
	}
	if h.cfg.pgDSN != "" {
		h.pgbench(ctx, conc)
	}
}

func (h *harness) physicalRow(backing, metric string, conc int, v float64, unit string, err error, note string) {
	r := row{Scenario: "physical", Backing: backing, Concurrency: conc, Metric: metric, Value: v, Unit: unit, Note: note}
	if err != nil {
		r.Error = err.Error()
		h.logf("  physical %s: %v", backing, err)
	}
	h.add(r)
}

var rpsLine = regexp.MustCompile(`"([0-9.]+)"`)

func (h *harness) redisBenchmark(ctx context.Context, conc int) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		h.logf("physical: redis-benchmark not installed, skipped")
		return
	}
	o, err := redis.ParseURL(h.cfg.redisURL)
	if err != nil {
		h.physicalRow("redis-benchmark", "EVAL (unpipelined)", conc, 0, "ops/s", err, "")
		return
	}
	host, port, _ := net.SplitHostPort(o.Addr)
	n := 100_000
	if h.cfg.quick {
		n = 2000
	}
	// The script does what a claim does at the least: one write. Its key
	// lives in Asynq's scratch database and is deleted afterwards.
	key := fmt.Sprintf("adkbench%d:evalref", os.Getpid())
	args := []string{"-h", host, "-p", port, "-c", strconv.Itoa(conc), "-n", strconv.Itoa(n), "--dbnum", strconv.Itoa(asynqDB), "--csv",
		"EVAL", "return redis.call('INCR', KEYS[1])", "1", key}
	if o.Password != "" {
		args = append([]string{"-a", o.Password}, args...)
	}
	h.logf("physical redis-benchmark EVAL c=%d n=%d", conc, n)
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, bin, args...).CombinedOutput()
	oo := *o
	oo.DB = asynqDB
	c := redis.NewClient(&oo)
	_ = c.Del(context.Background(), key).Err()
	_ = c.Close()
	if err != nil {
		h.physicalRow("redis-benchmark", "EVAL (unpipelined)", conc, 0, "ops/s", fmt.Errorf("%v: %s", err, firstLine(out)), "")
		return
	}
	var rps float64
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, `"EVAL`) {
			m := rpsLine.FindAllStringSubmatch(line, -1)
			if len(m) > 0 {
				rps, _ = strconv.ParseFloat(m[0][1], 64)
			}
		}
	}
	if rps == 0 {
		err = fmt.Errorf("no EVAL figure in the output: %s", firstLine(out))
	}
	h.physicalRow("redis-benchmark", "EVAL (unpipelined)", conc, rps, "ops/s", err, "")
}

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

func (h *harness) pgbench(ctx context.Context, conc int) {
	bin, err := exec.LookPath("pgbench")
	if err != nil {
		h.logf("physical: pgbench not installed, skipped")
		return
	}
	secs := 10
	if h.cfg.quick {
		secs = 2
	}
	db := fmt.Sprintf("adkbench_pgbench_%d", os.Getpid())
	conn, err := pgx.Connect(ctx, h.cfg.pgDSN)
	if err != nil {
		h.physicalRow("pgbench", "-N tps", conc, 0, "tx/s", err, "")
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		h.physicalRow("pgbench", "-N tps", conc, 0, "tx/s", fmt.Errorf("create scratch database: %w", err), "")
		return
	}
	defer func() {
		if _, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
			h.logf("physical: drop %s: %v", db, err)
		}
	}()
	u, err := url.Parse(h.cfg.pgDSN)
	if err != nil {
		h.physicalRow("pgbench", "-N tps", conc, 0, "tx/s", err, "")
		return
	}
	u.Path = "/" + db
	dsn := u.String()
	h.logf("physical pgbench -N c=%d T=%ds", conc, secs)
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(cctx, bin, "-i", "-q", "-s", "1", dsn).CombinedOutput(); err != nil {
		h.physicalRow("pgbench", "-N tps", conc, 0, "tx/s", fmt.Errorf("pgbench -i: %v: %s", err, firstLine(out)), "")
		return
	}
	out, err := exec.CommandContext(cctx, bin, "-N", "-n", "-c", strconv.Itoa(conc), "-j", "2", "-T", strconv.Itoa(secs), dsn).CombinedOutput()
	if err != nil {
		h.physicalRow("pgbench", "-N tps", conc, 0, "tx/s", fmt.Errorf("pgbench: %v: %s", err, firstLine(out)), "")
		return
	}
	var tps float64
	if m := tpsLine.FindSubmatch(out); m != nil {
		tps, _ = strconv.ParseFloat(string(m[1]), 64)
	} else {
		err = fmt.Errorf("no tps line in the output: %s", firstLine(out))
	}
	h.physicalRow("pgbench", "-N tps", conc, tps, "tx/s", err, "scale 1, 3 updates + 1 insert per tx")
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
