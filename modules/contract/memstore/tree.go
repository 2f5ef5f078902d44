package memstore

// tree is an ordered map with unique keys: a treap, whose random node
// priorities keep it balanced in expectation, so every operation is
// O(log n) without rebalancing code. Nodes carry subtree sizes so that
// counting the keys below a bound (how many items are due) is O(log n) too.
type tree[K, V any] struct {
	root *node[K, V]
	cmp  func(a, b K) int
	seed uint64 // xorshift state for node priorities
}

type node[K, V any] struct {
	key         K
	val         V
	prio        uint64
	size        int
	left, right *node[K, V]
}

func newTree[K, V any](cmp func(a, b K) int) *tree[K, V] {
	return &tree[K, V]{cmp: cmp, seed: 0x9E3779B97F4A7C15}
}

func (n *node[K, V]) fix() {
	n.size = 1 + n.left.count() + n.right.count()
}

func (n *node[K, V]) count() int {
	if n == nil {
		return 0
	}
	return n.size
}

func (t *tree[K, V]) priority() uint64 {
	x := t.seed
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	t.seed = x
	return x
}

// Len returns the number of keys.
func (t *tree[K, V]) Len() int { return t.root.count() }

// Get returns the value stored under k.
func (t *tree[K, V]) Get(k K) (V, bool) {
	n := t.root
	for n != nil {
		switch c := t.cmp(k, n.key); {
		case c < 0:
			n = n.left
		case c > 0:
			n = n.right
		default:
			return n.val, true
		}
	}
	var zero V
	return zero, false
}

// Put stores v under k, replacing any value already there.
func (t *tree[K, V]) Put(k K, v V) {
	if n := t.find(k); n != nil {
		n.val = v
		return
	}
	t.root = t.insert(t.root, &node[K, V]{key: k, val: v, prio: t.priority(), size: 1})
}

// insert adds nn, whose key n does not hold, to n in one descent: down
// to where nn's priority puts it, where the subtree below is split
// around its key.
func (t *tree[K, V]) insert(n, nn *node[K, V]) *node[K, V] {
	if n == nil {
		return nn
	}
	if nn.prio > n.prio {
		nn.left, nn.right = t.split(n, nn.key)
		nn.fix()
		return nn
	}
	if t.cmp(nn.key, n.key) < 0 {
		n.left = t.insert(n.left, nn)
	} else {
		n.right = t.insert(n.right, nn)
	}
	n.size++
	return n
}

func (t *tree[K, V]) find(k K) *node[K, V] {
	n := t.root
	for n != nil {
		switch c := t.cmp(k, n.key); {
		case c < 0:
			n = n.left
		case c > 0:
			n = n.right
		default:
			return n
		}
	}
	return nil
}

// Delete removes k and reports whether it was there.
func (t *tree[K, V]) Delete(k K) bool {
	var ok bool
	t.root, ok = t.del(t.root, k)
	return ok
}

func (t *tree[K, V]) del(n *node[K, V], k K) (*node[K, V], bool) {
	if n == nil {
		return nil, false
	}
	var ok bool
	switch c := t.cmp(k, n.key); {
	case c < 0:
		n.left, ok = t.del(n.left, k)
	case c > 0:
		n.right, ok = t.del(n.right, k)
	default:
		return merge(n.left, n.right), true
	}
	if ok {
		n.fix()
	}
	return n, ok
}

// split cuts n into the keys below k and the keys from k up.
func (t *tree[K, V]) split(n *node[K, V], k K) (lo, hi *node[K, V]) {
	if n == nil {
		return nil, nil
	}
	if t.cmp(n.key, k) < 0 {
		a, b := t.split(n.right, k)
		n.right = a
		n.fix()
		return n, b
	}
	a, b := t.split(n.left, k)
	n.left = b
	n.fix()
	return a, n
}

// merge joins two treaps where every key of a is below every key of b.
func merge[K, V any](a, b *node[K, V]) *node[K, V] {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = merge(a.right, b)
		a.fix()
		return a
	default:
		b.left = merge(a, b.left)
		b.fix()
		return b
	}
}

// Min returns the smallest key and its value.
func (t *tree[K, V]) Min() (K, V, bool) {
	n := t.root
	if n == nil {
		var k K
		var v V
		return k, v, false
	}
	for n.left != nil {
		n = n.left
	}
	return n.key, n.val, true
}

// CountBelow returns how many keys are smaller than k.
func (t *tree[K, V]) CountBelow(k K) int {
	c := 0
	n := t.root
	for n != nil {
		if t.cmp(n.key, k) < 0 {
			c += n.left.count() + 1
			n = n.right
		} else {
			n = n.left
		}
	}
	return c
}

// Ascend calls fn on every key in order, starting at the first key above
// after (at the smallest key when after is nil), until fn returns false.
func (t *tree[K, V]) Ascend(after *K, fn func(K, V) bool) {
	var stack []*node[K, V]
	for n := t.root; n != nil; {
		if after == nil || t.cmp(n.key, *after) > 0 {
			stack = append(stack, n)
			n = n.left
		} else {
			n = n.right
		}
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !fn(n.key, n.val) {
			return
		}
		for c := n.right; c != nil; c = c.left {
			stack = append(stack, c)
		}
	}
}

// Descend calls fn on every key in reverse order, starting at the largest
// key at or below atMost (at the largest key when atMost is nil), until fn
// returns false.
func (t *tree[K, V]) Descend(atMost *K, fn func(K, V) bool) {
	var stack []*node[K, V]
	for n := t.root; n != nil; {
		if atMost == nil || t.cmp(n.key, *atMost) <= 0 {
			stack = append(stack, n)
			n = n.right
		} else {
			n = n.left
		}
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !fn(n.key, n.val) {
			return
		}
		for c := n.left; c != nil; c = c.right {
			stack = append(stack, c)
		}
	}
}
