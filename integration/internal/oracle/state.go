package oracle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// The state load: besides its two patches, an execution of a worker with
// WorkerConfig.StateLoad appends its mark to one of its tenant's logs with
// a versioned put (read, append, put holding the version read, again on a
// conflict), creates, puts and deletes a run of its own, and hands its
// tenant's slot on (delete it, and when the delete took it, create it
// again holding the mark). Both go through the store's
// resends after lost replies: a put resent after its reply was lost must
// not conflict with itself, and a delete resent must neither report its
// own deletion as not found nor remove the slot another execution created
// since. JudgeState reads the logs and slots at the end.

// Logs is how many logs each tenant's executions append to (an item's
// log is its N modulo Logs): fewer writers per run, fewer conflicts.
const Logs = 4

// LogID is the run holding log i of a tenant: a JSON array of marks.
func LogID(i int) string { return "log:" + strconv.Itoa(i) }

// SlotID is the run each tenant's executions hand on; its Data is the
// mark of the execution that created it last.
const SlotID = "slot"

// seedHolder is the slot's holder before any execution took it.
const seedHolder = "seed"

// Mark names one execution: the item and the token of its claim.
func Mark(id string, token int64) string { return id + "@" + strconv.FormatInt(token, 10) }

// Classes of the "state" events a worker reports. The first three are
// answers no correct store gives; the last two are outcomes nobody can
// know, which make the judge forgive what they may explain.
const (
	FalseConflict = "false_conflict"      // a put refused as a conflict had landed: its mark was in the log
	FalseReply    = "false_reply"         // a put succeeded but answered with a run it did not write
	ForeignSlot   = "foreign_slot"        // the slot was created by another execution while this one held it
	UnknownTake   = "unknown_take"        // a delete of the slot failed unanswered: it may land any time later
	UnknownGive   = "unknown_give"        // a create of the slot failed unanswered: it may land any time later
	ImpossibleAck = "impossible_conflict" // a conflict whose stored version is the one the put held
	FalseNotFound = "false_not_found"     // a delete of a run only this execution wrote answered not found
)

// ScratchID is the run only the execution with mark writes: created, put
// once holding its version, and deleted.
func ScratchID(mark string) string { return "tmp:" + mark }

// answered reports whether err is an answer of the store rather than a
// call that failed without one (whose write may or may not have landed).
func answered(err error) bool {
	var ce *contract.StateConflictError
	return err == nil || errors.Is(err, contract.ErrNotFound) || errors.As(err, &ce) || errors.Is(err, contract.ErrInvalid)
}

// untilAnswered runs call until the store answers it, and reports whether
// an earlier try failed without an answer.
func untilAnswered(ctx context.Context, call func() error) (err error, unanswered bool) {
	for {
		if err = call(); answered(err) || ctx.Err() != nil {
			return err, unanswered
		}
		unanswered = true
		pause(ctx, 20*time.Millisecond)
	}
}

// scratch creates the execution's own run, puts it once holding version
// 1, and deletes it. Nobody else writes that run, so every answer is
// known in advance: a conflict or a not found is a resent write
// misjudging its own earlier application, unless an earlier try of the
// same call failed unanswered (then it may have landed).
func (w *worker) scratch(ctx context.Context, l contract.Lease, mark string) error {
	tenant, id := l.Item.Tenant, ScratchID(mark)
	data, _ := json.Marshal(mark)
	for _, version := range []int64{0, 1} {
		var got *contract.Run
		err, unanswered := untilAnswered(ctx, func() (err error) {
			got, err = w.state.PutRun(ctx, contract.Run{Tenant: tenant, ID: id, Version: version, Data: data})
			return err
		})
		var ce *contract.StateConflictError
		switch {
		case err == nil && got.Version != version+1:
			w.stateEvent(l, FalseReply, fmt.Sprintf("%s: put at version %d answered version %d", id, version, got.Version))
		case errors.As(err, &ce) && !unanswered:
			w.stateEvent(l, FalseConflict, fmt.Sprintf("%s, written by this execution only: %v", id, err))
		case err != nil && !errors.As(err, &ce):
			return err
		}
	}
	err, unanswered := untilAnswered(ctx, func() error { return w.state.DeleteRun(ctx, tenant, id) })
	switch {
	case errors.Is(err, contract.ErrNotFound) && !unanswered:
		w.stateEvent(l, FalseNotFound, id+", created by this execution and deleted by it only")
	case err != nil && !errors.Is(err, contract.ErrNotFound):
		return err
	}
	return nil
}

func (w *worker) stateEvent(l contract.Lease, class, detail string) {
	w.count("state_"+class, 1)
	w.emit(Event{Kind: "state", Tenant: l.Item.Tenant, ID: l.Item.ID, Class: class, Where: detail, Worker: w.cfg.Worker})
}

