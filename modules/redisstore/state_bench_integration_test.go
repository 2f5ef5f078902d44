//go:build integration

package redisstore_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
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
			if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") && !strings.HasPrefix(line, "cmdstat_fcall:") {
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

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// stateVariant is one way of writing runs that BenchmarkStateFencesVersions
// compares with the others.
type stateVariant struct {
	name   string
	fenced bool // every write carries its worker's fence
	keep   int  // Settings.Runs.KeepVersions
}

var stateVariants = []stateVariant{
	{"plain", false, 0},
	{"fenced", true, 0},
	{"keep10", false, 10},
	{"fenced+keep10", true, 10},
}

// BenchmarkStateFencesVersions compares what fences and versions cost the
// state writes, 10 workers each writing a run of its own (a 1 KiB blob)
// on a private server: plain writes, fenced ones, writes keeping 10
// versions, and both. The variants take turns within one run (each
// iteration is one round: every variant does 20 writes per worker, in an
// order that rotates from round to round), so a loaded machine slows them
// alike; the ratios to plain (rate over plain's, the median of the
// rounds) are the figures to read. ops/s is the wall rate of a variant's
// share of all rounds, server-µs/op the scripts' own time (commandstats). PatchRun adds to the
// counters only (it keeps no version); PatchStatus changes the status on
// every call (each keeps one).
func BenchmarkStateFencesVersions(b *testing.B) {
	srv := redistest.StartServer(b)
	client := srv.Client(b, &redis.Options{PoolSize: 20})
	ctx := context.Background()
	const workers, perRound = 10, 20
	data := []byte(`{"messages":[` + strings.Repeat(`{"role":"user","content":"hello there"},`, 24) + `{"role":"user","content":"hi"}]}`)
	for _, op := range []string{"PutRun", "PatchRun", "PatchStatus"} {
		b.Run(op, func(b *testing.B) {
			stores := make([]*redisstore.RedisStateStore, len(stateVariants))
			versions := make([][workers]int64, len(stateVariants))
			for vi, v := range stateVariants {
				st, err := redisstore.NewState(client, nil, redisstore.Settings{Namespace: redistest.Namespace(b, client), Volatile: true,
					Runs: contract.RunPolicy{KeepVersions: v.keep}})
				if err != nil {
					b.Fatal(err)
				}
				stores[vi] = st
				for w := range workers {
					r, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r" + strconv.Itoa(w), Data: data})
					if err != nil {
						b.Fatal(err)
					}
					versions[vi][w] = r.Version
				}
			}
			write := func(vi, w, i int) error {
				st, v := stores[vi], stateVariants[vi]
				fence := int64(0)
				if v.fenced {
					fence = int64(1000 + w)
				}
				id := "r" + strconv.Itoa(w)
				var r *contract.Run
				var err error
				switch op {
				case "PutRun":
					r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: id, Version: versions[vi][w], Data: data, Fence: fence})
				case "PatchRun":
					r, err = st.PatchRun(ctx, "acme", id, contract.Patch{Counters: contract.Counters{InputTokens: 120, OutputTokens: 40, Iterations: 1}, Fence: fence})
				default:
					r, err = st.PatchRun(ctx, "acme", id, contract.Patch{Counters: contract.Counters{Iterations: 1}, Status: "step " + strconv.Itoa(i), Fence: fence})
				}
				if err == nil {
					versions[vi][w] = r.Version
				}
				return err
			}
			elapsed := make([]time.Duration, len(stateVariants))
			server := make([]int64, len(stateVariants))
			// ratios[vi] holds, per round, plain's time over the variant's:
			// their median is the figure least moved by a burst of load.
			ratios := make([][]float64, len(stateVariants))
			took := make([]time.Duration, len(stateVariants))
			// Round -1 is a warm-up (the scripts loaded, the pool filled,
			// ten versions kept): not counted.
			b.ResetTimer()
			for round := -1; round < b.N; round++ {
				for k := range stateVariants {
					vi := (round + 1 + k) % len(stateVariants)
					began, start := scriptTime(b, client), time.Now()
					var wg sync.WaitGroup
					for w := range workers {
						wg.Go(func() {
							for i := range perRound {
								if err := write(vi, w, (round+1)*perRound+i); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
					took[vi] = time.Since(start)
					if round >= 0 {
						elapsed[vi] += took[vi]
						server[vi] += scriptTime(b, client) - began
					}
				}
				if round >= 0 {
					for vi := range stateVariants {
						ratios[vi] = append(ratios[vi], took[0].Seconds()/took[vi].Seconds())
					}
				}
			}
			b.StopTimer()
			ops := float64(b.N * workers * perRound)
			rate := func(vi int) float64 { return ops / elapsed[vi].Seconds() }
			for vi, v := range stateVariants {
				b.ReportMetric(rate(vi), v.name+"-ops/s")
				b.ReportMetric(float64(server[vi])/ops, v.name+"-server-µs/op")
			}
			b.ReportMetric(median(ratios[1]), "fenced/plain")
			b.ReportMetric(median(ratios[2]), "keep10/plain")
			b.ReportMetric(median(ratios[3]), "both/plain")
		})
	}
}
