//go:build integration

package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// flowQueue is a queue in a namespace of its own on the shared server,
// with its client and clock, so a test can reopen the same namespace.
type flowQueue struct {
	*RedisWorkQueue
	client *redis.Client
	ns     string
	clock  *contracttest.FakeClock
}

func newFlowQueue(t *testing.T) flowQueue {
	t.Helper()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	clock := contracttest.NewFakeClock(time.Time{})
	q, err := NewQueue(client, clock, Settings{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return flowQueue{RedisWorkQueue: q, client: client, ns: ns, clock: clock}
}

// fstateKey is the default queue's flow state hash.
func (f flowQueue) fstateKey() string { return f.d.keys.queue("default") + "fstate" }

func (f flowQueue) enqueue(t *testing.T, tenant string, n int) {
	t.Helper()
	items := make([]contract.Item, n)
	for i := range items {
		items[i] = contract.Item{Tenant: tenant, ID: fmt.Sprintf("%s-%03d", tenant, i)}
	}
	if err := f.Enqueue(context.Background(), items...); err != nil {
		t.Fatal(err)
	}
}

func (f flowQueue) setLimits(t *testing.T, tenant string, l contract.Limits) {
	t.Helper()
	if err := f.SetLimits(context.Background(), "", tenant, l); err != nil {
		t.Fatal(err)
	}
}

func byTenant(leases []contract.Lease) map[string]int {
	out := map[string]int{}
	for _, l := range leases {
		out[l.Item.Tenant]++
	}
	return out
}

func claimReq(max int) contract.ClaimRequest {
	return contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: max}
}

// TestFlowLimitsSurviveReopen: the limits rows are the server's, so a
// store opened again on the same namespace reads them back and enforces
// them, and the zero Limits remove a row for good.
func TestFlowLimitsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	f := newFlowQueue(t)
	def := contract.Limits{MaxLeased: 3, Weight: 2}
	own := contract.Limits{MaxLeased: 1, Rate: 2.5, Burst: 4, Budget: contract.Budget{CostMicros: 500, Tokens: 9, Window: 90 * time.Second}}
	f.setLimits(t, "", def)
	f.setLimits(t, "acme", own)
	f.setLimits(t, "gone", contract.Limits{Weight: 5})
	f.setLimits(t, "gone", contract.Limits{})
	f.enqueue(t, "acme", 3)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	again, err := NewQueue(f.client, f.clock, Settings{Namespace: f.ns})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !again.Capabilities().Flow {
		t.Fatal("Capabilities().Flow is false")
	}
	got, err := again.Limits(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.Queue != contract.DefaultQueue || got.Default != def || len(got.Tenants) != 1 || got.Tenants["acme"] != own {
		t.Fatalf("after reopening: %+v; want default %+v and acme %+v only", got, def, own)
	}
	leases, err := again.Claim(ctx, claimReq(3))
	if err != nil || len(leases) != 1 {
		t.Fatalf("claim after reopening: %d leases, %v; acme's own cap of 1 should hold", len(leases), err)
	}
}

// TestFlowCapReportAndWake: a capped tenant is passed over within the
// claim (the batch fills from the other), the report says so, and a
// complete that frees the cap wakes the claimers.
func TestFlowCapReportAndWake(t *testing.T) {
	ctx := context.Background()
	f := newFlowQueue(t)
	f.enqueue(t, "a", 5)
	f.enqueue(t, "b", 5)
	f.setLimits(t, "a", contract.Limits{MaxLeased: 2})
	wake, stop := f.Subscribe("")
	defer stop()
	drain(wake)

	var r contract.ClaimReport
	leases, err := f.Claim(contract.WithClaimReport(ctx, &r), claimReq(10))
	if err != nil {
		t.Fatal(err)
	}
	if n := byTenant(leases); n["a"] != 2 || n["b"] != 5 {
		t.Fatalf("claimed %v; want a:2 b:5", n)
	}
	if r.PassedOver != 1 || r.Held[contract.HeldCap] != 1 || !r.RetryAt.IsZero() {
		t.Fatalf("report %+v; want one tenant passed over for its cap", r)
	}
	st, err := f.FlowStatus(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[0].Tenant != "a" || st[0].Leased != 2 || st[0].Held != contract.HeldCap || !st[0].Own || st[1].Held != contract.HeldNone {
		t.Fatalf("flow status %+v", st)
	}
	var a contract.Lease
	for _, l := range leases {
		if l.Item.Tenant == "a" {
			a = l
		}
	}
	if err := f.Complete(ctx, a); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, wake, "no wake after a capped tenant's lease ended")
	next, err := f.Claim(ctx, claimReq(10))
	if err != nil || len(next) != 1 || next[0].Item.Tenant != "a" {
		t.Fatalf("after the complete: %v, %v; want one item of a", next, err)
	}
}

// awaitWake fails the test with what unless the queue's claimers are
// woken within five seconds.
func awaitWake(t *testing.T, wake <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal(what)
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestFlowCapCountsLeasesFromBeforeLimits: limits set on a queue whose
// leases were taken without any count them (the index is built then), a
// heartbeat keeps counting its lease, and an expired lease stops counting
// at its expiry, before any reap.
func TestFlowCapCountsLeasesFromBeforeLimits(t *testing.T) {
	ctx := context.Background()
	f := newFlowQueue(t)
	f.enqueue(t, "a", 4)
	first, err := f.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: 10 * time.Second, Max: 2})
	if err != nil || len(first) != 2 {
		t.Fatalf("claim: %v, %v", first, err)
	}
	f.setLimits(t, "a", contract.Limits{MaxLeased: 2})
	if _, err := f.Claim(ctx, claimReq(1)); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("at the cap: %v; want ErrEmpty", err)
	}
	f.clock.Advance(5 * time.Second)
	if _, err := f.Heartbeat(ctx, first[0], time.Minute); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(6 * time.Second) // first[1] expired, unreaped; first[0] lives on
	got, err := f.Claim(ctx, claimReq(5))
	if err != nil || len(got) != 1 {
		t.Fatalf("after one lease expired: %d, %v; want exactly one more", len(got), err)
	}
}

