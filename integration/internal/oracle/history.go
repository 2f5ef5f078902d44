package oracle

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// HistoryRetention is what the fault suite sets on the load's queue when
// the backing keeps history: every finished item kept for a day (longer
// than any test) and every event recorded, the cap far above what one
// item of the load can produce (at most MaxAttempts claims, each with
// two or three events).
var HistoryRetention = contract.Retention{Age: 24 * time.Hour, Events: contract.MaxItemEvents}

// KeepHistory turns HistoryRetention on for the load's queue when the
// queue keeps history, and reports whether it did.
func KeepHistory(ctx context.Context, s *Stores) (bool, error) {
	hk, ok := contract.AsHistoryKeeper(s.Queue)
	if !ok {
		return false, nil
	}
	if err := hk.SetRetention(ctx, contract.DefaultQueue, HistoryRetention); err != nil {
		return false, fmt.Errorf("set retention: %w", err)
	}
	return true, nil
}

// HistoryReport is the verdict on the items' recorded histories.
type HistoryReport struct {
	Items  int // histories read
	Events int // events in them
	Claims int // claimed events
	// Seen counts the claimed events whose lease a worker reported;
	// Unseen the others: claims whose reply never reached a worker (a
	// reply lost to a cut, a worker killed between the claim and its
	// report). Each of those must have ended by its lease expiring, with
	// no effect of its generation in the store.
	Seen, Unseen int
	Violations   []string
	Forgiven     []string
}

// OK reports whether every history agreed with the workers.
func (r HistoryReport) OK() bool { return len(r.Violations) == 0 }

// Summary is the one-line verdict.
func (r HistoryReport) Summary() string {
	v := "PASS"
	if !r.OK() {
		v = fmt.Sprintf("FAIL (%d violations)", len(r.Violations))
	}
	return fmt.Sprintf("histories=%d events=%d claims=%d seen=%d unseen=%d forgiven=%d verdict=%s",
		r.Items, r.Events, r.Claims, r.Seen, r.Unseen, len(r.Forgiven), v)
}

// JudgeHistory reads every planned item's History and checks it against
// what the workers reported: leases (every lease a Claim returned to a
// worker, Kind "lease") and acks (executions whose writes were
// acknowledged). The queue must have been kept under HistoryRetention
// from before the enqueue. See checkHistory for the rules.
func JudgeHistory(ctx context.Context, s *Stores, specs []Spec, leases, acks []Event, allow *Allowance) (HistoryReport, error) {
	var r HistoryReport
	hk, ok := contract.AsHistoryKeeper(s.Queue)
	if !ok {
		return r, fmt.Errorf("the %T queue keeps no history", s.Queue)
	}
	type key struct{ tenant, id string }
	byItem := map[key]*ItemEvidence{}
	for _, sp := range specs {
		byItem[key{sp.Tenant, sp.ID}] = &ItemEvidence{Spec: sp}
	}
	for _, e := range leases {
		if ev := byItem[key{e.Tenant, e.ID}]; ev != nil {
			ev.Leases = append(ev.Leases, e)
		}
	}
	for _, e := range acks {
		if ev := byItem[key{e.Tenant, e.ID}]; ev != nil {
			ev.Acks = append(ev.Acks, e)
		}
	}
	for _, sp := range specs {
		ev := byItem[key{sp.Tenant, sp.ID}]
		run, err := s.State.GetRun(ctx, sp.Tenant, FxID(sp.ID))
		if err != nil {
			return r, fmt.Errorf("read run of %q/%q: %w", sp.Tenant, sp.ID, err)
		}
		ev.Bits, ev.Executions = run.Counters.InputTokens, run.Counters.Iterations
		h, err := hk.History(ctx, sp.Key())
		switch {
		case errors.Is(err, contract.ErrNotFound):
			if at, ok := allow.lostEnqueue(sp.Tenant, sp.ID); ok {
				// The item's whole record, its history with it, lived only
				// on the server that lost it. It may still have run there
				// first: a handler's state write that failed with the
				// server was retried on its successor, so its run shows
				// the execution (which Judge rules on) though the item and
				// its events are gone.
				r.Forgiven = append(r.Forgiven, fmt.Sprintf("%q/%q: no history: its acknowledged enqueue was lost by the server (acknowledged %v before the crash; %d executions in its run)", sp.Tenant, sp.ID, allow.To.Sub(at).Round(time.Millisecond), run.Counters.Iterations))
				continue
			}
			r.Violations = append(r.Violations, fmt.Sprintf("%q/%q: no history (ErrNotFound), though the queue keeps every finished item for %v", sp.Tenant, sp.ID, HistoryRetention.Age))
			continue
		case err != nil:
			return r, fmt.Errorf("history of %q/%q: %w", sp.Tenant, sp.ID, err)
		}
		ev.History = h
		c := checkHistory(*ev, allow)
		r.Items++
		r.Events += len(h.Events)
		r.Claims += c.claims
		r.Seen += c.seen
		r.Unseen += c.unseen
		r.Violations = append(r.Violations, c.violations...)
		r.Forgiven = append(r.Forgiven, c.forgiven...)
	}
	sort.Strings(r.Violations)
	sort.Strings(r.Forgiven)
	return r, nil
}

