package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/sqlitestore"
)

// versionFiveFile makes a file holding schema version 5, as the release
// before adk_run_blobs wrote it, under each pair of tenants given: run r1
// of the first at version 6 with five versions in the row layout of
// version 5 (puts' versions with their data, an empty one as NULL, and
// status patches' versions with an empty blob, which says they hold
// none), run r2 whose one version, a patch's, reads the run's data, and
// run r1 of the second without versions.
func versionFiveFile(t testing.TB, tenants ...[2]string) *sql.DB {
	t.Helper()
	db, _ := fileAtSchema(t, 5)
	at := contracttest.FakeEpoch.UnixNano()
	for _, pair := range tenants {
		for _, stmt := range []string{
			fmt.Sprintf(`INSERT INTO adk_runs (tenant, id, session, status, data, version, input_tokens, iterations, created_at, updated_at, fence) VALUES
				('%[2]s', 'r1', 's1', 'done', '{"step":5}', 6, 42, 5, %[1]d, %[1]d + 6, 4),
				('%[2]s', 'r2', '', 'b', '[1]', 2, 0, 0, %[1]d, %[1]d + 2, 0),
				('%[3]s', 'r1', '', 'queued', '[2]', 3, 0, 0, %[1]d, %[1]d, 0)`, at, pair[0], pair[1]),
			fmt.Sprintf(`INSERT INTO adk_run_versions (tenant, id, version, session, status, data, input_tokens, iterations, fence, updated_at) VALUES
				('%[2]s', 'r1', 1, 's1', 'queued', '{"step":1}', 0, 0, 0, %[1]d + 1),
				('%[2]s', 'r1', 2, 's1', 'queued', X'', 0, 1, 0, %[1]d + 2),
				('%[2]s', 'r1', 3, 's1', 'running', NULL, 10, 2, 2, %[1]d + 3),
				('%[2]s', 'r1', 4, 's1', 'running', X'', 20, 3, 3, %[1]d + 4),
				('%[2]s', 'r1', 5, 's1', 'waiting', '{"step":4}', 30, 4, 4, %[1]d + 5),
				('%[2]s', 'r2', 1, '', 'a', X'', 0, 0, 0, %[1]d + 1)`, at, pair[0]),
		} {
			if _, err := db.Exec(stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	}
	return db
}

// The data each version of the first tenant's r1 and r2 in a version 5
// file held (empty: none), as a read of version 5 returned it.
var versionFiveData = map[string]map[int64]string{
	"r1": {1: `{"step":1}`, 2: "", 3: "", 4: `{"step":4}`, 5: `{"step":4}`, 6: `{"step":5}`},
	"r2": {1: `[1]`, 2: `[1]`},
}

// checkVersionFiveData reads every version of the first tenant's runs of
// a migrated version 5 file, one by one and listed.
func checkVersionFiveData(ctx context.Context, t *testing.T, runs *sqlitestore.SQLiteStateStore, tenant string) {
	t.Helper()
	for id, want := range versionFiveData {
		for v, data := range want {
			got, err := runs.GetRunVersion(ctx, tenant, id, v)
			if err != nil || string(got.Data) != data || (data == "" && got.Data != nil) {
				t.Fatalf("%s/%s version %d after the migration = %+v, %v; want data %q", tenant, id, v, got, err, data)
			}
		}
		p, err := runs.ListRunVersions(ctx, tenant, id, contract.PageRequest{Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		for {
			for _, got := range p.Versions {
				if data := want[got.Version]; string(got.Data) != data {
					t.Fatalf("%s/%s lists version %d with data %q, want %q", tenant, id, got.Version, got.Data, data)
				}
			}
			if p.Next == "" {
				break
			}
			if p, err = runs.ListRunVersions(ctx, tenant, id, contract.PageRequest{Limit: 4, Cursor: p.Next}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Open meets a version 5 file with the migration's name in the fix and
// leaves it alone; after the migration every version the old release
// kept reads as before (its data, an empty one, or for a status patch's
// the data of the next newer version that holds some, or the run's), the
// file has the shape of a new one and writes keep, move, prune and
// delete the migrated versions and their data.
func TestMigrationFromVersionFive(t *testing.T) {
	ctx := t.Context()
	db := versionFiveFile(t, [2]string{"acme", "beta"})
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch.Add(10))
	s := sqlitestore.Settings{Runs: contract.RunPolicy{KeepVersions: 10}}
	_, err := sqlitestore.OpenState(ctx, db, clock, s)
	se, ok := errors.AsType[*contract.SchemaError](err)
	if !ok || !strings.Contains(se.Fix, "schema/migrations/005_to_006.sql") || strings.Contains(se.Fix, "004_to_005") {
		t.Fatalf("Open on version 5: %v, want a *contract.SchemaError naming schema/migrations/005_to_006.sql only", err)
	}
	if err := migrate(t, db); err != nil {
		t.Fatalf("migration: %v", err)
	}
	if got, want := schemaShape(t, db), schemaShape(t, newFile(t, sqlitestore.Settings{})); !slices.Equal(got, want) {
		t.Fatalf("the shape migrated from version 5 differs from a new file's:\nmigrated %v\nnew      %v", got, want)
	}
	checkBlobs(t, db)
	var blobs int
	if err := db.QueryRow("SELECT count(*) FROM adk_run_blobs").Scan(&blobs); err != nil || blobs != 3 {
		t.Fatalf("the migration wrote %d rows of data (%v), want 3: versions 1, 3 and 5 of r1", blobs, err)
	}
	runs, err := sqlitestore.OpenState(ctx, db, clock, s)
	if err != nil {
		t.Fatalf("Open after the migration: %v", err)
	}
	checkVersionFiveData(ctx, t, runs, "acme")
	v3, err := runs.GetRunVersion(ctx, "acme", "r1", 3)
	if err != nil || v3.Status != "running" || v3.Fence != 2 || v3.Counters.InputTokens != 10 || v3.Counters.Iterations != 2 || v3.Seq != 1 {
		t.Fatalf("version 3 after the migration = %+v, %v", v3, err)
	}
	fork, err := runs.ForkRun(ctx, "acme", "r1", 4, "r1-fork")
	if err != nil || string(fork.Data) != `{"step":4}` || fork.Status != "running" {
		t.Fatalf("fork of the migrated version 4 = %+v, %v", fork, err)
	}
	// A store keeping two: its puts move the migrated versions holding
	// data (the oldest first, once past the bound) and its prune deletes
	// the others; every version it keeps reads what the run held.
	two := runStore(t, db, clock, contract.RunPolicy{KeepVersions: 2})
	r, err := two.GetRun(ctx, "acme", "r1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{r.Version: string(r.Data)}
	for i := range 4 {
		data := fmt.Sprintf(`{"new":%d}`, i)
		if r, err = two.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r1", Session: "s1", Status: "done", Data: []byte(data), Version: r.Version, Fence: 4}); err != nil {
			t.Fatal(err)
		}
		want[r.Version] = data
		checkBlobs(t, db)
	}
	p, err := two.ListRunVersions(ctx, "acme", "r1", contract.PageRequest{})
	if err != nil || len(p.Versions) != 3 || p.Versions[2].Version != r.Version-2 {
		t.Fatalf("versions after the puts = %+v, %v; want the run and two", p, err)
	}
	for _, v := range p.Versions {
		if string(v.Data) != want[v.Version] {
			t.Fatalf("version %d reads %s, want %s", v.Version, v.Data, want[v.Version])
		}
	}
	for _, id := range []string{"r1", "r2"} {
		if err := runs.DeleteRun(ctx, "acme", id); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.QueryRow("SELECT count(*) FROM adk_run_blobs").Scan(&blobs); err != nil || blobs != 0 {
		t.Fatalf("the runs deleted, %d rows of their versions' data are left (%v)", blobs, err)
	}
	if got, err := runs.GetRun(ctx, "beta", "r1"); err != nil || string(got.Data) != `[2]` || got.Version != 3 {
		t.Fatalf("the run without versions after the migration = %+v, %v", got, err)
	}
}

// The state suite passes on a file that began at version 5 holding runs
// with versions (of tenants the suite does not use) and was migrated, and
// those runs read as before once it has run.
func TestStateStoreContractOnAVersionFiveFile(t *testing.T) {
	t.Parallel() // the slowest tests of the package, each on files of its own
	contracttest.StateStore(t, func(t *testing.T, clock contract.Clock, p contract.RunPolicy) contract.StateStore {
		db := versionFiveFile(t, [2]string{"v5-alpha", "v5-beta"})
		if err := migrate(t, db); err != nil {
			t.Fatal(err)
		}
		s, err := sqlitestore.OpenState(t.Context(), db, clock, sqlitestore.Settings{Runs: p})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				return
			}
			reader := runStore(t, db, contracttest.NewFakeClock(contracttest.FakeEpoch.Add(10)), contract.RunPolicy{KeepVersions: 10})
			// t.Context is done by now.
			checkVersionFiveData(context.Background(), t, reader, "v5-alpha")
			checkBlobs(t, db)
		})
		return s
	})
}
