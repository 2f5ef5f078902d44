package contracttest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// queueFlowCases pin flow control in the claim: caps, rates, weights and
// budgets, each holding a tenant back without blocking the others, keeping
// its place, and letting it go when a lease ends, a token accrues or the
// window slides.
func queueFlowCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"SetAndRead", testFlowSetAndRead},
		{"BadLimitsChangeNothing", testFlowBadInput},
		{"CapHolds", testFlowCapHolds},
		{"CapUnderConcurrency", testFlowCapConcurrent},
		{"CapFreesAtExpiry", testFlowCapExpiry},
		{"CapFreesOnSettle", testFlowCapSettle},
		{"DefaultApplies", testFlowDefault},
		{"Rate", testFlowRate},
		{"Weights", testFlowWeights},
		{"Budget", testFlowBudget},
		{"BudgetCountsItsOwnWindow", testFlowBudgetOwnWindow},
		{"HeldKeepsPlace", testFlowKeepsPlace},
		{"ManyHeldAhead", testFlowManyHeld},
	}
}

// flowOf returns q's FlowController; every backing must have one.
func flowOf(t *testing.T, q contract.WorkQueue) contract.FlowController {
	t.Helper()
	fc, ok := contract.AsFlowController(q)
	if !ok {
		t.Fatalf("%T does not enforce limits (contract.FlowController, Capabilities().Flow): every backing must", q)
	}
	return fc
}

func setLimits(t *testing.T, fc contract.FlowController, tenant string, l contract.Limits) {
	t.Helper()
	mustNoErr(t, fc.SetLimits(t.Context(), contract.DefaultQueue, tenant, l), "SetLimits(%q, %+v)", tenant, l)
}

// flowOfTenant returns tenant's line of FlowStatus.
func flowOfTenant(t *testing.T, fc contract.FlowController, tenant string) contract.TenantFlow {
	t.Helper()
	st, err := fc.FlowStatus(t.Context(), contract.DefaultQueue)
	mustNoErr(t, err, "FlowStatus")
	for _, tf := range st {
		if tf.Tenant == tenant {
			return tf
		}
	}
	t.Fatalf("FlowStatus has no line for tenant %q: %+v", tenant, st)
	return contract.TenantFlow{}
}

// countTenants counts the leases by tenant.
func countTenants(ls []contract.Lease) map[string]int {
	out := map[string]int{}
	for _, l := range ls {
		out[l.Item.Tenant]++
	}
	return out
}

// claimReported claims with a report in the context.
func claimReported(t *testing.T, q contract.WorkQueue, max int) ([]contract.Lease, *contract.ClaimReport, error) {
	t.Helper()
	r := &contract.ClaimReport{}
	ls, err := q.Claim(contract.WithClaimReport(t.Context(), r), claimReq("w", max))
	if err != nil && !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("Claim(Max %d): %v", max, err)
	}
	return ls, r, err
}

func testFlowSetAndRead(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	fc := flowOf(t, q)
	ql, err := fc.Limits(t.Context(), "")
	mustNoErr(t, err, "Limits of a queue without any")
	if !ql.Default.IsZero() || len(ql.Tenants) != 0 || ql.Tenants == nil || ql.Queue != contract.DefaultQueue {
		t.Fatalf("Limits of a queue without any = %+v, want the default queue's name, zero Default and an empty map", ql)
	}
	def := contract.Limits{MaxLeased: 5, Rate: 2.5, Burst: 4}
	acme := contract.Limits{MaxLeased: 2, Weight: 3, Budget: contract.Budget{CostMicros: 1_000_000, Tokens: 5000, Window: time.Hour}}
	setLimits(t, fc, "", def)
	setLimits(t, fc, "acme", acme)
	setLimits(t, fc, "globex", contract.Limits{Weight: 2})
	ql, err = fc.Limits(t.Context(), contract.DefaultQueue)
	mustNoErr(t, err, "Limits")
	if ql.Default != def || len(ql.Tenants) != 2 || ql.Tenants["acme"] != acme || ql.Tenants["globex"].Weight != 2 {
		t.Fatalf("Limits = %+v, want default %+v, acme %+v and globex weight 2", ql, def, acme)
	}
	if other, err := fc.Limits(t.Context(), "other"); err != nil || !other.Default.IsZero() || len(other.Tenants) != 0 {
		t.Fatalf("Limits of another queue = %+v, %v: limits leaked across queues", other, err)
	}
	// The zero Limits removes a tenant's own, then the default.
	setLimits(t, fc, "globex", contract.Limits{})
	setLimits(t, fc, "", contract.Limits{})
	ql, err = fc.Limits(t.Context(), contract.DefaultQueue)
	mustNoErr(t, err, "Limits after removals")
	if !ql.Default.IsZero() || len(ql.Tenants) != 1 || ql.Tenants["acme"] != acme {
		t.Fatalf("Limits after removing globex and the default = %+v, want only acme", ql)
	}
	if l, own := ql.For("initech"); own || !l.IsZero() {
		t.Fatalf("QueueLimits.For of a tenant without limits = %+v, own %v", l, own)
	}
}