// ItemEvidence is what is known of one item: its recorded history, what
// its run holds, and what the workers reported of it.
type ItemEvidence struct {
	Spec    Spec
	History contract.History
	// Bits is the item run's InputTokens: each execution that reached
	// the store added 2^attempts, so while the population count equals
	// Executions (the run's Iterations) each set bit is one claim
	// generation's effect. Otherwise one generation ran twice and the
	// bits carried (Judge's verdict, a violation or forgiven): they name
	// no generation, and the checks on them are left out.
	Bits       int64
	Executions int64
	Leases     []Event // leases of it a Claim returned to a worker
	Acks       []Event // its acknowledged executions
}

type historyVerdict struct {
	violations, forgiven []string
	claims, seen, unseen int
}

// checkHistory judges one item's history. What it holds the backing to:
//
//   - nothing dropped under the cap; the first event is the one enqueued,
//     and there is no other;
//   - claims and lease ends alternate: a claim while a lease is held is a
//     second holder; failed, dead, snoozed, waiting and completed end the
//     lease held, carry its attempt (failed, dead, completed) and its
//     worker (a failure or death by expiry names none); signalled and
//     timed_out end a wait;
//   - a claim's attempt is one more than the failures recorded before it,
//     and no token is claimed twice;
//   - exactly one terminal event (completed, dead, cancelled), the last,
//     matching the item's state; a live item has none;
//   - every lease a worker reported, and every acknowledged execution,
//     has its claimed event: same token, its attempt (the lease's
//     Attempts + 1) and worker; the same token is reported once;
//   - a claim no worker reported was never worked: its lease ended by
//     expiring (or by a cancel) and no effect of its generation is in the
//     store;
//   - every claim generation whose effect is in the store was claimed
//     (when the run's bits name the generations; see ItemEvidence.Bits).
//
// Within an allowance, a reported lease or an effect whose claim the
// server lost (claimed inside the loss window) is forgiven and listed.
func checkHistory(ev ItemEvidence, allow *Allowance) historyVerdict {
	var v historyVerdict
	name := fmt.Sprintf("%q/%q", ev.Spec.Tenant, ev.Spec.ID)
	violate := func(f string, a ...any) { v.violations = append(v.violations, name+": "+fmt.Sprintf(f, a...)) }
	forgive := func(f string, a ...any) { v.forgiven = append(v.forgiven, name+": "+fmt.Sprintf(f, a...)) }
	h := ev.History
	if h.Dropped != 0 {
		violate("%d events dropped under a cap of %d that the load cannot reach", h.Dropped, HistoryRetention.Events)
	}
	if len(h.Events) == 0 || h.Events[0].Kind != contract.EventEnqueued {
		first := "none"
		if len(h.Events) > 0 {
			first = string(h.Events[0].Kind)
		}
		violate("history does not begin with %s (first event: %s)", contract.EventEnqueued, first)
	}

	claims := map[int64]contract.Event{} // by token
	var holder *contract.Event           // the claim whose lease is held
	waiting := false
	failures := 0
	var terminal *contract.Event
	for i := range h.Events {
		e := h.Events[i]
		at := fmt.Sprintf("event %d (%s)", i+1, e.Kind)
		if terminal != nil && !(e.Kind == contract.EventRequeued && terminal.Kind == contract.EventDead) {
			violate("%s after the terminal %s", at, terminal.Kind)
		}
		switch e.Kind {
		case contract.EventEnqueued:
			if i != 0 {
				violate("%s: enqueued again within one life", at)
			}
		case contract.EventClaimed:
			v.claims++
			if holder != nil {
				violate("%s: claimed under token %d while the lease of token %d (%s, attempt %d) was still held: two holders", at, e.Token, holder.Token, holder.Worker, holder.Attempt)
			}
			if waiting {
				violate("%s: claimed while waiting for a signal", at)
			}
			if prev, dup := claims[e.Token]; dup {
				violate("%s: token %d claimed twice (by %s and by %s)", at, e.Token, prev.Worker, e.Worker)
			}
			if e.Attempt != failures+1 {
				violate("%s: attempt %d, but %d failures were recorded before it (want attempt %d)", at, e.Attempt, failures, failures+1)
			}
			claims[e.Token] = e
			holder = &h.Events[i]
		case contract.EventFailed, contract.EventDead, contract.EventCompleted:
			if holder == nil {
				violate("%s with no lease held", at)
				break
			}
			if e.Attempt != holder.Attempt {
				violate("%s: attempt %d, but the lease held is attempt %d", at, e.Attempt, holder.Attempt)
			}
			expiry := e.Worker == "" && e.Kind != contract.EventCompleted
			if !expiry && e.Worker != holder.Worker {
				violate("%s: by %q, but the lease was held by %q", at, e.Worker, holder.Worker)
			}
			if e.Kind == contract.EventFailed {
				failures++
			}
			holder = nil
		case contract.EventSnoozed, contract.EventWaiting:
			if holder == nil {
				violate("%s with no lease held", at)
				break
			}
			if e.Worker != holder.Worker {
				violate("%s: by %q, but the lease was held by %q", at, e.Worker, holder.Worker)
			}
			holder = nil
			waiting = e.Kind == contract.EventWaiting
		case contract.EventSignalled, contract.EventTimedOut:
			if !waiting {
				violate("%s while not waiting", at)
			}
			waiting = false
		case contract.EventCancelled:
			holder, waiting = nil, false
		case contract.EventRequeued:
			if terminal == nil || terminal.Kind != contract.EventDead {
				violate("%s: requeued but not from the dead letter", at)
			}
			terminal, failures = nil, 0
		default:
			violate("%s: unknown event kind", at)
		}
		switch e.Kind {
		case contract.EventCompleted, contract.EventDead, contract.EventCancelled:
			if terminal == nil {
				terminal = &h.Events[i]
			}
		}
	}
	want := map[contract.ItemState]contract.EventKind{
		contract.StateCompleted: contract.EventCompleted,
		contract.StateDead:      contract.EventDead,
		contract.StateCancelled: contract.EventCancelled,
	}[h.Item.State]
	switch {
	case want == "" && terminal != nil:
		violate("item is %s, but its history ends %s", h.Item.State, terminal.Kind)
	case want != "" && terminal == nil:
		violate("item is %s, but its history has no terminal event (want %s)", h.Item.State, want)
	case want != "" && terminal.Kind != want:
		violate("item is %s, but its history ends %s (want %s)", h.Item.State, terminal.Kind, want)
	}

	// What the workers held.
	reported := map[int64]Event{}
	check := func(e Event, what string) {
		if prev, dup := reported[e.Token]; dup {
			if what == "lease" && prev.Kind == "lease" {
				violate("token %d was handed to a worker twice (%s and %s)", e.Token, prev.Worker, e.Worker)
			}
			return
		}
		reported[e.Token] = e
		c, ok := claims[e.Token]
		switch {
		case !ok && allow.claimedBeforeCrash(e):
			forgive("%s %s held token %d (attempt %d), whose claim the server lost with the crash", what, e.Worker, e.Token, e.Attempts+1)
		case !ok:
			violate("%s %s held token %d (attempt %d), but no claimed event records it", what, e.Worker, e.Token, e.Attempts+1)
		case c.Attempt != e.Attempts+1 || c.Worker != e.Worker:
			violate("token %d: claimed event says attempt %d by %q, the %s says attempt %d by %q", e.Token, c.Attempt, c.Worker, what, e.Attempts+1, e.Worker)
		}
	}
	for _, e := range ev.Leases {
		check(e, "lease")
	}
	for _, e := range ev.Acks {
		check(e, "acknowledged execution")
	}
	bitsExact := int64(bits.OnesCount64(uint64(ev.Bits))) == ev.Executions
	// Claims no worker reported, and what they left behind.
	seenAttempts := map[int]bool{}
	for tok, c := range claims {
		if _, ok := reported[tok]; ok {
			seenAttempts[c.Attempt] = true
		}
	}
	for i, e := range h.Events {
		if e.Kind != contract.EventClaimed {
			continue
		}
		if _, ok := reported[e.Token]; ok {
			v.seen++
			continue
		}
		v.unseen++
		var end *contract.Event
		if i+1 < len(h.Events) {
			end = &h.Events[i+1]
		}
		switch {
		case end == nil:
			violate("token %d (attempt %d) claimed by %q, which no worker reported, and never ended", e.Token, e.Attempt, e.Worker)
		case end.Kind == contract.EventCancelled:
		case (end.Kind == contract.EventFailed || end.Kind == contract.EventDead) && end.Worker == "":
		default:
			violate("token %d (attempt %d) claimed by %q, which no worker reported, but ended %s by %q rather than by expiring", e.Token, e.Attempt, e.Worker, end.Kind, end.Worker)
		}
		if b := e.Attempt - 1; bitsExact && b >= 0 && b < 63 && !seenAttempts[e.Attempt] && ev.Bits&(1<<b) != 0 {
			violate("token %d (attempt %d) claimed by %q, which no worker reported, yet the effect of attempt %d is in the store", e.Token, e.Attempt, e.Worker, e.Attempt)
		}
	}
	// Every generation whose effect is in the store was claimed.
	claimedAttempts := map[int]bool{}
	for _, c := range claims {
		claimedAttempts[c.Attempt] = true
	}
	for b := range 63 {
		if !bitsExact || ev.Bits&(1<<b) == 0 || claimedAttempts[b+1] {
			continue
		}
		if inFlightAttempt(ev.Leases, b, allow) || inFlightAttempt(ev.Acks, b, allow) {
			forgive("the effect of attempt %d is in the store, its claim lost by the server with the crash", b+1)
			continue
		}
		violate("the effect of attempt %d is in the store, but no claimed event of attempt %d is recorded", b+1, b+1)
	}
	if len(v.violations) > 0 {
		// Each violation carries the history it was found in.
		tail := " [history: " + describeEvents(h.Events) + "]"
		for i := range v.violations {
			v.violations[i] += tail
		}
	}
	return v
}