// TestFlowCapCountsLeasesTakenUncapped: while the queue has limits, only
// capped tenants' leases are indexed, so a cap that comes later (on the
// tenant's own row or the default) must still count the leases its
// tenant took while it had none.
func TestFlowCapCountsLeasesTakenUncapped(t *testing.T) {
	ctx := context.Background()
	f := newFlowQueue(t)
	f.enqueue(t, "a", 4)
	f.enqueue(t, "b", 4)
	f.setLimits(t, "z", contract.Limits{Weight: 2}) // limits on, a and b uncapped
	first, err := f.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 4})
	if err != nil || len(first) != 4 {
		t.Fatalf("claim: %v, %v", first, err)
	}
	f.setLimits(t, "a", contract.Limits{MaxLeased: 2})
	f.setLimits(t, "", contract.Limits{MaxLeased: 3})
	got, err := f.Claim(ctx, claimReq(5))
	if err != nil || len(got) != 1 || got[0].Item.Tenant != "b" {
		t.Fatalf("a at its cap, b one below the default's: %v, %v; want one of b", got, err)
	}
	f.setLimits(t, "", contract.Limits{})
	got, err = f.Claim(ctx, claimReq(5))
	if err != nil || len(got) != 1 || got[0].Item.Tenant != "b" {
		t.Fatalf("after the default went: %v, %v; want b's last item", got, err)
	}
	for _, l := range first {
		if l.Item.Tenant == "a" {
			if err := f.Complete(ctx, l); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if err := f.Enqueue(ctx, contract.Item{Tenant: "b", ID: "b-late"}); err != nil {
		t.Fatal(err)
	}
	f.setLimits(t, "b", contract.Limits{MaxLeased: 4})
	got, err = f.Claim(ctx, claimReq(5))
	if n := byTenant(got); err != nil || n["a"] != 1 || n["b"] != 0 {
		t.Fatalf("a one below its cap, b at its own: %v, %v; want one of a", n, err)
	}
}

// TestFlowHeldAtTheHead: a tenant held at the head of the rotation keeps
// its place, and the tenant after the head serves in its stead, whether
// the claim runs the plain rounds (the others have no limits) or the walk
// (the one after the head has limits of its own).
func TestFlowHeldAtTheHead(t *testing.T) {
	for _, limitedNext := range []bool{false, true} {
		ctx := context.Background()
		f := newFlowQueue(t)
		for _, tn := range []string{"a", "b", "c", "d"} {
			f.enqueue(t, tn, 3)
		}
		f.setLimits(t, "a", contract.Limits{MaxLeased: 1})
		if limitedNext {
			f.setLimits(t, "d", contract.Limits{Weight: 1, MaxLeased: 5})
		}
		// Two claims of one leave the rotation c, d, a, b, with a at its cap.
		var held contract.Lease
		for _, want := range []string{"a", "b"} {
			got, err := f.Claim(ctx, claimReq(1))
			if err != nil || len(got) != 1 || got[0].Item.Tenant != want {
				t.Fatalf("claim: %v, %v; want one of %s", got, err, want)
			}
			if want == "a" {
				held = got[0]
			}
		}
		got, err := f.Claim(ctx, claimReq(2))
		if err != nil || len(got) != 2 || got[0].Item.Tenant != "c" || got[1].Item.Tenant != "d" {
			t.Fatalf("claim of 2: %v, %v; want c then d", got, err)
		}
		// The rotation is a, b, c, d with a at its cap: a claim of 2 gives b
		// and c, and says a was passed over.
		var r contract.ClaimReport
		got, err = f.Claim(contract.WithClaimReport(ctx, &r), claimReq(2))
		if n := byTenant(got); err != nil || n["b"] != 1 || n["c"] != 1 {
			t.Fatalf("limitedNext=%v: %v, %v; want one of b and one of c", limitedNext, n, err)
		}
		if r.PassedOver != 1 || r.Held[contract.HeldCap] != 1 {
			t.Fatalf("limitedNext=%v: report %+v; want a passed over for its cap", limitedNext, r)
		}
		// a kept its place: a lease of it ending lets the next claim serve it first.
		if err := f.Complete(ctx, held); err != nil {
			t.Fatal(err)
		}
		got, err = f.Claim(ctx, claimReq(1))
		if err != nil || len(got) != 1 || got[0].Item.Tenant != "a" {
			t.Fatalf("limitedNext=%v: after a's lease ended: %v, %v; want a", limitedNext, got, err)
		}
	}
}

// TestFlowCompleteAndClaimFreesTheCap: the claim half counts the leases
// the complete half of the same call ends.
func TestFlowCompleteAndClaimFreesTheCap(t *testing.T) {
	ctx := context.Background()
	f := newFlowQueue(t)
	f.enqueue(t, "a", 6)
	f.setLimits(t, "a", contract.Limits{MaxLeased: 2})
	leases, err := f.Claim(ctx, claimReq(5))
	if err != nil || len(leases) != 2 {
		t.Fatalf("claim: %d, %v", len(leases), err)
	}
	next, err := f.CompleteAndClaim(ctx, leases, claimReq(5))
	if err != nil || len(next) != 2 {
		t.Fatalf("complete and claim: %d, %v; want 2", len(next), err)
	}
}

// TestFlowRateBucketsOfOneClaim: a claim that serves several tenants
// with rates writes back each one's own bucket, tenants whose buckets
// stood alike sharing a value and the others not, on both of the claim's
// paths (a tenant with a weight sends the claim down the walk).
func TestFlowRateBucketsOfOneClaim(t *testing.T) {
	ctx := context.Background()
	for _, walk := range []bool{false, true} {
		t.Run(fmt.Sprintf("walk=%v", walk), func(t *testing.T) {
			f := newFlowQueue(t)
			rated := contract.Limits{Rate: 10, Burst: 10}
			for _, tn := range []string{"a", "b", "c"} {
				f.enqueue(t, tn, 5)
				f.setLimits(t, tn, rated)
			}
			last := 3
			if walk {
				f.enqueue(t, "d", 5)
				f.setLimits(t, "d", contract.Limits{Weight: 2})
				last = 5
			}
			// a, then b, take a token each; the last claim serves c (full
			// bucket), then a and b (one token short), at the same instant.
			for _, want := range []string{"a", "b"} {
				ls, err := f.Claim(ctx, claimReq(1))
				if err != nil || len(ls) != 1 || ls[0].Item.Tenant != want {
					t.Fatalf("claim of 1: %v %v; want one of %s", ls, err, want)
				}
			}
			ls, err := f.Claim(ctx, claimReq(last))
			if err != nil {
				t.Fatal(err)
			}
			if n := byTenant(ls); n["a"] != 1 || n["b"] != 1 || n["c"] != 1 {
				t.Fatalf("last claim served %v; want one item each of a, b and c", n)
			}
			st, err := f.FlowStatus(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]float64{"a": 8, "b": 8, "c": 9}
			for _, tf := range st {
				if w, ok := want[tf.Tenant]; ok && math.Abs(tf.RateTokens-w) > 1e-6 {
					t.Errorf("tenant %s holds %v tokens; want %v", tf.Tenant, tf.RateTokens, w)
				}
			}
		})
	}
}

// TestFlowWeightRateBudget: weights share the rotation 3:1, a rate hands
// out its burst and then a token per interval, and a budget holds the
// tenant until its window slides past the charge.
func TestFlowWeightRateBudget(t *testing.T) {
	ctx := context.Background()
	t.Run("weight", func(t *testing.T) {
		f := newFlowQueue(t)
		f.enqueue(t, "heavy", 300)
		f.enqueue(t, "light", 300)
		f.setLimits(t, "heavy", contract.Limits{Weight: 3})
		total := map[string]int{}
		for range 40 {
			leases, err := f.Claim(ctx, claimReq(7))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range byTenant(leases) {
				total[k] += v
			}
			if err := f.Complete(ctx, leases...); err != nil {
				t.Fatal(err)
			}
		}
		if h, l := total["heavy"], total["light"]; h+l != 280 || h < 207 || h > 213 {
			t.Fatalf("served %v; want 210:70", total)
		}
	})
	t.Run("rate", func(t *testing.T) {
		f := newFlowQueue(t)
		f.enqueue(t, "a", 200)
		f.enqueue(t, "b", 3)
		f.setLimits(t, "a", contract.Limits{Rate: 2, Burst: 3})
		var r contract.ClaimReport
		leases, err := f.Claim(contract.WithClaimReport(ctx, &r), claimReq(10))
		if err != nil {
			t.Fatal(err)
		}
		if n := byTenant(leases); n["a"] != 3 || n["b"] != 3 {
			t.Fatalf("claimed %v; want the burst of 3 and b's 3", n)
		}
		want := f.clock.Now().Add(500 * time.Millisecond)
		if r.Held[contract.HeldRate] != 1 || !r.RetryAt.Equal(want) {
			t.Fatalf("report %+v; want a rate hold until %v", r, want)
		}
		served := 3
		for range 120 { // a simulated minute in half seconds
			f.clock.Advance(500 * time.Millisecond)
			got, err := f.Claim(ctx, claimReq(10))
			if err != nil && !errors.Is(err, contract.ErrEmpty) {
				t.Fatal(err)
			}
			served += len(got)
		}
		if served != 3+120 {
			t.Fatalf("served %d of a's items in a minute at 2/s", served)
		}
	})
	t.Run("budget", func(t *testing.T) {
		f := newFlowQueue(t)
		f.enqueue(t, "a", 5)
		f.enqueue(t, "b", 5)
		f.setLimits(t, "", contract.Limits{Budget: contract.Budget{CostMicros: 100, Window: 10 * time.Second}})
		if err := f.Charge(ctx, "", "a", contract.Usage{CostMicros: 100}); err != nil {
			t.Fatal(err)
		}
		var r contract.ClaimReport
		leases, err := f.Claim(contract.WithClaimReport(ctx, &r), claimReq(10))
		if err != nil {
			t.Fatal(err)
		}
		if n := byTenant(leases); n["a"] != 0 || n["b"] != 5 {
			t.Fatalf("claimed %v; want b's only", n)
		}
		if r.Held[contract.HeldBudget] != 1 || r.RetryAt.IsZero() || r.RetryAt.Sub(f.clock.Now()) > 11*time.Second {
			t.Fatalf("report %+v", r)
		}
		st, err := f.FlowStatus(ctx, "")
		if err != nil || st[0].Held != contract.HeldBudget || st[0].BudgetUsed.CostMicros != 100 || !st[0].Until.Equal(r.RetryAt) {
			t.Fatalf("flow status %+v, %v; want a held by its budget until %v", st, err, r.RetryAt)
		}
		f.clock.Set(r.RetryAt)
		got, err := f.Claim(ctx, claimReq(10))
		if err != nil || byTenant(got)["a"] != 5 {
			t.Fatalf("once the window slid: %v, %v", got, err)
		}
		// A new window starts the count afresh.
		if err := f.Charge(ctx, "", "a", contract.Usage{CostMicros: 100}); err != nil {
			t.Fatal(err)
		}
		f.setLimits(t, "", contract.Limits{Budget: contract.Budget{CostMicros: 100, Window: 20 * time.Second}})
		if st, err := f.FlowStatus(ctx, ""); err != nil || st[0].BudgetUsed.CostMicros != 0 || st[0].Held != contract.HeldNone {
			t.Fatalf("after the window changed: %+v, %v; want nothing counted", st, err)
		}
	})
}

// TestFlowCapUnderConcurrency: ten claimers against a tenant capped at
// two never hold three live leases.
func TestFlowCapUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	f := newFlowQueue(t)
	f.enqueue(t, "a", 60)
	f.setLimits(t, "a", contract.Limits{MaxLeased: 2})
	var mu sync.Mutex
	held, most := 0, 0
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				leases, err := f.Claim(ctx, contract.ClaimRequest{Worker: fmt.Sprint("w", w), LeaseFor: time.Minute, Max: 3})
				if errors.Is(err, contract.ErrEmpty) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				// Counted after the claim and given back before the
				// complete, so held is never above what the server holds.
				mu.Lock()
				held += len(leases)
				most = max(most, held)
				mu.Unlock()
				mu.Lock()
				held -= len(leases)
				mu.Unlock()
				if err := f.Complete(ctx, leases...); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if most > 2 {
		t.Fatalf("a batch held %d leases of a tenant capped at 2", most)
	}
	st, err := f.FlowStatus(ctx, "")
	if err != nil || (len(st) > 0 && st[0].Leased != 0) {
		t.Fatalf("flow status after: %+v, %v", st, err)
	}
}

