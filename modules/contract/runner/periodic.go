package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Defaults for the zero fields of a PeriodicConfig and a Schedule.
const (
	DefaultScheduleTenant   = "periodic"
	DefaultPeriodicInterval = time.Second
	DefaultPeriodicLead     = 2 * time.Second
	DefaultPeriodicHorizon  = 10 * time.Second
	DefaultMaxCatchUp       = 100
)

// Metadata keys every periodic item carries.
const (
	MetaSchedule = "adk.schedule" // the Schedule's Name
	MetaTick     = "adk.tick"     // the tick, RFC 3339 in UTC
)

// maxTicksPerPass bounds the items one schedule adds in one pass, so a
// fine schedule with a long horizon cannot make one Enqueue huge.
const maxTicksPerPass = 1000

// MissedTicks says what a schedule does with the ticks that passed while
// no process was running it.
type MissedTicks int

const (
	// SkipMissed (the default) never enqueues a tick that is already due:
	// after downtime the schedule carries on from the next tick.
	SkipMissed MissedTicks = iota
	// CatchUp enqueues the ticks missed since the last one any process
	// enqueued (at most MaxCatchUp, the most recent kept), once, from
	// whichever process starts first. It needs PeriodicConfig.State.
	CatchUp
)

// Schedule is periodic work: one item per tick. Give either Every or
// Cron.
type Schedule struct {
	// Name identifies the schedule; it is part of every item's ID
	// (Name@2026-12-01T09:00:00Z), so it must be the same in every
	// process and stay the same across deploys.
	Name string
	// Every ticks at the multiples of this interval since the Unix
	// epoch (so every process agrees on the instants): 15*time.Minute
	// ticks at :00, :15, :30 and :45 of every hour, in UTC. A whole
	// number of seconds, at least one.
	Every time.Duration
	// Cron is a five-field expression (minute hour day-of-month month
	// day-of-week, with lists, ranges, steps and English names) or
	// @yearly, @monthly, @weekly, @daily, @midnight or @hourly, read in
	// Location. A wall time the clocks skip does not fire that day; one
	// they repeat fires once.
	Cron string
	// Location is the time zone Cron is read in; nil means UTC.
	Location *time.Location
	// Queue, Tenant, Payload and Metadata make each tick's item. ""
	// means contract.DefaultQueue and DefaultScheduleTenant. The item's
	// Metadata also carries MetaSchedule and MetaTick, and its UniqueFor
	// is the PeriodicConfig's Lead + Horizon (see the package
	// documentation).
	Queue    string
	Tenant   string
	Payload  []byte
	Metadata map[string]string
	// Missed is what happens to ticks no process was up for.
	Missed MissedTicks
	// MaxCatchUp bounds the missed ticks CatchUp enqueues; 0 means
	// DefaultMaxCatchUp.
	MaxCatchUp int
}

// PeriodicConfig says what a Periodic enqueues and when.
type PeriodicConfig struct {
	Schedules []Schedule
	// State keeps, per CatchUp schedule, the latest tick enqueued (as a
	// run of the schedule's tenant with ID "adk.schedule:" + Name), so
	// a process starting after downtime knows what was missed. Needed
	// only by CatchUp schedules.
	State contract.StateStore
	// Clock reads the time the ticks are compared with; nil means the
	// wall clock. It should be the queue's clock.
	Clock contract.Clock
	// Interval is the real time between two passes; 0 means
	// DefaultPeriodicInterval.
	Interval time.Duration
	// Lead is how long before its tick an item is enqueued at the
	// latest; 0 means DefaultPeriodicLead. The clocks of the processes
	// (and of the queue's server) must agree to better than this: see
	// the package documentation.
	Lead time.Duration
	// Horizon is how far past Lead ticks are enqueued ahead; 0 means
	// DefaultPeriodicHorizon or ten Intervals, whichever is longer. It
	// must be at least two Intervals, so that a late pass leaves no gap.
	Horizon time.Duration
	// Logger and OnError receive what a pass cannot return, as for a
	// Runner.
	Logger  *slog.Logger
	OnError func(error)
}

// Periodic enqueues the ticks of its schedules ahead of time. Run one in
// every process that should keep the schedules going; see the package
// documentation for why no leader is needed.
type Periodic struct {
	q       contract.WorkQueue
	cfg     PeriodicConfig
	sched   []*schedule
	running atomic.Bool
	mu      sync.Mutex // one pass at a time
}

