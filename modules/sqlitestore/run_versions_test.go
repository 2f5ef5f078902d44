package sqlitestore_test

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/sqlitestore"
)

// runStore opens a state store with policy p on db.
func runStore(t testing.TB, db *sql.DB, clock contract.Clock, p contract.RunPolicy) *sqlitestore.SQLiteStateStore {
	t.Helper()
	s, err := sqlitestore.NewState(db, clock, sqlitestore.Settings{Runs: p})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storedVersions counts the rows of a run's versions in the file, kept or
// not yet deleted.
func storedVersions(t testing.TB, db *sql.DB, tenant, id string) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM adk_run_versions WHERE tenant = ? AND id = ?", tenant, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkBlobs checks that every version that holds data names a row of
// adk_run_blobs, and that every row there is named by exactly one
// version: no write leaves data no version reads.
func checkBlobs(t testing.TB, db *sql.DB) {
	t.Helper()
	var dangling, unowned int
	if err := db.QueryRow(`SELECT
		(SELECT count(*) FROM adk_run_versions v WHERE v.blob IS NOT NULL AND NOT EXISTS (SELECT 1 FROM adk_run_blobs b WHERE b.n = v.blob)),
		(SELECT count(*) FROM adk_run_blobs b WHERE (SELECT count(*) FROM adk_run_versions v WHERE v.blob = b.n) <> 1)`).Scan(&dangling, &unowned); err != nil {
		t.Fatal(err)
	}
	if dangling != 0 || unowned != 0 {
		t.Fatalf("%d versions name a missing blob row, %d blob rows are not named by exactly one version", dangling, unowned)
	}
}

func isConflict(err error) bool {
	_, ok := errors.AsType[*contract.StateConflictError](err)
	return ok
}

func wantStale(t *testing.T, what string, err error, fence, stored int64) {
	t.Helper()
	se, ok := errors.AsType[*contract.StaleFenceError](err)
	if !ok || se.Fence != fence || se.Stored != stored || !errors.Is(err, contract.ErrFenced) {
		t.Fatalf("%s: %v, want a *contract.StaleFenceError (fence %d below %d)", what, err, fence, stored)
	}
}

// A fence refuses every lower write whole, whatever else is wrong with it
// (the fence is checked before the version and the counters), lets equal,
// higher and unfenced writes land, and goes with the run when it is
// deleted.
func TestFencedRunWrites(t *testing.T) {
	ctx := t.Context()
	db := newFile(t, sqlitestore.Settings{})
	s := runStore(t, db, contracttest.NewFakeClock(contracttest.FakeEpoch), contract.RunPolicy{KeepVersions: 5})
	r, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: []byte(`1`), Fence: 5})
	if err != nil || r.Fence != 5 {
		t.Fatalf("fenced create = %+v, %v", r, err)
	}
	before, versions := *r, 0
	unchanged := func(what string) {
		t.Helper()
		got, err := s.GetRun(ctx, "acme", "r")
		if err != nil || got.Version != before.Version || string(got.Data) != string(before.Data) || got.Fence != before.Fence ||
			got.Counters != before.Counters || got.Status != before.Status {
			t.Fatalf("after %s the run is %+v, %v; want %+v", what, got, err, before)
		}
		if n := storedVersions(t, db, "acme", "r"); n != versions {
			t.Fatalf("after %s the run has %d stored versions, want %d", what, n, versions)
		}
	}
	_, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: []byte(`2`), Version: 1, Fence: 4})
	wantStale(t, "PutRun fenced below", err, 4, 5)
	unchanged("a stale PutRun")
	_, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: []byte(`2`), Version: 9, Fence: 4})
	wantStale(t, "PutRun fenced below with a wrong version", err, 4, 5)
	_, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Fence: 4})
	wantStale(t, "create fenced below over an existing run", err, 4, 5)
	_, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Fence: 5})
	if ce, ok := errors.AsType[*contract.StateConflictError](err); !ok || ce.Actual != 1 {
		t.Fatalf("create with an equal fence over an existing run: %v, want a conflict at version 1", err)
	}
	_, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}, Status: "x", Fence: 4})
	wantStale(t, "PatchRun fenced below", err, 4, 5)
	_, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: -1}, Fence: 4})
	wantStale(t, "PatchRun fenced below that would underflow", err, 4, 5)
	wantStale(t, "DeleteRunFenced below", s.DeleteRunFenced(ctx, "acme", "r", 4), 4, 5)
	unchanged("stale writes")

	r, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: []byte(`2`), Version: 1})
	if err != nil || r.Fence != 5 || r.Version != 2 {
		t.Fatalf("unfenced PutRun = %+v, %v; want it to land and keep fence 5", r, err)
	}
	r, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: []byte(`3`), Version: 2, Fence: 5})
	if err != nil || r.Fence != 5 || r.Version != 3 {
		t.Fatalf("PutRun at the stored fence = %+v, %v", r, err)
	}
	r, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}, Fence: 8})
	if err != nil || r.Fence != 8 || r.Counters.Iterations != 1 {
		t.Fatalf("PatchRun fenced above = %+v, %v; want fence 8", r, err)
	}
	r, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Status: "unfenced"})
	if err != nil || r.Fence != 8 || r.Status != "unfenced" {
		t.Fatalf("unfenced PatchRun = %+v, %v; want it to land and keep fence 8", r, err)
	}
	// Versions 1 and 2 were kept by the puts, 4 by the status patch.
	before, versions = *r, 3
	_, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version, Fence: 7})
	wantStale(t, "PutRun below the raised fence", err, 7, 8)
	unchanged("a PutRun below the raised fence")
	if got, err := s.GetRunVersion(ctx, "acme", "r", 1); err != nil || got.Fence != 5 || string(got.Data) != `1` {
		t.Fatalf("version 1 = %+v, %v; want its data and fence", got, err)
	}

	if _, err := s.PatchRun(ctx, "acme", "missing", contract.Patch{Fence: 1}); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("fenced PatchRun of a missing run: %v, want ErrNotFound", err)
	}
	if err := s.DeleteRunFenced(ctx, "acme", "missing", 1); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("fenced delete of a missing run: %v, want ErrNotFound", err)
	}
	if _, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "missing", Version: 3, Fence: 1}); !isConflict(err) {
		t.Fatalf("fenced PutRun of a missing run at a version: %v, want a conflict", err)
	}
	if err := s.DeleteRunFenced(ctx, "acme", "r", 8); err != nil {
		t.Fatal(err)
	}
	if n := storedVersions(t, db, "acme", "r"); n != 0 {
		t.Fatalf("a deleted run left %d versions", n)
	}
	var blobs int
	if err := db.QueryRow("SELECT count(*) FROM adk_run_blobs").Scan(&blobs); err != nil || blobs != 0 {
		t.Fatalf("a deleted run left %d rows of its versions' data (%v)", blobs, err)
	}
	r, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Fence: 2})
	if err != nil || r.Fence != 2 || r.Version != 1 {
		t.Fatalf("create after the delete = %+v, %v; want the old fence forgotten", r, err)
	}
	if p, err := s.ListRunVersions(ctx, "acme", "r", contract.PageRequest{}); err != nil || len(p.Versions) != 1 {
		t.Fatalf("versions after the delete and create = %+v, %v; want the new run only", p, err)
	}
}

