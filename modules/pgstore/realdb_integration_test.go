//go:build integration

package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
)

func newQueue(t *testing.T, d *testDB, s pgstore.Settings) *pgstore.PostgresWorkQueue {
	t.Helper()
	q, err := pgstore.NewQueue(d.pool, contract.SystemClock{}, d.settings(s))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Ten workers on ten connections claiming at once take ten different
// items, round after round.
func TestTenWorkersTakeTenDifferentItems(t *testing.T) {
	d := newTestDB(t, withMaxConns(12))
	q := newQueue(t, d, pgstore.Settings{})
	ctx := ctxT(t, 2*time.Minute)
	const workers, rounds = 10, 30
	for round := range rounds {
		var items []contract.Item
		for i := range workers {
			items = append(items, contract.Item{Tenant: fmt.Sprintf("t%d", i%3), ID: fmt.Sprintf("r%d-%d", round, i)})
		}
		if err := q.Enqueue(ctx, items...); err != nil {
			t.Fatal(err)
		}
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			mu    sync.Mutex
			got   = map[contract.ItemKey]string{}
			errs  []error
		)
		for w := range workers {
			wg.Go(func() {
				<-start
				ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: fmt.Sprint("w", w), LeaseFor: time.Minute, Max: 1})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				for _, l := range ls {
					if prev, dup := got[l.Key()]; dup {
						errs = append(errs, fmt.Errorf("round %d: %v claimed by %s and %s", round, l.Key(), prev, l.Worker))
					}
					got[l.Key()] = l.Worker
				}
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			t.Error(err)
		}
		if len(got) != workers {
			t.Fatalf("round %d: %d workers took %d distinct items, want %d", round, workers, len(got), workers)
		}
	}
}

// A transaction that fails leaves neither the run nor the work it queued.
func TestFailedTransactionLeavesNothing(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	store, err := pgstore.NewState(d.pool, nil, pgstore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, d, pgstore.Settings{})

	boom := errors.New("the step after the writes failed")
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := store.Bound(tx).PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-1", Data: json.RawMessage(`{"step":1}`)}); err != nil {
			return err
		}
		if err := q.Bound(tx).Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-1"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("transaction: %v, want the failure", err)
	}
	if _, err := store.GetRun(ctx, "acme", "run-1"); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("GetRun after rollback: %v, want ErrNotFound", err)
	}
	if _, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 10}); !errors.Is(err, contract.ErrEmpty) {
		t.Errorf("Claim after rollback: %v, want ErrEmpty", err)
	}

	// A statement that fails inside the transaction is not retried: the
	// bound store reports it and the transaction is aborted.
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := store.Bound(tx).PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-2"}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT 1/0"); err == nil {
			t.Error("division by zero succeeded")
		}
		_, err := store.Bound(tx).GetRun(ctx, "acme", "run-2")
		if err == nil {
			t.Error("GetRun in an aborted transaction succeeded")
		}
		return err
	})
	if err == nil {
		t.Fatal("aborted transaction committed")
	}
	if _, err := store.GetRun(ctx, "acme", "run-2"); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("GetRun after abort: %v, want ErrNotFound", err)
	}

	// And the same transaction committed keeps both.
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := store.Bound(tx).PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-3"}); err != nil {
			return err
		}
		return q.Bound(tx).Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-3"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.GetRun(ctx, "acme", "run-3"); err != nil {
		t.Errorf("GetRun after commit: %v", err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 1 || ls[0].Item.ID != "run-3" {
		t.Errorf("Claim after commit: %v, %v; want run-3", ls, err)
	}
}

// A bound enqueue wakes claimers only when the transaction commits.
func TestBoundEnqueueWakesOnCommit(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	l := d.listener(t, pgstore.ListenerSettings{})
	q := newQueue(t, d, pgstore.Settings{Listener: l})
	wake, stop := q.Subscribe("default")
	defer stop()

	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := q.Bound(tx).Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
		t.Fatal("woken before the transaction committed")
	case <-time.After(200 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake within 5s of the commit")
	}
}

