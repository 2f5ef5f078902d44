package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/backoff"
)

// completer completes the finished leases of every queue of a Run in
// batches: a finished lease waits up to CompleteDelay for others to share
// its Complete call, and a full batch goes at once. Two calls may be in
// flight together, so one slow Complete holds no slot: while both are out
// the leases that finish meanwhile wait, and go in the next, larger,
// batch. Only when maxPending are waiting does a finishing slot wait too,
// which bounds the leases a stalled queue can leave ticking.
type completer struct {
	rn   *run
	size int // the most leases one Complete carries

	mu      sync.Mutex
	room    sync.Cond // signalled when pending shrinks
	pending []contract.Lease
	closed  bool

	kick    chan struct{} // capacity 1: the first lease pending, or a full batch
	stop    chan struct{}
	batches chan []contract.Lease // to the settling goroutines
	// spare holds batches already settled, for take to fill again: a
	// batch is some hundreds of bytes per lease, garbage on every
	// Complete otherwise.
	spare chan []contract.Lease
}

// completeFlushers is how many Complete calls may be in flight at once.
const completeFlushers = 2

func newCompleter(rn *run) *completer {
	size := 0
	for _, qc := range rn.cfg.Queues {
		size += max(qc.Concurrency, qc.BatchSize)
	}
	c := &completer{rn: rn, size: min(size, contract.MaxClaimBatch),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), batches: make(chan []contract.Lease),
		spare: make(chan []contract.Lease, completeFlushers)}
	c.room.L = &c.mu
	return c
}

// maxPending is how many finished leases may wait before a finishing
// slot waits for room.
func (c *completer) maxPending() int { return 2 * c.size }

// add queues a finished lease for completion.
func (c *completer) add(l contract.Lease) {
	c.mu.Lock()
	for len(c.pending) >= c.maxPending() && !c.closed {
		c.room.Wait()
	}
	c.pending = append(c.pending, l)
	n := len(c.pending)
	c.mu.Unlock()
	if n == 1 || n >= c.size {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// take hands over up to one batch of the pending leases.
func (c *completer) take() []contract.Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(len(c.pending), c.size)
	if n == 0 {
		return nil
	}
	var b []contract.Lease
	select {
	case b = <-c.spare:
	default:
	}
	if cap(b) < n {
		b = make([]contract.Lease, n)
	}
	b = b[:n]
	copy(b, c.pending)
	c.pending = append(c.pending[:0], c.pending[n:]...)
	c.room.Broadcast()
	return b
}

// recycle keeps b, settled, for take to fill again (Complete keeps no
// slice it was given), its leases cleared so that it holds no item's
// payload meanwhile.
func (c *completer) recycle(b []contract.Lease) {
	clear(b)
	select {
	case c.spare <- b[:0]:
	default:
	}
}

func (c *completer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// run decides when to complete until close, then completes what is left.
func (c *completer) run() {
	var settling sync.WaitGroup
	for range completeFlushers {
		settling.Go(func() {
			for b := range c.batches {
				c.settle(b, false)
				c.recycle(b)
			}
		})
	}
	defer func() {
		close(c.batches)
		settling.Wait()
	}()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var due <-chan time.Time
	for {
		all := false
		select {
		case <-c.kick:
		case <-due:
			due, all = nil, true
		case <-c.stop:
			for b := c.take(); b != nil; b = c.take() {
				c.batches <- b
			}
			return
		}
		// Full batches go now; after the delay, everything does.
		for n := c.count(); n >= c.size || (all && n > 0); n = c.count() {
			if b := c.take(); b != nil {
				c.batches <- b
			}
		}
		switch n := c.count(); {
		case n == 0 && due != nil:
			timer.Stop()
			due = nil
		case n > 0 && due == nil:
			timer.Reset(c.rn.cfg.CompleteDelay)
			due = timer.C
		}
	}
}

// close makes run complete what is pending and return; every slot has
// returned by then.
func (c *completer) close() {
	c.mu.Lock()
	c.closed = true
	c.room.Broadcast()
	c.mu.Unlock()
	close(c.stop)
}

// completeRetry bounds the retries of a Complete that failed with a
// retryable error: five tries, 40 ms apart and doubling (at most 600 ms
// of waiting in all), then the leases are left to expire and their items
// will be run again.
var completeRetry = backoff.Budget{
	Backoff:  backoff.Backoff{Base: 40 * time.Millisecond, Max: 320 * time.Millisecond, Jitter: backoff.EqualJitter},
	Attempts: 5,
}

// notCompleted handles the answer of a batch Complete that names leases
// it did not complete and reports whether err is one: lost leases are
// reported (unless again says they were expected), cancelled items are
// counted in the log (they were cancelled while their handlers ran, and
// stay so), neither is retried.
func (c *completer) notCompleted(err error, items int, again bool) bool {
	lost, isLost := errors.AsType[*contract.LeaseLostError](err)
	cancelled, isCancelled := errors.AsType[*contract.CancelledError](err)
	if isCancelled {
		c.rn.log.Info("complete: items cancelled while their handlers ran stay cancelled", "items", items, "cancelled", len(cancelled.Items))
	}
	if isLost && !again {
		c.rn.report(lost, "complete: some leases were lost before their items completed; those items will run again", "items", items)
	}
	return isLost || isCancelled
}

// settle completes batch, retrying what may be retried. again says the
// leases may have been completed already (a combined call whose outcome
// is unknown): then lost ones are expected and not reported.
func (c *completer) settle(batch []contract.Lease, again bool) {
	rn := c.rn
	retry := completeRetry.Start()
	for {
		ctx, cancel := context.WithTimeout(rn.detached, rn.cfg.SettleTimeout)
		err := rn.r.q.Complete(ctx, batch...)
		cancel()
		if err == nil {
			return
		}
		// With a lost or cancelled lease in the answer the others did
		// complete (the contract settles each lease on its own): never
		// retry that.
		if c.notCompleted(err, len(batch), again) {
			return
		}
		wait, ok := retry.Next()
		if !contract.Retryable(err) || !ok || !backoff.Sleep(rn.detached, wait) {
			rn.report(err, "complete failed; the leases will expire and their items run again", "items", len(batch))
			return
		}
	}
}
