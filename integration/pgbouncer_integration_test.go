//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/integration/internal/oracle"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/runner"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
	"github.com/adkit/adk/modules/policy"
)

// PgBouncer in transaction mode between the kit and PostgreSQL: each
// test starts its own (pgstoretest.StartPgBouncer) in front of the shared
// server, with a throwaway role whose settings (search_path, and
// statement_timeout when the test wants one) every server connection
// starts with, since PgBouncer refuses them as startup parameters.

// bouncer is one test's role, schema and PgBouncer.
type bouncer struct {
	pg    *pgstoretest.PgBouncer
	role  *pgstoretest.Role
	admin string // the shared server
}

func newBouncer(t testing.TB, roleSettings map[string]string, c pgstoretest.PgBouncerConfig) *bouncer {
	t.Helper()
	admin := PostgresDSN(t)
	role := pgstoretest.NewRole(t, admin, roleSettings)
	c.Users = map[string]string{role.Name: role.Password}
	return &bouncer{pg: pgstoretest.StartPgBouncer(t, admin, c), role: role, admin: admin}
}

// dsn is the role's connection string through PgBouncer; mode is pgx's
// default_query_exec_mode ("" leaves pgx's default).
func (b *bouncer) dsn(mode string, extra ...string) string {
	if mode != "" {
		extra = append(extra, "default_query_exec_mode="+mode)
	}
	return b.pg.DSN(b.role.Name, b.role.Password, extra...)
}

func (b *bouncer) pool(t testing.TB, mode string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(b.dsn(mode))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// directDSN is the role's connection string straight to PostgreSQL, for
// what needs a session of its own (the listener).
func (b *bouncer) directDSN(t testing.TB) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(b.admin)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("postgres://%s:%s@%s:%d/%s?sslmode=disable", b.role.Name, b.role.Password, cfg.Host, cfg.Port, cfg.Database)
}

func (b *bouncer) listener(t testing.TB, dsn string, s pgstore.ListenerSettings) (*pgstore.Listener, error) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	l, err := pgstore.NewListener(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.Start(ctx); err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, nil
}

// tables creates a fresh set of the schema's tables in the role's schema
// (one per conformance subtest, so each starts empty).
func (b *bouncer) tables(t testing.TB, n int64) pgstore.StateTables {
	t.Helper()
	tb := pgstore.StateTables{Runs: fmt.Sprintf("s%d_runs", n), Work: fmt.Sprintf("s%d_work", n), Turns: fmt.Sprintf("s%d_turns", n), Blobs: fmt.Sprintf("s%d_blobs", n)}
	sql, err := pgstore.Schema(tb)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.role.Exec(ctx, sql); err != nil {
		t.Fatalf("create tables: %v", err)
	}
	// Dropped with the subtest: a schema holding hundreds of them could
	// not be dropped in one transaction (its locks would not fit).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Every relation of the set goes, the work table's satellites
		// (limits, pauses, usage, retention, events, log) and their
		// sequences too, whatever the schema version adds.
		drop := fmt.Sprintf(`DO $$
DECLARE kind text; names text;
BEGIN
	FOREACH kind IN ARRAY ARRAY['r', 'S'] LOOP
		SELECT string_agg(format('%%I', relname), ', ') INTO names FROM pg_class
		WHERE relnamespace = to_regnamespace(current_schema()) AND relkind = kind::"char" AND starts_with(relname, 's%d_');
		IF names IS NOT NULL THEN
			EXECUTE CASE kind WHEN 'r' THEN 'DROP TABLE ' ELSE 'DROP SEQUENCE ' END || names || ' CASCADE';
		END IF;
	END LOOP;
END $$`, n)
		if err := b.role.Exec(ctx, drop); err != nil {
			t.Errorf("drop tables: %v", err)
		}
	})
	return tb
}