// Killing the listener's backend: it reconnects, LISTENs again, sends a
// synthetic wake, and a claimer woken by the next enqueue gets the item.
func TestListenerSurvivesTerminateBackend(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	l := d.listener(t, pgstore.ListenerSettings{})
	q := newQueue(t, d, pgstore.Settings{Listener: l})
	wake, stop := q.Subscribe("default")
	defer stop()
	raw, stopRaw := l.Subscribe(d.schema)
	defer stopRaw()

	pid := l.Stats().BackendPID
	if pid == 0 {
		t.Fatal("listener reports no backend")
	}
	var killed bool
	if err := d.pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", int32(pid)).Scan(&killed); err != nil || !killed {
		t.Fatalf("pg_terminate_backend(%d): %v, %v", pid, killed, err)
	}
	// The synthetic wake arrives on both subscriptions.
	deadline := time.After(10 * time.Second)
	for synthetic := false; !synthetic; {
		select {
		case n := <-raw:
			synthetic = n.Synthetic
		case <-deadline:
			t.Fatalf("no synthetic wake after the backend was terminated; stats %+v", l.Stats())
		}
	}
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("the queue's subscriber got no wake after the reconnect")
	}
	st := l.Stats()
	if st.Reconnects != 1 || !st.Connected || st.BackendPID == pid || st.BackendPID == 0 {
		t.Errorf("stats after reconnect: %+v (old pid %d)", st, pid)
	}
	if got := q.Stats().ListenerReconnects; got != 1 {
		t.Errorf("queue Stats().ListenerReconnects = %d, want 1", got)
	}
	// The channel was LISTENed again: an enqueue wakes the claimer, which
	// gets the item.
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "after-reconnect"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake for an enqueue after the reconnect: the channel was not LISTENed again")
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
	if err != nil || len(ls) != 1 || ls[0].Item.ID != "after-reconnect" {
		t.Fatalf("claim after wake: %v, %v", ls, err)
	}
}

// A payload of 9000 bytes is refused before the round trip: nothing is
// sent, nothing is received.
func TestNotifyPayloadLimit(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	l := d.listener(t, pgstore.ListenerSettings{})
	ch, stop := l.Subscribe("adk_big")
	defer stop()
	if err := l.Listen(ctx, "adk_big"); err != nil {
		t.Fatal(err)
	}
	err := pgstore.Notify(ctx, d.pool, "adk_big", strings.Repeat("x", 9000))
	var tooLarge *pgstore.PayloadTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Size != 9000 || tooLarge.Limit != pgstore.MaxNotifyPayload {
		t.Fatalf("Notify(9000 bytes) = %v, want *PayloadTooLargeError{Size: 9000}", err)
	}
	if !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("%v does not match contract.ErrInvalid", err)
	}
	// The largest accepted payload goes through, and is the first thing
	// the subscriber sees: the refused one never reached the server.
	if err := pgstore.Notify(ctx, d.pool, "adk_big", strings.Repeat("y", pgstore.MaxNotifyPayload)); err != nil {
		t.Fatalf("Notify(%d bytes): %v", pgstore.MaxNotifyPayload, err)
	}
	select {
	case n := <-ch:
		if len(n.Payload) != pgstore.MaxNotifyPayload || n.Payload[0] != 'y' {
			t.Fatalf("first notification has %d bytes starting %q; the refused payload was sent", len(n.Payload), n.Payload[:1])
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the largest payload was not delivered")
	}
}

