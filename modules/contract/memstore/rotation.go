package memstore

import (
	"cmp"
	"time"
	"unsafe"

	"github.com/adkit/adk/modules/contract"
)

// queue is one named queue: per-tenant ready items, the tenant rotation,
// the leases by expiry and the dead letters by the order they died in.
//
// The rotation is kept as a turn stamp per tenant: a tenant that is served
// or newly gets work takes the next stamp, which sends it to the back, and
// the tenant with the smallest stamp is at the head. Tenants whose earliest
// item is due sit in due (by stamp); tenants whose items are all delayed
// sit in waiting (by the time their first item falls due) and keep their
// stamp, hence their place. A claim moves the tenants that fell due from
// waiting to due, then serves due's head, so it costs O(log n) per item
// whatever the number of idle tenants.
type queue struct {
	name    string
	tenants map[string]*tenantQueue
	items   int   // items of every state
	turn    int64 // the last stamp given
	due     *ordered[int64, *tenantQueue]
	waiting *tree[waitKey, *tenantQueue]
	leases  *tree[leaseKey, *entry]
	dead    *tree[int64, *entry]

	recent     []contract.Turn // ring of the latest turns
	recentNext int

	// Flow control (see flow.go): limited is whether any limit is set.
	limits    map[string]contract.Limits
	defLimits contract.Limits
	limited   bool

	// Lifecycle (see lifecycle.go).
	paused        bool
	pausedTenants int                     // how many tenants are paused
	parked        *tree[int64, *entry]    // waiting items, by the seq of their wait (oldest first)
	timeouts      *tree[readyKey, *entry] // waiting items, by when their wait times out
	cancelled     *tree[readyKey, *entry] // cancelled items, by when they were cancelled

	// History (see history.go). keeping: ret is not zero, so finishes and
	// transitions take the history hooks.
	ret      contract.Retention
	keeping  bool
	finished *ordered[finKey, *entry] // completed and cancelled items, by FinishedAt
	ids      map[string]*entry        // every item by ID, those of one ID chained by nextID and prevID; nil until the queue's first Find
	log      []contract.Event         // ring of the latest QueueEventLog events
	logSeq   int64                    // the seq of the last event logged
}

// tenantQueue is one tenant's part of a queue. Its fields are in the
// order a claim and a settle read them: what both read (up to the flow
// standing's credit) fills the first three of its four cache lines, and
// what only budgets, dead letters, waits and cancels use comes last.
type tenantQueue struct {
	name string
	// items holds every item of the tenant in the queue, whatever its
	// state, by ID: the index a settle, a cancel or an enqueue's
	// duplicate check uses. It is the tenant's own, so a settle reads a
	// map as small as the tenant (next to the tenant it has just read)
	// rather than one entry of a map of every item of every tenant.
	items map[string]*entry
	// ready holds the queued items that are due, highest priority first,
	// then by due time, then in enqueue order; later holds those not yet
	// due, by due time. promote moves items from later to ready as they
	// fall due.
	ready  readySet
	later  tree[readyKey, *entry]
	leased int
	stamp  int64
	served int64
	place  place
	paused bool
	flow   flowState

	dead      int
	waiting   int
	cancelled int
	waitAt    time.Time // the key under which it sits in waiting
}

type place uint8

const (
	unplaced place = iota // no queued item: not in the rotation
	inDue
	inWaiting
)

// entry is an item as the store holds it.
type entry struct {
	item    contract.Item
	tq      *tenantQueue // its tenant's part of its queue (a queue never forgets a tenant)
	ready   readyKey     // while queued
	isLater bool         // while queued: in the tenant's later tree, not ready
	waitSeq int64        // while waiting: the key in parked

	// While leased.
	token   int64
	worker  string
	expires time.Time

	deadSeq int64 // while dead

	nextID    *entry       // the next item of the same ID in the queue's index
	prevID    *entry       // the item before it there; nil at the chain's head
	hist      *itemHistory // recorded events, when the queue records them
	claimedAt time.Time    // when its lease was claimed, when events are recorded
}

type readyKey struct {
	rank int // -Priority, so that higher priorities sort first
	due  time.Time
	seq  int64
}

