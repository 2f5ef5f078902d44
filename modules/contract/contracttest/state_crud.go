package contracttest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// stateCRUDCases pin the round trips of one run: create, get, put, patch,
// delete, versions, Seq and the clock's timestamps.
func stateCRUDCases() []subtest[StateFactory] {
	return []subtest[StateFactory]{
		{"CreateGet", testCreateGet},
		{"PutUpdates", testPutUpdates},
		{"PutIgnoresCountersAndSeq", testPutIgnoresCountersAndSeq},
		{"CreateExistingConflicts", testCreateExistingConflicts},
		{"StalePutConflicts", testStalePutConflicts},
		{"PutMissingConflicts", testPutMissingConflicts},
		{"PatchMovesVersion", testPatchMovesVersion},
		{"PatchAddsCounters", testPatchAddsCounters},
		{"MissingIsNotFound", testMissingIsNotFound},
		{"DeleteAndRecreate", testDeleteAndRecreate},
		{"EmptyDataIsNull", testEmptyDataIsNull},
	}
}

// putOK writes run and fails the test on error.
func putOK(t *testing.T, s contract.StateStore, run contract.Run) *contract.Run {
	t.Helper()
	got, err := s.PutRun(t.Context(), run)
	mustNoErr(t, err, "PutRun(%s/%s, version %d)", run.Tenant, run.ID, run.Version)
	if got == nil {
		t.Fatalf("PutRun(%s/%s) returned a nil run and no error", run.Tenant, run.ID)
	}
	return got
}

// getOK reads a run and fails the test on error.
func getOK(t *testing.T, s contract.StateStore, tenant, id string) *contract.Run {
	t.Helper()
	got, err := s.GetRun(t.Context(), tenant, id)
	mustNoErr(t, err, "GetRun(%s/%s)", tenant, id)
	if got == nil {
		t.Fatalf("GetRun(%s/%s) returned a nil run and no error", tenant, id)
	}
	return got
}

// patchOK patches a run and fails the test on error.
func patchOK(t *testing.T, s contract.StateStore, tenant, id string, p contract.Patch) *contract.Run {
	t.Helper()
	got, err := s.PatchRun(t.Context(), tenant, id, p)
	mustNoErr(t, err, "PatchRun(%s/%s)", tenant, id)
	if got == nil {
		t.Fatalf("PatchRun(%s/%s) returned a nil run and no error", tenant, id)
	}
	return got
}

// sameRun fails unless got carries want's identity, session, status, data,
// version, counters and Seq.
func sameRun(t *testing.T, what string, got, want *contract.Run) {
	t.Helper()
	if got.Tenant != want.Tenant || got.ID != want.ID {
		t.Errorf("%s: run is %q/%q, want %q/%q", what, got.Tenant, got.ID, want.Tenant, want.ID)
	}
	if got.Session != want.Session || got.Status != want.Status {
		t.Errorf("%s: Session/Status = %q/%q, want %q/%q", what, got.Session, got.Status, want.Session, want.Status)
	}
	sameJSON(t, what+": Data", got.Data, want.Data)
	if got.Version != want.Version {
		t.Errorf("%s: Version = %d, want %d", what, got.Version, want.Version)
	}
	if got.Counters != want.Counters {
		t.Errorf("%s: Counters = %+v, want %+v", what, got.Counters, want.Counters)
	}
	if got.Seq != want.Seq {
		t.Errorf("%s: Seq = %d, want %d", what, got.Seq, want.Seq)
	}
}

func testCreateGet(t *testing.T, f StateFactory) {
	s, clock := newState(t, f)
	now := clock.Now()
	in := contract.Run{Tenant: "acme", ID: "run-1", Session: "s1", Status: "planning",
		Data: json.RawMessage(`{"step":1,"msg":"héllo","nested":{"a":[1,2,3]}}`)}
	created := putOK(t, s, in)
	want := in
	want.Version = 1
	want.Seq = created.Seq
	sameRun(t, "PutRun(create) result", created, &want)
	if created.Seq <= 0 {
		t.Errorf("created run has Seq %d; the store must assign a positive Seq", created.Seq)
	}
	sameTime(t, "created CreatedAt", created.CreatedAt, now)
	sameTime(t, "created UpdatedAt", created.UpdatedAt, now)

	clock.Advance(time.Minute)
	got := getOK(t, s, "acme", "run-1")
	sameRun(t, "GetRun after create", got, &want)
	sameTime(t, "GetRun CreatedAt", got.CreatedAt, now)
	sameTime(t, "GetRun UpdatedAt (a read is not a write)", got.UpdatedAt, now)

	second := putOK(t, s, contract.Run{Tenant: "acme", ID: "run-2"})
	if second.Seq <= created.Seq {
		t.Errorf("run created later has Seq %d, not above the earlier run's %d", second.Seq, created.Seq)
	}
}

func testPutUpdates(t *testing.T, f StateFactory) {
	s, clock := newState(t, f)
	t0 := clock.Now()
	created := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Session: "s1", Status: "new", Data: json.RawMessage(`{"v":1}`)})
	t1 := clock.Advance(5 * time.Second)
	upd := *created
	upd.Session, upd.Status, upd.Data = "s2", "running", json.RawMessage(`{"v":2,"more":true}`)
	got := putOK(t, s, upd)
	want := upd
	want.Version = 2
	sameRun(t, "PutRun(update) result", got, &want)
	sameTime(t, "updated CreatedAt (never rewritten)", got.CreatedAt, t0)
	sameTime(t, "updated UpdatedAt", got.UpdatedAt, t1)
	read := getOK(t, s, "acme", "r")
	sameRun(t, "GetRun after update", read, &want)
	sameTime(t, "GetRun CreatedAt after update", read.CreatedAt, t0)
	sameTime(t, "GetRun UpdatedAt after update", read.UpdatedAt, t1)
}

func testPutIgnoresCountersAndSeq(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	created := putOK(t, s, contract.Run{Tenant: "acme", ID: "r"})
	delta := contract.Counters{InputTokens: 10, OutputTokens: 20, CostMicros: 30, Iterations: 1, Cursor: 4}
	patched := patchOK(t, s, "acme", "r", contract.Patch{Counters: delta})
	upd := *patched
	upd.Counters = contract.Counters{InputTokens: 999, OutputTokens: 999, CostMicros: 999, Iterations: 999, Cursor: 999}
	upd.Seq = created.Seq + 1000
	upd.Data = json.RawMessage(`"after"`)
	got := putOK(t, s, upd)
	if got.Counters != delta {
		t.Errorf("PutRun changed the counters to %+v; counters change only through PatchRun (want %+v)", got.Counters, delta)
	}
	if got.Seq != created.Seq {
		t.Errorf("PutRun rewrote Seq to %d; want %d as assigned at creation", got.Seq, created.Seq)
	}
	read := getOK(t, s, "acme", "r")
	if read.Counters != delta || read.Seq != created.Seq {
		t.Errorf("after PutRun, stored Counters=%+v Seq=%d, want %+v and %d", read.Counters, read.Seq, delta, created.Seq)
	}
}

func testCreateExistingConflicts(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Status: "first", Data: json.RawMessage(`1`)})
	patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}})
	_, err := s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "r", Status: "second", Data: json.RawMessage(`2`)})
	wantConflict(t, err, 0, 2, "PutRun with Version 0 over an existing run")
	read := getOK(t, s, "acme", "r")
	if read.Status != "first" || !jsonEqual(read.Data, json.RawMessage(`1`)) || read.Version != 2 {
		t.Errorf("refused create changed the run: Status=%q Data=%s Version=%d, want first/1/2", read.Status, read.Data, read.Version)
	}
}

func testStalePutConflicts(t *testing.T, f StateFactory) {
	s, clock := newState(t, f)
	v1 := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`{"n":1}`)})
	v2in := *v1
	v2in.Data = json.RawMessage(`{"n":2}`)
	v2 := putOK(t, s, v2in)
	if v2.Version != 2 {
		t.Fatalf("second write has Version %d, want 2", v2.Version)
	}
	stamp := v2.UpdatedAt
	clock.Advance(time.Second)
	stale := *v1
	stale.Data = json.RawMessage(`{"n":"stale"}`)
	_, err := s.PutRun(t.Context(), stale)
	wantConflict(t, err, 1, 2, "PutRun holding version 1 when 2 is stored")
	ahead := *v1
	ahead.Version = 7
	_, err = s.PutRun(t.Context(), ahead)
	wantConflict(t, err, 7, 2, "PutRun holding version 7 when 2 is stored")
	read := getOK(t, s, "acme", "r")
	if read.Version != 2 || !jsonEqual(read.Data, json.RawMessage(`{"n":2}`)) {
		t.Errorf("refused puts changed the run: Version=%d Data=%s", read.Version, read.Data)
	}
	sameTime(t, "UpdatedAt after refused puts", read.UpdatedAt, stamp)
}

func testPutMissingConflicts(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	_, err := s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "ghost", Version: 3})
	wantConflict(t, err, 3, 0, "PutRun with Version 3 of a run that does not exist")
	_, err = s.GetRun(t.Context(), "acme", "ghost")
	wantIs(t, err, contract.ErrNotFound, "GetRun after a refused put of a missing run")
}

func testPatchMovesVersion(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	v1 := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`"one"`)})
	p := patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: 1}})
	if p.Version != 2 {
		t.Errorf("PatchRun result Version = %d, want 2 (every write bumps it)", p.Version)
	}
	stale := *v1
	stale.Data = json.RawMessage(`"lost update"`)
	_, err := s.PutRun(t.Context(), stale)
	wantConflict(t, err, 1, 2, "PutRun holding the version from before a patch")
	fresh := *p
	fresh.Data = json.RawMessage(`"two"`)
	got := putOK(t, s, fresh)
	if got.Version != 3 || got.Counters.InputTokens != 1 {
		t.Errorf("put after patch: Version=%d InputTokens=%d, want 3 and 1", got.Version, got.Counters.InputTokens)
	}
}

