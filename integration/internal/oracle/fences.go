package oracle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
)

// The fenced writes: an execution of a worker with
// WorkerConfig.FencedRuns appends an entry naming itself (its worker and
// claim token) to its item's FenceRunID run with a versioned put through
// runner.Runs, so the put carries the lease's latest token as its fence.
// The run's Data is then the order in which the executions' writes
// landed: each put holds the version it read, so a put that landed
// holds every entry that landed before it.
//
// Tokens of one item grow from claim to claim, and a store refuses a
// write whose fence is below the run's. So the entries' claim tokens
// never go down (a stale execution, whose lease was taken back, cannot
// land a write after a newer one's), and an item that completed ends
// with the entry of the execution that completed it, its run fenced by
// that execution's token. A Zombie execution writes twice, its second
// entry marked final.

// Classes of the "fence" events.
const (
	FenceLanded  = "landed"  // the put landed; Stored is the run's fence after it
	FenceRefused = "refused" // a *contract.StaleFenceError; Stored is the newer fence
)

// FenceRunID is the run an item's executions write fenced.
func FenceRunID(itemID string) string { return "fence/" + itemID }

// fenceEntry is one landed write in a FenceRunID run.
type fenceEntry struct {
	Worker string `json:"w"`
	Claim  int64  `json:"c"`           // the claim token of the execution that wrote it
	Final  bool   `json:"f,omitempty"` // the second write of a Zombie execution
}

// writeFenced appends the execution's entry to its item's fenced run.
// final says it is the second write of a Zombie execution.
func (w *worker) writeFenced(ctx context.Context, l contract.Lease, final bool) error {
	runs := runner.Runs(ctx, w.state)
	id := FenceRunID(l.Item.ID)
	for {
		var entries []fenceEntry
		var version int64
		r, err := runs.GetRun(ctx, l.Item.Tenant, id)
		switch {
		case errors.Is(err, contract.ErrNotFound):
		case err != nil:
			return err
		default:
			if err := json.Unmarshal(r.Data, &entries); err != nil {
				return fmt.Errorf("fenced run %s holds %s: %w", id, r.Data, err)
			}
			version = r.Version
		}
		data, _ := json.Marshal(append(entries, fenceEntry{Worker: w.cfg.Worker, Claim: l.Token, Final: final}))
		fence, _ := runner.Fence(ctx)
		out, err := runs.PutRun(ctx, contract.Run{Tenant: l.Item.Tenant, ID: id, Version: version, Status: "fenced", Data: data})
		ev := Event{Kind: "fence", Tenant: l.Item.Tenant, ID: l.Item.ID, Attempts: l.Item.Attempts, Token: l.Token, Fence: fence, At: time.Now().UnixNano(), Worker: w.cfg.Worker, Final: final}
		var ce *contract.StateConflictError
		se, stale := errors.AsType[*contract.StaleFenceError](err)
		switch {
		case err == nil:
			ev.Class, ev.Stored = FenceLanded, out.Fence
			w.emit(ev)
			return nil
		case stale:
			ev.Class, ev.Fence, ev.Stored = FenceRefused, se.Fence, se.Stored
			w.emit(ev)
			w.count("fenced_writes_refused", 1)
			return err
		case errors.As(err, &ce):
			// Another execution wrote in between: read it again.
			continue
		default:
			return err
		}
	}
}

// FenceReport is the verdict on the fenced runs.
type FenceReport struct {
	Runs    int // fenced runs read
	Entries int // landed writes in them
	Landed  int // landed writes the workers reported
	Refused int // writes refused with a *contract.StaleFenceError
	// Completed counts the completed items whose run was last written by
	// the execution that completed them.
	Completed  int
	Violations []string
}

// Summary is the one-line verdict.
func (r FenceReport) Summary() string {
	v := "PASS"
	if len(r.Violations) > 0 {
		v = fmt.Sprintf("FAIL (%d violations)", len(r.Violations))
	}
	return fmt.Sprintf("runs=%d entries=%d landed=%d refused=%d completed=%d verdict=%s", r.Runs, r.Entries, r.Landed, r.Refused, r.Completed, v)
}

// JudgeFences reads every planned item's fenced run and history and
// checks them against the fenced writes the workers reported (see
// checkFences). The queue must keep history (KeepHistory).
func JudgeFences(ctx context.Context, s *Stores, specs []Spec, events []Event) (FenceReport, error) {
	var r FenceReport
	hk, ok := contract.AsHistoryKeeper(s.Queue)
	if !ok {
		return r, fmt.Errorf("the %T queue keeps no history: the fences are judged against the executions it records", s.Queue)
	}
	by := map[string][]Event{}
	for _, e := range events {
		by[e.Tenant+"\x00"+e.ID] = append(by[e.Tenant+"\x00"+e.ID], e)
		switch e.Class {
		case FenceLanded:
			r.Landed++
		case FenceRefused:
			r.Refused++
		}
	}
	for _, sp := range specs {
		h, err := hk.History(ctx, sp.Key())
		if err != nil {
			return r, fmt.Errorf("history of %q/%q: %w", sp.Tenant, sp.ID, err)
		}
		run, err := s.State.GetRun(ctx, sp.Tenant, FenceRunID(sp.ID))
		switch {
		case errors.Is(err, contract.ErrNotFound):
			run = nil
		case err != nil:
			return r, fmt.Errorf("read fenced run of %q/%q: %w", sp.Tenant, sp.ID, err)
		default:
			r.Runs++
		}
		v := checkFences(sp, h, run, by[sp.Tenant+"\x00"+sp.ID])
		r.Entries += v.entries
		if v.completed {
			r.Completed++
		}
		r.Violations = append(r.Violations, v.violations...)
	}
	sort.Strings(r.Violations)
	return r, nil
}

