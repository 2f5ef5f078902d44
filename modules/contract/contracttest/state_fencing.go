package contracttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// stateFencingCases pin fenced writes: a write whose fence is below the
// run's is refused and changes nothing, equal and higher fences land and
// the highest is kept, unfenced writes land unless the policy requires a
// fence, the order of the checks, and two executions of one item.
func stateFencingCases() []subtest[StateFactory] {
	return []subtest[StateFactory]{
		{"FencedCreate", testFencedCreate},
		{"StalePutRefused", testStalePutRefused},
		{"StalePatchRefused", testStalePatchRefused},
		{"StaleDeleteRefused", testStaleDeleteRefused},
		{"EqualAndHigherLand", testEqualAndHigherLand},
		{"UnfencedLandsKeepsFence", testUnfencedKeepsFence},
		{"RequireFenceRefusesUnfenced", testRequireFence},
		{"CheckOrder", testFenceCheckOrder},
		{"DeleteForgetsFence", testDeleteForgetsFence},
		{"TwoExecutionsInterleave", testTwoExecutions},
	}
}

// runKeeperGroup runs an area whose points need the store's
// contract.RunKeeper. A store without one fails the area, once, naming
// the store: every backing keeps versions and fences deletes.
func runKeeperGroup(t *testing.T, f StateFactory, group string, cases []subtest[StateFactory]) {
	t.Helper()
	t.Run(group, func(t *testing.T) {
		s, _ := newState(t, f)
		if _, ok := contract.AsRunKeeper(s); !ok {
			msg := fmt.Sprintf("state store %T has no contract.RunKeeper (contract.AsRunKeeper is false): "+
				"fenced deletes and run versions are not implemented, so the %s area cannot run", s, group)
			t.Fatal(msg + "; every backing must implement RunKeeper")
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { c.run(t, f) })
		}
	})
}

// keeperOf returns s's RunKeeper.
func keeperOf(t *testing.T, s contract.StateStore) contract.RunKeeper {
	t.Helper()
	k, ok := contract.AsRunKeeper(s)
	if !ok {
		t.Fatalf("%T has no contract.RunKeeper", s)
	}
	return k
}

// newKeeper returns a fresh store with policy p and its RunKeeper.
func newKeeper(t *testing.T, f StateFactory, p contract.RunPolicy) (contract.StateStore, contract.RunKeeper, *FakeClock) {
	t.Helper()
	s, clock := newStatePolicy(t, f, p)
	return s, keeperOf(t, s), clock
}

// wantStale fails unless err is a *contract.StaleFenceError for run
// tenant/id with the write's fence and the stored one, matching
// contract.ErrFenced.
func wantStale(t *testing.T, err error, tenant, id string, fence, stored int64, what string) {
	t.Helper()
	var se *contract.StaleFenceError
	if !errors.As(err, &se) {
		t.Errorf("%s: got error %v (%T), want *contract.StaleFenceError", what, err, err)
		return
	}
	if !errors.Is(err, contract.ErrFenced) {
		t.Errorf("%s: the *StaleFenceError %v does not match contract.ErrFenced", what, err)
	}
	if se.Tenant != tenant || se.ID != id || se.Fence != fence || se.Stored != stored {
		t.Errorf("%s: StaleFenceError{Tenant: %q, ID: %q, Fence: %d, Stored: %d}, want {%q, %q, %d, %d}",
			what, se.Tenant, se.ID, se.Fence, se.Stored, tenant, id, fence, stored)
	}
}

// wantFence fails unless the run carries fence.
func wantFence(t *testing.T, what string, r *contract.Run, fence int64) {
	t.Helper()
	if r.Fence != fence {
		t.Errorf("%s: Fence = %d, want %d", what, r.Fence, fence)
	}
}

// sameStored fails unless got is want as stored: sameRun, the fence and
// UpdatedAt.
func sameStored(t *testing.T, what string, got, want *contract.Run) {
	t.Helper()
	sameRun(t, what, got, want)
	wantFence(t, what, got, want.Fence)
	sameTime(t, what+": UpdatedAt", got.UpdatedAt, want.UpdatedAt)
}

// versionsOf lists every version of the run, paging by MaxPageSize.
func versionsOf(t *testing.T, k contract.RunKeeper, tenant, id string) []contract.Run {
	t.Helper()
	var out []contract.Run
	cursor := ""
	for range 100 {
		p, err := k.ListRunVersions(t.Context(), tenant, id, contract.PageRequest{Cursor: cursor, Limit: contract.MaxPageSize})
		mustNoErr(t, err, "ListRunVersions(%s/%s)", tenant, id)
		out = append(out, p.Versions...)
		if p.Next == "" {
			return out
		}
		cursor = p.Next
	}
	t.Fatal("ListRunVersions paging never ended")
	return nil
}

