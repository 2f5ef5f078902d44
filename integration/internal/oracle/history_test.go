package oracle

import (
	"context"
	mbits "math/bits"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

// The history judge must be able to fail: each case below is a history a
// correct backing could not have recorded for what the workers did, and
// the judge must name what is wrong with it.

var hSpec = Spec{Tenant: "acme", ID: "item:1", N: 1}

func enq() contract.Event { return contract.Event{Kind: contract.EventEnqueued} }
func claimed(w string, attempt int, tok int64) contract.Event {
	return contract.Event{Kind: contract.EventClaimed, Worker: w, Attempt: attempt, Token: tok}
}
func failed(w string, attempt int) contract.Event {
	return contract.Event{Kind: contract.EventFailed, Worker: w, Attempt: attempt, Error: "boom"}
}
func completed(w string, attempt int) contract.Event {
	return contract.Event{Kind: contract.EventCompleted, Worker: w, Attempt: attempt}
}

// lease and ack are what a worker reports of a lease of attempt index
// attempts (the lease's Item.Attempts) under token tok.
func lease(w string, attempts int, tok int64) Event {
	return Event{Kind: "lease", Tenant: hSpec.Tenant, ID: hSpec.ID, Worker: w, Attempts: attempts, Token: tok}
}
func ack(w string, attempts int, tok int64) Event {
	return Event{Kind: "ack", Tenant: hSpec.Tenant, ID: hSpec.ID, Worker: w, Attempts: attempts, Token: tok}
}

func evidence(state contract.ItemState, bits int64, events []contract.Event, reports ...Event) ItemEvidence {
	ev := ItemEvidence{Spec: hSpec, Bits: bits, Executions: int64(mbits.OnesCount64(uint64(bits))), History: contract.History{Item: contract.Item{Tenant: hSpec.Tenant, ID: hSpec.ID, State: state}, Events: events}}
	for _, r := range reports {
		if r.Kind == "lease" {
			ev.Leases = append(ev.Leases, r)
		} else {
			ev.Acks = append(ev.Acks, r)
		}
	}
	return ev
}

func wantClean(t *testing.T, v historyVerdict) {
	t.Helper()
	if len(v.violations) != 0 {
		t.Fatalf("a history a correct backing records judged wrong: %q", v.violations)
	}
}

func wantHistoryViolation(t *testing.T, v historyVerdict, substr string) {
	t.Helper()
	for _, s := range v.violations {
		if strings.Contains(s, substr) {
			return
		}
	}
	t.Fatalf("no violation mentions %q; violations %q", substr, v.violations)
}

func TestHistoryJudgeCleanHistoriesPass(t *testing.T) {
	t.Run("one execution", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<0,
			[]contract.Event{enq(), claimed("w1", 1, 10), completed("w1", 1)},
			lease("w1", 0, 10), ack("w1", 0, 10)), nil)
		wantClean(t, v)
		if v.claims != 1 || v.seen != 1 || v.unseen != 0 {
			t.Fatalf("counted %+v", v)
		}
	})
	t.Run("a claim whose reply was lost, reaped, then done", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<1,
			[]contract.Event{enq(), claimed("w1", 1, 10), failed("", 1), claimed("w2", 2, 11), completed("w2", 2)},
			lease("w2", 1, 11), ack("w2", 1, 11)), nil)
		wantClean(t, v)
		if v.claims != 2 || v.seen != 1 || v.unseen != 1 {
			t.Fatalf("counted %+v", v)
		}
	})
	t.Run("a holder killed after its effect", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<0|1<<1,
			[]contract.Event{enq(), claimed("w1", 1, 10), failed("", 1), claimed("w2", 2, 11), completed("w2", 2)},
			lease("w1", 0, 10), ack("w1", 0, 10), lease("w2", 1, 11), ack("w2", 1, 11)), nil)
		wantClean(t, v)
	})
	t.Run("poison", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateDead, 0,
			[]contract.Event{enq(), claimed("w1", 1, 10), {Kind: contract.EventDead, Worker: "w1", Attempt: 1, Error: "poison"}},
			lease("w1", 0, 10)), nil)
		wantClean(t, v)
	})
	t.Run("a wait resumed", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<0,
			[]contract.Event{enq(), claimed("w1", 1, 10), {Kind: contract.EventWaiting, Worker: "w1", Signal: WaitSignal},
				{Kind: contract.EventSignalled, Signal: WaitSignal}, claimed("w2", 1, 12), completed("w2", 1)},
			lease("w1", 0, 10), lease("w2", 0, 12), ack("w2", 0, 12)), nil)
		wantClean(t, v)
	})
	t.Run("cancelled while leased", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCancelled, 0,
			[]contract.Event{enq(), claimed("w1", 1, 10), {Kind: contract.EventCancelled, Reason: "by the oracle"}},
			lease("w1", 0, 10)), nil)
		wantClean(t, v)
	})
}

