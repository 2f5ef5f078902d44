package contracttest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// stateInputCases pin that bad input is a *contract.ValidationError
// (matching contract.ErrInvalid) and changes nothing.
func stateInputCases() []subtest[StateFactory] {
	return []subtest[StateFactory]{
		{"BadNamesRefused", testStateBadNames},
		{"MalformedDataRefused", testMalformedData},
		{"BadVersionAndStatusRefused", testBadVersionAndStatus},
	}
}

// badNames are names every call must refuse.
var badNames = map[string]string{
	"empty":         "",
	"NUL byte":      "a\x00b",
	"invalid UTF-8": "a\xffb",
	"too long":      strings.Repeat("n", contract.MaxNameBytes+1),
}

func testStateBadNames(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	good := putOK(t, s, contract.Run{Tenant: "acme", ID: "good", Session: "s", Data: json.RawMessage(`"good"`)})
	ctx := t.Context()
	for what, bad := range badNames {
		_, err := s.PutRun(ctx, contract.Run{Tenant: bad, ID: "r"})
		wantInvalid(t, err, "PutRun with %s tenant", what)
		_, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: bad})
		wantInvalid(t, err, "PutRun with %s id", what)
		_, err = s.GetRun(ctx, bad, "good")
		wantInvalid(t, err, "GetRun with %s tenant", what)
		_, err = s.GetRun(ctx, "acme", bad)
		wantInvalid(t, err, "GetRun with %s id", what)
		_, err = s.PatchRun(ctx, bad, "good", contract.Patch{Counters: contract.Counters{Iterations: 1}})
		wantInvalid(t, err, "PatchRun with %s tenant", what)
		_, err = s.PatchRun(ctx, "acme", bad, contract.Patch{Counters: contract.Counters{Iterations: 1}})
		wantInvalid(t, err, "PatchRun with %s id", what)
		wantInvalid(t, s.DeleteRun(ctx, bad, "good"), "DeleteRun with %s tenant", what)
		wantInvalid(t, s.DeleteRun(ctx, "acme", bad), "DeleteRun with %s id", what)
		_, err = s.ListRuns(ctx, bad, contract.PageRequest{})
		wantInvalid(t, err, "ListRuns with %s tenant", what)
		_, err = s.ListSessionRuns(ctx, bad, "s", contract.PageRequest{})
		wantInvalid(t, err, "ListSessionRuns with %s tenant", what)
		_, err = s.ListSessionRuns(ctx, "acme", bad, contract.PageRequest{})
		wantInvalid(t, err, "ListSessionRuns with %s session", what)
		if bad != "" {
			// An empty Session means "no session"; any other bad one is refused.
			_, err = s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Session: bad})
			wantInvalid(t, err, "PutRun with %s session", what)
		}
	}
	sameRun(t, "the good run after refused calls", getOK(t, s, "acme", "good"), good)
	p, err := s.ListRuns(ctx, "acme", contract.PageRequest{})
	mustNoErr(t, err, "ListRuns")
	if len(p.Runs) != 1 {
		t.Errorf("after refused puts the tenant lists %v, want only the good run", runIDs(p.Runs))
	}
}

func testMalformedData(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	existing := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`{"ok":1}`)})
	for _, bad := range []string{`{"a":`, `not json`, `{"a":1}{"b":2}`, `'single'`, "\"\xff\""} {
		_, err := s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "new", Data: json.RawMessage(bad)})
		wantInvalid(t, err, "PutRun(create) with Data %q", bad)
		upd := *existing
		upd.Data = json.RawMessage(bad)
		_, err = s.PutRun(t.Context(), upd)
		wantInvalid(t, err, "PutRun(update) with Data %q", bad)
	}
	_, err := s.GetRun(t.Context(), "acme", "new")
	wantIs(t, err, contract.ErrNotFound, "GetRun after refused creates")
	sameRun(t, "run after refused updates", getOK(t, s, "acme", "r"), existing)
}

func testBadVersionAndStatus(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	existing := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Status: "ok"})
	_, err := s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "r", Version: -1})
	wantInvalid(t, err, "PutRun with Version -1")
	for _, bad := range []string{"a\x00b", "a\xffb", strings.Repeat("s", contract.MaxNameBytes+1)} {
		upd := *existing
		upd.Status = bad
		_, err = s.PutRun(t.Context(), upd)
		wantInvalid(t, err, "PutRun with Status %q", clip([]byte(bad)))
		_, err = s.PatchRun(t.Context(), "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: 1}, Status: bad})
		wantInvalid(t, err, "PatchRun with Status %q", clip([]byte(bad)))
	}
	sameRun(t, "run after refused writes", getOK(t, s, "acme", "r"), existing)
}