func testPatchAddsCounters(t *testing.T, f StateFactory) {
	s, clock := newState(t, f)
	t0 := clock.Now()
	created := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Session: "s", Status: "new", Data: json.RawMessage(`{"keep":true}`)})
	d1 := contract.Counters{InputTokens: 100, OutputTokens: 50, CostMicros: 1234, Iterations: 1, Cursor: 7}
	t1 := clock.Advance(time.Second)
	p1 := patchOK(t, s, "acme", "r", contract.Patch{Counters: d1, Status: "running"})
	d2 := contract.Counters{InputTokens: 1, OutputTokens: 2, CostMicros: 3, Iterations: 1, Cursor: 1}
	t2 := clock.Advance(time.Second)
	p2 := patchOK(t, s, "acme", "r", contract.Patch{Counters: d2})
	want := contract.Run{Tenant: "acme", ID: "r", Session: "s", Status: "running", Data: json.RawMessage(`{"keep":true}`),
		Version: 3, Counters: d1.Add(d2), Seq: created.Seq}
	if p1.Status != "running" || p1.Counters != d1 || p1.Version != 2 {
		t.Errorf("first patch result: Status=%q Counters=%+v Version=%d, want running, %+v, 2", p1.Status, p1.Counters, p1.Version, d1)
	}
	sameTime(t, "first patch UpdatedAt", p1.UpdatedAt, t1)
	sameRun(t, "second patch result (empty Status keeps the status)", p2, &want)
	sameTime(t, "second patch UpdatedAt", p2.UpdatedAt, t2)
	sameTime(t, "patched CreatedAt", p2.CreatedAt, t0)
	read := getOK(t, s, "acme", "r")
	sameRun(t, "GetRun after patches", read, &want)
}

func testMissingIsNotFound(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "present"})
	_, err := s.GetRun(t.Context(), "acme", "missing")
	wantIs(t, err, contract.ErrNotFound, "GetRun of a missing run")
	_, err = s.GetRun(t.Context(), "other", "present")
	wantIs(t, err, contract.ErrNotFound, "GetRun of another tenant's id")
	_, err = s.PatchRun(t.Context(), "acme", "missing", contract.Patch{Counters: contract.Counters{Iterations: 1}, Status: "x"})
	wantIs(t, err, contract.ErrNotFound, "PatchRun of a missing run")
	_, err = s.GetRun(t.Context(), "acme", "missing")
	wantIs(t, err, contract.ErrNotFound, "GetRun after PatchRun of a missing run (a patch must not create)")
	wantIs(t, s.DeleteRun(t.Context(), "acme", "missing"), contract.ErrNotFound, "DeleteRun of a missing run")
	page, err := s.ListRuns(t.Context(), "acme", contract.PageRequest{})
	mustNoErr(t, err, "ListRuns")
	if len(page.Runs) != 1 || page.Runs[0].ID != "present" {
		t.Errorf("ListRuns after calls on missing runs lists %v, want only \"present\"", runIDs(page.Runs))
	}
}

func testDeleteAndRecreate(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	first := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Session: "s", Status: "old", Data: json.RawMessage(`"old"`)})
	patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: 5, Iterations: 2}})
	putOK(t, s, contract.Run{Tenant: "acme", ID: "keep"})
	mustNoErr(t, s.DeleteRun(t.Context(), "acme", "r"), "DeleteRun")
	_, err := s.GetRun(t.Context(), "acme", "r")
	wantIs(t, err, contract.ErrNotFound, "GetRun after DeleteRun")
	wantIs(t, s.DeleteRun(t.Context(), "acme", "r"), contract.ErrNotFound, "second DeleteRun")
	getOK(t, s, "acme", "keep")
	for _, list := range []func() (contract.RunPage, error){
		func() (contract.RunPage, error) { return s.ListRuns(t.Context(), "acme", contract.PageRequest{}) },
		func() (contract.RunPage, error) {
			return s.ListSessionRuns(t.Context(), "acme", "s", contract.PageRequest{})
		},
	} {
		page, err := list()
		mustNoErr(t, err, "listing after DeleteRun")
		for _, r := range page.Runs {
			if r.ID == "r" {
				t.Errorf("a deleted run is still listed: %+v", r)
			}
		}
	}
	again := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`"new"`)})
	if again.Version != 1 || again.Counters != (contract.Counters{}) || again.Status != "" || again.Session != "" {
		t.Errorf("recreated run carries old state: Version=%d Counters=%+v Status=%q Session=%q, want 1, zero, empty",
			again.Version, again.Counters, again.Status, again.Session)
	}
	if again.Seq == first.Seq {
		t.Errorf("recreated run reuses Seq %d; a creation gets a new Seq", again.Seq)
	}
	sameJSON(t, "recreated Data", getOK(t, s, "acme", "r").Data, json.RawMessage(`"new"`))
}

func testEmptyDataIsNull(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r"})
	got := getOK(t, s, "acme", "r")
	if !jsonEqual(got.Data, nil) {
		t.Errorf("run created without Data reads back Data %s, want empty or null", got.Data)
	}
}

func runIDs(rs []contract.Run) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}