// appendMark appends mark to the log with a read-modify-write loop until
// the put lands or the context ends. An error other than a conflict
// leaves the put's outcome unknown: the next read tells whether it landed.
func (w *worker) appendMark(ctx context.Context, l contract.Lease, log, mark string) error {
	refused := false // the last put was refused as a conflict
	unknown := false // a put failed without an answer: it may land late
	for {
		r, err := w.state.GetRun(ctx, l.Item.Tenant, log)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			pause(ctx, 20*time.Millisecond)
			continue
		}
		var marks []string
		if err := json.Unmarshal(r.Data, &marks); err != nil {
			return fmt.Errorf("log %s of %q holds %s: %w", log, l.Item.Tenant, r.Data, err)
		}
		if slices.Contains(marks, mark) {
			if refused && !unknown {
				w.stateEvent(l, FalseConflict, fmt.Sprintf("%s: the put refused as a conflict had appended %s", log, mark))
			}
			return nil
		}
		data, _ := json.Marshal(append(marks, mark))
		got, err := w.state.PutRun(ctx, contract.Run{Tenant: l.Item.Tenant, ID: log, Version: r.Version, Data: data})
		var ce *contract.StateConflictError
		switch {
		case err == nil:
			if got.Version != r.Version+1 || !jsonEqual(got.Data, data) {
				w.stateEvent(l, FalseReply, fmt.Sprintf("%s: put at version %d answered version %d with %s", log, r.Version, got.Version, got.Data))
			}
			return nil
		case errors.As(err, &ce):
			refused = true
			if ce.Actual == ce.Expected {
				w.stateEvent(l, ImpossibleAck, err.Error())
			}
		default:
			refused, unknown = false, true
			if ctx.Err() != nil {
				return err
			}
			pause(ctx, 20*time.Millisecond)
		}
	}
}

// handOn takes the tenant's slot (deletes it) and, when it took it,
// creates it again holding mark. It reports whether it took the slot. It
// runs to the end whatever becomes of the handler's context (a handler
// whose lease was lost goes on until it returns), and the worker waits
// for it before it exits: a slot taken and not given back would be lost.
func (w *worker) handOn(ctx context.Context, l contract.Lease, mark string) (bool, error) {
	w.handoffs.Add(1)
	defer w.handoffs.Done()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := w.state.DeleteRun(ctx, l.Item.Tenant, SlotID)
	unknown := false // a call failed without an answer: it may have landed
	switch {
	case errors.Is(err, contract.ErrNotFound):
		return false, nil // another execution holds it
	case err != nil:
		// Even when this execution ends up not holding the slot, the
		// delete may still land later (a statement the server runs after
		// the connection it came on was cut): the judge forgives what
		// that explains.
		w.stateEvent(l, UnknownTake, err.Error())
		if !w.tookUnanswered(ctx, l) {
			return false, nil
		}
		unknown = true
	}
	data, _ := json.Marshal(mark)
	for {
		_, err := w.state.PutRun(ctx, contract.Run{Tenant: l.Item.Tenant, ID: SlotID, Data: data})
		var ce *contract.StateConflictError
		switch {
		case err == nil:
			return true, nil
		case errors.As(err, &ce):
			// Only the holder creates the slot: an earlier try of this
			// create landed (and the slot may have been handed on since),
			// or, with none unanswered, someone else created it while
			// this execution held it.
			r, gerr := w.state.GetRun(ctx, l.Item.Tenant, SlotID)
			if gerr == nil && !unknown && !jsonEqual(r.Data, data) {
				w.stateEvent(l, ForeignSlot, fmt.Sprintf("held by %s, found created holding %s", mark, r.Data))
			}
			if gerr == nil {
				return true, nil
			}
		default:
			if !unknown {
				w.stateEvent(l, UnknownGive, err.Error())
			}
			unknown = true
		}
		if ctx.Err() != nil {
			return true, ctx.Err()
		}
		pause(ctx, 20*time.Millisecond)
	}
}

// tookUnanswered decides whether a delete of the slot that failed
// without an answer took it. Only the holder creates the slot, so a slot
// that is there (or comes back within a second, created by the execution
// that was handing it on) was not taken by this delete. A slot still
// missing after a second is taken to be this execution's: it creates it
// again.
func (w *worker) tookUnanswered(ctx context.Context, l contract.Lease) bool {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		_, err := w.state.GetRun(ctx, l.Item.Tenant, SlotID)
		if err == nil {
			return false
		}
		pause(ctx, 50*time.Millisecond)
	}
	return true
}

func jsonEqual(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && fmt.Sprint(va) == fmt.Sprint(vb)
}

// StateReport is the verdict on the state load.
type StateReport struct {
	Appends    int // acknowledged appends
	Handoffs   int // acknowledged hand-ons of a slot
	Violations []string
	Forgiven   []string
}

