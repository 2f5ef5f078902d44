package oracle

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

// The oracle must be able to fail: each test breaks one promise by hand on
// the in-memory backing and checks the verdict names it.

type scene struct {
	t     *testing.T
	ctx   context.Context
	clock *contracttest.FakeClock
	mem   *memstore.Store
	s     *Stores
	specs []Spec
	acks  []Event
}

func newScene(t *testing.T, k int) *scene {
	clock := contracttest.NewFakeClock(time.Time{})
	mem := memstore.New(clock, memstore.Settings{Policy: policy.Policy{MaxAttempts: 5, Jitter: policy.Fixed(0)}})
	sc := &scene{t: t, ctx: context.Background(), clock: clock, mem: mem,
		s: &Stores{State: mem, Queue: mem, Inspector: mem}, specs: Plan(k)}
	if err := Seed(sc.ctx, sc.s, sc.specs); err != nil {
		t.Fatal(err)
	}
	return sc
}

// execute does what a worker's handler does for lease l, acknowledging
// when ack is set.
func (sc *scene) execute(l contract.Lease, ack bool) {
	sc.t.Helper()
	var n int
	for _, sp := range sc.specs {
		if sp.Tenant == l.Item.Tenant && sp.ID == l.Item.ID {
			n = sp.N
		}
	}
	d := Delta(n)
	fx := contract.Patch{Counters: contract.Counters{Iterations: 1, InputTokens: 1 << l.Item.Attempts, OutputTokens: d.OutputTokens, CostMicros: d.CostMicros}}
	if _, err := sc.mem.PatchRun(sc.ctx, l.Item.Tenant, FxID(l.Item.ID), fx); err != nil {
		sc.t.Fatal(err)
	}
	if _, err := sc.mem.PatchRun(sc.ctx, l.Item.Tenant, AcctID, contract.Patch{Counters: d}); err != nil {
		sc.t.Fatal(err)
	}
	if ack {
		sc.acks = append(sc.acks, Event{Kind: "ack", Tenant: l.Item.Tenant, ID: l.Item.ID, Attempts: l.Item.Attempts, Token: l.Token, Worker: l.Worker,
			At: sc.clock.Now().UnixNano(), Started: sc.clock.Now().UnixNano()})
	}
}

