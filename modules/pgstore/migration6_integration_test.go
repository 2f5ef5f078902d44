//go:build integration

package pgstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
)

// Verify meets a version 5 database and names 006_ready_by_priority.sql; a
// version 5 database with queued items of mixed priorities, migrated (as
// one transaction, or after the two indexes were built concurrently as
// the file describes), passes Verify, matches ExpectedSchema, claims its
// items in priority order and parks a tenant on its earliest item
// whatever its priority, and runs the work queue suite.
func TestSchemaMigrationFromV5(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	v5 := func(t *testing.T) *testDB { return atSchema(t, pgstore.SchemaV5(pgstore.StateTables{})) }
	migrate := func(t *testing.T, d *testDB) { migrateFrom(t, d, 5) }
	fresh := newTestDB(t)
	for _, concurrently := range []bool{false, true} {
		d := v5(t)
		err := pgstore.Verify(ctx, d.pool, pgstore.StateTables{})
		var se *contract.SchemaError
		if !errors.As(err, &se) || se.Found != "5" || !strings.Contains(se.Fix, pgstore.MigrationFile) || !strings.Contains(pgstore.MigrationFile, "006_ready_by_priority.sql") {
			t.Fatalf("Verify on version 5 = %v, want a SchemaError naming %s", err, pgstore.MigrationFile)
		}
		// acme: one item of each kind of priority, due, and one of priority
		// 0 not due for an hour; later: only a delayed item of priority 2,
		// due before its delayed item of priority 0.
		if _, err := d.pool.Exec(ctx, `
			INSERT INTO adk_work (queue, tenant, id, state, due_at, enqueued_at, priority) VALUES
				('default', 'acme', 'low', 'queued', now() - interval '3 minutes', now(), -2),
				('default', 'acme', 'zero', 'queued', now() - interval '2 minutes', now(), 0),
				('default', 'acme', 'high', 'queued', now() - interval '1 minute', now(), 3),
				('default', 'acme', 'soon', 'queued', now() + interval '1 hour', now(), 0),
				('default', 'later', 'p2', 'queued', now() + interval '1 hour', now(), 2),
				('default', 'later', 'p0', 'queued', now() + interval '2 hours', now(), 0);
			INSERT INTO adk_queue_turns (queue, tenant) VALUES ('default', 'acme'), ('default', 'later')`); err != nil {
			t.Fatal(err)
		}
		if concurrently {
			if _, err := d.pool.Exec(ctx, `CREATE INDEX CONCURRENTLY adk_work_ready_p0 ON adk_work (queue, tenant, due_at, seq) WHERE state = 'queued' AND priority = 0`); err != nil {
				t.Fatal(err)
			}
			if _, err := d.pool.Exec(ctx, `CREATE INDEX CONCURRENTLY adk_work_ready_due ON adk_work (queue, tenant, due_at, seq) WHERE state = 'queued' AND priority <> 0`); err != nil {
				t.Fatal(err)
			}
		}
		migrate(t, d)
		if err := pgstore.Verify(ctx, d.pool, pgstore.StateTables{}); err != nil {
			t.Fatalf("Verify after the migration: %v", err)
		}
		m, _ := pgstore.Migration(pgstore.StateTables{}, 5)
		if _, err := d.pool.Exec(ctx, m); err == nil {
			t.Error("the migration ran twice")
		}
		if got, want := catalog(t, d), catalog(t, fresh); got != want {
			t.Errorf("migrated schema (concurrent build first: %v) differs from ExpectedSchema:\nmigrated:\n%s\nexpected:\n%s", concurrently, got, want)
		}
		q := flowQueue(t, d, nil)
		ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 10})
		var ids []string
		for _, l := range ls {
			ids = append(ids, l.Item.ID)
		}
		if err != nil || strings.Join(ids, ",") != "high,zero,low" {
			t.Fatalf("claim after the migration: %v, %v; want high, zero, low", ids, err)
		}
		// "later" holds nothing due: a park pass (Reap runs one) parks it
		// until its earliest item, p2 (priority 2, due in an hour), not p0
		// (two hours).
		if _, err := q.Reap(ctx, ""); err != nil {
			t.Fatal(err)
		}
		var wake time.Time
		var due time.Time
		if err := d.pool.QueryRow(ctx, `SELECT t.wake_at, w.due_at FROM adk_queue_turns t JOIN adk_work w ON w.queue = t.queue AND w.tenant = t.tenant AND w.id = 'p2'
			WHERE t.queue = 'default' AND t.tenant = 'later'`).Scan(&wake, &due); err != nil {
			t.Fatal(err)
		}
		if !wake.Equal(due) {
			t.Errorf("tenant later parked until %v, want its earliest item's due time %v", wake, due)
		}
	}
	t.Run("suite", func(t *testing.T) {
		contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p contractPolicy) contract.WorkQueue {
			d := v5(t)
			migrate(t, d)
			q, err := pgstore.NewQueue(d.pool, clock, d.settings(pgstore.Settings{Policy: p, Listener: d.listener(t, pgstore.ListenerSettings{})}))
			if err != nil {
				t.Fatal(err)
			}
			return q
		})
	})
}