// describeEvents renders events compactly: kind(worker,attempt,token).
func describeEvents(events []contract.Event) string {
	parts := make([]string, 0, len(events))
	for _, e := range events {
		var f []string
		if e.Worker != "" {
			f = append(f, e.Worker)
		}
		if e.Attempt != 0 {
			f = append(f, fmt.Sprintf("a%d", e.Attempt))
		}
		if e.Token != 0 {
			f = append(f, fmt.Sprintf("t%d", e.Token))
		}
		parts = append(parts, fmt.Sprintf("%s(%s)", e.Kind, strings.Join(f, ",")))
	}
	return strings.Join(parts, " ")
}

// inFlightAttempt reports whether a reported lease or execution of
// attempt index b (Attempts b) straddled the allowance's loss window.
func inFlightAttempt(reports []Event, b int, allow *Allowance) bool {
	for _, a := range reports {
		if a.Attempts == b && allow.inFlight(a) {
			return true
		}
	}
	return false
}

// claimedBeforeCrash reports whether e's claim was served before the
// crash of a server that loses acknowledged writes. Its claimed event can
// be lost even when the claim came a little before the allowance opened:
// replication is asynchronous, so a replica cut off at From may not yet
// have had the writes acknowledged just before.
func (a *Allowance) claimedBeforeCrash(e Event) bool {
	begin := e.Claimed
	if begin == 0 {
		begin = e.Started
	}
	return a != nil && begin <= a.To.UnixNano()
}