// work runs every item to its end the way a worker would, calling hook
// on each lease first (hook returns false to skip the normal handling).
func (sc *scene) work(hook func(l contract.Lease) bool) {
	sc.t.Helper()
	for {
		ls, err := sc.mem.Claim(sc.ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
		if errors.Is(err, contract.ErrEmpty) {
			return
		}
		if err != nil {
			sc.t.Fatal(err)
		}
		for _, l := range ls {
			if hook != nil && !hook(l) {
				continue
			}
			var p Payload
			_ = json.Unmarshal(l.Item.Payload, &p)
			if p.Poison {
				if _, err := sc.mem.Fail(sc.ctx, l, policy.Permanent(errors.New("poison"))); err != nil {
					sc.t.Fatal(err)
				}
				continue
			}
			sc.execute(l, true)
			if err := sc.mem.Complete(sc.ctx, l); err != nil {
				sc.t.Fatal(err)
			}
		}
	}
}

func (sc *scene) judge(allow *Allowance) Report {
	sc.t.Helper()
	r, err := Judge(sc.ctx, sc.s, sc.specs, sc.acks, allow, nil)
	if err != nil {
		sc.t.Fatal(err)
	}
	return r
}

func wantViolation(t *testing.T, r Report, substr string) {
	t.Helper()
	for _, v := range r.Violations {
		if strings.Contains(v, substr) {
			return
		}
	}
	t.Fatalf("no violation mentions %q; verdict %s, violations %q", substr, r.Summary(), r.Violations)
}

func TestJudgeCleanRunPasses(t *testing.T) {
	sc := newScene(t, 60)
	sc.work(nil)
	r := sc.judge(nil)
	if !r.OK() || !r.TallyExact || r.Completed+r.Dead != 60 || r.Reexecuted != 0 {
		t.Fatalf("clean run judged %s: %q", r.Summary(), r.Violations)
	}
}

func TestJudgeRedeliveryAfterReapIsAllowed(t *testing.T) {
	sc := newScene(t, 10)
	first := true
	sc.work(func(l contract.Lease) bool {
		if first && l.Item.ID == "item:0" {
			first = false
			// The holder applies the effect, then dies before Complete:
			// the lease expires and is reaped; the next holder runs it again.
			sc.execute(l, false)
			sc.clock.Advance(2 * time.Minute)
			if _, err := sc.mem.Reap(sc.ctx, ""); err != nil {
				t.Fatal(err)
			}
			sc.clock.Advance(time.Hour)
			return false
		}
		return true
	})
	r := sc.judge(nil)
	if !r.OK() || r.Reexecuted != 1 || r.Ambiguous != 1 {
		t.Fatalf("redelivery after a reap judged %s: %q", r.Summary(), r.Violations)
	}
}

func TestJudgeCatchesSameGenerationTwice(t *testing.T) {
	sc := newScene(t, 10)
	sc.work(func(l contract.Lease) bool {
		if l.Item.ID == "item:2" {
			sc.execute(l, true) // a second holder of the same claim
		}
		return true
	})
	wantViolation(t, sc.judge(nil), "done twice")
}

func TestJudgeCatchesLostItem(t *testing.T) {
	sc := newScene(t, 10)
	sc.work(func(l contract.Lease) bool {
		if l.Item.ID == "item:4" {
			// Completed without the effect ever reaching the store.
			if err := sc.mem.Complete(sc.ctx, l); err != nil {
				t.Fatal(err)
			}
			return false
		}
		return true
	})
	wantViolation(t, sc.judge(nil), "lost")
}

func TestJudgeCatchesStuckItem(t *testing.T) {
	sc := newScene(t, 10)
	sc.work(func(l contract.Lease) bool { return l.Item.ID != "item:6" })
	wantViolation(t, sc.judge(nil), "stuck")
}

func TestJudgeCatchesDoubleCountedTally(t *testing.T) {
	sc := newScene(t, 10)
	sc.work(nil)
	if _, err := sc.mem.PatchRun(sc.ctx, "noisy", AcctID, contract.Patch{Counters: Delta(0)}); err != nil {
		t.Fatal(err)
	}
	wantViolation(t, sc.judge(nil), "double-counted")
}

func TestJudgeCatchesLostAcknowledgedWrite(t *testing.T) {
	sc := newScene(t, 10)
	sc.work(nil)
	// An acknowledgement the store does not hold.
	sc.acks = append(sc.acks, Event{Kind: "ack", Tenant: "acme", ID: "item:1", At: sc.clock.Now().UnixNano()})
	wantViolation(t, sc.judge(nil), "missing from the store")
	// Inside an allowance it is forgiven and listed.
	r := sc.judge(&Allowance{From: sc.clock.Now().Add(-time.Second), To: sc.clock.Now()})
	if !r.OK() || len(r.Forgiven) == 0 {
		t.Fatalf("loss inside the allowance judged %s, forgiven %q", r.Summary(), r.Forgiven)
	}
}

// On a cluster an item's run and its queue are on different masters: a
// failover can lose the acknowledged effect and keep the completion.
// Inside the allowance that is a forgiven loss; outside it, a lost item.
func TestJudgeForgivesALostEffectWhoseCompletionWasKept(t *testing.T) {
	sc := newScene(t, 10)
	sc.work(func(l contract.Lease) bool {
		if l.Item.ID == "item:4" {
			if err := sc.mem.Complete(sc.ctx, l); err != nil {
				t.Fatal(err)
			}
			sc.acks = append(sc.acks, Event{Kind: "ack", Tenant: l.Item.Tenant, ID: l.Item.ID, Token: l.Token, At: sc.clock.Now().UnixNano()})
			return false
		}
		return true
	})
	wantViolation(t, sc.judge(nil), "lost")
	r := sc.judge(&Allowance{From: sc.clock.Now().Add(-time.Second), To: sc.clock.Now()})
	if !r.OK() || len(r.Forgiven) != 1 || !strings.Contains(r.Forgiven[0], "completion kept") {
		t.Fatalf("a lost effect inside the allowance judged %s, forgiven %q, violations %q", r.Summary(), r.Forgiven, r.Violations)
	}
	// Acknowledged before the window: a loss all the same.
	wantViolation(t, sc.judge(&Allowance{From: sc.clock.Now().Add(time.Second), To: sc.clock.Now().Add(2 * time.Second)}), "lost")
}

func TestJudgeCatchesPoisonNotDead(t *testing.T) {
	sc := newScene(t, PoisonEvery)
	sc.work(func(l contract.Lease) bool {
		var p Payload
		_ = json.Unmarshal(l.Item.Payload, &p)
		if p.Poison {
			if err := sc.mem.Complete(sc.ctx, l); err != nil {
				t.Fatal(err)
			}
			return false
		}
		return true
	})
	wantViolation(t, sc.judge(nil), "poison item ended completed")
}

func TestJudgeForgivesExecutionsAcrossTheCrash(t *testing.T) {
	sc := newScene(t, 10)
	sc.work(nil)
	crash := sc.clock.Now()
	// An execution of item 1 began before the crash; its first write was
	// lost with it, its second was retried after the restart and landed.
	if _, err := sc.mem.PatchRun(sc.ctx, "acme", AcctID, contract.Patch{Counters: Delta(1)}); err != nil {
		t.Fatal(err)
	}
	sc.acks = append(sc.acks, Event{Kind: "ack", Tenant: "acme", ID: "item:1", Started: crash.Add(-100 * time.Millisecond).UnixNano(), At: crash.Add(time.Second).UnixNano()})
	wantViolation(t, sc.judge(nil), "double-counted")
	r := sc.judge(&Allowance{From: crash.Add(-2 * time.Second), To: crash})
	if !r.OK() || len(r.Forgiven) != 4 { // the item, and three tally fields
		t.Fatalf("execution across the crash judged %s, forgiven %q, violations %q", r.Summary(), r.Forgiven, r.Violations)
	}
}

// A claim the server answered just before it died may reach its handler
// just after: the execution is in flight across the crash by its claim
// time. Two executions of one generation whose claims both came after the
// crash are a double claim, whatever the allowance.
func TestJudgeInFlightGoesByClaimTime(t *testing.T) {
	for _, tc := range []struct {
		name        string
		claimBefore bool
		want        string
	}{{"claimed before the crash", true, ""}, {"claimed after the crash", false, "done twice"}} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newScene(t, 10)
			var crash time.Time
			sc.work(func(l contract.Lease) bool {
				if l.Item.ID != "item:2" {
					return true
				}
				// The first holder's claim is lost with the crash; the
				// item is claimed again after the restart, same attempt,
				// and both holders run it.
				crash = sc.clock.Now()
				sc.execute(l, false)
				sc.execute(l, false)
				claimed := crash.Add(-50 * time.Microsecond)
				if !tc.claimBefore {
					claimed = crash.Add(50 * time.Microsecond)
				}
				sc.acks = append(sc.acks,
					Event{Kind: "ack", Tenant: l.Item.Tenant, ID: l.Item.ID, Claimed: claimed.UnixNano(),
						Started: crash.Add(60 * time.Microsecond).UnixNano(), At: crash.Add(300 * time.Millisecond).UnixNano()},
					Event{Kind: "ack", Tenant: l.Item.Tenant, ID: l.Item.ID, Claimed: crash.Add(time.Second).UnixNano(),
						Started: crash.Add(time.Second).UnixNano(), At: crash.Add(1050 * time.Millisecond).UnixNano()})
				if err := sc.mem.Complete(sc.ctx, l); err != nil {
					t.Fatal(err)
				}
				return false
			})
			r := sc.judge(&Allowance{From: crash.Add(-2 * time.Second), To: crash})
			if tc.want != "" {
				wantViolation(t, r, tc.want)
				return
			}
			if !r.OK() {
				t.Fatalf("execution claimed before the crash judged %s: %q", r.Summary(), r.Violations)
			}
		})
	}
}