type fenceVerdict struct {
	violations []string
	entries    int
	completed  bool
}

// checkFences judges one item's fenced run (nil when there is none)
// against its history and the fenced writes reported of it:
//
//   - the entries' claim tokens never go down, and no execution's entry
//     is there twice (a Zombie execution's final entry comes after its
//     first): no write landed after a newer execution's;
//   - every landed write reported is there;
//   - a refused write was refused for a newer execution's fence: the
//     stored fence is above every token of the refused execution, at
//     least the claim token of a later claim of the item;
//   - the run's fence is no lower than the claim token of the last
//     entry's execution, and equals the fence of that execution's landed
//     write when the write was reported;
//   - a completed item's run exists, its last entry is the execution
//     that completed the item (the holder of the lease the completed
//     event ended), and the run's fence is that execution's.
func checkFences(sp Spec, h contract.History, run *contract.Run, events []Event) fenceVerdict {
	var v fenceVerdict
	name := fmt.Sprintf("%q/%q", sp.Tenant, sp.ID)
	violate := func(f string, a ...any) { v.violations = append(v.violations, name+": "+fmt.Sprintf(f, a...)) }
	var entries []fenceEntry
	if run != nil {
		if err := json.Unmarshal(run.Data, &entries); err != nil {
			violate("fenced run holds %s: %v", run.Data, err)
			return v
		}
	}
	v.entries = len(entries)
	seen := map[int64]bool{}
	type write struct {
		claim int64
		final bool
	}
	written := map[write]bool{}
	for i, e := range entries {
		if written[write{e.Claim, e.Final}] {
			violate("the write of the execution claimed under token %d (%s) landed twice", e.Claim, e.Worker)
		}
		if e.Final && !seen[e.Claim] {
			violate("the final write of the execution claimed under token %d (%s) landed without its first", e.Claim, e.Worker)
		}
		written[write{e.Claim, e.Final}] = true
		seen[e.Claim] = true
		if i > 0 && e.Claim < entries[i-1].Claim {
			violate("a stale write landed: entry %d is the execution claimed under token %d (%s), after a write of the newer execution claimed under %d (%s)",
				i+1, e.Claim, e.Worker, entries[i-1].Claim, entries[i-1].Worker)
		}
	}
	var claims []int64
	for _, e := range h.Events {
		if e.Kind == contract.EventClaimed {
			claims = append(claims, e.Token)
		}
	}
	landed := map[int64]Event{}
	for _, e := range events {
		switch e.Class {
		case FenceLanded:
			landed[e.Token] = e
			if !seen[e.Token] {
				violate("the landed write of the execution claimed under token %d (%s) is not in the run: undone", e.Token, e.Worker)
			}
		case FenceRefused:
			later := false
			for _, c := range claims {
				later = later || (c > e.Token && e.Stored >= c)
			}
			if e.Stored <= e.Fence || !later {
				violate("the write of the execution claimed under token %d (%s) with fence %d was refused for the stored fence %d, which is no later claim's (claims %v)",
					e.Token, e.Worker, e.Fence, e.Stored, claims)
			}
		}
	}
	if len(entries) > 0 {
		last := entries[len(entries)-1]
		if run.Fence < last.Claim {
			violate("the run's fence %d is below the claim token %d of the execution that wrote it last (%s)", run.Fence, last.Claim, last.Worker)
		}
		if e, ok := landed[last.Claim]; ok && run.Fence != e.Stored {
			violate("the run's fence is %d, but the last write, by the execution claimed under token %d (%s), left %d", run.Fence, last.Claim, last.Worker, e.Stored)
		}
	}
	if h.Item.State != contract.StateCompleted {
		return v
	}
	var holder *contract.Event
	var winner int64
	for i, e := range h.Events {
		switch e.Kind {
		case contract.EventClaimed:
			holder = &h.Events[i]
		case contract.EventCompleted:
			if holder != nil {
				winner = holder.Token
			}
		}
	}
	switch {
	case winner == 0:
		violate("completed, but its history names no claim the completion ended [history: %s]", describeEvents(h.Events))
	case len(entries) == 0:
		violate("completed by the execution claimed under token %d, but its fenced run holds no write", winner)
	case entries[len(entries)-1].Claim != winner:
		last := entries[len(entries)-1]
		violate("completed by the execution claimed under token %d, but its run was last written by the one claimed under %d (%s)", winner, last.Claim, last.Worker)
	case run.Fence < winner:
		violate("completed by the execution claimed under token %d, but its run's fence is %d", winner, run.Fence)
	default:
		v.completed = true
	}
	return v
}
