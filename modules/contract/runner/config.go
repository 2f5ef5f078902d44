package runner

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Defaults for the zero fields of a Config.
const (
	DefaultConcurrency   = 10
	DefaultLeaseFor      = 30 * time.Second
	DefaultPollInterval  = time.Second
	DefaultGrace         = 10 * time.Second
	DefaultCompleteDelay = 5 * time.Millisecond
	DefaultSettleTimeout = 10 * time.Second
)

// Config says what a Runner works on and how. Zero fields take the
// defaults documented beside them.
//
// Two kinds of time are involved. Lease arithmetic (when a lease expires)
// reads Clock, the same clock the queue was given, so tests can move it.
// The intervals below (PollInterval, HeartbeatEvery, ReapInterval,
// CompleteDelay, Grace, SettleTimeout) are real time, measured by the
// runtime's timers: they pace a live process and cannot wait on a clock
// that only moves when a test says so.
type Config struct {
	// Queue is the queue to work on; "" means contract.DefaultQueue.
	// Leave it, Concurrency and BatchSize zero when Queues is set.
	Queue string
	// Worker names this runner's leases (the dashboard shows it); ""
	// means "<hostname>-<pid>".
	Worker string
	// Concurrency is how many handlers run at once; 0 means
	// DefaultConcurrency.
	Concurrency int
	// LeaseFor is the lease each claim and heartbeat asks for; 0 means
	// DefaultLeaseFor.
	LeaseFor time.Duration
	// BatchSize caps one claim; 0 means Concurrency. A claim never asks
	// for more items than there are free handler slots.
	BatchSize int
	// Queues, when set, makes one runner serve several queues, each with
	// its own handler slots, batch size and claim loop (and, optionally,
	// handler); the heartbeats, the reaper and the completer are the
	// runner's and serve them all, and a Complete call may carry items of
	// several queues. The lease, poll, heartbeat, grace and settle
	// settings below apply to every queue. Without it the runner serves
	// Queue alone; Config() then lists that one queue here.
	Queues []QueueConfig
	// PollInterval is the safety net: how often the runner claims when
	// nothing woke it. 0 means DefaultPollInterval. With a queue that is
	// a contract.Waker the runner claims as soon as it is woken, so this
	// only bounds how long a lost wake can delay an item.
	PollInterval time.Duration
	// HeartbeatEvery is how often a running handler's lease is extended
	// (by LeaseFor); 0 means a third of LeaseFor. It must be shorter than
	// LeaseFor.
	HeartbeatEvery time.Duration
	// Grace is how long handlers may keep running after Run's context is
	// cancelled; 0 means DefaultGrace and a negative value none at all.
	// When it runs out their contexts are cancelled (cause
	// ErrGraceExpired).
	Grace time.Duration
	// ReapInterval is how often the runner reaps the queue's expired
	// leases, so the items of crashed workers come back; 0 means
	// LeaseFor, a negative value never (when another process reaps).
	// Over a queue that keeps history (contract.AsHistoryKeeper) each
	// reap is followed by a prune of the finished items past the queue's
	// retention: up to 20 Prune calls per queue, so at most 20 ×
	// contract.PruneBatch items go per interval and a larger backlog
	// over the following ones. A failed prune is reported like a failed
	// reap and tried again at the next interval.
	ReapInterval time.Duration
	// CompleteDelay is how long a finished item waits for others to share
	// its Complete call; 0 means DefaultCompleteDelay. A batch that fills
	// up is completed at once.
	CompleteDelay time.Duration
	// CarryCompletes makes the claim loop hand the finished items to the
	// queue together with its next claim when the queue is a
	// contract.CompleteClaimer: one call instead of a Claim and a
	// Complete (over pgstore, one commit instead of two). It is off by
	// default because the separate Complete calls overlap the claims,
	// while carried ones lengthen every claim: over redisstore it
	// measured no faster and mostly slower (0-20%); over pgstore 1.10×
	// at concurrency 10 (1.9× with 50 busy tenants) but 0.72× at 100,
	// where a claim then carries the delete of a hundred items. Turn it
	// on for small batches where commits or round trips cost more.
	CarryCompletes bool
	// SettleTimeout bounds each Complete, Fail and Heartbeat call. Settles
	// made during shutdown run on a context that is not cancelled with
	// Run's, so they get this long too. 0 means DefaultSettleTimeout.
	SettleTimeout time.Duration
	// Schedules, when set, makes the runner enqueue periodic work too:
	// one item per tick of each schedule, exactly once per tick however
	// many processes run the same schedules (see Periodic). They go to
	// the runner's queue; a schedule's Queue may name another one.
	Schedules []Schedule
	// ScheduleState keeps the cursors of CatchUp schedules (see
	// PeriodicConfig.State); nil when every schedule skips missed ticks.
	ScheduleState contract.StateStore
	// Clock reads the time for lease arithmetic (and for the ticks of
	// Schedules); nil means the wall clock.
	Clock contract.Clock
	// Middleware wraps the handler, the first entry outermost. Package
	// adkotel provides one that runs each handler in a process span.
	Middleware []Middleware
	// Logger receives the runner's own events (claim and settle errors,
	// lost leases, panics); nil discards them.
	Logger *slog.Logger
	// OnError, when set, is called with every error the runner cannot
	// return (failed claims, settles, heartbeats and reaps), possibly from
	// several goroutines at once. Handler errors are not reported here:
	// they go to the queue through Fail.
	OnError func(error)
}

