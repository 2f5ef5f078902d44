package sqlitestore_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/sqlitestore"
)

func flowQueue(t *testing.T) (*sqlitestore.SQLiteWorkQueue, *contracttest.FakeClock) {
	t.Helper()
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	q, err := sqlitestore.NewQueue(newFile(t, sqlitestore.Settings{}), clock, sqlitestore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if !q.Capabilities().Flow {
		t.Fatal("the queue does not report flow control")
	}
	return q, clock
}

func enqueueN(t *testing.T, q contract.WorkQueue, tenant string, n int) {
	t.Helper()
	items := make([]contract.Item, n)
	for i := range items {
		items[i] = contract.Item{Tenant: tenant, ID: fmt.Sprintf("%s-%d", tenant, i)}
	}
	if err := q.Enqueue(t.Context(), items...); err != nil {
		t.Fatal(err)
	}
}

// Limits are kept in the file: closing and reopening it reads them back.
func TestLimitsSurviveReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "adk.db")
	def := contract.Limits{MaxLeased: 3}
	own := contract.Limits{MaxLeased: 2, Rate: 1.5, Burst: 4, Weight: 3, Budget: contract.Budget{CostMicros: 500, Tokens: 9, Window: 90 * time.Second}}
	for round := range 2 {
		db, err := sqlitestore.OpenDB(path, sqlitestore.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		q, err := sqlitestore.OpenQueue(ctx, db, nil, sqlitestore.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			for tenant, l := range map[string]contract.Limits{"": def, "acme": own, "gone": {MaxLeased: 1}} {
				if err := q.SetLimits(ctx, "jobs", tenant, l); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.SetLimits(ctx, "jobs", "gone", contract.Limits{}); err != nil {
				t.Fatal(err)
			}
		} else {
			ql, err := q.Limits(ctx, "jobs")
			if err != nil {
				t.Fatal(err)
			}
			if ql.Queue != "jobs" || ql.Default != def || len(ql.Tenants) != 1 || ql.Tenants["acme"] != own {
				t.Fatalf("limits after reopening: %+v", ql)
			}
			other, err := q.Limits(ctx, "other")
			if err != nil || other.Tenants == nil || len(other.Tenants) != 0 || !other.Default.IsZero() {
				t.Fatalf("limits of a queue without any: %+v, %v", other, err)
			}
		}
		db.Close()
	}
}

// Ten claimers against a tenant capped at 2 never hold three live leases
// (sampled from the file while they run), and the other tenant's items are
// all served meanwhile.
func TestCapHoldsUnderConcurrentClaimers(t *testing.T) {
	ctx := t.Context()
	q, _ := flowQueue(t)
	if err := q.SetLimits(ctx, "", "capped", contract.Limits{MaxLeased: 2}); err != nil {
		t.Fatal(err)
	}
	const each = 20
	enqueueN(t, q, "capped", each)
	enqueueN(t, q, "free", each)
	var done, peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			st, err := q.FlowStatus(ctx, "")
			if err != nil {
				t.Error(err)
				return
			}
			for _, f := range st {
				if f.Tenant == "capped" && int64(f.Leased) > peak.Load() {
					peak.Store(int64(f.Leased))
				}
			}
		}
	})
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Go(func() {
			for done.Load() < 2*each {
				ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: fmt.Sprint("w", w), LeaseFor: time.Minute, Max: 3})
				if errors.Is(err, contract.ErrEmpty) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if err := q.Complete(ctx, ls...); err != nil {
					t.Error(err)
					return
				}
				done.Add(int64(len(ls)))
			}
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	if p := peak.Load(); p > 2 || p == 0 {
		t.Fatalf("the capped tenant was seen with %d live leases, cap 2", p)
	}
	if done.Load() != 2*each {
		t.Fatalf("%d of %d items served", done.Load(), 2*each)
	}
}

