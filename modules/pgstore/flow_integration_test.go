//go:build integration

package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
	"github.com/adkit/adk/modules/policy"
)

func flowQueue(t *testing.T, d *testDB, clock contract.Clock) *pgstore.PostgresWorkQueue {
	t.Helper()
	q, err := pgstore.NewQueue(d.pool, clock, d.settings(pgstore.Settings{}))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func enqueueN(t *testing.T, q contract.WorkQueue, tenant string, n int) {
	t.Helper()
	items := make([]contract.Item, n)
	for i := range items {
		items[i] = contract.Item{Tenant: tenant, ID: fmt.Sprintf("%s-%04d", tenant, i)}
	}
	if err := q.Enqueue(ctxT(t, time.Minute), items...); err != nil {
		t.Fatal(err)
	}
}

// Limits are rows of the schema: a queue opened afresh on the same tables
// reads back what another set, and the zero Limits removes a row.
func TestFlowLimitsPersist(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q := flowQueue(t, d, nil)
	want := contract.Limits{MaxLeased: 3, Rate: 2.5, Burst: 4, Weight: 2, Budget: contract.Budget{CostMicros: 10, Tokens: 20, Window: time.Minute}}
	def := contract.Limits{MaxLeased: 7}
	if err := q.SetLimits(ctx, "", "acme", want); err != nil {
		t.Fatal(err)
	}
	if err := q.SetLimits(ctx, "", "", def); err != nil {
		t.Fatal(err)
	}
	if err := q.SetLimits(ctx, "", "gone", contract.Limits{Weight: 5}); err != nil {
		t.Fatal(err)
	}
	if err := q.SetLimits(ctx, "", "gone", contract.Limits{}); err != nil {
		t.Fatal(err)
	}
	reopened := flowQueue(t, d, nil)
	got, err := reopened.Limits(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.Queue != contract.DefaultQueue || got.Default != def || len(got.Tenants) != 1 || got.Tenants["acme"] != want {
		t.Fatalf("Limits after reopening = %+v, want default %+v and acme %+v", got, def, want)
	}
	if !reopened.Capabilities().Flow {
		t.Error("Capabilities().Flow is false")
	}
}

// Ten claimers against a tenant capped at 2 never hold three live leases:
// a sampler counts the tenant's leased rows in the database throughout.
func TestFlowCapUnderConcurrency(t *testing.T) {
	d := newTestDB(t, withMaxConns(14))
	ctx := ctxT(t, 2*time.Minute)
	q := flowQueue(t, d, nil)
	if err := q.SetLimits(ctx, "", "capped", contract.Limits{MaxLeased: 2}); err != nil {
		t.Fatal(err)
	}
	enqueueN(t, q, "capped", 150)
	enqueueN(t, q, "other", 150)
	var stop atomic.Bool
	var maxSeen atomic.Int64
	var samples atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			var n int64
			if err := d.pool.QueryRow(ctx, "SELECT count(*) FROM adk_work WHERE tenant = 'capped' AND state = 'leased'").Scan(&n); err != nil {
				t.Error(err)
				return
			}
			samples.Add(1)
			if n > maxSeen.Load() {
				maxSeen.Store(n)
			}
		}
	})
	var done atomic.Int64
	var claimers sync.WaitGroup
	for w := range 10 {
		claimers.Go(func() {
			for done.Load() < 300 {
				ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: fmt.Sprint("w", w), LeaseFor: time.Minute, Max: 1 + w%3})
				if errors.Is(err, contract.ErrEmpty) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if err := q.Complete(ctx, ls...); err != nil {
					t.Error(err)
					return
				}
				done.Add(int64(len(ls)))
			}
		})
	}
	claimers.Wait()
	stop.Store(true)
	wg.Wait()
	if got := maxSeen.Load(); got > 2 {
		t.Fatalf("the capped tenant held %d live leases at once, cap 2", got)
	}
	if done.Load() != 300 {
		t.Fatalf("completed %d of 300", done.Load())
	}
	t.Logf("%d samples, at most %d leases", samples.Load(), maxSeen.Load())
}

