//go:build integration

package redisstore

import (
	"context"
	"errors"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestDeleteRunFenced: a delete under a fence below the run's deletes
// nothing; under the run's fence or above it deletes the run, and the
// fence goes with it (a new run of that id takes any fence).
func TestDeleteRunFenced(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	st, err := NewState(client, nil, Settings{Namespace: redistest.Namespace(t, client)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Session: "s", Fence: 9}); err != nil {
		t.Fatal(err)
	}
	var se *contract.StaleFenceError
	if err := st.d.DeleteRunFenced(ctx, "acme", "r", 8); !errors.As(err, &se) || se.Fence != 8 || se.Stored != 9 {
		t.Fatalf("delete under a lower fence: %v, want a *StaleFenceError 8 below 9", err)
	}
	if r, err := st.GetRun(ctx, "acme", "r"); err != nil || r.Fence != 9 {
		t.Fatalf("after the refused delete: %+v, %v", r, err)
	}
	if err := st.d.DeleteRunFenced(ctx, "acme", "missing", 8); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("fenced delete of a missing run: %v, want ErrNotFound", err)
	}
	if err := st.d.DeleteRunFenced(ctx, "acme", "r", 9); err != nil {
		t.Fatalf("delete under the run's fence: %v", err)
	}
	if _, err := st.GetRun(ctx, "acme", "r"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("after the delete: %v, want ErrNotFound", err)
	}
	if r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Fence: 1}); err != nil || r.Fence != 1 {
		t.Fatalf("a new run of the id under a lower fence: %+v, %v; the deleted run's fence went with it", r, err)
	}
}