// A store that requires a fence refuses unfenced writes and writes
// nothing.
func TestRequireFence(t *testing.T) {
	ctx := t.Context()
	s := runStore(t, newFile(t, sqlitestore.Settings{}), nil, contract.RunPolicy{RequireFence: true})
	if _, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r"}); !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("unfenced PutRun: %v, want a *contract.ValidationError", err)
	}
	if _, err := s.GetRun(ctx, "acme", "r"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("a refused PutRun wrote the run: %v", err)
	}
	if _, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Fence: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRun(ctx, "acme", "r"); !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("unfenced DeleteRun: %v, want a *contract.ValidationError", err)
	}
	if err := s.DeleteRunFenced(ctx, "acme", "r", 1); err != nil {
		t.Fatal(err)
	}
}

// Every put and every patch that changes the status keeps the run as it
// was; counter-only patches keep none; the file holds no more than the
// policy keeps, and pages list the run first then its versions newest
// first, stable while the run is written.
func TestRunVersionsKeptAndPaged(t *testing.T) {
	ctx := t.Context()
	db := newFile(t, sqlitestore.Settings{})
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	s := runStore(t, db, clock, contract.RunPolicy{KeepVersions: 3})
	r, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: []byte(`0`)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		clock.Advance(time.Second)
		if r, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Status: "running", Data: fmt.Appendf(nil, "%d", i), Version: r.Version}); err != nil {
			t.Fatal(err)
		}
	}
	if r, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: 7}}); err != nil {
		t.Fatal(err)
	}
	if _, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Status: r.Status}); err != nil { // the status it has: no change
		t.Fatal(err)
	}
	if r, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Status: "done"}); err != nil {
		t.Fatal(err)
	}
	// The puts kept versions 1-5; 7 and 8 are patches that kept nothing
	// (counters only, and the status it had), 9 the status patch, which
	// kept 8 (with the counter sums). The newest three are 8, 5 and 4.
	// The write to version 8 pruned (its turn: sqlitestore.PruneEvery),
	// leaving 3, 4 and 5; the status patch kept 8.
	if sqlitestore.PruneEvery != 8 {
		t.Fatalf("PruneEvery is %d; the counts below assume 8", sqlitestore.PruneEvery)
	}
	if n := storedVersions(t, db, "acme", "r"); n != 4 {
		t.Fatalf("the file holds %d versions of the run, want 4", n)
	}
	var got []int64
	page := contract.PageRequest{Limit: 2}
	for {
		p, err := s.ListRunVersions(ctx, "acme", "r", page)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range p.Versions {
			got = append(got, v.Version)
			if v.Seq != r.Seq || !v.CreatedAt.Equal(r.CreatedAt) || v.Tenant != "acme" || v.ID != "r" {
				t.Fatalf("version %+v does not carry the run's key, Seq and CreatedAt", v)
			}
		}
		if p.Next == "" {
			break
		}
		// A write between pages keeps a version no later page lists.
		if r, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version, Status: "done"}); err != nil {
			t.Fatal(err)
		}
		page.Cursor = p.Next
	}
	if want := []int64{9, 8, 5}; fmt.Sprint(got[:3]) != fmt.Sprint(want) {
		t.Fatalf("listed versions %v, want %v first", got, want)
	}
	v8, err := s.GetRunVersion(ctx, "acme", "r", 8)
	if err != nil || v8.Counters.InputTokens != 7 || v8.Status != "running" || string(v8.Data) != `5` {
		t.Fatalf("version 8 = %+v, %v; want the data of the last put and the counter sums", v8, err)
	}
	for _, v := range []int64{1, 7, 100} {
		if _, err := s.GetRunVersion(ctx, "acme", "r", v); !errors.Is(err, contract.ErrNotFound) {
			t.Fatalf("GetRunVersion(%d): %v, want ErrNotFound", v, err)
		}
	}
	if _, err := s.ListRunVersions(ctx, "acme", "r", contract.PageRequest{Cursor: "x"}); !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("a bad cursor: %v, want a *contract.ValidationError", err)
	}
	if _, err := s.ListRunVersions(ctx, "acme", "missing", contract.PageRequest{Cursor: "5"}); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("versions of a missing run: %v, want ErrNotFound", err)
	}
	checkBlobs(t, db)
}