// versionNumbers returns the Versions of vs.
func versionNumbers(vs []contract.Run) []int64 {
	out := make([]int64, len(vs))
	for i, v := range vs {
		out[i] = v.Version
	}
	return out
}

// wantUnchanged fails unless the run reads back as before and lists the
// same versions: a refused write changed nothing.
func wantUnchanged(t *testing.T, s contract.StateStore, k contract.RunKeeper, before *contract.Run, versions []int64, what string) {
	t.Helper()
	got, err := s.GetRun(t.Context(), before.Tenant, before.ID)
	if err != nil {
		t.Errorf("%s: GetRun afterwards: %v; the refused write must leave the run as it was", what, err)
		return
	}
	sameStored(t, what+": run read back", got, before)
	if now := versionNumbers(versionsOf(t, k, before.Tenant, before.ID)); fmt.Sprint(now) != fmt.Sprint(versions) {
		t.Errorf("%s: the run's versions are %v, were %v; a refused write keeps none", what, now, versions)
	}
}

// fencedRun creates run acme/r under fence, with a status, data and
// counters, and a second version so a version is kept.
func fencedRun(t *testing.T, s contract.StateStore, clock *FakeClock, fence int64) *contract.Run {
	t.Helper()
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Session: "s", Status: "planning", Data: json.RawMessage(`{"step":1}`), Fence: fence})
	clock.Advance(time.Second)
	return patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: 7, Iterations: 1}, Status: "working", Fence: fence})
}

// fencingPolicy keeps a few versions, so the stale points see that a refused
// write keeps none.
var fencingPolicy = contract.RunPolicy{KeepVersions: 5}

func testFencedCreate(t *testing.T, f StateFactory) {
	s, _, clock := newKeeper(t, f, fencingPolicy)
	now := clock.Now()
	in := contract.Run{Tenant: "acme", ID: "r", Status: "new", Data: json.RawMessage(`{"a":1}`), Fence: 42}
	got := putOK(t, s, in)
	want := in
	want.Version, want.Seq, want.UpdatedAt = 1, got.Seq, now
	sameStored(t, "fenced create's result", got, &want)
	sameStored(t, "fenced create read back", getOK(t, s, "acme", "r"), &want)
	_, err := s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "r", Version: 1, Fence: 41})
	wantStale(t, err, "acme", "r", 41, 42, "put below the fence the create wrote")
	other := putOK(t, s, contract.Run{Tenant: "acme", ID: "unfenced"})
	wantFence(t, "unfenced create", other, 0)
}

func testStalePutRefused(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, fencingPolicy)
	before := fencedRun(t, s, clock, 20)
	versions := versionNumbers(versionsOf(t, k, "acme", "r"))
	clock.Advance(time.Second)
	stale := *before
	stale.Status, stale.Data, stale.Session, stale.Fence = "overwritten", json.RawMessage(`{"step":"stale"}`), "other", 19
	got, err := s.PutRun(t.Context(), stale)
	wantStale(t, err, "acme", "r", 19, 20, "PutRun with a fence below the run's")
	if got != nil {
		t.Errorf("refused PutRun returned a run: %+v", got)
	}
	wantUnchanged(t, s, k, before, versions, "after the stale PutRun")
	stale.Fence = 1
	_, err = s.PutRun(t.Context(), stale)
	wantStale(t, err, "acme", "r", 1, 20, "PutRun with fence 1")
	wantUnchanged(t, s, k, before, versions, "after the second stale PutRun")
}

func testStalePatchRefused(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, fencingPolicy)
	before := fencedRun(t, s, clock, 20)
	versions := versionNumbers(versionsOf(t, k, "acme", "r"))
	clock.Advance(time.Second)
	for _, p := range []contract.Patch{
		{Counters: contract.Counters{InputTokens: 100, CostMicros: 5}, Fence: 19},
		{Status: "stale-status", Fence: 19},
		{Counters: contract.Counters{Iterations: 1}, Status: "both", Fence: 3},
	} {
		got, err := s.PatchRun(t.Context(), "acme", "r", p)
		wantStale(t, err, "acme", "r", p.Fence, 20, fmt.Sprintf("PatchRun(%+v) below the run's fence", p))
		if got != nil {
			t.Errorf("refused PatchRun returned a run: %+v", got)
		}
		wantUnchanged(t, s, k, before, versions, fmt.Sprintf("after the stale PatchRun(%+v)", p))
	}
}

