package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"

	"github.com/adkit/adk/modules/contract"
)

// execer runs SQL: *sql.DB, *sql.Conn and *sql.Tx all do.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// stmtCache runs a write transaction's statements, each prepared once
// however often the transaction runs it: a claim of a batch runs the same
// four statements for every item, an enqueue two for every item, and
// SQLite spends more compiling a statement than running it. The
// statements of queries/ are not even compiled once per transaction: they
// come from the backing's statements prepared on the pool (poolStmts),
// which database/sql keeps prepared on each connection that has run them,
// so a connection compiles each of them once in its life.
type stmtCache struct {
	tx     *sql.Tx
	pool   *poolStmts
	stmts  map[string]*sql.Stmt
	missed []string // statements of queries/ the pool lacked
}

func newStmtCache(tx *sql.Tx, pool *poolStmts) *stmtCache {
	return &stmtCache{tx: tx, pool: pool, stmts: map[string]*sql.Stmt{}}
}

func (c *stmtCache) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st := c.stmts[query]; st != nil {
		return st, nil
	}
	var st *sql.Stmt
	if ps := c.pool.lookup(query); ps != nil {
		// Prepared on this transaction's connection already unless the
		// connection is new; then it is prepared here, once.
		st = c.tx.StmtContext(ctx, ps)
	} else {
		var err error
		if st, err = c.tx.PrepareContext(ctx, query); err != nil {
			return nil, err
		}
		if c.pool != nil && pooled(query) {
			c.missed = append(c.missed, query)
		}
	}
	c.stmts[query] = st
	return st, nil
}

func (c *stmtCache) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext prepares like the others; a failed prepare comes back
// through the row, as database/sql's own QueryRowContext does it.
func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return c.tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// close closes the transaction's statements; those of the pool stay
// prepared on the connection.
func (c *stmtCache) close() {
	for _, st := range c.stmts {
		_ = st.Close()
	}
}

// counters are shared by a backing and the adapters Bound derives from
// it.
type counters struct {
	writes     atomic.Int64
	gateWaits  atomic.Int64 // writes that waited for another write of this backing
	busyWaits  atomic.Int64 // BEGIN IMMEDIATEs that waited for another connection's write lock
	busyNanos  atomic.Int64
	busyFailed atomic.Int64 // writes that gave up after the busy timeout
	wakes      atomic.Int64
	lastWake   atomic.Int64
}

// busyWaitFloor is how long a BEGIN IMMEDIATE may take before it counts
// as having waited for another connection's lock; an uncontended one
// takes microseconds.
const busyWaitFloor = time.Millisecond

// db runs a backing's statements: reads on the pool, each write in a
// BEGIN IMMEDIATE transaction on one connection, and every statement
// inside the caller's transaction when bound.
type db struct {
	sql   *sql.DB
	tx    *sql.Tx
	gate  chan struct{} // one writer of this backing at a time
	stats *counters
	pool  *poolStmts
}

func newDB(d *sql.DB) *db {
	return &db{sql: d, gate: make(chan struct{}, 1), stats: &counters{}, pool: &poolStmts{db: d, stmts: map[string]*sql.Stmt{}}}
}

func (d *db) boundTo(tx *sql.Tx) *db {
	return &db{sql: d.sql, tx: tx, gate: d.gate, stats: d.stats, pool: d.pool}
}

// cachedReads returns e, the execer read gave, running its statements
// through statements prepared once on the pool when e is the pool (a
// bound read stays in the caller's transaction). For reads that poll,
// such as FlowStatus, which a dashboard or a sampler calls every few
// milliseconds: compiling a statement costs SQLite more than running it.
func (d *db) cachedReads(e execer) execer {
	if e != execer(d.sql) {
		return e
	}
	return d.pool
}

// poolStmts is an execer over statements prepared once on the pool; a
// *sql.Stmt of a *sql.DB is safe for concurrent use and prepares itself
// again on each connection that runs it, once. Write transactions take
// theirs from it too (lookup, add).
type poolStmts struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// lookup returns the statement of query if it is prepared, else nil (and
// always nil on a nil pool).
func (c *poolStmts) lookup(query string) *sql.Stmt {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts[query]
}

// add prepares the queries on the pool, for the write transactions that
// follow. It runs after a write, never inside one: preparing takes a
// connection of the pool, which a pool of one holds for the write. A
// query that does not prepare is left out (its transaction prepares it
// again and sees the error).
func (c *poolStmts) add(ctx context.Context, queries []string) {
	for _, q := range queries {
		_, _ = c.stmt(ctx, q)
	}
}

func (c *poolStmts) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.stmts[query]; st != nil {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = st
	return st, nil
}

func (c *poolStmts) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (c *poolStmts) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (c *poolStmts) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return c.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

func (d *db) bound() bool { return d.tx != nil }

// read runs fn on the pool, or in the caller's transaction when bound.
func (d *db) read(ctx context.Context, fn func(ctx context.Context, e execer) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d.tx != nil {
		return fn(ctx, d.tx)
	}
	return fn(ctx, d.sql)
}

// write runs fn in a write transaction: the caller's when bound, else a
// BEGIN IMMEDIATE one on a connection of the pool, committed when fn
// returns nil. Writers of one backing take turns in process before they
// ask SQLite for the lock, so they never sleep in SQLite's busy handler
// waiting for each other; the busy timeout is left to writers of other
// processes and other backings on the file.
func (d *db) write(ctx context.Context, fn func(ctx context.Context, e execer) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d.tx != nil {
		// The caller's transaction prepares its own statements: it may
		// come from another *sql.DB on the file, whose transactions
		// cannot run this pool's statements, and adding to the pool would
		// take a second connection while the caller holds the first.
		c := newStmtCache(d.tx, nil)
		defer c.close()
		return fn(ctx, c)
	}
	missed, err := d.writeTx(ctx, fn)
	if len(missed) > 0 {
		d.pool.add(ctx, missed)
	}
	return err
}

// writeTx is write on a connection of the pool, in turn with the
// backing's other writers. It returns the statements of queries/ that fn
// ran and the pool had not prepared yet.
func (d *db) writeTx(ctx context.Context, fn func(ctx context.Context, e execer) error) ([]string, error) {
	select {
	case d.gate <- struct{}{}:
	default:
		d.stats.gateWaits.Add(1)
		select {
		case d.gate <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer func() { <-d.gate }()
	c, err := d.sql.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	d.stats.writes.Add(1)
	start := time.Now()
	tx, end, err := beginImmediate(ctx, c)
	if err != nil {
		if isBusy(err) {
			d.stats.busyFailed.Add(1)
		}
		return nil, err
	}
	if waited := time.Since(start); waited >= busyWaitFloor {
		d.stats.busyWaits.Add(1)
		d.stats.busyNanos.Add(int64(waited))
	}
	defer end()
	cache := newStmtCache(tx, d.pool)
	err = fn(ctx, cache)
	cache.close()
	if err == nil {
		if err = tx.Commit(); err == nil {
			return cache.missed, nil
		}
	}
	if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
		// An interrupted statement may have rolled the transaction back
		// already; either way this connection's state is unknown, so it
		// leaves the pool.
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
	}
	return cache.missed, err
}

// beginImmediate begins a transaction on c; the DSN's _txlock makes it a
// BEGIN IMMEDIATE, which takes the write lock. The caller's context can
// end the wait for the lock, but not the transaction once it has begun:
// its statements still see ctx, and the commit runs whatever ctx says by
// then, since the transaction is whole and half a commit is not a thing.
// (Cancelled in the instant BEGIN returns, the transaction is rolled back
// and beginImmediate fails with ctx's error.) Call end once the
// transaction is over.
func beginImmediate(ctx context.Context, c *sql.Conn) (tx *sql.Tx, end context.CancelFunc, err error) {
	txCtx, end := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, end)
	tx, err = c.BeginTx(txCtx, nil)
	if !stop() && err == nil {
		_ = tx.Rollback()
		err = ctx.Err()
	}
	if err != nil {
		end()
		return nil, nil, err
	}
	return tx, end, nil
}

// sqliteCode returns the primary result code of a SQLite error, 0 for
// any other error.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// SQLite's primary result codes that matter here.
const (
	codeBusy     = 5
	codeLocked   = 6
	codeReadOnly = 8
	codeIOErr    = 10
	codeCorrupt  = 11
	codeFull     = 13
	codeCantOpen = 14
	codeNotADB   = 26
)

func isBusy(err error) bool {
	c := sqliteCode(err)
	return c == codeBusy || c == codeLocked
}

// unavailable reports errors that say the file cannot be written or read
// now (locked past the busy timeout, a full disk, an I/O error), rather
// than that a statement was wrong.
func unavailable(err error) bool {
	switch sqliteCode(err) {
	case codeBusy, codeLocked, codeReadOnly, codeIOErr, codeFull, codeCantOpen:
		return true
	}
	return errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn)
}

// passThrough reports errors that go back to the caller as they are.
func passThrough(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var (
		v  *contract.ValidationError
		ll *contract.LeaseLostError
		sc *contract.StateConflictError
		sp *contract.StatePersistenceError
		qu *contract.QueueUnavailableError
		se *contract.SchemaError
		pe *contract.PreflightError
		co *contract.CounterOverflowError
		sf *contract.StaleFenceError
	)
	return errors.Is(err, contract.ErrNotFound) || errors.Is(err, contract.ErrEmpty) ||
		errors.As(err, &v) || errors.As(err, &ll) || errors.As(err, &sc) || errors.As(err, &sp) ||
		errors.As(err, &qu) || errors.As(err, &se) || errors.As(err, &pe) || errors.As(err, &co) || errors.As(err, &sf)
}

// interrupted turns SQLite's answer to a cancelled call back into the
// context's error.
func interrupted(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && !passThrough(err) {
		return ctx.Err()
	}
	return err
}

// stateErr maps a driver error for the state store.
func stateErr(ctx context.Context, err error) error {
	err = interrupted(ctx, err)
	if err == nil || passThrough(err) {
		return err
	}
	if unavailable(err) {
		return &contract.StatePersistenceError{Reason: contract.ReasonUnavailable, Transient: true, Err: err}
	}
	return schemaErr(err)
}

// queueErr maps a driver error for the queue.
func queueErr(ctx context.Context, err error) error {
	err = interrupted(ctx, err)
	if err == nil || passThrough(err) {
		return err
	}
	if unavailable(err) {
		return &contract.QueueUnavailableError{Err: err}
	}
	return schemaErr(err)
}

// schemaErr names a file that is not a database, or lacks a table, with
// the fix.
func schemaErr(err error) error {
	switch code := sqliteCode(err); {
	case code == codeNotADB, code == codeCorrupt:
		return &contract.SchemaError{Object: "database file", Found: "not a readable SQLite database (" + err.Error() + ")", Want: "a file Open created",
			Fix: "point the backing at the file it created, or at a new path (Open creates the schema in an empty file)"}
	case code == 1 && strings.Contains(err.Error(), "no such "):
		return &contract.SchemaError{Object: "table or column", Found: "missing (" + err.Error() + ")", Want: "the tables of schema version " + strconv.Itoa(SchemaVersion),
			Fix: "open the file with OpenState or OpenQueue, which create the schema in an empty file and verify it in an existing one"}
	}
	return err
}