// The claim fills the caller's report with each held tenant, once, why,
// and the earliest moment a rate or budget hold ends; a lease that
// expires stops counting against the cap before it is reaped.
func TestClaimReport(t *testing.T) {
	ctx := t.Context()
	q, clock := flowQueue(t)
	for tenant, l := range map[string]contract.Limits{
		"cap":    {MaxLeased: 1},
		"rate":   {Rate: 2, Burst: 1},
		"budget": {Budget: contract.Budget{CostMicros: 100, Window: 10 * time.Second}},
	} {
		if err := q.SetLimits(ctx, "", tenant, l); err != nil {
			t.Fatal(err)
		}
		enqueueN(t, q, tenant, 5)
	}
	enqueueN(t, q, "free", 5)
	if err := q.Charge(ctx, "", "budget", contract.Usage{CostMicros: 100}); err != nil {
		t.Fatal(err)
	}
	req := contract.ClaimRequest{Worker: "w", LeaseFor: time.Second, Max: 10}
	var r contract.ClaimReport
	ls, err := q.Claim(contract.WithClaimReport(ctx, &r), req)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, l := range ls {
		count[l.Item.Tenant]++
	}
	if count["cap"] != 1 || count["rate"] != 1 || count["budget"] != 0 || count["free"] != 5 {
		t.Fatalf("served %v, want cap 1, rate 1, budget 0, free 5", count)
	}
	now := clock.Now()
	want := now.Add(500 * time.Millisecond) // the rate's next token
	if r.PassedOver != 3 || r.Held[contract.HeldCap] != 1 || r.Held[contract.HeldRate] != 1 || r.Held[contract.HeldBudget] != 1 || !r.RetryAt.Equal(want) {
		t.Fatalf("report %+v, want cap, rate and budget once each, retry at %v", r, want)
	}
	st, err := q.FlowStatus(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]contract.TenantFlow{}
	for _, f := range st {
		held[f.Tenant] = f
	}
	// The budget's charge is in slot s; slots s-10..s count it, so it
	// leaves the window at the start of slot s+11.
	slot := int64(time.Second / time.Millisecond)
	release := time.UnixMilli((now.UnixMilli()/slot + 11) * slot).UTC()
	if held["cap"].Held != contract.HeldCap || held["cap"].Leased != 1 || held["rate"].Held != contract.HeldRate ||
		held["budget"].Held != contract.HeldBudget || !held["budget"].Until.Equal(release) || held["budget"].BudgetUsed.CostMicros != 100 ||
		held["free"].Held != contract.HeldNone || len(st) != 4 {
		t.Fatalf("flow status %+v", st)
	}
	// A second later: the leases have expired (unreaped), the rate has a
	// token; the budget still holds until its release.
	clock.Advance(time.Second)
	r = contract.ClaimReport{}
	ls, err = q.Claim(contract.WithClaimReport(ctx, &r), req)
	if err != nil {
		t.Fatal(err)
	}
	count = map[string]int{}
	for _, l := range ls {
		count[l.Item.Tenant]++
	}
	if count["cap"] != 1 || count["rate"] != 1 || count["budget"] != 0 {
		t.Fatalf("served %v a second later, want cap 1 (its lease expired), rate 1, budget 0", count)
	}
	if r.Held[contract.HeldBudget] != 1 || !r.RetryAt.Equal(clock.Now().Add(500*time.Millisecond)) {
		t.Fatalf("report a second later: %+v", r)
	}
	clock.Set(release.Add(-time.Millisecond))
	if f := flowOf(t, q, "budget"); f.Held != contract.HeldBudget {
		t.Fatalf("budget a millisecond before its release: %+v", f)
	}
	r = contract.ClaimReport{}
	if _, err := q.Claim(contract.WithClaimReport(ctx, &r), req); err != nil && !errors.Is(err, contract.ErrEmpty) {
		t.Fatal(err)
	}
	if r.Held[contract.HeldBudget] != 1 || !r.RetryAt.Equal(release) {
		t.Fatalf("a claim a millisecond before the budget's release: report %+v, want it held until %v", r, release)
	}
	clock.Set(release)
	if f := flowOf(t, q, "budget"); f.Held != contract.HeldNone || f.BudgetUsed.CostMicros != 0 {
		t.Fatalf("budget at its release: %+v", f)
	}
	ls, err = q.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	count = map[string]int{}
	for _, l := range ls {
		count[l.Item.Tenant]++
	}
	if count["budget"] == 0 {
		t.Fatalf("served %v at the budget's release, want the budget tenant among them", count)
	}
}

func flowOf(t *testing.T, q *sqlitestore.SQLiteWorkQueue, tenant string) contract.TenantFlow {
	t.Helper()
	st, err := q.FlowStatus(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range st {
		if f.Tenant == tenant {
			return f
		}
	}
	t.Fatalf("no flow status for %s in %+v", tenant, st)
	return contract.TenantFlow{}
}

// A lease of a capped tenant that ends wakes the queue's claimers, and so
// does SetLimits.
func TestFlowWakes(t *testing.T) {
	ctx := t.Context()
	q, _ := flowQueue(t)
	if err := q.SetLimits(ctx, "", "", contract.Limits{MaxLeased: 1}); err != nil {
		t.Fatal(err)
	}
	enqueueN(t, q, "acme", 3)
	ch, stop := q.Subscribe("")
	defer stop()
	drain := func() {
		select {
		case <-ch:
		default:
		}
	}
	woken := func(what string) {
		t.Helper()
		select {
		case <-ch:
		default:
			t.Fatalf("%s did not wake the claimers", what)
		}
	}
	req := contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 5}
	ls, err := q.Claim(ctx, req)
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim under a cap of 1: %d leases, %v", len(ls), err)
	}
	drain()
	if err := q.Complete(ctx, ls[0]); err != nil {
		t.Fatal(err)
	}
	woken("completing a capped tenant's lease")
	if ls, err = q.Claim(ctx, req); err != nil {
		t.Fatal(err)
	}
	drain()
	if _, err := q.Fail(ctx, ls[0], errors.New("x")); err != nil {
		t.Fatal(err)
	}
	woken("failing a capped tenant's lease")
	drain()
	if err := q.SetLimits(ctx, "", "", contract.Limits{}); err != nil {
		t.Fatal(err)
	}
	woken("SetLimits")
}

