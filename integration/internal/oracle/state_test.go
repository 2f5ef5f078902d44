package oracle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
)

// stateScene runs the state load of every planned item, once each, with
// the worker's own functions over the in-memory backing, and returns
// what JudgeState needs.
type stateScene struct {
	ctx    context.Context
	s      *Stores
	specs  []Spec
	acks   []Event
	events []Event
}

func newStateScene(t *testing.T) *stateScene {
	t.Helper()
	mem := memstore.New(contracttest.NewFakeClock(time.Time{}), memstore.Settings{})
	sc := &stateScene{ctx: context.Background(), s: &Stores{State: mem, Queue: mem, Inspector: mem}, specs: Plan(60)}
	if err := SeedRuns(sc.ctx, sc.s, sc.specs); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := &worker{cfg: WorkerConfig{Worker: "w", StateLoad: true}, state: mem, out: bufio.NewWriter(&out), counts: map[string]int64{}}
	for i, sp := range sc.specs {
		l := contract.Lease{Item: contract.Item{Tenant: sp.Tenant, ID: sp.ID}, Token: int64(100 + i)}
		mark := Mark(sp.ID, l.Token)
		if err := w.appendMark(sc.ctx, l, LogID(sp.N%Logs), mark); err != nil {
			t.Fatal(err)
		}
		if err := w.scratch(sc.ctx, l, mark); err != nil {
			t.Fatal(err)
		}
		took, err := w.handOn(sc.ctx, l, mark)
		if err != nil {
			t.Fatal(err)
		}
		sc.acks = append(sc.acks, Event{Kind: "ack", Tenant: sp.Tenant, ID: sp.ID, Mark: mark, Took: took})
	}
	for line := range strings.Lines(out.String()) {
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		sc.events = append(sc.events, e)
	}
	return sc
}

func (sc *stateScene) judge(t *testing.T) StateReport {
	t.Helper()
	rep, err := JudgeState(sc.ctx, sc.s, sc.specs, sc.acks, sc.events)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func wantStateViolation(t *testing.T, rep StateReport, substr string) {
	t.Helper()
	for _, v := range rep.Violations {
		if strings.Contains(v, substr) {
			return
		}
	}
	t.Errorf("no violation mentions %q; got %v", substr, rep.Violations)
}

func TestJudgeStateIntact(t *testing.T) {
	sc := newStateScene(t)
	rep := sc.judge(t)
	if len(rep.Violations) > 0 || rep.Appends != len(sc.specs) || rep.Handoffs != len(sc.specs) {
		t.Fatalf("an intact state load: %+v; want no violations, %d appends and hand-ons", rep, len(sc.specs))
	}
}

func TestJudgeStateCatches(t *testing.T) {
	put := func(t *testing.T, sc *stateScene, tenant, id string, data any) {
		t.Helper()
		r, err := sc.s.State.GetRun(sc.ctx, tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(data)
		if _, err := sc.s.State.PutRun(sc.ctx, contract.Run{Tenant: tenant, ID: id, Version: r.Version, Data: b}); err != nil {
			t.Fatal(err)
		}
	}
	marks := func(t *testing.T, sc *stateScene, tenant, id string) []string {
		t.Helper()
		r, err := sc.s.State.GetRun(sc.ctx, tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		var m []string
		_ = json.Unmarshal(r.Data, &m)
		return m
	}
	first := func(sc *stateScene) (Spec, Event) { return sc.specs[0], sc.acks[0] }
	for _, tc := range []struct {
		name, want string
		breakIt    func(t *testing.T, sc *stateScene)
	}{
		{"an acknowledged append undone", "lacks 1 acknowledged appends", func(t *testing.T, sc *stateScene) {
			sp, a := first(sc)
			log := LogID(sp.N % Logs)
			var kept []string
			for _, m := range marks(t, sc, sp.Tenant, log) {
				if m != a.Mark {
					kept = append(kept, m)
				}
			}
			put(t, sc, sp.Tenant, log, kept)
		}},
		{"an append applied twice", "2 times", func(t *testing.T, sc *stateScene) {
			sp, a := first(sc)
			log := LogID(sp.N % Logs)
			put(t, sc, sp.Tenant, log, append(marks(t, sc, sp.Tenant, log), a.Mark))
		}},
		{"a slot taken and never given back", `the slot of "noisy" is gone`, func(t *testing.T, sc *stateScene) {
			if err := sc.s.State.DeleteRun(sc.ctx, "noisy", SlotID); err != nil {
				t.Fatal(err)
			}
		}},
		{"a slot held by nobody acknowledged", "never acknowledged creating it", func(t *testing.T, sc *stateScene) {
			put(t, sc, "noisy", SlotID, "item:0@1")
		}},
		{"an execution's own run left behind", "is still there", func(t *testing.T, sc *stateScene) {
			_, a := first(sc)
			if _, err := sc.s.State.PutRun(sc.ctx, contract.Run{Tenant: a.Tenant, ID: ScratchID(a.Mark)}); err != nil {
				t.Fatal(err)
			}
		}},
		{"a false conflict seen by a worker", FalseConflict, func(t *testing.T, sc *stateScene) {
			sc.events = append(sc.events, Event{Kind: "state", Tenant: "acme", ID: "item:1", Class: FalseConflict, Where: "log:1"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newStateScene(t)
			tc.breakIt(t, sc)
			wantStateViolation(t, sc.judge(t), tc.want)
		})
	}
	t.Run("a slot lost after an unanswered take is forgiven", func(t *testing.T) {
		sc := newStateScene(t)
		if err := sc.s.State.DeleteRun(sc.ctx, "acme", SlotID); err != nil {
			t.Fatal(err)
		}
		sc.events = append(sc.events, Event{Kind: "state", Tenant: "acme", ID: "item:1", Class: UnknownTake})
		if rep := sc.judge(t); len(rep.Violations) > 0 || len(rep.Forgiven) != 1 {
			t.Fatalf("got %+v; want the lost slot forgiven and nothing else", rep)
		}
	})
	t.Run("a foreign slot after an unanswered create is forgiven", func(t *testing.T) {
		sc := newStateScene(t)
		sc.events = append(sc.events,
			Event{Kind: "state", Tenant: "acme", ID: "item:1", Class: UnknownGive},
			Event{Kind: "state", Tenant: "acme", ID: "item:3", Class: ForeignSlot, Where: "held by item:3@1, found created holding item:1@1"})
		if rep := sc.judge(t); len(rep.Violations) > 0 || len(rep.Forgiven) != 1 {
			t.Fatalf("got %+v; want the foreign slot forgiven and nothing else", rep)
		}
		sc.events = append(sc.events, Event{Kind: "state", Tenant: "noisy", ID: "item:0", Class: ForeignSlot, Where: "held by item:0@1, found created holding item:2@1"})
		wantStateViolation(t, sc.judge(t), ForeignSlot)
	})
}
