//go:build integration

package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
)

// A bulk cancel locks the rows it touches in key order (queue, tenant,
// id), the order Complete locks a batch in, whatever index or scan
// finds them: two callers that both lock in that order never deadlock.
// Here a transaction holds item "a"; the cancel, which selects "b" (the
// older, first in the ready index) and "a", must wait on "a" holding
// nothing, so the transaction can still take "b" without waiting. Locked
// in scan order, the cancel would hold "b" already: the transaction's
// NOWAIT lock fails, and waiting instead would deadlock.
func TestCancelMatchingLocksInKeyOrder(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	q := flowQueue(t, d, contracttest.NewFakeClock(time.Time{}))
	for _, id := range []string{"b", "a"} {
		if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: id}); err != nil {
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
		n, err := q.CancelMatching(ctx, contract.CancelFilter{Queue: contract.DefaultQueue, Tenant: "t", State: contract.StateQueued}, "stop")
		done <- result{n, err}
	}()
	// Wait (bounded) until the cancel is blocked behind the transaction.
	for blocked := 0; blocked == 0; {
		if err := d.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND $1 = ANY (pg_blocking_pids(pid))`, pid).Scan(&blocked); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			t.Fatalf("the cancel ended (%d, %v) while item a was locked", r.n, r.err)
		case <-ctx.Done():
			t.Fatal("the cancel never waited on the locked item")
		case <-time.After(5 * time.Millisecond):
		}
	}
	_, err = tx.Exec(ctx, lock+" NOWAIT", contract.DefaultQueue, "b")
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "55P03" {
		t.Error("the cancel holds b while it waits on a: it locks in scan order, not key order")
	} else if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.n != 2 {
		t.Fatalf("CancelMatching = %d, %v; want 2 cancelled", r.n, r.err)
	}
}