// The exec modes that work behind transaction pooling run the
// conformance suites and Bound(tx) through PgBouncer, unchanged: exec
// (the one the docs recommend) and simple_protocol (no prepared
// statements at all; the queue's pipelined batches become one
// multi-statement query) run both suites; cache_describe (unnamed
// statements, described once per client connection) runs the state
// suite and the Bound(tx) round trip, which takes the queue's own
// pipelined enqueue, claim and complete too, to keep the lane short.
// Open's Verify accepts each of them, with the timeout on the role.
func TestPgBouncerSuites(t *testing.T) {
	b := newBouncer(t, map[string]string{"statement_timeout": "30s"}, pgstoretest.PgBouncerConfig{PoolSize: 10})
	ctx := context.Background()
	if err := b.role.Exec(ctx, pgstore.ExpectedSchema); err != nil {
		t.Fatal(err)
	}
	// The listener goes straight to PostgreSQL (LISTEN needs a session);
	// the queues' pools go through PgBouncer.
	l, err := b.listener(t, b.directDSN(t), pgstore.ListenerSettings{})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	for _, mode := range []string{"exec", "simple_protocol", "cache_describe"} {
		t.Run(mode, func(t *testing.T) {
			pool := b.pool(t, mode, 8)
			if _, err := pgstore.OpenState(ctx, pool, nil, pgstore.Settings{}); err != nil {
				t.Fatalf("OpenState through PgBouncer with %s: %v", mode, err)
			}
			if _, err := pgstore.OpenQueue(ctx, pool, nil, pgstore.Settings{}); err != nil {
				t.Fatalf("OpenQueue through PgBouncer with %s: %v", mode, err)
			}
			contracttest.StateStore(t, func(t *testing.T, clock contract.Clock, p contract.RunPolicy) contract.StateStore {
				s, err := pgstore.NewState(pool, clock, pgstore.Settings{Tables: b.tables(t, n.Add(1)), Runs: p})
				if err != nil {
					t.Fatal(err)
				}
				return s
			})
			if mode == "cache_describe" {
				t.Run("Bound", func(t *testing.T) { boundThroughPooler(t, pool, b.tables(t, n.Add(1))) })
				return
			}
			contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
				q, err := pgstore.NewQueue(pool, clock, pgstore.Settings{Tables: b.tables(t, n.Add(1)), Policy: p, Listener: l})
				if err != nil {
					t.Fatal(err)
				}
				return q
			})
			t.Run("Bound", func(t *testing.T) { boundThroughPooler(t, pool, b.tables(t, n.Add(1))) })
		})
	}
}

// boundThroughPooler: a run and the work it queues commit together or
// not at all, and a claim and its complete inside one transaction; then
// the same outside any transaction, where the queue pipelines each
// statement's own BEGIN ... COMMIT.
func boundThroughPooler(t *testing.T, pool *pgxpool.Pool, tb pgstore.StateTables) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := pgstore.Settings{Tables: tb, Policy: policy.Default()}
	state, err := pgstore.NewState(pool, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	queue, err := pgstore.NewQueue(pool, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	write := func(id string, abort bool) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := state.Bound(tx).PutRun(ctx, contract.Run{Tenant: "acme", ID: id, Data: []byte(`{"step":1}`)}); err != nil {
				return err
			}
			if _, err := state.Bound(tx).PatchRun(ctx, "acme", id, contract.Patch{Counters: contract.Counters{Iterations: 1}}); err != nil {
				return err
			}
			if err := queue.Bound(tx).Enqueue(ctx, contract.Item{Tenant: "acme", ID: id + "/next"}); err != nil {
				return err
			}
			if abort {
				return errAbort
			}
			return nil
		})
	}
	if err := write("kept", false); err != nil {
		t.Fatalf("bound write: %v", err)
	}
	if err := write("dropped", true); !errors.Is(err, errAbort) {
		t.Fatalf("aborted bound write: %v", err)
	}
	if r, err := state.GetRun(ctx, "acme", "kept"); err != nil || r.Counters.Iterations != 1 {
		t.Errorf("committed run: %+v, %v", r, err)
	}
	if _, err := state.GetRun(ctx, "acme", "dropped"); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("rolled-back run: %v, want ErrNotFound", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		ls, err := queue.Bound(tx).Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
		if err != nil {
			return err
		}
		if len(ls) != 1 || ls[0].Item.ID != "kept/next" {
			return fmt.Errorf("bound claim got %v, want only kept/next", ls)
		}
		return queue.Bound(tx).Complete(ctx, ls...)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := queue.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10}); !errors.Is(err, contract.ErrEmpty) {
		t.Errorf("claim after the bound complete: %v, want ErrEmpty", err)
	}
	if err := queue.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "a"}, contract.Item{Tenant: "zeta", ID: "b"}); err != nil {
		t.Fatal(err)
	}
	ls, err := queue.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 2 {
		t.Fatalf("claim: %v, %v; want both items", ls, err)
	}
	if err := queue.Complete(ctx, ls...); err != nil {
		t.Fatal(err)
	}
	if n, err := queue.Reap(ctx, ""); err != nil || n != 0 {
		t.Errorf("reap: %d, %v", n, err)
	}
}

