package sqlitestore_test

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/sqlitestore"
)

// versionTwoFile makes a file holding schema version 2, as the release
// before the lifecycle controls created it, with rows of each kind that
// release wrote: a run, queued items of two tenants in the rotation, a
// leased item, a dead letter and a tenant's limits.
func versionTwoFile(t testing.TB, withData bool) (*sql.DB, string) {
	t.Helper()
	db, path := fileAtSchema(t, 2)
	if !withData {
		return db, path
	}
	at := contracttest.FakeEpoch.UnixNano()
	for _, stmt := range []string{
		fmt.Sprintf(`INSERT INTO adk_runs (tenant, id, status, version, input_tokens, created_at, updated_at) VALUES ('acme', 'r1', 'running', 3, 42, %d, %d)`, at, at),
		`UPDATE adk_counters SET value = 7 WHERE name = 'token'`,
		`UPDATE adk_counters SET value = 5 WHERE name = 'seq'`,
		`INSERT INTO adk_queues (queue, stamp, turn) VALUES ('default', 2, 1)`,
		fmt.Sprintf(`INSERT INTO adk_work (queue, tenant, id, state, seq, due_at, enqueued_at, metadata) VALUES
			('default', 'acme', 'a1', 'queued', 1, %[1]d, %[1]d, '{"k":"v"}'),
			('default', 'acme', 'a2', 'queued', 2, %[1]d, %[1]d, NULL),
			('default', 'beta', 'b1', 'queued', 3, %[1]d, %[1]d, NULL)`, at),
		fmt.Sprintf(`INSERT INTO adk_work (queue, tenant, id, state, seq, due_at, enqueued_at, attempts, worker, lease_expires_at, token) VALUES
			('default', 'beta', 'b0', 'leased', 4, %[1]d, %[1]d, 1, 'w', %[2]d, 7)`, at, at+int64(time.Hour)),
		fmt.Sprintf(`INSERT INTO adk_work (queue, tenant, id, state, seq, due_at, enqueued_at, attempts, last_error, dead_at) VALUES
			('default', 'acme', 'd1', 'dead', 5, %[1]d, %[1]d, 3, 'boom', %[1]d)`, at),
		fmt.Sprintf(`INSERT INTO adk_turns (queue, tenant, stamp, wake_at, served, credit, tat) VALUES ('default', 'acme', 1, %[1]d, 0, 0, 0), ('default', 'beta', 2, %[1]d, 1, 0, 0)`, at),
		`INSERT INTO adk_limits (queue, tenant, max_leased) VALUES ('default', 'acme', 1)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return db, path
}

// Open meets a version 2 file with the migration's name in the fix and
// leaves it alone; after the migration every row the old release wrote
// reads and works as before, and the lifecycle controls work on them.
func TestMigrationFromVersionTwo(t *testing.T) {
	ctx := t.Context()
	db, _ := versionTwoFile(t, true)
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	_, _, err := sqlitestore.Open(ctx, db, clock, sqlitestore.Settings{})
	se, ok := errors.AsType[*contract.SchemaError](err)
	if !ok || !strings.Contains(se.Fix, "schema/migrations/002_to_003.sql") || strings.Contains(se.Fix, "001_to_002") {
		t.Fatalf("Open on version 2: %v, want a *contract.SchemaError naming schema/migrations/002_to_003.sql only", err)
	}
	if err := migrate(t, db); err != nil {
		t.Fatalf("migration: %v", err)
	}
	runs, q, err := sqlitestore.Open(ctx, db, clock, sqlitestore.Settings{})
	if err != nil {
		t.Fatalf("Open after the migration: %v", err)
	}
	r, err := runs.GetRun(ctx, "acme", "r1")
	if err != nil || r.Status != "running" || r.Version != 3 || r.Counters.InputTokens != 42 {
		t.Fatalf("run after the migration: %+v, %v", r, err)
	}
	info, err := q.Item(ctx, contract.ItemKey{Tenant: "beta", ID: "b0"})
	if err != nil || info.Lease == nil || info.Lease.Token != 7 || info.Item.Attempts != 1 || info.Item.Priority != 0 || !info.Item.CancelledAt.IsZero() {
		t.Fatalf("lease after the migration: %+v, %v", info, err)
	}
	a1, err := q.Item(ctx, contract.ItemKey{Tenant: "acme", ID: "a1"})
	if err != nil || a1.Item.State != contract.StateQueued || a1.Item.Metadata["k"] != "v" || a1.Item.Resumed != nil || a1.Item.Waiting != nil {
		t.Fatalf("queued item after the migration: %+v, %v", a1, err)
	}
	dead, err := q.DeadLetters(ctx, contract.DeadLetterQuery{Page: contract.PageRequest{Limit: 10}})
	if err != nil || len(dead.Items) != 1 || dead.Items[0].LastError != "boom" || dead.Items[0].Attempts != 3 {
		t.Fatalf("dead letters after the migration: %+v, %v", dead, err)
	}
	if l, err := q.Limits(ctx, ""); err != nil || l.Tenants["acme"].MaxLeased != 1 {
		t.Fatalf("limits after the migration: %+v, %v", l, err)
	}
	// The old lease is cancelled by its holder's next call.
	if was, err := q.Cancel(ctx, info.Lease.Key(), "stop"); err != nil || was != contract.StateLeased {
		t.Fatalf("Cancel of the migrated lease = %q, %v", was, err)
	}
	if err := q.Complete(ctx, *info.Lease); !errors.Is(err, contract.ErrCancelled) {
		t.Fatalf("Complete of the cancelled migrated lease = %v, want a CancelledError", err)
	}
	// The rotation goes on where it was (acme, capped at 1, then beta),
	// and a prioritised item goes first within its tenant.
	if err := q.Enqueue(ctx, contract.Item{Tenant: "beta", ID: "urgent", Priority: 9}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range ls {
		got = append(got, l.Item.Tenant+"/"+l.Item.ID)
		if l.Token <= 7 {
			t.Fatalf("token %d not above the migrated counter's 7", l.Token)
		}
	}
	if want := []string{"acme/a1", "beta/urgent", "beta/b1"}; !slices.Equal(got, want) {
		t.Fatalf("claimed %v after the migration, want %v", got, want)
	}
}