// An item the store lost before it ran (gone, never executed) is an
// acknowledged enqueue the server lost only if that enqueue was
// acknowledged inside the allowance; outside it, or without its time,
// the item is lost.
func TestJudgeForgivesOnlyEnqueuesInTheWindow(t *testing.T) {
	crash := contracttest.FakeEpoch.Add(time.Hour)
	for _, c := range []struct {
		name    string
		ackedAt time.Time
		forgive bool
	}{
		{"acknowledged inside the window", crash.Add(-100 * time.Millisecond), true},
		{"acknowledged before the window", crash.Add(-time.Minute), false},
		{"acknowledgement not known", time.Time{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := newScene(t, 10)
			sc.work(func(l contract.Lease) bool {
				if l.Item.ID == "item:4" {
					// Gone without running, as if the server lost its enqueue.
					if err := sc.mem.Complete(sc.ctx, l); err != nil {
						t.Fatal(err)
					}
					return false
				}
				return true
			})
			allow := &Allowance{From: crash.Add(-time.Second), To: crash, Enqueued: map[string]time.Time{}}
			if !c.ackedAt.IsZero() {
				allow.Enqueued["noisy\x00item:4"] = c.ackedAt
			}
			r := sc.judge(allow)
			if c.forgive {
				if !r.OK() || r.LostEnqueues != 1 || len(r.Forgiven) != 1 || !strings.Contains(r.Forgiven[0], "acknowledged enqueue lost") {
					t.Fatalf("judged %s, forgiven %q, violations %q; want the one lost enqueue forgiven", r.Summary(), r.Forgiven, r.Violations)
				}
				return
			}
			wantViolation(t, r, "lost")
		})
	}
}
