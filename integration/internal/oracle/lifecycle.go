package oracle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// The lifecycle load mixes waits and cancels into the plan: every
// WaitEvery-th item first waits for WaitSignal (its handler returns a
// wait, the parent's signaller resumes it with SignalPayload), and every
// CancelEvery-th is cancelled by the parent while the load runs.
const (
	WaitEvery   = 13
	CancelEvery = 29
	WaitSignal  = "go"
	// WaitTimeout is long enough that no wait of the load times out: a
	// timed-out wait is a violation (its signal was lost).
	WaitTimeout = 2 * time.Minute
)

// PlanLifecycle is Plan with waits and cancels mixed in (never on a
// poison item).
func PlanLifecycle(k int) []Spec {
	out := Plan(k)
	for i := range out {
		sp := &out[i]
		if sp.Poison {
			continue
		}
		switch {
		case sp.N%WaitEvery == WaitEvery-1:
			sp.Waits = true
		case sp.N%CancelEvery == CancelEvery-2:
			sp.Cancel = true
		}
	}
	return out
}

// SignalPayload is what the signaller hands item n's wait; its handler
// checks it.
func SignalPayload(n int) []byte { return []byte(`{"approved":` + strconv.Itoa(n) + `}`) }

// Lifecycle records what the parent did to the load: the cancels and what
// each found, the signals that resumed a wait.
type Lifecycle struct {
	mu sync.Mutex
	// Cancelled holds, by tenant+"\x00"+id, the state a Cancel found
	// the item in (absent: the item was gone, completed, before it).
	Cancelled map[string]contract.ItemState
	// Resumed counts, by item, the signals that returned nil.
	Resumed map[string]int
	// Refused counts the signals refused with NotWaitingError (a
	// concurrent twin won).
	Refused int
	// Failed counts signals and cancels that failed otherwise (a fault).
	Failed int
}

// NewLifecycle returns an empty record.
func NewLifecycle() *Lifecycle {
	return &Lifecycle{Cancelled: map[string]contract.ItemState{}, Resumed: map[string]int{}}
}

// Cancel cancels the planned cancels, retrying each across a fault until
// ctx ends.
func (lc *Lifecycle) Cancel(ctx context.Context, s *Stores, specs []Spec) error {
	ctl, ok := contract.AsLifecycleController(s.Queue)
	if !ok {
		return fmt.Errorf("the %T queue has no lifecycle controls", s.Queue)
	}
	for _, sp := range specs {
		if !sp.Cancel {
			continue
		}
		for {
			st, err := ctl.Cancel(ctx, sp.Key(), "cancelled by the oracle")
			// A completed item kept under a retention is as gone as one
			// deleted: the cancel found nothing live.
			if errors.Is(err, contract.ErrNotFound) || (err == nil && st == contract.StateCompleted) {
				break
			}
			if err == nil {
				lc.mu.Lock()
				lc.Cancelled[sp.Tenant+"\x00"+sp.ID] = st
				lc.mu.Unlock()
				break
			}
			lc.mu.Lock()
			lc.Failed++
			lc.mu.Unlock()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// Signal resumes the load's waiting items until ctx ends: it pages
// through the waiting items and signals each from two goroutines at once,
// so that every wait sees two concurrent signals and must resume once.
func (lc *Lifecycle) Signal(ctx context.Context, s *Stores, specs []Spec) {
	ctl, ok := contract.AsLifecycleController(s.Queue)
	if !ok {
		return
	}
	byID := map[string]Spec{}
	for _, sp := range specs {
		byID[sp.Tenant+"\x00"+sp.ID] = sp
	}
	for ctx.Err() == nil {
		page, err := ctl.Waiting(ctx, contract.DefaultQueue, contract.PageRequest{Limit: contract.MaxPageSize})
		if err == nil {
			for _, it := range page.Items {
				sp, ok := byID[it.Tenant+"\x00"+it.ID]
				if !ok {
					continue
				}
				var wg sync.WaitGroup
				for range 2 {
					wg.Go(func() { lc.signalOnce(ctx, ctl, sp) })
				}
				wg.Wait()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (lc *Lifecycle) signalOnce(ctx context.Context, ctl contract.LifecycleController, sp Spec) {
	err := ctl.Signal(ctx, sp.Key(), WaitSignal, SignalPayload(sp.N))
	lc.mu.Lock()
	defer lc.mu.Unlock()
	switch {
	case err == nil:
		lc.Resumed[sp.Tenant+"\x00"+sp.ID]++
	case errors.Is(err, contract.ErrNotWaiting):
		lc.Refused++
	default:
		lc.Failed++
	}
}

// checkResume is the handler's check of a resumed wait: the payload is
// the one the signaller sent, and the wait did not time out.
func checkResume(l contract.Lease, n int) error {
	r := l.Item.Resumed
	switch {
	case r.TimedOut:
		return fmt.Errorf("the wait for %q timed out: its signal never arrived", r.Signal)
	case r.Signal != WaitSignal || !bytes.Equal(r.Payload, SignalPayload(n)):
		return fmt.Errorf("resumed by %q with payload %q, want %q with %q", r.Signal, r.Payload, WaitSignal, SignalPayload(n))
	}
	return nil
}

// cancelled reports whether the parent's cancel found sp live, and in
// which state (nil lc: no lifecycle load).
func (lc *Lifecycle) cancelled(sp Spec) (contract.ItemState, bool) {
	if lc == nil {
		return "", false
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	st, ok := lc.Cancelled[sp.Tenant+"\x00"+sp.ID]
	return st, ok
}

// resumed counts the signals that resumed sp's wait.
func (lc *Lifecycle) resumed(sp Spec) int {
	if lc == nil {
		return 0
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.Resumed[sp.Tenant+"\x00"+sp.ID]
}