// QueueConfig is one of the queues a Runner serves (Config.Queues).
type QueueConfig struct {
	// Name is the queue; "" means contract.DefaultQueue. Each queue may
	// be listed once.
	Name string
	// Concurrency is how many of this queue's handlers run at once; 0
	// means DefaultConcurrency.
	Concurrency int
	// BatchSize caps one claim of this queue; 0 means Concurrency.
	BatchSize int
	// Handler does this queue's items; nil means the handler given to
	// New. Config.Middleware wraps it, with this queue's name.
	Handler Handler
}

// withDefaults returns cfg with its zero fields filled in and checks the
// result.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Worker == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "worker"
		}
		cfg.Worker = host + "-" + strconv.Itoa(os.Getpid())
	}
	if err := contract.ValidateName("Config.Worker", cfg.Worker); err != nil {
		return cfg, err
	}
	negative := func(field string, d time.Duration) error {
		return &contract.ValidationError{Field: "Config." + field, Problem: fmt.Sprintf("is %v; give a positive duration or 0 for the default", d)}
	}
	if err := cfg.queuesWithDefaults(); err != nil {
		return cfg, err
	}
	switch {
	case cfg.LeaseFor < 0:
		return cfg, negative("LeaseFor", cfg.LeaseFor)
	case cfg.PollInterval < 0:
		return cfg, negative("PollInterval", cfg.PollInterval)
	case cfg.HeartbeatEvery < 0:
		return cfg, negative("HeartbeatEvery", cfg.HeartbeatEvery)
	case cfg.CompleteDelay < 0:
		return cfg, negative("CompleteDelay", cfg.CompleteDelay)
	case cfg.SettleTimeout < 0:
		return cfg, negative("SettleTimeout", cfg.SettleTimeout)
	}
	if cfg.LeaseFor == 0 {
		cfg.LeaseFor = DefaultLeaseFor
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.HeartbeatEvery == 0 {
		cfg.HeartbeatEvery = cfg.LeaseFor / 3
	}
	if cfg.HeartbeatEvery <= 0 || cfg.HeartbeatEvery >= cfg.LeaseFor {
		return cfg, &contract.ValidationError{Field: "Config.HeartbeatEvery", Problem: fmt.Sprintf("is %v with LeaseFor %v; heartbeat well within the lease, e.g. a third of it", cfg.HeartbeatEvery, cfg.LeaseFor)}
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.ReapInterval == 0 {
		cfg.ReapInterval = cfg.LeaseFor
	}
	if cfg.CompleteDelay == 0 {
		cfg.CompleteDelay = DefaultCompleteDelay
	}
	if cfg.SettleTimeout == 0 {
		cfg.SettleTimeout = DefaultSettleTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = contract.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Middleware = append([]Middleware(nil), cfg.Middleware...)
	return cfg, nil
}

// queuesWithDefaults fills and checks the queues: Config.Queues as given,
// or the one queue of Queue, Concurrency and BatchSize.
func (cfg *Config) queuesWithDefaults() error {
	single := len(cfg.Queues) == 0
	if single {
		cfg.Queues = []QueueConfig{{Name: cfg.Queue, Concurrency: cfg.Concurrency, BatchSize: cfg.BatchSize}}
	} else {
		for _, f := range []struct {
			name string
			set  bool
		}{{"Queue", cfg.Queue != ""}, {"Concurrency", cfg.Concurrency != 0}, {"BatchSize", cfg.BatchSize != 0}} {
			if f.set {
				return &contract.ValidationError{Field: "Config." + f.name, Problem: "is set beside Config.Queues; give it in each QueueConfig instead"}
			}
		}
		cfg.Queues = slices.Clone(cfg.Queues)
	}
	seen := make(map[string]bool, len(cfg.Queues))
	for i := range cfg.Queues {
		qc := &cfg.Queues[i]
		field := func(name string) string {
			switch {
			case !single:
				return fmt.Sprintf("Config.Queues[%d].%s", i, name)
			case name == "Name":
				return "Config.Queue"
			}
			return "Config." + name
		}
		qc.Name = contract.QueueName(qc.Name)
		if err := contract.ValidateName(field("Name"), qc.Name); err != nil {
			return err
		}
		if seen[qc.Name] {
			return &contract.ValidationError{Field: field("Name"), Problem: fmt.Sprintf("%q is listed twice; list each queue once", qc.Name)}
		}
		seen[qc.Name] = true
		switch {
		case qc.Concurrency < 0:
			return &contract.ValidationError{Field: field("Concurrency"), Problem: fmt.Sprintf("is %d; give a positive number or 0 for %d", qc.Concurrency, DefaultConcurrency)}
		case qc.BatchSize < 0 || qc.BatchSize > contract.MaxClaimBatch:
			return &contract.ValidationError{Field: field("BatchSize"), Problem: fmt.Sprintf("is %d; give 1 to %d, or 0 for Concurrency", qc.BatchSize, contract.MaxClaimBatch)}
		}
		if qc.Concurrency == 0 {
			qc.Concurrency = DefaultConcurrency
		}
		if qc.BatchSize == 0 {
			qc.BatchSize = min(qc.Concurrency, contract.MaxClaimBatch)
		}
	}
	if single {
		q := cfg.Queues[0]
		cfg.Queue, cfg.Concurrency, cfg.BatchSize = q.Name, q.Concurrency, q.BatchSize
	}
	return nil
}
