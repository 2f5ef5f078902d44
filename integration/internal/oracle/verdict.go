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

// Allowance relaxes the verdict for a fault that is allowed to lose
// acknowledged writes: writes acknowledged in [From, To] (To is the
// crash) may have vanished from the server, with what follows from it: an
// item in flight across the crash done again under the same claim
// generation, a tally short by those executions. Anything else is held to
// the strict rules.
type Allowance struct {
	From, To time.Time
	// Enqueued, when set, holds when the enqueue of each item (by
	// tenant+"\x00"+id) was acknowledged: an item the store no longer
	// has that never ran, acknowledged inside the window, is an enqueue
	// the server lost.
	Enqueued map[string]time.Time
}

// lostEnqueue reports whether the enqueue of item tenant/id was
// acknowledged inside the window.
func (a *Allowance) lostEnqueue(tenant, id string) (time.Time, bool) {
	if a == nil {
		return time.Time{}, false
	}
	at, ok := a.Enqueued[tenant+"\x00"+id]
	return at, ok && a.covers(at.UnixNano())
}

func (a *Allowance) covers(at int64) bool {
	return a != nil && at >= a.From.UnixNano() && at <= a.To.UnixNano()
}

// coversAll reports whether there are acknowledgements and the window
// covers every one.
func (a *Allowance) coversAll(ats []int64) bool {
	if a == nil || len(ats) == 0 {
		return false
	}
	for _, at := range ats {
		if !a.covers(at) {
			return false
		}
	}
	return true
}

// inFlight reports whether execution e straddled the loss window: its
// claim was served before the crash (it returned by To; a handler may
// begin a moment later, so its start only stands in when the claim time
// is unknown) and its writes were not safely old.
func (a *Allowance) inFlight(e Event) bool {
	begin := e.Claimed
	if begin == 0 {
		begin = e.Started
	}
	return a != nil && begin <= a.To.UnixNano() && e.At >= a.From.UnixNano()
}

// describeAcks lists acknowledged executions for a violation: worker,
// attempt, token, and when the handler began and was acknowledged
// (relative to the crash when there is an allowance).
func describeAcks(acks []Event, allow *Allowance) string {
	if len(acks) == 0 {
		return "none"
	}
	when := func(ns int64) string {
		if allow == nil {
			return time.Unix(0, ns).UTC().Format("15:04:05.000000")
		}
		return fmt.Sprintf("%+v", time.Unix(0, ns).Sub(allow.To).Round(time.Microsecond))
	}
	var parts []string
	for _, a := range acks {
		claimed := "unknown"
		if a.Claimed != 0 {
			claimed = when(a.Claimed)
		}
		parts = append(parts, fmt.Sprintf("%s attempt %d token %d claimed %s began %s acked %s", a.Worker, a.Attempts, a.Token, claimed, when(a.Started), when(a.At)))
	}
	return strings.Join(parts, "; ")
}

// Report is the oracle's verdict on one run of the load.
type Report struct {
	Items      int
	Completed  int
	Dead       int // poison items in the dead letter, as planned
	DeadOther  int // other items that exhausted their attempts under the fault
	Executions int64
	Reexecuted int // items executed more than once (each after a lost lease)
	Ambiguous  int64
	Acked      int
	Violations []string
	Forgiven   []string // losses inside the allowance, listed
	TallyExact bool     // every tally equals the sum of the item runs exactly
	MaxLossAge time.Duration
	// LostEnqueues counts the acknowledged enqueues the allowance forgave
	// (items the server lost before they ran).
	LostEnqueues int
	// Cancelled counts the items cancelled as planned; Resumed the waits
	// resumed by exactly one signal (lifecycle load).
	Cancelled int
	Resumed   int
}

// OK reports whether nothing was lost, done twice or double-counted.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// Summary is the one-line verdict.
func (r Report) Summary() string {
	v := "PASS"
	if !r.OK() {
		v = fmt.Sprintf("FAIL (%d violations)", len(r.Violations))
	}
	return fmt.Sprintf("items=%d completed=%d dead(poison)=%d dead(other)=%d cancelled=%d resumed=%d executions=%d reexecuted=%d ambiguous=%d forgiven=%d tally_exact=%v lost=%d verdict=%s",
		r.Items, r.Completed, r.Dead, r.DeadOther, r.Cancelled, r.Resumed, r.Executions, r.Reexecuted, r.Ambiguous, len(r.Forgiven), r.TallyExact, len(r.Violations), v)
}