// TestFlowCapIndexedOnceItCanBind: a claim puts the leases of a tenant
// with a large cap (1,000 or more) into the index only once its cap can
// bind (the queue's leases and the batch reach past it); from then on
// the cap counts every lease the tenant took before, on the plain rounds
// and on the walk, less those expired and those the same call completes.
// A small cap's leases are indexed from the first claim.
func TestFlowCapIndexedOnceItCanBind(t *testing.T) {
	for name, l := range map[string]contract.Limits{
		"rounds": {MaxLeased: 1000},
		"walk":   {MaxLeased: 1000, Weight: 2},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := newFlowQueue(t)
			f.enqueue(t, "a", 1500)
			f.setLimits(t, "a", l)
			var held []contract.Lease
			for i := range 2 {
				got, err := f.Claim(ctx, claimReq(400))
				if err != nil || len(got) != 400 {
					t.Fatalf("claim %d under the cap: %d, %v", i, len(got), err)
				}
				held = append(held, got...)
			}
			// 800 leases and a batch of 400 can pass the cap of 1000 only now.
			if n := f.indexed(t, "a"); n != 0 {
				t.Fatalf("index before the cap could bind: %d; want 0", n)
			}
			got, err := f.Claim(ctx, claimReq(400))
			if err != nil || len(got) != 200 {
				t.Fatalf("claim up to the cap: %d, %v; want 200", len(got), err)
			}
			if n := f.indexed(t, "a"); n != 1000 {
				t.Fatalf("index once the cap could bind: %d; want 1000", n)
			}
			if got, err := f.Claim(ctx, claimReq(1)); !errors.Is(err, contract.ErrEmpty) {
				t.Fatalf("at the cap: %d, %v; want ErrEmpty", len(got), err)
			}
			next, err := f.CompleteAndClaim(ctx, held[:1], claimReq(5))
			if err != nil || len(next) != 1 {
				t.Fatalf("complete one and claim: %d, %v; want 1", len(next), err)
			}
			if got, err := f.Claim(ctx, claimReq(5)); !errors.Is(err, contract.ErrEmpty) {
				t.Fatalf("at the cap again: %d, %v; want ErrEmpty", len(got), err)
			}
			f.clock.Advance(2 * time.Minute) // every lease expired, none reaped
			got, err = f.Claim(ctx, claimReq(400))
			if err != nil || len(got) != 400 {
				t.Fatalf("after the leases expired: %d, %v; want a full batch", len(got), err)
			}
		})
	}
}