// schedule is a Schedule with its parsed spec and what this process has
// enqueued of it.
type schedule struct {
	Schedule
	cron      *cronSpec
	cursorID  string
	uniqueFor time.Duration // each tick's Item.UniqueFor
	through   time.Time     // latest tick this process enqueued
	stored    time.Time     // the cursor as this process last read or wrote it
	version   int64         // the cursor run's version behind stored
	caughtUp  bool          // CatchUp done (or not needed) in this process
	pending   []time.Time   // missed ticks won by this process, not yet enqueued
}

// NewPeriodic returns a Periodic enqueueing onto q. It checks cfg and
// returns a *contract.ValidationError for a value it cannot use.
func NewPeriodic(q contract.WorkQueue, cfg PeriodicConfig) (*Periodic, error) {
	if q == nil {
		return nil, &contract.ValidationError{Field: "q", Problem: "is nil; pass the WorkQueue to enqueue onto"}
	}
	cfg, scheds, err := cfg.withDefaults("PeriodicConfig.", "PeriodicConfig.State")
	if err != nil {
		return nil, err
	}
	return &Periodic{q: q, cfg: cfg, sched: scheds}, nil
}

func (cfg PeriodicConfig) withDefaults(prefix, stateField string) (PeriodicConfig, []*schedule, error) {
	bad := func(field, problem string) error {
		return &contract.ValidationError{Field: prefix + field, Problem: problem}
	}
	switch {
	case cfg.Interval < 0:
		return cfg, nil, bad("Interval", "is negative; give a positive duration or 0 for the default")
	case cfg.Lead < 0:
		return cfg, nil, bad("Lead", "is negative; give a positive duration or 0 for the default")
	case cfg.Horizon < 0:
		return cfg, nil, bad("Horizon", "is negative; give a positive duration or 0 for the default")
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultPeriodicInterval
	}
	if cfg.Lead == 0 {
		cfg.Lead = DefaultPeriodicLead
	}
	if cfg.Horizon == 0 {
		cfg.Horizon = max(DefaultPeriodicHorizon, 10*cfg.Interval)
	}
	if cfg.Horizon < 2*cfg.Interval {
		return cfg, nil, bad("Horizon", fmt.Sprintf("is %v with Interval %v; give at least two Intervals so a late pass leaves no gap", cfg.Horizon, cfg.Interval))
	}
	if cfg.Clock == nil {
		cfg.Clock = contract.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Schedules = slices.Clone(cfg.Schedules)
	scheds := make([]*schedule, len(cfg.Schedules))
	names := make(map[string]bool, len(cfg.Schedules))
	for i, s := range cfg.Schedules {
		field := fmt.Sprintf("Schedules[%d]", i)
		if err := contract.ValidateName(prefix+field+".Name", s.Name); err != nil {
			return cfg, nil, err
		}
		if names[s.Name] {
			return cfg, nil, bad(field+".Name", fmt.Sprintf("%q is used twice; give each schedule its own name", s.Name))
		}
		names[s.Name] = true
		if len(s.Name)+len("@2006-01-02T15:04:05Z") > contract.MaxNameBytes {
			return cfg, nil, bad(field+".Name", fmt.Sprintf("is %d bytes; keep it to %d, so the item IDs it makes fit", len(s.Name), contract.MaxNameBytes-len("@2006-01-02T15:04:05Z")))
		}
		sc := &schedule{Schedule: s, cursorID: "adk.schedule:" + s.Name, uniqueFor: tickUniqueFor(cfg.Lead, cfg.Horizon)}
		switch {
		case (s.Every == 0) == (s.Cron == ""):
			return cfg, nil, bad(field, "gives both Every and Cron, or neither; give one")
		case s.Every != 0 && (s.Every < time.Second || s.Every%time.Second != 0):
			return cfg, nil, bad(field+".Every", fmt.Sprintf("is %v; give a whole number of seconds, at least 1s", s.Every))
		case s.Cron != "":
			spec, err := parseCron(s.Cron)
			if err != nil {
				return cfg, nil, bad(field+".Cron", fmt.Sprintf("%q %v", s.Cron, err))
			}
			sc.cron = &spec
		}
		if sc.Location == nil {
			sc.Location = time.UTC
		}
		if sc.Tenant == "" {
			sc.Tenant = DefaultScheduleTenant
		}
		switch {
		case s.Missed != SkipMissed && s.Missed != CatchUp:
			return cfg, nil, bad(field+".Missed", fmt.Sprintf("is %d; use SkipMissed or CatchUp", s.Missed))
		case s.MaxCatchUp < 0:
			return cfg, nil, bad(field+".MaxCatchUp", "is negative; give a positive bound or 0 for the default")
		case s.Missed == CatchUp && cfg.State == nil:
			return cfg, nil, &contract.ValidationError{Field: stateField, Problem: fmt.Sprintf("is nil and schedule %q catches up; pass the StateStore that keeps its cursor, or use SkipMissed", s.Name)}
		}
		if sc.MaxCatchUp == 0 {
			sc.MaxCatchUp = DefaultMaxCatchUp
		}
		sc.caughtUp = s.Missed != CatchUp
		// Build one item to check the queue, tenant, payload and metadata
		// now rather than at the first tick.
		if err := contract.ValidateItem(sc.item(time.Unix(0, 0)), 1<<62); err != nil {
			var ve *contract.ValidationError
			if errors.As(err, &ve) {
				return cfg, nil, bad(field+"."+strings.TrimPrefix(ve.Field, "Item."), ve.Problem)
			}
			return cfg, nil, err
		}
		scheds[i] = sc
	}
	return cfg, scheds, nil
}

// Config returns the configuration with the defaults filled in.
func (p *Periodic) Config() PeriodicConfig {
	cfg := p.cfg
	cfg.Schedules = slices.Clone(cfg.Schedules)
	return cfg
}

// Next returns the first tick of the named schedule after t, and false
// when no schedule has that name.
func (p *Periodic) Next(name string, t time.Time) (time.Time, bool) {
	for _, s := range p.sched {
		if s.Name == name {
			return s.next(t), true
		}
	}
	return time.Time{}, false
}

// Run makes a pass every Interval until ctx is cancelled, then returns
// nil. Errors of a pass go to OnError and the Logger; the next pass
// tries again.
func (p *Periodic) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return errors.New("runner: Periodic.Run called while it is already running")
	}
	defer p.running.Store(false)
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		if err := p.Pass(ctx); err != nil && ctx.Err() == nil {
			p.cfg.Logger.Error("periodic pass failed", "error", err)
			if p.cfg.OnError != nil {
				p.cfg.OnError(err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Pass enqueues, at the Clock's current time, every tick of every
// schedule due in the coming Horizon that this process has not enqueued
// yet (and, for a CatchUp schedule's first pass, the missed ones). Run
// calls it every Interval; tests call it after moving their clock. It
// returns the first error met; what failed is tried again by the next
// pass.
func (p *Periodic) Pass(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Clock.Now()
	lo := now.Add(p.cfg.Lead)
	hi := lo.Add(p.cfg.Horizon)
	var errs []error
	var items []contract.Item
	var ahead [][]time.Time
	for _, s := range p.sched {
		if !s.caughtUp {
			if err := p.catchUp(ctx, s, lo); err != nil {
				errs = append(errs, fmt.Errorf("schedule %q: catching up: %w", s.Name, err))
			}
		}
		from := lo
		if s.through.After(from) {
			from = s.through
		}
		ticks := s.ticks(from, hi)
		ahead = append(ahead, ticks)
		for _, t := range append(s.pending, ticks...) {
			items = append(items, s.item(t))
		}
	}
	if len(items) > 0 {
		if err := p.q.Enqueue(ctx, items...); err != nil {
			return errors.Join(append(errs, fmt.Errorf("enqueueing %d periodic item(s): %w", len(items), err))...)
		}
	}
	for i, s := range p.sched {
		s.pending = nil
		if n := len(ahead[i]); n > 0 {
			s.through = ahead[i][n-1]
		}
		if s.Missed == CatchUp && s.caughtUp && s.through.Sub(s.stored) > p.cfg.Horizon/2 {
			if err := p.advanceCursor(ctx, s); err != nil {
				errs = append(errs, fmt.Errorf("schedule %q: recording its cursor: %w", s.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// cursor is what a CatchUp schedule's run holds.
type cursor struct {
	Through time.Time `json:"through"`
}

// readCursor loads the schedule's cursor run; found is false when there
// is none yet.
func (p *Periodic) readCursor(ctx context.Context, s *schedule) (found bool, err error) {
	run, err := p.cfg.State.GetRun(ctx, s.Tenant, s.cursorID)
	if errors.Is(err, contract.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var c cursor
	if err := json.Unmarshal(run.Data, &c); err != nil {
		return false, fmt.Errorf("run %q of tenant %q does not hold a schedule cursor (%v); delete it to start the schedule afresh", s.cursorID, s.Tenant, err)
	}
	s.stored, s.version = c.Through, run.Version
	return true, nil
}

// writeCursor stores through as the cursor, at the version last read (0
// creates it). It reports false on a conflict: another process wrote it.
func (p *Periodic) writeCursor(ctx context.Context, s *schedule, through time.Time) (bool, error) {
	data, _ := json.Marshal(cursor{Through: through.UTC()})
	run, err := p.cfg.State.PutRun(ctx, contract.Run{Tenant: s.Tenant, ID: s.cursorID, Status: "schedule cursor", Data: data, Version: s.version})
	var conflict *contract.StateConflictError
	if errors.As(err, &conflict) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s.stored, s.version = through, run.Version
	return true, nil
}

// catchUp takes the missed ticks of s, those after the cursor up to lo,
// for this process: the cursor moves to lo first, by a versioned write,
// so of several processes starting together exactly one wins them.
func (p *Periodic) catchUp(ctx context.Context, s *schedule, lo time.Time) error {
	for range 8 {
		found, err := p.readCursor(ctx, s)
		if err != nil {
			return err
		}
		if found && !s.stored.Before(lo) {
			s.caughtUp = true // another process is ahead of us
			return nil
		}
		if !found {
			s.version = 0
		}
		prev := s.stored
		won, err := p.writeCursor(ctx, s, lo)
		if err != nil {
			return err
		}
		if !won {
			continue
		}
		s.caughtUp = true
		if found {
			missed := s.ticks(prev, lo)
			if len(missed) > s.MaxCatchUp {
				missed = missed[len(missed)-s.MaxCatchUp:]
			}
			s.pending = missed
			if n := len(missed); n > 0 {
				s.through = missed[n-1]
			}
		}
		return nil
	}
	return errors.New("the cursor kept changing under this process; trying again at the next pass")
}

// advanceCursor moves the cursor forward to what this process enqueued,
// unless another process moved it further.
func (p *Periodic) advanceCursor(ctx context.Context, s *schedule) error {
	for range 4 {
		won, err := p.writeCursor(ctx, s, s.through)
		if err != nil || won {
			return err
		}
		if _, err := p.readCursor(ctx, s); err != nil {
			return err
		}
		if !s.stored.Before(s.through) {
			return nil
		}
	}
	return nil
}

// next returns the schedule's first tick after t.
func (s *schedule) next(t time.Time) time.Time {
	if s.cron != nil {
		return s.cron.next(t, s.Location)
	}
	n, d := t.UnixNano(), int64(s.Every)
	k := n / d
	if n < 0 && n%d != 0 {
		k-- // floor, for instants before the epoch
	}
	return time.Unix(0, (k+1)*d).In(t.Location())
}

// ticks returns the schedule's ticks after from, up to and including to,
// at most maxTicksPerPass of them (the earliest).
func (s *schedule) ticks(from, to time.Time) []time.Time {
	var out []time.Time
	for t := s.next(from); !t.IsZero() && !t.After(to) && len(out) < maxTicksPerPass; t = s.next(t) {
		out = append(out, t)
	}
	return out
}

// tickUniqueFor is the uniqueness window of a tick's item: Lead +
// Horizon, the longest a process's pass can still enqueue a tick after
// another process's item of it ran, when their clocks disagree by more
// than Lead. Kept within what contract.ValidateUniqueFor accepts.
func tickUniqueFor(lead, horizon time.Duration) time.Duration {
	d := lead + horizon
	switch {
	case d < 0 || d > contract.MaxUniqueFor: // an overflow included
		return contract.MaxUniqueFor
	case d < time.Millisecond:
		return time.Millisecond
	}
	return d
}

// item is the schedule's item for tick t.
func (s *schedule) item(t time.Time) contract.Item {
	tick := t.UTC().Format(time.RFC3339)
	meta := make(map[string]string, len(s.Metadata)+2)
	for k, v := range s.Metadata {
		meta[k] = v
	}
	meta[MetaSchedule] = s.Name
	meta[MetaTick] = tick
	return contract.Item{
		Tenant:    s.Tenant,
		ID:        s.Name + "@" + tick,
		Queue:     s.Queue,
		Payload:   s.Payload,
		Metadata:  meta,
		NotBefore: t,
		UniqueFor: s.uniqueFor,
	}
}
