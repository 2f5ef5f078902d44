package contracttest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// stateContextCases pin that a cancelled or expired context is honoured:
// the call returns an error matching the context's and changes nothing.
func stateContextCases() []subtest[StateFactory] {
	return []subtest[StateFactory]{
		{"CancelledContextChangesNothing", testStateCancelled},
		{"ExpiredDeadline", testStateDeadline},
	}
}

func testStateCancelled(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	r := putOK(t, s, contract.Run{Tenant: "acme", ID: "r", Session: "s", Data: json.RawMessage(`1`)})
	ctx := cancelled(t)
	_, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "new"})
	wantIs(t, err, context.Canceled, "PutRun(create) with a cancelled context")
	upd := *r
	upd.Data = json.RawMessage(`2`)
	_, err = s.PutRun(ctx, upd)
	wantIs(t, err, context.Canceled, "PutRun(update) with a cancelled context")
	_, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}})
	wantIs(t, err, context.Canceled, "PatchRun with a cancelled context")
	wantIs(t, s.DeleteRun(ctx, "acme", "r"), context.Canceled, "DeleteRun with a cancelled context")
	_, err = s.GetRun(ctx, "acme", "r")
	wantIs(t, err, context.Canceled, "GetRun with a cancelled context")
	_, err = s.ListRuns(ctx, "acme", contract.PageRequest{})
	wantIs(t, err, context.Canceled, "ListRuns with a cancelled context")
	_, err = s.ListSessionRuns(ctx, "acme", "s", contract.PageRequest{})
	wantIs(t, err, context.Canceled, "ListSessionRuns with a cancelled context")

	sameRun(t, "run after calls with a cancelled context", getOK(t, s, "acme", "r"), r)
	_, err = s.GetRun(t.Context(), "acme", "new")
	wantIs(t, err, contract.ErrNotFound, "GetRun of a run created with a cancelled context")
}

func testStateDeadline(t *testing.T, f StateFactory) {
	s, _ := newState(t, f)
	r := putOK(t, s, contract.Run{Tenant: "acme", ID: "r"})
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := s.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 1}})
	wantIs(t, err, context.DeadlineExceeded, "PatchRun with an expired deadline")
	_, err = s.GetRun(ctx, "acme", "r")
	wantIs(t, err, context.DeadlineExceeded, "GetRun with an expired deadline")
	sameRun(t, "run after a patch with an expired deadline", getOK(t, s, "acme", "r"), r)
}