// indexed is how many of tenant's leases the live-lease index holds.
func (f flowQueue) indexed(t *testing.T, tenant string) int64 {
	t.Helper()
	lt := lp(tenant)
	n, err := f.client.ZLexCount(context.Background(), f.d.keys.queue("default")+"tleases", "["+lt, "("+lt+";").Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFlowCapIndexedOnceItCanBindAfterComplete: the first claim that can
// reach a large cap is the claim half of CompleteAndClaim, and the leases
// its complete half ends are neither counted nor indexed; a small cap's
// leases are indexed as they are taken.
func TestFlowCapIndexedOnceItCanBindAfterComplete(t *testing.T) {
	ctx := context.Background()
	f := newFlowQueue(t)
	f.enqueue(t, "a", 1200)
	f.enqueue(t, "b", 3)
	f.setLimits(t, "a", contract.Limits{MaxLeased: 1000})
	f.setLimits(t, "b", contract.Limits{MaxLeased: 2})
	var held []contract.Lease
	for range 2 {
		got, err := f.Claim(ctx, claimReq(300))
		if err != nil || len(got) != 300 {
			t.Fatalf("claim: %d, %v", len(got), err)
		}
		held = append(held, got...)
	}
	if n := f.indexed(t, "b"); n != 2 {
		t.Fatalf("b's leases indexed: %d; want 2", n)
	}
	var doneA []contract.Lease
	for _, l := range held {
		if l.Item.Tenant == "a" && len(doneA) < 100 {
			doneA = append(doneA, l)
		}
	}
	// a took 598 leases; 498 live on after the complete, so its cap of
	// 1000 leaves room for 502, and b is at its cap.
	next, err := f.CompleteAndClaim(ctx, doneA, claimReq(600))
	if n := byTenant(next); err != nil || n["a"] != 502 || n["b"] != 0 {
		t.Fatalf("complete 100 of a's and claim: %v, %v; want 502 of a", n, err)
	}
	if n := f.indexed(t, "a"); n != 1000 {
		t.Fatalf("a's leases indexed: %d; want its 1000 live ones", n)
	}
	if got, err := f.Claim(ctx, claimReq(10)); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("both at their caps: %v, %v; want ErrEmpty", byTenant(got), err)
	}
}

