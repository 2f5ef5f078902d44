//go:build integration

package pgstore_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

// explainedConn is a connection of its own whose statements auto_explain
// logs as notices, for tests that read the plan a statement ran.
type explainedConn struct {
	*pgx.Conn
	mu      sync.Mutex
	notices []string
}

// newExplainedConn connects to d with params added to the connection's
// runtime parameters; the connection is closed when the test ends.
func newExplainedConn(t testing.TB, ctx context.Context, d *testDB, params map[string]string) *explainedConn {
	t.Helper()
	e := &explainedConn{}
	cfg := d.connConfig(t)
	for k, v := range params {
		cfg.RuntimeParams[k] = v
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		e.mu.Lock()
		e.notices = append(e.notices, n.Message)
		e.mu.Unlock()
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	e.Conn = conn
	return e
}

// newExplainedQueue is a work queue of d on a connection of its own (see
// newExplainedConn), so a test can read the plans its statements ran.
func newExplainedQueue(t testing.TB, ctx context.Context, d *testDB, params map[string]string) (*explainedConn, *pgstore.PostgresWorkQueue) {
	t.Helper()
	conn := newExplainedConn(t, ctx, d, params)
	q, err := pgstore.NewQueue(conn.Conn, contract.SystemClock{}, d.settings(pgstore.Settings{}))
	if err != nil {
		t.Fatal(err)
	}
	return conn, q
}

// explain has auto_explain log every later statement of the connection
// (with ANALYZE figures when analyze is set) and forgets earlier notices.
func (e *explainedConn) explain(t testing.TB, ctx context.Context, analyze bool) {
	t.Helper()
	stmts := []string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0", "SET auto_explain.log_level = notice", "SET client_min_messages = notice"}
	if analyze {
		stmts = append(stmts, "SET auto_explain.log_analyze = on")
	}
	for _, s := range stmts {
		if _, err := e.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	e.mu.Lock()
	e.notices = nil
	e.mu.Unlock()
}

// plan returns the last plan logged since explain (or the last plan call)
// whose text contains marker, and forgets the notices; the test fails
// when there is none.
func (e *explainedConn) plan(t testing.TB, marker string) string {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	var plan string
	for _, n := range e.notices {
		if strings.Contains(n, marker) {
			plan = n
		}
	}
	e.notices = nil
	if plan == "" {
		t.Fatalf("auto_explain logged no plan with %q", marker)
	}
	return plan
}

// lockScan returns the rows and loops of the first analyzed LockRows node
// in part, a piece of plan; the test fails when there is none.
func lockScan(t *testing.T, part, plan string) (rows, loops int) {
	t.Helper()
	m := regexp.MustCompile(`LockRows [^\n]*\(actual [^)]*rows=(\d+) loops=(\d+)\)`).FindStringSubmatch(part)
	if m == nil {
		t.Fatalf("no analyzed locking scan where one was expected:\n%s", plan)
	}
	rows, _ = strconv.Atoi(m[1])
	loops, _ = strconv.Atoi(m[2])
	return rows, loops
}

// A plan cached while the queue was small must not scan the whole queue
// once it is deep. The test connection forces generic plans, the worst
// case: the plan is made on 40 rows, the queue then grows to 50,000
// without an ANALYZE, and auto_explain shows what the next claim ran.
// The settings that keep the plan on the indexes and TIDs must not
// outlive the claim's own transaction.
func TestCachedClaimPlanSurvivesGrowth(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, 2*time.Minute)
	conn, q := newExplainedQueue(t, ctx, d, map[string]string{"plan_cache_mode": "force_generic_plan"})
	items := make([]contract.Item, 40)
	for i := range items {
		items[i] = contract.Item{Tenant: fmt.Sprintf("t%d", i%4), ID: fmt.Sprint(i)}
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if _, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at)
		SELECT 'default', 't' || (g % 4), 'bulk-' || g, 'queued', now() - interval '1 hour', now()
		FROM generate_series(1, 50000) g`); err != nil {
		t.Fatal(err)
	}
	conn.explain(t, ctx, false)
	if _, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET auto_explain.log_min_duration = -1"); err != nil {
		t.Fatal(err)
	}
	plan := conn.plan(t, "WITH RECURSIVE")
	if strings.Contains(plan, "Seq Scan on adk_work") || !strings.Contains(plan, "Tid Scan on adk_work") {
		t.Errorf("the cached claim plan does not reach the leased rows by TID alone:\n%s", plan)
	}
	// Reaching a tenant's items by primary key and sorting them reads
	// all of them at every step of the walk.
	if strings.Contains(plan, "using adk_work_pkey") || !strings.Contains(plan, "using adk_work_ready") {
		t.Errorf("the cached claim plan does not walk adk_work_ready in order:\n%s", plan)
	}
	var generic int64
	if err := conn.QueryRow(ctx, `SELECT generic_plans FROM pg_prepared_statements
		WHERE statement LIKE '%WITH RECURSIVE%' AND statement NOT LIKE '%pg_prepared_statements%'`).Scan(&generic); err != nil {
		t.Fatalf("the claim is not a prepared statement of the connection: %v", err)
	}
	if generic == 0 {
		t.Errorf("the claim never ran a generic plan; the test does not cover a cached plan")
	}
	var seqscan, jit string
	if err := conn.QueryRow(ctx, "SELECT current_setting('enable_seqscan'), current_setting('jit')").Scan(&seqscan, &jit); err != nil {
		t.Fatal(err)
	}
	if seqscan != "on" || jit != "on" {
		t.Errorf("after the claims the connection has enable_seqscan=%s jit=%s; the claim's settings must stay in its transaction", seqscan, jit)
	}
	if st := conn.PgConn().TxStatus(); st != 'I' {
		t.Errorf("connection left in transaction status %q", st)
	}
}

// A claim inside the caller's transaction changes none of its settings
// and is still planned with the actual parameters each time.
func TestBoundClaimKeepsCallerSettings(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, 2*time.Minute)
	q := newQueue(t, d, pgstore.Settings{})
	items := make([]contract.Item, 20)
	for i := range items {
		items[i] = contract.Item{Tenant: "acme", ID: fmt.Sprint(i)}
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL jit = on"); err != nil {
		t.Fatal(err)
	}
	bq := q.Bound(tx)
	got := 0
	for range 10 {
		ls, err := bq.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 2})
		if err != nil {
			t.Fatal(err)
		}
		got += len(ls)
	}
	if got != 20 {
		t.Errorf("bound claims took %d items, want 20", got)
	}
	var seqscan, jit string
	if err := tx.QueryRow(ctx, "SELECT current_setting('enable_seqscan'), current_setting('jit')").Scan(&seqscan, &jit); err != nil {
		t.Fatal(err)
	}
	if seqscan != "on" || jit != "on" {
		t.Errorf("bound claims changed the caller's transaction: enable_seqscan=%s jit=%s", seqscan, jit)
	}
	var prepared int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%WITH RECURSIVE%' AND statement NOT LIKE '%pg_prepared_statements%'`).Scan(&prepared); err != nil {
		t.Fatal(err)
	}
	if prepared != 0 {
		t.Errorf("a bound claim left %d named prepared statements; it must run unnamed, planned each time", prepared)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Rolled back: every item is claimable again, on the pool.
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 20 {
		t.Errorf("after rollback the pool claimed %d items, want 20", len(ls))
	}
}

// A Complete plan cached while few items were leased must reach each
// item by its key once many are: through the primary key, never by
// filtering the queue's leased rows (adk_work_leased) or a sequential
// scan.
func TestCachedCompletePlanSurvivesGrowth(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, 2*time.Minute)
	conn, q := newExplainedQueue(t, ctx, d, map[string]string{"plan_cache_mode": "force_generic_plan"})
	items := make([]contract.Item, 40)
	for i := range items {
		items[i] = contract.Item{Tenant: "acme", ID: fmt.Sprint(i)}
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Complete(ctx, ls...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at, worker, lease_expires_at, token)
		SELECT 'default', 'bulk', 'b-' || g, 'leased', now(), now(), 'w', now() + interval '1 hour', -g
		FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 5})
	if err != nil {
		t.Fatal(err)
	}
	conn.explain(t, ctx, false)
	if err := q.Complete(ctx, ls...); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET auto_explain.log_min_duration = -1"); err != nil {
		t.Fatal(err)
	}
	plan := conn.plan(t, "DELETE FROM")
	// The DELETE itself; the wake after it counts a capped tenant's
	// leases through adk_work_leased, as it should.
	if i := strings.Index(plan, "CTE woke"); i >= 0 {
		plan = plan[:i]
	}
	if strings.Contains(plan, "using adk_work_leased") || strings.Contains(plan, "Seq Scan on adk_work") || !strings.Contains(plan, "using adk_work_pkey") {
		t.Errorf("the cached Complete plan does not reach each item by its key:\n%s", plan)
	}
}
