package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is the parsed command line.
type config struct {
	items     int
	conc      []int
	scenarios []string
	backings  []string
	quick     bool
	json      bool
	depth     int
	wakeItems int
	wakeRate  int
	claimers  int
	batch     int
	// pairs is how many interleaved (one tenant, idle) pairs the idle
	// scenario measures on our backings; its ratio is their median.
	pairs int
	// completeAndClaim makes the runner (CarryCompletes) and the harness pool carry handled leases into
	// its next claim when the queue is a contract.CompleteClaimer.
	completeAndClaim bool
	// burndown and burndownConc are the burndown scenario's queued items
	// and worker count (River's published benchmark: a million, 2,000).
	burndown     int
	burndownConc int
	// historyRetained is how many finished items the history scenario
	// keeps for its claim-latency comparison; historyRate,
	// historyDuration and historyAge set its prune-flat run.
	historyRetained int
	historyRate     int
	historyDuration time.Duration
	historyAge      time.Duration
	// stateDuration is how long each side of the state scenario writes.
	stateDuration time.Duration
	timeout       time.Duration
	cpuProfile    string
	riverCooldown time.Duration
	sqliteDir     string
	redisURL      string
	pgDSN         string
}

var allScenarios = []string{"physical", "throughput", "runner", "idle", "busy50", "fairness", "wake", "depth", "burndown", "limits", "limits-cap", "limits-scale", "lifecycle", "history", "state", "cluster"}
var allBackings = []string{"memstore", "redis", "pg-listen", "pg-poll", "river", "asynq", "sqlite", "riversqlite"}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "adkbench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("adkbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.items, "items", 100_000, "items per throughput run; also the big tenant's items in fairness")
	concs := fs.String("concurrency", "10,100", "worker counts for the throughput scenario (the first one serves the other scenarios)")
	scen := fs.String("scenarios", "all", "comma-separated: "+strings.Join(allScenarios, ","))
	back := fs.String("backings", "all", "comma-separated: "+strings.Join(allBackings, ","))
	fs.BoolVar(&c.quick, "quick", false, "tiny counts for a smoke run (for -items, -depth, -wake-items, -pairs, -burndown*, -history-*, unless given)")
	fs.BoolVar(&c.json, "json", false, "print the results as JSON instead of a text table")
	fs.IntVar(&c.depth, "depth", 1_000_000, "queued items for the deep half of the depth scenario")
	fs.IntVar(&c.burndown, "burndown", 1_000_000, "items queued first in the burndown scenario (pg-listen and river), then drained")
	fs.IntVar(&c.burndownConc, "burndown-concurrency", 2000, "worker count of the burndown scenario")
	fs.IntVar(&c.wakeItems, "wake-items", 400, "items of the wake-latency scenario")
	fs.IntVar(&c.wakeRate, "wake-rate", 100, "items per second in the wake-latency scenario")
	fs.IntVar(&c.claimers, "claimers", 2, "claim loops of the harness pool (the runner scenario's reference)")
	fs.IntVar(&c.batch, "batch", 100, "most items one claim of our backings asks for")
	fs.IntVar(&c.pairs, "pairs", 3, "idle, runner, limits and lifecycle scenarios on our backings: interleaved pairs (e.g. one tenant, then 49 idle beside it) whose median ratio is reported")
	fs.BoolVar(&c.completeAndClaim, "complete-and-claim", false, "our workers (the runner with CarryCompletes, and the harness pool) carry handled items into their next claim (CompleteAndClaim) where the backing offers it")
	fs.IntVar(&c.historyRetained, "history-retained", 10_000, "history scenario: finished items kept for the claim-latency comparison (the issue's figure: 1000000)")
	fs.IntVar(&c.historyRate, "history-rate", 200, "history scenario: items enqueued per second in the prune-flat run")
	fs.DurationVar(&c.historyDuration, "history-duration", 20*time.Second, "history scenario: length of the prune-flat run (the issue's figure: 10m)")
	fs.DurationVar(&c.historyAge, "history-age", 2*time.Second, "history scenario: retention age in the prune-flat run")
	fs.DurationVar(&c.stateDuration, "state-duration", 2*time.Second, "state scenario: how long each side of a pair writes")
	fs.DurationVar(&c.timeout, "timeout", 3*time.Minute, "limit for one measurement")
	fs.StringVar(&c.sqliteDir, "sqlite-dir", "", "where the sqlite and riversqlite backings make their files (default: the temporary directory); both on the same disk")
	fs.DurationVar(&c.riverCooldown, "river-fetch-cooldown", time.Millisecond, "River's FetchCooldown (River's default is 100ms, its floor 1ms)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for _, s := range strings.Split(*concs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return c, fmt.Errorf("-concurrency: %q is not a positive number", s)
		}
		c.conc = append(c.conc, n)
	}
	var err error
	if c.scenarios, err = pick("-scenarios", *scen, allScenarios); err != nil {
		return c, err
	}
	if c.backings, err = pick("-backings", *back, allBackings); err != nil {
		return c, err
	}
	if c.quick {
		// A count given on the command line wins over -quick's.
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		quick := func(name string, set func()) {
			if !given[name] {
				set()
			}
		}
		quick("items", func() { c.items = 2000 })
		quick("depth", func() { c.depth = 5000 })
		quick("wake-items", func() { c.wakeItems = 50 })
		quick("pairs", func() { c.pairs = 1 })
		quick("burndown", func() { c.burndown = 5000 })
		quick("burndown-concurrency", func() { c.burndownConc = 200 })
		quick("history-retained", func() { c.historyRetained = 2000 })
		quick("history-duration", func() { c.historyDuration = 4 * time.Second })
		quick("history-age", func() { c.historyAge = 500 * time.Millisecond })
		quick("state-duration", func() { c.stateDuration = 250 * time.Millisecond })
		c.wakeRate = max(c.wakeRate, 100)
	}
	if c.items < 1 || c.depth < 1 || c.wakeItems < 1 || c.wakeRate < 1 || c.claimers < 1 || c.batch < 1 || c.pairs < 1 || c.burndown < 1 || c.burndownConc < 1 ||
		c.historyRetained < 0 || c.historyRate < 1 || c.historyDuration <= 0 || c.historyAge < time.Millisecond || c.stateDuration <= 0 {
		return c, fmt.Errorf("counts and durations must be positive (-history-age at least 1ms, -history-retained may be 0)")
	}
	c.batch = min(c.batch, 1000)
	return c, nil
}