// TestFlowMarkedCapIndexedWhileItCannotBind: once a large cap marked its
// tenant (on the plain rounds, or on the walk), the plain rounds index
// the tenant's new leases even in claims its cap cannot bind in, so a
// later count from the index is whole. The queue's field that says a
// mark exists is what tells them to read the marks; a queue without it
// (its flow turned on by an earlier release) reads them anyway.
func TestFlowMarkedCapIndexedWhileItCannotBind(t *testing.T) {
	for _, tc := range []struct {
		name      string
		l         contract.Limits
		dropField bool
	}{
		{"rounds", contract.Limits{MaxLeased: 1000}, false},
		{"walk", contract.Limits{MaxLeased: 1000, Weight: 2}, false},
		{"without the field", contract.Limits{MaxLeased: 1000}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFlowQueue(t)
			fstate := f.fstateKey()
			// b's 300 leases let a claim reach a's cap before a does.
			f.enqueue(t, "b", 300)
			if got, err := f.Claim(ctx, claimReq(300)); err != nil || len(got) != 300 {
				t.Fatalf("claim of b: %d, %v", len(got), err)
			}
			f.enqueue(t, "a", 1500)
			f.setLimits(t, "a", tc.l)
			if v, err := f.client.HGet(ctx, fstate, "!k").Result(); err != nil || v != "0" {
				t.Fatalf("mark field after flow turned on: %q, %v; want 0", v, err)
			}
			var held []contract.Lease
			for i, want := range []int64{0, 800} {
				got, err := f.Claim(ctx, claimReq(400))
				if err != nil || len(got) != 400 {
					t.Fatalf("claim %d: %d, %v; want 400", i, len(got), err)
				}
				held = append(held, got...)
				if n := f.indexed(t, "a"); n != want {
					t.Fatalf("a's leases indexed after claim %d: %d; want %d", i, n, want)
				}
			}
			if v, err := f.client.HGet(ctx, fstate, "!k").Result(); err != nil || v != "1" {
				t.Fatalf("mark field once a tenant is marked: %q, %v; want 1", v, err)
			}
			if tc.dropField {
				if err := f.client.HDel(ctx, fstate, "!k").Err(); err != nil {
					t.Fatal(err)
				}
			}
			f.setLimits(t, "a", contract.Limits{MaxLeased: 1000}) // the plain rounds from here on
			// b's 300 leases and a batch of 10 cannot reach the cap of 1000.
			if err := f.Complete(ctx, held...); err != nil {
				t.Fatal(err)
			}
			got, err := f.Claim(ctx, claimReq(10))
			if err != nil || len(got) != 10 {
				t.Fatalf("claim far below the cap: %d, %v; want 10", len(got), err)
			}
			if n := f.indexed(t, "a"); n != 10 {
				t.Fatalf("a's leases indexed: %d; want its 10 live ones", n)
			}
		})
	}
}