// Versions past their age are never read, by the store's clock, and the
// writes delete them: a put moves the oldest, once it is past the age, to
// the version it keeps, and the prune deletes the others.
func TestRunVersionsAge(t *testing.T) {
	ctx := t.Context()
	db := newFile(t, sqlitestore.Settings{})
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	s := runStore(t, db, clock, contract.RunPolicy{VersionAge: time.Minute})
	r, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		clock.Advance(20 * time.Second)
		if r, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version}); err != nil {
			t.Fatal(err)
		}
	}
	// Versions 1-3 were written at 0, 20 and 40 seconds; at 60 the first
	// is a minute old, and the put at 60 seconds moved it to version 3.
	p, err := s.ListRunVersions(ctx, "acme", "r", contract.PageRequest{})
	if err != nil || len(p.Versions) != 3 || p.Versions[2].Version != 2 {
		t.Fatalf("versions at a minute = %+v, %v; want 4, 3, 2", p, err)
	}
	if _, err := s.GetRunVersion(ctx, "acme", "r", 1); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("a version a minute old: %v, want ErrNotFound", err)
	}
	if _, err := s.ForkRun(ctx, "acme", "r", 1, "f"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("fork of a version a minute old: %v, want ErrNotFound", err)
	}
	if n := storedVersions(t, db, "acme", "r"); n != 2 {
		t.Fatalf("the file holds %d versions, want 2 (the put at a minute moved version 1)", n)
	}
	clock.Advance(30 * time.Second)
	if p, err := s.ListRunVersions(ctx, "acme", "r", contract.PageRequest{}); err != nil || len(p.Versions) != 2 {
		t.Fatalf("versions at 90 seconds = %+v, %v; want 4, 3", p, err)
	}
	if n := storedVersions(t, db, "acme", "r"); n != 2 {
		t.Fatalf("the file holds %d versions, want 2 (reads delete none)", n)
	}
	// An hour later, the status patches up to the run's turn to prune
	// keep versions 4 to 7 (a patch moves none); the one that leaves it
	// at version 8 deletes 2 to 4, older than a minute.
	clock.Advance(time.Hour)
	for r.Version < sqlitestore.PruneEvery {
		if r, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Status: fmt.Sprintf("s%d", r.Version)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := storedVersions(t, db, "acme", "r"); n != sqlitestore.PruneEvery-5 {
		t.Fatalf("after the prune the file holds %d versions, want %d", n, sqlitestore.PruneEvery-5)
	}
	if p, err := s.ListRunVersions(ctx, "acme", "r", contract.PageRequest{}); err != nil || len(p.Versions) != sqlitestore.PruneEvery-4 {
		t.Fatalf("versions after the prune = %+v, %v", p, err)
	}
	checkBlobs(t, db)
}

