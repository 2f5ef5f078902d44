package sqlitestore_test

import (
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

// Open meets a version 3 file with the migration's name in the fix and
// leaves it alone; after the migration every row the old release wrote
// reads as before (a cancelled item finished when it was cancelled), the
// file has the shape of a new one and the history works on the old rows.
func TestMigrationFromVersionThree(t *testing.T) {
	ctx := t.Context()
	db, _ := fileAtSchema(t, 3)
	at := contracttest.FakeEpoch.UnixNano()
	for _, stmt := range []string{
		`UPDATE adk_counters SET value = 7 WHERE name = 'token'`,
		`UPDATE adk_counters SET value = 5 WHERE name = 'seq'`,
		`INSERT INTO adk_queues (queue, stamp, turn) VALUES ('default', 2, 1)`,
		fmt.Sprintf(`INSERT INTO adk_work (queue, tenant, id, state, seq, due_at, enqueued_at, metadata, priority) VALUES
			('default', 'acme', 'a1', 'queued', 1, %[1]d, %[1]d, '{"k":"v"}', 2)`, at),
		fmt.Sprintf(`INSERT INTO adk_work (queue, tenant, id, state, seq, due_at, enqueued_at, cancelled_at, cancel_reason) VALUES
			('default', 'beta', 'c1', 'cancelled', 2, %[1]d, %[1]d, %[1]d, 'old')`, at),
		fmt.Sprintf(`INSERT INTO adk_turns (queue, tenant, stamp, wake_at, ranked) VALUES ('default', 'acme', 1, %[1]d, 1)`, at),
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch.Add(time.Hour))
	_, _, err := sqlitestore.Open(ctx, db, clock, sqlitestore.Settings{})
	se, ok := errors.AsType[*contract.SchemaError](err)
	if !ok || !strings.Contains(se.Fix, "schema/migrations/003_to_004.sql") || strings.Contains(se.Fix, "002_to_003") {
		t.Fatalf("Open on version 3: %v, want a *contract.SchemaError naming schema/migrations/003_to_004.sql only", err)
	}
	if err := migrate(t, db); err != nil {
		t.Fatalf("migration: %v", err)
	}
	if got, want := schemaShape(t, db), schemaShape(t, newFile(t, sqlitestore.Settings{})); !slices.Equal(got, want) {
		t.Fatalf("the shape migrated from version 3 differs from a new file's:\nmigrated %v\nnew      %v", got, want)
	}
	_, q, err := sqlitestore.Open(ctx, db, clock, sqlitestore.Settings{})
	if err != nil {
		t.Fatalf("Open after the migration: %v", err)
	}
	c1, err := q.Item(ctx, contract.ItemKey{Tenant: "beta", ID: "c1"})
	if err != nil || c1.Item.State != contract.StateCancelled || !c1.Item.FinishedAt.Equal(contracttest.FakeEpoch) || c1.Item.CancelReason != "old" {
		t.Fatalf("cancelled item after the migration: %+v, %v", c1, err)
	}
	if r, err := q.Retention(ctx, ""); err != nil || r != (contract.Retention{}) {
		t.Fatalf("Retention after the migration = %+v, %v", r, err)
	}
	if err := q.SetRetention(ctx, "", contract.Retention{Age: time.Minute, Events: 10}); err != nil {
		t.Fatal(err)
	}
	fin, err := q.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 10}})
	if err != nil || len(fin.Items) != 1 || fin.Items[0].ID != "c1" {
		t.Fatalf("Finished after the migration = %+v, %v", fin, err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 1 || ls[0].Item.ID != "a1" || ls[0].Token <= 7 || ls[0].Item.Metadata["k"] != "v" {
		t.Fatalf("Claim after the migration = %+v, %v", ls, err)
	}
	if err := q.Complete(ctx, ls...); err != nil {
		t.Fatal(err)
	}
	h, err := q.History(ctx, contract.ItemKey{Tenant: "acme", ID: "a1"})
	if err != nil || h.Item.State != contract.StateCompleted || len(h.Events) != 2 {
		t.Fatalf("History after the migration = %+v, %v", h, err)
	}
	if n, err := q.Prune(ctx, ""); err != nil || n != 1 {
		t.Fatalf("Prune of the migrated cancelled item = %d, %v", n, err)
	}
}
