package runner_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/contract/runner"
)

// drainDue claims and completes every item of queue that is due at the
// clock's time, adding each ID to seen.
func drainDue(t *testing.T, q contract.WorkQueue, queue string, seen map[string]int) {
	t.Helper()
	ctx := context.Background()
	for {
		leases, err := q.Claim(ctx, contract.ClaimRequest{Queue: queue, Worker: "drain", LeaseFor: time.Minute, Max: contract.MaxClaimBatch})
		if errors.Is(err, contract.ErrEmpty) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range leases {
			seen[l.Item.ID]++
		}
		if err := q.Complete(ctx, leases...); err != nil {
			t.Fatal(err)
		}
	}
}

func tickID(name string, tick time.Time) string {
	return name + "@" + tick.UTC().Format(time.RFC3339)
}

func TestPeriodicEnqueuesAheadOfTheTick(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store := newStore(clock)
	p, err := runner.NewPeriodic(store, runner.PeriodicConfig{
		Clock:     clock,
		Schedules: []runner.Schedule{{Name: "report", Every: 10 * time.Second, Queue: "cron", Tenant: "ops", Payload: []byte(`{"kind":"report"}`), Metadata: map[string]string{"team": "data"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.Config()
	if cfg.Lead != runner.DefaultPeriodicLead || cfg.Horizon != runner.DefaultPeriodicHorizon {
		t.Fatalf("defaults: lead %v horizon %v", cfg.Lead, cfg.Horizon)
	}
	ctx := context.Background()
	if err := p.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	// At 00:00:00 with a lead of 2s and a horizon of 10s the pass covers
	// (00:00:02, 00:00:12]: the tick at 00:00:10 only.
	first := clock.Now().Add(10 * time.Second)
	if _, err := store.Claim(ctx, contract.ClaimRequest{Queue: "cron", Worker: "w", LeaseFor: time.Minute, Max: 10}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("claim before the tick: %v, want ErrEmpty", err)
	}
	clock.Advance(10 * time.Second)
	leases, err := store.Claim(ctx, contract.ClaimRequest{Queue: "cron", Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 1 {
		t.Fatalf("claimed %d items at the first tick, want 1", len(leases))
	}
	it := leases[0].Item
	if it.ID != tickID("report", first) || it.Tenant != "ops" || string(it.Payload) != `{"kind":"report"}` || !it.NotBefore.Equal(first) {
		t.Fatalf("item %+v", it)
	}
	if it.Metadata["team"] != "data" || it.Metadata[runner.MetaSchedule] != "report" || it.Metadata[runner.MetaTick] != "2030-01-01T00:00:10Z" {
		t.Fatalf("metadata %v", it.Metadata)
	}
	if next, ok := p.Next("report", first); !ok || !next.Equal(first.Add(10*time.Second)) {
		t.Fatalf("Next = %v, %v", next, ok)
	}
	if _, ok := p.Next("nosuch", first); ok {
		t.Fatal("Next found a schedule that does not exist")
	}
}

// skewedClock reads a base clock off by a fixed amount, as the clock of
// another host does.
type skewedClock struct {
	base *contracttest.FakeClock
	off  time.Duration
}

func (c skewedClock) Now() time.Time { return c.base.Now().Add(c.off) }

// TestPeriodicOneItemPerTickAcrossProcesses runs five processes' worth of
// Periodics over one queue, their clocks up to a second apart (less than
// the Lead), passes concurrently and some skipped, completing the items
// as soon as they are due by the queue's clock: every tick runs once,
// including those whose item was completed before a process whose clock
// is behind passed over it.
func TestPeriodicOneItemPerTickAcrossProcesses(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	start := clock.Now()
	store := newStore(clock)
	scheds := []runner.Schedule{
		{Name: "every-second", Every: time.Second},
		{Name: "every-seven", Every: 7 * time.Second},
		{Name: "each-minute", Cron: "* * * * *"},
	}
	var procs []*runner.Periodic
	for _, off := range []time.Duration{0, -time.Second, 900 * time.Millisecond, -300 * time.Millisecond, 500 * time.Millisecond} {
		p, err := runner.NewPeriodic(store, runner.PeriodicConfig{Clock: skewedClock{clock, off}, Schedules: scheds})
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	seen := map[string]int{}
	ctx := context.Background()
	const steps = 300
	for step := range steps {
		// Passes run concurrently, with the completions of due items
		// between some of them.
		var wg sync.WaitGroup
		for i, p := range procs {
			if (i+step)%3 == 0 {
				continue // this process's timer has not fired this second
			}
			wg.Go(func() {
				if err := p.Pass(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		clock.Advance(time.Second)
		drainDue(t, store, "", seen)
	}
	end := clock.Now()
	for _, s := range scheds {
		var want []string
		for tick, _ := procs[0].Next(s.Name, start.Add(runner.DefaultPeriodicLead)); !tick.After(end); tick, _ = procs[0].Next(s.Name, tick) {
			want = append(want, tickID(s.Name, tick))
		}
		if len(want) == 0 {
			t.Fatalf("schedule %s: no ticks in the run", s.Name)
		}
		for _, id := range want {
			if seen[id] != 1 {
				t.Errorf("%s ran %d times, want once", id, seen[id])
			}
		}
	}
	total := 0
	for id, n := range seen {
		total += n
		if n != 1 {
			t.Errorf("%s ran %d times", id, n)
		}
	}
	if want := 300 - 2 + (300-2)/7 + 5; total < want-2 || total > want+2 {
		t.Errorf("%d items ran in %d seconds, want about %d", total, steps, want)
	}
}

func TestPeriodicCatchUpAfterDowntime(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := newStore(clock)
	ctx := context.Background()
	sched := runner.Schedule{Name: "tick", Every: time.Second, Missed: runner.CatchUp, MaxCatchUp: 50}
	newP := func() *runner.Periodic {
		p, err := runner.NewPeriodic(store, runner.PeriodicConfig{Clock: clock, State: store, Schedules: []runner.Schedule{sched}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	seen := map[string]int{}
	first := newP()
	for range 20 {
		if err := first.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		drainDue(t, store, "", seen)
	}
	// Every process stops; 30 seconds pass, so the ticks the first
	// process had not enqueued yet (it ran 12s ahead) are missed.
	stopped := clock.Now()
	clock.Advance(30 * time.Second)
	var wg sync.WaitGroup
	procs := []*runner.Periodic{newP(), newP(), newP()}
	for _, p := range procs {
		wg.Go(func() {
			if err := p.Pass(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for range 5 {
		drainDue(t, store, "", seen)
		clock.Advance(time.Second)
		for _, p := range procs {
			if err := p.Pass(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	drainDue(t, store, "", seen)
	for tick := contracttest.FakeEpoch.Add(3 * time.Second); !tick.After(clock.Now()); tick = tick.Add(time.Second) {
		if n := seen[tickID("tick", tick)]; n != 1 {
			t.Errorf("tick %s ran %d times, want once (downtime from %s)", tick.Format(time.TimeOnly), n, stopped.Format(time.TimeOnly))
		}
	}
	run, err := store.GetRun(ctx, runner.DefaultScheduleTenant, "adk.schedule:tick")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "schedule cursor" {
		t.Fatalf("cursor run %+v", run)
	}

	// A longer downtime catches up MaxCatchUp ticks, the latest ones.
	// First let the ticks enqueued ahead before it run out.
	clock.Advance(15 * time.Second)
	drainDue(t, store, "", seen)
	gapStart := clock.Now()
	clock.Advance(10 * time.Minute)
	late := newP()
	if err := late.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	drainDue(t, store, "", seen)
	// The catch-up takes the 50 ticks up to now+Lead; those up to now
	// are due.
	now := clock.Now()
	oldest := now.Add(runner.DefaultPeriodicLead - 49*time.Second)
	for tick := gapStart.Add(time.Second); !tick.After(now); tick = tick.Add(time.Second) {
		want := 0
		if !tick.Before(oldest) {
			want = 1
		}
		if n := seen[tickID("tick", tick)]; n != want {
			t.Errorf("after ten minutes down, tick %s ran %d times, want %d (MaxCatchUp keeps the latest 50)", tick.Format(time.TimeOnly), n, want)
		}
	}
}

func TestPeriodicSkipsMissedTicks(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := newStore(clock)
	ctx := context.Background()
	p, err := runner.NewPeriodic(store, runner.PeriodicConfig{Clock: clock, Schedules: []runner.Schedule{{Name: "tick", Every: time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute) // the process was stopped
	if err := p.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	drainDue(t, store, "", seen)
	// Only what the first pass enqueued ahead (ticks 3..12) ran: the
	// ticks of the minute nobody passed are skipped.
	if len(seen) != 10 {
		t.Fatalf("%d ticks ran after the downtime, want the 10 enqueued before it", len(seen))
	}
	for id := range seen {
		if tick, _ := time.Parse(time.RFC3339, id[len("tick@"):]); tick.After(contracttest.FakeEpoch.Add(12 * time.Second)) {
			t.Errorf("missed tick %s ran", id)
		}
	}
}

func TestPeriodicRefusesBadConfig(t *testing.T) {
	store := newStore(contracttest.NewFakeClock(time.Time{}))
	long := make([]byte, contract.MaxNameBytes)
	for i := range long {
		long[i] = 'a'
	}
	cases := []struct {
		cfg   runner.PeriodicConfig
		field string
	}{
		{runner.PeriodicConfig{Schedules: []runner.Schedule{{Every: time.Second}}}, "PeriodicConfig.Schedules[0].Name"},
		{runner.PeriodicConfig{Schedules: []runner.Schedule{{Name: "a"}}}, "PeriodicConfig.Schedules[0]"},
		{runner.PeriodicConfig{Schedules: []runner.Schedule{{Name: "a", Every: time.Second, Cron: "@daily"}}}, "PeriodicConfig.Schedules[0]"},
		{runner.PeriodicConfig{Schedules: []runner.Schedule{{Name: "a", Every: 1500 * time.Millisecond}}}, "PeriodicConfig.Schedules[0].Every"},
		{runner.PeriodicConfig{Schedules: []runner.Schedule{{Name: "a", Cron: "61 * * * *"}}}, "PeriodicConfig.Schedules[0].Cron"},
		{runner.PeriodicConfig{Schedules: []runner.Schedule{{Name: "a", Every: time.Second}, {Name: "a", Every: time.Minute}}}, "PeriodicConfig.Schedules[1].Name"},
		{runner.PeriodicConfig{Schedules: []runner.Schedule{{Name: string(long), Every: time.Second}}}, "PeriodicConfig.Schedules[0].Name"},
		{runner.PeriodicConfig{Schedules: []runner.Schedule{{Name: "a", Every: time.Second, Missed: runner.CatchUp}}}, "PeriodicConfig.State"},
		{runner.PeriodicConfig{Schedules: []runner.Schedule{{Name: "a", Every: time.Second, Missed: 7}}}, "PeriodicConfig.Schedules[0].Missed"},
		{runner.PeriodicConfig{Schedules: []runner.Schedule{{Name: "a", Every: time.Second, Tenant: "t\x00"}}}, "PeriodicConfig.Schedules[0].Tenant"},
		{runner.PeriodicConfig{Interval: time.Second, Horizon: time.Second}, "PeriodicConfig.Horizon"},
		{runner.PeriodicConfig{Lead: -time.Second}, "PeriodicConfig.Lead"},
	}
	for _, c := range cases {
		_, err := runner.NewPeriodic(store, c.cfg)
		var ve *contract.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field || ve.Problem == "" {
			t.Errorf("%+v: got %v, want a ValidationError on %s", c.cfg, err, c.field)
		}
	}
	_, err := runner.New(store, func(context.Context, contract.Lease) error { return nil }, runner.Config{
		Schedules: []runner.Schedule{{Name: "a", Every: time.Second, Missed: runner.CatchUp}},
	})
	var ve *contract.ValidationError
	if !errors.As(err, &ve) || ve.Field != "Config.ScheduleState" {
		t.Errorf("runner without ScheduleState: %v", err)
	}
}

// TestRunnerRunsItsSchedules: a Runner with Schedules enqueues the ticks
// and works them like any other item.
func TestRunnerRunsItsSchedules(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{})
	var mu sync.Mutex
	ran := map[string]string{}
	cfg := fastConfig(clock)
	cfg.Schedules = []runner.Schedule{{Name: "hourly", Cron: "@hourly"}, {Name: "often", Every: 5 * time.Second}}
	r, err := runner.New(store, func(_ context.Context, l contract.Lease) error {
		mu.Lock()
		defer mu.Unlock()
		ran[l.Item.ID] = l.Item.Metadata[runner.MetaTick]
		return nil
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Periodic() == nil {
		t.Fatal("a runner with schedules has no Periodic")
	}
	s := start(t, r)
	ctx := context.Background()
	for range 12 {
		if err := r.Periodic().Pass(ctx); err != nil {
			t.Fatal(err)
		}
		clock.Advance(5 * time.Second)
	}
	// The hourly tick is enqueued by a pass between Horizon+Lead and
	// Lead before it.
	clock.Advance(time.Hour - time.Minute - 10*time.Second)
	if err := r.Periodic().Pass(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Second)
	hour := contracttest.FakeEpoch.Add(time.Hour)
	waitFor(t, "the hourly tick and the first minute of 5s ticks", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ran[tickID("hourly", hour)] != "" && ran[tickID("often", contracttest.FakeEpoch.Add(55*time.Second))] != ""
	})
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := ran[tickID("hourly", hour)]; got != hour.Format(time.RFC3339) {
		t.Fatalf("hourly tick metadata %q", got)
	}
	if n := len(ran); n < 12 {
		t.Fatalf("%d periodic items ran, want the 5s ticks of a minute and the hourly one", n)
	}
}

func TestPeriodicRunPassesUntilCancelled(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := newStore(clock)
	var errs []error
	var mu sync.Mutex
	p, err := runner.NewPeriodic(store, runner.PeriodicConfig{Clock: clock, Interval: 5 * time.Millisecond,
		Schedules: []runner.Schedule{{Name: "tick", Every: time.Second}},
		OnError:   func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	// The passes follow the clock: moved a second at a time, faster than
	// the passes come, the clock still finds every tick enqueued.
	seen := map[string]int{}
	waitFor(t, "ten ticks claimed", func() bool {
		leases, err := store.Claim(context.Background(), contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 100})
		if errors.Is(err, contract.ErrEmpty) && clock.Now().Before(contracttest.FakeEpoch.Add(time.Hour)) {
			clock.Advance(time.Second)
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range leases {
			seen[l.Item.ID]++
		}
		if err := store.Complete(context.Background(), leases...); err != nil {
			t.Fatal(err)
		}
		return len(seen) >= 10
	})
	var first time.Time
	for id := range seen {
		tick, _ := time.Parse(time.RFC3339, id[len("tick@"):])
		if first.IsZero() || tick.Before(first) {
			first = tick
		}
	}
	for i := range len(seen) {
		if id := tickID("tick", first.Add(time.Duration(i)*time.Second)); seen[id] != 1 {
			t.Fatalf("%s ran %d times; claimed %v", id, seen[id], seen)
		}
	}
	waitFor(t, "a second Run to be refused", func() bool { return p.Run(ctx) != nil })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v after cancel", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 0 {
		t.Fatalf("passes failed: %v", errs)
	}
}

// Each tick's item asks for a uniqueness window of Lead + Horizon, so
// that a queue keeping history refuses it again once it has run.
func TestPeriodicTickItemsAskForUniqueness(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store := newStore(clock)
	p, err := runner.NewPeriodic(store, runner.PeriodicConfig{
		Clock: clock, Lead: 3 * time.Second, Horizon: 20 * time.Second,
		Schedules: []runner.Schedule{{Name: "tick", Every: 10 * time.Second}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	leases, err := store.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 2 { // the ticks at :10 and :20
		t.Fatalf("claimed %d ticks, want 2", len(leases))
	}
	for _, l := range leases {
		if l.Item.UniqueFor != 23*time.Second {
			t.Fatalf("tick %s has UniqueFor %v, want Lead + Horizon = 23s", l.Item.ID, l.Item.UniqueFor)
		}
	}
}

// A tick that ran is not enqueued again by a process whose clock lags
// the queue's by more than Lead: over a queue that keeps history, the
// tick's uniqueness window makes that enqueue a duplicate.
func TestPeriodicFinishedTickNotEnqueuedAgain(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store := newStore(clock)
	if _, ok := contract.AsHistoryKeeper(store); !ok {
		t.Fatal("memstore keeps no history")
	}
	scheds := []runner.Schedule{{Name: "tick", Every: 10 * time.Second}}
	ahead, err := runner.NewPeriodic(store, runner.PeriodicConfig{Clock: clock, Schedules: scheds})
	if err != nil {
		t.Fatal(err)
	}
	// Five seconds behind the queue: more than the 2s Lead.
	lagging, err := runner.NewPeriodic(store, runner.PeriodicConfig{Clock: skewedClock{clock, -5 * time.Second}, Schedules: scheds})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ahead.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	tick := clock.Now().Add(10 * time.Second)
	clock.Advance(11 * time.Second) // the tick is due by the queue's clock
	seen := map[string]int{}
	drainDue(t, store, "", seen)
	if seen[tickID("tick", tick)] != 1 {
		t.Fatalf("ran %v; want the tick at %v once", seen, tick)
	}
	// The lagging process reads 00:00:06 and passes over (00:00:08,
	// 00:00:18]: the tick that just ran is in it.
	if err := lagging.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := store.History(ctx, contract.ItemKey{Tenant: runner.DefaultScheduleTenant, Queue: contract.DefaultQueue, ID: tickID("tick", tick)})
	if err != nil || h.Item.State != contract.StateCompleted {
		t.Fatalf("the tick that ran: %+v, %v; want it kept as completed", h.Item.State, err)
	}
	clock.Advance(time.Minute)
	drainDue(t, store, "", seen)
	if n := seen[tickID("tick", tick)]; n != 1 {
		t.Errorf("the tick at %v ran %d times, want once", tick, n)
	}
	// Its window closed, a prune removes it.
	if n, err := store.Prune(ctx, contract.DefaultQueue); err != nil || n < 1 {
		t.Errorf("Prune after the window = %d, %v; want the finished ticks removed", n, err)
	}
}