// JudgeState checks the logs and slots against what the workers
// acknowledged and reported: every acknowledged append is in its log
// exactly once and no mark is in a log twice (a put resent after a lost
// reply neither applied twice nor was undone); every slot exists, held by
// an execution that acknowledged creating it (a delete resent after a lost
// reply did not remove a slot created since, nor answer ErrNotFound for
// its own deletion, which leaves the slot taken and never given back);
// every execution's own run is gone; and no worker saw a false conflict,
// a false reply, a false not found or a foreign slot.
func JudgeState(ctx context.Context, s *Stores, specs []Spec, acks, events []Event) (StateReport, error) {
	var rep StateReport
	violate := func(f string, a ...any) { rep.Violations = append(rep.Violations, fmt.Sprintf(f, a...)) }
	// A delete or create of a slot that failed unanswered may land at any
	// time after (the server can run a statement after the connection it
	// came on was cut): what happens to that tenant's slot afterwards is
	// forgiven, and listed.
	uncertain := map[string]int{}
	for _, e := range events {
		if e.Class == UnknownTake || e.Class == UnknownGive {
			uncertain[e.Tenant]++
		}
	}
	for _, e := range events {
		switch {
		case e.Class == UnknownTake || e.Class == UnknownGive:
		case e.Class == ForeignSlot && uncertain[e.Tenant] > 0:
			rep.Forgiven = append(rep.Forgiven, fmt.Sprintf("%q/%q by %s: %s after %d deletes or creates of the slot whose outcome nobody knew: %s",
				e.Tenant, e.ID, e.Worker, e.Class, uncertain[e.Tenant], e.Where))
		default:
			violate("%q/%q by %s: %s: %s", e.Tenant, e.ID, e.Worker, e.Class, e.Where)
		}
	}
	n := map[string]int{}
	for _, sp := range specs {
		n[sp.Tenant+"\x00"+sp.ID] = sp.N
	}
	appended := map[string]map[string]bool{} // tenant+log -> acknowledged marks
	holders := map[string]map[string]bool{}  // tenant -> marks that acknowledged creating the slot
	for _, a := range acks {
		if a.Mark == "" {
			continue
		}
		k := a.Tenant + "\x00" + LogID(n[a.Tenant+"\x00"+a.ID]%Logs)
		if appended[k] == nil {
			appended[k] = map[string]bool{}
		}
		appended[k][a.Mark] = true
		rep.Appends++
		if a.Took {
			if holders[a.Tenant] == nil {
				holders[a.Tenant] = map[string]bool{}
			}
			holders[a.Tenant][a.Mark] = true
			rep.Handoffs++
		}
	}
	for _, tenant := range Tenants {
		for i := range Logs {
			r, err := s.State.GetRun(ctx, tenant, LogID(i))
			if err != nil {
				return rep, fmt.Errorf("read log %d of %q: %w", i, tenant, err)
			}
			var marks []string
			if err := json.Unmarshal(r.Data, &marks); err != nil {
				return rep, fmt.Errorf("log %d of %q holds %s: %w", i, tenant, r.Data, err)
			}
			count := map[string]int{}
			for _, m := range marks {
				count[m]++
			}
			for m, c := range count {
				if c > 1 {
					violate("log %d of %q holds %s %d times (a put applied twice)", i, tenant, m, c)
				}
			}
			var missing []string
			for m := range appended[tenant+"\x00"+LogID(i)] {
				if count[m] == 0 {
					missing = append(missing, m)
				}
			}
			sort.Strings(missing)
			if len(missing) > 0 {
				violate("log %d of %q lacks %d acknowledged appends (undone): %v", i, tenant, len(missing), missing)
			}
		}
		r, err := s.State.GetRun(ctx, tenant, SlotID)
		switch {
		case errors.Is(err, contract.ErrNotFound) && uncertain[tenant] > 0:
			rep.Forgiven = append(rep.Forgiven, fmt.Sprintf("the slot of %q is gone, after %d deletes or creates of it whose outcome nobody knew", tenant, uncertain[tenant]))
		case errors.Is(err, contract.ErrNotFound):
			violate("the slot of %q is gone: a delete took it and it was never created again (a resent delete answered not found for its own deletion, or removed the slot created after it)", tenant)
		case err != nil:
			return rep, fmt.Errorf("read the slot of %q: %w", tenant, err)
		default:
			var holder string
			if err := json.Unmarshal(r.Data, &holder); err != nil {
				return rep, fmt.Errorf("the slot of %q holds %s: %w", tenant, r.Data, err)
			}
			if holder != seedHolder && !holders[tenant][holder] {
				violate("the slot of %q is held by %s, which never acknowledged creating it", tenant, holder)
			}
		}
	}
	for _, a := range acks {
		if a.Mark == "" {
			continue
		}
		if _, err := s.State.GetRun(ctx, a.Tenant, ScratchID(a.Mark)); !errors.Is(err, contract.ErrNotFound) {
			violate("%q/%s: the execution's own run, deleted with an acknowledgement, is still there (%v)", a.Tenant, ScratchID(a.Mark), err)
		}
	}
	sort.Strings(rep.Violations)
	return rep, nil
}
