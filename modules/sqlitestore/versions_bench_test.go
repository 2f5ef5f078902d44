package sqlitestore_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/sqlitestore"
)

// stateLoadBlob is a ~1 KiB JSON blob of adkbench's state load, at step.
func stateLoadBlob(step int) []byte {
	return fmt.Appendf(nil, `{"step":%d,"pad":%q}`, step, strings.Repeat("x", 1024-40))
}

// BenchmarkRunWriteLogPages counts the pages a commit of adkbench's
// state load writes to the log: 40 runs of a ~1 KiB blob (ten tenants,
// four runs each), written in turn, PutRun with a new blob or PatchRun
// changing the status, with versions off and under KeepVersions 10, after
// twelve writes of each run. The file's connection runs no checkpoint,
// so the log only grows, by one 4 KiB frame (and its 24-byte header) per
// page a commit writes; the figure (log-pages/write) is the log's growth
// over b.N writes, in frames, a write (run it with -benchtime 2000x or
// so: the prune comes once in eight writes of a run). No other work on
// the machine changes it.
func BenchmarkRunWriteLogPages(b *testing.B) {
	ctx := context.Background()
	for _, op := range []string{"PutRun", "PatchRun"} {
		for _, keep := range []int{0, 10} {
			b.Run(fmt.Sprintf("%s/keep%d", op, keep), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "adk.db")
				s := sqlitestore.Settings{Runs: contract.RunPolicy{KeepVersions: keep}}
				db, err := sql.Open(sqlitestore.DriverName, sqlitestore.DSN(path, s)+"&_pragma=wal_autocheckpoint(0)")
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				db.SetMaxOpenConns(1) // one connection, which never checkpoints
				if err := sqlitestore.Prepare(ctx, db, s); err != nil {
					b.Fatal(err)
				}
				st, err := sqlitestore.NewState(db, nil, s)
				if err != nil {
					b.Fatal(err)
				}
				var runs []*contract.Run
				for w := range 10 {
					for i := range 4 {
						r, err := st.PutRun(ctx, contract.Run{Tenant: fmt.Sprintf("t%02d", w), ID: fmt.Sprintf("run-%d", i), Session: "bench",
							Status: "step-1", Data: stateLoadBlob(0)})
						if err != nil {
							b.Fatal(err)
						}
						runs = append(runs, r)
					}
				}
				write := func(n int) {
					i, step := n%len(runs), n/len(runs)+1
					r := runs[i]
					var err error
					if op == "PutRun" {
						r, err = st.PutRun(ctx, contract.Run{Tenant: r.Tenant, ID: r.ID, Session: r.Session, Status: r.Status, Data: stateLoadBlob(step), Version: r.Version})
					} else {
						r, err = st.PatchRun(ctx, r.Tenant, r.ID, contract.Patch{Status: fmt.Sprintf("step-%d", step%2), Counters: contract.Counters{Iterations: 1}})
					}
					if err != nil {
						b.Fatal(err)
					}
					runs[i] = r
				}
				warm := 12 * len(runs)
				for n := range warm {
					write(n)
				}
				logSize := func() int64 {
					fi, err := os.Stat(path + "-wal")
					if err != nil {
						b.Fatal(err)
					}
					return fi.Size()
				}
				before := logSize()
				b.ResetTimer()
				for n := range b.N {
					write(warm + n)
				}
				b.StopTimer()
				b.ReportMetric(float64(logSize()-before)/(4096+24)/float64(b.N), "log-pages/write")
			})
		}
	}
}

// BenchmarkRunVersionReads measures the reads of a run and its versions
// on 40 runs of a ~1 KiB blob with ten versions each, half of them kept
// by puts (each holding a blob) and half by status patches (each reading
// the data of the next newer version that holds some): GetRun,
// GetRunVersion of one of the ten, and a page of ListRunVersions with the
// run and all ten.
func BenchmarkRunVersionReads(b *testing.B) {
	ctx := context.Background()
	s := sqlitestore.Settings{Runs: contract.RunPolicy{KeepVersions: 10}, Durability: sqlitestore.DurabilityNormal}
	st, err := sqlitestore.NewState(newFile(b, s), nil, s)
	if err != nil {
		b.Fatal(err)
	}
	var runs []*contract.Run
	for i := range 40 {
		r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: fmt.Sprintf("run-%d", i), Session: "bench", Data: stateLoadBlob(0)})
		if err != nil {
			b.Fatal(err)
		}
		for k := range 30 {
			if k%2 == 0 {
				r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: r.ID, Session: r.Session, Status: r.Status, Data: stateLoadBlob(k), Version: r.Version})
			} else {
				r, err = st.PatchRun(ctx, "acme", r.ID, contract.Patch{Status: fmt.Sprintf("step-%d", k)})
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		runs = append(runs, r)
	}
	b.Run("GetRun", func(b *testing.B) {
		for i := range b.N {
			if _, err := st.GetRun(ctx, "acme", runs[i%len(runs)].ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("GetRunVersion", func(b *testing.B) {
		for i := range b.N {
			r := runs[i%len(runs)]
			if _, err := st.GetRunVersion(ctx, "acme", r.ID, r.Version-1-int64(i%10)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ListRunVersions", func(b *testing.B) {
		for i := range b.N {
			p, err := st.ListRunVersions(ctx, "acme", runs[i%len(runs)].ID, contract.PageRequest{Limit: 11})
			if err != nil || len(p.Versions) != 11 {
				b.Fatalf("%d versions listed, %v", len(p.Versions), err)
			}
		}
	})
}