func testFlowBadInput(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	fc := flowOf(t, q)
	good := contract.Limits{MaxLeased: 3}
	setLimits(t, fc, "acme", good)
	bad := []struct {
		field string
		l     contract.Limits
	}{
		{"Limits.MaxLeased", contract.Limits{MaxLeased: -1}},
		{"Limits.MaxLeased", contract.Limits{MaxLeased: contract.MaxLimitLeased + 1}},
		{"Limits.Rate", contract.Limits{Rate: -0.5}},
		{"Limits.Rate", contract.Limits{Rate: nan()}},
		{"Limits.Rate", contract.Limits{Rate: inf()}},
		{"Limits.Rate", contract.Limits{Rate: contract.MaxRate * 2}},
		{"Limits.Burst", contract.Limits{Burst: 5}},
		{"Limits.Burst", contract.Limits{Rate: 1, Burst: -2}},
		{"Limits.Weight", contract.Limits{Weight: -1}},
		{"Limits.Weight", contract.Limits{Weight: contract.MaxWeight + 1}},
		{"Limits.Budget.CostMicros", contract.Limits{Budget: contract.Budget{CostMicros: -1, Window: time.Hour}}},
		{"Limits.Budget.Tokens", contract.Limits{Budget: contract.Budget{Tokens: -1, Window: time.Hour}}},
		{"Limits.Budget.Window", contract.Limits{Budget: contract.Budget{CostMicros: 1}}},
		{"Limits.Budget.Window", contract.Limits{Budget: contract.Budget{CostMicros: 1, Window: -time.Hour}}},
		{"Limits.Budget.Window", contract.Limits{Budget: contract.Budget{CostMicros: 1, Window: time.Millisecond}}},
		{"Limits.Budget.Window", contract.Limits{Budget: contract.Budget{Window: time.Hour}}},
	}
	for _, c := range bad {
		err := fc.SetLimits(t.Context(), contract.DefaultQueue, "acme", c.l)
		var ve *contract.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("SetLimits(%+v) = %v, want a *ValidationError naming %s", c.l, err, c.field)
		}
	}
	wantInvalid(t, fc.SetLimits(t.Context(), contract.DefaultQueue, "a\x00b", good), "SetLimits for a tenant with a NUL byte")
	wantInvalid(t, fc.Charge(t.Context(), contract.DefaultQueue, "acme", contract.Usage{CostMicros: -1}), "Charge of a negative cost")
	wantInvalid(t, fc.Charge(t.Context(), contract.DefaultQueue, "acme", contract.Usage{Tokens: -1}), "Charge of negative tokens")
	wantInvalid(t, fc.Charge(t.Context(), contract.DefaultQueue, "", contract.Usage{Tokens: 1}), "Charge without a tenant")
	ql, err := fc.Limits(t.Context(), contract.DefaultQueue)
	mustNoErr(t, err, "Limits after refused calls")
	if ql.Tenants["acme"] != good || len(ql.Tenants) != 1 || !ql.Default.IsZero() {
		t.Fatalf("refused SetLimits changed the limits: %+v, want only acme %+v", ql, good)
	}
}

