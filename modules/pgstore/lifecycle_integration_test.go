//go:build integration

package pgstore_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/policy"
)

func lcKey(tenant, id string) contract.ItemKey {
	return contract.ItemKey{Tenant: tenant, Queue: contract.DefaultQueue, ID: id}
}

// Everything the lifecycle controls write is in the database: a fresh
// queue on the same schema (another process, say) sees the pauses, the
// waiting item, the cancelled item, the marked lease and the priority
// order, and can signal the wait.
func TestLifecycleSurvivesReopen(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	clock := contracttest.NewFakeClock(time.Time{})
	q := flowQueue(t, d, clock)
	req := contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1}

	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "waits"}, contract.Item{Tenant: "acme", ID: "held"}, contract.Item{Tenant: "acme", ID: "gone"}); err != nil {
		t.Fatal(err)
	}
	waits, err := q.Claim(ctx, req)
	if err != nil || waits[0].Item.ID != "waits" {
		t.Fatalf("claim: %v, %v", waits, err)
	}
	if err := q.Wait(ctx, waits[0], contract.WaitRequest{Signal: "approve", Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	held, err := q.Claim(ctx, req)
	if err != nil || held[0].Item.ID != "held" {
		t.Fatalf("claim: %v, %v", held, err)
	}
	if _, err := q.Cancel(ctx, held[0].Key(), "stop"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Cancel(ctx, lcKey("acme", "gone"), "not needed"); err != nil {
		t.Fatal(err)
	}
	for i, p := range []int{0, 7, -2, 7} {
		it := contract.Item{Tenant: "globex", ID: string(rune('a' + i)), Priority: p}
		if err := q.Enqueue(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Pause(ctx, "", "globex"); err != nil {
		t.Fatal(err)
	}
	if err := q.Pause(ctx, "other", ""); err != nil {
		t.Fatal(err)
	}

	fresh := flowQueue(t, d, clock)
	if ps, err := fresh.Paused(ctx, ""); err != nil || ps.Paused || len(ps.Tenants) != 1 || ps.Tenants[0] != "globex" {
		t.Fatalf("Paused after reopening = %+v, %v; want tenant globex", ps, err)
	}
	if ps, err := fresh.Paused(ctx, "other"); err != nil || !ps.Paused {
		t.Fatalf("Paused(other) after reopening = %+v, %v; want the queue paused", ps, err)
	}
	if _, err := fresh.Claim(ctx, contract.ClaimRequest{Queue: "other", Worker: "w", LeaseFor: time.Minute, Max: 1}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("claim of the paused queue after reopening: %v, want ErrEmpty", err)
	}
	info, err := fresh.Item(ctx, waits[0].Key())
	if err != nil || info.Item.State != contract.StateWaiting || info.Item.Waiting == nil || info.Item.Waiting.Signal != "approve" {
		t.Fatalf("the waiting item after reopening = %+v, %v", info.Item, err)
	}
	info, err = fresh.Item(ctx, lcKey("acme", "gone"))
	if err != nil || info.Item.State != contract.StateCancelled || info.Item.CancelReason != "not needed" {
		t.Fatalf("the cancelled item after reopening = %+v, %v", info.Item, err)
	}
	info, err = fresh.Item(ctx, held[0].Key())
	if err != nil || info.Item.State != contract.StateLeased || info.Item.CancelledAt.IsZero() || info.Lease == nil {
		t.Fatalf("the marked lease after reopening = %+v, %v", info, err)
	}
	// The marked lease's holder, talking to the fresh queue, is told.
	var ce *contract.CancelledError
	if err := fresh.Complete(ctx, held[0]); !errors.As(err, &ce) {
		t.Fatalf("Complete of the marked lease on the fresh queue = %v, want *CancelledError", err)
	}
	// The paused tenant is passed over; resumed, it is served by priority.
	if _, err := fresh.Claim(ctx, req); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("claim with globex paused: %v, want ErrEmpty", err)
	}
	if err := fresh.Resume(ctx, "", "globex"); err != nil {
		t.Fatal(err)
	}
	var order []string
	for range 4 {
		ls, err := fresh.Claim(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, ls[0].Item.ID)
		if err := fresh.Complete(ctx, ls...); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(order, ","); got != "b,d,a,c" {
		t.Fatalf("after reopening globex was served %s, want b,d,a,c (priority 7, 7, 0, -2)", got)
	}
	if err := fresh.Signal(ctx, waits[0].Key(), "approve", []byte("yes")); err != nil {
		t.Fatalf("Signal on the fresh queue: %v", err)
	}
	ls, err := q.Claim(ctx, req)
	if err != nil || ls[0].Item.ID != "waits" || ls[0].Item.Resumed == nil || !bytes.Equal(ls[0].Item.Resumed.Payload, []byte("yes")) {
		t.Fatalf("claim after the signal: %+v, %v", ls, err)
	}
}

// A handler can wait, snooze and signal inside its own transaction
// (Bound): nothing shows before it commits, and a rollback undoes it.
func TestLifecycleBound(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	q := flowQueue(t, d, nil)
	req := contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	l, err := q.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// Rolled back: the lease stands.
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Bound(tx).Wait(ctx, l[0], contract.WaitRequest{Signal: "go", Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := q.Item(ctx, l[0].Key()); info.Item.State != contract.StateLeased {
		t.Fatalf("after a rolled-back Wait the item is %q, want leased", info.Item.State)
	}
	// Committed: the item waits, and a bound signal resumes it.
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		return q.Bound(tx).Wait(ctx, l[0], contract.WaitRequest{Signal: "go", Timeout: time.Hour})
	})
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		return q.Bound(tx).Signal(ctx, l[0].Key(), "go", []byte("ok"))
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err = q.Claim(ctx, req)
	if err != nil || l[0].Item.Resumed == nil || string(l[0].Item.Resumed.Payload) != "ok" {
		t.Fatalf("claim after the bound signal: %+v, %v", l, err)
	}
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		_, err := q.Bound(tx).Snooze(ctx, l[0], 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if l, err = q.Claim(ctx, req); err != nil || l[0].Item.Snoozes != 1 {
		t.Fatalf("claim after the bound snooze: %+v, %v", l, err)
	}
}

// Verify meets a version 2 database and names 003_lifecycle.sql; a
// version 2 database with data, migrated, passes Verify, keeps its
// items, matches ExpectedSchema, and runs the lifecycle suite.
func TestSchemaMigrationFromV2(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	v2 := func(t *testing.T) *testDB { return atSchema(t, pgstore.SchemaV2(pgstore.StateTables{})) }
	d := v2(t)
	err := pgstore.Verify(ctx, d.pool, pgstore.StateTables{})
	var se *contract.SchemaError
	if !errors.As(err, &se) || se.Found != "2" || !strings.Contains(se.Fix, pgstore.MigrationFile) {
		t.Fatalf("Verify on version 2 = %v, want a SchemaError naming %s", err, pgstore.MigrationFile)
	}
	if _, err := d.pool.Exec(ctx, `
		INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at) VALUES ('default', 'acme', 'q1', 'queued', now() - interval '1 minute', now());
		INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at, dead_at) VALUES ('default', 'acme', 'd1', 'dead', now(), now(), now());
		INSERT INTO adk_queue_turns (queue, tenant) VALUES ('default', 'acme')`); err != nil {
		t.Fatal(err)
	}
	migrateFrom(t, d, 2)
	m, _ := pgstore.Migration(pgstore.StateTables{}, 2)
	if err := pgstore.Verify(ctx, d.pool, pgstore.StateTables{}); err != nil {
		t.Fatalf("Verify after the migration: %v", err)
	}
	if _, err := d.pool.Exec(ctx, m); err == nil {
		t.Error("the migration ran twice")
	}
	q := flowQueue(t, d, nil)
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 5})
	if err != nil || len(ls) != 1 || ls[0].Item.ID != "q1" || ls[0].Item.Priority != 0 {
		t.Fatalf("claim after the migration: %+v, %v; want q1", ls, err)
	}
	if _, err := q.Cancel(ctx, lcKey("acme", "d1"), "old"); err != nil {
		t.Fatalf("Cancel of a version 2 dead letter: %v", err)
	}
	fresh := newTestDB(t)
	if got, want := catalog(t, d), catalog(t, fresh); got != want {
		t.Errorf("migrated schema differs from ExpectedSchema:\nmigrated:\n%s\nexpected:\n%s", got, want)
	}
	t.Run("suite", func(t *testing.T) {
		contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p contractPolicy) contract.WorkQueue {
			d := v2(t)
			migrateFrom(t, d, 2)
			q, err := pgstore.NewQueue(d.pool, clock, d.settings(pgstore.Settings{Policy: p, Listener: d.listener(t, pgstore.ListenerSettings{})}))
			if err != nil {
				t.Fatal(err)
			}
			return q
		})
	})
}

// Fail and Snooze decide on the attempts and snoozes the lease carries
// only while the row agrees: a lease value that overstates them is
// decided again on the row, and the item goes back to the queue rather
// than to the dead letter.
func TestSettleDecidesOnTheRow(t *testing.T) {
	for _, c := range []struct {
		name   string
		settle func(q *pgstore.PostgresWorkQueue, l contract.Lease) (policy.Decision, error)
		stale  func(l *contract.Lease)
		after  func(it contract.Item) bool
	}{
		{"snooze",
			func(q *pgstore.PostgresWorkQueue, l contract.Lease) (policy.Decision, error) {
				return q.Snooze(t.Context(), l, time.Second)
			},
			func(l *contract.Lease) { l.Item.Snoozes = 1000 },
			func(it contract.Item) bool { return it.Snoozes == 1 && it.Attempts == 0 }},
		{"fail",
			func(q *pgstore.PostgresWorkQueue, l contract.Lease) (policy.Decision, error) {
				return q.Fail(t.Context(), l, errors.New("boom"))
			},
			func(l *contract.Lease) { l.Item.Attempts = 1000 },
			func(it contract.Item) bool { return it.Attempts == 1 && it.Snoozes == 0 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxT(t, time.Minute)
			d := newTestDB(t)
			q := flowQueue(t, d, contracttest.NewFakeClock(time.Time{}))
			if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "a"}); err != nil {
				t.Fatal(err)
			}
			ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
			if err != nil {
				t.Fatal(err)
			}
			stale := ls[0]
			c.stale(&stale)
			dec, err := c.settle(q, stale)
			if err != nil || !dec.Retry {
				t.Fatalf("%s of a lease value that overstates its count = %+v, %v; want a retry decided on the row's 0", c.name, dec, err)
			}
			info, err := q.Item(ctx, stale.Key())
			if err != nil || info.Item.State != contract.StateQueued || !c.after(info.Item) {
				t.Fatalf("the item after %s = %+v, %v; want it queued, counted once", c.name, info.Item, err)
			}
		})
	}
}

