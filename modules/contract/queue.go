package contract

import (
	"context"
	"time"

	"github.com/adkit/adk/modules/policy"
)

// DefaultQueue is the queue an Item with an empty Queue goes to.
const DefaultQueue = "default"

// MaxClaimBatch is the largest Max a ClaimRequest may ask for.
const MaxClaimBatch = 1000

// ItemState is where an item is in its life.
type ItemState string

// The states of an item. A completed item is gone, unless its queue keeps
// finished items (see StateCompleted).
const (
	StateQueued ItemState = "queued" // waiting, due at NotBefore
	StateLeased ItemState = "leased" // held by a worker until its lease expires
	StateDead   ItemState = "dead"   // in the dead letter, until requeued or purged
)

// Item is a unit of work. Tenant, Queue and ID identify it.
type Item struct {
	Tenant string `json:"tenant"`
	// ID is unique per tenant and queue. Enqueueing an ID that is queued,
	// leased, waiting, dead or cancelled is a no-op (use Requeue to revive
	// a dead one); after Complete (or PurgeCancelled) the ID may be used
	// again.
	ID    string `json:"id"`
	Queue string `json:"queue"` // "" means DefaultQueue
	// Payload is opaque to the queue, at most the backing's MaxValueBytes
	// (larger payloads go behind a claim check; see package claimcheck).
	Payload []byte `json:"payload,omitempty"`
	// Metadata survives every transition (claim, retry, dead letter,
	// requeue). It carries W3C trace context among anything else.
	Metadata map[string]string `json:"metadata,omitempty"`
	// NotBefore delays the item; zero means due at once.
	NotBefore time.Time `json:"not_before"`
	// Attempts counts the claims that ended in Fail or in an expired lease.
	Attempts   int       `json:"attempts"`
	LastError  string    `json:"last_error,omitempty"`
	State      ItemState `json:"state"`
	EnqueuedAt time.Time `json:"enqueued_at"`
	// DeadAt is when the item went to the dead letter; zero otherwise.
	DeadAt time.Time `json:"dead_at,omitzero"`
	// Priority orders a tenant's due items: higher first, then by due
	// time, then in enqueue order. It never changes the turns across
	// tenants. MinPriority to MaxPriority; 0 by default.
	Priority int `json:"priority,omitempty"`
	// Snoozes counts the times the item was snoozed (see
	// LifecycleController.Snooze); the policy's MaxSnoozes caps it.
	Snoozes int `json:"snoozes,omitempty"`
	// Waiting says what the item waits for while its State is
	// StateWaiting; nil otherwise.
	Waiting *WaitInfo `json:"waiting,omitempty"`
	// Resumed says how the item's last wait ended: set on the claims that
	// follow a wait, nil before any.
	Resumed *Resume `json:"resumed,omitempty"`
	// CancelledAt is when the item was cancelled (State StateCancelled),
	// or, while it is still leased, when the cancel was asked for; zero
	// otherwise. CancelReason is the reason given.
	CancelledAt  time.Time `json:"cancelled_at,omitzero"`
	CancelReason string    `json:"cancel_reason,omitempty"`
	// UniqueFor asks that the item's ID not be enqueued again for this
	// long after it finished (completed or cancelled): an Enqueue of the
	// ID meanwhile is a duplicate (see HistoryKeeper.EnqueueReport), even
	// on a queue that keeps no finished items. Zero: the ID may be used
	// again as soon as the item completes. At most MaxUniqueFor.
	UniqueFor time.Duration `json:"unique_for,omitempty"`
	// FinishedAt is when the item completed or was cancelled, for an item
	// kept after it finished (StateCompleted or StateCancelled); zero
	// otherwise. The queue sets it.
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// Key returns the item's identity.
func (it Item) Key() ItemKey {
	return ItemKey{Tenant: it.Tenant, Queue: QueueName(it.Queue), ID: it.ID}
}

// ItemKey identifies an item.
type ItemKey struct {
	Tenant string `json:"tenant"`
	Queue  string `json:"queue"`
	ID     string `json:"id"`
}

// QueueName returns name, or DefaultQueue when name is empty.
func QueueName(name string) string {
	if name == "" {
		return DefaultQueue
	}
	return name
}

// Lease is a claimed item. Every settle of it must present Token.
type Lease struct {
	Item      Item      `json:"item"`
	Worker    string    `json:"worker"`
	ExpiresAt time.Time `json:"expires_at"`
	// Token is the fencing token: issued by the claim (and anew by every
	// heartbeat), never issued twice for the same item. Tokens increase:
	// every token issued for an item is greater than every token issued
	// for it before, by any claim or heartbeat, across restarts of the
	// backing's server, so the newest execution of an item holds its
	// largest token (what a fenced run write needs, see [RunPolicy]).
	// Tokens are positive.
	Token int64 `json:"token"`
}

// Key returns the leased item's identity.
func (l Lease) Key() ItemKey { return l.Item.Key() }

// ClaimRequest asks for up to Max due items of one queue.
type ClaimRequest struct {
	Queue    string        // "" means DefaultQueue
	Worker   string        // who holds the leases; shown by the Inspector
	LeaseFor time.Duration // must be positive
	Max      int           // 1..MaxClaimBatch
}

// DeadLetterFilter selects dead letters. Queue is required ("" means
// DefaultQueue); every other field, when set, narrows the selection.
type DeadLetterFilter struct {
	Queue  string `json:"queue"`
	Tenant string `json:"tenant,omitempty"`
	ID     string `json:"id,omitempty"`
	// ErrorContains is a substring of LastError, matched ignoring the
	// case of ASCII letters ("Timeout" finds "TIMEOUT"); every other
	// character must match as it is. All backings fold the same way (see
	// FoldASCII), so a filter selects the same letters wherever it runs.
	ErrorContains string `json:"error_contains,omitempty"`
}

// DeadLetterQuery is one page of a DeadLetterFilter.
type DeadLetterQuery struct {
	DeadLetterFilter
	Page PageRequest
	// Newest pages from the most recently dead letter backwards; by
	// default pages run oldest first. A cursor is a place between two
	// letters, so one handed out in either order serves the other: from
	// the same cursor, Newest lists the letters that died before that
	// place, newest first, and the default order those that died after
	// it, oldest first. A listing turns around that way to page back.
	Newest bool
	// Skip passes over this many matching letters, in the query's order
	// from the cursor's place, before the page starts, so a listing jumps
	// to page N with Skip (N-1)×Limit instead of reading every page
	// before it. Next is then the place past the page, as always.
	Skip int
}

// ItemPage is one page of dead letters, in the order the query asked for.
// Next is the cursor of the place past the page's last letter, "" when no
// letter follows it.
type ItemPage struct {
	Items []Item
	Next  string
}

// WorkQueue is a fair, leased work queue. Every backing passes
// contracttest.WorkQueue.
type WorkQueue interface {
	// Enqueue adds the items; a tenant's items due at the same time are
	// claimed in the order given. An item whose ID is already queued,
	// leased or dead is left as it is (of several entries with one ID in a
	// batch, the first wins). Bad input in any item is refused before
	// anything is sent, and nothing is enqueued.
	//
	// A nil error means every item is now queued, leased or dead. Any
	// other error may leave a batch partly enqueued: memory and PostgreSQL
	// enqueue a batch all or none, while Redis sends it in chunks (per
	// queue, at most 500 items or 8 MiB each, one script each, in order,
	// each all or none). Sending the same batch again is safe and
	// completes it: the items already there are left as they are and the
	// others are added. (An item enqueued, claimed and completed before
	// the retry is added again, as any enqueue of a completed ID is.)
	Enqueue(ctx context.Context, items ...Item) error
	// Claim leases up to req.Max due items, taking one item from each
	// tenant with due work per turn, tenants in rotation order, round
	// after round. It returns ErrEmpty when nothing is due.
	Claim(ctx context.Context, req ClaimRequest) ([]Lease, error)
	// Heartbeat extends a live lease to now+extend and returns it with
	// its new token. *LeaseLostError if the token no longer matches.
	Heartbeat(ctx context.Context, lease Lease, extend time.Duration) (Lease, error)
	// Complete removes the items of the given leases, each fenced by its
	// own token. Leases whose token no longer matches are left untouched
	// and named in the returned *LeaseLostError; the others complete.
	//
	// A batch settles its leases in order, as that many Complete calls one
	// after another would: an item named twice completes once, and the
	// entry that finds it gone (or held under another token) is reported
	// lost. So a stale lease and the live lease of one item in one batch
	// complete the item and name the stale one. Complete does not keep
	// the leases slice after it returns: callers (the runner does) reuse
	// it for their next batch.
	Complete(ctx context.Context, leases ...Lease) error
	// Fail records cause against the lease and lets the policy decide:
	// back to the queue at a later time, or to the dead letter.
	Fail(ctx context.Context, lease Lease, cause error) (policy.Decision, error)
	// Reap hands every lease of the queue that expired before now to the
	// policy, as if its holder had failed with ErrLeaseExpired, and
	// returns how many it reaped. A lease heartbeated meanwhile is kept.
	Reap(ctx context.Context, queue string) (int, error)
	// DeadLetters pages through the dead letters matching the filter.
	DeadLetters(ctx context.Context, q DeadLetterQuery) (ItemPage, error)
	// Requeue moves the matching dead letters back to their queue, due at
	// once with attempts reset, and returns how many moved.
	Requeue(ctx context.Context, f DeadLetterFilter) (int, error)
	// Purge deletes the matching dead letters and returns how many.
	Purge(ctx context.Context, f DeadLetterFilter) (int, error)
}

// Waker is implemented by queues that can signal "work may be ready". A
// wake is a hint, never a delivery: claimers re-poll on a safety-net
// interval whatever the waker says.
type Waker interface {
	// Subscribe returns a channel that receives a value when work may be
	// ready on the queue, and a func that ends the subscription. The
	// channel is buffered; wakes arriving while it is full are dropped.
	Subscribe(queue string) (<-chan struct{}, func())
}

// CompleteClaimer is implemented by queues that can settle finished leases
// and claim the next batch in one round trip. It saves a call, but it also
// puts the completes on the claim's path: where completes already run
// concurrently with claims (the runner's default) it is measured no faster,
// so the runner uses it only when Config.CarryCompletes asks it to.
type CompleteClaimer interface {
	// CompleteAndClaim completes done exactly as Complete would, then
	// claims exactly as Claim would with req. The claimed leases are
	// returned even when some of done were lost: the error is then a
	// *LeaseLostError naming them (nil leases and ErrEmpty when nothing was
	// due and nothing was lost). A req.Max of 0 only completes. Bad input
	// in either half is refused before anything is sent. Any other error
	// leaves the completes in an unknown state: complete them again and
	// expect some to be reported lost. Like Complete, it does not keep
	// the done slice after it returns.
	CompleteAndClaim(ctx context.Context, done []Lease, req ClaimRequest) ([]Lease, error)
}
