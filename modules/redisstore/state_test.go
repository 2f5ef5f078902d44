package redisstore

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// TestReplayWindowCoversTheBudget: a state write stops resending at half
// the replay window, so the window must leave every retry budget its
// whole MaxElapsed, and a minute for the timeouts of its last tries.
func TestReplayWindowCoversTheBudget(t *testing.T) {
	for _, b := range []RetryBudget{{}, {MaxElapsed: time.Second}, {MaxElapsed: 90 * time.Second}, {MaxElapsed: 10 * time.Minute}} {
		b = b.normalized()
		w := replayWindowFor(b)
		if w < replayWindow || w/2 < b.MaxElapsed+time.Minute {
			t.Errorf("budget %v: window %v; want at least %v, and half of it at least MaxElapsed + 1m", b, w, replayWindow)
		}
	}
	if w := replayWindowFor(RetryBudget{}.normalized()); w != replayWindow {
		t.Errorf("the default budget's window is %v, want %v", w, replayWindow)
	}
}

// TestPruneBatchIsTheContracts: the scripts delete at most
// contract.VersionPruneBatch versions per write; the bound is a constant
// of the Lua, held equal to the contract's here.
func TestPruneBatchIsTheContracts(t *testing.T) {
	src, err := scriptFS.ReadFile("scripts/state_versions_lib.lua")
	if err != nil {
		t.Fatal(err)
	}
	want := "\nlocal PRUNE_BATCH = " + strconv.Itoa(contract.VersionPruneBatch) + "\n"
	if !strings.Contains(string(src), want) {
		t.Errorf("state_versions_lib.lua does not define %q", strings.TrimSpace(want))
	}
}
