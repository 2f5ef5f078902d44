package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/sqlitestore"
)

// BenchmarkClaim measures a claim of up to 100 items followed by their
// completion, over items spread across tenants. The "loose" variant gives
// every tenant its own limits that never bind (a cap and a rate far above
// what the run reaches, as adkbench's limits row does), so its ratio to
// the "none" variant in the same run is what deciding the limits in the
// claim costs. The "priority" variant sets no limit but gives every item a
// priority (-5 to 5, out of step with the enqueue order, as adkbench's
// lifecycle load does), so its ratio to "none" is what serving by
// priority costs; "lifecycle" adds a snooze (of 0) to every 100th item's
// first run. The rows of one tenant in claims of 10 are adkbench's
// lifecycle load. "retention" sets no limit but keeps the queue's
// finished items for a day with the latest 50 events of each (adkbench's
// history scenario), so its ratio to "none" is what keeping history costs.
// The file runs with DurabilityNormal, so the figure is the claim's work
// rather than the disk's fsync. Besides items/s it reports the process's
// CPU time per item (cpu-µs/item), which a machine shared with other work
// disturbs far less than the wall clock, and the bytes the process wrote
// per item (written-B/item, Linux only), which no other work disturbs.
func BenchmarkClaim(b *testing.B) {
	for _, c := range []struct {
		tenants int
		limits  string
		max     int
	}{
		{1, "none", 100},
		{1000, "none", 100},
		{1000, "loose", 100},
		{1000, "none", 10},
		{1000, "loose", 10},
		{100, "loose", 10},
		{10_000, "loose", 10},
		{21, "none", 10},
		{21, "cap", 10},
		{1000, "priority", 10},
		{21, "priority", 10},
		{1, "none", 10},
		{1, "priority", 10},
		{1, "lifecycle", 10},
		{1000, "retention", 10},
		{1, "retention", 10},
	} {
		b.Run(fmt.Sprintf("tenants=%d/limits=%s/max=%d", c.tenants, c.limits, c.max), func(b *testing.B) {
			benchClaim(b, c.tenants, c.limits, c.max)
		})
	}
}

// benchClaim claims batches from tenants busy tenants. limits "loose"
// gives each of them limits that never bind; "cap" caps the first at 2
// leases and keeps its leases until after the next claim, so the cap
// binds in every claim while the other tenants fill the batches (claims
// of 10, as adkbench's limits-cap row makes them).
func benchClaim(b *testing.B, tenants int, limits string, max int) {
	ctx := context.Background()
	s := sqlitestore.Settings{Durability: sqlitestore.DurabilityNormal}
	q, err := sqlitestore.NewQueue(newFile(b, s), nil, s)
	if err != nil {
		b.Fatal(err)
	}
	if limits == "retention" {
		h, ok := contract.AsHistoryKeeper(q)
		if !ok {
			b.Skip("this build of the queue keeps no history")
		}
		if err := h.SetRetention(ctx, "", contract.Retention{Age: 24 * time.Hour, Events: 50}); err != nil {
			b.Fatal(err)
		}
	}
	if limits != "none" && limits != "priority" && limits != "lifecycle" && limits != "retention" {
		fl, ok := contract.AsFlowController(q)
		if !ok {
			b.Skip("this build of the queue has no flow control")
		}
		l := contract.Limits{MaxLeased: 10_000, Rate: contract.MaxRate, Burst: contract.MaxLimitLeased}
		n := tenants
		if limits == "cap" {
			l, n = contract.Limits{MaxLeased: 2}, 1
		}
		for i := range n {
			if err := fl.SetLimits(ctx, "", fmt.Sprintf("t%04d", i), l); err != nil {
				b.Fatal(err)
			}
		}
	}
	const fill = 10_000
	next := 0
	refill := func() {
		items := make([]contract.Item, 0, fill)
		for range fill {
			it := contract.Item{Tenant: fmt.Sprintf("t%04d", next%tenants), ID: fmt.Sprintf("i%d", next)}
			if limits == "priority" || limits == "lifecycle" {
				it.Priority = next*7%11 - 5
			}
			items = append(items, it)
			next++
		}
		if err := q.Enqueue(ctx, items...); err != nil {
			b.Fatal(err)
		}
	}
	req := contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: max}
	lc, _ := contract.AsLifecycleController(q)
	var kept []contract.Lease // the capped tenant's, completed after the next claim
	claimed := 0
	var cpu time.Duration
	var wrote int64 // bytes the process wrote (the log's pages, mostly)
	b.ResetTimer()
	for b.Loop() {
		start, wstart := cpuTime(b), written()
		ls, err := q.Claim(ctx, req)
		if errors.Is(err, contract.ErrEmpty) {
			b.StopTimer()
			refill()
			b.StartTimer()
			start, wstart = cpuTime(b), written()
			ls, err = q.Claim(ctx, req)
		}
		if err != nil {
			b.Fatal(err)
		}
		done := append([]contract.Lease(nil), kept...)
		kept = kept[:0]
		for _, l := range ls {
			if limits == "lifecycle" && l.Item.Snoozes == 0 && strings.HasSuffix(l.Item.ID, "00") {
				if _, err := lc.Snooze(ctx, l, 0); err != nil {
					b.Fatal(err)
				}
				continue
			}
			if limits == "cap" && l.Item.Tenant == "t0000" {
				kept = append(kept, l)
			} else {
				done = append(done, l)
			}
		}
		if err := q.Complete(ctx, done...); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime(b) - start
		wrote += written() - wstart
		claimed += len(ls)
	}
	b.ReportMetric(float64(claimed)/b.Elapsed().Seconds(), "items/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(claimed), "cpu-µs/item")
	if wrote > 0 {
		b.ReportMetric(float64(wrote)/float64(claimed), "written-B/item")
	}
}