// A cap several batches wide holds too, when claims serve the tenant
// several items at a time and it still has room after each: every
// claimer keeps its last batch until its next claim returns, so the
// leases of 10 claimers pile up against the cap of 8 (a bound on the
// count that left out the leases committed after the claim's snapshot
// let it reach 10).
func TestFlowWideCapUnderConcurrency(t *testing.T) {
	const limit = 8
	d := newTestDB(t, withMaxConns(14))
	ctx := ctxT(t, 2*time.Minute)
	q := flowQueue(t, d, nil)
	if err := q.SetLimits(ctx, "", "capped", contract.Limits{MaxLeased: limit}); err != nil {
		t.Fatal(err)
	}
	enqueueN(t, q, "capped", 300)
	var stop atomic.Bool
	var maxSeen, samples atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			var n int64
			if err := d.pool.QueryRow(ctx, "SELECT count(*) FROM adk_work WHERE tenant = 'capped' AND state = 'leased'").Scan(&n); err != nil {
				t.Error(err)
				return
			}
			samples.Add(1)
			if n > maxSeen.Load() {
				maxSeen.Store(n)
			}
		}
	})
	var done atomic.Int64
	var claimers sync.WaitGroup
	for w := range 10 {
		claimers.Go(func() {
			var held []contract.Lease
			settle := func() bool {
				if err := q.Complete(ctx, held...); err != nil {
					t.Error(err)
					return false
				}
				done.Add(int64(len(held)))
				held = nil
				return true
			}
			for done.Load() < 300 {
				ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: fmt.Sprint("w", w), LeaseFor: time.Minute, Max: 1 + w%3})
				switch {
				case errors.Is(err, contract.ErrEmpty):
					if len(held) > 0 && !settle() {
						return
					}
					time.Sleep(time.Millisecond)
					continue
				case err != nil:
					t.Error(err)
					return
				}
				if len(held) > 0 && !settle() {
					return
				}
				held = ls
			}
			if len(held) > 0 {
				settle()
			}
		})
	}
	claimers.Wait()
	stop.Store(true)
	wg.Wait()
	if got := maxSeen.Load(); got > limit {
		t.Fatalf("the capped tenant held %d live leases at once, cap %d", got, limit)
	}
	if done.Load() != 300 {
		t.Fatalf("completed %d of 300", done.Load())
	}
	t.Logf("%d samples, at most %d leases", samples.Load(), maxSeen.Load())
}

// A lease stops counting against the cap when it expires, before any
// reap; the claim that meets the cap says so in its report.
func TestFlowCapFreesAtExpiry(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	clock := contracttest.NewFakeClock(time.Time{})
	q := flowQueue(t, d, clock)
	if err := q.SetLimits(ctx, "", "", contract.Limits{MaxLeased: 1}); err != nil {
		t.Fatal(err)
	}
	enqueueN(t, q, "acme", 3)
	if _, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: 10 * time.Second, Max: 5}); err != nil {
		t.Fatal(err)
	}
	rep := &contract.ClaimReport{}
	if _, err := q.Claim(contract.WithClaimReport(ctx, rep), contract.ClaimRequest{LeaseFor: 10 * time.Second, Max: 5}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("claim at the cap: %v, want ErrEmpty", err)
	}
	if rep.PassedOver != 1 || rep.Held[contract.HeldCap] != 1 || !rep.RetryAt.IsZero() {
		t.Errorf("report at the cap = %+v", rep)
	}
	clock.Advance(11 * time.Second)
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: 10 * time.Second, Max: 5})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim after the lease expired: %d leases, %v; want 1", len(ls), err)
	}
	st, err := q.FlowStatus(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].Leased != 1 || st[0].Held != contract.HeldCap || st[0].Own {
		t.Errorf("FlowStatus = %+v", st)
	}
}

