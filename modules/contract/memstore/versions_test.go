package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// fakeClock is a settable clock for the tests inside the package (the
// contracttest FakeClock would import this package's tests in a cycle).
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// TestVersionsPrunedOnWrite pins what the suite cannot see through the API
// (reads hide versions past the bounds whether or not they are stored):
// writes delete them, at most contract.VersionPruneBatch a write.
func TestVersionsPrunedOnWrite(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := New(clock, Settings{Runs: contract.RunPolicy{VersionAge: time.Hour}})
	s := st.s
	k := runKey{"acme", "r"}
	stored := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.kept[k].list())
	}
	r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`0`)})
	if err != nil {
		t.Fatal(err)
	}
	const writes = 3*contract.VersionPruneBatch + 10
	put := func(i int) {
		t.Helper()
		r.Data = json.RawMessage(fmt.Sprint(i))
		if r, err = st.PutRun(ctx, *r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range writes {
		put(i)
	}
	if n := stored(); n != writes {
		t.Fatalf("%d versions stored after %d puts within VersionAge, want %d", n, writes, writes)
	}
	// Every version is past VersionAge now, and so is each run a put
	// replaces: each put deletes at most VersionPruneBatch of them.
	n := writes
	for n > 0 {
		clock.now = clock.now.Add(2 * time.Hour)
		put(0)
		n = max(n+1-contract.VersionPruneBatch, 0)
		if got := stored(); got != n {
			t.Fatalf("after a put: %d versions stored, want %d (all past VersionAge, VersionPruneBatch %d deleted a write)", got, n, contract.VersionPruneBatch)
		}
	}

	// By count: KeepVersions bounds what is stored, not only what is read.
	st = New(clock, Settings{Runs: contract.RunPolicy{KeepVersions: 3}})
	s = st.s
	if r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r"}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		put(i)
		if n := stored(); n != min(i+1, 3) {
			t.Fatalf("after %d puts with KeepVersions 3: %d versions stored, want %d", i+1, n, min(i+1, 3))
		}
	}
}
