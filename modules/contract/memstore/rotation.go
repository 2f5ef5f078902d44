package memstore

import (
	"cmp"
	"time"

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
	due     *tree[int64, *tenantQueue]
	waiting *tree[waitKey, *tenantQueue]
	leases  *tree[leaseKey, *entry]
	dead    *tree[int64, *entry]

	recent     []contract.Turn // ring of the latest turns
	recentNext int

	// Flow control (see flow.go): limited is whether any limit is set.
	limits    map[string]contract.Limits
	defLimits contract.Limits
	limited   bool
}

// tenantQueue is one tenant's part of a queue.
type tenantQueue struct {
	name   string
	ready  *tree[readyKey, *entry] // queued items, due first, then in enqueue order
	leased int
	dead   int
	served int64
	stamp  int64
	place  place
	waitAt time.Time // the key under which it sits in waiting
	flow   flowState
}

type place uint8

const (
	unplaced place = iota // no queued item: not in the rotation
	inDue
	inWaiting
)

// entry is an item as the store holds it.
type entry struct {
	item  contract.Item
	ready readyKey // while queued

	// While leased.
	token   int64
	worker  string
	expires time.Time

	deadSeq int64 // while dead
}

type readyKey struct {
	due time.Time
	seq int64
}

func cmpReady(a, b readyKey) int {
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
		due:     newTree[int64, *tenantQueue](cmpInt64),
		waiting: newTree[waitKey, *tenantQueue](cmpWait),
		leases:  newTree[leaseKey, *entry](cmpLease),
		dead:    newTree[int64, *entry](cmpInt64),
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
		tq = &tenantQueue{name: name, ready: newTree[readyKey, *entry](cmpReady)}
		q.tenants[name] = tq
	}
	return tq
}

// push queues e for its tenant, due at due. A tenant that had no queued
// work joins the rotation at the back; one already in it keeps its place.
func (s *store) push(q *queue, tq *tenantQueue, e *entry, due time.Time, now time.Time) {
	s.seq++
	e.ready = readyKey{due: due, seq: s.seq}
	e.item.State = contract.StateQueued
	if tq.place == unplaced {
		q.turn++
		tq.stamp = q.turn
		tq.flow.credit = 0
	} else {
		q.unplace(tq)
	}
	tq.ready.Put(e.ready, e)
	q.place(tq, now)
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
	k, _, ok := tq.ready.Min()
	switch {
	case !ok:
		tq.place = unplaced
	case !k.due.After(now):
		tq.place = inDue
		q.due.Put(tq.stamp, tq)
	default:
		tq.place = inWaiting
		tq.waitAt = k.due
		q.waiting.Put(waitKey{tq.waitAt, tq.stamp}, tq)
	}
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
	for {
		_, tq, ok := q.due.Min()
		if !ok {
			return nil
		}
		if k, _, _ := tq.ready.Min(); !k.due.After(now) {
			return tq
		}
		// The clock went back: the item is not due after all.
		q.unplace(tq)
		q.place(tq, now)
	}
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
