package memstore

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOrderedAgainstTree drives ordered and the treap with the same random
// operations and compares every answer. The workloads are the queue's:
// keys mostly ascending and taken from the front, with some arriving
// between the ends, some deleted from the middle and put back, and runs
// that drain the map and grow it again (the ring's growth, compaction and
// shrinking all happen).
func TestOrderedAgainstTree(t *testing.T) {
	for _, w := range []struct {
		name                             string
		ascend, front, middle, late, del int   // weights of the operations
		first                            int   // of every 3 deletes, how many take the first key
		span                             int64 // keys drawn from [0, span) at random instead
	}{
		{"queue", 60, 5, 5, 0, 30, 2, 0},
		{"rotation", 40, 10, 10, 0, 40, 2, 0},
		{"holes", 55, 0, 0, 0, 45, 0, 0},
		{"random", 0, 0, 1, 0, 1, 0, 300},
		{"drain", 30, 0, 2, 0, 68, 2, 0},
		// Keys a few places before the last, as items finished by one
		// call arrive, some into the ring and some beside it.
		{"late", 40, 0, 2, 25, 33, 2, 0},
	} {
		t.Run(w.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(len(w.name))))
			o := newOrdered[int64, int64](cmpInt64)
			tr := newTree[int64, int64](cmpInt64)
			next := int64(1_000_000)
			key := func() int64 {
				lo, _, ok := tr.Min()
				if !ok {
					lo = next
				}
				return lo + r.Int64N(next-lo+1)
			}
			total := w.ascend + w.front + w.middle + w.late + w.del
			for step := range 60_000 {
				var k int64
				op := r.IntN(total)
				switch {
				case w.span > 0 && op < w.middle:
					k = r.Int64N(w.span)
					o.Put(k, k*3)
					tr.Put(k, k*3)
				case w.span > 0:
					k = r.Int64N(w.span)
					if got, want := o.Delete(k), tr.Delete(k); got != want {
						t.Fatalf("step %d: Delete(%d) = %v, want %v", step, k, got, want)
					}
				case op < w.ascend:
					next++
					k = next
					o.Put(k, k*3)
					tr.Put(k, k*3)
				case op < w.ascend+w.front:
					lo, _, ok := tr.Min()
					if !ok {
						lo = next
					}
					k = lo - 1 - r.Int64N(3)
					o.Put(k, k*3)
					tr.Put(k, k*3)
				case op < w.ascend+w.front+w.middle:
					k = key()
					o.Put(k, k*5)
					tr.Put(k, k*5)
				case op < w.ascend+w.front+w.middle+w.late:
					k = max(key(), next-r.Int64N(24))
					o.Put(k, k*7)
					tr.Put(k, k*7)
				default:
					if r.IntN(3) < w.first {
						k, _, _ = tr.Min() // the claim's delete: the first
					} else {
						k = key()
					}
					if got, want := o.Delete(k), tr.Delete(k); got != want {
						t.Fatalf("step %d: Delete(%d) = %v, want %v", step, k, got, want)
					}
				}
				ov, ook := o.Get(k)
				tv, tok := tr.Get(k)
				if ov != tv || ook != tok {
					t.Fatalf("step %d: Get(%d) = %d, %v; want %d, %v", step, k, ov, ook, tv, tok)
				}
				if o.Len() != tr.Len() {
					t.Fatalf("step %d: Len = %d, want %d", step, o.Len(), tr.Len())
				}
				ok1, ov1, oo := o.Min()
				tk1, tv1, to := tr.Min()
				if ok1 != tk1 || ov1 != tv1 || oo != to {
					t.Fatalf("step %d: Min = %d %d %v, want %d %d %v", step, ok1, ov1, oo, tk1, tv1, to)
				}
				if step%997 == 0 {
					var got, want []int64
					o.Ascend(nil, func(k, v int64) bool { got = append(got, k, v); return true })
					tr.Ascend(nil, func(k, v int64) bool { want = append(want, k, v); return true })
					if len(got) != len(want) {
						t.Fatalf("step %d: Ascend gave %d keys, want %d", step, len(got)/2, len(want)/2)
					}
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("step %d: Ascend differs at %d: %d, want %d", step, i/2, got[i], want[i])
						}
					}
					// Bounded walks both ways, from a key that may or may not be there.
					b := key()
					got, want = got[:0], want[:0]
					o.Ascend(&b, func(k, v int64) bool { got = append(got, k, v); return len(got) < 40 })
					tr.Ascend(&b, func(k, v int64) bool { want = append(want, k, v); return len(want) < 40 })
					if !slices.Equal(got, want) {
						t.Fatalf("step %d: Ascend after %d = %v, want %v", step, b, got, want)
					}
					got, want = got[:0], want[:0]
					o.Descend(&b, func(k, v int64) bool { got = append(got, k, v); return len(got) < 40 })
					tr.Descend(&b, func(k, v int64) bool { want = append(want, k, v); return len(want) < 40 })
					if !slices.Equal(got, want) {
						t.Fatalf("step %d: Descend from %d = %v, want %v", step, b, got, want)
					}
					got, want = got[:0], want[:0]
					o.Descend(nil, func(k, v int64) bool { got = append(got, k, v); return true })
					tr.Descend(nil, func(k, v int64) bool { want = append(want, k, v); return true })
					if !slices.Equal(got, want) {
						t.Fatalf("step %d: Descend = %v, want %v", step, got, want)
					}
					if len(got) > 2 { // stopping early stops
						n := 0
						o.Ascend(nil, func(int64, int64) bool { n++; return n < 2 })
						if n != 2 {
							t.Fatalf("step %d: Ascend went on after fn returned false (%d calls)", step, n)
						}
					}
				}
				if o.n > 0 && (o.at(0).hole || o.at(o.n-1).hole) {
					t.Fatalf("step %d: a hole at an end of the ring", step)
				}
			}
			// Drain it from the front, as claims do.
			for tr.Len() > 0 {
				k, v, _ := tr.Min()
				ok, ov, _ := o.Min()
				if ok != k || ov != v || !o.Delete(k) || !tr.Delete(k) {
					t.Fatalf("draining: Min = %d %d, want %d %d", ok, ov, k, v)
				}
			}
			if o.Len() != 0 || len(o.ring) > minRing {
				t.Fatalf("drained: Len %d, ring of %d slots kept", o.Len(), len(o.ring))
			}
		})
	}
}

