//go:build integration

package pgstore_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// BenchmarkClaimDeadEntries measures what the claim index's entries of
// items already claimed cost the claims that come after them. One client
// drains 20,000 items of one tenant by claims of 10 and their Complete;
// a claimed item's entry stays in the index until vacuum, and each claim
// starts at the front of the tenant's items, so it reads the pages of
// every item claimed since the last vacuum (the README's Vacuum section).
// The "vacuumed" rows run VACUUM on the work table every 100 claims
// (untimed), which removes them; compare each with its "unvacuumed" row
// in the same run. The priority rows give every item a priority from -5
// to 5, out of step with the enqueue order: each of the claim's ranges
// then gathers entries of its own. It reports the buffers a claim reads
// (shared hits and reads, as auto_explain's ANALYZE counts them: the
// same from run to run, where the claim's time on this machine is mostly
// its commit's). On a server whose autovacuum runs, the unvacuumed rows
// depend on when it does; the shared test server has it off.
func BenchmarkClaimDeadEntries(b *testing.B) {
	for _, priorities := range []bool{false, true} {
		for _, vacuumed := range []bool{false, true} {
			name := "plain"
			if priorities {
				name = "priorities"
			}
			if vacuumed {
				name += "/vacuumed"
			} else {
				name += "/unvacuumed"
			}
			b.Run(name, func(b *testing.B) { benchClaimDeadEntries(b, priorities, vacuumed) })
		}
	}
}

func benchClaimDeadEntries(b *testing.B, priorities, vacuumed bool) {
	const n, batch, vacuumEvery = 20_000, 10, 100
	d := newTestDB(b, withMaxConns(2))
	ctx := context.Background()
	conn, q := newExplainedQueue(b, ctx, d, nil)
	items := make([]contract.Item, n)
	for i := range items {
		items[i] = contract.Item{Tenant: "t", ID: strconv.Itoa(i), Payload: []byte(`{}`)}
		if priorities {
			items[i].Priority = i*7%11 - 5
		}
	}
	hits := regexp.MustCompile(`Buffers: shared hit=(\d+)(?: read=(\d+))?`)
	var buffers, claims int
	for b.Loop() {
		b.StopTimer()
		if _, err := d.pool.Exec(ctx, "DELETE FROM adk_work"); err != nil {
			b.Fatal(err)
		}
		if _, err := d.pool.Exec(ctx, "VACUUM adk_work"); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i += 1000 {
			if err := q.Enqueue(ctx, items[i:i+1000]...); err != nil {
				b.Fatal(err)
			}
		}
		conn.explain(b, ctx, true)
		if _, err := conn.Exec(ctx, "SET auto_explain.log_buffers = on"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for left := n; left > 0; {
			ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: batch})
			if err != nil {
				b.Fatalf("claim with %d items left: %v", left, err)
			}
			m := hits.FindStringSubmatch(conn.plan(b, "WITH RECURSIVE"))
			if m == nil {
				b.Fatal("the claim's plan has no buffer counts")
			}
			for _, v := range m[1:] {
				if v != "" {
					k, _ := strconv.Atoi(v)
					buffers += k
				}
			}
			if err := q.Complete(ctx, ls...); err != nil {
				b.Fatal(err)
			}
			claims++
			left -= len(ls)
			if vacuumed && claims%vacuumEvery == 0 {
				b.StopTimer()
				if _, err := d.pool.Exec(ctx, "VACUUM adk_work"); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		}
		if _, err := conn.Exec(ctx, "SET auto_explain.log_min_duration = -1"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buffers)/float64(claims), "buffers/claim")
}