var errAbort = errors.New("abort")

// wantPoolerErr fails unless err is the *PoolerError on setting, also
// matched as *contract.PreflightError, with a fix that names fixes.
func wantPoolerErr(t *testing.T, what string, err error, setting string, fixes ...string) {
	t.Helper()
	var pe *pgstore.PoolerError
	var pf *contract.PreflightError
	if !errors.As(err, &pe) || !errors.As(err, &pf) || pe.Setting != setting || contract.Retryable(err) {
		t.Errorf("%s: %T %v; want a non-retryable *pgstore.PoolerError on %s", what, err, err, setting)
		return
	}
	for _, f := range fixes {
		if !strings.Contains(pe.Error(), f) {
			t.Errorf("%s: the error does not say %q: %v", what, f, err)
		}
	}
}

// With pgx's default exec mode (named, cached prepared statements)
// PgBouncer in transaction mode breaks every call: a statement one
// client prepared is taken for the next on the same server connection
// (42P05) and missing on another server connection (26000). Every path
// answers with a *PoolerError that names the fix; Open refuses at once,
// in the first process as in the second.
func TestPgBouncerDefaultExecMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fixes := []string{"42P05", "pgx.QueryExecModeCacheStatement", "pgx.QueryExecModeExec", "max_prepared_statements"}

	t.Run("already-exists", func(t *testing.T) {
		// One server connection: what one client prepared there, the next
		// client prepares again under the same name.
		b := newBouncer(t, map[string]string{"statement_timeout": "30s"}, pgstoretest.PgBouncerConfig{PoolSize: 1})
		if err := b.role.Exec(ctx, pgstore.ExpectedSchema); err != nil {
			t.Fatal(err)
		}
		first, second := b.pool(t, "", 2), b.pool(t, "", 2)
		_, err := pgstore.OpenState(ctx, first, nil, pgstore.Settings{})
		wantPoolerErr(t, "OpenState, first process", err, "DefaultQueryExecMode", "pgx.QueryExecModeExec", "max_prepared_statements")
		_, err = pgstore.OpenQueue(ctx, second, nil, pgstore.Settings{})
		wantPoolerErr(t, "OpenQueue, second process", err, "DefaultQueryExecMode", fixes...)

		s := pgstore.Settings{Policy: policy.Default()}
		st1, _ := pgstore.NewState(first, nil, s)
		st2, _ := pgstore.NewState(second, nil, s)
		q1, _ := pgstore.NewQueue(first, nil, s)
		q2, _ := pgstore.NewQueue(second, nil, s)
		if _, err := st1.GetRun(ctx, "acme", "r"); !errors.Is(err, contract.ErrNotFound) {
			t.Fatalf("first GetRun: %v", err)
		}
		_, err = st2.GetRun(ctx, "acme", "r")
		wantPoolerErr(t, "GetRun", err, "DefaultQueryExecMode", fixes...)
		if _, err := st1.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r"}); err != nil {
			t.Fatalf("first PutRun: %v", err)
		}
		_, err = st2.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r2"})
		wantPoolerErr(t, "PutRun", err, "DefaultQueryExecMode", fixes...)
		if err := q1.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "i"}); err != nil {
			t.Fatalf("first Enqueue: %v", err)
		}
		err = q2.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "i2"})
		wantPoolerErr(t, "Enqueue", err, "DefaultQueryExecMode", fixes...)
		if _, err := q1.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1}); err != nil {
			t.Fatalf("first Claim: %v", err)
		}
		_, err = q2.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
		wantPoolerErr(t, "Claim", err, "DefaultQueryExecMode", fixes...)
		patch := contract.Patch{Counters: contract.Counters{Iterations: 1}}
		err = pgx.BeginFunc(ctx, first, func(tx pgx.Tx) error {
			_, err := st1.Bound(tx).PatchRun(ctx, "acme", "r", patch)
			return err
		})
		if err != nil {
			t.Fatalf("first Bound(tx).PatchRun: %v", err)
		}
		err = pgx.BeginFunc(ctx, second, func(tx pgx.Tx) error {
			_, err := st2.Bound(tx).PatchRun(ctx, "acme", "r", patch)
			return err
		})
		wantPoolerErr(t, "Bound(tx).PatchRun", err, "DefaultQueryExecMode", fixes...)
		// Nothing the refused calls carried was written.
		if r, err := st1.GetRun(ctx, "acme", "r"); err != nil || r.Counters.Iterations != 1 {
			t.Errorf("run after the refused patch: %+v, %v", r, err)
		}
		if _, err := st1.GetRun(ctx, "acme", "r2"); !errors.Is(err, contract.ErrNotFound) {
			t.Errorf("refused PutRun wrote: %v", err)
		}
	})

	t.Run("does-not-exist", func(t *testing.T) {
		// Two server connections: a client's statement is prepared on the
		// first; while another client holds that one, the next call runs on
		// the second, where it was never prepared.
		b := newBouncer(t, map[string]string{"statement_timeout": "30s"}, pgstoretest.PgBouncerConfig{PoolSize: 2})
		if err := b.role.Exec(ctx, pgstore.ExpectedSchema); err != nil {
			t.Fatal(err)
		}
		pool, holder := b.pool(t, "", 2), b.pool(t, "exec", 1)
		st, _ := pgstore.NewState(pool, nil, pgstore.Settings{})
		if _, err := st.GetRun(ctx, "acme", "r"); !errors.Is(err, contract.ErrNotFound) {
			t.Fatalf("first GetRun: %v", err)
		}
		tx, err := holder.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, "SELECT 1"); err != nil { // takes the server connection the GetRun used
			t.Fatal(err)
		}
		_, err = st.GetRun(ctx, "acme", "r")
		wantPoolerErr(t, "GetRun on another server connection", err, "DefaultQueryExecMode", "26000", "pgx.QueryExecModeExec")
	})

	t.Run("describe-exec", func(t *testing.T) {
		// Two round trips per statement: Verify refuses it behind
		// transaction pooling before anything runs.
		b := newBouncer(t, map[string]string{"statement_timeout": "30s"}, pgstoretest.PgBouncerConfig{PoolSize: 2})
		if err := b.role.Exec(ctx, pgstore.ExpectedSchema); err != nil {
			t.Fatal(err)
		}
		_, err := pgstore.OpenState(ctx, b.pool(t, "describe_exec", 2), nil, pgstore.Settings{})
		wantPoolerErr(t, "OpenState with describe_exec", err, "DefaultQueryExecMode", "pgx.QueryExecModeDescribeExec", "pgx.QueryExecModeExec")
	})
}

