package memstore

// ordered is an ordered map with unique keys, made for keys that mostly
// arrive in ascending order and leave from the front, as a tenant's
// items (by due time, then enqueue order) and the tenant rotation (by
// turn stamp) do. Those keys sit in a sorted ring buffer, where adding
// at either end and taking the first cost O(1) and touch memory next to
// the last access: a claim of ten reads ten neighbouring slots instead of
// descending a tree of nodes scattered over the heap, which is what made
// a claim over many tenants, or over items served out of their enqueue
// order, slower than over few. A key that arrives a few places before
// the last (items finished together, ordered by tenant and ID) goes into
// the ring, the keys after it moving up a slot; one that arrives further
// between the ends (a retried item due before newer ones, a tenant
// returning to the rotation with the stamp it kept) goes to a treap
// beside the ring.
//
// Deleting a key inside the ring leaves a hole that keeps the key, so
// the ring stays sorted and a Put of that key fills the hole again (a
// tenant leaving the rotation and coming back to its place). Holes at
// either end are trimmed at once; the ring is compacted when they are
// more than half of it, and shrunk when it is mostly empty.
type ordered[K, V any] struct {
	cmp   func(a, b K) int
	ring  []slot[K, V] // length a power of two, or zero
	head  int          // the index of the first slot in use
	n     int          // slots in use, holes included
	holes int
	side  *tree[K, V] // the keys that arrived between the ends; nil until one does
}

type slot[K, V any] struct {
	key  K
	val  V
	hole bool
}

const (
	// shiftMax is how far from the end of the ring a key arriving out of
	// order may go into the ring itself, the keys after it moving up a
	// slot: items finished in one call share their finish time and are
	// ordered by tenant and ID, so a batch's keys arrive a few places out
	// of order, and moving a few slots costs less than a tree's node.
	shiftMax    = 16
	minRing     = 8
	compactFrom = 32 // holes below this are never worth a compaction
)

func newOrdered[K, V any](cmp func(a, b K) int) *ordered[K, V] {
	return &ordered[K, V]{cmp: cmp}
}

func (o *ordered[K, V]) at(i int) *slot[K, V] {
	return &o.ring[(o.head+i)&(len(o.ring)-1)]
}

func (o *ordered[K, V]) sided() bool { return o.side != nil && o.side.root != nil }

// Len returns the number of keys.
func (o *ordered[K, V]) Len() int {
	n := o.n - o.holes
	if o.side != nil {
		n += o.side.Len()
	}
	return n
}

// search returns the ring position of the first slot whose key is not
// below k, and whether that slot holds k (a hole included).
func (o *ordered[K, V]) search(k K) (int, bool) {
	lo, hi := 0, o.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if o.cmp(o.at(mid).key, k) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < o.n && o.cmp(o.at(lo).key, k) == 0
}

// Get returns the value stored under k.
func (o *ordered[K, V]) Get(k K) (V, bool) {
	if o.sided() {
		if n := o.side.find(k); n != nil {
			return n.val, true
		}
	}
	if i, ok := o.search(k); ok && !o.at(i).hole {
		return o.at(i).val, true
	}
	var zero V
	return zero, false
}

// Put stores v under k, replacing any value already there.
func (o *ordered[K, V]) Put(k K, v V) {
	if o.sided() {
		if n := o.side.find(k); n != nil {
			n.val = v
			return
		}
	}
	switch {
	case o.n == 0 || o.cmp(k, o.at(o.n-1).key) > 0:
		o.resize(o.n + 1)
		*o.at(o.n) = slot[K, V]{key: k, val: v}
		o.n++
	case o.cmp(k, o.at(0).key) < 0:
		o.resize(o.n + 1)
		o.head = (o.head - 1) & (len(o.ring) - 1)
		*o.at(0) = slot[K, V]{key: k, val: v}
		o.n++
	default:
		i, ok := o.search(k)
		if !ok && o.n-i <= shiftMax {
			// Just before the last keys: move them up one slot rather
			// than start the tree beside the ring.
			if o.n == len(o.ring) {
				o.resize(o.n + 1)
				i, _ = o.search(k)
			}
			for j := o.n; j > i; j-- {
				*o.at(j) = *o.at(j - 1)
			}
			*o.at(i) = slot[K, V]{key: k, val: v}
			o.n++
			return
		}
		if !ok {
			if o.side == nil {
				o.side = newTree[K, V](o.cmp)
			}
			o.side.Put(k, v)
			return
		}
		s := o.at(i)
		if s.hole {
			s.hole = false
			o.holes--
		}
		s.val = v
	}
}