func pick(flagName, list string, known []string) ([]string, error) {
	if list == "all" {
		return known, nil
	}
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		found := false
		for _, k := range known {
			if k == s {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s: unknown %q (known: %s)", flagName, s, strings.Join(known, ","))
		}
		out = append(out, s)
	}
	return out, nil
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	// The cluster scenario starts servers of its own: run alone, it needs
	// neither shared server.
	shared := slices.ContainsFunc(cfg.scenarios, func(s string) bool { return s != "cluster" })
	needRedis := shared && (has(cfg.backings, "redis") || has(cfg.backings, "asynq"))
	needPG := shared && (has(cfg.backings, "pg-listen") || has(cfg.backings, "pg-poll") || has(cfg.backings, "river"))
	cfg.redisURL = os.Getenv("ADK_TEST_REDIS_URL")
	cfg.pgDSN = os.Getenv("ADK_TEST_POSTGRES_DSN")
	if needRedis && cfg.redisURL == "" {
		return fmt.Errorf("set ADK_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/0) or leave redis and asynq out of -backings")
	}
	if needPG && cfg.pgDSN == "" {
		return fmt.Errorf("set ADK_TEST_POSTGRES_DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) or leave pg-listen, pg-poll and river out of -backings")
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	h := &harness{cfg: cfg, log: stderr}
	res, err := h.runAll(ctx)
	if err != nil {
		return err
	}
	if cfg.json {
		return res.writeJSON(stdout)
	}
	res.writeText(stdout)
	return nil
}