// A rate of 2 per second with a burst of 2 serves 2 at once, then one per
// half second, and reports when the next token comes; the other tenant
// fills the batch meanwhile.
func TestFlowRate(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	clock := contracttest.NewFakeClock(time.Time{})
	q := flowQueue(t, d, clock)
	if err := q.SetLimits(ctx, "", "slow", contract.Limits{Rate: 2}); err != nil {
		t.Fatal(err)
	}
	enqueueN(t, q, "slow", 100)
	enqueueN(t, q, "fast", 100)
	count := func(ls []contract.Lease) (n int) {
		for _, l := range ls {
			if l.Item.Tenant == "slow" {
				n++
			}
		}
		return n
	}
	rep := &contract.ClaimReport{}
	ls, err := q.Claim(contract.WithClaimReport(ctx, rep), contract.ClaimRequest{LeaseFor: time.Hour, Max: 10})
	if err != nil || len(ls) != 10 || count(ls) != 2 {
		t.Fatalf("first claim: %d leases (%d slow), %v; want 10 with 2 slow", len(ls), count(ls), err)
	}
	if rep.Held[contract.HeldRate] != 1 || !rep.RetryAt.Equal(clock.Now().Add(500*time.Millisecond)) {
		t.Errorf("report = %+v, want a rate hold until %v", rep, clock.Now().Add(500*time.Millisecond))
	}
	total := 2
	for range 60 {
		clock.Advance(500 * time.Millisecond)
		ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Hour, Max: 3})
		if err != nil {
			t.Fatal(err)
		}
		total += count(ls)
	}
	if total < 60 || total > 62 {
		t.Errorf("served %d slow items over 30 s at 2/s, want 60..62", total)
	}
}

// Weight 3 against weight 1, one item per claim and in batches: 3:1.
func TestFlowWeight(t *testing.T) {
	for _, batch := range []int{1, 7} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			d := newTestDB(t)
			ctx := ctxT(t, time.Minute)
			q := flowQueue(t, d, nil)
			if err := q.SetLimits(ctx, "", "heavy", contract.Limits{Weight: 3}); err != nil {
				t.Fatal(err)
			}
			enqueueN(t, q, "heavy", 400)
			enqueueN(t, q, "light", 400)
			served := map[string]int{}
			for n := 0; n < 400; {
				ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Hour, Max: min(batch, 400-n)})
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range ls {
					served[l.Item.Tenant]++
				}
				n += len(ls)
			}
			if h := served["heavy"]; h < 297 || h > 303 {
				t.Errorf("served %v, want 300:100 ± 3", served)
			}
		})
	}
}

// A tenant over budget is parked until the window slides, while the other
// drains; the report says until when.
func TestFlowBudget(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	clock := contracttest.NewFakeClock(time.Time{})
	q := flowQueue(t, d, clock)
	b := contract.Budget{CostMicros: 100, Window: 10 * time.Second}
	if err := q.SetLimits(ctx, "", "spender", contract.Limits{Budget: b}); err != nil {
		t.Fatal(err)
	}
	enqueueN(t, q, "spender", 5)
	enqueueN(t, q, "other", 5)
	if err := q.Charge(ctx, "", "spender", contract.Usage{CostMicros: 100}); err != nil {
		t.Fatal(err)
	}
	rep := &contract.ClaimReport{}
	ls, err := q.Claim(contract.WithClaimReport(ctx, rep), contract.ClaimRequest{LeaseFor: time.Hour, Max: 10})
	if err != nil || len(ls) != 5 {
		t.Fatalf("claim over budget: %d leases, %v; want the other's 5", len(ls), err)
	}
	for _, l := range ls {
		if l.Item.Tenant != "other" {
			t.Fatalf("served %s over budget", l.Item.Tenant)
		}
	}
	// Charged in slot s (1 s wide): it counts through slot s+10 and is out
	// of the window from slot s+11.
	wantUntil := clock.Now().Truncate(time.Second).Add(11 * time.Second)
	if rep.Held[contract.HeldBudget] != 1 || !rep.RetryAt.Equal(wantUntil) {
		t.Errorf("report = %+v, want a budget hold until %v", rep, wantUntil)
	}
	st, err := q.FlowStatus(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[1].Tenant != "spender" || st[1].Held != contract.HeldBudget || st[1].BudgetUsed.CostMicros != 100 || !st[1].Until.Equal(wantUntil) {
		t.Errorf("FlowStatus = %+v", st)
	}
	clock.Set(wantUntil.Add(-time.Millisecond))
	if _, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Hour, Max: 10}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("claim just before the release: %v, want ErrEmpty", err)
	}
	clock.Set(wantUntil)
	if ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Hour, Max: 10}); err != nil || len(ls) != 5 {
		t.Fatalf("claim after the release: %d leases, %v; want 5", len(ls), err)
	}
}