// Delete removes k and reports whether it was there.
func (o *ordered[K, V]) Delete(k K) bool {
	if o.sided() && o.side.Delete(k) {
		return true
	}
	if o.n == 0 {
		return false
	}
	i := 0
	if o.cmp(o.at(0).key, k) != 0 { // the first, as a claim takes it, needs no search
		var ok bool
		if i, ok = o.search(k); !ok {
			return false
		}
	}
	s := o.at(i)
	if s.hole {
		return false
	}
	*s = slot[K, V]{key: s.key, hole: true} // the key stays, to keep the ring sorted
	o.holes++
	o.trim()
	if o.holes >= compactFrom && 2*o.holes > o.n {
		o.resize(o.n - o.holes)
	}
	return true
}

// trim drops the holes at both ends.
func (o *ordered[K, V]) trim() {
	for o.n > 0 && o.at(0).hole {
		*o.at(0) = slot[K, V]{}
		o.head = (o.head + 1) & (len(o.ring) - 1)
		o.n--
		o.holes--
	}
	for o.n > 0 && o.at(o.n-1).hole {
		*o.at(o.n - 1) = slot[K, V]{}
		o.n--
		o.holes--
	}
	if o.n == 0 {
		o.head = 0
		if len(o.ring) > minRing {
			o.ring = nil // an empty map keeps at most a small ring
		}
	} else if len(o.ring) > 4*minRing && 4*o.n < len(o.ring) {
		o.resize(o.n)
	}
}

// resize makes room for need slots: a ring of twice the size when it is
// full, a smaller one when a quarter of it would do, and in either case
// (or when asked for fewer slots than are in use) a copy without holes.
func (o *ordered[K, V]) resize(need int) {
	size := len(o.ring)
	switch {
	case need > size:
		size = max(minRing, 2*size)
	case size > 4*minRing && 4*need < size:
		size /= 2
	case need >= o.n:
		return // room enough, nothing to drop
	}
	ring := make([]slot[K, V], size)
	j := 0
	for i := range o.n {
		if s := o.at(i); !s.hole {
			ring[j] = *s
			j++
		}
	}
	o.ring, o.head, o.n, o.holes = ring, 0, j, 0
}

// Min returns the smallest key and its value.
func (o *ordered[K, V]) Min() (K, V, bool) {
	if o.sided() {
		sk, sv, _ := o.side.Min()
		if o.n == 0 || o.cmp(sk, o.at(0).key) < 0 {
			return sk, sv, true
		}
	}
	if o.n == 0 {
		var k K
		var v V
		return k, v, false
	}
	s := o.at(0) // never a hole: trim drops them
	return s.key, s.val, true
}

// Ascend calls fn on every key in order, starting at the first key above
// after (at the smallest key when after is nil), until fn returns false.
// The keys beside the ring are merged in as the walk meets them, so a
// walk that stops early reads no further than it went.
func (o *ordered[K, V]) Ascend(after *K, fn func(K, V) bool) {
	i, goOn := 0, true
	if after != nil {
		var found bool
		if i, found = o.search(*after); found {
			i++
		}
	}
	// ring calls fn on the ring's keys from i on, up to bound when there
	// is one.
	ring := func(bound *K) {
		for ; goOn && i < o.n; i++ {
			s := o.at(i)
			if s.hole {
				continue
			}
			if bound != nil && o.cmp(s.key, *bound) > 0 {
				return
			}
			goOn = fn(s.key, s.val)
		}
	}
	if o.sided() {
		o.side.Ascend(after, func(k K, v V) bool {
			if ring(&k); goOn {
				goOn = fn(k, v)
			}
			return goOn
		})
	}
	ring(nil)
}

// Descend calls fn on every key in reverse order, starting at the largest
// key at or below atMost (at the largest key when atMost is nil), until
// fn returns false.
func (o *ordered[K, V]) Descend(atMost *K, fn func(K, V) bool) {
	i, goOn := o.n-1, true
	if atMost != nil {
		var found bool
		if i, found = o.search(*atMost); !found {
			i--
		}
	}
	// ring calls fn on the ring's keys from i down, down to bound when
	// there is one.
	ring := func(bound *K) {
		for ; goOn && i >= 0; i-- {
			s := o.at(i)
			if s.hole {
				continue
			}
			if bound != nil && o.cmp(s.key, *bound) < 0 {
				return
			}
			goOn = fn(s.key, s.val)
		}
	}
	if o.sided() {
		o.side.Descend(atMost, func(k K, v V) bool {
			if ring(&k); goOn {
				goOn = fn(k, v)
			}
			return goOn
		})
	}
	ring(nil)
}
