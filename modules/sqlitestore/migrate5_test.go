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

// versionFourFile makes a file holding schema version 4, as the release
// before fenced writes created it, with three runs (one in a session, one
// with counters) under each pair of tenants given.
func versionFourFile(t testing.TB, tenants ...[2]string) *sql.DB {
	t.Helper()
	db, _ := fileAtSchema(t, 4)
	at := contracttest.FakeEpoch.UnixNano()
	for _, pair := range tenants {
		stmt := fmt.Sprintf(`INSERT INTO adk_runs (tenant, id, session, status, data, version, input_tokens, iterations, created_at, updated_at) VALUES
			('%[2]s', 'r1', 's1', 'running', '{"step":3}', 3, 42, 2, %[1]d, %[1]d),
			('%[2]s', 'r2', '', 'done', NULL, 1, 0, 0, %[1]d, %[1]d),
			('%[3]s', 'r1', '', 'queued', '[1]', 7, 0, 0, %[1]d, %[1]d)`, at, pair[0], pair[1])
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return db
}

// Open meets a version 4 file with the migration's name in the fix and
// leaves it alone; after the migration every run the old release wrote
// reads as before with no fence, the file has the shape of a new one, and
// fences and versions work on the old runs.
func TestMigrationFromVersionFour(t *testing.T) {
	ctx := t.Context()
	db := versionFourFile(t, [2]string{"acme", "beta"})
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch.Add(time.Hour))
	s := sqlitestore.Settings{Runs: contract.RunPolicy{KeepVersions: 2}}
	_, err := sqlitestore.OpenState(ctx, db, clock, s)
	se, ok := errors.AsType[*contract.SchemaError](err)
	if !ok || !strings.Contains(se.Fix, "schema/migrations/004_to_005.sql") || strings.Contains(se.Fix, "003_to_004") {
		t.Fatalf("Open on version 4: %v, want a *contract.SchemaError naming schema/migrations/004_to_005.sql only", err)
	}
	if err := migrate(t, db); err != nil {
		t.Fatalf("migration: %v", err)
	}
	if got, want := schemaShape(t, db), schemaShape(t, newFile(t, sqlitestore.Settings{})); !slices.Equal(got, want) {
		t.Fatalf("the shape migrated from version 4 differs from a new file's:\nmigrated %v\nnew      %v", got, want)
	}
	runs, err := sqlitestore.OpenState(ctx, db, clock, s)
	if err != nil {
		t.Fatalf("Open after the migration: %v", err)
	}
	r1, err := runs.GetRun(ctx, "acme", "r1")
	if err != nil || r1.Status != "running" || r1.Version != 3 || r1.Session != "s1" || string(r1.Data) != `{"step":3}` ||
		r1.Counters.InputTokens != 42 || r1.Counters.Iterations != 2 || r1.Fence != 0 || !r1.UpdatedAt.Equal(contracttest.FakeEpoch) {
		t.Fatalf("run after the migration: %+v, %v", r1, err)
	}
	page, err := runs.ListSessionRuns(ctx, "acme", "s1", contract.PageRequest{Limit: 10})
	if err != nil || len(page.Runs) != 1 || page.Runs[0].ID != "r1" {
		t.Fatalf("session runs after the migration: %+v, %v", page, err)
	}
	// The first fenced write of an old run lands and sets its fence; a
	// lower one is refused.
	r1.Data, r1.Fence = []byte(`{"step":4}`), 10
	put, err := runs.PutRun(ctx, *r1)
	if err != nil || put.Fence != 10 || put.Version != 4 {
		t.Fatalf("fenced PutRun of a migrated run = %+v, %v", put, err)
	}
	if _, err := runs.PatchRun(ctx, "acme", "r1", contract.Patch{Status: "late", Fence: 9}); !errors.Is(err, contract.ErrFenced) {
		t.Fatalf("stale PatchRun of a migrated run: %v, want a *contract.StaleFenceError", err)
	}
	v3, err := runs.GetRunVersion(ctx, "acme", "r1", 3)
	if err != nil || string(v3.Data) != `{"step":3}` || v3.Fence != 0 || v3.Counters.InputTokens != 42 {
		t.Fatalf("the migrated run's version 3 = %+v, %v", v3, err)
	}
	fork, err := runs.ForkRun(ctx, "acme", "r1", 3, "r1-fork")
	if err != nil || string(fork.Data) != `{"step":3}` || fork.Version != 1 || fork.Seq <= 3 {
		t.Fatalf("fork of the migrated run's version 3 = %+v, %v", fork, err)
	}
	if err := runs.DeleteRunFenced(ctx, "beta", "r1", 1); err != nil {
		t.Fatalf("fenced delete of an unfenced migrated run: %v", err)
	}
}

// The state suite passes on a file that began at version 4 holding runs
// (of tenants the suite does not use) and was migrated.
func TestStateStoreContractOnAMigratedFile(t *testing.T) {
	t.Parallel() // the slowest tests of the package, each on files of its own
	contracttest.StateStore(t, func(t *testing.T, clock contract.Clock, p contract.RunPolicy) contract.StateStore {
		db := versionFourFile(t, [2]string{"v4-alpha", "v4-beta"})
		if err := migrate(t, db); err != nil {
			t.Fatal(err)
		}
		s, err := sqlitestore.OpenState(t.Context(), db, clock, sqlitestore.Settings{Runs: p})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
