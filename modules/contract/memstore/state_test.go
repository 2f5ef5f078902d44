package memstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
)

func TestRunsAreCopiedInAndOut(t *testing.T) {
	s := memstore.New(contracttest.NewFakeClock(contracttest.FakeEpoch), memstore.Settings{})
	ctx := t.Context()
	data := []byte(`{"step":1}`)
	if _, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: data}); err != nil {
		t.Fatal(err)
	}
	data[9] = '9'
	got, err := s.GetRun(ctx, "acme", "r")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Data) != `{"step":1}` {
		t.Fatalf("stored data changed with the caller's slice: %s", got.Data)
	}
	got.Data[9] = '7'
	again, _ := s.GetRun(ctx, "acme", "r")
	if string(again.Data) != `{"step":1}` {
		t.Fatalf("stored data changed with a returned slice: %s", again.Data)
	}
}

func TestRunTimesAndSeq(t *testing.T) {
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	s := memstore.New(clock, memstore.Settings{})
	ctx := t.Context()
	a, _ := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "a"})
	b, _ := s.PutRun(ctx, contract.Run{Tenant: "other", ID: "b"})
	if a.Seq >= b.Seq || a.Version != 1 || !a.CreatedAt.Equal(contracttest.FakeEpoch) {
		t.Fatalf("created runs: %+v %+v", a, b)
	}
	later := clock.Advance(5e9)
	p, err := s.PatchRun(ctx, "acme", "a", contract.Patch{Counters: contract.Counters{Iterations: 1}, Status: "working"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Seq != a.Seq || p.Version != 2 || !p.UpdatedAt.Equal(later) || !p.CreatedAt.Equal(a.CreatedAt) || p.Status != "working" {
		t.Fatalf("patched run: %+v", p)
	}
}

func TestRunCursorIsChecked(t *testing.T) {
	s := memstore.New(nil, memstore.Settings{})
	_, err := s.ListRuns(t.Context(), "acme", contract.PageRequest{Cursor: "not-a-cursor"})
	if !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("ListRuns with a bad cursor: %v, want a validation error", err)
	}
}

func TestSessionFollowsPut(t *testing.T) {
	s := memstore.New(nil, memstore.Settings{})
	ctx := t.Context()
	r, _ := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Session: "s1"})
	r.Session = "s2"
	if _, err := s.PutRun(ctx, *r); err != nil {
		t.Fatal(err)
	}
	one, _ := s.ListSessionRuns(ctx, "acme", "s1", contract.PageRequest{})
	two, _ := s.ListSessionRuns(ctx, "acme", "s2", contract.PageRequest{})
	if len(one.Runs) != 0 || len(two.Runs) != 1 {
		t.Fatalf("after moving session: s1 %d runs, s2 %d runs", len(one.Runs), len(two.Runs))
	}
}

func TestStateCancelledContextChangesNothing(t *testing.T) {
	s := memstore.New(nil, memstore.Settings{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`1`)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("PutRun with a cancelled context: %v", err)
	}
	if _, err := s.GetRun(t.Context(), "acme", "r"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("run exists after a cancelled PutRun: %v", err)
	}
}

func TestMaxValueBytesOption(t *testing.T) {
	s := memstore.New(nil, memstore.Settings{MaxValueBytes: 8})
	_, err := s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "r", Data: json.RawMessage(`"0123456789"`)})
	var pe *contract.StatePersistenceError
	if !errors.As(err, &pe) || pe.Reason != contract.ReasonTooLarge || pe.Limit != 8 || contract.Retryable(err) {
		t.Fatalf("oversized run: %v", err)
	}
	err = s.Enqueue(t.Context(), contract.Item{Tenant: "acme", ID: "i", Payload: make([]byte, 9)})
	if !errors.As(err, &pe) || pe.What != "item payload" {
		t.Fatalf("oversized item: %v", err)
	}
}
