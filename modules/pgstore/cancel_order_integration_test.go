//go:build integration

package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
)

// The bulk statements (CancelMatching, Requeue, Purge) lock the rows they
// touch in key order (queue, tenant, id), the order Complete locks a
// batch in, whatever index or scan finds them: callers that all lock in
// that order never deadlock. Here a transaction holds item "a"; the
// statement, which selects "b" (written first: first in the table, in
// the ready index and in the dead-letter index) and "a", must wait on
// "a" holding nothing, so the transaction can still take "b" without
// waiting. Locked in scan order, the statement would hold "b" already:
// the transaction's NOWAIT lock fails, and waiting instead would
// deadlock.
func TestBulkStatementsLockInKeyOrder(t *testing.T) {
	for _, c := range []struct {
		name string
		dead bool // the items are dead letters, else queued
		run  func(ctx context.Context, q *pgstore.PostgresWorkQueue) (int, error)
	}{
		{"CancelMatching", false, func(ctx context.Context, q *pgstore.PostgresWorkQueue) (int, error) {
			return q.CancelMatching(ctx, contract.CancelFilter{Queue: contract.DefaultQueue, Tenant: "t", State: contract.StateQueued}, "stop")
		}},
		{"Requeue", true, func(ctx context.Context, q *pgstore.PostgresWorkQueue) (int, error) {
			return q.Requeue(ctx, contract.DeadLetterFilter{Queue: contract.DefaultQueue})
		}},
		{"Purge", true, func(ctx context.Context, q *pgstore.PostgresWorkQueue) (int, error) {
			return q.Purge(ctx, contract.DeadLetterFilter{Queue: contract.DefaultQueue})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxT(t, time.Minute)
			// Sequential scans only: the rows come in the order they were
			// written (b, then a) unless the statement sorts them, so the
			// test does not depend on which index the planner would pick.
			d := newTestDB(t, func(c *pgxpool.Config) {
				c.ConnConfig.RuntimeParams["enable_indexscan"] = "off"
				c.ConnConfig.RuntimeParams["enable_bitmapscan"] = "off"
			})
			q := flowQueue(t, d, contracttest.NewFakeClock(time.Time{}))
			for _, id := range []string{"b", "a"} {
				if c.dead {
					if _, err := d.pool.Exec(ctx, `INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at, dead_at, last_error)
						VALUES ($1, 't', $2, 'dead', now(), now(), now(), 'boom')`, contract.DefaultQueue, id); err != nil {
						t.Fatal(err)
					}
				} else if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: id}); err != nil {
					t.Fatal(err)
				}
			}
			tx, err := d.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			var pid int32
			if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				t.Fatal(err)
			}
			lock := "SELECT id FROM adk_work WHERE queue = $1 AND tenant = 't' AND id = $2 FOR UPDATE"
			if _, err := tx.Exec(ctx, lock, contract.DefaultQueue, "a"); err != nil {
				t.Fatal(err)
			}
			type result struct {
				n   int
				err error
			}
			done := make(chan result, 1)
			go func() {
				n, err := c.run(ctx, q)
				done <- result{n, err}
			}()
			// Wait (bounded) until the statement is blocked behind the
			// transaction.
			for blocked := 0; blocked == 0; {
				if err := d.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE wait_event_type = 'Lock' AND $1 = ANY (pg_blocking_pids(pid))`, pid).Scan(&blocked); err != nil {
					t.Fatal(err)
				}
				select {
				case r := <-done:
					t.Fatalf("%s ended (%d, %v) while item a was locked", c.name, r.n, r.err)
				case <-ctx.Done():
					t.Fatalf("%s never waited on the locked item", c.name)
				case <-time.After(5 * time.Millisecond):
				}
			}
			_, err = tx.Exec(ctx, lock+" NOWAIT", contract.DefaultQueue, "b")
			if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "55P03" {
				t.Errorf("%s holds b while it waits on a: it locks in scan order, not key order", c.name)
			} else if err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.err != nil || r.n != 2 {
				t.Fatalf("%s = %d, %v; want 2 items", c.name, r.n, r.err)
			}
		})
	}
}