func testStaleDeleteRefused(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, fencingPolicy)
	before := fencedRun(t, s, clock, 20)
	versions := versionNumbers(versionsOf(t, k, "acme", "r"))
	err := k.DeleteRunFenced(t.Context(), "acme", "r", 19)
	wantStale(t, err, "acme", "r", 19, 20, "DeleteRunFenced below the run's fence")
	wantUnchanged(t, s, k, before, versions, "after the stale DeleteRunFenced")
	page, err := s.ListRuns(t.Context(), "acme", contract.PageRequest{})
	mustNoErr(t, err, "ListRuns")
	if len(page.Runs) != 1 || page.Runs[0].ID != "r" {
		t.Errorf("after a refused delete ListRuns lists %v, want [r]", runIDs(page.Runs))
	}
	mustNoErr(t, k.DeleteRunFenced(t.Context(), "acme", "r", 21), "DeleteRunFenced above the run's fence")
	_, err = s.GetRun(t.Context(), "acme", "r")
	wantIs(t, err, contract.ErrNotFound, "GetRun after the fenced delete")
}

func testEqualAndHigherLand(t *testing.T, f StateFactory) {
	s, _, clock := newKeeper(t, f, contract.RunPolicy{})
	r := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`1`), Fence: 10})
	steps := []struct {
		fence, want int64
		put         bool
	}{
		{10, 10, true}, {10, 10, false}, {11, 11, false}, {11, 11, true}, {50, 50, true}, {50, 50, false}, {1 << 40, 1 << 40, false},
	}
	for i, st := range steps {
		clock.Advance(time.Millisecond)
		var err error
		var got *contract.Run
		if st.put {
			next := *r
			next.Data, next.Fence = json.RawMessage(fmt.Sprint(i)), st.fence
			got, err = s.PutRun(t.Context(), next)
		} else {
			got, err = s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{Cursor: 1}, Fence: st.fence})
		}
		what := fmt.Sprintf("step %d (put %v, fence %d over %d)", i, st.put, st.fence, r.Fence)
		if err != nil {
			t.Fatalf("%s: %v; an equal or higher fence lands", what, err)
		}
		if got.Version != r.Version+1 {
			t.Errorf("%s: Version = %d, want %d", what, got.Version, r.Version+1)
		}
		wantFence(t, what+" result", got, st.want)
		wantFence(t, what+" read back", getOK(t, s, "acme", "r"), st.want)
		r = got
	}
	_, err := s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{Cursor: 1}, Fence: 50})
	wantStale(t, err, "acme", "r", 50, 1<<40, "a patch with the fence the highest replaced")
}

func testUnfencedKeepsFence(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, contract.RunPolicy{})
	r := fencedRun(t, s, clock, 30)
	clock.Advance(time.Second)
	next := *r
	next.Data, next.Status, next.Fence = json.RawMessage(`{"by":"unfenced"}`), "unfenced", 0
	put, err := s.PutRun(t.Context(), next)
	mustNoErr(t, err, "an unfenced PutRun of a fenced run")
	if put.Version != r.Version+1 {
		t.Errorf("unfenced PutRun: Version = %d, want %d", put.Version, r.Version+1)
	}
	sameJSON(t, "unfenced PutRun's Data", put.Data, next.Data)
	wantFence(t, "unfenced PutRun's result", put, 30)
	patched, err := s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{OutputTokens: 4}, Status: "patched"})
	mustNoErr(t, err, "an unfenced PatchRun of a fenced run")
	if patched.Version != put.Version+1 || patched.Counters.OutputTokens != 4 || patched.Status != "patched" {
		t.Errorf("unfenced PatchRun: Version %d, OutputTokens %d, Status %q; want %d, 4, patched", patched.Version, patched.Counters.OutputTokens, patched.Status, put.Version+1)
	}
	wantFence(t, "unfenced PatchRun's result", patched, 30)
	wantFence(t, "read back after the unfenced writes", getOK(t, s, "acme", "r"), 30)
	_, err = s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{Cursor: 1}, Fence: 29})
	wantStale(t, err, "acme", "r", 29, 30, "a fenced patch below the fence after unfenced writes")

	mustNoErr(t, k.DeleteRunFenced(t.Context(), "acme", "r", 0), "DeleteRunFenced with fence 0 (unfenced)")
	_, err = s.GetRun(t.Context(), "acme", "r")
	wantIs(t, err, contract.ErrNotFound, "GetRun after the unfenced DeleteRunFenced")
	fencedRun(t, s, clock, 30)
	mustNoErr(t, s.DeleteRun(t.Context(), "acme", "r"), "an unfenced DeleteRun of a fenced run")
	_, err = s.GetRun(t.Context(), "acme", "r")
	wantIs(t, err, contract.ErrNotFound, "GetRun after the unfenced DeleteRun")
}