// An exhausted pool is reported at once as *contract.PoolExhaustedError.
func TestPoolExhausted(t *testing.T) {
	d := newTestDB(t, withMaxConns(1))
	ctx := ctxT(t, time.Minute)
	s, err := pgstore.NewState(d.pool, nil, pgstore.Settings{AcquireTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	q, err := pgstore.NewQueue(d.pool, nil, d.settings(pgstore.Settings{AcquireTimeout: 100 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	held, err := d.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = s.GetRun(ctx, "acme", "r")
	took := time.Since(start)
	var pe *contract.PoolExhaustedError
	if !errors.As(err, &pe) || pe.Backing != "postgresql" {
		t.Fatalf("GetRun with the pool held: %v, want *PoolExhaustedError", err)
	}
	if contract.Retryable(err) {
		t.Error("PoolExhaustedError claims to be retryable")
	}
	if took > time.Second {
		t.Errorf("PoolExhaustedError after %v; want it at the 100ms acquire timeout, not after retries", took)
	}
	if _, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1}); !errors.As(err, &pe) {
		t.Fatalf("Claim with the pool held: %v, want *PoolExhaustedError", err)
	}
	if got := q.Stats().PoolExhausted; got != 1 {
		t.Errorf("queue Stats().PoolExhausted = %d, want 1", got)
	}
	held.Release()
	if _, err := s.GetRun(ctx, "acme", "r"); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("GetRun after release: %v, want ErrNotFound", err)
	}
	// A caller whose own context ends while waiting gets its context error.
	held, _ = d.pool.Acquire(ctx)
	defer held.Release()
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := s.GetRun(short, "acme", "r"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GetRun with a 20ms context: %v, want context.DeadlineExceeded", err)
	}
}

// Verify refuses a wrong schema version, a missing schema, a missing table
// and statement_timeout = 0, and only reads.
func TestVerify(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	if err := pgstore.Verify(ctx, d.pool, pgstore.StateTables{}); err != nil {
		t.Fatalf("Verify on the expected schema: %v", err)
	}
	if _, err := pgstore.OpenState(ctx, d.pool, nil, pgstore.Settings{}); err != nil {
		t.Fatalf("OpenState: %v", err)
	}

	// statement_timeout = 0 on the connection.
	conn, err := pgx.ConnectConfig(ctx, func() *pgx.ConnConfig {
		c := d.connConfig(t)
		c.RuntimeParams["statement_timeout"] = "0"
		return c
	}())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	err = pgstore.Verify(ctx, conn, pgstore.StateTables{})
	var pe *contract.PreflightError
	if !errors.As(err, &pe) || pe.Setting != "statement_timeout" || pe.Value != "0" || pe.Fix == "" {
		t.Fatalf("Verify with statement_timeout 0: %v, want *PreflightError on statement_timeout", err)
	}
	if _, err := pgstore.OpenQueue(ctx, conn, nil, pgstore.Settings{}); !errors.As(err, &pe) {
		t.Errorf("OpenQueue with statement_timeout 0: %v, want *PreflightError", err)
	}

	// A table renamed away.
	var se *contract.SchemaError
	if err := pgstore.Verify(ctx, d.pool, pgstore.StateTables{Runs: "other_runs"}); !errors.As(err, &se) || !strings.Contains(se.Object, "other_runs") {
		t.Errorf("Verify with a missing runs table: %v, want *SchemaError naming it", err)
	}

	// A version this release was not written for.
	if _, err := d.pool.Exec(ctx, "UPDATE adk_schema SET version = 99"); err != nil {
		t.Fatal(err)
	}
	err = pgstore.Verify(ctx, d.pool, pgstore.StateTables{})
	if !errors.As(err, &se) || se.Found != "99" || se.Want != fmt.Sprint(pgstore.SchemaVersion) {
		t.Fatalf("Verify on version 99: %v, want *SchemaError found 99 want %d", err, pgstore.SchemaVersion)
	}
	q := newQueue(t, d, pgstore.Settings{})
	h, err := q.Health(ctx)
	if err != nil || h.Status() != contract.HealthFail {
		t.Errorf("Health on version 99: %v, %v; want fail", h.Status(), err)
	}

	// No schema at all.
	if _, err := d.pool.Exec(ctx, "DROP TABLE adk_schema"); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Verify(ctx, d.pool, pgstore.StateTables{}); !errors.As(err, &se) || se.Object != "adk_schema" || se.Found != "missing" {
		t.Fatalf("Verify without adk_schema: %v, want *SchemaError adk_schema missing", err)
	}
}

// Health reports the work table's vacuum statistics and settings.
func TestHealthVacuum(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q := newQueue(t, d, pgstore.Settings{Listener: d.listener(t, pgstore.ListenerSettings{})})
	h, err := q.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A server with autovacuum off (this machine's CI server runs so) is
	// red in the settings check whatever the table says; TestHealthAutovacuumOff
	// pins that on a server of its own.
	var serverAuto string
	if err := d.pool.QueryRow(ctx, "SHOW autovacuum").Scan(&serverAuto); err != nil {
		t.Fatal(err)
	}
	for _, c := range h.Checks {
		want := contract.HealthOK
		if serverAuto == "off" && strings.Contains(c.Name, "autovacuum settings") {
			want = contract.HealthFail
		}
		if c.Status != want {
			t.Errorf("Health on a fresh schema (server autovacuum %s): %s is %s, want %s: %+v", serverAuto, c.Name, c.Status, want, c)
		}
	}
	for _, k := range []string{"adk_work last autovacuum", "adk_work live tuples", "adk_work dead tuples", "index adk_work_ready", "listener reconnects"} {
		if _, ok := h.Details[k]; !ok {
			t.Errorf("Health.Details lacks %q: %v", k, h.Details)
		}
	}
	if _, err := d.pool.Exec(ctx, "ALTER TABLE adk_work RESET (autovacuum_vacuum_cost_delay)"); err != nil {
		t.Fatal(err)
	}
	h, err = q.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range h.Checks {
		if strings.Contains(c.Name, "autovacuum settings") {
			found = true
			want := contract.HealthWarn
			if serverAuto == "off" {
				want = contract.HealthFail
			}
			if c.Status != want || !strings.Contains(c.Fix, "autovacuum_vacuum_cost_delay=0") {
				t.Errorf("after RESET the settings check is %+v, want warn naming cost_delay", c)
			}
		}
	}
	if !found {
		t.Error("no autovacuum settings check")
	}
	if strings.Contains(fmt.Sprint(h), "password") {
		t.Error("health mentions a password")
	}
}

// Fifty tenants and ten claimers taking batches at once: no deadlock, no
// item twice, every item once.
func TestManyTenantsManyClaimersNoDeadlock(t *testing.T) {
	d := newTestDB(t, withMaxConns(12))
	ctx := ctxT(t, 3*time.Minute)
	q := newQueue(t, d, pgstore.Settings{})
	const tenants, each, claimers = 50, 40, 10
	var items []contract.Item
	for tn := range tenants {
		for i := range each {
			items = append(items, contract.Item{Tenant: fmt.Sprintf("tenant-%02d", tn), ID: fmt.Sprint("i", i)})
		}
	}
	for i := 0; i < len(items); i += 500 {
		if err := q.Enqueue(ctx, items[i:min(i+500, len(items))]...); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[contract.ItemKey]bool{}
		errs []error
	)
	for c := range claimers {
		wg.Go(func() {
			for {
				ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: fmt.Sprint("c", c), LeaseFor: time.Minute, Max: 25})
				if errors.Is(err, contract.ErrEmpty) {
					return
				}
				if err == nil {
					err = q.Complete(ctx, ls...)
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				for _, l := range ls {
					if seen[l.Key()] {
						errs = append(errs, fmt.Errorf("%v claimed twice", l.Key()))
					}
					seen[l.Key()] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err) // a deadlock shows here as SQLSTATE 40P01
	}
	if len(seen) != len(items) {
		t.Errorf("claimed %d distinct items, want %d", len(seen), len(items))
	}
}

// With 100,000 queued rows the claim, full and lean, reads adk_work
// through its indexes: no sequential scan of adk_work anywhere in the
// plan.
func TestClaimPlanUsesIndex(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, 3*time.Minute)
	if _, err := d.pool.Exec(ctx, `
		INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at)
		SELECT 'default', 'tenant-' || (g % 50), 'item-' || g, 'queued', now() - interval '1 hour', now()
		FROM generate_series(1, 100000) g;
		INSERT INTO adk_queue_turns (queue, tenant) SELECT DISTINCT 'default', 'tenant-' || (g % 50) FROM generate_series(1, 50) g;
		ANALYZE adk_work; ANALYZE adk_queue_turns`); err != nil {
		t.Fatal(err)
	}
	for _, claimSQL := range []string{pgstore.ClaimSQL(pgstore.StateTables{}), pgstore.ClaimLeanSQL(pgstore.StateTables{})} {
		for _, max := range []int{1, 100, 1000} {
			tx, err := d.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF) "+claimSQL, "default", time.Now(), max, "w", time.Now().Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			_ = tx.Rollback(ctx)
			plan := strings.Join(lines, "\n")
			if strings.Contains(plan, "Seq Scan on adk_work ") {
				t.Errorf("claim of %d plans a sequential scan of adk_work:\n%s", max, plan)
			}
			if !strings.Contains(plan, "Index Scan using adk_work_ready on adk_work") {
				t.Errorf("claim of %d does not use adk_work_ready:\n%s", max, plan)
			}
			if testing.Verbose() && max == 100 {
				t.Logf("claim plan, batch of 100:\n%s", plan)
			}
		}
	}
	// And the statements that settle a batch.
	for name, sql := range map[string]string{"complete": pgstore.CompleteSQL(pgstore.StateTables{}), "lean complete": pgstore.CompleteLeanSQL(pgstore.StateTables{})} {
		args := []any{[]string{"default"}, []string{"tenant-1"}, []string{"item-1"}, []int64{1}, time.Now()}
		if name == "lean complete" {
			args = args[:4] // it needs no time
		}
		rows, err := d.pool.Query(ctx, "EXPLAIN (COSTS OFF) "+sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		// The work table itself, by its exact name (the history tables
		// beside it are small and may be read whole).
		if plan := strings.Join(lines, "\n"); regexp.MustCompile(`Seq Scan on adk_work( |$)`).MatchString(plan) {
			t.Errorf("%s plans a sequential scan of adk_work:\n%s", name, plan)
		}
	}
}

// Tokens come from a sequence: a claim rolled back does not give its token
// to the next claim of the same item.
func TestTokenNotReusedAfterRollback(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q := newQueue(t, d, pgstore.Settings{})
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rolled, err := q.Bound(tx).Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ls[0].Token == rolled[0].Token {
		t.Fatalf("token %d issued twice (once in a rolled-back claim)", ls[0].Token)
	}
	if err := q.Complete(ctx, rolled[0]); err == nil {
		t.Fatal("the rolled-back lease completed the item")
	}
}

var _ = contracttest.FakeEpoch

// A patch that would overflow a counter is refused as bad input and
// changes nothing.
func TestPatchOverflowRefused(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	s, err := pgstore.NewState(d.pool, nil, pgstore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{CostMicros: 1 << 62}}); err != nil {
		t.Fatal(err)
	}
	_, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{CostMicros: 1 << 62}, Status: "x"})
	if !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("overflowing patch: %v, want a validation error", err)
	}
	r, err := s.GetRun(ctx, "acme", "r")
	if err != nil || r.Counters.CostMicros != 1<<62 || r.Status != "" || r.Version != 2 {
		t.Fatalf("after the refused patch: %+v, %v", r, err)
	}
}