// WaitDrained polls the queue until no item is queued, leased or waiting
// (only dead letters and cancelled items remain), or the deadline passes. Errors while the server is away
// are waited out.
func WaitDrained(ctx context.Context, in contract.Inspector, deadline time.Duration) error {
	end := time.Now().Add(deadline)
	var last string
	for {
		ts, err := in.Tenants(ctx, contract.DefaultQueue)
		if err == nil {
			var open int64
			var parts []string
			for _, s := range ts {
				if n := s.Ready + s.Later + s.Leased + s.Waiting; n > 0 {
					open += n
					parts = append(parts, fmt.Sprintf("%s:%d/%d/%d", s.Tenant, s.Ready, s.Later, s.Leased))
				}
			}
			if open == 0 {
				return nil
			}
			last = strings.Join(parts, " ")
		} else {
			last = err.Error()
		}
		if time.Now().After(end) {
			return fmt.Errorf("queue not drained after %v (ready/later/leased per tenant: %s)", deadline, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Judge reads the store and checks the load against what the workers
// acknowledged.
//
// lc, when the load mixed in waits and cancels, says what the parent did:
// an item whose cancel found it live must end cancelled (having run
// never, or once per claim generation, like any item), a cancelled item
// is neither lost nor completed, and every wait must have been resumed by
// exactly one signal.
func Judge(ctx context.Context, s *Stores, specs []Spec, acks []Event, allow *Allowance, lc *Lifecycle) (Report, error) {
	r := Report{Items: len(specs), TallyExact: true}
	type key struct{ tenant, id string }
	ackTimes := map[key][]int64{}
	ackEvents := map[key][]Event{}
	flight := map[key]int64{} // executions in flight across the crash
	for _, a := range acks {
		k := key{a.Tenant, a.ID}
		ackTimes[k] = append(ackTimes[k], a.At)
		ackEvents[k] = append(ackEvents[k], a)
		if allow.inFlight(a) {
			flight[k]++
		}
	}
	r.Acked = len(ackTimes)
	violate := func(f string, a ...any) { r.Violations = append(r.Violations, fmt.Sprintf(f, a...)) }
	forgive := func(f string, a ...any) { r.Forgiven = append(r.Forgiven, fmt.Sprintf(f, a...)) }
	inWindow := func(k key) bool { return flight[k] > 0 }
	// slack is what executions in flight across a crash may add to a
	// tally beyond the stored item runs: their first write (the item's
	// run) lost with the crash, their second retried and landed after it.
	type sums struct{ lo, hi, fx, slack contract.Counters }
	tally := map[string]*sums{}
	for _, t := range Tenants {
		tally[t] = &sums{}
	}
	for _, sp := range specs {
		k := key{sp.Tenant, sp.ID}
		info, err := s.Inspector.Item(ctx, sp.Key())
		state := "completed"
		switch {
		case errors.Is(err, contract.ErrNotFound):
		case err != nil:
			return r, fmt.Errorf("inspect %q/%q: %w", sp.Tenant, sp.ID, err)
		default:
			state = string(info.Item.State)
		}
		run, err := s.State.GetRun(ctx, sp.Tenant, FxID(sp.ID))
		if err != nil {
			return r, fmt.Errorf("read run of %q/%q: %w", sp.Tenant, sp.ID, err)
		}
		c := run.Counters
		x := c.Iterations
		if at, ok := allow.lostEnqueue(sp.Tenant, sp.ID); ok && state == "completed" && x == 0 {
			forgive("%q/%q: acknowledged enqueue lost by the server (acknowledged %v before the crash); the item never ran", sp.Tenant, sp.ID, allow.To.Sub(at).Round(time.Millisecond))
			r.LostEnqueues++
			continue
		}
		r.Executions += x
		acked := int64(len(ackTimes[k]))
		d := Delta(sp.N)
		cancelledWhile, wasCancelled := lc.cancelled(sp)
		if sp.Waits {
			switch n := lc.resumed(sp); {
			case n == 1:
				r.Resumed++
			case n > 1 && inWindow(k):
				forgive("%q/%q: %d signals resumed its wait, after the server lost the first resume", sp.Tenant, sp.ID, n)
			case n > 1:
				violate("%q/%q: %d signals resumed one wait (a signal is delivered once)", sp.Tenant, sp.ID, n)
			case state == "completed" || state == string(contract.StateDead):
				violate("%q/%q: ended %s without a signal resuming its wait", sp.Tenant, sp.ID, state)
			}
		}
		switch {
		case wasCancelled:
			if state == string(contract.StateCancelled) {
				r.Cancelled++
			} else {
				violate("%q/%q: cancelled while %s, but ended %s", sp.Tenant, sp.ID, cancelledWhile, state)
			}
		case state == string(contract.StateCancelled):
			violate("%q/%q: ended cancelled, but nobody cancelled it", sp.Tenant, sp.ID)
		case sp.Poison:
			if state != string(contract.StateDead) {
				violate("%q/%q: poison item ended %s, want dead", sp.Tenant, sp.ID, state)
			} else {
				r.Dead++
			}
			if x != 0 {
				violate("%q/%q: poison item has %d executions", sp.Tenant, sp.ID, x)
			}
			continue
		case state == string(contract.StateDead):
			r.DeadOther++
		case state == "completed":
			r.Completed++
			// On a cluster the item's run and its queue live on different
			// masters: a failover can lose an acknowledged effect and keep
			// the completion that followed it. Inside the allowance that
			// is the loss forgiven below; outside it, a loss.
			if x == 0 && !allow.coversAll(ackTimes[k]) {
				violate("%q/%q: completed but no execution reached the store (lost)", sp.Tenant, sp.ID)
			}
		default:
			violate("%q/%q: still %s at the end (stuck)", sp.Tenant, sp.ID, state)
		}
		if x > 1 {
			r.Reexecuted++
		}
		// Every patch lands whole: the run's counters are x times the delta.
		if c.OutputTokens != x*d.OutputTokens || c.CostMicros != x*d.CostMicros {
			violate("%q/%q: run counters %+v are not %d times the delta %+v (a patch applied partly or twice)", sp.Tenant, sp.ID, c, x, d)
		}
		// Each execution added 2^attempts: executions of distinct claim
		// generations set distinct bits. Fewer bits than executions means
		// one generation ran twice: done twice without a lost lease.
		if pc := int64(bits.OnesCount64(uint64(c.InputTokens))); pc != x {
			if inWindow(k) {
				forgive("%q/%q: claim generation ran twice (attempt bits %b, %d executions) after the server lost its acknowledged settle", sp.Tenant, sp.ID, c.InputTokens, x)
			} else {
				violate("%q/%q: done twice: %d executions but only %d distinct claim generations (attempt bits %b); acknowledged: %s", sp.Tenant, sp.ID, x, pc, c.InputTokens, describeAcks(ackEvents[k], allow))
			}
		}
		// An acknowledged execution must still be in the store.
		if acked > x {
			lost := acked - x
			var ages []string
			for _, at := range ackTimes[k] {
				if allow.covers(at) {
					age := allow.To.Sub(time.Unix(0, at))
					ages = append(ages, age.Round(time.Millisecond).String())
					r.MaxLossAge = max(r.MaxLossAge, age)
				}
			}
			if len(ages) >= int(lost) || flight[k] >= lost {
				when := "in flight across the crash"
				if len(ages) > 0 {
					when = "acknowledged " + strings.Join(ages, ", ") + " before the crash"
				}
				after := "done again after the restart"
				if x == 0 && state == "completed" {
					after = "its completion kept on another server"
				}
				forgive("%q/%q: %d acknowledged execution(s) lost by the server (%s), %s", sp.Tenant, sp.ID, lost, when, after)
			} else {
				violate("%q/%q: %d acknowledged execution(s) missing from the store (acknowledged %d, stored %d)", sp.Tenant, sp.ID, lost, acked, x)
			}
		}
		lo := min(acked, x)
		r.Ambiguous += x - lo
		t := tally[sp.Tenant]
		t.lo = t.lo.Add(scale(d, lo))
		t.hi = t.hi.Add(scale(d, x))
		t.slack = t.slack.Add(scale(d, flight[k]))
		t.fx = t.fx.Add(scale(d, x))
	}
	for _, tenant := range Tenants {
		run, err := s.State.GetRun(ctx, tenant, AcctID)
		if err != nil {
			return r, fmt.Errorf("read tally of %q: %w", tenant, err)
		}
		got, t := run.Counters, tally[tenant]
		if got != t.fx {
			r.TallyExact = false
		}
		for _, f := range []struct {
			name               string
			got, lo, hi, slack int64
		}{
			{"iterations", got.Iterations, t.lo.Iterations, t.hi.Iterations, t.slack.Iterations},
			{"output_tokens", got.OutputTokens, t.lo.OutputTokens, t.hi.OutputTokens, t.slack.OutputTokens},
			{"cost_micros", got.CostMicros, t.lo.CostMicros, t.hi.CostMicros, t.slack.CostMicros},
		} {
			if f.got < f.lo || f.got > f.hi {
				if allow != nil && f.got < f.lo {
					forgive("tally %q %s = %d, below the %d acknowledged: writes lost by the server", tenant, f.name, f.got, f.lo)
					continue
				}
				if allow != nil && f.got > f.hi && f.got <= f.hi+f.slack {
					forgive("tally %q %s = %d, %d above the stored executions: executions in flight across the crash lost their first write and retried their second after it", tenant, f.name, f.got, f.got-f.hi)
					continue
				}
				violate("tally %q %s = %d, outside [%d acknowledged, %d executed] (lost or double-counted)", tenant, f.name, f.got, f.lo, f.hi)
			}
		}
		if got.InputTokens != 0 || got.Cursor != 0 {
			violate("tally %q has counters nobody patched: %+v", tenant, got)
		}
	}
	sort.Strings(r.Violations)
	sort.Strings(r.Forgiven)
	return r, nil
}

func scale(c contract.Counters, n int64) contract.Counters {
	return contract.Counters{InputTokens: c.InputTokens * n, OutputTokens: c.OutputTokens * n, CostMicros: c.CostMicros * n, Iterations: c.Iterations * n, Cursor: c.Cursor * n}
}