// cpuTime is the CPU time the process has used so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// written is how many bytes the process has written so far (wchar of
// /proc/self/io), 0 where that is not to be read. A claim's and a
// complete's writes are the pages they dirty, copied to the write-ahead
// log at commit, so the figure per item says how many pages a batch
// touches, which the disk pays for and the CPU figure does not show.
func written() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkRunWrites measures PutRun and PatchRun from 10 goroutines at
// once, each writing a run of its own (a 200-byte blob), unfenced, fenced
// (every write carries the lease token, which passes), and unfenced with
// history on (KeepVersions 10, so every write keeps the run as it was
// and, past the tenth, deletes the oldest version). Every patch adds to
// the counters and changes the status, so with history on each patch
// keeps a version too (a counter-only patch keeps none). The ratios of
// fenced and history to unfenced, rows of one run, are what fences and
// versions cost. The file runs with DurabilityNormal, so the figure is
// the writes' work rather than the disk's fsync; cpu-µs/op is the
// process's CPU time per write, which other work on the machine
// disturbs less than ops/s.
func BenchmarkRunWrites(b *testing.B) {
	for _, op := range []string{"put", "patch"} {
		for _, mode := range []string{"unfenced", "fenced", "history"} {
			b.Run(op+"/"+mode, func(b *testing.B) { benchRunWrites(b, op, mode) })
		}
	}
}

func benchRunWrites(b *testing.B, op, mode string) {
	const writers = 10
	ctx := context.Background()
	s := sqlitestore.Settings{Durability: sqlitestore.DurabilityNormal}
	if mode == "history" {
		s.Runs = contract.RunPolicy{KeepVersions: 10}
	}
	st, err := sqlitestore.NewState(newFile(b, s), nil, s)
	if err != nil {
		b.Fatal(err)
	}
	var fence int64
	if mode == "fenced" {
		fence = 42
	}
	data := []byte(`{"step":0,"notes":"` + strings.Repeat("x", 170) + `"}`)
	runs := make([]*contract.Run, writers)
	for i := range runs {
		if runs[i], err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: fmt.Sprintf("r%d", i), Data: data, Fence: fence}); err != nil {
			b.Fatal(err)
		}
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	errs := make(chan error, writers)
	start := cpuTime(b)
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			r := runs[i]
			for n := 0; left.Add(-1) >= 0; n++ {
				var err error
				if op == "put" {
					r, err = st.PutRun(ctx, contract.Run{Tenant: r.Tenant, ID: r.ID, Data: data, Version: r.Version, Fence: fence})
				} else {
					status := "a"
					if n%2 == 1 {
						status = "b"
					}
					r, err = st.PatchRun(ctx, r.Tenant, r.ID, contract.Patch{Counters: contract.Counters{InputTokens: 1, Iterations: 1}, Status: status, Fence: fence})
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
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
}
