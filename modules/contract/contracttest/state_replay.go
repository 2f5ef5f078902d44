package contracttest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// LoseReply makes the next state write the store sends (PutRun, PatchRun
// or DeleteRun) reach its server and take effect there, then lose its
// reply on the way back, as a connection cut at that moment would.
// between runs after the write took effect and before the store learns
// that the reply is lost; it stands for other clients writing meanwhile
// and may call the store. Then the store does what it does after a lost
// reply: send the write again, or report an error. The returned func
// reports whether a reply was lost since.
type LoseReply func(between func()) (lost func() bool)

// ReplayFactory returns a new, empty StateStore, as a StateFactory does,
// and the LoseReply that loses its replies. A backing builds it in its
// own tests, on the client it hands the store: a hook that lets a command
// run and then reports it failed, or a proxy that drops the answer.
type ReplayFactory func(t *testing.T, clock contract.Clock) (contract.StateStore, LoseReply)

// StateReplay runs the lost-reply cases against stores whose calls travel
// to a server and back, one fresh store and FakeClock per subtest; they
// are grouped as Replay. An in-process store has no reply to lose and
// does not run them.
//
// Each case loses the reply of one write while other writes land, and
// checks that the write took effect once and answered with what it did:
// either its true outcome (a resent put, patch or delete recognised as
// the one already applied) or a retryable error, never a conflict with
// itself, a second application, ErrNotFound for its own deletion or the
// removal of a run created after it.
func StateReplay(t *testing.T, f ReplayFactory) {
	t.Helper()
	if f == nil {
		t.Fatal("contracttest.StateReplay: nil ReplayFactory")
	}
	runGroup(t, f, "Replay", stateReplayCases())
}

func stateReplayCases() []subtest[ReplayFactory] {
	return []subtest[ReplayFactory]{
		{"CreateAnsweredOnce", testReplayCreate},
		{"PutAnsweredAsItWrote", testReplayPutAfterPatch},
		{"PutNotAConflictWithItself", testReplayPutAfterPut},
		{"PutSparesRecreatedRun", testReplayPutAfterRecreate},
		{"PatchAddedOnce", testReplayPatch},
		{"PatchOfDeletedRunAnswered", testReplayPatchAfterDelete},
		{"DeleteAnsweredOnce", testReplayDelete},
		{"DeleteSparesNewRun", testReplayDeleteAfterCreate},
	}
}

func newReplay(t *testing.T, f ReplayFactory) (contract.StateStore, LoseReply) {
	t.Helper()
	s, lose := f(t, NewFakeClock(FakeEpoch))
	if s == nil || lose == nil {
		t.Fatal("ReplayFactory returned a nil StateStore or LoseReply")
	}
	return s, lose
}

// losing runs write with its reply lost and other clients' writes in
// between, and returns the write's error. It fails the test when no reply
// was lost. A non-nil error must be retryable: the store could not tell
// what happened, and says so.
func losing(t *testing.T, lose LoseReply, between func(), write func() error) error {
	t.Helper()
	lost := lose(between)
	err := write()
	if !lost() {
		t.Fatal("LoseReply lost no reply: the backing's test hook did not catch the write")
	}
	if err != nil && !contract.Retryable(err) {
		t.Errorf("a write whose reply was lost returned %v (%T): after a lost reply a store answers with the write's own outcome or a retryable error", err, err)
	}
	return err
}

func testReplayCreate(t *testing.T, f ReplayFactory) {
	s, lose := newReplay(t, f)
	var got *contract.Run
	err := losing(t, lose, func() {}, func() (err error) {
		got, err = s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`{"v":1}`)})
		return err
	})
	if err == nil && (got.Version != 1 || !jsonEqual(got.Data, json.RawMessage(`{"v":1}`))) {
		t.Errorf("a resent create answered version %d, data %s; want the run it created: version 1, {\"v\":1}", got.Version, got.Data)
	}
	stored := getOK(t, s, "acme", "r")
	if stored.Version != 1 {
		t.Errorf("after a create whose reply was lost the run is at version %d, want 1 (created once)", stored.Version)
	}
}

func testReplayPutAfterPatch(t *testing.T, f ReplayFactory) {
	s, lose := newReplay(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`{"v":1}`)})
	var got *contract.Run
	err := losing(t, lose, func() {
		patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}, Status: "patched"})
	}, func() (err error) {
		got, err = s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "r", Version: 1, Status: "put", Data: json.RawMessage(`{"v":2}`)})
		return err
	})
	if err == nil && (got.Version != 2 || got.Counters.Iterations != 0 || got.Status != "put" || !jsonEqual(got.Data, json.RawMessage(`{"v":2}`))) {
		t.Errorf("a resent put answered version %d, iterations %d, status %q, data %s; want the run as the put left it: version 2, iterations 0, status \"put\", {\"v\":2} (not the run as it is now)",
			got.Version, got.Counters.Iterations, got.Status, got.Data)
	}
	stored := getOK(t, s, "acme", "r")
	if stored.Version != 3 || stored.Counters.Iterations != 1 || stored.Status != "patched" || !jsonEqual(stored.Data, json.RawMessage(`{"v":2}`)) {
		t.Errorf("stored: version %d, iterations %d, status %q, data %s; want version 3, iterations 1, status \"patched\", {\"v\":2}",
			stored.Version, stored.Counters.Iterations, stored.Status, stored.Data)
	}
}