// A write deletes at most contract.VersionPruneBatch versions, however
// many are past the bounds; reads hide the rest.
func TestRunVersionsPruneBounded(t *testing.T) {
	ctx := t.Context()
	db := newFile(t, sqlitestore.Settings{Durability: sqlitestore.DurabilityNormal})
	wide := runStore(t, db, nil, contract.RunPolicy{KeepVersions: contract.MaxRunVersions})
	r, err := wide.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	const puts = 250
	for range puts {
		if r, err = wide.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version}); err != nil {
			t.Fatal(err)
		}
	}
	narrow := runStore(t, db, nil, contract.RunPolicy{KeepVersions: 1})
	if p, err := narrow.ListRunVersions(ctx, "acme", "r", contract.PageRequest{}); err != nil || len(p.Versions) != 2 {
		t.Fatalf("versions under a policy keeping 1 = %d, %v; want the run and one", len(p.Versions), err)
	}
	// Each write moves the oldest version to the one it keeps, so the
	// file holds as many, until the run's turn to prune, which deletes a
	// batch, the version that write moved counted in it.
	stored := puts
	for {
		if r, err = narrow.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version}); err != nil {
			t.Fatal(err)
		}
		n := storedVersions(t, db, "acme", "r")
		if r.Version%sqlitestore.PruneEvery != 0 {
			if n != stored {
				t.Fatalf("a write at version %d left %d versions, want %d", r.Version, n, stored)
			}
			continue
		}
		if want := stored - (contract.VersionPruneBatch - 1); n != want {
			t.Fatalf("the pruning write left %d versions, want %d (%d deleted, one moved)", n, want, contract.VersionPruneBatch-1)
		}
		break
	}
	if p, err := narrow.ListRunVersions(ctx, "acme", "r", contract.PageRequest{}); err != nil || len(p.Versions) != 2 || p.Versions[0].Version != r.Version || p.Versions[1].Version != r.Version-1 {
		t.Fatalf("versions after the write = %+v, %v", p, err)
	}
	checkBlobs(t, db)
}

// A store keeping no versions keeps none, and lists the run alone.
func TestRunVersionsOff(t *testing.T) {
	ctx := t.Context()
	db := newFile(t, sqlitestore.Settings{})
	s := runStore(t, db, nil, contract.RunPolicy{})
	r, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: r.Version, Status: "x"}); err != nil {
		t.Fatal(err)
	}
	if n := storedVersions(t, db, "acme", "r"); n != 0 {
		t.Fatalf("a store keeping no versions stored %d", n)
	}
	if p, err := s.ListRunVersions(ctx, "acme", "r", contract.PageRequest{}); err != nil || len(p.Versions) != 1 || p.Versions[0].Version != 2 || p.Next != "" {
		t.Fatalf("versions = %+v, %v; want the run alone", p, err)
	}
	if got, err := s.GetRunVersion(ctx, "acme", "r", 2); err != nil || got.Status != "x" {
		t.Fatalf("the current version = %+v, %v", got, err)
	}
}

// A fork copies the version's data, status, session and counters, and
// starts at version 1 without a fence or versions; onto an existing run
// it is a conflict naming that run's version.
func TestForkRun(t *testing.T) {
	ctx := t.Context()
	db := newFile(t, sqlitestore.Settings{})
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	s := runStore(t, db, clock, contract.RunPolicy{KeepVersions: 10})
	if _, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Session: "s", Status: "one", Data: []byte(`{"a":1}`), Fence: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{CostMicros: 5}, Fence: 3}); err != nil {
		t.Fatal(err)
	}
	r, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Status: "two", Data: []byte(`{"a":2}`), Version: 2, Fence: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{CostMicros: 100}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	f, err := s.ForkRun(ctx, "acme", "r", 2, "f")
	if err != nil || string(f.Data) != `{"a":1}` || f.Status != "one" || f.Session != "s" || f.Counters.CostMicros != 5 ||
		f.Version != 1 || f.Fence != 0 || f.Seq <= r.Seq || !f.CreatedAt.Equal(clock.Now()) {
		t.Fatalf("fork of version 2 = %+v, %v", f, err)
	}
	if p, err := s.ListRunVersions(ctx, "acme", "f", contract.PageRequest{}); err != nil || len(p.Versions) != 1 {
		t.Fatalf("the fork's versions = %+v, %v; want itself alone", p, err)
	}
	if src, err := s.GetRun(ctx, "acme", "r"); err != nil || src.Version != 4 || src.Counters.CostMicros != 105 {
		t.Fatalf("the fork changed its source: %+v, %v", src, err)
	}
	if _, err := s.GetRunVersion(ctx, "acme", "r", 3); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("version 3, replaced by a counter-only patch: %v, want ErrNotFound", err)
	}
	_, err = s.ForkRun(ctx, "acme", "r", 4, "f") // the run as it is
	if ce, ok := errors.AsType[*contract.StateConflictError](err); !ok || ce.ID != "f" || ce.Expected != 0 || ce.Actual != 1 {
		t.Fatalf("fork onto an existing run: %v, want a conflict on f at version 1", err)
	}
	if _, err := s.ForkRun(ctx, "acme", "r", 9, "g"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("fork of a version never written: %v, want ErrNotFound", err)
	}
	if _, err := s.ForkRun(ctx, "acme", "nope", 1, "g"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("fork of a missing run: %v, want ErrNotFound", err)
	}
	if _, err := s.GetRun(ctx, "acme", "g"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("a refused fork created its run: %v", err)
	}
	checkBlobs(t, db)
}

