package memstore

import "slices"

// readySet holds a tenant's due items: one level per priority in use,
// highest first, each ordered by due time then seq. Items of one priority
// arrive mostly in order, so each level grows at its end (where ordered
// keeps them in a ring) however the priorities of a batch are mixed, and
// a tenant that uses no priorities has one level.
type readySet struct {
	levels []readyLevel // by rank, ascending (priority descending)
	n      int
}

type readyLevel struct {
	rank int
	t    ordered[readyKey, *entry] // held here, not behind a pointer: one cache line fewer per claim
}

// level returns the items of rank, adding a level for it when create is
// set. The pointer is good until the next level is added or dropped.
func (r *readySet) level(rank int, create bool) *ordered[readyKey, *entry] {
	i := 0
	for ; i < len(r.levels); i++ {
		switch l := &r.levels[i]; {
		case l.rank == rank:
			return &l.t
		case l.rank > rank:
			if !create {
				return nil
			}
			r.levels = slices.Insert(r.levels, i, readyLevel{rank: rank, t: *newOrdered[readyKey, *entry](cmpDue)})
			return &r.levels[i].t
		}
	}
	if !create {
		return nil
	}
	r.levels = append(r.levels, readyLevel{rank: rank, t: *newOrdered[readyKey, *entry](cmpDue)})
	return &r.levels[i].t
}

// Put adds e under k.
func (r *readySet) Put(k readyKey, e *entry) {
	t := r.level(k.rank, true)
	before := t.Len()
	t.Put(k, e)
	r.n += t.Len() - before
}

// Delete removes k, dropping its priority's level when it empties.
func (r *readySet) Delete(k readyKey) {
	t := r.level(k.rank, false)
	if t == nil || !t.Delete(k) {
		return
	}
	r.n--
	if t.Len() == 0 {
		r.levels = slices.DeleteFunc(r.levels, func(l readyLevel) bool { return l.rank == k.rank })
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