// A listener pointed at PgBouncer in transaction mode LISTENs without an
// error and would never deliver a notification; it now fails to start,
// saying so, within its probe timeout. The documented set-up (the pool
// through PgBouncer, the listener straight to PostgreSQL) delivers.
func TestPgBouncerListener(t *testing.T) {
	b := newBouncer(t, map[string]string{"statement_timeout": "30s"}, pgstoretest.PgBouncerConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.role.Exec(ctx, pgstore.ExpectedSchema); err != nil {
		t.Fatal(err)
	}
	_, err := b.listener(t, b.dsn("exec"), pgstore.ListenerSettings{ProbeTimeout: time.Second})
	var pe *pgstore.ListenerProbeError
	if !errors.As(err, &pe) || !pe.Pooled || contract.Retryable(err) ||
		!strings.Contains(err.Error(), "point the listener's config at PostgreSQL itself") {
		t.Fatalf("listener through PgBouncer: %v; want a *ListenerProbeError that names the pooler and the fix", err)
	}

	l, err := b.listener(t, b.directDSN(t), pgstore.ListenerSettings{})
	if err != nil {
		t.Fatalf("listener straight to PostgreSQL: %v", err)
	}
	q, err := pgstore.OpenQueue(ctx, b.pool(t, "exec", 4), nil, pgstore.Settings{Listener: l})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(ctx, q.Channel()); err != nil {
		t.Fatal(err)
	}
	wake, stop := q.Subscribe("") // the channel is LISTENed: its wakes are NOTIFYs
	defer stop()
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("an enqueue through PgBouncer did not wake the direct listener's subscriber")
	}
	if st := l.Stats(); !st.Connected || st.Probes != 1 || st.Received == 0 {
		t.Errorf("direct listener stats: %+v", st)
	}
}

