package contracttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// stateHistoryCases pin the versions of runs: which writes keep one and
// what it holds, the bounds by count and by age, the listing (current run
// first, stable while the run is written), GetRunVersion, ForkRun and
// DeleteRun.
func stateHistoryCases() []subtest[StateFactory] {
	return []subtest[StateFactory]{
		{"KeepsExactlyN", testKeepsExactlyN},
		{"VersionsHoldTheRunAsItWas", testVersionsHoldRun},
		{"CounterPatchKeepsNoVersion", testCounterPatchKeepsNone},
		{"AgePruning", testAgePruning},
		{"CurrentListedFirst", testCurrentListedFirst},
		{"PagingStableWhileWritten", testVersionPaging},
		{"GetRunVersion", testGetRunVersion},
		{"ForkCopiesVersion", testForkCopiesVersion},
		{"ForkOntoExistingConflicts", testForkOntoExisting},
		{"ForkMissingVersionNotFound", testForkMissingVersion},
		{"DeleteRemovesVersions", testDeleteRemovesVersions},
	}
}

// writeVersions creates run acme/r and puts it n-1 more times, one second
// apart, each write with its own Data, Status, fence and a patch of the
// counters before it; it returns the run after each write, by Version
// (index 0 is unused).
func writeVersions(t *testing.T, s contract.StateStore, clock *FakeClock, n int) []*contract.Run {
	t.Helper()
	byVersion := make([]*contract.Run, 1, 2*n+1)
	r := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Session: "s", Status: "v1", Data: json.RawMessage(`{"write":1}`), Fence: 1})
	byVersion = append(byVersion, r)
	for i := 2; i <= n; i++ {
		clock.Advance(time.Second)
		// A counter-only patch, which keeps no version: the next kept
		// version carries its sums.
		p := patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: int64(i), CostMicros: 100}})
		byVersion = append(byVersion, p)
		clock.Advance(time.Second)
		next := *p
		next.Status, next.Data, next.Fence = fmt.Sprintf("v%d", i), json.RawMessage(fmt.Sprintf(`{"write":%d}`, i)), int64(i)
		byVersion = append(byVersion, putOK(t, s, next))
	}
	return byVersion
}

// sameVersion fails unless the version got holds the run as want was:
// its identity, Data, Status, Session, Counters, Fence, Version and
// UpdatedAt.
func sameVersion(t *testing.T, what string, got, want *contract.Run) {
	t.Helper()
	if got.Tenant != want.Tenant || got.ID != want.ID {
		t.Errorf("%s: version of run %q/%q, want %q/%q", what, got.Tenant, got.ID, want.Tenant, want.ID)
	}
	if got.Version != want.Version {
		t.Errorf("%s: Version = %d, want %d", what, got.Version, want.Version)
	}
	sameJSON(t, what+": Data", got.Data, want.Data)
	if got.Session != want.Session || got.Status != want.Status {
		t.Errorf("%s: Session/Status = %q/%q, want %q/%q", what, got.Session, got.Status, want.Session, want.Status)
	}
	if got.Counters != want.Counters {
		t.Errorf("%s: Counters = %+v, want %+v", what, got.Counters, want.Counters)
	}
	wantFence(t, what, got, want.Fence)
	sameTime(t, what+": UpdatedAt", got.UpdatedAt, want.UpdatedAt)
}

// wantVersions fails unless the run lists exactly the given versions,
// newest first, each as byVersion recorded it.
func wantVersions(t *testing.T, k contract.RunKeeper, byVersion []*contract.Run, want []int64, what string) {
	t.Helper()
	got := versionsOf(t, k, "acme", "r")
	if fmt.Sprint(versionNumbers(got)) != fmt.Sprint(want) {
		t.Errorf("%s: ListRunVersions lists versions %v, want %v", what, versionNumbers(got), want)
		return
	}
	for i := range got {
		if v := got[i].Version; v > 0 && int(v) < len(byVersion) {
			sameVersion(t, fmt.Sprintf("%s: version %d", what, v), &got[i], byVersion[v])
		}
	}
}

// descending returns the numbers from hi down to lo.
func descending(hi, lo int64) []int64 {
	var out []int64
	for v := hi; v >= lo; v-- {
		out = append(out, v)
	}
	return out
}

// keptVersions is the KeepVersions of KeepsExactlyN.
const keptVersions = 4