// TestFlowHeldAtTheHeadReplaced: tenants held at the head of the rotation
// give their places to the tenants after the head, one or several, and
// to nobody when the head is the whole rotation.
func TestFlowHeldAtTheHeadReplaced(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tenants []string
		max     int
		want    map[string]int
	}{
		{"one held", []string{"a", "b", "c", "d"}, 3, map[string]int{"b": 1, "c": 1, "d": 1}},
		{"two held", []string{"a", "b", "c", "d", "e"}, 3, map[string]int{"c": 1, "d": 1, "e": 1}},
		{"whole rotation", []string{"a", "b", "c"}, 3, map[string]int{"b": 2, "c": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFlowQueue(t)
			for _, tn := range tc.tenants {
				f.enqueue(t, tn, 3)
			}
			capped := []string{"a"}
			if tc.name == "two held" {
				capped = append(capped, "b")
			}
			for _, tn := range capped {
				f.setLimits(t, tn, contract.Limits{MaxLeased: 1})
				got, err := f.Claim(ctx, claimReq(1))
				if err != nil || len(got) != 1 || got[0].Item.Tenant != tn {
					t.Fatalf("claim: %v, %v; want one of %s", got, err, tn)
				}
			}
			// Each capped tenant now holds its one lease and, having been
			// served, went to the back: serve the others once to bring the
			// capped ones to the head again.
			others := len(tc.tenants) - len(capped)
			if got, err := f.Claim(ctx, claimReq(others)); err != nil || len(got) != others {
				t.Fatalf("claim of the others: %v, %v", byTenant(got), err)
			}
			var r contract.ClaimReport
			got, err := f.Claim(contract.WithClaimReport(ctx, &r), claimReq(tc.max))
			if n := byTenant(got); err != nil || fmt.Sprint(n) != fmt.Sprint(tc.want) {
				t.Fatalf("claim of %d: %v, %v; want %v", tc.max, n, err, tc.want)
			}
			if r.Held[contract.HeldCap] != len(capped) {
				t.Fatalf("report %+v; want %d passed over for the cap", r, len(capped))
			}
		})
	}
}