// Verify behind PgBouncer checks the statement_timeout every server
// connection starts with, and its advice works there: the startup
// parameter it used to suggest is refused by PgBouncer (and dropped
// when ignored), a SET in AfterConnect is refused, ALTER ROLE ... SET is
// refused until RECONNECT has replaced the older server connections,
// and accepted after.
func TestPgBouncerVerify(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := newBouncer(t, nil, pgstoretest.PgBouncerConfig{PoolSize: 4})
	if err := b.role.Exec(ctx, pgstore.ExpectedSchema); err != nil {
		t.Fatal(err)
	}
	alter := "ALTER ROLE " + pgx.Identifier{b.role.Name}.Sanitize() + " SET statement_timeout"
	wantTimeout := func(what string, err error, value string, says ...string) {
		t.Helper()
		var pf *contract.PreflightError
		if !errors.As(err, &pf) || pf.Setting != "statement_timeout" || !strings.HasPrefix(pf.Value, value) {
			t.Errorf("%s: %v; want *contract.PreflightError on statement_timeout, value %s", what, err, value)
			return
		}
		t.Logf("%s: %v", what, err)
		for _, s := range says {
			if !strings.Contains(pf.Fix, s) {
				t.Errorf("%s: the fix does not say %q: %s", what, s, pf.Fix)
			}
		}
		if strings.Contains(pf.Fix, `RuntimeParams["statement_timeout"] = "30s"`) {
			t.Errorf("%s: behind PgBouncer the fix still suggests the startup parameter: %s", what, pf.Fix)
		}
	}

	// No timeout anywhere.
	pool := b.pool(t, "exec", 4)
	wantTimeout("no timeout", pgstore.Verify(ctx, pool, pgstore.StateTables{}), "0", alter, "RECONNECT")

	// The advice of old, RuntimeParams["statement_timeout"]: PgBouncer
	// refuses the connection, and Open says what to do instead.
	_, err := pgstore.OpenState(ctx, func() *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(b.dsn("exec", "statement_timeout=30s"))
		if err != nil {
			t.Fatal(err)
		}
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}(), nil, pgstore.Settings{})
	wantPoolerErr(t, "RuntimeParams statement_timeout", err, `RuntimeParams["statement_timeout"]`, "unsupported startup parameter", "ALTER ROLE <role> SET statement_timeout", "RECONNECT")
	// Listed in ignore_startup_parameters it is dropped: the connection
	// opens and still has no timeout.
	ignoring := pgstoretest.StartPgBouncer(t, b.admin, pgstoretest.PgBouncerConfig{Users: map[string]string{b.role.Name: b.role.Password},
		Extra: map[string]string{"ignore_startup_parameters": "statement_timeout"}})
	ip, err := pgxpool.New(ctx, ignoring.DSN(b.role.Name, b.role.Password, "default_query_exec_mode=exec", "statement_timeout=30s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ip.Close()
	wantTimeout("ignore_startup_parameters", pgstore.Verify(ctx, ip, pgstore.StateTables{}), "0", alter)

	// A SET in AfterConnect runs on whichever server connection served
	// the connect, and stays there.
	cfg, err := pgxpool.ParseConfig(b.dsn("exec"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET statement_timeout = '30s'")
		return err
	}
	ac, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	for i := range 5 { // connections that each ran their SET, in turn
		wantTimeout(fmt.Sprintf("AfterConnect SET, verify %d", i), pgstore.Verify(ctx, ac, pgstore.StateTables{}), "", alter, "AfterConnect")
	}
	ac.Reset()

	// ALTER ROLE ... SET while PgBouncer holds server connections opened
	// before it: they keep 0 until RECONNECT replaces them.
	held := holdServers(t, ctx, pool, 4)
	held()
	if err := b.role.Set(ctx, "statement_timeout", "30s"); err != nil {
		t.Fatal(err)
	}
	wantTimeout("ALTER ROLE without RECONNECT", pgstore.Verify(ctx, pool, pgstore.StateTables{}), "0 on a server connection opened before", "RECONNECT")
	if _, err := b.pg.Admin(ctx, "RECONNECT"); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Verify(ctx, pool, pgstore.StateTables{}); err != nil {
		t.Fatalf("Verify after ALTER ROLE and RECONNECT: %v", err)
	}
	// Every server connection now starts with it: four transactions at
	// once, on four server connections, all see 30s.
	seen := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			_ = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				<-start
				var pid int64
				var v string
				if err := tx.QueryRow(ctx, "SELECT pg_backend_pid(), current_setting('statement_timeout'), pg_sleep(0.2)::text").Scan(&pid, &v, new(string)); err != nil {
					t.Error(err)
					return err
				}
				mu.Lock()
				seen[fmt.Sprintf("%d=%s", pid, v)]++
				mu.Unlock()
				return nil
			})
		})
	}
	close(start)
	wg.Wait()
	for k := range seen {
		if !strings.HasSuffix(k, "=30s") {
			t.Errorf("a transaction after RECONNECT saw %s", k)
		}
	}
	if len(seen) < 2 {
		t.Errorf("the transactions ran on %d server connections, want several: %v", len(seen), seen)
	}
}

