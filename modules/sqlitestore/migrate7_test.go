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

// Open meets a version 6 file with the migration's name in the fix and
// leaves it alone. After the migration the file has a new one's shape,
// every tenant starts awake (a version 6 tenant whose items are all
// delayed is walked and passed over, as that release did), each falls
// asleep at the next write of its wake time, and claims serve the
// migrated items in the order version 6 would have.
func TestMigrationFromVersionSix(t *testing.T) {
	ctx := t.Context()
	db, _ := fileAtSchema(t, 6)
	at := contracttest.FakeEpoch.UnixNano()
	later := at + int64(time.Hour)
	for _, stmt := range []string{
		`UPDATE adk_counters SET value = 4 WHERE name = 'seq'`,
		`INSERT INTO adk_queues (queue, stamp, turn) VALUES ('default', 3, 0)`,
		fmt.Sprintf(`INSERT INTO adk_work (queue, tenant, id, state, seq, due_at, enqueued_at) VALUES
			('default', 'late', 'x', 'queued', 1, %[2]d, %[1]d),
			('default', 'now', 'a', 'queued', 2, %[1]d, %[1]d),
			('default', 'now', 'b', 'queued', 3, %[2]d, %[1]d),
			('default', 'third', 'a', 'queued', 4, %[1]d, %[1]d)`, at, later),
		fmt.Sprintf(`INSERT INTO adk_turns (queue, tenant, stamp, wake_at) VALUES
			('default', 'late', 1, %[2]d), ('default', 'now', 2, %[1]d), ('default', 'third', 3, %[1]d)`, at, later),
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	_, err := sqlitestore.OpenQueue(ctx, db, clock, sqlitestore.Settings{})
	se, ok := errors.AsType[*contract.SchemaError](err)
	if !ok || !strings.Contains(se.Fix, "schema/migrations/006_to_007.sql") || strings.Contains(se.Fix, "005_to_006") {
		t.Fatalf("Open on version 6: %v, want a *contract.SchemaError naming schema/migrations/006_to_007.sql only", err)
	}
	if err := migrate(t, db); err != nil {
		t.Fatalf("migration: %v", err)
	}
	if got, want := schemaShape(t, db), schemaShape(t, newFile(t, sqlitestore.Settings{})); !slices.Equal(got, want) {
		t.Fatalf("the shape migrated from version 6 differs from a new file's:\nmigrated %v\nnew      %v", got, want)
	}
	if asleep(t, db, "late") {
		t.Fatal("the migration put late to sleep; every tenant starts awake")
	}
	q, err := sqlitestore.OpenQueue(ctx, db, clock, sqlitestore.Settings{})
	if err != nil {
		t.Fatalf("Open after the migration: %v", err)
	}
	if got := claimTenants(t, ctx, q, 10); !slices.Equal(got, []string{"now/a", "third/a"}) {
		t.Fatalf("claim after the migration = %v, want [now/a third/a]", got)
	}
	if !asleep(t, db, "now") || asleep(t, db, "third") {
		t.Fatal("after the claim, want now (its next item delayed) asleep and third (none left) out of the rotation")
	}
	clock.Set(time.Unix(0, later))
	if got := claimTenants(t, ctx, q, 10); !slices.Equal(got, []string{"late/x", "now/b"}) {
		t.Fatalf("claim when the delayed items are due = %v, want [late/x now/b]", got)
	}
}
