//go:build integration

package pgstore_test

import (
	"context"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

// BenchmarkStateWrites measures one client's state calls, one at a time:
// GetRun is the baseline the writes compare with (one indexed read of the
// same row), PatchRun and PutRun each one statement that checks and
// writes (and on a refusal reads the stored row in the same statement),
// CreateDelete an insert and a delete.
func BenchmarkStateWrites(b *testing.B) {
	ctx := context.Background()
	d := newTestDB(b)
	st, err := pgstore.NewState(d.pool, nil, pgstore.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(`{"messages":[{"role":"user","content":"hello"}],"step":1}`)
	r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Session: "s", Data: data})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("GetRun", func(b *testing.B) {
		for range b.N {
			if _, err := st.GetRun(ctx, "acme", "r"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PatchRun", func(b *testing.B) {
		for range b.N {
			if r, err = st.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: 120, OutputTokens: 40, Iterations: 1}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutRun", func(b *testing.B) {
		for range b.N {
			if r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Session: "s", Version: r.Version, Data: data}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CreateDelete", func(b *testing.B) {
		for range b.N {
			if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "tmp", Session: "s", Data: data}); err != nil {
				b.Fatal(err)
			}
			if err := st.DeleteRun(ctx, "acme", "tmp"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("StalePut", func(b *testing.B) {
		for range b.N {
			if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: 1, Data: data}); err == nil {
				b.Fatal("a stale put succeeded")
			}
		}
	})
}
