package oracle

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// The fence judge must be able to fail: each case but the first is what
// a store that let a stale execution write would leave, and the judge
// must name it.

func fencedRun(fence int64, entries ...fenceEntry) *contract.Run {
	data, _ := json.Marshal(entries)
	return &contract.Run{Tenant: hSpec.Tenant, ID: FenceRunID(hSpec.ID), Data: data, Fence: fence}
}

func fenceEvent(class, w string, claim, fence, stored int64) Event {
	return Event{Kind: "fence", Class: class, Worker: w, Tenant: hSpec.Tenant, ID: hSpec.ID, Token: claim, Fence: fence, Stored: stored}
}

// w0 claimed under token 3 and wrote, its lease expired (a stall), w1
// claimed under 7, wrote after a heartbeat (fence 8) and completed.
func reclaimedHistory() contract.History {
	return contract.History{
		Item:   contract.Item{Tenant: hSpec.Tenant, ID: hSpec.ID, State: contract.StateCompleted},
		Events: []contract.Event{enq(), claimed("w0", 1, 3), {Kind: contract.EventFailed, Attempt: 1}, claimed("w1", 2, 7), completed("w1", 2)},
	}
}

func TestCheckFences(t *testing.T) {
	w0, w1 := fenceEntry{Worker: "w0", Claim: 3}, fenceEntry{Worker: "w1", Claim: 7}
	w0f, w1f := fenceEntry{Worker: "w0", Claim: 3, Final: true}, fenceEntry{Worker: "w1", Claim: 7, Final: true}
	for _, tc := range []struct {
		name   string
		run    *contract.Run
		events []Event
		want   string // in a violation; "" for none
	}{
		{"the winner wrote last, the stale write refused", fencedRun(8, w0, w1),
			[]Event{fenceEvent(FenceLanded, "w0", 3, 3, 3), fenceEvent(FenceLanded, "w1", 7, 8, 8), fenceEvent(FenceRefused, "w0", 3, 4, 8)}, ""},
		{"a stale write landed after the winner's", fencedRun(8, w0, w1, w0),
			[]Event{fenceEvent(FenceLanded, "w1", 7, 8, 8), fenceEvent(FenceLanded, "w0", 3, 4, 8)}, "a stale write landed"},
		{"the stale write is the last", fencedRun(8, w1, fenceEntry{Worker: "w0", Claim: 3}),
			[]Event{fenceEvent(FenceLanded, "w1", 7, 8, 8)}, "last written by the one claimed under 3"},
		{"the run's fence is the stale execution's", fencedRun(4, w0, w1),
			[]Event{fenceEvent(FenceLanded, "w1", 7, 7, 7)}, "the run's fence 4 is below"},
		{"the winner's landed write undone", fencedRun(3, w0),
			[]Event{fenceEvent(FenceLanded, "w0", 3, 3, 3), fenceEvent(FenceLanded, "w1", 7, 7, 7)}, "undone"},
		{"a refusal for no newer claim", fencedRun(8, w0, w1),
			[]Event{fenceEvent(FenceLanded, "w1", 7, 8, 8), fenceEvent(FenceRefused, "w1", 7, 6, 8)}, "which is no later claim's"},
		{"the fence left by the last write differs", fencedRun(9, w0, w1),
			[]Event{fenceEvent(FenceLanded, "w1", 7, 8, 8)}, "left 8"},
		{"completed with no write", nil, nil, "holds no write"},
		{"zombie: the winner wrote twice, the stale final write refused", fencedRun(8, w0, w1, w1f),
			[]Event{fenceEvent(FenceLanded, "w0", 3, 3, 3), fenceEvent(FenceLanded, "w1", 7, 8, 8), fenceEvent(FenceLanded, "w1", 7, 8, 8), fenceEvent(FenceRefused, "w0", 3, 3, 8)}, ""},
		{"zombie: the stale final write landed after the winner's", fencedRun(8, w0, w1, w1f, w0f),
			[]Event{fenceEvent(FenceLanded, "w1", 7, 8, 8), fenceEvent(FenceLanded, "w1", 7, 8, 8)}, "a stale write landed"},
		{"zombie: a final write twice", fencedRun(8, w0, w1, w1f, w1f),
			[]Event{fenceEvent(FenceLanded, "w1", 7, 8, 8)}, "landed twice"},
		{"zombie: a final write without its first", fencedRun(8, w0, w1f),
			[]Event{fenceEvent(FenceLanded, "w1", 7, 8, 8)}, "without its first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := checkFences(hSpec, reclaimedHistory(), tc.run, tc.events)
			got := strings.Join(v.violations, "\n")
			switch {
			case tc.want == "" && got != "":
				t.Errorf("violations:\n%s\nwant none", got)
			case tc.want == "" && !v.completed:
				t.Error("a completed item whose winner wrote last is not counted")
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("violations:\n%s\nwant one saying %q", got, tc.want)
			}
		})
	}
}
