//go:build integration

package integration

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/integration/internal/oracle"
	"github.com/adkit/adk/integration/internal/proxy"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/adkit/adk/modules/sqlitestore"
)

// backingTarget starts (or reuses) a private server for the backing and
// returns a target isolated to this test.
func backingTarget(t *testing.T, backing string, redisArgs ...string) (oracle.Target, *redistest.Server, *pgstoretest.Server) {
	t.Helper()
	switch backing {
	case oracle.SQLite:
		return sqliteTarget(t), nil, nil
	case oracle.Redis:
		r := redistest.StartServer(t, redisArgs...)
		return oracle.Target{Backing: oracle.Redis, Addr: r.Addr(), Namespace: "adkfault"}, r, nil
	default:
		pg := privatePG(t)
		return oracle.Target{Backing: oracle.Postgres, DSN: pg.DSN(), Schema: pgstoretest.TestSchema(t, pg.DSN(), nil).Name}, nil, pg
	}
}

var backings = []string{oracle.Redis, oracle.Postgres}

// sqliteTarget is a new file in the test's directory with its schema in
// place, which every process of the load opens.
func sqliteTarget(t *testing.T) oracle.Target {
	t.Helper()
	path := filepath.Join(t.TempDir(), "adk.db")
	db, err := sqlitestore.OpenDB(path, sqlitestore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := sqlitestore.Prepare(t.Context(), db, sqlitestore.Settings{}); err != nil {
		t.Fatal(err)
	}
	return oracle.Target{Backing: oracle.SQLite, Path: path}
}

// A worker process SIGKILLed while it holds leases: its items stay leased
// until the lease expires, a surviving worker's reaper returns them to the
// queue, and they are done again, once, by a survivor. Waits and cancels
// are mixed into the load: a wait the victim returned is resumed once by
// the parent's signals, and an item cancelled while the victim held it is
// cancelled by the reaper, not run again. Every execution also writes
// its item's run fenced by its lease (runner.Runs): the run must end
// written last by the execution that completed the item, with no write of
// an execution whose lease was taken back landing after a newer one's.
func TestFaultWorkerKilled(t *testing.T) {
	for _, b := range append(slices.Clone(backings), oracle.SQLite) {
		t.Run(b, func(t *testing.T) {
			target, _, _ := backingTarget(t, b)
			var workers []oracle.WorkerConfig
			for i := range 3 {
				w := workerDefaults(target, fmt.Sprintf("w%d", i))
				// Work after the effect: the victim dies holding items whose
				// effect is in the store but which it never completed.
				w.DelayAfterEffect = true
				w.HandlerDelay = 40 * time.Millisecond
				if b == oracle.SQLite {
					// Every claim, heartbeat and settle of the three
					// processes waits its turn for the file's write lock;
					// on a loaded machine under -race a 2 s lease can run
					// out in that queue, and a survivor's expired lease
					// would count as the victim's.
					w.LeaseFor = 6 * time.Second
				}
				workers = append(workers, w)
			}
			out := runLoad(t, load{target: target, direct: target, workers: workers, lifecycle: true, fenced: true,
				inject: func(t *testing.T, ctx context.Context, e *env) []string {
					f := e.fleet
					if !waitProgress(ctx, f, K/3) || !waitHolding(ctx, f, "w0", 15*time.Millisecond) {
						return nil
					}
					f.Kill(e.procs[0])
					return []string{fmt.Sprintf("SIGKILL worker w0 after %d items acknowledged", f.Acked())}
				}})
			if len(out.faults) != 1 {
				t.Fatal("the worker was not killed mid-load")
			}
			// The victim's leases, and only those, run twice: once by the
			// victim before it died, once by a survivor after the reap. It
			// held at most Concurrency running items plus as many finished
			// ones waiting for their batched Complete.
			if r, held := out.report.Reexecuted, 2*workers[0].Concurrency; r < 1 || r > held {
				t.Errorf("%d items re-executed; want 1 to %d (the leases the killed worker could hold)", r, held)
			}
		})
	}
}

// A worker process SIGSTOPped while it holds leases mid-handler, between
// its item's first fenced run write and its final one: a long GC pause,
// a zombie. It stays stopped until its leases have expired and the other
// workers have claimed its items again and finished them (their fenced
// writes carry the newer tokens), then SIGCONT: it goes on as if nothing
// happened, its handlers deaf to their contexts (WorkerConfig.Zombie).
// Its late run writes must be refused by the fences
// (*contract.StaleFenceError; at least one, or the fences kept nothing
// out), none of them may land over a newer execution's, its late settles
// are refused as lost leases (or never sent, when its first heartbeat on
// waking finds the leases lost), and the oracle holds as for a kill.
//
// SQLite and PostgreSQL take locks across a client's round trips (the
// file's write lock, a transaction's rows): a worker stopped inside such
// a transaction would hold up the others until it resumed. Such a pause
// is ended at once and tried again.
func TestFaultWorkerPaused(t *testing.T) {
	for _, b := range append(slices.Clone(backings), oracle.SQLite) {
		t.Run(b, func(t *testing.T) {
			target, _, _ := backingTarget(t, b)
			k := K
			if b == oracle.SQLite {
				// Every write of the three processes is a synced commit
				// taken in turns: under -race half the load takes as long
				// as the whole one elsewhere, and is plenty for one pause.
				k = K / 2
			}
			var workers []oracle.WorkerConfig
			for i := range 3 {
				w := workerDefaults(target, fmt.Sprintf("w%d", i))
				// The delay is between the two fenced writes: the victim
				// stops holding items whose first write landed and whose
				// final write and Complete are still to come.
				w.DelayAfterEffect, w.Zombie = true, true
				w.HandlerDelay = 80 * time.Millisecond
				if b == oracle.SQLite {
					// As in TestFaultWorkerKilled: a lease must outlast the
					// queue for the file's write lock.
					w.LeaseFor = 6 * time.Second
				}
				workers = append(workers, w)
			}
			blocked := lockProbe(t, target)
			var held, redone, tries int
			out := runLoad(t, load{target: target, direct: target, workers: workers, k: k, fenced: true,
				inject: func(t *testing.T, ctx context.Context, e *env) []string {
					f, victim := e.fleet, e.procs[0]
					if !waitProgress(ctx, f, k/4) {
						return nil
					}
					for try := 1; try <= 10; try++ {
						tries = try
						if !waitHolding(ctx, f, "w0", 20*time.Millisecond) {
							return nil
						}
						// Not right after the commit the ack followed: on SQLite
						// the process that just released the write lock is the
						// likeliest to have taken it again (the others sleep in
						// their busy handlers), and a pause then holds up all.
						time.Sleep(time.Duration(rand.IntN(25)) * time.Millisecond)
						f.Pause(victim)
						began, acked := time.Now(), f.Acked()
						pending, err := unfinished(ctx, e.parent, f, "w0")
						if err == nil {
							var why string
							if why, err = blocked(ctx, e.parent); err == nil && why != "" {
								f.Resume(victim)
								t.Logf("pause %d ended at once: %s", try, why)
								time.Sleep(200 * time.Millisecond)
								continue
							}
						}
						if err == nil {
							redone, err = waitFinished(ctx, e.parent, pending, "w0", 3*workers[0].LeaseFor+10*time.Second)
						}
						f.Resume(victim)
						if err != nil {
							t.Error(err)
							return nil
						}
						held = len(pending)
						return []string{fmt.Sprintf("SIGSTOP worker w0 after %d items acknowledged (pause %d), holding %d unfinished items; %d of them claimed again and finished by the others; SIGCONT after %v",
							acked, try, held, redone, time.Since(began).Round(time.Millisecond))}
					}
					t.Error("every pause of w0 caught it inside a transaction")
					return nil
				}})
			if len(out.faults) != 1 {
				t.Fatal("the worker was not paused mid-load")
			}
			if redone == 0 {
				t.Errorf("none of the %d items the paused worker held was claimed again and finished by another worker", held)
			}
			var refused, refusedFinal int
			for _, e := range out.fleet.FenceEvents() {
				if e.Worker == "w0" && e.Class == oracle.FenceRefused {
					refused++
					if e.Final {
						refusedFinal++
					}
				}
			}
			lost, othersLost := int64(0), int64(0)
			for _, st := range out.fleet.Stats() {
				if st.Worker == "w0" {
					lost = st.Counts["fenced_items"]
				} else {
					othersLost += st.Counts["fenced_items"]
				}
			}
			t.Logf("paused worker: %d of its run writes refused by the fences (%d final, %d first), %d of its settles refused as lost leases; %d items it held, %d finished by the others meanwhile; the others' settles refused as lost leases: %d",
				refused, refusedFinal, refused-refusedFinal, lost, held, redone, othersLost)
			if refused == 0 {
				t.Error("no write of the paused worker was refused: the zombie's late writes were not fenced off")
			}
			// As for a kill: only the paused worker's items run twice. A
			// pause that ended at once may have stopped w0 holding SQLite's
			// write lock and stalled the others past their leases' end; the
			// items of leases they reported lost then, and only then, may run
			// twice as well.
			excused := 0
			if tries > 1 {
				excused = int(othersLost)
			}
			if r, most := out.report.Reexecuted, 2*workers[0].Concurrency+excused; r < 1 || r > most {
				t.Errorf("%d items re-executed; want 1 to %d (the %d leases the paused worker could hold, and %d the others lost in %d pauses that ended at once)", r, most, 2*workers[0].Concurrency, excused, tries-1)
			}
		})
	}
}

// unfinished returns the items whose latest lease a worker reported is
// worker's and which have not finished (completed, dead or cancelled),
// with the token of that lease.
func unfinished(ctx context.Context, s *oracle.Stores, f *oracle.Fleet, worker string) (map[contract.ItemKey]int64, error) {
	hk, ok := contract.AsHistoryKeeper(s.Queue)
	if !ok {
		return nil, fmt.Errorf("the %T queue keeps no history", s.Queue)
	}
	latest := map[contract.ItemKey]oracle.Event{}
	for _, l := range f.Leases() {
		k := contract.ItemKey{Tenant: l.Tenant, Queue: contract.DefaultQueue, ID: l.ID}
		if l.Token > latest[k].Token {
			latest[k] = l
		}
	}
	out := map[contract.ItemKey]int64{}
	for k, l := range latest {
		if l.Worker != worker {
			continue
		}
		h, err := hk.History(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("history of %q/%q: %w", k.Tenant, k.ID, err)
		}
		if !finished(h) {
			out[k] = l.Token
		}
	}
	return out, nil
}

func finished(h contract.History) bool {
	if len(h.Events) == 0 {
		return false
	}
	switch h.Events[len(h.Events)-1].Kind {
	case contract.EventCompleted, contract.EventDead, contract.EventCancelled:
		return true
	}
	return false
}

// waitFinished waits until every item of pending has finished, and
// returns how many were claimed again, under a token above the one
// pending names, and finished by a worker other than worker.
func waitFinished(ctx context.Context, s *oracle.Stores, pending map[contract.ItemKey]int64, worker string, within time.Duration) (int, error) {
	hk, _ := contract.AsHistoryKeeper(s.Queue)
	deadline := time.Now().Add(within)
	left := maps.Clone(pending)
	redone := 0
	for len(left) > 0 {
		for k, tok := range left {
			h, err := hk.History(ctx, k)
			if err != nil {
				return redone, fmt.Errorf("history of %q/%q: %w", k.Tenant, k.ID, err)
			}
			if !finished(h) {
				continue
			}
			delete(left, k)
			var holder contract.Event
			for _, e := range h.Events {
				if e.Kind == contract.EventClaimed {
					holder = e
				}
			}
			if holder.Token > tok && holder.Worker != worker {
				redone++
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return redone, fmt.Errorf("%d of the %d items the paused worker held did not finish within %v", len(left), len(pending), within)
		}
		select {
		case <-ctx.Done():
			return redone, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return redone, nil
}

// lockProbe returns a check, made while a worker is paused, of whether it
// stopped holding a lock the others wait for: on SQLite the file's write
// lock (a BEGIN IMMEDIATE of the parent's waits up to 1 s for it), on
// PostgreSQL a transaction left open between two statements for longer
// than any running worker leaves one. It returns why, or "" when the
// paused worker holds up nobody.
func lockProbe(t *testing.T, target oracle.Target) func(ctx context.Context, s *oracle.Stores) (string, error) {
	switch target.Backing {
	case oracle.SQLite:
		db, err := sqlitestore.OpenDB(target.Path, sqlitestore.Settings{BusyTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return func(ctx context.Context, _ *oracle.Stores) (string, error) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return fmt.Sprintf("the file's write lock is held (%v)", err), nil
			}
			return "", tx.Rollback()
		}
	case oracle.Postgres:
		return func(ctx context.Context, s *oracle.Stores) (string, error) {
			time.Sleep(400 * time.Millisecond)
			var n int
			err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
				AND state LIKE 'idle in transaction%' AND state_change < now() - interval '300 milliseconds'`).Scan(&n)
			if err != nil || n == 0 {
				return "", err
			}
			return fmt.Sprintf("%d transactions idle for 300 ms", n), nil
		}
	default:
		return func(context.Context, *oracle.Stores) (string, error) { return "", nil }
	}
}

// The same kill on PostgreSQL with the effect and the Complete in one
// transaction (Bound(tx)): the victim's open transactions roll back with
// its connections, so its items are redone with nothing of theirs left,
// and every item's effect lands exactly once.
//
// On SQLite the transaction holds the file's write lock from BEGIN
// IMMEDIATE to its commit, the handler's delay included, so the victim
// dies holding the lock with its frames in the WAL: the operating system
// drops its lock, the survivors' next transaction finds the log without
// a commit record for those frames, and they are never read.
func TestFaultWorkerKilledTransactional(t *testing.T) {
	for _, b := range []string{oracle.Postgres, oracle.SQLite} {
		t.Run(b, func(t *testing.T) {
			target, _, _ := backingTarget(t, b)
			var workers []oracle.WorkerConfig
			for i := range 3 {
				w := workerDefaults(target, fmt.Sprintf("w%d", i))
				w.Transactional = true
				w.HandlerDelay = 40 * time.Millisecond // inside the transaction
				if b == oracle.SQLite {
					// One write transaction at a time per file: more
					// handlers would only queue on the lock.
					w.Concurrency = 2
				}
				workers = append(workers, w)
			}
			out := runLoad(t, load{target: target, direct: target, workers: workers,
				inject: func(t *testing.T, ctx context.Context, e *env) []string {
					if !waitProgress(ctx, e.fleet, K/3) {
						return nil
					}
					e.fleet.Kill(e.procs[0])
					return []string{fmt.Sprintf("SIGKILL worker w0 (effect and Complete in one transaction) after %d items acknowledged", e.fleet.Acked())}
				}})
			if len(out.faults) != 1 {
				t.Fatal("the worker was not killed mid-load")
			}
			// (An execution may still be unacknowledged: the victim can die
			// between its commit and its report. The store is what counts.)
			if r := out.report; r.Reexecuted != 0 || !r.TallyExact {
				t.Errorf("transactional effects: %d items' effects stored more than once, tallies exact %v; want exactly once", r.Reexecuted, r.TallyExact)
			}
		})
	}
}

// Two processes claiming from one SQLite file at once, with no fault:
// every item is done exactly once and no item is claimed twice (the
// claim runs under the file's write lock, BEGIN IMMEDIATE).
func TestSQLiteProcessesShareAFile(t *testing.T) {
	target := sqliteTarget(t)
	workers := []oracle.WorkerConfig{workerDefaults(target, "w0"), workerDefaults(target, "w1")}
	for i := range workers {
		workers[i].LeaseFor = 10 * time.Second // no lease expires: any second run is a double claim
	}
	out := runLoad(t, load{target: target, direct: target, workers: workers})
	if r := out.report; r.Reexecuted != 0 || !r.TallyExact {
		t.Errorf("two processes on one file: %d items run twice, tallies exact %v; want every item once", r.Reexecuted, r.TallyExact)
	}
	var claimed []int64
	for _, a := range out.fleet.Acks() {
		claimed = append(claimed, a.Token)
	}
	slices.Sort(claimed)
	if len(claimed) != len(slices.Compact(slices.Clone(claimed))) {
		t.Error("two acknowledged executions carry the same fencing token")
	}
	workersSeen := map[string]bool{}
	for _, a := range out.fleet.Acks() {
		workersSeen[a.Worker] = true
	}
	if len(workersSeen) != 2 {
		t.Errorf("only %d of the two processes claimed anything", len(workersSeen))
	}
}

// Redis killed with SIGKILL and restarted mid-load, with the append-only
// file fsynced on every write (always) or once a second (everysec).
//
// Killing the process loses nothing under either setting: Redis writes
// the AOF (write(2)) before it replies, and the page cache outlives the
// process, so both cases hold the oracle with no allowance. What
// everysec gives up is the last second of writes on a crash of the host
// (power, kernel), when the page cache is lost too. The host-crash case
// simulates that: after the SIGKILL it cuts the AOF back to the size it
// had one second before, the most everysec may leave unsynced. The
// oracle then forgives exactly the items in flight in the two seconds
// before the crash, lists them, and holds every other item to the strict
// rules; the oldest lost acknowledgement must be about one second old.
//
// The host-crash case is not in the list that runs: in about one run in
// three an item lost with the crash ran twice at the same attempt after
// the restart, both executions acknowledged after it (+0.36 s and +1.5 s),
// which the allowance does not yet explain. Until that is understood
// (docs/reliability.md, open findings) only the process kills run.
func TestFaultRedisRestart(t *testing.T) {
	for _, tc := range []struct {
		name, fsync string
		hostCrash   bool
	}{{"always", "always", false}, {"everysec", "everysec", false}, {"everysec-host-crash", "everysec", true}} {
		t.Run(tc.name, func(t *testing.T) {
			target, srv, _ := backingTarget(t, oracle.Redis, "--appendonly", "yes", "--appendfsync", tc.fsync,
				"--auto-aof-rewrite-percentage", "0")
			var killedAt, deadAt time.Time
			var workers []oracle.WorkerConfig
			for i := range 2 {
				w := workerDefaults(target, fmt.Sprintf("w%d", i))
				// Slow enough that the load spans the kill by more than a
				// second.
				w.Concurrency, w.HandlerDelay = 4, 50*time.Millisecond
				// Puts and deletes resent across the restart (not with a
				// host crash, which may lose acknowledged writes).
				w.StateLoad = !tc.hostCrash
				workers = append(workers, w)
			}
			aof := aofFile(t, srv.Dir)
			var sizes aofSizes
			l := load{target: target, direct: target, workers: workers,
				inject: func(t *testing.T, ctx context.Context, e *env) []string {
					stop := sizes.sample(aof, 10*time.Millisecond)
					ok := waitProgress(ctx, e.fleet, K/10)
					// Let a second and more of the load pass before the kill.
					time.Sleep(1100 * time.Millisecond)
					stop()
					if !ok {
						return nil
					}
					acked := e.fleet.Acked()
					killedAt = time.Now()
					srv.Kill() // returns once the process has exited
					deadAt = time.Now()
					fault := fmt.Sprintf("SIGKILL redis-server (appendfsync %s) after %d items acknowledged", tc.fsync, acked)
					if tc.hostCrash {
						keep, was := sizes.at(killedAt.Add(-time.Second)), fileSize(aof)
						if err := os.Truncate(aof, keep); err != nil {
							t.Error(err)
						}
						fault += fmt.Sprintf(", AOF cut from %d to %d bytes (its size 1s before: the unsynced second a host crash loses)", was, keep)
					}
					time.Sleep(300 * time.Millisecond)
					srv.Start()
					return []string{fault + fmt.Sprintf(", restarted after %v", time.Since(killedAt).Round(time.Millisecond))}
				}}
			if tc.hostCrash {
				// The seed must be on disk before the load: the allowance is
				// for the writes of the load.
				l.settle = 1200 * time.Millisecond
				// The server answered until it died: a claim that returned
				// before deadAt was its last (the restart comes 300 ms later).
				l.allowance = func() *oracle.Allowance {
					return &oracle.Allowance{From: killedAt.Add(-2 * time.Second), To: deadAt}
				}
			}
			out := runLoad(t, l)
			if len(out.faults) != 1 {
				t.Fatal("the server was not killed mid-load")
			}
			if !tc.hostCrash && len(out.report.Forgiven) > 0 {
				t.Errorf("a process kill with appendfsync %s lost acknowledged writes: %v", tc.fsync, out.report.Forgiven)
			}
			if tc.hostCrash {
				if len(out.report.Forgiven) == 0 {
					t.Error("the simulated host crash lost nothing: the AOF cut did not take effect")
				}
				if age := out.report.MaxLossAge; age > 1500*time.Millisecond {
					t.Errorf("an acknowledgement %v older than the crash was lost; everysec allows about 1s", age)
				}
				t.Logf("appendfsync everysec, host crash: %d losses forgiven, oldest lost acknowledgement %v before the crash", len(out.report.Forgiven), out.report.MaxLossAge)
			}
		})
	}
}

// aofFile is the file Redis appends to: the incremental file of the
// multi-part AOF (Redis 7, with rewrites off there is one), or the single
// appendonly.aof of older servers.
func aofFile(t *testing.T, dir string) string {
	t.Helper()
	if m, _ := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.incr.aof")); len(m) == 1 {
		return m[0]
	}
	if p := filepath.Join(dir, "appendonly.aof"); fileSize(p) > 0 {
		return p
	}
	t.Fatalf("no append-only file in %s", dir)
	return ""
}

// aofSizes samples the size of the AOF over time.
type aofSizes struct {
	mu  sync.Mutex
	at_ []time.Time
	sz  []int64
}

func (a *aofSizes) sample(path string, every time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			a.mu.Lock()
			a.at_ = append(a.at_, time.Now())
			a.sz = append(a.sz, fileSize(path))
			a.mu.Unlock()
			select {
			case <-done:
				return
			case <-tk.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// at returns the last size sampled at or before when.
func (a *aofSizes) at(when time.Time) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var size int64
	for i, t := range a.at_ {
		if t.After(when) {
			break
		}
		size = a.sz[i]
	}
	return size
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// PostgreSQL stopped with pg_ctl stop -m immediate (a crash: no
// checkpoint) and started again mid-load. Every committed write survives
// crash recovery, so the oracle holds with no allowance.
func TestFaultPostgresRestart(t *testing.T) {
	target, _, pg := backingTarget(t, oracle.Postgres)
	var workers []oracle.WorkerConfig
	for i := range 2 {
		w := workerDefaults(target, fmt.Sprintf("w%d", i))
		w.Listen, w.StateLoad = true, true
		workers = append(workers, w)
	}
	out := runLoad(t, load{target: target, direct: target, workers: workers,
		inject: func(t *testing.T, ctx context.Context, e *env) []string {
			f := e.fleet
			if !waitProgress(ctx, f, K*2/5) {
				return nil
			}
			acked := f.Acked()
			began := time.Now()
			if err := pg.StopImmediate(); err != nil {
				t.Error(err)
				return nil
			}
			time.Sleep(300 * time.Millisecond)
			if err := pg.Start(); err != nil {
				t.Error(err)
			}
			return []string{fmt.Sprintf("pg_ctl stop -m immediate after %d items acknowledged, back after %v", acked, time.Since(began).Round(time.Millisecond))}
		}})
	if len(out.faults) != 1 {
		t.Fatal("the server was not restarted mid-load")
	}
	if len(out.report.Forgiven) > 0 {
		t.Errorf("a PostgreSQL crash lost committed writes: %v", out.report.Forgiven)
	}
}

// The workers' LISTEN connections are killed with pg_terminate_backend
// three times while work arrives in waves. The listeners reconnect,
// LISTEN again and wake their claimers; the claimers keep going.
func TestFaultListenerTerminated(t *testing.T) {
	target, _, pg := backingTarget(t, oracle.Postgres)
	const app = "adk-oracle-listener"
	var workers []oracle.WorkerConfig
	for i := range 2 {
		w := workerDefaults(target, fmt.Sprintf("w%d", i))
		w.Listen, w.ListenerApp = true, app
		// A long safety-net poll: claims after each wave ride the wakes.
		w.PollInterval = 3 * time.Second
		workers = append(workers, w)
	}
	admin := func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, pg.DSN()) }
	listeners := func(ctx context.Context, c *pgx.Conn) ([]int32, error) {
		rows, err := c.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", app)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[int32])
	}
	// A quarter of the load is enqueued before the workers start; each
	// termination is followed by the next quarter, which only a wake
	// (or the 3 s safety net) gets claimed.
	const wave = K / 4
	out := runLoad(t, load{target: target, direct: target, workers: workers, firstWave: wave,
		inject: func(t *testing.T, ctx context.Context, e *env) []string {
			f := e.fleet
			c, err := admin(ctx)
			if err != nil {
				t.Error(err)
				return nil
			}
			defer c.Close(context.Background())
			var faults []string
			for round := range 3 {
				if !waitProgress(ctx, f, wave*(round+1)*9/10) {
					return faults
				}
				old, err := listeners(ctx, c)
				if err != nil || len(old) != len(e.procs) {
					t.Errorf("want %d listener connections, found %v (%v)", len(e.procs), old, err)
					return faults
				}
				if _, err := c.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) pid", old); err != nil {
					t.Error(err)
					return faults
				}
				killed := len(old)
				began := time.Now()
				// Back means: as many listener connections as workers, none
				// of them one that was terminated.
				for {
					now, err := listeners(ctx, c)
					if err == nil && len(now) == len(e.procs) && !slices.ContainsFunc(now, func(p int32) bool { return slices.Contains(old, p) }) {
						break
					}
					if time.Since(began) > 10*time.Second {
						t.Errorf("listeners did not reconnect within 10s (now %v, terminated %v)", now, old)
						return faults
					}
					time.Sleep(10 * time.Millisecond)
				}
				back := time.Since(began)
				next := e.specs[wave*(round+1) : wave*(round+2)]
				if round == 2 {
					next = e.specs[wave*(round+1):]
				}
				enq := time.Now()
				if err := oracle.Enqueue(ctx, e.parent, next); err != nil {
					t.Error(err)
					return faults
				}
				waitProgress(ctx, f, wave*(round+1)+1)
				faults = append(faults, fmt.Sprintf("pg_terminate_backend on %d LISTEN connections (round %d), all back in %v, first item of the next wave acknowledged %v after its enqueue",
					killed, round+1, back.Round(time.Millisecond), time.Since(enq).Round(time.Millisecond)))
			}
			return faults
		}})
	if len(out.faults) != 3 {
		t.Fatalf("expected 3 terminations, made %d", len(out.faults))
	}
	var reconnects int64
	for _, s := range out.fleet.Stats() {
		reconnects += s.Reconnects
		if s.Reconnects < 3 {
			t.Errorf("worker %s: listener reconnected %d times, want 3", s.Worker, s.Reconnects)
		}
	}
	t.Logf("listener reconnects: %d", reconnects)
}

// A TCP proxy between the workers and the server cuts every connection
// every 250 ms. Calls fail, retry, or come back with their reply lost;
// the fencing and the idempotent retries keep every item done once.
//
// A cut waits until the workers have acknowledged as many items since the
// last one as they have slots: where reconnecting and re-preparing take
// most of a 250 ms window (a loaded machine), cuts that came on the clock
// alone could sever every attempt before it finishes, and the test would
// measure the machine instead of what the cuts break.
//
// Waits and cancels are mixed into the load, so signals and cancels cross
// the cuts too: a resume is never delivered twice, a cancel never lost.
func TestFaultNetworkCuts(t *testing.T) {
	cases := []struct {
		name, backing string
		delay         time.Duration
	}{
		{oracle.Redis, oracle.Redis, 0},
		{oracle.Postgres, oracle.Postgres, 0},
		// Every reply 30 ms late: reconnecting and re-preparing take most
		// of the time between two cuts. With cuts on the clock alone the
		// load never finished.
		{"postgres-slow-network", oracle.Postgres, 30 * time.Millisecond},
	}
	for _, c := range cases {
		b := c.backing
		t.Run(c.name, func(t *testing.T) {
			direct, _, _ := backingTarget(t, b)
			var upstream string
			if b == oracle.Redis {
				upstream = direct.Addr
			} else {
				upstream = strings.TrimPrefix(strings.Split(direct.DSN, "/")[2], "postgres@")
			}
			px, err := proxy.Start(upstream)
			if err != nil {
				t.Fatal(err)
			}
			defer px.Close()
			px.Delay(c.delay)
			via := direct
			if b == oracle.Redis {
				via.Addr = px.Addr()
			} else {
				via.DSN = strings.Replace(direct.DSN, upstream, px.Addr(), 1)
			}
			var workers []oracle.WorkerConfig
			for i := range 2 {
				w := workerDefaults(via, fmt.Sprintf("w%d", i))
				// Slow enough that about ten cuts land during the load.
				w.Concurrency = 4
				w.HandlerDelay = 60 * time.Millisecond
				w.Listen = b == oracle.Postgres
				w.StateLoad = true
				workers = append(workers, w)
			}
			out := runLoad(t, load{target: via, direct: direct, workers: workers, lifecycle: true,
				inject: func(t *testing.T, ctx context.Context, e *env) []string {
					f := e.fleet
					slots := 0
					for _, w := range workers {
						slots += w.Concurrency
					}
					last := f.Acked()
					px.CutEvery(250*time.Millisecond, func() bool {
						if n := f.Acked(); n-last >= slots {
							last = n
							return true
						}
						return false
					})
					waitProgress(ctx, f, K*9/10)
					px.StopCutting()
					cuts, severed, accepted := px.Stats()
					return []string{fmt.Sprintf("%d cuts (every 250ms at the most, each after %d more items acknowledged) severing %d connections (%d accepted)", cuts, slots, severed, accepted)}
				}})
			cuts, severed, _ := px.Stats()
			if cuts < 5 || severed == 0 {
				t.Errorf("only %d cuts severing %d connections happened during the load", cuts, severed)
			}
			_ = out
		})
	}
}