// cmpDue orders items by due time, then seq.
func cmpDue(a, b readyKey) int {
	if c := a.due.Compare(b.due); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

type waitKey struct {
	at    time.Time
	stamp int64
}

func cmpWait(a, b waitKey) int {
	if c := a.at.Compare(b.at); c != 0 {
		return c
	}
	return cmp.Compare(a.stamp, b.stamp)
}

type leaseKey struct {
	expires time.Time
	token   int64
}

func cmpLease(a, b leaseKey) int {
	if c := a.expires.Compare(b.expires); c != 0 {
		return c
	}
	return cmp.Compare(a.token, b.token)
}

func (e *entry) leaseKey() leaseKey { return leaseKey{e.expires, e.token} }

func newQueue(name string) *queue {
	return &queue{
		name:    name,
		tenants: make(map[string]*tenantQueue),
		due:     newOrdered[int64, *tenantQueue](cmpInt64),
		waiting: newTree[waitKey, *tenantQueue](cmpWait),
		leases:  newTree[leaseKey, *entry](cmpLease),
		dead:    newTree[int64, *entry](cmpInt64),

		parked:    newTree[int64, *entry](cmpInt64),
		timeouts:  newTree[readyKey, *entry](cmpDue),
		cancelled: newTree[readyKey, *entry](cmpDue),

		finished: newOrdered[finKey, *entry](cmpFin),
	}
}

func (s *store) queue(name string) *queue {
	q := s.queues[name]
	if q == nil {
		q = newQueue(name)
		s.queues[name] = q
	}
	return q
}

func (q *queue) tenant(name string) *tenantQueue {
	tq := q.tenants[name]
	if tq == nil {
		tq = &tenantQueue{name: name, items: make(map[string]*entry), later: *newTree[readyKey, *entry](cmpDue)}
		q.tenants[name] = tq
	}
	return tq
}

// push queues e for its tenant, due at due. A tenant that had no queued
// work joins the rotation at the back; one already in it keeps its place.
func (s *store) push(q *queue, tq *tenantQueue, e *entry, due time.Time, now time.Time) {
	s.seq++
	e.ready = readyKey{rank: -e.item.Priority, due: due, seq: s.seq}
	e.item.State = contract.StateQueued
	if due.After(now) {
		e.isLater = true
		tq.later.Put(e.ready, e)
	} else {
		e.isLater = false
		tq.ready.Put(e.ready, e)
	}
	switch tq.place {
	case inDue:
		return // it has due work already: where it stands does not change
	case unplaced:
		q.turn++
		tq.stamp = q.turn
		tq.flow.credit = 0
	default:
		q.unplace(tq)
	}
	q.place(tq, now)
}

// queued counts the tenant's queued items, due or not.
func (tq *tenantQueue) queued() int { return tq.ready.Len() + tq.later.Len() }

// promote moves the tenant's items that are due by now into ready.
func (tq *tenantQueue) promote(now time.Time) {
	for {
		k, e, ok := tq.later.Min()
		if !ok || k.due.After(now) {
			return
		}
		tq.later.Delete(k)
		e.isLater = false
		tq.ready.Put(k, e)
	}
}

// unqueue takes a queued item out of its tenant's trees.
func (tq *tenantQueue) unqueue(e *entry) {
	if e.isLater {
		tq.later.Delete(e.ready)
	} else {
		tq.ready.Delete(e.ready)
	}
}

func (q *queue) unplace(tq *tenantQueue) {
	switch tq.place {
	case inDue:
		q.due.Delete(tq.stamp)
	case inWaiting:
		q.waiting.Delete(waitKey{tq.waitAt, tq.stamp})
	}
	tq.place = unplaced
}

// place puts an unplaced tenant where its earliest item says.
func (q *queue) place(tq *tenantQueue, now time.Time) {
	tq.promote(now)
	if tq.ready.Len() > 0 {
		tq.place = inDue
		q.due.Put(tq.stamp, tq)
		return
	}
	k, _, ok := tq.later.Min()
	if !ok {
		tq.place = unplaced
		return
	}
	tq.place = inWaiting
	tq.waitAt = k.due
	q.waiting.Put(waitKey{tq.waitAt, tq.stamp}, tq)
}

// next returns the tenant whose turn it is among those with a due item.
func (q *queue) next(now time.Time) *tenantQueue {
	for {
		k, tq, ok := q.waiting.Min()
		if !ok || k.at.After(now) {
			break
		}
		q.unplace(tq)
		q.place(tq, now)
	}
	_, tq, ok := q.due.Min()
	if !ok {
		return nil
	}
	return tq
}

func (q *queue) remember(t contract.Turn, keep int) {
	if len(q.recent) < keep {
		q.recent = append(q.recent, t)
		return
	}
	q.recent[q.recentNext] = t
	q.recentNext = (q.recentNext + 1) % len(q.recent)
}

// lastTurns returns up to n of the latest turns, most recent last.
func (q *queue) lastTurns(n int) []contract.Turn {
	n = min(n, len(q.recent))
	out := make([]contract.Turn, 0, n)
	// Once the ring is full, recentNext is its oldest slot.
	for i := len(q.recent) - n; i < len(q.recent); i++ {
		out = append(out, q.recent[(q.recentNext+i)%len(q.recent)])
	}
	return out
}

// warmth reads a word in each of the cache lines of e, all of which a
// claim reads or writes (it copies the whole item into the lease, then
// writes the lease's fields): an entry spans eight lines and need not
// start at one, so it reads a word every warmStride bytes, whatever the
// fields. Reading two of them instead, as warm did, left a claim by
// priority waiting for the other lines item after item.
func (e *entry) warmth() int64 {
	var sum int64
	p := unsafe.Pointer(e)
	for off := uintptr(0); off < unsafe.Sizeof(*e); off += warmStride {
		sum += *(*int64)(unsafe.Add(p, off))
	}
	return sum
}

// warmStride is less than a cache line, so that the words warmth reads
// leave no line between them, and a multiple of a word's size.
const warmStride = 56

// warm reads, for the first of the n items a claim is about to serve,
// the words the claim will read: each tenant's, its first ready slots'
// and their items'. The claim reads them one item after another, each
// read waiting on the one before (tenant, then slot, then item) and on
// the work between; read here in a loop that uses nothing it reads, the
// reads of different tenants and items are in flight together. So with
// many tenants (whose parts are no longer in the processor's cache), or
// a tenant whose items are served out of their enqueue order (by
// priority, so each lies apart from the one before), the claim waits for
// memory about once rather than once per item. With fewer tenants due
// than n, each gives the claim several items, and as many of its slots
// are read. It returns a sum only so that the reads stay.
func (q *queue) warm(n int) int64 {
	var sum int64
	tenants := min(n, q.due.n)
	if tenants == 0 {
		return 0
	}
	per := (n + tenants - 1) / tenants
	for i := range tenants {
		tq := q.due.at(i).val
		if tq == nil { // a hole
			continue
		}
		sum += tq.stamp + int64(tq.leased+tq.flow.credit)
		if len(tq.ready.levels) == 0 {
			continue
		}
		l := &tq.ready.levels[0].t
		for j := range min(per, l.n) {
			if e := l.at(j).val; e != nil { // nil: a hole
				sum += e.warmth()
			}
		}
	}
	return sum
}