// SetLimits wakes the queue's claimers, and so does the end of a lease of
// a queue with a capped tenant.
func TestFlowWakes(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q, err := pgstore.NewQueue(d.pool, nil, d.settings(pgstore.Settings{Listener: d.listener(t, pgstore.ListenerSettings{})}))
	if err != nil {
		t.Fatal(err)
	}
	wake, stop := q.Subscribe("")
	defer stop()
	drain := func() {
		for {
			select {
			case <-wake:
			case <-time.After(200 * time.Millisecond):
				return
			}
		}
	}
	waitWake := func(what string) {
		t.Helper()
		select {
		case <-wake:
		case <-time.After(5 * time.Second):
			t.Fatalf("no wake after %s", what)
		}
	}
	drain()
	if err := q.SetLimits(ctx, "", "acme", contract.Limits{MaxLeased: 1}); err != nil {
		t.Fatal(err)
	}
	waitWake("SetLimits")
	enqueueN(t, q, "acme", 2)
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 2})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %d leases, %v; want 1 (cap 1)", len(ls), err)
	}
	drain()
	if err := q.Complete(ctx, ls...); err != nil {
		t.Fatal(err)
	}
	waitWake("Complete of a capped tenant's lease")
}

// The cap is kept across claim statements chosen from a stale guess: a
// queue that had no limits when this process last claimed it is claimed
// with the limits another process set since.
func TestFlowLimitsSetElsewhere(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q := flowQueue(t, d, nil)
	other := flowQueue(t, d, nil)
	enqueueN(t, q, "acme", 5)
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %d, %v", len(ls), err)
	}
	if err := other.SetLimits(ctx, "", "acme", contract.Limits{MaxLeased: 2}); err != nil {
		t.Fatal(err)
	}
	ls, err = q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 5})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim after another process capped the tenant at 2: %d leases, %v; want 1", len(ls), err)
	}
	if err := other.SetLimits(ctx, "", "acme", contract.Limits{}); err != nil {
		t.Fatal(err)
	}
	ls, err = q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 5})
	if err != nil || len(ls) != 3 {
		t.Fatalf("claim after the cap was removed: %d leases, %v; want 3", len(ls), err)
	}
}

// Verify meets a version 1 database and names the migration; a version 1
// database with data, migrated, passes Verify, keeps its items, and runs
// the queue suite.
func TestSchemaMigrationFromV1(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	v1 := func(t *testing.T) *testDB { return atSchema(t, pgstore.SchemaV1(pgstore.StateTables{})) }
	d := v1(t)
	err := pgstore.Verify(ctx, d.pool, pgstore.StateTables{})
	var se *contract.SchemaError
	if !errors.As(err, &se) || se.Found != "1" || !strings.Contains(se.Fix, pgstore.MigrationFile) {
		t.Fatalf("Verify on version 1 = %v, want a SchemaError naming %s", err, pgstore.MigrationFile)
	}
	// Data written by the version 1 release: a queued item, a leased one,
	// a dead letter.
	if _, err := d.pool.Exec(ctx, `
		INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at) VALUES ('default', 'acme', 'q1', 'queued', now() - interval '1 minute', now());
		INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at, worker, lease_expires_at, token) VALUES ('default', 'acme', 'l1', 'leased', now(), now(), 'w', now() + interval '1 hour', 1);
		INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at, dead_at) VALUES ('default', 'acme', 'd1', 'dead', now(), now(), now());
		INSERT INTO adk_queue_turns (queue, tenant) VALUES ('default', 'acme')`); err != nil {
		t.Fatal(err)
	}
	migrateFrom(t, d, 1)
	m, _ := pgstore.Migration(pgstore.StateTables{}, 1)
	if err := pgstore.Verify(ctx, d.pool, pgstore.StateTables{}); err != nil {
		t.Fatalf("Verify after the migration: %v", err)
	}
	if _, err := d.pool.Exec(ctx, m); err == nil {
		t.Error("the migration ran twice")
	}
	q := flowQueue(t, d, nil)
	if err := q.SetLimits(ctx, "", "acme", contract.Limits{MaxLeased: 2}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 5})
	if err != nil || len(ls) != 1 || ls[0].Item.ID != "q1" {
		t.Fatalf("claim after the migration: %v, %v; want q1 (the leased item counts against the cap)", ls, err)
	}
	// The migrated shape is the expected one: compare the catalogs.
	fresh := newTestDB(t)
	if got, want := catalog(t, d), catalog(t, fresh); got != want {
		t.Errorf("migrated schema differs from ExpectedSchema:\nmigrated:\n%s\nexpected:\n%s", got, want)
	}
	t.Run("suite", func(t *testing.T) {
		contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p contractPolicy) contract.WorkQueue {
			d := v1(t)
			migrateFrom(t, d, 1)
			q, err := pgstore.NewQueue(d.pool, clock, d.settings(pgstore.Settings{Policy: p}))
			if err != nil {
				t.Fatal(err)
			}
			return q
		})
	})
}