func testRequireFence(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, contract.RunPolicy{RequireFence: true, KeepVersions: 5})
	wantFenceField := func(err error, field, what string) {
		t.Helper()
		wantInvalid(t, err, "%s", what)
		var ve *contract.ValidationError
		if errors.As(err, &ve) && !strings.Contains(strings.ToLower(ve.Field), strings.ToLower(field)) {
			t.Errorf("%s: the *ValidationError names %q, want %q", what, ve.Field, field)
		}
	}
	_, err := s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`1`)})
	wantFenceField(err, "Run.Fence", "an unfenced create where a fence is required")
	_, err = s.GetRun(t.Context(), "acme", "r")
	wantIs(t, err, contract.ErrNotFound, "GetRun after the refused unfenced create")

	before := fencedRun(t, s, clock, 5)
	versions := versionNumbers(versionsOf(t, k, "acme", "r"))
	next := *before
	next.Data, next.Fence = json.RawMessage(`2`), 0
	_, err = s.PutRun(t.Context(), next)
	wantFenceField(err, "Run.Fence", "an unfenced PutRun where a fence is required")
	_, err = s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}, Status: "x"})
	wantFenceField(err, "Patch.Fence", "an unfenced PatchRun where a fence is required")
	wantFenceField(s.DeleteRun(t.Context(), "acme", "r"), "fence", "DeleteRun where a fence is required")
	wantFenceField(k.DeleteRunFenced(t.Context(), "acme", "r", 0), "fence", "DeleteRunFenced(0) where a fence is required")
	wantUnchanged(t, s, k, before, versions, "after the refused unfenced writes")

	next.Fence = 5
	putOK(t, s, next)
	mustNoErr(t, k.DeleteRunFenced(t.Context(), "acme", "r", 6), "a fenced delete where a fence is required")
}

func testFenceCheckOrder(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, fencingPolicy)
	// A missing run is ErrNotFound, whatever the fence, even one below
	// the fence of a deleted run of that id.
	fencedRun(t, s, clock, 90)
	mustNoErr(t, k.DeleteRunFenced(t.Context(), "acme", "r", 90), "DeleteRunFenced with the run's fence")
	_, err := s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}, Fence: 3})
	wantIs(t, err, contract.ErrNotFound, "PatchRun of a missing run with a low fence")
	wantIs(t, k.DeleteRunFenced(t.Context(), "acme", "r", 3), contract.ErrNotFound, "DeleteRunFenced of a missing run with a low fence")
	_, err = s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "r", Version: 4, Fence: 3})
	wantConflict(t, err, 4, 0, "PutRun of a missing run with a version and a low fence")

	// The fence before the version and the counters.
	before := fencedRun(t, s, clock, 90)
	versions := versionNumbers(versionsOf(t, k, "acme", "r"))
	for _, v := range []int64{0, before.Version - 1, before.Version + 1} {
		_, err := s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "r", Version: v, Data: json.RawMessage(`"x"`), Fence: 89})
		wantStale(t, err, "acme", "r", 89, 90, fmt.Sprintf("a stale-fenced PutRun holding version %d (stored %d)", v, before.Version))
	}
	_, err = s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: math.MaxInt64}, Fence: 89})
	wantStale(t, err, "acme", "r", 89, 90, "a stale-fenced PatchRun whose counters would overflow")
	wantUnchanged(t, s, k, before, versions, "after the refused writes")
	// With the fence right, the version and the counters decide.
	_, err = s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "r", Version: before.Version + 1, Fence: 90})
	wantConflict(t, err, before.Version+1, before.Version, "PutRun with the fence and a wrong version")
	_, err = s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: math.MaxInt64}, Fence: 91})
	if _, ok := errors.AsType[*contract.CounterOverflowError](err); !ok {
		t.Errorf("PatchRun with a higher fence whose counters would overflow: got %v (%T), want *contract.CounterOverflowError", err, err)
	}
	wantUnchanged(t, s, k, before, versions, "after the refused writes with a good fence")
}

