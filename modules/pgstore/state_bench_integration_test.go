//go:build integration

package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
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

// BenchmarkStateConcurrent measures PutRun and PatchRun from ten clients
// at once (one connection each), every client writing a run of its own:
// unfenced, fenced (every write carries the client's fence, so each
// lands), and keeping versions (KeepVersions 10, unfenced). The patches
// set the status, alternately, as well as adding to the counters, so
// with versions each one keeps a version; without them the same patch
// keeps none. Compare the three of one operation in one run (run it with
// -count to interleave them); the README quotes the ratios.
func BenchmarkStateConcurrent(b *testing.B) {
	const clients = 10
	ctx := context.Background()
	d := newTestDB(b, withMaxConns(clients))
	data := []byte(`{"messages":[{"role":"user","content":"hello"}],"step":1}`)
	calls := 0
	for _, op := range []string{"PutRun", "PatchRun"} {
		for _, v := range []struct {
			name  string
			fence int64
			p     contract.RunPolicy
		}{{"unfenced", 0, contract.RunPolicy{}}, {"fenced", 7, contract.RunPolicy{}}, {"versions10", 0, contract.RunPolicy{KeepVersions: 10}}} {
			b.Run(op+"/"+v.name, func(b *testing.B) {
				st, err := pgstore.NewState(d.pool, nil, pgstore.Settings{Runs: v.p})
				if err != nil {
					b.Fatal(err)
				}
				calls++
				runs := make([]*contract.Run, clients)
				for c := range runs {
					if runs[c], err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: fmt.Sprintf("%s-%s-%d-%d", op, v.name, calls, c), Fence: v.fence, Data: data}); err != nil {
						b.Fatal(err)
					}
				}
				var next atomic.Int64
				var wg sync.WaitGroup
				errs := make(chan error, clients)
				b.ResetTimer()
				for c := range clients {
					wg.Go(func() {
						r := runs[c]
						for i := 0; next.Add(1) <= int64(b.N); i++ {
							var err error
							if op == "PutRun" {
								r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: r.ID, Version: r.Version, Fence: v.fence, Data: data})
							} else {
								_, err = st.PatchRun(ctx, "acme", r.ID, contract.Patch{Fence: v.fence, Status: [2]string{"thinking", "acting"}[i%2],
									Counters: contract.Counters{InputTokens: 120, OutputTokens: 40, Iterations: 1}})
							}
							if err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			})
		}
	}
}
