package memstore

// readySet holds a tenant's due items: one tree per priority in use,
// highest first, each ordered by due time then seq. Items of one priority
// arrive mostly in order, so each tree grows at its end however the
// priorities of a batch are mixed, and a tenant that uses no priorities
// has one tree, as it had before priorities existed.
type readySet struct {
	levels []readyLevel // by rank, ascending (priority descending)
	n      int
}

type readyLevel struct {
	rank int
	t    *tree[readyKey, *entry]
}

// level returns the tree of rank, creating it when create is set.
func (r *readySet) level(rank int, create bool) *tree[readyKey, *entry] {
	for i, l := range r.levels {
		switch {
		case l.rank == rank:
			return l.t
		case l.rank > rank:
			if !create {
				return nil
			}
			t := newTree[readyKey, *entry](cmpDue)
			r.levels = append(r.levels, readyLevel{})
			copy(r.levels[i+1:], r.levels[i:])
			r.levels[i] = readyLevel{rank: rank, t: t}
			return t
		}
	}
	if !create {
		return nil
	}
	t := newTree[readyKey, *entry](cmpDue)
	r.levels = append(r.levels, readyLevel{rank: rank, t: t})
	return t
}

// Put adds e under k.
func (r *readySet) Put(k readyKey, e *entry) {
	t := r.level(k.rank, true)
	before := t.Len()
	t.Put(k, e)
	r.n += t.Len() - before
}

// Delete removes k, dropping its priority's tree when it empties.
func (r *readySet) Delete(k readyKey) {
	t := r.level(k.rank, false)
	if t == nil || !t.Delete(k) {
		return
	}
	r.n--
	if t.Len() == 0 {
		for i, l := range r.levels {
			if l.t == t {
				r.levels = append(r.levels[:i], r.levels[i+1:]...)
				break
			}
		}
	}
}

// Get returns the entry under k.
func (r *readySet) Get(k readyKey) (*entry, bool) {
	if t := r.level(k.rank, false); t != nil {
		return t.Get(k)
	}
	return nil, false
}

// Min returns the first item to serve: the highest priority's earliest.
func (r *readySet) Min() (readyKey, *entry, bool) {
	if len(r.levels) == 0 {
		return readyKey{}, nil, false
	}
	return r.levels[0].t.Min()
}

// Len counts the due items.
func (r *readySet) Len() int { return r.n }

// Ascend calls fn on the items in serving order until it returns false.
func (r *readySet) Ascend(fn func(readyKey, *entry) bool) {
	for _, l := range r.levels {
		goOn := true
		l.t.Ascend(nil, func(k readyKey, e *entry) bool {
			goOn = fn(k, e)
			return goOn
		})
		if !goOn {
			return
		}
	}
}