// A fork and the work it enqueues in one transaction commit together, or
// neither lands.
func TestBoundForkAndEnqueue(t *testing.T) {
	ctx := t.Context()
	db := newFile(t, sqlitestore.Settings{})
	runs := runStore(t, db, nil, contract.RunPolicy{KeepVersions: 10})
	work, err := sqlitestore.NewQueue(db, nil, sqlitestore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runs.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: []byte(`1`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runs.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: []byte(`2`), Version: r.Version}); err != nil {
		t.Fatal(err)
	}
	for _, commit := range []bool{false, true} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := runs.Bound(tx).ForkRun(ctx, "acme", "r", 1, "f")
		if err != nil || string(f.Data) != `1` {
			t.Fatalf("bound fork = %+v, %v", f, err)
		}
		if err := work.Bound(tx).Enqueue(ctx, contract.Item{Tenant: "acme", ID: "f"}); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		_, runErr := runs.GetRun(ctx, "acme", "f")
		_, itemErr := work.Item(ctx, contract.ItemKey{Tenant: "acme", ID: "f"})
		if commit && (runErr != nil || itemErr != nil) {
			t.Fatalf("after commit: fork %v, item %v; want both", runErr, itemErr)
		}
		if !commit && (!errors.Is(runErr, contract.ErrNotFound) || !errors.Is(itemErr, contract.ErrNotFound)) {
			t.Fatalf("after rollback: fork %v, item %v; want neither", runErr, itemErr)
		}
	}
}

// A stale write inside the caller's transaction writes nothing there
// either: the caller that commits after ignoring the refusal commits
// nothing of it.
func TestBoundStaleWriteWritesNothing(t *testing.T) {
	ctx := t.Context()
	db := newFile(t, sqlitestore.Settings{})
	runs := runStore(t, db, nil, contract.RunPolicy{KeepVersions: 10})
	r, err := runs.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: []byte(`1`), Fence: 9})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := runs.Bound(tx)
	_, err = b.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: []byte(`2`), Version: r.Version, Fence: 8})
	wantStale(t, "bound PutRun", err, 8, 9)
	_, err = b.PatchRun(ctx, "acme", "r", contract.Patch{Status: "x", Fence: 8})
	wantStale(t, "bound PatchRun", err, 8, 9)
	wantStale(t, "bound DeleteRunFenced", b.DeleteRunFenced(ctx, "acme", "r", 8), 8, 9)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := runs.GetRun(ctx, "acme", "r")
	if err != nil || got.Version != 1 || string(got.Data) != `1` || got.Status != "" {
		t.Fatalf("after committing refused writes the run is %+v, %v", got, err)
	}
	if n := storedVersions(t, db, "acme", "r"); n != 0 {
		t.Fatalf("refused writes kept %d versions", n)
	}
}

// Tokens of one item keep increasing across closing and reopening the
// file: a claim, a heartbeat, the file closed and opened again, and a
// claim after the lease expired is given a greater token than both.
func TestTokensIncreaseAcrossReopenAndExpiry(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "adk.db")
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	open := func() (*sql.DB, *sqlitestore.SQLiteWorkQueue) {
		t.Helper()
		db, err := sqlitestore.OpenDB(path, sqlitestore.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		q, err := sqlitestore.OpenQueue(ctx, db, clock, sqlitestore.Settings{})
		if err != nil {
			db.Close()
			t.Fatal(err)
		}
		return db, q
	}
	db, q := open()
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	req := contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1}
	ls, err := q.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := q.Heartbeat(ctx, ls[0], time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if hb.Token <= ls[0].Token {
		t.Fatalf("heartbeat token %d not above the claim's %d", hb.Token, ls[0].Token)
	}
	db.Close()

	db, q = open()
	defer db.Close()
	clock.Advance(2 * time.Minute)
	if n, err := q.Reap(ctx, ""); err != nil || n != 1 {
		t.Fatalf("Reap = %d, %v; want the expired lease", n, err)
	}
	clock.Advance(time.Hour) // past the retry's backoff
	again, err := q.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Item.ID != "x" || again[0].Token <= hb.Token {
		t.Fatalf("claim after reopening and expiry = %+v; want item x with a token above %d", again[0], hb.Token)
	}
	// The lease taken back writes nothing under its old token.
	if _, ok := errors.AsType[*contract.LeaseLostError](q.Complete(ctx, hb)); !ok {
		t.Fatalf("Complete under the expired lease: want a *contract.LeaseLostError")
	}
}

// storedData returns the data a run's version holds of its own, as
// stored (its row of adk_run_blobs), whether that is NULL, and whether
// the version holds none (no blob row).
func storedData(t testing.TB, db *sql.DB, tenant, id string, version int64) (data []byte, null, none bool) {
	t.Helper()
	var d []byte
	var isNull, noBlob bool
	if err := db.QueryRow(`SELECT b.data, b.data IS NULL, v.blob IS NULL FROM adk_run_versions v LEFT JOIN adk_run_blobs b ON b.n = v.blob
		WHERE v.tenant = ? AND v.id = ? AND v.version = ?`, tenant, id, version).Scan(&d, &isNull, &noBlob); err != nil {
		t.Fatal(err)
	}
	return d, isNull, noBlob
}