// catalog describes the tables, columns, indexes and functions of d's
// schema, for comparing two schemas.
func catalog(t *testing.T, d *testDB) string {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	var out []string
	for _, q := range []string{
		`SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
		 FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY 1`,
		`SELECT indexname || ' ' || regexp_replace(indexdef, ' ON [a-z0-9_]+\.', ' ON ') FROM pg_indexes WHERE schemaname = current_schema() ORDER BY 1`,
		`SELECT p.proname || ' ' || pg_get_function_arguments(p.oid) || ' ' || p.provolatile::text FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace ORDER BY 1`,
		`SELECT c.relname || ' ' || coalesce(array_to_string(c.reloptions, ','), '') FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' ORDER BY 1`,
	} {
		rows, err := d.pool.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		rows.Close()
	}
	return strings.Join(out, "\n")
}

type contractPolicy = policy.Policy

// pgstoretestBare is a test schema without pgstore's tables.
func pgstoretestBare(t *testing.T) *testDB {
	t.Helper()
	dsn := pgstoretest.DSN(t)
	s := pgstoretest.TestSchema(t, dsn, &pgstoretest.SchemaOptions{Bare: true})
	return &testDB{dsn: dsn, schema: s.Name, pool: s.Pool(t, withMaxConns(8)), s: s}
}

// atSchema is a test schema holding sql, an earlier version's schema,
// for a migration test.
func atSchema(t *testing.T, sql string) *testDB {
	t.Helper()
	d := pgstoretestBare(t)
	// Not the test's context: the suites after a migration outlast it.
	if _, err := d.pool.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
	return d
}

// migrateFrom applies to d the up-migration from schema version from.
func migrateFrom(t *testing.T, d *testDB, from int) {
	t.Helper()
	m, err := pgstore.Migration(pgstore.StateTables{}, from)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.pool.Exec(context.Background(), m); err != nil {
		t.Fatalf("migration from version %d: %v", from, err)
	}
}

