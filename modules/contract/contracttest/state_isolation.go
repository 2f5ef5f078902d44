package contracttest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// stateIsolationCases pin that tenants never see each other's runs,
// whatever characters their names hold.
func stateIsolationCases() []subtest[StateFactory] {
	return []subtest[StateFactory]{
		{"HostileNamesNeverCollide", testHostileNames},
		{"WritesStayInTenant", testWritesStayInTenant},
		{"SessionsStayInTenant", testSessionsStayInTenant},
		{"FactoryStoresShareNothing", testStateFactoryFresh},
	}
}

// hostileTenants are names a naive key encoding would collide or a
// pattern-matching query would widen: separators, hash tags, glob and LIKE
// wildcards, case, Unicode in two normal forms, spaces, newlines.
var hostileTenants = []string{
	"a:b", "a", "{x}", "x", "{a}:b", "a}", "A",
	"ü", "u\u0308", "租户 one", " spaced ", "a\nb",
	"a*", "a?", "a%", "a_", "a\\", "1", "01",
}

// hostileIDs are the ids every hostile tenant gets; "b:x" under "a" and
// "x" under "a:b" is the classic collision.
var hostileIDs = []string{"x", "b:x", "{x}", "*", "%", "run 1"}

func hostileData(tenant, id string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"tenant": tenant, "id": id})
	return b
}

func testHostileNames(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	for _, tenant := range hostileTenants {
		for _, id := range hostileIDs {
			putOK(t, s, contract.Run{Tenant: tenant, ID: id, Session: tenant + ":" + id, Data: hostileData(tenant, id)})
		}
	}
	patchOK(t, s, "a", "b:x", contract.Patch{Counters: contract.Counters{Iterations: 1}})
	for _, tenant := range hostileTenants {
		for _, id := range hostileIDs {
			r := getOK(t, s, tenant, id)
			if r.Tenant != tenant || r.ID != id {
				t.Errorf("GetRun(%q, %q) returned run %q/%q", tenant, id, r.Tenant, r.ID)
			}
			sameJSON(t, fmt.Sprintf("GetRun(%q, %q).Data", tenant, id), r.Data, hostileData(tenant, id))
			wantIter := int64(0)
			if tenant == "a" && id == "b:x" {
				wantIter = 1
			}
			if r.Counters.Iterations != wantIter || r.Version != 1+wantIter {
				t.Errorf("GetRun(%q, %q): Iterations=%d Version=%d, want %d and %d (a patch of a/b:x landed elsewhere?)",
					tenant, id, r.Counters.Iterations, r.Version, wantIter, 1+wantIter)
			}
		}
		runs := pageAll(t, func(p contract.PageRequest) (contract.RunPage, error) {
			return s.ListRuns(t.Context(), tenant, p)
		}, 4, nil)
		wantExactlyOnce(t, runs, tenant, hostileIDs)
		sess := tenant + ":" + hostileIDs[1]
		sr, err := s.ListSessionRuns(t.Context(), tenant, sess, contract.PageRequest{})
		mustNoErr(t, err, "ListSessionRuns(%q, %q)", tenant, sess)
		if len(sr.Runs) != 1 || sr.Runs[0].ID != hostileIDs[1] || sr.Runs[0].Tenant != tenant {
			t.Errorf("ListSessionRuns(%q, %q) = %v, want only run %q", tenant, sess, runIDs(sr.Runs), hostileIDs[1])
		}
	}
}

func testWritesStayInTenant(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	ab := putOK(t, s, contract.Run{Tenant: "a:b", ID: "x", Data: json.RawMessage(`"a:b/x"`)})
	a := putOK(t, s, contract.Run{Tenant: "a", ID: "b:x", Data: json.RawMessage(`"a/b:x"`)})
	if ab.Version != 1 || a.Version != 1 {
		t.Errorf("creating a/b:x after a:b/x gave versions %d and %d, want 1 and 1 (did they share a key?)", ab.Version, a.Version)
	}
	patchOK(t, s, "a", "b:x", contract.Patch{Counters: contract.Counters{InputTokens: 3}, Status: "patched"})
	a.Data = json.RawMessage(`"a/b:x v2"`)
	a.Version = 2
	putOK(t, s, *a)
	got := getOK(t, s, "a:b", "x")
	sameRun(t, "a:b/x after writes to a/b:x", got, ab)
	mustNoErr(t, s.DeleteRun(t.Context(), "a", "b:x"), "DeleteRun(a, b:x)")
	sameRun(t, "a:b/x after deleting a/b:x", getOK(t, s, "a:b", "x"), ab)
	wantIs(t, s.DeleteRun(t.Context(), "a", "x"), contract.ErrNotFound, "DeleteRun(a, x)")
	wantIs(t, s.DeleteRun(t.Context(), "a:b:x", "x"), contract.ErrNotFound, "DeleteRun(a:b:x, x)")
	p, err := s.ListRuns(t.Context(), "a", contract.PageRequest{})
	mustNoErr(t, err, "ListRuns(a)")
	if len(p.Runs) != 0 {
		t.Errorf("ListRuns(a) lists %v after its only run was deleted", runIDs(p.Runs))
	}
}

func testSessionsStayInTenant(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	putOK(t, s, contract.Run{Tenant: "a", ID: "r1", Session: "b:s"})
	putOK(t, s, contract.Run{Tenant: "a:b", ID: "r2", Session: "s"})
	putOK(t, s, contract.Run{Tenant: "a", ID: "r3", Session: "s"})
	for _, c := range []struct{ tenant, session, want string }{
		{"a", "b:s", "r1"}, {"a:b", "s", "r2"}, {"a", "s", "r3"},
	} {
		p, err := s.ListSessionRuns(t.Context(), c.tenant, c.session, contract.PageRequest{})
		mustNoErr(t, err, "ListSessionRuns(%q, %q)", c.tenant, c.session)
		if len(p.Runs) != 1 || p.Runs[0].ID != c.want || p.Runs[0].Tenant != c.tenant {
			t.Errorf("ListSessionRuns(%q, %q) = %v, want only %s", c.tenant, c.session, runIDs(p.Runs), c.want)
		}
	}
}

func testStateFactoryFresh(t *testing.T, f StateFactory) {
	s1, _ := newState(t, f)
	putOK(t, s1, contract.Run{Tenant: "acme", ID: "r"})
	s2, _ := newState(t, f)
	_, err := s2.GetRun(t.Context(), "acme", "r")
	wantIs(t, err, contract.ErrNotFound, "GetRun in a second store from the factory (each call must share nothing)")
	created := putOK(t, s2, contract.Run{Tenant: "acme", ID: "r"})
	if created.Version != 1 {
		t.Errorf("create in a second store gave Version %d, want 1", created.Version)
	}
}
