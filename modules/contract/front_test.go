package contract_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// recorder is a driver that records what the front hands it. Its embedded
// drivers are nil, so any call the test does not expect panics.
type recorder struct {
	contract.QueueDriver
	contract.StateDriver
	claims []contract.ClaimRequest
	items  [][]contract.Item
}

func (r *recorder) Claim(_ context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	r.claims = append(r.claims, req)
	return nil, contract.ErrEmpty
}

func (r *recorder) Enqueue(_ context.Context, items ...contract.Item) error {
	r.items = append(r.items, items)
	return nil
}

// The driver gets the queue name filled in, and the caller's slice is not
// written to.
func TestFrontNormalises(t *testing.T) {
	ctx := context.Background()
	r := &recorder{}
	f := contract.NewQueueFront(r, 0, "test")
	if _, err := f.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Second, Max: 1}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatal(err)
	}
	items := []contract.Item{{Tenant: "a", ID: "1", Queue: "q"}, {Tenant: "a", ID: "2"}}
	if err := f.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	if len(r.claims) != 1 || r.claims[0].Queue != contract.DefaultQueue {
		t.Errorf("driver claims %+v; want one on %q", r.claims, contract.DefaultQueue)
	}
	if got := r.items[0]; got[0].Queue != "q" || got[1].Queue != contract.DefaultQueue {
		t.Errorf("driver items %+v; want queues q and %q", got, contract.DefaultQueue)
	}
	if items[1].Queue != "" {
		t.Errorf("the caller's item was changed to queue %q", items[1].Queue)
	}
	if c := f.Capabilities(); c.Backing != "test" || !c.Inspector || !c.Waker || !c.Stats || !c.CompleteAndClaim {
		t.Errorf("Capabilities %+v; want all, backing test", c)
	}
}