// A version kept by a status patch stores no data of its own (the patch
// left the data as it was) and reads the data the run held at that
// version: that of the next newer version holding some, or the run's. A
// put's version holds its data, an empty one too; reads, pages and forks
// of every version return what the run held.
func TestPatchVersionsHoldNoData(t *testing.T) {
	ctx := t.Context()
	db := newFile(t, sqlitestore.Settings{})
	s := runStore(t, db, nil, contract.RunPolicy{KeepVersions: 20})
	r, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Status: "s0", Data: []byte(`"a"`)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{1: `"a"`} // the data of each version
	patch := func(status string) {
		t.Helper()
		if r, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Status: status, Counters: contract.Counters{Iterations: 1}}); err != nil {
			t.Fatal(err)
		}
		want[r.Version] = want[r.Version-1]
	}
	put := func(data string) {
		t.Helper()
		var d []byte
		if data != "" {
			d = []byte(data)
		}
		if r, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Status: r.Status, Data: d, Version: r.Version}); err != nil {
			t.Fatal(err)
		}
		want[r.Version] = data
	}
	// Versions 1-2 kept by patches read the put's 3 (data "a"); 4 by a
	// put of empty data; 5 by a patch of the empty run reads the put's 6
	// (empty); 7-8 by patches, the run's own data.
	patch("s1") // keeps 1
	patch("s2") // keeps 2
	put(`"b"`)  // keeps 3
	put("")     // keeps 4
	patch("s3") // keeps 5
	put(`"c"`)  // keeps 6
	patch("s4") // keeps 7
	patch("s5") // keeps 8
	for v, kind := range map[int64]string{1: "patch", 2: "patch", 3: "put", 4: "put", 5: "patch", 6: "put", 7: "patch", 8: "patch"} {
		d, null, none := storedData(t, db, "acme", "r", v)
		switch {
		case kind == "patch" && !none:
			t.Fatalf("version %d, kept by a patch, stores %q (NULL %v), want no data of its own", v, d, null)
		case kind == "put" && (none || string(d) != want[v]):
			t.Fatalf("version %d, kept by a put, stores %q (none %v), want %q", v, d, none, want[v])
		case kind == "put" && want[v] == "" && !null:
			t.Fatalf("version %d, kept by a put of empty data, stores an empty blob, want NULL", v)
		}
	}
	for v := int64(1); v <= r.Version; v++ {
		got, err := s.GetRunVersion(ctx, "acme", "r", v)
		if err != nil || string(got.Data) != want[v] || (want[v] == "" && got.Data != nil) {
			t.Fatalf("GetRunVersion(%d) = %+v, %v; want data %q", v, got, err, want[v])
		}
	}
	listed := 0
	for page := (contract.PageRequest{Limit: 3}); ; {
		p, err := s.ListRunVersions(ctx, "acme", "r", page)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range p.Versions {
			if string(v.Data) != want[v.Version] {
				t.Fatalf("listed version %d with data %q, want %q", v.Version, v.Data, want[v.Version])
			}
			listed++
		}
		if p.Next == "" {
			break
		}
		page.Cursor = p.Next
	}
	if listed != int(r.Version) {
		t.Fatalf("listed %d versions, want %d", listed, r.Version)
	}
	for _, v := range []int64{2, 5, 8} {
		f, err := s.ForkRun(ctx, "acme", "r", v, fmt.Sprintf("fork-%d", v))
		if err != nil || string(f.Data) != want[v] {
			t.Fatalf("ForkRun of version %d = %+v, %v; want data %q", v, f, err, want[v])
		}
	}
	checkBlobs(t, db)
}

// A prune deletes the oldest versions and stops at the first one it
// keeps, so a version kept by a patch never outlives the newer version it
// reads its data from, even when the clock went back between the writes
// that kept them and the newer one is past the age bound first.
func TestPruneKeepsWhatOlderVersionsRead(t *testing.T) {
	ctx := t.Context()
	db := newFile(t, sqlitestore.Settings{})
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch.Add(time.Hour))
	s := runStore(t, db, clock, contract.RunPolicy{VersionAge: 30 * time.Minute})
	if _, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Status: "s0", Data: []byte(`"a"`)}); err != nil {
		t.Fatal(err)
	}
	// Versions 1 and 2 are written at the epoch plus an hour and kept by
	// patches; then the clock goes back an hour, and a put keeps version
	// 3 (data "a", written then), the one 1 and 2 read.
	if _, err := s.PatchRun(ctx, "acme", "r", contract.Patch{Status: "s1"}); err != nil {
		t.Fatal(err)
	}
	clock.Set(contracttest.FakeEpoch)
	r, err := s.PatchRun(ctx, "acme", "r", contract.Patch{Status: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Status: r.Status, Data: []byte(`"b"`), Version: r.Version}); err != nil {
		t.Fatal(err)
	}
	// Forty minutes on, versions 1 and 2 (written an hour ahead) are
	// within the age bound and version 3 is past it; the writes up to
	// the run's turn to prune keep versions 4 to 7 (4 written at the
	// epoch, the others forty minutes on).
	clock.Advance(40 * time.Minute)
	for r.Version < sqlitestore.PruneEvery {
		if r, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Status: r.Status, Data: []byte(`"b"`), Version: r.Version}); err != nil {
			t.Fatal(err)
		}
	}
	// The prune met version 1, within the bound, first and deleted none.
	if n := storedVersions(t, db, "acme", "r"); n != sqlitestore.PruneEvery-1 {
		t.Fatalf("after the prune the file holds %d versions, want %d", n, sqlitestore.PruneEvery-1)
	}
	for _, v := range []int64{1, 2} {
		got, err := s.GetRunVersion(ctx, "acme", "r", v)
		if err != nil || string(got.Data) != `"a"` {
			t.Fatalf("GetRunVersion(%d) = %+v, %v; want data \"a\"", v, got, err)
		}
	}
	if _, err := s.GetRunVersion(ctx, "acme", "r", 3); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("GetRunVersion(3), past the age bound: %v, want ErrNotFound", err)
	}
	checkBlobs(t, db)
}