// holdServers makes PgBouncer open n server connections (n transactions
// at once) and returns the func that releases them.
func holdServers(t *testing.T, ctx context.Context, pool *pgxpool.Pool, n int) func() {
	t.Helper()
	var txs []pgx.Tx
	for range n {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		txs = append(txs, tx)
	}
	return func() {
		for _, tx := range txs {
			_ = tx.Rollback(ctx)
		}
	}
}

// The fault oracle through PgBouncer: two worker processes whose pools go
// through PgBouncer in transaction mode (exec mode), one waking on a
// listener straight to PostgreSQL, one poll-only; mid-load PgBouncer
// replaces every server connection (RECONNECT, what the docs ask after
// ALTER ROLE). Nothing is lost or done twice.
func TestPgBouncerFaultLoad(t *testing.T) {
	b := newBouncer(t, map[string]string{"statement_timeout": "20s"}, pgstoretest.PgBouncerConfig{PoolSize: 20})
	if err := b.role.Exec(context.Background(), pgstore.ExpectedSchema); err != nil {
		t.Fatal(err)
	}
	target := oracle.Target{Backing: oracle.Postgres, DSN: b.dsn("exec"), Schema: b.role.Schema, RoleSettings: true, ListenDSN: b.directDSN(t)}
	direct := oracle.Target{Backing: oracle.Postgres, DSN: b.directDSN(t), Schema: b.role.Schema}
	listening := workerDefaults(target, "w-listen")
	listening.Listen = true
	polling := workerDefaults(target, "w-poll")
	// serverPIDs are the backends of PgBouncer's server connections.
	serverPIDs := func(ctx context.Context) map[string]bool {
		rows, err := b.pg.Admin(ctx, "SHOW SERVERS")
		if err != nil {
			t.Error(err)
		}
		pids := map[string]bool{}
		for _, r := range rows {
			pids[r["remote_pid"]] = true
		}
		return pids
	}
	var before map[string]bool
	runLoad(t, load{target: target, direct: direct, workers: []oracle.WorkerConfig{listening, polling},
		inject: func(t *testing.T, ctx context.Context, e *env) []string {
			if !waitProgress(ctx, e.fleet, K/3) {
				return nil
			}
			before = serverPIDs(ctx)
			if _, err := b.pg.Admin(ctx, "RECONNECT"); err != nil {
				t.Errorf("RECONNECT: %v", err)
				return nil
			}
			return []string{fmt.Sprintf("PgBouncer RECONNECT after %d items acknowledged, %d server connections open", e.fleet.Acked(), len(before))}
		}})
	after := serverPIDs(context.Background())
	for pid := range after {
		if before[pid] {
			t.Errorf("server connection %s outlived the RECONNECT (before %v, after %v)", pid, before, after)
		}
	}
	if len(before) == 0 || len(after) == 0 {
		t.Errorf("server connections before the RECONNECT %v, after the load %v: want some of each", before, after)
	}
}