// Every operation refuses bad input at the front with a *ValidationError
// (a too_large *StatePersistenceError for a payload over the cap):
// the driver, which would panic, is never called.
func TestFrontRefusesBeforeTheDriver(t *testing.T) {
	ctx := context.Background()
	r := &recorder{}
	q := contract.NewQueueFront(r, 16, "test")
	s := contract.NewStateFront(r, 16, contract.RunPolicy{})
	fenced := contract.NewStateFront(r, 16, contract.RunPolicy{RequireFence: true})
	bad := contract.Lease{Item: contract.Item{ID: "x"}} // no tenant
	ok := contract.ClaimRequest{LeaseFor: time.Second, Max: 1}
	for name, call := range map[string]func() error{
		"Enqueue":           func() error { return q.Enqueue(ctx) },
		"Enqueue too large": func() error { return q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "b", Payload: make([]byte, 17)}) },
		"Claim":             func() error { _, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Second}); return err },
		"Heartbeat": func() error {
			_, err := q.Heartbeat(ctx, contract.Lease{Item: contract.Item{Tenant: "a", ID: "b"}}, 0)
			return err
		},
		"Complete":          func() error { return q.Complete(ctx, bad) },
		"CompleteAndClaim":  func() error { _, err := q.CompleteAndClaim(ctx, []contract.Lease{bad}, ok); return err },
		"Fail":              func() error { _, err := q.Fail(ctx, bad, nil); return err },
		"Reap":              func() error { _, err := q.Reap(ctx, "a\x00"); return err },
		"DeadLetters":       func() error { _, err := q.DeadLetters(ctx, contract.DeadLetterQuery{Skip: -1}); return err },
		"Requeue":           func() error { _, err := q.Requeue(ctx, contract.DeadLetterFilter{Tenant: "\x00"}); return err },
		"Purge":             func() error { _, err := q.Purge(ctx, contract.DeadLetterFilter{ID: "\x00"}); return err },
		"Tenants":           func() error { _, err := q.Tenants(ctx, "\x00"); return err },
		"Rotation":          func() error { _, err := q.Rotation(ctx, "", contract.MaxRecentTurns+1); return err },
		"Leases":            func() error { _, err := q.Leases(ctx, "", contract.PageRequest{Limit: -1}); return err },
		"Item":              func() error { _, err := q.Item(ctx, contract.ItemKey{}); return err },
		"DeadLetterSummary": func() error { _, err := q.DeadLetterSummary(ctx, contract.DeadLetterFilter{}, -1); return err },
		"GetRun":            func() error { _, err := s.GetRun(ctx, "", "x"); return err },
		"PutRun": func() error {
			_, err := s.PutRun(ctx, contract.Run{Tenant: "a", ID: "b", Data: []byte("{")})
			return err
		},
		"PatchRun": func() error { _, err := s.PatchRun(ctx, "a", "b", contract.Patch{Status: "\x00"}); return err },
		"ListRuns": func() error {
			_, err := s.ListRuns(ctx, "a", contract.PageRequest{Limit: contract.MaxPageSize + 1})
			return err
		},
		"ListSessionRuns": func() error { _, err := s.ListSessionRuns(ctx, "a", "", contract.PageRequest{}); return err },
		"DeleteRun":       func() error { return s.DeleteRun(ctx, "a", "") },
		"PutRun negative fence": func() error {
			_, err := s.PutRun(ctx, contract.Run{Tenant: "a", ID: "b", Fence: -1})
			return err
		},
		"PatchRun negative fence":     func() error { _, err := s.PatchRun(ctx, "a", "b", contract.Patch{Fence: -2}); return err },
		"DeleteRunFenced negative":    func() error { return s.DeleteRunFenced(ctx, "a", "b", -1) },
		"PutRun unfenced, required":   func() error { _, err := fenced.PutRun(ctx, contract.Run{Tenant: "a", ID: "b"}); return err },
		"PatchRun unfenced, required": func() error { _, err := fenced.PatchRun(ctx, "a", "b", contract.Patch{}); return err },
		"DeleteRun, fence required":   func() error { return fenced.DeleteRun(ctx, "a", "b") },
		"DeleteRunFenced 0, required": func() error { return fenced.DeleteRunFenced(ctx, "a", "b", 0) },
		"ListRunVersions": func() error {
			_, err := s.ListRunVersions(ctx, "a", "b", contract.PageRequest{Limit: -1})
			return err
		},
		"GetRunVersion 0":  func() error { _, err := s.GetRunVersion(ctx, "a", "b", 0); return err },
		"ForkRun no newID": func() error { _, err := s.ForkRun(ctx, "a", "b", 1, ""); return err },
		"ForkRun version":  func() error { _, err := s.ForkRun(ctx, "a", "b", -1, "c"); return err },
	} {
		t.Run(name, func(t *testing.T) {
			err := call()
			_, invalid := errors.AsType[*contract.ValidationError](err)
			_, tooLarge := errors.AsType[*contract.StatePersistenceError](err)
			if !invalid && !tooLarge {
				t.Errorf("got %v; want a *contract.ValidationError (a too_large refusal for a payload)", err)
			}
		})
	}
}

// TestFrontBadRunPolicy: a front opened with a policy out of range
// answers every state call with the policy's *ValidationError, naming the
// field, and never calls the driver (which would panic).
func TestFrontBadRunPolicy(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		p     contract.RunPolicy
		field string
	}{
		{contract.RunPolicy{KeepVersions: -1}, "Settings.Runs.KeepVersions"},
		{contract.RunPolicy{KeepVersions: contract.MaxRunVersions + 1}, "Settings.Runs.KeepVersions"},
		{contract.RunPolicy{VersionAge: -time.Second}, "Settings.Runs.VersionAge"},
	} {
		s := contract.NewStateFront(&recorder{}, 16, tt.p)
		for name, call := range map[string]func() error{
			"GetRun": func() error { _, err := s.GetRun(ctx, "a", "b"); return err },
			"PutRun": func() error { _, err := s.PutRun(ctx, contract.Run{Tenant: "a", ID: "b"}); return err },
			"ListRunVersions": func() error {
				_, err := s.ListRunVersions(ctx, "a", "b", contract.PageRequest{})
				return err
			},
			"DeleteRun": func() error { return s.DeleteRun(ctx, "a", "b") },
		} {
			err := call()
			if ve, ok := errors.AsType[*contract.ValidationError](err); !ok || ve.Field != tt.field {
				t.Errorf("%+v %s: got %v; want a *contract.ValidationError on %s", tt.p, name, err, tt.field)
			}
		}
	}
}