// Two stores with different policies on one file. A put by the one that
// keeps no versions deletes those the other kept, a batch at a time,
// oldest first; while some are left, every one of them (most kept by a
// status patch, holding no data of their own) still reads what the run
// held at that version.
func TestVersionsLeftByAnotherPolicy(t *testing.T) {
	ctx := t.Context()
	db := newFile(t, sqlitestore.Settings{})
	keeper := runStore(t, db, nil, contract.RunPolicy{KeepVersions: 1000})
	plain := runStore(t, db, nil, contract.RunPolicy{})
	for _, id := range []string{"few", "many"} {
		r, err := keeper.PutRun(ctx, contract.Run{Tenant: "acme", ID: id, Status: "s0", Data: []byte(`{"d":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		patches := 5
		if id == "many" {
			patches = contract.VersionPruneBatch + 20
		}
		for i := range patches {
			if r, err = keeper.PatchRun(ctx, "acme", id, contract.Patch{Status: fmt.Sprintf("s%d", i+1)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err = plain.PutRun(ctx, contract.Run{Tenant: "acme", ID: id, Version: r.Version, Status: "new", Data: []byte(`{"d":2}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := storedVersions(t, db, "acme", "few"); n != 0 {
		t.Errorf("the put of a store keeping none left %d of the 5 versions", n)
	}
	if _, err := keeper.GetRunVersion(ctx, "acme", "few", 1); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("a deleted version: %v, want ErrNotFound", err)
	}
	// many had 120 versions: the put kept the one it replaced (121) and
	// deleted the 100 oldest.
	if n := storedVersions(t, db, "acme", "many"); n != 21 {
		t.Errorf("many holds %d versions, want 21 (101..121)", n)
	}
	p, err := keeper.ListRunVersions(ctx, "acme", "many", contract.PageRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Versions) != 22 {
		t.Fatalf("listed %d versions, want the run and 21 kept", len(p.Versions))
	}
	for _, v := range p.Versions {
		want := `{"d":1}`
		if v.Version == 122 {
			want = `{"d":2}`
		}
		if string(v.Data) != want {
			t.Errorf("version %d holds %s, want %s (what the run held then)", v.Version, v.Data, want)
		}
		got, err := keeper.GetRunVersion(ctx, "acme", "many", v.Version)
		if err != nil || string(got.Data) != want {
			t.Errorf("GetRunVersion(%d) = %v, %v; want %s", v.Version, got, err, want)
		}
	}
	checkBlobs(t, db)
}

// Random puts (empty data among them), status patches and counter-only
// patches of two runs, the clock going forward and now and then back,
// under policies that bound versions by count, by age and by both:
// after every write each run lists, reads and forks the versions the
// policy keeps, each with what the run held at that version (a model
// kept beside the store says what that is), and the file holds no data
// that no version reads. A version that was past the age at a write may
// have been deleted then: after the clock went back, it may be listed
// again or not.
func TestRunVersionsAgainstAModel(t *testing.T) {
	t.Parallel() // the slowest tests of the package, each on files of its own
	type kept struct {
		version int64
		data    string
		status  string
		iters   int64
		updated time.Time
		expired bool // past the age at a write: the write may have deleted it
	}
	for _, p := range []contract.RunPolicy{
		{KeepVersions: 1},
		{KeepVersions: 3},
		{VersionAge: 40 * time.Second},
		{KeepVersions: 4, VersionAge: 30 * time.Second},
	} {
		t.Run(fmt.Sprintf("keep%d-age%s", p.KeepVersions, p.VersionAge), func(t *testing.T) {
			ctx := t.Context()
			db := newFile(t, sqlitestore.Settings{Durability: sqlitestore.DurabilityNormal})
			clock := contracttest.NewFakeClock(contracttest.FakeEpoch.Add(time.Hour))
			s := runStore(t, db, clock, p)
			rnd := rand.New(rand.NewPCG(uint64(p.KeepVersions), uint64(p.VersionAge)))
			ids := []string{"a", "b"}
			runs := map[string]*contract.Run{}
			history := map[string][]kept{}
			for _, id := range ids {
				r, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: id, Status: "s0", Data: []byte(`"` + id + `0"`)})
				if err != nil {
					t.Fatal(err)
				}
				runs[id] = r
			}
			// visible is what the policy keeps of a run's versions now,
			// newest first.
			visible := func(id string) []kept {
				h := history[id]
				if n := p.MaxKept(); len(h) > n {
					h = h[len(h)-n:]
				}
				var out []kept
				for i := len(h) - 1; i >= 0; i-- {
					if p.VersionAge > 0 && !h[i].updated.After(clock.Now().Add(-p.VersionAge)) {
						continue
					}
					out = append(out, h[i])
				}
				return out
			}
			for step := range 300 {
				switch k := rnd.IntN(20); {
				case k == 0:
					clock.Advance(-time.Duration(rnd.IntN(30)) * time.Second)
				case k < 8:
					clock.Advance(time.Duration(rnd.IntN(15)) * time.Second)
				}
				id := ids[rnd.IntN(len(ids))]
				r := runs[id]
				was := kept{version: r.Version, data: string(r.Data), status: r.Status, iters: r.Counters.Iterations, updated: r.UpdatedAt}
				var err error
				switch k := rnd.IntN(10); {
				case k < 5:
					data := fmt.Sprintf(`"%s%d"`, id, step)
					if rnd.IntN(6) == 0 {
						data = ""
					}
					r, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: id, Status: r.Status, Data: []byte(data), Version: r.Version})
					history[id] = append(history[id], was)
				case k < 8:
					r, err = s.PatchRun(ctx, "acme", id, contract.Patch{Status: fmt.Sprintf("s%d", step+1), Counters: contract.Counters{Iterations: 1}})
					history[id] = append(history[id], was)
				default:
					r, err = s.PatchRun(ctx, "acme", id, contract.Patch{Counters: contract.Counters{Iterations: 1}})
				}
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				runs[id] = r
				if p.VersionAge > 0 {
					for i := range history[id] {
						if !history[id][i].updated.After(clock.Now().Add(-p.VersionAge)) {
							history[id][i].expired = true
						}
					}
				}
				for _, id := range ids {
					want := visible(id)
					var got []contract.Run
					for page := (contract.PageRequest{Limit: 7}); ; {
						pg, err := s.ListRunVersions(ctx, "acme", id, page)
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, pg.Versions...)
						if pg.Next == "" {
							break
						}
						page.Cursor = pg.Next
					}
					if got[0].Version != runs[id].Version {
						t.Fatalf("step %d: run %s lists version %d first, want the run at %d", step, id, got[0].Version, runs[id].Version)
					}
					got = got[1:]
					for len(want) > 0 && (len(got) == 0 || got[0].Version < want[0].version) && want[0].expired {
						want = want[1:] // deleted when it was past the age
					}
					for i, g := range got {
						for len(want) > 0 && want[0].version > g.Version && want[0].expired {
							want = want[1:]
						}
						if len(want) == 0 {
							t.Fatalf("step %d: run %s lists version %d, which the policy does not keep", step, id, g.Version)
						}
						w := want[0]
						want = want[1:]
						if g.Version != w.version || string(g.Data) != w.data || (w.data == "" && g.Data != nil) ||
							g.Status != w.status || g.Counters.Iterations != w.iters || !g.UpdatedAt.Equal(w.updated) {
							t.Fatalf("step %d: run %s lists version %d (data %q, status %s) at %d, want %d (data %q, status %s)",
								step, id, g.Version, g.Data, g.Status, i, w.version, w.data, w.status)
						}
					}
					for _, w := range want {
						if !w.expired {
							t.Fatalf("step %d: run %s does not list version %d", step, id, w.version)
						}
					}
					if len(got) > 0 {
						w := got[rnd.IntN(len(got))]
						g, err := s.GetRunVersion(ctx, "acme", id, w.Version)
						if err != nil || string(g.Data) != string(w.Data) || g.Status != w.Status {
							t.Fatalf("step %d: GetRunVersion(%s, %d) = %+v, %v; want data %q", step, id, w.Version, g, err, w.Data)
						}
					}
					want = visible(id)
					if h := history[id]; len(h) > len(want) {
						// One that is no longer kept reads as not found.
						old := h[rnd.IntN(len(h)-len(want))]
						if slices.ContainsFunc(want, func(k kept) bool { return k.version == old.version }) {
							continue
						}
						if _, err := s.GetRunVersion(ctx, "acme", id, old.version); !errors.Is(err, contract.ErrNotFound) {
							t.Fatalf("step %d: GetRunVersion(%s, %d), past the bounds: %v, want ErrNotFound", step, id, old.version, err)
						}
					}
				}
				checkBlobs(t, db)
			}
			for _, id := range ids {
				if want := visible(id); len(want) > 0 {
					w := want[len(want)-1]
					f, err := s.ForkRun(ctx, "acme", id, w.version, id+"-fork")
					if err != nil || string(f.Data) != w.data || f.Status != w.status {
						t.Fatalf("fork of %s version %d = %+v, %v; want data %q", id, w.version, f, err, w.data)
					}
				}
				if err := s.DeleteRun(ctx, "acme", id); err != nil {
					t.Fatal(err)
				}
			}
			var blobs int
			if err := db.QueryRow("SELECT count(*) FROM adk_run_blobs").Scan(&blobs); err != nil || blobs != 0 {
				t.Fatalf("the runs deleted, %d rows of their versions' data are left (%v)", blobs, err)
			}
		})
	}
}