// A claim counts a capped tenant's live leases in the read of the rotation
// that first returns it, which may come after reads that returned only
// tenants it passed over: the leases of earlier claims still count there,
// and so do those the claim hands out before the next read returns the
// tenant again.
func TestCapCountedInALaterReadOfTheRotation(t *testing.T) {
	ctx := t.Context()
	q, _ := flowQueue(t)
	paused := []string{"p1", "p2", "p3", "p4", "p5", "p6"}
	for _, p := range paused {
		enqueueN(t, q, p, 1)
	}
	enqueueN(t, q, "capped", 5)
	enqueueN(t, q, "free", 5)
	if err := q.SetLimits(ctx, "", "capped", contract.Limits{MaxLeased: 2}); err != nil {
		t.Fatal(err)
	}
	for _, p := range paused {
		if err := q.Pause(ctx, "", p); err != nil {
			t.Fatal(err)
		}
	}
	// The first claim passes the six paused tenants over (two reads of
	// three rows) and leases one item of the capped tenant, which goes to
	// the back, behind the paused ones again.
	req := contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1}
	ls, err := q.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Item.Tenant != "capped" {
		t.Fatalf("first claim served %+v, want one item of capped", ls)
	}
	// The second claim's first read (five rows) returns paused tenants
	// only; the capped tenant comes up in a later read with one live
	// lease, is served once more and is then held at its cap.
	req.Max = 4
	var r contract.ClaimReport
	ls, err = q.Claim(contract.WithClaimReport(ctx, &r), req)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, l := range ls {
		count[l.Item.Tenant]++
	}
	if count["capped"] != 1 || count["free"] != 3 {
		t.Fatalf("second claim served %v, want capped 1, free 3", count)
	}
	if r.Held[contract.HeldCap] != 1 || r.Held[contract.HeldPaused] != len(paused) {
		t.Fatalf("report %+v, want capped held for its cap and the paused tenants passed over", r)
	}
	st, err := q.FlowStatus(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range st {
		if f.Tenant == "capped" && (f.Leased != 2 || f.Held != contract.HeldCap) {
			t.Fatalf("capped tenant's flow %+v, want 2 live leases, held for its cap", f)
		}
	}
}

// A claim that reads the rotation past its first page, because the
// tenants at its front are held at their caps, counts the live leases of
// the tenants it reads from then on in one pass: the counts must be the
// same as the per-tenant ones. Fifteen tenants at their cap of 2 fill the
// first page; five behind them hold one lease each, so each gets one
// more and no held tenant gets any.
func TestCapCountsPastTheFirstPage(t *testing.T) {
	ctx := t.Context()
	q, _ := flowQueue(t)
	names := make([]string, 20)
	for i := range names {
		names[i] = fmt.Sprintf("t%02d", i)
		enqueueN(t, q, names[i], 4)
	}
	leases, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Hour, Max: 40})
	if err != nil || len(leases) != 40 {
		t.Fatalf("two leases of each tenant: %d, %v", len(leases), err)
	}
	var done []contract.Lease
	ended := map[string]bool{}
	for _, l := range leases {
		if l.Item.Tenant >= "t15" && !ended[l.Item.Tenant] {
			done = append(done, l)
			ended[l.Item.Tenant] = true
		}
	}
	if err := q.Complete(ctx, done...); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if err := q.SetLimits(ctx, "", name, contract.Limits{MaxLeased: 2}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Hour, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]int{}
	for _, l := range got {
		served[l.Item.Tenant]++
	}
	if len(got) != 5 || len(served) != 5 {
		t.Fatalf("claim behind 15 tenants at their caps served %v; want one item of each of t15 to t19", served)
	}
	for tenant, n := range served {
		if !ended[tenant] || n != 1 {
			t.Fatalf("claim behind 15 tenants at their caps served %v; want one item of each of t15 to t19", served)
		}
	}
}