// With 100,000 queued rows and limits on every tenant (a default cap, a
// rate and a budget of some), the flow claim, under the settings of a
// claim's transaction, reads every table through its indexes, report and
// all: no sequential scan anywhere in the plan, and the items through
// adk_work_ready.
func TestFlowClaimPlanUsesIndex(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, 3*time.Minute)
	if _, err := d.pool.Exec(ctx, `
		INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at)
		SELECT 'default', 'tenant-' || (g % 50), 'item-' || g, 'queued', now() - interval '1 hour', now()
		FROM generate_series(1, 100000) g;
		INSERT INTO adk_queue_turns (queue, tenant) SELECT DISTINCT 'default', 'tenant-' || (g % 50) FROM generate_series(1, 50) g;
		INSERT INTO adk_work_limits (queue, tenant, max_leased) VALUES ('default', '', 1000);
		INSERT INTO adk_work_limits (queue, tenant, rate, budget_cost, budget_window_ms)
		SELECT 'default', 'tenant-' || g, 1000, 1000000, 60000 FROM generate_series(0, 9) g;
		INSERT INTO adk_work_usage (queue, tenant, at_ms, slot_ms, cost_micros)
		SELECT 'default', 'tenant-' || (g % 10), (extract(epoch from now()) * 1000)::bigint / 6000 * 6000 - g * 6000, 6000, 5 FROM generate_series(1, 200) g;
		ANALYZE adk_work; ANALYZE adk_queue_turns; ANALYZE adk_work_limits; ANALYZE adk_work_usage`); err != nil {
		t.Fatal(err)
	}
	sql := pgstore.ClaimFlowSQL(pgstore.StateTables{})
	for _, max := range []int{1, 100, 1000} {
		tx, err := d.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The settings of a claim's own transaction (claim.go).
		if _, err := tx.Exec(ctx, "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_sort', 'off', true), set_config('jit', 'off', true)"); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF) "+sql, "default", now, max, "w", now.Add(time.Minute), contract.UnixMicros(now), now.UnixMilli(), true)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		_ = tx.Rollback(ctx)
		plan := strings.Join(lines, "\n")
		for _, table := range []string{"adk_work", "adk_queue_turns", "adk_work_limits", "adk_work_usage"} {
			if strings.Contains(plan, "Seq Scan on "+table+" ") {
				t.Errorf("flow claim of %d plans a sequential scan of %s:\n%s", max, table, plan)
			}
		}
		if !strings.Contains(plan, "Index Scan using adk_work_ready on adk_work") || strings.Contains(plan, "using adk_work_pkey") {
			t.Errorf("flow claim of %d does not walk adk_work_ready:\n%s", max, plan)
		}
		if testing.Verbose() && max == 100 {
			t.Logf("flow claim plan, batch of 100:\n%s", plan)
		}
	}
}

// Usage is kept under a budget only, and a change of window starts the
// count afresh (as memstore keeps it).
func TestFlowChargeKeptUnderBudget(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	clock := contracttest.NewFakeClock(time.Time{})
	q := flowQueue(t, d, clock)
	if err := q.Charge(ctx, "", "acme", contract.Usage{CostMicros: 50}); err != nil {
		t.Fatal(err)
	}
	b := contract.Budget{CostMicros: 100, Window: time.Minute}
	if err := q.SetLimits(ctx, "", "acme", contract.Limits{Budget: b}); err != nil {
		t.Fatal(err)
	}
	used := func() contract.Usage {
		t.Helper()
		st, err := q.FlowStatus(ctx, "")
		if err != nil || len(st) != 1 {
			t.Fatalf("FlowStatus = %+v, %v", st, err)
		}
		return st[0].BudgetUsed
	}
	if u := used(); u != (contract.Usage{}) {
		t.Fatalf("usage charged without a budget counts: %+v", u)
	}
	for range 3 {
		if err := q.Charge(ctx, "", "acme", contract.Usage{CostMicros: 30, Tokens: 1}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(7 * time.Second)
	}
	if u := used(); u != (contract.Usage{CostMicros: 90, Tokens: 3}) {
		t.Fatalf("usage = %+v, want 90 micros and 3 tokens", u)
	}
	b.Window = 2 * time.Minute
	if err := q.SetLimits(ctx, "", "acme", contract.Limits{Budget: b}); err != nil {
		t.Fatal(err)
	}
	if err := q.Charge(ctx, "", "acme", contract.Usage{CostMicros: 5}); err != nil {
		t.Fatal(err)
	}
	if u := used(); u != (contract.Usage{CostMicros: 5}) {
		t.Fatalf("usage after the window changed = %+v, want the new charge only", u)
	}
	var rows int
	if err := d.pool.QueryRow(ctx, "SELECT count(*) FROM adk_work_usage").Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d usage rows (%v), want 1: the old window's were not deleted", rows, err)
	}
}