func testKeepsExactlyN(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, contract.RunPolicy{KeepVersions: keptVersions})
	r := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`0`)})
	want := []int64{1}
	for i := range 2 * keptVersions {
		if got := versionNumbers(versionsOf(t, k, "acme", "r")); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("after %d puts: versions %v, want %v (KeepVersions %d: the run and its %d newest earlier versions)", i, got, want, keptVersions, min(i, keptVersions))
		}
		clock.Advance(time.Second)
		r.Data = json.RawMessage(fmt.Sprint(i + 1))
		r = putOK(t, s, *r)
		want = descending(r.Version, max(1, r.Version-keptVersions))
	}
	if got := versionNumbers(versionsOf(t, k, "acme", "r")); len(got) != keptVersions+1 {
		t.Errorf("after %d puts: %d versions listed %v, want %d: the run and exactly KeepVersions=%d earlier ones", 2*keptVersions, len(got), got, keptVersions+1, keptVersions)
	}
	_, err := k.GetRunVersion(t.Context(), "acme", "r", r.Version-keptVersions-1)
	wantIs(t, err, contract.ErrNotFound, "GetRunVersion of the newest version past KeepVersions")
	_, err = k.GetRunVersion(t.Context(), "acme", "r", 1)
	wantIs(t, err, contract.ErrNotFound, "GetRunVersion of the first version, long past KeepVersions")
}

func testVersionsHoldRun(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, contract.RunPolicy{KeepVersions: 10})
	byVersion := writeVersions(t, s, clock, 4) // versions 1..7: puts at 1, 3, 5, 7
	// Every put keeps the run as it was before it: the version below it,
	// with the patched counters, the status, the fence and the time of
	// the write that made it.
	wantVersions(t, k, byVersion, []int64{7, 6, 4, 2}, "after 4 puts and 3 counter patches")
	for _, v := range []int64{7, 6, 4, 2} {
		got, err := k.GetRunVersion(t.Context(), "acme", "r", v)
		mustNoErr(t, err, "GetRunVersion(%d)", v)
		sameVersion(t, fmt.Sprintf("GetRunVersion(%d)", v), got, byVersion[v])
	}
}

func testCounterPatchKeepsNone(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, contract.RunPolicy{KeepVersions: 10})
	byVersion := []*contract.Run{nil, putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Status: "new", Data: json.RawMessage(`"a"`)})}
	for range 3 {
		clock.Advance(time.Second)
		byVersion = append(byVersion, patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1, OutputTokens: 9}}))
	}
	wantVersions(t, k, byVersion, []int64{4}, "after three counter-only patches")
	clock.Advance(time.Second)
	byVersion = append(byVersion, patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}, Status: "running"}))
	wantVersions(t, k, byVersion, []int64{5, 4}, "after a patch that changes the status")
	clock.Advance(time.Second)
	byVersion = append(byVersion, patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}}))
	clock.Advance(time.Second)
	next := *byVersion[6]
	next.Data = json.RawMessage(`"b"`)
	byVersion = append(byVersion, putOK(t, s, next))
	wantVersions(t, k, byVersion, []int64{7, 6, 4}, "after a counter patch and a put")
	clock.Advance(time.Second)
	byVersion = append(byVersion, patchOK(t, s, "acme", "r", contract.Patch{Status: "done"}))
	wantVersions(t, k, byVersion, []int64{8, 7, 6, 4}, "after a patch that only changes the status")
	// A patch that names the status the run already has changes neither
	// the status nor the blob: like a counter-only patch, it keeps none.
	clock.Advance(time.Second)
	byVersion = append(byVersion, patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}, Status: "done"}))
	wantVersions(t, k, byVersion, []int64{9, 7, 6, 4}, "after a patch that sets the status the run already has")
}

func testAgePruning(t *testing.T, f StateFactory) {
	const age = time.Hour
	for _, p := range []contract.RunPolicy{{VersionAge: age}, {VersionAge: age, KeepVersions: 10}} {
		t.Run(fmt.Sprintf("KeepVersions%d", p.KeepVersions), func(t *testing.T) {
			s, k, clock := newKeeper(t, f, p)
			t0 := clock.Now()
			byVersion := []*contract.Run{nil, putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`1`)})}
			clock.Set(t0.Add(10 * time.Minute))
			byVersion = append(byVersion, putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Version: 1, Data: json.RawMessage(`2`)}))
			clock.Set(t0.Add(40 * time.Minute))
			byVersion = append(byVersion, putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Version: 2, Data: json.RawMessage(`3`)}))
			// Version 1 was written at t0, version 2 at t0+10m; the run
			// (version 3) at t0+40m is never too old.
			clock.Set(t0.Add(age - time.Millisecond))
			wantVersions(t, k, byVersion, []int64{3, 2, 1}, "1ms before version 1 is VersionAge old")
			clock.Set(t0.Add(age))
			wantVersions(t, k, byVersion, []int64{3, 2}, "when version 1 is VersionAge old (reads drop it before any write prunes it)")
			_, err := k.GetRunVersion(t.Context(), "acme", "r", 1)
			wantIs(t, err, contract.ErrNotFound, "GetRunVersion of a version VersionAge old")
			_, err = k.ForkRun(t.Context(), "acme", "r", 1, "fork")
			wantIs(t, err, contract.ErrNotFound, "ForkRun of a version VersionAge old")
			clock.Set(t0.Add(10*time.Minute + age))
			wantVersions(t, k, byVersion, []int64{3}, "when version 2 is VersionAge old")
			got, err := k.GetRunVersion(t.Context(), "acme", "r", 3)
			mustNoErr(t, err, "GetRunVersion of the current run, older than VersionAge")
			sameVersion(t, "the current run, older than VersionAge", got, byVersion[3])
			// A put keeps the run as it was; kept from a run older than
			// VersionAge, that version is past the bound at once.
			clock.Advance(age)
			byVersion = append(byVersion, putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Version: 3, Data: json.RawMessage(`4`)}))
			wantVersions(t, k, byVersion, []int64{4}, "after a put of a run older than VersionAge")
			clock.Advance(time.Minute)
			byVersion = append(byVersion, putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Version: 4, Data: json.RawMessage(`5`)}))
			wantVersions(t, k, byVersion, []int64{5, 4}, "after a put of a run a minute old")
		})
	}
}

func testCurrentListedFirst(t *testing.T, f StateFactory) {
	t.Run("NoVersionsKept", func(t *testing.T) {
		s, k, clock := newKeeper(t, f, contract.RunPolicy{})
		byVersion := writeVersions(t, s, clock, 3)
		wantVersions(t, k, byVersion, []int64{5}, "a store that keeps no versions")
		got, err := k.GetRunVersion(t.Context(), "acme", "r", 5)
		mustNoErr(t, err, "GetRunVersion of the current run, no versions kept")
		sameVersion(t, "GetRunVersion of the current run, no versions kept", got, byVersion[5])
		_, err = k.GetRunVersion(t.Context(), "acme", "r", 4)
		wantIs(t, err, contract.ErrNotFound, "GetRunVersion of an earlier version, no versions kept")
	})
	t.Run("VersionsKept", func(t *testing.T) {
		s, k, clock := newKeeper(t, f, contract.RunPolicy{KeepVersions: 10})
		byVersion := writeVersions(t, s, clock, 3)
		p, err := k.ListRunVersions(t.Context(), "acme", "r", contract.PageRequest{Limit: 1})
		mustNoErr(t, err, "ListRunVersions(Limit 1)")
		if len(p.Versions) != 1 || p.Next == "" {
			t.Fatalf("ListRunVersions(Limit 1) returned %d versions and Next %q, want 1 and a cursor", len(p.Versions), p.Next)
		}
		sameVersion(t, "the first version listed (the run as it is)", &p.Versions[0], getOK(t, s, "acme", "r"))
		sameVersion(t, "the first version listed", &p.Versions[0], byVersion[5])
	})
}

func testVersionPaging(t *testing.T, f StateFactory) {
	const keep, limit = 8, 3
	s, k, clock := newKeeper(t, f, contract.RunPolicy{KeepVersions: keep})
	byVersion := writeVersions(t, s, clock, 6) // versions 1..11: puts at 1, 3, 5, ..., 11
	for range 3 {
		clock.Advance(time.Second)
		byVersion = append(byVersion, patchOK(t, s, "acme", "r", contract.Patch{Status: fmt.Sprint("status ", len(byVersion))}))
	}
	// Kept now: the run (14) and its 8 newest earlier versions, 13 down
	// to 2; the pages below must list those that stay kept.
	atStart := versionNumbers(versionsOf(t, k, "acme", "r"))
	var listed []contract.Run
	cursor := ""
	for page := 0; ; page++ {
		if page > 50 {
			t.Fatal("ListRunVersions paging never ended")
		}
		p, err := k.ListRunVersions(t.Context(), "acme", "r", contract.PageRequest{Cursor: cursor, Limit: limit})
		mustNoErr(t, err, "ListRunVersions page %d", page)
		if len(p.Versions) > limit {
			t.Fatalf("page %d holds %d versions, over the limit %d", page, len(p.Versions), limit)
		}
		if p.Next != "" && len(p.Versions) != limit {
			t.Errorf("page %d holds %d versions and says more follow; a page short of the limit %d must be the last", page, len(p.Versions), limit)
		}
		listed = append(listed, p.Versions...)
		if p.Next == "" {
			break
		}
		if p.Next == cursor {
			t.Fatalf("page %d returned the cursor it was given (%q)", page, cursor)
		}
		cursor = p.Next
		// Write the run between pages: a put and a status patch keep two
		// versions each time, newer than any listed, and push the oldest
		// past KeepVersions.
		clock.Advance(time.Second)
		cur := getOK(t, s, "acme", "r")
		cur.Data = json.RawMessage(fmt.Sprintf(`{"between":%d}`, page))
		byVersion = append(byVersion, putOK(t, s, *cur))
		clock.Advance(time.Second)
		byVersion = append(byVersion, patchOK(t, s, "acme", "r", contract.Patch{Status: fmt.Sprint("between ", page)}))
	}
	atEnd := versionNumbers(versionsOf(t, k, "acme", "r"))
	got := versionNumbers(listed)
	for i := 1; i < len(got); i++ {
		if got[i] >= got[i-1] {
			t.Errorf("the pages list version %d after %d: versions are listed newest first, each once (%v)", got[i], got[i-1], got)
		}
	}
	for _, v := range atStart {
		if slices.Contains(atEnd, v) && !slices.Contains(got, v) {
			t.Errorf("version %d, listed when paging began and still kept, was skipped by the pages (%v; at start %v, at end %v)", v, got, atStart, atEnd)
		}
	}
	for _, v := range got {
		if !slices.Contains(atStart, v) {
			t.Errorf("the pages list version %d, kept after paging began; a later page lists only versions older than the cursor (%v; at start %v)", v, got, atStart)
		}
	}
	for i := range listed {
		if v := listed[i].Version; v > 0 && int(v) < len(byVersion) {
			sameVersion(t, fmt.Sprintf("listed version %d", v), &listed[i], byVersion[v])
		}
	}
	if len(got) < limit+1 {
		t.Errorf("the pages listed %d versions %v; want more than one page of them", len(got), got)
	}
}

func testGetRunVersion(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, contract.RunPolicy{KeepVersions: 3})
	byVersion := writeVersions(t, s, clock, 5) // puts at 1, 3, 5, 7, 9; kept 8, 6, 4
	for _, v := range []int64{9, 8, 6, 4} {
		got, err := k.GetRunVersion(t.Context(), "acme", "r", v)
		mustNoErr(t, err, "GetRunVersion(%d)", v)
		if got == nil {
			t.Fatalf("GetRunVersion(%d) returned nil and no error", v)
		}
		sameVersion(t, fmt.Sprintf("GetRunVersion(%d)", v), got, byVersion[v])
	}
	for _, v := range []int64{1, 2, 3, 5, 7, 10, 1 << 40} {
		got, err := k.GetRunVersion(t.Context(), "acme", "r", v)
		wantIs(t, err, contract.ErrNotFound, "%s", fmt.Sprintf("GetRunVersion(%d): pruned, never kept (a counter patch) or never written", v))
		if got != nil {
			t.Errorf("GetRunVersion(%d) returned a run with its error: %+v", v, got)
		}
	}
	_, err := k.GetRunVersion(t.Context(), "acme", "missing", 1)
	wantIs(t, err, contract.ErrNotFound, "GetRunVersion of a missing run")
	_, err = k.ListRunVersions(t.Context(), "acme", "missing", contract.PageRequest{})
	wantIs(t, err, contract.ErrNotFound, "ListRunVersions of a missing run")
	_, err = k.GetRunVersion(t.Context(), "other", "r", 9)
	wantIs(t, err, contract.ErrNotFound, "GetRunVersion of the run's id in another tenant")
}

func testForkCopiesVersion(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, contract.RunPolicy{KeepVersions: 10})
	byVersion := writeVersions(t, s, clock, 4) // puts at 1, 3, 5, 7
	source := getOK(t, s, "acme", "r")
	sourceVersions := versionNumbers(versionsOf(t, k, "acme", "r"))
	clock.Advance(time.Minute)
	now := clock.Now()
	for _, v := range []int64{4, 7} {
		id := fmt.Sprint("fork-", v)
		forked, err := k.ForkRun(t.Context(), "acme", "r", v, id)
		mustNoErr(t, err, "ForkRun(version %d)", v)
		if forked == nil {
			t.Fatalf("ForkRun(version %d) returned nil and no error", v)
		}
		from := byVersion[v]
		want := contract.Run{Tenant: "acme", ID: id, Session: from.Session, Status: from.Status, Data: from.Data, Counters: from.Counters, Version: 1, Seq: forked.Seq, UpdatedAt: now}
		sameStored(t, fmt.Sprintf("ForkRun(version %d)", v), forked, &want)
		sameTime(t, fmt.Sprintf("ForkRun(version %d): CreatedAt", v), forked.CreatedAt, now)
		if forked.Seq <= source.Seq {
			t.Errorf("ForkRun(version %d): Seq %d, not above the source's %d; a fork is a new run", v, forked.Seq, source.Seq)
		}
		sameStored(t, fmt.Sprintf("the fork of version %d read back", v), getOK(t, s, "acme", id), &want)
		if got := versionNumbers(versionsOf(t, k, "acme", id)); fmt.Sprint(got) != "[1]" {
			t.Errorf("the fork of version %d lists versions %v, want [1]: a fork keeps none of its source's", v, got)
		}
		for _, old := range []int64{2, 4} {
			_, err := k.GetRunVersion(t.Context(), "acme", id, old)
			wantIs(t, err, contract.ErrNotFound, "%s", fmt.Sprintf("GetRunVersion(%d) of the fork of version %d", old, v))
		}
	}
	if byVersion[4].Counters == byVersion[7].Counters {
		t.Fatal("the case is wrong: versions 4 and 7 carry the same counters")
	}
	sameStored(t, "the source run after the forks", getOK(t, s, "acme", "r"), source)
	if got := versionNumbers(versionsOf(t, k, "acme", "r")); fmt.Sprint(got) != fmt.Sprint(sourceVersions) {
		t.Errorf("the source run lists versions %v after the forks, had %v", got, sourceVersions)
	}
	all, err := s.ListRuns(t.Context(), "acme", contract.PageRequest{})
	mustNoErr(t, err, "ListRuns")
	if got := runIDs(all.Runs); fmt.Sprint(got) != "[r fork-4 fork-7]" {
		t.Errorf("ListRuns lists %v, want [r fork-4 fork-7] (the forks by their new Seq)", got)
	}
	session, err := s.ListSessionRuns(t.Context(), "acme", "s", contract.PageRequest{})
	mustNoErr(t, err, "ListSessionRuns")
	if got := runIDs(session.Runs); fmt.Sprint(got) != "[r fork-4 fork-7]" {
		t.Errorf("ListSessionRuns(s) lists %v, want [r fork-4 fork-7] (a fork keeps its version's session)", got)
	}
	// A fork is a run like any: unfenced, it takes any fence, and writes.
	fork := getOK(t, s, "acme", "fork-4")
	fork.Fence = 1
	putOK(t, s, *fork)
}

func testForkOntoExisting(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, contract.RunPolicy{KeepVersions: 10})
	writeVersions(t, s, clock, 2)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "taken", Status: "mine", Data: json.RawMessage(`"mine"`)})
	taken := patchOK(t, s, "acme", "taken", contract.Patch{Status: "still mine"})
	for _, target := range []string{"taken", "r"} {
		held := getOK(t, s, "acme", target)
		got, err := k.ForkRun(t.Context(), "acme", "r", 2, target)
		var ce *contract.StateConflictError
		if !errors.As(err, &ce) {
			t.Errorf("ForkRun onto existing run %q: got %v (%T), want *contract.StateConflictError", target, err, err)
		} else if ce.Tenant != "acme" || ce.ID != target || ce.Expected != 0 || ce.Actual != held.Version {
			t.Errorf("ForkRun onto existing run %q: StateConflictError{Tenant: %q, ID: %q, Expected: %d, Actual: %d}, want {acme, %s, 0, %d}",
				target, ce.Tenant, ce.ID, ce.Expected, ce.Actual, target, held.Version)
		}
		if got != nil {
			t.Errorf("a refused ForkRun returned a run: %+v", got)
		}
		sameStored(t, fmt.Sprintf("run %q after the refused fork", target), getOK(t, s, "acme", target), held)
	}
	if got := versionNumbers(versionsOf(t, k, "acme", "taken")); fmt.Sprint(got) != fmt.Sprint([]int64{taken.Version, taken.Version - 1}) {
		t.Errorf("run taken lists versions %v after the refused fork, want %v", got, []int64{taken.Version, taken.Version - 1})
	}
}