func TestHistoryJudgeCatchesDoubledClaim(t *testing.T) {
	t.Run("two holders", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<0,
			[]contract.Event{enq(), claimed("w1", 1, 10), claimed("w2", 1, 11), completed("w2", 1)},
			lease("w1", 0, 10), lease("w2", 0, 11), ack("w2", 0, 11)), nil)
		wantHistoryViolation(t, v, "two holders")
	})
	t.Run("one token claimed twice", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<1,
			[]contract.Event{enq(), claimed("w1", 1, 10), failed("", 1), claimed("w1", 2, 10), completed("w1", 2)},
			lease("w1", 1, 10), ack("w1", 1, 10)), nil)
		wantHistoryViolation(t, v, "token 10 claimed twice")
	})
	t.Run("one lease reported to two workers", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<0,
			[]contract.Event{enq(), claimed("w1", 1, 10), completed("w1", 1)},
			lease("w1", 0, 10), lease("w2", 0, 10), ack("w1", 0, 10)), nil)
		wantHistoryViolation(t, v, "handed to a worker twice")
	})
	t.Run("an execution with no claim", func(t *testing.T) {
		// Two executions reached the store, one claim is recorded.
		v := checkHistory(evidence(contract.StateCompleted, 1<<0|1<<1,
			[]contract.Event{enq(), claimed("w2", 2, 11), completed("w2", 2)},
			lease("w2", 1, 11), ack("w2", 1, 11)), nil)
		wantHistoryViolation(t, v, "effect of attempt 1 is in the store")
		wantHistoryViolation(t, v, "attempt 2, but 0 failures")
	})
}

func TestHistoryJudgeCatchesMissingTerminal(t *testing.T) {
	t.Run("completed item without completed", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<0,
			[]contract.Event{enq(), claimed("w1", 1, 10)},
			lease("w1", 0, 10), ack("w1", 0, 10)), nil)
		wantHistoryViolation(t, v, "no terminal event")
	})
	t.Run("dead item ending completed", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateDead, 1<<0,
			[]contract.Event{enq(), claimed("w1", 1, 10), completed("w1", 1)},
			lease("w1", 0, 10), ack("w1", 0, 10)), nil)
		wantHistoryViolation(t, v, "ends completed (want dead)")
	})
	t.Run("two terminals", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<0,
			[]contract.Event{enq(), claimed("w1", 1, 10), completed("w1", 1), completed("w1", 1)},
			lease("w1", 0, 10), ack("w1", 0, 10)), nil)
		wantHistoryViolation(t, v, "after the terminal completed")
	})
	t.Run("no enqueued", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<0,
			[]contract.Event{claimed("w1", 1, 10), completed("w1", 1)},
			lease("w1", 0, 10), ack("w1", 0, 10)), nil)
		wantHistoryViolation(t, v, "does not begin with enqueued")
	})
}