// BenchmarkPgBouncerWakeLatency measures enqueue commit → handler start
// for contract/runner (defaults: 1 s re-poll as the safety net) on a
// pool that goes through PgBouncer in transaction mode: woken by a
// listener straight to PostgreSQL (the documented set-up), and poll-only
// at 50 ms. A listener pointed at PgBouncer itself no longer starts
// (TestPgBouncerListener).
func BenchmarkPgBouncerWakeLatency(b *testing.B) {
	bn := newBouncer(b, map[string]string{"statement_timeout": "30s"}, pgstoretest.PgBouncerConfig{})
	if err := bn.role.Exec(context.Background(), pgstore.ExpectedSchema); err != nil {
		b.Fatal(err)
	}
	pool := bn.pool(b, "exec", 4)
	b.Run("listener-direct", func(b *testing.B) {
		l, err := bn.listener(b, bn.directDSN(b), pgstore.ListenerSettings{})
		if err != nil {
			b.Fatal(err)
		}
		benchWake(b, pool, pgstore.Settings{Listener: l})
	})
	b.Run("poll-50ms", func(b *testing.B) { benchWake(b, pool, pgstore.Settings{PollInterval: 50 * time.Millisecond}) })
}

func benchWake(b *testing.B, pool *pgxpool.Pool, s pgstore.Settings) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q, err := pgstore.NewQueue(pool, nil, s)
	if err != nil {
		b.Fatal(err)
	}
	if s.Listener != nil {
		if err := s.Listener.Listen(ctx, q.Channel()); err != nil {
			b.Fatal(err)
		}
	}
	started := make(chan time.Time, 1)
	r, err := runner.New(q, func(context.Context, contract.Lease) error {
		started <- time.Now()
		return nil
	}, runner.Config{Concurrency: 1})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) })
	defer wg.Wait()
	defer cancel()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		// At a random phase of the poll ticks, so poll-only latency is not
		// an artefact of this loop's own rhythm.
		time.Sleep(time.Duration(rand.Int64N(int64(50 * time.Millisecond))))
		if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: fmt.Sprint(b.Name(), i)}); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		select {
		case at := <-started:
			lat = append(lat, at.Sub(t0))
		case <-time.After(10 * time.Second):
			b.Fatal("no handler start within 10s")
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkPgBouncerClaimComplete measures what the exec mode PgBouncer
// needs costs: batches of 100 enqueued, claimed and completed, straight
// to PostgreSQL with pgx's default mode and with exec, and through
// PgBouncer in transaction mode with exec.
func BenchmarkPgBouncerClaimComplete(b *testing.B) {
	bn := newBouncer(b, map[string]string{"statement_timeout": "30s"}, pgstoretest.PgBouncerConfig{})
	if err := bn.role.Exec(context.Background(), pgstore.ExpectedSchema); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, dsn string }{
		{"direct-cache_statement", bn.directDSN(b)},
		{"direct-exec", bn.directDSN(b) + "&default_query_exec_mode=exec"},
		{"pgbouncer-exec", bn.dsn("exec")},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			cfg, err := pgxpool.ParseConfig(c.dsn)
			if err != nil {
				b.Fatal(err)
			}
			cfg.MaxConns = 4
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			q, err := pgstore.NewQueue(pool, nil, pgstore.Settings{})
			if err != nil {
				b.Fatal(err)
			}
			const batch = 100
			items := make([]contract.Item, batch)
			b.ResetTimer()
			for i := range b.N {
				for j := range items {
					items[j] = contract.Item{Tenant: "acme", ID: fmt.Sprintf("%s-%d-%d", c.name, i, j)}
				}
				if err := q.Enqueue(ctx, items...); err != nil {
					b.Fatal(err)
				}
				for got := 0; got < batch; {
					ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: batch - got})
					if err != nil {
						b.Fatal(err)
					}
					if err := q.Complete(ctx, ls...); err != nil {
						b.Fatal(err)
					}
					got += len(ls)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "items/s")
		})
	}
}
