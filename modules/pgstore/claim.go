package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A claim's own transaction runs queries/claim_settings.sql first, in the
// same round trip (see plannedRows), for three reasons:
//
//   - enable_seqscan = off: the claim is a prepared statement, and after
//     five executions PostgreSQL may switch to a generic plan costed on
//     the statistics of that moment. On a queue that was small then (or
//     never analyzed) a sequential scan of the work table looks cheapest
//     for the leased UPDATE, and the plan keeps scanning the whole queue
//     once it is deep, until autoanalyze invalidates it: measured, a
//     claim of 10 took 45 ms at 300,000 queued instead of 0.7 ms. No
//     step of the claim needs a sequential scan (pick walks adk_work_ready,
//     the UPDATE reaches its rows by TID, the rotation and the bump use
//     the turns indexes), so with it disabled every plan, generic or not,
//     is the one that stays flat in the depth of the queue. Forcing a
//     custom plan per claim (plan_cache_mode = force_custom_plan) was
//     measured too: just as flat, but planning this statement costs about
//     0.8 ms per claim, which halved throughput at small batches.
//   - enable_sort = off: with no statistics yet (a table loaded seconds
//     ago) every tenant looks like one row, and pick may reach a tenant's
//     items through the primary key and sort them instead of walking
//     adk_work_ready in order: each recursive step then reads all the
//     tenant's items (measured: 2.4 s for a claim of 100 with 30,000
//     queued). The index already gives the order, so no step of pick
//     needs a sort; the sorts the statement does need (rotation order,
//     batch order) are still made, disabled or not.
//   - jit = off: the recursive walk is estimated at ten times the
//     rotation's rows, so with many tenants, or a turns table without
//     statistics yet, the estimate passes jit_above_cost and every claim
//     would spend tens of milliseconds compiling a query that runs in one.

// Both claims also run with plan_cache_mode = force_generic_plan
// (claim.sql since schema version 3, when its per-tenant pick grew the
// priority ranges of queries/fragments/pick_items.sql): left to choose,
// PostgreSQL planned a claim of 1 over 50 tenants afresh on every call,
// and planning cost more than the claim (p50 of 600 claims in one
// process: 0.83 ms with the previous claim.sql left to choose, 1.28 ms
// with this one; under the generic plan 0.25 and 0.29 ms). The settings
// above are what make the generic plan safe.
//
// The flow claim (queries/claim_flow.sql) runs
// queries/claim_flow_settings.sql: the same three, and plan_cache_mode =
// force_generic_plan. Left to choose, PostgreSQL compares the generic
// plan's estimated cost with the custom plans' average, and the walk of
// the rotation is estimated from the turns table's size: with thousands
// of tenants the generic plan looked dearer and every claim was planned
// afresh, about 2 ms of planning for a 1 ms execution (measured: a claim
// of 10 and its Complete, 10,000 tenants with limits, 3.3 ms p50 against
// 1.1 ms with the generic plan; the execution itself is flat in the
// tenants). The three settings above are what make the generic plan safe
// whatever the statistics were when it was made.

// Complete runs queries/complete_settings.sql (enable_seqscan = off) the
// same way, for the same reason: a plan cached while the table was small
// must not turn every Complete into a scan of the queue. The lean
// Complete (queries.go) runs queries/complete_lean_settings.sql, which
// also forces its generic plan: it is one DELETE that reaches each row
// through the primary key, and left to choose PostgreSQL planned it afresh
// on every call.

// batchConn is a connection that can pipeline a batch: the
// queue begins and commits a statement's transaction itself only on a
// connection that is outside any transaction.
type batchConn interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// ownedConn returns e as a connection a statement may run its own
// transaction on: a pool connection or a plain connection that is idle,
// never the caller's transaction.
func (d *db) ownedConn(e Executor) (batchConn, func() byte, bool) {
	if d.bound {
		return nil, nil, false
	}
	switch c := e.(type) {
	case *pgxpool.Conn:
		return c, func() byte { return c.Conn().PgConn().TxStatus() }, c.Conn().PgConn().TxStatus() == 'I'
	case *pgx.Conn:
		return c, func() byte { return c.PgConn().TxStatus() }, c.PgConn().TxStatus() == 'I'
	}
	return nil, nil, false
}