// The report reads the rotation no further than the walk did: a claim of
// one inside a transaction, served by the first tenant, leaves the turn
// row of the gated tenant behind it unlocked, so other claimers can serve
// that tenant while the transaction is open (a report that read on would
// lock it until commit).
func TestFlowReportLocksOnlyWhatTheWalkReached(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q := flowQueue(t, d, nil)
	enqueueN(t, q, "first", 2)
	enqueueN(t, q, "second", 2)
	if err := q.SetLimits(ctx, "", "second", contract.Limits{MaxLeased: 5}); err != nil {
		t.Fatal(err)
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rep := &contract.ClaimReport{}
	ls, err := q.Bound(tx).Claim(contract.WithClaimReport(ctx, rep), contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
	if err != nil || len(ls) != 1 || ls[0].Item.Tenant != "first" {
		t.Fatalf("claim of 1 = %v, %v; want one item of tenant first", ls, err)
	}
	if rep.PassedOver != 0 {
		t.Errorf("report = %+v, want nobody passed over", rep)
	}
	var n int
	err = d.pool.QueryRow(ctx, "SELECT count(*) FROM (SELECT 1 FROM adk_queue_turns WHERE tenant = 'second' FOR UPDATE NOWAIT) x").Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("locking the turn row of tenant second while the claim's transaction is open: %d rows, %v; want it free", n, err)
	}
}

// A claim of a paused queue reports the queue's pause and nothing else:
// the tenants paused on their own are not walked, so none is counted as
// passed over (as memstore and Redis report it).
func TestFlowPausedQueueReportsOnlyThePause(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q := flowQueue(t, d, nil)
	enqueueN(t, q, "a", 2)
	enqueueN(t, q, "b", 2)
	if err := q.Pause(ctx, "", "b"); err != nil {
		t.Fatal(err)
	}
	if err := q.Pause(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	rep := &contract.ClaimReport{}
	if _, err := q.Claim(contract.WithClaimReport(ctx, rep), contract.ClaimRequest{LeaseFor: time.Minute, Max: 4}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("claim of a paused queue: %v, want ErrEmpty", err)
	}
	if !rep.QueuePaused || rep.PassedOver != 0 || len(rep.Held) != 0 {
		t.Fatalf("report = %+v, want the queue paused and nobody passed over", rep)
	}
}

// A tenant the claim statement's snapshot already shows held (at its cap,
// out of rate tokens, over its budget) is passed over without its turn
// row being locked, so a claim behind many held tenants writes no row
// lock for any of them; the report still gives each one's reason, and a
// rate hold its end.
func TestFlowHeldInSnapshotTakesNoLock(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	clock := contracttest.NewFakeClock(time.Time{})
	q := flowQueue(t, d, clock)
	limits := map[string]contract.Limits{
		"capped": {MaxLeased: 1},
		"rated":  {Rate: 0.5, Burst: 1},
		"spent":  {Budget: contract.Budget{CostMicros: 10, Window: time.Minute}},
	}
	for tenant, l := range limits {
		if err := q.SetLimits(ctx, "", tenant, l); err != nil {
			t.Fatal(err)
		}
		enqueueN(t, q, tenant, 2)
	}
	if err := q.Charge(ctx, "", "spent", contract.Usage{CostMicros: 10}); err != nil {
		t.Fatal(err)
	}
	// The first claim takes capped's one lease and rated's one token.
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Hour, Max: 10})
	if err != nil || len(ls) != 2 {
		t.Fatalf("first claim = %d leases, %v; want capped's and rated's first items", len(ls), err)
	}
	enqueueN(t, q, "free", 1)

	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rep := &contract.ClaimReport{}
	ls, err = q.Bound(tx).Claim(contract.WithClaimReport(ctx, rep), contract.ClaimRequest{LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 1 || ls[0].Item.Tenant != "free" {
		t.Fatalf("claim behind the held tenants = %v, %v; want free's item alone", ls, err)
	}
	want := map[contract.HeldReason]int{contract.HeldCap: 1, contract.HeldRate: 1, contract.HeldBudget: 1}
	if rep.PassedOver != 3 || fmt.Sprint(rep.Held) != fmt.Sprint(want) || !rep.RetryAt.Equal(clock.Now().Add(2*time.Second)) {
		t.Errorf("report = %+v; want cap, rate and budget holds, the rate's ending in 2s", rep)
	}
	var n int
	err = d.pool.QueryRow(ctx, "SELECT count(*) FROM (SELECT 1 FROM adk_queue_turns WHERE tenant IN ('capped', 'rated', 'spent') FOR UPDATE NOWAIT) x").Scan(&n)
	if err != nil || n != 3 {
		t.Fatalf("locking the held tenants' turn rows while the claim's transaction is open: %d rows, %v; want all three free", n, err)
	}
}
