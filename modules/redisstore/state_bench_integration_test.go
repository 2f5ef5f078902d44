//go:build integration

package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// BenchmarkStateWrites measures one client's state calls against the
// shared server, one at a time: GetRun is the baseline the writes compare
// with (a read script of the same run), PatchRun and PutRun each write
// and record their replay outcome, CreateDelete creates a run and deletes
// it. Each write sub-benchmark also reports the memory the server holds
// per call afterwards, beyond the run itself (the replay records, for as
// long as the replay window keeps them), and the server's own time per
// call (commandstats: stable where a loaded machine makes round trips
// swing; run it against a server of its own, ADK_TEST_REDIS_URL, so no
// other client's scripts count).
func BenchmarkStateWrites(b *testing.B) {
	ctx := context.Background()
	client := redistest.Client(b)
	ns := redistest.Namespace(b, client)
	st, err := redisstore.NewState(client, nil, redisstore.Settings{Namespace: ns})
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(`{"messages":[{"role":"user","content":"hello"}],"step":1}`)
	r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Session: "s", Data: data})
	if err != nil {
		b.Fatal(err)
	}
	memory := func(b *testing.B) int64 {
		b.Helper()
		keys, err := client.Keys(ctx, ns+":state:*").Result()
		if err != nil {
			b.Fatal(err)
		}
		var total int64
		for _, k := range keys {
			n, err := client.MemoryUsage(ctx, k).Result()
			if err != nil {
				b.Fatal(err)
			}
			total += n
		}
		return total
	}
	// scriptTime is the server's total time in scripts so far (µs).
	scriptTime := func(b *testing.B) float64 {
		b.Helper()
		info, err := client.Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		var usec float64
		for line := range strings.Lines(info) {
			if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
				continue
			}
			for _, f := range strings.Split(strings.TrimSpace(line[strings.IndexByte(line, ':')+1:]), ",") {
				if v, ok := strings.CutPrefix(f, "usec="); ok {
					n, _ := strconv.ParseFloat(v, 64)
					usec += n
				}
			}
		}
		return usec
	}
	perCall := func(b *testing.B, write func(i int)) {
		before, began := memory(b), scriptTime(b)
		b.ResetTimer()
		for i := range b.N {
			write(i)
		}
		b.StopTimer()
		b.ReportMetric((scriptTime(b)-began)/float64(b.N), "server-us/op")
		b.ReportMetric(float64(memory(b)-before)/float64(b.N), "server-B/op")
	}
	b.Run("GetRun", func(b *testing.B) {
		began := scriptTime(b)
		for range b.N {
			if _, err := st.GetRun(ctx, "acme", "r"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((scriptTime(b)-began)/float64(b.N), "server-us/op")
	})
	b.Run("PatchRun", func(b *testing.B) {
		perCall(b, func(int) {
			if r, err = st.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{InputTokens: 120, OutputTokens: 40, Iterations: 1}}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("PutRun", func(b *testing.B) {
		perCall(b, func(int) {
			if r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Session: "s", Version: r.Version, Data: data}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("CreateDelete", func(b *testing.B) {
		perCall(b, func(int) {
			if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "tmp", Session: "s", Data: data}); err != nil {
				b.Fatal(err)
			}
			if err := st.DeleteRun(ctx, "acme", "tmp"); err != nil {
				b.Fatal(err)
			}
		})
	})
}