// testFlowCapHolds: a capped tenant gets at most its cap in one claim, the
// batch fills from the others, and the report names the cap.
func testFlowCapHolds(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	fc := flowOf(t, q)
	setLimits(t, fc, "acme", contract.Limits{MaxLeased: 2})
	enqueue(t, q, items("acme", "a", 10)...)
	enqueue(t, q, items("globex", "g", 10)...)
	ls, _, err := claimReported(t, q, 8)
	mustNoErr(t, err, "the first claim")
	if n := countTenants(ls); n["acme"] != 2 || n["globex"] != 6 {
		t.Fatalf("a claim of 8 served %v, want acme 2 (its cap) and globex 6", n)
	}
	ls, r, err := claimReported(t, q, 8)
	mustNoErr(t, err, "the second claim")
	if n := countTenants(ls); n["acme"] != 0 || n["globex"] != 4 {
		t.Fatalf("a claim with acme at its cap served %v, want globex's 4 only", n)
	}
	if r.PassedOver != 1 || r.Held[contract.HeldCap] != 1 {
		t.Fatalf("the claim's report = %+v, want acme passed over once, for its cap", r)
	}
	if _, r, err := claimReported(t, q, 8); !errors.Is(err, contract.ErrEmpty) || r.Held[contract.HeldCap] != 1 || !r.RetryAt.IsZero() {
		t.Fatalf("a claim with only acme's held work = %v, report %+v; want ErrEmpty, acme held by its cap and no RetryAt", err, r)
	}
	tf := flowOfTenant(t, fc, "acme")
	if tf.Held != contract.HeldCap || tf.Leased != 2 || !tf.Own || tf.Limits.MaxLeased != 2 {
		t.Fatalf("FlowStatus of acme = %+v, want held by its cap with 2 leases of its own limits", tf)
	}
	if g := flowOfTenant(t, fc, "globex"); g.Held != contract.HeldNone || g.Own || g.Leased != 10 {
		t.Fatalf("FlowStatus of globex = %+v, want not held, no limits of its own, 10 leases", g)
	}
}

