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

// Verify meets a version 4 database and names 005_run_versions.sql (then
// the migrations after it); a version 4 database with runs, migrated,
// passes Verify, keeps its runs (unfenced, fence 0, without versions) and
// writes them fenced and with versions, matches ExpectedSchema, and runs
// the state suite.
func TestSchemaMigrationFromV4(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	v4 := func(t *testing.T) *testDB { return atSchema(t, pgstore.SchemaV4(pgstore.StateTables{})) }
	migrate := func(t *testing.T, d *testDB) { migrateFrom(t, d, 4) }
	d := v4(t)
	err := pgstore.Verify(ctx, d.pool, pgstore.StateTables{})
	var se *contract.SchemaError
	if !errors.As(err, &se) || se.Found != "4" || !strings.Contains(se.Fix, "005_run_versions.sql") || !strings.Contains(se.Fix, pgstore.MigrationFile) {
		t.Fatalf("Verify on version 4 = %v, want a SchemaError naming 005_run_versions.sql and %s", err, pgstore.MigrationFile)
	}
	if _, err := d.pool.Exec(ctx, `
		INSERT INTO adk_runs (tenant, id, session, status, data, version, iterations, created_at, updated_at)
		VALUES ('acme', 'r1', 's', 'running', '{"step":3}', 7, 2, now(), now()),
		       ('acme', 'r2', '', '', NULL, 1, 0, now(), now())`); err != nil {
		t.Fatal(err)
	}
	migrate(t, d)
	if err := pgstore.Verify(ctx, d.pool, pgstore.StateTables{}); err != nil {
		t.Fatalf("Verify after the migration: %v", err)
	}
	m, _ := pgstore.Migration(pgstore.StateTables{}, 4)
	if _, err := d.pool.Exec(ctx, m); err == nil {
		t.Error("the migration ran twice")
	}
	st, err := pgstore.NewState(d.pool, nil, pgstore.Settings{Runs: contract.RunPolicy{KeepVersions: 5}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.GetRun(ctx, "acme", "r1")
	if err != nil || r.Version != 7 || r.Fence != 0 || string(r.Data) != `{"step":3}` || r.Counters.Iterations != 2 {
		t.Fatalf("a run after the migration: %+v, %v; want it as it was, fence 0", r, err)
	}
	if p, err := st.ListRunVersions(ctx, "acme", "r1", contract.PageRequest{}); err != nil || len(p.Versions) != 1 || p.Versions[0].Version != 7 {
		t.Fatalf("versions of a migrated run: %+v, %v; want the run alone", p, err)
	}
	if r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r1", Version: 7, Fence: 40, Data: []byte(`{"step":4}`)}); err != nil || r.Fence != 40 {
		t.Fatalf("fenced put on a migrated run: %+v, %v", r, err)
	}
	if _, err := st.PatchRun(ctx, "acme", "r1", contract.Patch{Fence: 39, Counters: contract.Counters{Iterations: 1}}); !errors.Is(err, contract.ErrFenced) {
		t.Fatalf("stale patch on a migrated run: %v, want a *StaleFenceError", err)
	}
	if v, err := st.GetRunVersion(ctx, "acme", "r1", 7); err != nil || string(v.Data) != `{"step":3}` {
		t.Fatalf("the version kept on a migrated run: %+v, %v", v, err)
	}
	fresh := newTestDB(t)
	if got, want := catalog(t, d), catalog(t, fresh); got != want {
		t.Errorf("migrated schema differs from ExpectedSchema:\nmigrated:\n%s\nexpected:\n%s", got, want)
	}
	t.Run("suite", func(t *testing.T) {
		contracttest.StateStore(t, func(t *testing.T, clock contract.Clock, p contract.RunPolicy) contract.StateStore {
			d := v4(t)
			migrate(t, d)
			s, err := pgstore.NewState(d.pool, clock, pgstore.Settings{Runs: p})
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
}