func testReplayPutAfterPut(t *testing.T, f ReplayFactory) {
	s, lose := newReplay(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`{"v":1}`)})
	var got *contract.Run
	err := losing(t, lose, func() {
		// Another client reads what the lost put wrote and writes over it.
		seen := getOK(t, s, "acme", "r")
		putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Version: seen.Version, Data: json.RawMessage(`{"v":"other"}`)})
	}, func() (err error) {
		got, err = s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "r", Version: 1, Data: json.RawMessage(`{"v":2}`)})
		return err
	})
	var ce *contract.StateConflictError
	if errors.As(err, &ce) {
		t.Fatalf("a put whose reply was lost was reported as a conflict with the put that followed it: %v", err)
	}
	if err == nil && (got.Version != 2 || !jsonEqual(got.Data, json.RawMessage(`{"v":2}`))) {
		t.Errorf("a resent put answered version %d, data %s; want version 2, {\"v\":2}", got.Version, got.Data)
	}
	stored := getOK(t, s, "acme", "r")
	if stored.Version != 3 || !jsonEqual(stored.Data, json.RawMessage(`{"v":"other"}`)) {
		t.Errorf("stored: version %d, data %s; want version 3 with the other client's {\"v\":\"other\"}", stored.Version, stored.Data)
	}
}

func testReplayPutAfterRecreate(t *testing.T, f ReplayFactory) {
	s, lose := newReplay(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`{"v":1}`)})
	var got *contract.Run
	err := losing(t, lose, func() {
		mustNoErr(t, s.DeleteRun(t.Context(), "acme", "r"), "DeleteRun by another client")
		putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`{"v":"new"}`)})
	}, func() (err error) {
		got, err = s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "r", Version: 1, Data: json.RawMessage(`{"v":2}`)})
		return err
	})
	var ce *contract.StateConflictError
	if errors.As(err, &ce) {
		t.Errorf("a put whose reply was lost was reported as a conflict: %v", err)
	}
	if err == nil && (got.Version != 2 || !jsonEqual(got.Data, json.RawMessage(`{"v":2}`))) {
		t.Errorf("a resent put answered version %d, data %s; want version 2, {\"v\":2}", got.Version, got.Data)
	}
	stored := getOK(t, s, "acme", "r")
	if stored.Version != 1 || !jsonEqual(stored.Data, json.RawMessage(`{"v":"new"}`)) {
		t.Errorf("the run created afresh by another client is at version %d with %s, want version 1 with {\"v\":\"new\"}: the resent put wrote over it",
			stored.Version, stored.Data)
	}
}

func testReplayPatch(t *testing.T, f ReplayFactory) {
	s, lose := newReplay(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r"})
	var got *contract.Run
	err := losing(t, lose, func() {
		for range 3 {
			patchOK(t, s, "acme", "r", contract.Patch{Counters: contract.Counters{Cursor: 1}})
		}
	}, func() (err error) {
		got, err = s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: 5, Iterations: 1}, Status: "mine"})
		return err
	})
	if err == nil && (got.Version != 2 || got.Counters != (contract.Counters{InputTokens: 5, Iterations: 1}) || got.Status != "mine") {
		t.Errorf("a resent patch answered version %d, counters %+v, status %q; want the run as the patch left it: version 2, {InputTokens:5 Iterations:1}, \"mine\"",
			got.Version, got.Counters, got.Status)
	}
	stored := getOK(t, s, "acme", "r")
	if want := (contract.Counters{InputTokens: 5, Iterations: 1, Cursor: 3}); stored.Counters != want || stored.Version != 5 {
		t.Errorf("stored counters %+v at version %d, want %+v at 5 (the lost patch added once)", stored.Counters, stored.Version, want)
	}
}

func testReplayPatchAfterDelete(t *testing.T, f ReplayFactory) {
	s, lose := newReplay(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r"})
	var got *contract.Run
	err := losing(t, lose, func() {
		mustNoErr(t, s.DeleteRun(t.Context(), "acme", "r"), "DeleteRun by another client")
	}, func() (err error) {
		got, err = s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}})
		return err
	})
	if errors.Is(err, contract.ErrNotFound) {
		t.Fatal("a patch that landed before the run was deleted answered ErrNotFound")
	}
	if err == nil && (got.Version != 2 || got.Counters.Iterations != 1) {
		t.Errorf("a resent patch answered version %d, iterations %d; want version 2, iterations 1", got.Version, got.Counters.Iterations)
	}
	if _, err := s.GetRun(t.Context(), "acme", "r"); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("after the delete and the resent patch GetRun = %v, want ErrNotFound (a patch never creates a run)", err)
	}
}

func testReplayDelete(t *testing.T, f ReplayFactory) {
	s, lose := newReplay(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r"})
	err := losing(t, lose, func() {}, func() error { return s.DeleteRun(t.Context(), "acme", "r") })
	if errors.Is(err, contract.ErrNotFound) {
		t.Error("a delete whose reply was lost answered ErrNotFound for its own deletion")
	}
	if _, err := s.GetRun(t.Context(), "acme", "r"); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("after the delete GetRun = %v, want ErrNotFound", err)
	}
}

func testReplayDeleteAfterCreate(t *testing.T, f ReplayFactory) {
	s, lose := newReplay(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`{"v":"old"}`)})
	err := losing(t, lose, func() {
		putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`{"v":"new"}`)})
	}, func() error { return s.DeleteRun(t.Context(), "acme", "r") })
	if errors.Is(err, contract.ErrNotFound) {
		t.Error("a delete whose reply was lost answered ErrNotFound for its own deletion")
	}
	got, gerr := s.GetRun(t.Context(), "acme", "r")
	if gerr != nil {
		t.Fatalf("the run another client created after the delete landed is gone (%v): the resent delete removed an acknowledged write", gerr)
	}
	if got.Version != 1 || !jsonEqual(got.Data, json.RawMessage(`{"v":"new"}`)) {
		t.Errorf("the new run is version %d with %s, want version 1 with {\"v\":\"new\"}", got.Version, got.Data)
	}
}