func testForkMissingVersion(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, contract.RunPolicy{KeepVersions: 1})
	writeVersions(t, s, clock, 3) // puts at 1, 3, 5; kept 4
	for _, c := range []struct {
		id      string
		version int64
		why     string
	}{
		{"r", 2, "pruned past KeepVersions"},
		{"r", 3, "a counter patch's, never kept"},
		{"r", 6, "never written"},
		{"missing", 1, "of a missing run"},
	} {
		got, err := k.ForkRun(t.Context(), "acme", c.id, c.version, "fork")
		wantIs(t, err, contract.ErrNotFound, "%s", fmt.Sprintf("ForkRun(%s, version %d): %s", c.id, c.version, c.why))
		if got != nil {
			t.Errorf("a refused ForkRun returned a run: %+v", got)
		}
		_, err = s.GetRun(t.Context(), "acme", "fork")
		wantIs(t, err, contract.ErrNotFound, "%s", fmt.Sprintf("GetRun(fork) after ForkRun(%s, version %d) was refused", c.id, c.version))
	}
	// A version that is not kept, onto an ID that exists: the version is
	// checked first, so the answer is ErrNotFound, and the run there is
	// left as it is.
	taken := putOK(t, s, contract.Run{Tenant: "acme", ID: "taken", Status: "mine", Data: json.RawMessage(`"mine"`)})
	got, err := k.ForkRun(t.Context(), "acme", "r", 2, "taken")
	wantIs(t, err, contract.ErrNotFound, "ForkRun(r, version 2, pruned) onto the existing run taken")
	if got != nil {
		t.Errorf("a refused ForkRun returned a run: %+v", got)
	}
	sameStored(t, "run taken after the refused fork", getOK(t, s, "acme", "taken"), taken)
	_, err = k.ForkRun(t.Context(), "acme", "r", 4, "fork")
	mustNoErr(t, err, "ForkRun of the kept version 4")
}

func testDeleteRemovesVersions(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, contract.RunPolicy{KeepVersions: 10})
	for _, fenced := range []bool{false, true} {
		byVersion := writeVersions(t, s, clock, 3)
		if fenced {
			mustNoErr(t, k.DeleteRunFenced(t.Context(), "acme", "r", byVersion[5].Fence), "DeleteRunFenced")
		} else {
			mustNoErr(t, s.DeleteRun(t.Context(), "acme", "r"), "DeleteRun")
		}
		_, err := k.ListRunVersions(t.Context(), "acme", "r", contract.PageRequest{})
		wantIs(t, err, contract.ErrNotFound, "ListRunVersions of a deleted run")
		_, err = k.GetRunVersion(t.Context(), "acme", "r", 4)
		wantIs(t, err, contract.ErrNotFound, "GetRunVersion of a deleted run")
		again := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`"again"`)})
		if got := versionNumbers(versionsOf(t, k, "acme", "r")); fmt.Sprint(got) != "[1]" {
			t.Errorf("a run recreated after a delete (fenced %v) lists versions %v, want [1]", fenced, got)
		}
		for _, v := range []int64{2, 4} {
			_, err := k.GetRunVersion(t.Context(), "acme", "r", v)
			wantIs(t, err, contract.ErrNotFound, "%s", fmt.Sprintf("GetRunVersion(%d) of a recreated run (fenced delete %v)", v, fenced))
		}
		clock.Advance(time.Second)
		again.Data = json.RawMessage(`"twice"`)
		putOK(t, s, *again)
		if got := versionNumbers(versionsOf(t, k, "acme", "r")); fmt.Sprint(got) != "[2 1]" {
			t.Errorf("a run recreated after a delete (fenced %v), then put, lists versions %v, want [2 1]", fenced, got)
		}
		mustNoErr(t, s.DeleteRun(t.Context(), "acme", "r"), "DeleteRun of the recreated run")
	}
}