// stmt is one statement of a pipelined transaction; scan, when set,
// reads the rows it returns.
type stmt struct {
	sql  string
	args []any
	scan func(pgx.Rows) error
	// settings is the statement of planner settings it runs under when it
	// runs alone (plannedRows); "" for none. A prelude runs under its
	// statement's.
	settings string
}

// run runs the statement on e, outside a batch.
func (s stmt) run(ctx context.Context, e Executor) error {
	if s.scan == nil {
		_, err := e.Exec(ctx, s.sql, s.args...)
		return err
	}
	rows, err := e.Query(ctx, s.sql, s.args...)
	if err != nil {
		return err
	}
	return readRows(rows, s.scan)
}

// runAfter runs sql with args after the prelude statements, handing each
// row to scan: in a transaction of its own on e, in one pipelined round
// trip (plannedRows), when own is set; otherwise in e's transaction, one
// statement after another.
func (d *db) runAfter(ctx context.Context, e Executor, own bool, sql string, args []any, scan func(pgx.Rows) error, prelude ...stmt) error {
	if own {
		return d.plannedRows(ctx, e, sql, "", args, scan, prelude...)
	}
	for _, s := range prelude {
		if err := s.run(ctx, e); err != nil {
			return err
		}
	}
	return stmt{sql: sql, args: args, scan: scan}.run(ctx, e)
}

// plannedRows runs sql with args on e, after settings (local to the
// statement's transaction; "" for none) and the prelude statements, and
// hands each row to scan. Claim, Complete and Enqueue run through it.
//
// On a connection the queue owns, the statements run in a transaction of
// their own, all in one pipelined batch (BEGIN, settings, prelude, sql,
// COMMIT): one round trip, as a lone statement would be.
//
// Inside the caller's transaction (Bound, or an executor that is a
// transaction) a SET LOCAL would outlive the statement and change the
// caller's later statements, so settings are left out and sql instead
// runs as an unnamed statement (pgx.QueryExecModeCacheDescribe), which
// PostgreSQL plans with the actual parameters and current table sizes on
// every execution; JIT then follows the caller's settings (the README
// recommends jit = off). The prelude runs first, in the same transaction:
// the caller's, or one begun here when the executor can begin one.
func (d *db) plannedRows(ctx context.Context, e Executor, sql, settings string, args []any, scan func(pgx.Rows) error, prelude ...stmt) error {
	c, status, ok := d.ownedConn(e)
	if !ok {
		run := func(e Executor) error {
			for _, s := range prelude {
				if err := s.run(ctx, e); err != nil {
					return err
				}
			}
			rows, err := e.Query(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
			if err != nil {
				return err
			}
			return readRows(rows, scan)
		}
		if b, canBegin := e.(beginner); canBegin && len(prelude) > 0 && !d.bound {
			return pgx.BeginFunc(ctx, b, func(tx pgx.Tx) error { return run(tx) })
		}
		return run(e)
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	if settings != "" {
		b.Queue(settings)
	}
	for _, s := range prelude {
		b.Queue(s.sql, s.args...)
	}
	b.Queue(sql, args...)
	b.Queue("COMMIT")
	br := c.SendBatch(ctx, b)
	err := func() error {
		// BEGIN and the settings, then the prelude.
		for range b.Len() - 2 - len(prelude) {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		for _, s := range prelude {
			if s.scan == nil {
				if _, err := br.Exec(); err != nil {
					return err
				}
				continue
			}
			rows, err := br.Query()
			if err != nil {
				return err
			}
			if err := readRows(rows, s.scan); err != nil {
				return err
			}
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		if err := readRows(rows, scan); err != nil {
			return err
		}
		_, err = br.Exec()
		return err
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil && status() != 'I' {
		// A failed statement leaves its transaction open (aborted); roll it
		// back so the connection can go back to the pool instead of being
		// destroyed. Nothing was committed.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_, _ = c.Exec(rctx, "ROLLBACK")
		cancel()
	}
	return err
}

func readRows(rows pgx.Rows, scan func(pgx.Rows) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
