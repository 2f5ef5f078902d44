package oracle

import (
	"context"
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// claimClock wraps the worker's queue to note when each lease came back
// from Claim (wall clock). A handler may begin a little after its claim
// returned; the oracle asks whether the claim was served before a crash,
// so it needs the claim's time, not the handler's. The wrapped queue's
// optional capabilities (its waker, its lifecycle controls) pass through,
// but for CompleteAndClaim, whose claims would escape the clock.
type claimClock struct {
	contract.WorkQueue
	contract.Passthrough
	mu   sync.Mutex
	when map[claimKey]int64
	// onLease, when set, hears of every lease a Claim returned, with
	// the time it returned, before the runner sees it.
	onLease func(l contract.Lease, at int64)
}

type claimKey struct {
	tenant, id string
	token      int64
}

func newClaimClock(q contract.WorkQueue) (*claimClock, contract.WorkQueue) {
	c := &claimClock{WorkQueue: q, Passthrough: contract.NewPassthrough(q), when: map[claimKey]int64{}}
	return c, c
}

// Capabilities are the wrapped queue's, without CompleteAndClaim.
func (c *claimClock) Capabilities() contract.Capabilities {
	caps := c.Passthrough.Capabilities()
	caps.CompleteAndClaim = false
	return caps
}

func (c *claimClock) Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	ls, err := c.WorkQueue.Claim(ctx, req)
	at := time.Now().UnixNano()
	c.mu.Lock()
	for _, l := range ls {
		c.when[claimKey{l.Item.Tenant, l.Item.ID, l.Token}] = at
	}
	c.mu.Unlock()
	if c.onLease != nil {
		for _, l := range ls {
			c.onLease(l, at)
		}
	}
	return ls, err
}

// claimed returns (and forgets) when l's claim returned, or 0.
func (c *claimClock) claimed(l contract.Lease) int64 {
	k := claimKey{l.Item.Tenant, l.Item.ID, l.Token}
	c.mu.Lock()
	defer c.mu.Unlock()
	at := c.when[k]
	delete(c.when, k)
	return at
}