// TestFlowRateBucketKeepsFractions: a rate whose interval is not a whole
// number of microseconds keeps its bucket's fraction from one claim to
// the next, so the next token comes neither a fraction early nor late.
func TestFlowRateBucketKeepsFractions(t *testing.T) {
	ctx := context.Background()
	f := newFlowQueue(t)
	f.enqueue(t, "a", 3)
	f.setLimits(t, "a", contract.Limits{Rate: 3, Burst: 1}) // a token every 333,333.33 µs
	if got, err := f.Claim(ctx, claimReq(1)); err != nil || len(got) != 1 {
		t.Fatalf("first claim: %d, %v; want 1", len(got), err)
	}
	f.clock.Advance(333_333 * time.Microsecond)
	if got, err := f.Claim(ctx, claimReq(1)); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("a third of a microsecond before the next token: %d, %v; want ErrEmpty", len(got), err)
	}
	f.clock.Advance(time.Microsecond)
	if got, err := f.Claim(ctx, claimReq(1)); err != nil || len(got) != 1 {
		t.Fatalf("once the token came: %d, %v; want 1", len(got), err)
	}
}

// TestFlowCapMarksOfManyTenants: a claim that passes many tenants over
// for their caps marks each of them once, and a Complete that ends a
// lease of some of them drops exactly those marks (and wakes), keeping
// the others, however the ended leases and the marks are ordered.
func TestFlowCapMarksOfManyTenants(t *testing.T) {
	ctx := context.Background()
	f := newFlowQueue(t)
	fstate := f.fstateKey()
	const n = 40
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("t%02d", i)
		f.setLimits(t, names[i], contract.Limits{MaxLeased: 1})
		f.enqueue(t, names[i], 2)
	}
	first, err := f.Claim(ctx, claimReq(2*n))
	if err != nil || len(first) != n {
		t.Fatalf("first claim: %d, %v; want one item of each of %d tenants", len(first), err, n)
	}
	if got, err := f.Claim(ctx, claimReq(10)); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("every tenant at its cap: %v, %v; want ErrEmpty", byTenant(got), err)
	}
	// A tenant's mark is a field of its own; !m counts them.
	marks := func() map[string]int {
		t.Helper()
		all, err := f.client.HGetAll(ctx, fstate).Result()
		if err != nil {
			t.Fatal(err)
		}
		out, fields := map[string]int{}, 0
		for _, name := range names {
			if _, ok := all[fmt.Sprintf("h%d:%s", len(name), name)]; ok {
				out[name]++
				fields++
			}
		}
		if n, _ := strconv.Atoi(all["!m"]); n != fields {
			t.Fatalf("!m = %q with %d mark fields", all["!m"], fields)
		}
		return out
	}
	for name, c := range marks() {
		if c != 1 {
			t.Fatalf("tenant %s marked %d times after the claims; want once", name, c)
		}
	}
	// End the leases of every third tenant, listed backwards.
	var done []contract.Lease
	ended := map[string]bool{}
	for i := len(first) - 1; i >= 0; i-- {
		var k int
		if _, err := fmt.Sscanf(first[i].Item.Tenant, "t%02d", &k); err != nil {
			t.Fatal(err)
		}
		if k%3 == 0 {
			done = append(done, first[i])
			ended[first[i].Item.Tenant] = true
		}
	}
	if err := f.Complete(ctx, done...); err != nil {
		t.Fatal(err)
	}
	for name, c := range marks() {
		if want := map[bool]int{true: 0, false: 1}[ended[name]]; c != want {
			t.Fatalf("tenant %s marked %d times after the complete (lease ended: %v); want %d", name, c, ended[name], want)
		}
	}
	next, err := f.Claim(ctx, claimReq(2*n))
	if got := byTenant(next); err != nil || len(next) != len(ended) {
		t.Fatalf("claim after the complete: %v, %v; want one item of each of the %d freed tenants", got, err, len(ended))
	}
	for _, l := range next {
		if !ended[l.Item.Tenant] {
			t.Fatalf("claim after the complete served %s, whose lease did not end", l.Item.Tenant)
		}
	}
}

