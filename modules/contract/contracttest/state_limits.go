package contracttest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// stateLimitsCases pin the size cap on Data (refused before sending, never
// retryable, nothing stored) and the name length cap.
func stateLimitsCases() []subtest[StateFactory] {
	return []subtest[StateFactory]{
		{"TooLargeCreateRefused", testTooLargeCreate},
		{"TooLargeUpdateRefused", testTooLargeUpdate},
		{"ExactlyMaxValueAccepted", testExactlyMaxValue},
		{"LongestNamesAccepted", testLongestNames},
	}
}

// jsonOfSize returns a JSON string document of exactly n bytes (n >= 2).
func jsonOfSize(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("a", n-2) + `"`)
}

func testTooLargeCreate(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	big := jsonOfSize(contract.DefaultMaxValueBytes + 1)
	_, err := s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "big", Session: "s", Data: big})
	wantTooLarge(t, err, "PutRun with Data of DefaultMaxValueBytes+1")
	_, err = s.GetRun(t.Context(), "acme", "big")
	wantIs(t, err, contract.ErrNotFound, "GetRun after a refused oversized create")
	for name, list := range map[string]func() (contract.RunPage, error){
		"ListRuns": func() (contract.RunPage, error) { return s.ListRuns(t.Context(), "acme", contract.PageRequest{}) },
		"ListSessionRuns": func() (contract.RunPage, error) {
			return s.ListSessionRuns(t.Context(), "acme", "s", contract.PageRequest{})
		},
	} {
		p, err := list()
		mustNoErr(t, err, "%s", name)
		if len(p.Runs) != 0 {
			t.Errorf("%s after a refused oversized create lists %v", name, runIDs(p.Runs))
		}
	}
}

func testTooLargeUpdate(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	r := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Status: "small", Data: json.RawMessage(`{"small":true}`)})
	upd := *r
	upd.Status = "big"
	upd.Data = jsonOfSize(contract.DefaultMaxValueBytes + 1)
	_, err := s.PutRun(t.Context(), upd)
	wantTooLarge(t, err, "PutRun(update) with Data of DefaultMaxValueBytes+1")
	got := getOK(t, s, "acme", "r")
	sameRun(t, "run after a refused oversized update", got, r)
}

func testExactlyMaxValue(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	data := jsonOfSize(contract.DefaultMaxValueBytes)
	_, err := s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "max", Data: data})
	mustNoErr(t, err, "PutRun with Data of exactly DefaultMaxValueBytes")
	got := getOK(t, s, "acme", "max")
	if !jsonEqual(got.Data, data) {
		t.Errorf("Data of DefaultMaxValueBytes read back as %s", clip(got.Data))
	}
}

func testLongestNames(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	tenant := strings.Repeat("t", contract.MaxNameBytes)
	id := strings.Repeat("é", contract.MaxNameBytes/2)
	session := strings.Repeat("s", contract.MaxNameBytes)
	putOK(t, s, contract.Run{Tenant: tenant, ID: id, Session: session, Data: json.RawMessage(`1`)})
	got := getOK(t, s, tenant, id)
	if got.Tenant != tenant || got.ID != id || got.Session != session {
		t.Errorf("run with names of MaxNameBytes read back with different names (lengths %d/%d/%d)", len(got.Tenant), len(got.ID), len(got.Session))
	}
	p, err := s.ListSessionRuns(t.Context(), tenant, session, contract.PageRequest{})
	mustNoErr(t, err, "ListSessionRuns with names of MaxNameBytes")
	if len(p.Runs) != 1 {
		t.Errorf("ListSessionRuns with names of MaxNameBytes lists %d runs, want 1", len(p.Runs))
	}
}