// testFlowCapConcurrent: ten claimers against a tenant capped at 2 never
// hold three of its leases at once.
func testFlowCapConcurrent(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	fc := flowOf(t, q)
	setLimits(t, fc, "acme", contract.Limits{MaxLeased: 2})
	const perTenant = 40
	enqueue(t, q, items("acme", "a", perTenant)...)
	enqueue(t, q, items("globex", "g", perTenant)...)
	// held counts acme's leases a claimer holds: raised after the claim
	// returns them and lowered before they are completed, so it never
	// exceeds what the queue has leased.
	var held, peak, done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for w := range 10 {
		wg.Go(func() {
			for range 400 {
				if done.Load() == 2*perTenant {
					return
				}
				ls, err := q.Claim(t.Context(), claimReq(fmt.Sprintf("w%d", w), 3))
				if errors.Is(err, contract.ErrEmpty) {
					runtime.Gosched()
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				a := int64(countTenants(ls)["acme"])
				if h := held.Add(a); h > peak.Load() {
					peak.Store(h) // racy max, but a value above 2 is only ever stored if seen
				}
				for range 3 {
					runtime.Gosched()
				}
				held.Add(-a)
				if err := q.Complete(t.Context(), ls...); err != nil {
					errs <- err
					return
				}
				done.Add(int64(len(ls)))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a claimer failed: %v", err)
	}
	if p := peak.Load(); p > 2 {
		t.Fatalf("claimers held %d of acme's leases at once; its cap is 2", p)
	}
	if d := done.Load(); d != 2*perTenant {
		t.Fatalf("the claimers completed %d items, want all %d", d, 2*perTenant)
	}
}

// testFlowCapExpiry: an expired lease stops counting against the cap at
// its expiry, before any reap.
func testFlowCapExpiry(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	fc := flowOf(t, q)
	setLimits(t, fc, "acme", contract.Limits{MaxLeased: 2})
	enqueue(t, q, items("acme", "a", 6)...)
	short := contract.ClaimRequest{Worker: "w", LeaseFor: 10 * time.Second, Max: 5}
	ls, err := q.Claim(t.Context(), short)
	mustNoErr(t, err, "the first claim")
	if len(ls) != 2 {
		t.Fatalf("the first claim got %d leases, want 2 (the cap)", len(ls))
	}
	clock.Advance(9 * time.Second)
	wantEmpty(t, q, "", "a claim before the leases expire")
	clock.Advance(time.Second + time.Millisecond)
	ls, err = q.Claim(t.Context(), short)
	mustNoErr(t, err, "a claim once the leases expired, unreaped")
	if len(ls) != 2 {
		t.Fatalf("a claim after the leases expired got %d leases, want 2: expired leases still count against the cap", len(ls))
	}
	if tf := flowOfTenant(t, fc, "acme"); tf.Leased != 2 || tf.Held != contract.HeldCap {
		t.Fatalf("FlowStatus after the second claim = %+v, want 2 live leases and held by the cap", tf)
	}
}

// testFlowCapSettle: completing a capped tenant's lease frees its slot at
// once and wakes the queue's claimers.
func testFlowCapSettle(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	fc := flowOf(t, q)
	setLimits(t, fc, "acme", contract.Limits{MaxLeased: 1})
	enqueue(t, q, items("acme", "a", 3)...)
	first := claimOne(t, q, "w")
	wantEmpty(t, q, "", "a claim with acme at its cap")
	var ch <-chan struct{}
	if w := wakerOf(t, q); w != nil {
		c, stop := w.Subscribe(contract.DefaultQueue)
		defer stop()
		drainWakes(c)
		ch = c
	}
	mustNoErr(t, q.Complete(t.Context(), first), "Complete of acme's lease")
	if ch != nil {
		select {
		case <-ch:
		case <-time.After(wakeWait):
			t.Fatalf("no wake within %v of a capped tenant's lease ending", wakeWait)
		}
	}
	second := claimOne(t, q, "w")
	if second.Item.Tenant != "acme" {
		t.Fatalf("claimed %v after the Complete, want acme's next item", second.Key())
	}
	// A Fail frees the slot too.
	_, err := q.Fail(t.Context(), second, errors.New("model timeout"))
	mustNoErr(t, err, "Fail of acme's lease")
	if third := claimOne(t, q, "w"); third.Item.Tenant != "acme" {
		t.Fatalf("claimed %v after the Fail, want acme's next item", third.Key())
	}
}

// testFlowDefault: the queue's default applies to tenants without limits
// of their own; a tenant's own replace it.
func testFlowDefault(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	fc := flowOf(t, q)
	setLimits(t, fc, "", contract.Limits{MaxLeased: 1})
	setLimits(t, fc, "initech", contract.Limits{MaxLeased: 3})
	for _, tn := range []string{"acme", "globex", "initech"} {
		enqueue(t, q, items(tn, tn[:1], 5)...)
	}
	ls, err := q.Claim(t.Context(), claimReq("w", 20))
	mustNoErr(t, err, "Claim")
	if n := countTenants(ls); n["acme"] != 1 || n["globex"] != 1 || n["initech"] != 3 {
		t.Fatalf("a claim of 20 served %v, want acme 1 and globex 1 (the default cap) and initech 3 (its own)", n)
	}
	if tf := flowOfTenant(t, fc, "acme"); tf.Own || tf.Limits.MaxLeased != 1 || tf.Held != contract.HeldCap {
		t.Fatalf("FlowStatus of acme = %+v, want the default's cap of 1, holding it", tf)
	}
}

// testFlowRate: a rate of R per second serves R×60 items, give or take
// the burst, over a simulated minute of claims every 100 ms.
func testFlowRate(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	fc := flowOf(t, q)
	const rate, burst = 2, 2
	setLimits(t, fc, "acme", contract.Limits{Rate: rate, Burst: burst})
	enqueue(t, q, items("acme", "a", 200)...)
	enqueue(t, q, items("globex", "g", 5)...)
	served := 0
	globex := 0
	var sawRetry bool
	for step := range 600 {
		ls, r, _ := claimReported(t, q, 10)
		n := countTenants(ls)
		served += n["acme"]
		globex += n["globex"]
		if step > 0 && n["acme"] > 1 {
			t.Fatalf("at %v a claim served acme %d items: the bucket refills 2 a second", clock.Now().Sub(FakeEpoch), n["acme"])
		}
		if r.Held[contract.HeldRate] == 1 {
			if r.RetryAt.Before(clock.Now()) || r.RetryAt.After(clock.Now().Add(time.Second/rate+time.Millisecond)) {
				t.Fatalf("at %v the report's RetryAt is %v, want within one token's time", clock.Now(), r.RetryAt)
			}
			sawRetry = true
		}
		clock.Advance(100 * time.Millisecond)
	}
	if served < rate*60-burst || served > rate*60+burst {
		t.Fatalf("over a minute a rate of %d/s (burst %d) served %d items, want %d ± %d", rate, burst, served, rate*60, burst)
	}
	if globex != 5 {
		t.Fatalf("globex, without a rate, got %d of its 5 items", globex)
	}
	if !sawRetry {
		t.Fatal("no claim reported acme held by its rate")
	}
	if tf := flowOfTenant(t, fc, "acme"); tf.RateTokens < 0 || tf.RateTokens > burst {
		t.Fatalf("FlowStatus rate tokens %v, want 0..%d", tf.RateTokens, burst)
	}
}

// testFlowWeights: weights 3:1 over 400 claimed items give 300:100, give
// or take one round.
func testFlowWeights(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	fc := flowOf(t, q)
	setLimits(t, fc, "acme", contract.Limits{Weight: 3})
	enqueue(t, q, items("acme", "a", 400)...)
	enqueue(t, q, items("globex", "g", 400)...)
	var ls []contract.Lease
	for _, max := range []int{1, 4, 7} {
		ls = append(ls, claimSequence(t, q, 400/3, max)...)
	}
	ls = ls[:399]
	ls = append(ls, claimOne(t, q, "w"))
	n := countTenants(ls)
	if d := n["acme"] - 300; d < -4 || d > 4 {
		t.Fatalf("400 claims with weights 3:1 served %v, want acme 300 and globex 100 ± 4", n)
	}
}

// testFlowBudget: a tenant over its budget is parked until the window
// slides, while the others drain; its items are charged no attempt.
func testFlowBudget(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	fc := flowOf(t, q)
	window := time.Minute
	setLimits(t, fc, "acme", contract.Limits{Budget: contract.Budget{CostMicros: 1000, Tokens: 1_000_000, Window: window}})
	enqueue(t, q, items("acme", "a", 5)...)
	enqueue(t, q, items("globex", "g", 20)...)
	first := claimOne(t, q, "w")
	if first.Item.Tenant != "acme" {
		t.Fatalf("the first claim served %v, want acme", first.Key())
	}
	mustNoErr(t, fc.Charge(t.Context(), contract.DefaultQueue, "acme", contract.Usage{CostMicros: 600, Tokens: 10}), "Charge")
	mustNoErr(t, q.Complete(t.Context(), first), "Complete")
	if tf := flowOfTenant(t, fc, "acme"); tf.Held != contract.HeldNone || tf.BudgetUsed != (contract.Usage{CostMicros: 600, Tokens: 10}) {
		t.Fatalf("FlowStatus under budget = %+v, want not held, 600 micros and 10 tokens used", tf)
	}
	mustNoErr(t, fc.Charge(t.Context(), contract.DefaultQueue, "acme", contract.Usage{CostMicros: 400}), "Charge to the ceiling")
	charged := clock.Now()
	tf := flowOfTenant(t, fc, "acme")
	if tf.Held != contract.HeldBudget || tf.BudgetUsed.CostMicros != 1000 {
		t.Fatalf("FlowStatus at the ceiling = %+v, want held by its budget with 1000 micros used", tf)
	}
	if !tf.Until.After(charged.Add(window-time.Millisecond)) || tf.Until.After(charged.Add(window+window/contract.BudgetSlots)) {
		t.Fatalf("FlowStatus Until = %v, want within one slot after %v", tf.Until, charged.Add(window))
	}
	ls := drain(t, q, "", "w", 6)
	if n := countTenants(ls); n["acme"] != 0 || n["globex"] != 20 {
		t.Fatalf("draining with acme over budget served %v, want globex's 20 only", n)
	}
	_, r, err := claimReported(t, q, 5)
	if !errors.Is(err, contract.ErrEmpty) || r.Held[contract.HeldBudget] != 1 || !r.RetryAt.Equal(tf.Until) {
		t.Fatalf("a claim with acme over budget = %v, report %+v; want ErrEmpty, held by budget, RetryAt %v", err, r, tf.Until)
	}
	clock.Set(charged.Add(window / 2))
	wantEmpty(t, q, "", "half a window after the charge")
	clock.Set(tf.Until)
	ls, err = q.Claim(t.Context(), claimReq("w", 10))
	mustNoErr(t, err, "a claim once the window slid")
	if n := countTenants(ls); n["acme"] != 4 {
		t.Fatalf("once the window slid the claim served %v, want acme's 4 left", n)
	}
	for _, l := range ls {
		if l.Item.Attempts != 0 {
			t.Fatalf("%v was held back and came back with %d attempts, want 0", l.Key(), l.Item.Attempts)
		}
	}
}

// testFlowBudgetOwnWindow: usage is kept under a budget only, and a new
// window starts the count afresh.
func testFlowBudgetOwnWindow(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	fc := flowOf(t, q)
	enqueue(t, q, items("acme", "a", 2)...)
	mustNoErr(t, fc.Charge(t.Context(), contract.DefaultQueue, "acme", contract.Usage{CostMicros: 5000}), "Charge without a budget")
	budget := contract.Limits{Budget: contract.Budget{CostMicros: 1000, Window: time.Minute}}
	setLimits(t, fc, "acme", budget)
	if tf := flowOfTenant(t, fc, "acme"); tf.Held != contract.HeldNone || tf.BudgetUsed.CostMicros != 0 {
		t.Fatalf("a charge made without a budget counted under the one set later: %+v", tf)
	}
	clock.Advance(time.Second)
	mustNoErr(t, fc.Charge(t.Context(), contract.DefaultQueue, "acme", contract.Usage{CostMicros: 1000}), "Charge to the ceiling")
	if tf := flowOfTenant(t, fc, "acme"); tf.Held != contract.HeldBudget {
		t.Fatalf("at the ceiling: %+v, want held by its budget", tf)
	}
	budget.Budget.Window = 2 * time.Minute
	setLimits(t, fc, "acme", budget)
	if tf := flowOfTenant(t, fc, "acme"); tf.Held != contract.HeldNone || tf.BudgetUsed.CostMicros != 0 {
		t.Fatalf("after the window changed: %+v, want the count started afresh", tf)
	}
	claimOne(t, q, "w")
}

// testFlowKeepsPlace: a tenant held back keeps its place in the rotation,
// so it is served first once it is free.
func testFlowKeepsPlace(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	fc := flowOf(t, q)
	setLimits(t, fc, "acme", contract.Limits{MaxLeased: 1})
	for _, tn := range []string{"acme", "globex", "initech"} {
		enqueue(t, q, items(tn, tn[:1], 5)...)
		clock.Advance(time.Millisecond)
	}
	a := claimOne(t, q, "w")
	order := []string{a.Item.Tenant, claimOne(t, q, "w").Item.Tenant, claimOne(t, q, "w").Item.Tenant}
	// acme, at its cap, is passed over: globex is served in its stead.
	order = append(order, claimOne(t, q, "w").Item.Tenant)
	if fmt.Sprint(order) != "[acme globex initech globex]" {
		t.Fatalf("claims served %v, want [acme globex initech globex]", order)
	}
	mustNoErr(t, q.Complete(context.WithoutCancel(t.Context()), a), "Complete of acme's lease")
	if next := claimOne(t, q, "w"); next.Item.Tenant != "acme" {
		t.Fatalf("after acme's lease ended the claim served %s, want acme: a held tenant keeps its place at the head", next.Item.Tenant)
	}
}

// testFlowManyHeld: a claim behind thirty tenants at their caps fills its
// batch from the tenant after them, passes each held one over (and
// reports it) once however many items it takes, and the held tenants keep
// their places: those whose lease ends are served first, up to their caps
// again (and then count as passed over too).
func testFlowManyHeld(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	fc := flowOf(t, q)
	const held = 30
	for i := range held {
		tn := fmt.Sprintf("h%02d", i)
		setLimits(t, fc, tn, contract.Limits{MaxLeased: 1})
		enqueue(t, q, items(tn, tn, 3)...)
		clock.Advance(time.Millisecond)
	}
	enqueue(t, q, items("zfree", "z", 20)...)
	first, _, err := claimReported(t, q, held)
	mustNoErr(t, err, "the claim of one item of each capped tenant")
	if n := countTenants(first); len(first) != held || len(n) != held || n["zfree"] != 0 {
		t.Fatalf("a claim of %d served %v, want one item of each capped tenant", held, n)
	}
	for round := range 2 {
		ls, r, err := claimReported(t, q, 10)
		mustNoErr(t, err, "a claim behind the held tenants")
		if n := countTenants(ls); n["zfree"] != 10 || len(n) != 1 {
			t.Fatalf("claim %d behind %d tenants at their caps served %v, want 10 of zfree", round, held, n)
		}
		if r.PassedOver != held || r.Held[contract.HeldCap] != held {
			t.Fatalf("claim %d's report = %+v, want each of the %d held tenants passed over once, for its cap", round, r, held)
		}
	}
	var ended []contract.Lease
	for _, l := range first {
		if l.Item.Tenant == "h07" || l.Item.Tenant == "h23" {
			ended = append(ended, l)
		}
	}
	mustNoErr(t, q.Complete(context.WithoutCancel(t.Context()), ended...), "Complete of h07's and h23's leases")
	ls, r, err := claimReported(t, q, 10)
	mustNoErr(t, err, "the claim after two leases ended")
	if n := countTenants(ls); len(ls) != 2 || n["h07"] != 1 || n["h23"] != 1 {
		t.Fatalf("the claim after h07's and h23's leases ended served %v, want one item of each", n)
	}
	if r.PassedOver != held || r.Held[contract.HeldCap] != held {
		t.Fatalf("the claim's report = %+v, want each of the %d tenants passed over once, h07 and h23 after their item", r, held)
	}
}

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }
