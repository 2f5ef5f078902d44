package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/backoff"
)

// Executor runs SQL. *pgxpool.Pool, *pgxpool.Conn, *pgx.Conn and pgx.Tx
// all satisfy it, as does any wrapper with the same three methods (a
// tracing decorator, say). Give a wrapper Begin(ctx) (pgx.Tx, error) as
// well: the statements that must share a transaction (an enqueue's
// per-tenant lock and its insert, a Fail's lease lock and its settle, a
// park pass) run in one begun on the executor, and without Begin they
// run one by one, each in its own.
type Executor interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// beginner is an executor that can open a transaction (every pgx type).
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// poolCounters are shared by a backing and the adapters Bound derives
// from it.
type poolCounters struct {
	exhausted atomic.Int64
}

// db runs a backing's statements on its executor: through an explicit,
// bounded acquire when it is a pool, directly inside the caller's
// transaction when bound.
type db struct {
	exec           Executor
	pool           *pgxpool.Pool
	bound          bool
	acquireTimeout time.Duration
	connectTimeout time.Duration // a new pool connection's, for acquire
	counters       *poolCounters
	// mode is the executor's default exec mode (0 when it cannot be
	// known), named in the error a transaction pooler's lost prepared
	// statements become.
	mode pgx.QueryExecMode
}

func newDB(exec Executor, acquireTimeout time.Duration) *db {
	d := &db{exec: exec, acquireTimeout: acquireTimeout, counters: &poolCounters{}, mode: execModeOf(exec)}
	if p, ok := exec.(*pgxpool.Pool); ok {
		d.pool = p
		d.connectTimeout = p.Config().ConnConfig.ConnectTimeout
		if d.connectTimeout <= 0 {
			d.connectTimeout = DefaultConnectTimeout
		}
	}
	return d
}

// boundTo returns a db that runs every statement in tx and retries nothing.
func (d *db) boundTo(tx pgx.Tx) *db {
	return &db{exec: tx, bound: true, acquireTimeout: d.acquireTimeout, counters: d.counters, mode: execModeOf(tx)}
}

// execModeOf returns the default exec mode of the pgx executors, 0 for
// any other.
func execModeOf(e Executor) pgx.QueryExecMode {
	switch c := e.(type) {
	case *pgxpool.Pool:
		return c.Config().ConnConfig.DefaultQueryExecMode
	case *pgxpool.Conn:
		return c.Conn().Config().DefaultQueryExecMode
	case *pgx.Conn:
		return c.Config().DefaultQueryExecMode
	case pgx.Tx:
		if c.Conn() != nil {
			return c.Conn().Config().DefaultQueryExecMode
		}
	}
	return 0
}

// retryDelays is the small budget for statements that failed before
// anything reached the server (pgconn.SafeToRetry): a broken idle
// connection in the pool, say. Bound adapters never retry.
var retryDelays = []time.Duration{0, 20 * time.Millisecond, 100 * time.Millisecond}

// run calls fn with a connection. Statements that never reached the
// server are retried within retryDelays unless bound. What a connection
// pooler refused comes back as a *PoolerError, bound or not.
func (d *db) run(ctx context.Context, fn func(ctx context.Context, e Executor) error) error {
	return poolerErr(d.runOnce(ctx, fn), d.mode)
}

func (d *db) runOnce(ctx context.Context, fn func(ctx context.Context, e Executor) error) error {
	if d.bound {
		return fn(ctx, d.exec)
	}
	var err error
	for _, delay := range retryDelays {
		if delay > 0 && !backoff.Sleep(ctx, delay) {
			return ctx.Err()
		}
		err = d.once(ctx, fn)
		if err == nil || !pgconn.SafeToRetry(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (d *db) once(ctx context.Context, fn func(ctx context.Context, e Executor) error) error {
	if d.pool == nil {
		return fn(ctx, d.exec)
	}
	c, err := d.acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return fn(ctx, c)
}

// acquire takes a connection from the pool within acquireTimeout. A
// timeout while every connection is busy is *contract.PoolExhaustedError,
// reported at once: waiting longer would only pile more callers behind an
// over-subscribed pool. A pool that still has room opens a connection
// instead, which may take as long as the connection's ConnectTimeout
// (DefaultConnectTimeout when it has none): a server slow to accept one
// is not an exhausted pool, and if it never does, the error says the
// server is unavailable, which is retryable.
func (d *db) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	timeout := d.acquireTimeout
	if st := d.pool.Stat(); st.TotalConns() < st.MaxConns() {
		timeout = max(timeout, d.connectTimeout)
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := d.pool.Acquire(actx)
	if err == nil {
		return c, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if actx.Err() != nil {
		st := d.pool.Stat()
		if st.TotalConns() >= st.MaxConns() {
			d.counters.exhausted.Add(1)
			return nil, &contract.PoolExhaustedError{Backing: "postgresql", Err: errors.New("no connection free within " + timeout.String())}
		}
		return nil, fmt.Errorf("%w within %v", errConnectSlow, timeout)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		// The connection's own ConnectTimeout can end the attempt just
		// before actx does; its error wraps context.DeadlineExceeded,
		// which would read as the caller's deadline. The cause is kept
		// in the text only.
		return nil, fmt.Errorf("%w: %v", errConnectSlow, err)
	}
	return nil, err
}

// errConnectSlow is a pool with room that could not open a connection in
// time: the server is slow to accept or cannot be reached.
var errConnectSlow = errors.New("pgstore: no connection to the server could be opened")

// tx runs fn in a transaction: the caller's when bound, a new one
// otherwise (committed when fn returns nil).
func (d *db) tx(ctx context.Context, fn func(ctx context.Context, e Executor) error) error {
	if d.bound {
		return poolerErr(fn(ctx, d.exec), d.mode)
	}
	return d.run(ctx, func(ctx context.Context, e Executor) error { return inTx(ctx, e, fn) })
}

// inTx runs fn in a transaction begun on e, or on e itself when it cannot
// begin one.
func inTx(ctx context.Context, e Executor, fn func(ctx context.Context, e Executor) error) error {
	b, ok := e.(beginner)
	if !ok {
		return fn(ctx, e)
	}
	return pgx.BeginFunc(ctx, b, func(tx pgx.Tx) error { return fn(ctx, tx) })
}

// unavailable reports whether err says the server could not be reached
// or is going away, rather than that the statement was wrong.
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) >= 2 && pgErr.Code[:2] == "08": // connection exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // shutdown, crash, cannot connect now
			return true
		case pgErr.Code == "53300": // too many connections
			return true
		case pgErr.Code == "40001", pgErr.Code == "40P01": // serialization failure, deadlock
			return true
		case pgErr.Code == "57014": // statement timeout
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.Timeout(err) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, errConnectSlow)
}

// passThrough reports errors that go back to the caller as they are.
func passThrough(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var (
		v  *contract.ValidationError
		pe *contract.PoolExhaustedError
		ll *contract.LeaseLostError
		sc *contract.StateConflictError
		sp *contract.StatePersistenceError
		qu *contract.QueueUnavailableError
		se *contract.SchemaError
		po *PoolerError
	)
	return errors.Is(err, contract.ErrNotFound) || errors.Is(err, contract.ErrEmpty) || errors.Is(err, contract.ErrFenced) ||
		errors.Is(err, contract.ErrCancelled) || errors.Is(err, contract.ErrNotWaiting) ||
		errors.As(err, &v) || errors.As(err, &pe) || errors.As(err, &ll) || errors.As(err, &sc) ||
		errors.As(err, &sp) || errors.As(err, &qu) || errors.As(err, &se) || errors.As(err, &po)
}

// stateErr maps a driver error for the state store.
func stateErr(err error) error {
	if err == nil || passThrough(err) {
		return err
	}
	if unavailable(err) {
		return &contract.StatePersistenceError{Reason: contract.ReasonUnavailable, Transient: true, Err: err}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "22003" { // numeric value out of range
		return &contract.ValidationError{Field: "Patch.Counters", Problem: "would take a counter past the int64 range; nothing was written"}
	}
	return schemaErr(err)
}

// queueErr maps a driver error for the queue.
func queueErr(err error) error {
	if err == nil || passThrough(err) {
		return err
	}
	if unavailable(err) {
		return &contract.QueueUnavailableError{Err: err}
	}
	return schemaErr(err)
}

// schemaErr turns "the table or column is not there" into the typed
// refusal that says how to fix it.
func schemaErr(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "42P01", "42703", "42883":
			return &contract.SchemaError{Object: "table or column", Found: "missing (" + pgErr.Message + ")", Want: "the tables of ExpectedSchema version " + strconv.Itoa(SchemaVersion),
				Fix: "apply ExpectedSchema with your migration tool (adkctl schema apply in development) and check the StateTables names and search_path"}
		}
	}
	return err
}