// The events of Fail, Snooze and Wait name the worker the row says holds
// the lease, even when the lease value given says another.
func TestSettleEventsNameTheRowsWorker(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	clock := contracttest.NewFakeClock(time.Time{})
	q := flowQueue(t, d, clock)
	if err := q.SetRetention(ctx, contract.DefaultQueue, contract.Retention{Events: 10}); err != nil {
		t.Fatal(err)
	}
	settles := map[string]func(contract.Lease) error{
		"fail":   func(l contract.Lease) error { _, err := q.Fail(ctx, l, errors.New("boom")); return err },
		"snooze": func(l contract.Lease) error { _, err := q.Snooze(ctx, l, time.Second); return err },
		"wait": func(l contract.Lease) error {
			return q.Wait(ctx, l, contract.WaitRequest{Signal: "go", Timeout: time.Hour})
		},
	}
	for id := range settles {
		if err := q.Enqueue(ctx, contract.Item{Tenant: id, ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for range settles {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
		if err != nil {
			t.Fatal(err)
		}
		l := ls[0]
		l.Worker = "impostor"
		if err := settles[l.Item.ID](l); err != nil {
			t.Fatalf("%s: %v", l.Item.ID, err)
		}
		h, err := q.History(ctx, l.Key())
		if err != nil || len(h.Events) == 0 {
			t.Fatalf("%s: history %+v, %v", l.Item.ID, h, err)
		}
		if last := h.Events[len(h.Events)-1]; last.Worker != "w" {
			t.Errorf("%s: its %s event names worker %q; want the row's %q", l.Item.ID, last.Kind, last.Worker, "w")
		}
	}
}
