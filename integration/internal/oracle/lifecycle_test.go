package oracle

import (
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// lifecycleScene plans the lifecycle load on memory: waits resumed by the
// hook's signals, the planned cancels applied before any work.
func lifecycleScene(t *testing.T, k int) (*scene, *Lifecycle) {
	sc := newScene(t, k)
	sc.specs = PlanLifecycle(k)
	lc := NewLifecycle()
	if err := lc.Cancel(sc.ctx, sc.s, sc.specs); err != nil {
		t.Fatal(err)
	}
	return sc, lc
}

// waitHook makes a waiting item's first run wait and signals it, as the
// worker and the parent's signaller do; signals says how many signals
// each wait gets acknowledged.
func waitHook(sc *scene, lc *Lifecycle, signals int) func(contract.Lease) bool {
	return func(l contract.Lease) bool {
		var sp Spec
		for _, s := range sc.specs {
			if s.Tenant == l.Item.Tenant && s.ID == l.Item.ID {
				sp = s
			}
		}
		if !sp.Waits || l.Item.Resumed != nil {
			return true
		}
		if err := sc.mem.Wait(sc.ctx, l, contract.WaitRequest{Signal: WaitSignal, Timeout: WaitTimeout}); err != nil {
			sc.t.Fatal(err)
		}
		if err := sc.mem.Signal(sc.ctx, l.Key(), WaitSignal, SignalPayload(sp.N)); err != nil {
			sc.t.Fatal(err)
		}
		lc.Resumed[sp.Tenant+"\x00"+sp.ID] += signals
		return false
	}
}

func TestJudgeLifecycleLoadPasses(t *testing.T) {
	sc, lc := lifecycleScene(t, 120)
	sc.work(waitHook(sc, lc, 1))
	r, err := Judge(sc.ctx, sc.s, sc.specs, sc.acks, nil, lc)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || r.Cancelled == 0 || r.Resumed == 0 {
		t.Fatalf("a clean lifecycle load judged %s: %q", r.Summary(), r.Violations)
	}
	// A cancelled item never ran and is neither lost nor completed.
	if r.Completed+r.Dead+r.Cancelled != 120 {
		t.Fatalf("completed %d + dead %d + cancelled %d != 120", r.Completed, r.Dead, r.Cancelled)
	}
}

func TestJudgeWaitResumedTwice(t *testing.T) {
	sc, lc := lifecycleScene(t, 60)
	sc.work(waitHook(sc, lc, 2))
	r, err := Judge(sc.ctx, sc.s, sc.specs, sc.acks, nil, lc)
	if err != nil {
		t.Fatal(err)
	}
	wantViolation(t, r, "signals resumed one wait")
}

func TestJudgeUnplannedCancel(t *testing.T) {
	sc, lc := lifecycleScene(t, 60)
	if _, err := sc.mem.Cancel(sc.ctx, sc.specs[0].Key(), "by accident"); err != nil {
		t.Fatal(err)
	}
	sc.work(waitHook(sc, lc, 1))
	r, err := Judge(sc.ctx, sc.s, sc.specs, sc.acks, nil, lc)
	if err != nil {
		t.Fatal(err)
	}
	wantViolation(t, r, "nobody cancelled it")
}

func TestJudgeCancelNotHonoured(t *testing.T) {
	sc, lc := lifecycleScene(t, 60)
	// The record says a cancel found an item live, but the item ran and
	// completed: the cancel was lost.
	var victim Spec
	for _, sp := range sc.specs {
		if !sp.Poison && !sp.Waits && !sp.Cancel {
			victim = sp
			break
		}
	}
	lc.Cancelled[victim.Tenant+"\x00"+victim.ID] = contract.StateQueued
	sc.work(waitHook(sc, lc, 1))
	r, err := Judge(sc.ctx, sc.s, sc.specs, sc.acks, nil, lc)
	if err != nil {
		t.Fatal(err)
	}
	wantViolation(t, r, "but ended completed")
}