func TestHistoryJudgeCatchesWrongToken(t *testing.T) {
	t.Run("lease token not claimed", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<0,
			[]contract.Event{enq(), claimed("w1", 1, 8), completed("w1", 1)},
			lease("w1", 0, 7), ack("w1", 0, 7)), nil)
		wantHistoryViolation(t, v, "held token 7 (attempt 1), but no claimed event records it")
		// The recorded claim is then one nobody reported, yet it was
		// completed by a worker and its effect is in the store.
		wantHistoryViolation(t, v, "rather than by expiring")
		wantHistoryViolation(t, v, "yet the effect of attempt 1 is in the store")
	})
	t.Run("claim names another worker", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<0,
			[]contract.Event{enq(), claimed("w2", 1, 7), completed("w2", 1)},
			lease("w1", 0, 7), ack("w1", 0, 7)), nil)
		wantHistoryViolation(t, v, `claimed event says attempt 1 by "w2", the lease says attempt 1 by "w1"`)
	})
	t.Run("completed by another worker than the holder", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<0,
			[]contract.Event{enq(), claimed("w1", 1, 7), completed("w2", 1)},
			lease("w1", 0, 7), ack("w1", 0, 7)), nil)
		wantHistoryViolation(t, v, `by "w2", but the lease was held by "w1"`)
	})
	t.Run("an ack with no lease report and no claim", func(t *testing.T) {
		v := checkHistory(evidence(contract.StateCompleted, 1<<0,
			[]contract.Event{enq(), claimed("w1", 1, 7), completed("w1", 1)},
			lease("w1", 0, 7), ack("w1", 0, 9)), nil)
		wantHistoryViolation(t, v, "held token 9")
	})
}

func TestHistoryJudgeAllowanceForgivesLostClaim(t *testing.T) {
	crash := time.Unix(1000, 0)
	allow := &Allowance{From: crash.Add(-time.Second), To: crash}
	l := lease("w1", 0, 10)
	l.Claimed, l.At = crash.Add(-100*time.Millisecond).UnixNano(), crash.Add(-100*time.Millisecond).UnixNano()
	a := ack("w1", 0, 10)
	a.Claimed, a.Started, a.At = l.Claimed, l.Claimed, crash.Add(-50*time.Millisecond).UnixNano()
	// The server lost the claim (and the effect's claim) with the crash;
	// the item ran again under a new claim of the same attempt.
	events := []contract.Event{enq(), claimed("w2", 1, 20), completed("w2", 1)}
	ev := evidence(contract.StateCompleted, 1<<0, events, l, a, lease("w2", 0, 20), ack("w2", 0, 20))
	if v := checkHistory(ev, nil); len(v.violations) == 0 {
		t.Fatal("a lost claim outside any allowance judged clean")
	}
	v := checkHistory(ev, allow)
	wantClean(t, v)
	if len(v.forgiven) == 0 {
		t.Fatal("the lost claim was not listed as forgiven")
	}
}

func TestHistoryJudgeCatchesDroppedEvents(t *testing.T) {
	ev := evidence(contract.StateCompleted, 1<<0, []contract.Event{enq(), claimed("w1", 1, 10), completed("w1", 1)}, lease("w1", 0, 10))
	ev.History.Dropped = 3
	wantHistoryViolation(t, checkHistory(ev, nil), "3 events dropped")
}

// historyScene is the in-memory scene with the suite's retention on and
// every lease a claim hands out reported, as the workers report them.
func historyScene(t *testing.T, k int) (*scene, *[]Event) {
	clock := contracttest.NewFakeClock(time.Time{})
	mem := memstore.New(clock, memstore.Settings{Policy: policy.Policy{MaxAttempts: 5, Jitter: policy.Fixed(0)}})
	sc := &scene{t: t, ctx: context.Background(), clock: clock, mem: mem,
		s: &Stores{State: mem, Queue: mem, Inspector: mem}, specs: Plan(k)}
	if ok, err := KeepHistory(sc.ctx, sc.s); err != nil || !ok {
		t.Fatalf("memstore keeps no history (kept %v, err %v)", ok, err)
	}
	if err := Seed(sc.ctx, sc.s, sc.specs); err != nil {
		t.Fatal(err)
	}
	return sc, new([]Event)
}

func reportLease(leases *[]Event, l contract.Lease) {
	*leases = append(*leases, Event{Kind: "lease", Tenant: l.Item.Tenant, ID: l.Item.ID, Attempts: l.Item.Attempts, Token: l.Token, Worker: l.Worker})
}

