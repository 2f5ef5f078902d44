//go:build integration

package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/contract"
)

// notifiedBefore reports whether conn, LISTENing on channel, received a
// notification before the sentinel it then sends through d's pool: a
// listener receives notifications in the order their transactions
// committed, so whatever a statement that committed earlier notified
// arrives first.
func notifiedBefore(t *testing.T, ctx context.Context, conn *pgx.Conn, d *testDB, channel string) bool {
	t.Helper()
	if _, err := d.pool.Exec(ctx, "SELECT pg_notify($1, 'sentinel')", channel); err != nil {
		t.Fatal(err)
	}
	woke := false
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n.Payload == "sentinel" {
			return woke
		}
		woke = true
	}
}

// A lease of a queue with limits that ends other than by Complete (a
// snooze, a wait, a cancel settling when the holder fails) may free a
// tenant held at its cap, so it wakes the queue's claimers on commit, as
// Complete does; on a queue without limits a snooze into the future
// wakes nobody.
func TestLeaseEndsWakeClaimersOfALimitedQueue(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	q := flowQueue(t, d, nil)
	conn, err := pgx.ConnectConfig(ctx, d.connConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{q.Channel()}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if err := q.SetLimits(ctx, "", "capped", contract.Limits{MaxLeased: 1}); err != nil {
		t.Fatal(err)
	}
	enqueueN(t, q, "capped", 4)
	if err := q.Enqueue(ctx, contract.Item{Queue: "plain", Tenant: "t", ID: "p"}); err != nil {
		t.Fatal(err)
	}
	claim := func(queue string) contract.Lease {
		t.Helper()
		ls, err := q.Claim(ctx, contract.ClaimRequest{Queue: queue, LeaseFor: time.Minute, Max: 4})
		if err != nil || len(ls) != 1 {
			t.Fatalf("claim of %s: %d leases, %v; want 1", queue, len(ls), err)
		}
		notifiedBefore(t, ctx, conn, d, q.Channel()) // what came before
		return ls[0]
	}
	ends := []struct {
		name string
		end  func(l contract.Lease) error
	}{
		{"snooze", func(l contract.Lease) error { _, err := q.Snooze(ctx, l, time.Hour); return err }},
		{"wait", func(l contract.Lease) error {
			return q.Wait(ctx, l, contract.WaitRequest{Signal: "go", Timeout: time.Hour})
		}},
		{"cancel settled by Fail", func(l contract.Lease) error {
			if _, err := q.Cancel(ctx, l.Key(), "stop"); err != nil {
				return err
			}
			notifiedBefore(t, ctx, conn, d, q.Channel()) // the Cancel's own, if any
			if _, err := q.Fail(ctx, l, errors.New("boom")); !errors.Is(err, contract.ErrCancelled) {
				return err
			}
			return nil
		}},
	}
	for _, e := range ends {
		l := claim(contract.DefaultQueue)
		if err := e.end(l); err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		if !notifiedBefore(t, ctx, conn, d, q.Channel()) {
			t.Errorf("the %s of a capped tenant's lease woke no claimer", e.name)
		}
	}
	l := claim("plain")
	if _, err := q.Snooze(ctx, l, time.Hour); err != nil {
		t.Fatal(err)
	}
	if notifiedBefore(t, ctx, conn, d, q.Channel()) {
		t.Error("a snooze into the future on a queue without limits woke the claimers")
	}
}