// TestFlowCapMarkSurvivesCompleteAndClaim: a CompleteAndClaim whose
// complete half ends a marked tenant's lease (dropping its mark) and
// whose claim half brings that tenant back to its cap leaves it marked,
// so the next lease of it to end still wakes the claimers.
func TestFlowCapMarkSurvivesCompleteAndClaim(t *testing.T) {
	ctx := context.Background()
	f := newFlowQueue(t)
	fstate := f.fstateKey()
	f.setLimits(t, "a", contract.Limits{MaxLeased: 1})
	f.enqueue(t, "a", 3)
	first, err := f.Claim(ctx, claimReq(5))
	if err != nil || len(first) != 1 {
		t.Fatalf("first claim: %v, %v; want one item of a", byTenant(first), err)
	}
	if got, err := f.Claim(ctx, claimReq(5)); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("a at its cap: %v, %v; want ErrEmpty", byTenant(got), err)
	}
	marked := func(when string, want bool) {
		t.Helper()
		all, err := f.client.HGetAll(ctx, fstate).Result()
		if err != nil {
			t.Fatal(err)
		}
		_, got := all["h1:a"]
		n, _ := strconv.Atoi(all["!m"])
		if got != want || n != map[bool]int{true: 1, false: 0}[want] {
			t.Fatalf("%s: a marked %v, !m %q; want marked %v", when, got, all["!m"], want)
		}
	}
	marked("after the claim that found a at its cap", true)
	next, err := f.CompleteAndClaim(ctx, first, claimReq(5))
	if err != nil || len(next) != 1 || next[0].Item.Tenant != "a" {
		t.Fatalf("CompleteAndClaim: %v, %v; want the next item of a", byTenant(next), err)
	}
	marked("after the complete half ended a's lease and the claim half leased it to its cap again", true)
	wake, stop := f.Subscribe("")
	defer stop()
	drain(wake)
	if err := f.Complete(ctx, next...); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, wake, "no wake after the marked tenant's lease ended")
	marked("after its lease ended", false)
}

// TestFlowCapMarksOfAnEarlierRelease: the one list of marks an earlier
// release kept is read as a mark of every tenant: the next lease to end
// wakes the claimers and drops it.
func TestFlowCapMarksOfAnEarlierRelease(t *testing.T) {
	ctx := context.Background()
	f := newFlowQueue(t)
	fstate := f.fstateKey()
	f.setLimits(t, "a", contract.Limits{MaxLeased: 5})
	f.enqueue(t, "b", 2)
	leases, err := f.Claim(ctx, claimReq(5))
	if err != nil || len(leases) != 2 {
		t.Fatalf("claim: %v, %v; want b's two items", byTenant(leases), err)
	}
	if err := f.client.HSet(ctx, fstate, "!h", "1:a").Err(); err != nil {
		t.Fatal(err)
	}
	wake, stop := f.Subscribe("")
	defer stop()
	drain(wake)
	if err := f.Complete(ctx, leases[0]); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, wake, "no wake after a lease ended with an earlier release's marks")
	if n, err := f.client.HExists(ctx, fstate, "!h").Result(); err != nil || n {
		t.Fatalf("the earlier release's marks are still there (%v, %v); want them dropped", n, err)
	}
}