func judgeHistory(t *testing.T, sc *scene, leases []Event) HistoryReport {
	t.Helper()
	r, err := JudgeHistory(sc.ctx, sc.s, sc.specs, leases, sc.acks, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestJudgeHistoryOnMemory(t *testing.T) {
	t.Run("clean run", func(t *testing.T) {
		sc, leases := historyScene(t, 60)
		sc.work(func(l contract.Lease) bool { reportLease(leases, l); return true })
		r := judgeHistory(t, sc, *leases)
		if !r.OK() || r.Items != 60 || r.Claims != 60 || r.Unseen != 0 {
			t.Fatalf("clean run judged %s: %q", r.Summary(), r.Violations)
		}
		if base := sc.judge(nil); !base.OK() {
			t.Fatalf("the verdict on a kept load: %s: %q", base.Summary(), base.Violations)
		}
	})
	t.Run("a claim nobody saw, reaped", func(t *testing.T) {
		sc, leases := historyScene(t, 10)
		first := true
		sc.work(func(l contract.Lease) bool {
			if first && l.Item.ID == "item:0" {
				// The claim's reply is lost: nobody reports or runs it.
				first = false
				sc.clock.Advance(2 * time.Minute)
				if _, err := sc.mem.Reap(sc.ctx, ""); err != nil {
					t.Fatal(err)
				}
				sc.clock.Advance(time.Hour)
				return false
			}
			reportLease(leases, l)
			return true
		})
		r := judgeHistory(t, sc, *leases)
		if !r.OK() || r.Unseen != 1 {
			t.Fatalf("an unseen reaped claim judged %s: %q", r.Summary(), r.Violations)
		}
	})
	t.Run("a claim nobody reported, yet its effect is stored", func(t *testing.T) {
		sc, leases := historyScene(t, 10)
		sc.work(func(l contract.Lease) bool {
			if l.Item.ID != "item:3" {
				reportLease(leases, l)
				return true
			}
			// Worked and completed, though no worker said it held it.
			sc.execute(l, false)
			if err := sc.mem.Complete(sc.ctx, l); err != nil {
				t.Fatal(err)
			}
			return false
		})
		r := judgeHistory(t, sc, *leases)
		if r.OK() {
			t.Fatalf("an unreported claim that was worked and completed judged %s", r.Summary())
		}
		wantSubstr(t, r.Violations, "rather than by expiring")
	})
	t.Run("a lease reported with a wrong token", func(t *testing.T) {
		sc, leases := historyScene(t, 10)
		sc.work(func(l contract.Lease) bool {
			if l.Item.ID == "item:5" {
				l.Token += 1000
			}
			reportLease(leases, l)
			return true
		})
		wantSubstr(t, judgeHistory(t, sc, *leases).Violations, "no claimed event records it")
	})
	t.Run("a finished item not kept", func(t *testing.T) {
		sc, leases := historyScene(t, 10)
		sc.work(func(l contract.Lease) bool { reportLease(leases, l); return true })
		hk, _ := contract.AsHistoryKeeper(sc.s.Queue)
		if err := hk.SetRetention(sc.ctx, contract.DefaultQueue, contract.Retention{Age: time.Millisecond, Events: 10}); err != nil {
			t.Fatal(err)
		}
		sc.clock.Advance(time.Second)
		if _, err := hk.Prune(sc.ctx, contract.DefaultQueue); err != nil {
			t.Fatal(err)
		}
		wantSubstr(t, judgeHistory(t, sc, *leases).Violations, "no history")
	})
}

func wantSubstr(t *testing.T, vs []string, substr string) {
	t.Helper()
	for _, v := range vs {
		if strings.Contains(v, substr) {
			return
		}
	}
	t.Fatalf("no violation mentions %q; violations %q", substr, vs)
}

func TestHistoryJudgeLeavesCarriedBitsToTheVerdict(t *testing.T) {
	// One generation ran twice (the server lost its settle): 1+1 carried
	// into bit 1, which names no attempt. The history judge must not
	// read it as attempt 2's effect; Judge rules on the double run.
	ev := evidence(contract.StateCompleted, 1<<0+1<<0,
		[]contract.Event{enq(), claimed("w1", 1, 10), completed("w1", 1)},
		lease("w1", 0, 10), ack("w1", 0, 10))
	ev.Executions = 2
	wantClean(t, checkHistory(ev, nil))
	// With the bits exact, the same bit is attempt 2's effect, unclaimed.
	ev.Executions = 1
	wantHistoryViolation(t, checkHistory(ev, nil), "effect of attempt 2 is in the store")
}