// TestOrderedHoles makes the ring compact (and shrink) its holes, drop itself when
// drained at once, and stop a walk among the keys beside it.
func TestOrderedHoles(t *testing.T) {
	o := newOrdered[int64, int64](cmpInt64)
	for k := range int64(1000) {
		o.Put(k, k)
	}
	size := len(o.ring)
	for k := int64(1); k < 999; k++ {
		if !o.Delete(k) {
			t.Fatalf("Delete(%d) = false", k)
		}
	}
	if o.holes > compactFrom || o.Len() != 2 || len(o.ring) >= size {
		t.Fatalf("after deleting the middle: %d holes, Len %d, ring of %d slots (%d before)", o.holes, o.Len(), len(o.ring), size)
	}
	o.Delete(999)
	o.Delete(0)
	if o.Len() != 0 || o.ring != nil {
		t.Fatalf("drained: Len %d, ring of %d slots kept", o.Len(), len(o.ring))
	}

	o.Put(10, 1)
	o.Put(30, 3)
	o.Put(25, 2) // between the ends: beside the ring
	o.Delete(30)
	var seen []int64
	o.Ascend(nil, func(k, _ int64) bool { seen = append(seen, k); return k < 25 })
	if len(seen) != 2 || seen[0] != 10 || seen[1] != 25 {
		t.Fatalf("Ascend saw %v, want [10 25]", seen)
	}
	seen = seen[:0]
	o.Ascend(nil, func(k, _ int64) bool { seen = append(seen, k); return false })
	if len(seen) != 1 {
		t.Fatalf("Ascend went on after false: %v", seen)
	}
}
