package memstore

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTreeAgainstModel drives the treap and a sorted slice with the same
// random operations and compares every answer.
func TestTreeAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tr := newTree[int64, int64](cmpInt64)
	var model []int64
	for step := range 20000 {
		k := r.Int64N(500)
		i, found := slices.BinarySearch(model, k)
		switch r.IntN(3) {
		case 0, 1:
			tr.Put(k, k*10)
			if !found {
				model = slices.Insert(model, i, k)
			}
		case 2:
			if got := tr.Delete(k); got != found {
				t.Fatalf("step %d: Delete(%d) = %v, want %v", step, k, got, found)
			}
			if found {
				model = slices.Delete(model, i, i+1)
			}
		}
		if tr.Len() != len(model) {
			t.Fatalf("step %d: Len = %d, want %d", step, tr.Len(), len(model))
		}
		if v, ok := tr.Get(k); ok != slices.Contains(model, k) || (ok && v != k*10) {
			t.Fatalf("step %d: Get(%d) = %d, %v", step, k, v, ok)
		}
		b := r.Int64N(510) - 5
		below, _ := slices.BinarySearch(model, b)
		if got := tr.CountBelow(b); got != below {
			t.Fatalf("step %d: CountBelow(%d) = %d, want %d", step, b, got, below)
		}
		if step%97 == 0 {
			var got []int64
			tr.Ascend(&b, func(k, _ int64) bool { got = append(got, k); return len(got) < 7 })
			after, found := slices.BinarySearch(model, b)
			if found {
				after++
			}
			want := model[after:min(after+7, len(model))]
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: Ascend after %d = %v, want %v", step, b, got, want)
			}
			got = got[:0]
			tr.Descend(&b, func(k, _ int64) bool { got = append(got, k); return len(got) < 7 })
			atMost, found := slices.BinarySearch(model, b)
			if found {
				atMost++
			}
			down := slices.Clone(model[max(0, atMost-7):atMost])
			slices.Reverse(down)
			if !slices.Equal(got, down) {
				t.Fatalf("step %d: Descend at most %d = %v, want %v", step, b, got, down)
			}
			got = got[:0]
			tr.Descend(nil, func(k, _ int64) bool { got = append(got, k); return true })
			if rev := slices.Clone(model); len(got) != len(rev) || !slices.Equal(got, func() []int64 { slices.Reverse(rev); return rev }()) {
				t.Fatalf("step %d: full Descend = %v, want the model reversed", step, got)
			}
			got = got[:0]
			tr.Ascend(nil, func(k, _ int64) bool { got = append(got, k); return true })
			if !slices.Equal(got, model) {
				t.Fatalf("step %d: full Ascend = %v, want %v", step, got, model)
			}
			if k, _, ok := tr.Min(); ok != (len(model) > 0) || (ok && k != model[0]) {
				t.Fatalf("step %d: Min = %d, %v", step, k, ok)
			}
		}
	}
}