func testDeleteForgetsFence(t *testing.T, f StateFactory) {
	s, k, clock := newKeeper(t, f, contract.RunPolicy{})
	fencedRun(t, s, clock, 70)
	mustNoErr(t, k.DeleteRunFenced(t.Context(), "acme", "r", 70), "DeleteRunFenced with the run's own fence")
	_, err := s.GetRun(t.Context(), "acme", "r")
	wantIs(t, err, contract.ErrNotFound, "GetRun after DeleteRunFenced")
	again := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`"again"`)})
	wantFence(t, "an unfenced create after a fenced delete", again, 0)
	low := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Version: again.Version, Fence: 2})
	wantFence(t, "a put with a fence below the deleted run's", low, 2)
	mustNoErr(t, k.DeleteRunFenced(t.Context(), "acme", "r", 2), "DeleteRunFenced of the recreated run")

	fencedRun(t, s, clock, 80)
	mustNoErr(t, s.DeleteRun(t.Context(), "acme", "r"), "DeleteRun")
	again = putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Fence: 3})
	wantFence(t, "a create fenced below the run DeleteRun removed", again, 3)
	mustNoErr(t, k.DeleteRunFenced(t.Context(), "acme", "r", 3), "DeleteRunFenced")
}

// testTwoExecutions plays two executions of one item against the store:
// the first holds token t1, loses its lease, and the second claims the
// item with t2 > t1. The first keeps writing (it does not know yet) and
// every one of its writes after the second's first is refused: the run
// ends with only the second's writes after the hand-over.
func testTwoExecutions(t *testing.T, f StateFactory) {
	const t1, t2 = 1001, 2002
	s, k, clock := newKeeper(t, f, contract.RunPolicy{KeepVersions: 10})
	type step struct{ Writer, Step string }
	data := func(writer, what string) json.RawMessage {
		b, _ := json.Marshal(step{writer, what})
		return b
	}
	// The first execution creates the run and works on it.
	r := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Status: "first", Data: data("first", "start"), Fence: t1})
	clock.Advance(time.Second)
	patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}, Fence: t1})
	first := getOK(t, s, "acme", "r")

	// Its lease is lost; the second execution reads the run and writes.
	clock.Advance(time.Minute)
	read := getOK(t, s, "acme", "r")
	read.Data, read.Status, read.Fence = data("second", "resume"), "second", t2
	second := putOK(t, s, *read)

	for round := range 3 {
		clock.Advance(time.Second)
		// The first, unaware, writes again (re-reading the run, so its
		// version is right and only its fence is stale).
		cur := getOK(t, s, "acme", "r")
		cur.Data, cur.Status, cur.Fence = data("first", fmt.Sprint("late ", round)), "first", t1
		_, err := s.PutRun(t.Context(), *cur)
		wantStale(t, err, "acme", "r", t1, t2, fmt.Sprintf("round %d: the first execution's put", round))
		_, err = s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1000}, Status: "first", Fence: t1})
		wantStale(t, err, "acme", "r", t1, t2, fmt.Sprintf("round %d: the first execution's patch", round))
		// The second goes on.
		second.Data = data("second", fmt.Sprint("step ", round))
		put := putOK(t, s, *second)
		second = patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 10}, Fence: t2})
		if second.Version != put.Version+1 {
			t.Errorf("round %d: the second execution's patch moved the run to Version %d, want %d", round, second.Version, put.Version+1)
		}
	}
	wantStale(t, k.DeleteRunFenced(t.Context(), "acme", "r", t1), "acme", "r", t1, t2, "the first execution's delete")

	end := getOK(t, s, "acme", "r")
	sameStored(t, "the run at the end", end, second)
	sameJSON(t, "the run's Data at the end", end.Data, data("second", "step 2"))
	if end.Status != "second" || end.Counters.Iterations != first.Counters.Iterations+30 || end.Fence != t2 {
		t.Errorf("the run ends with Status %q, Iterations %d, Fence %d; want second, %d (the first's before the hand-over and the second's), %d",
			end.Status, end.Counters.Iterations, end.Fence, first.Counters.Iterations+30, t2)
	}
	if end.Version != r.Version+1+1+6 {
		t.Errorf("the run ends at Version %d, want %d: the first's 2 writes, the second's 7, none of the first's late ones", end.Version, r.Version+1+1+6)
	}
	for _, v := range versionsOf(t, k, "acme", "r") {
		var st step
		_ = json.Unmarshal(v.Data, &st)
		if v.Version > first.Version && (st.Writer != "second" || v.Fence != t2) {
			t.Errorf("version %d (after the hand-over) was written by %q under fence %d; only the second execution's writes land", v.Version, st.Writer, v.Fence)
		}
	}
}
