package redisstore

import (
	"slices"
	"testing"
)

// TestDealInterleaves checks the dealing of turns between shards: each
// tenant once per run of as many turns as there are tenants, however they
// spread over shards, the new tenants of a shard spread among the others'.
func TestDealInterleaves(t *testing.T) {
	cases := []struct {
		lists [][]string
		want  []int
	}{
		{[][]string{{"a1", "a2"}, {"b"}, {"c"}}, []int{0, 1, 2, 0}},
		{[][]string{{"a1", "a2", "a3"}, {"b"}, nil}, []int{0, 0, 1, 0}},
		{[][]string{{"a"}, nil, nil}, []int{0, 0, 0}},
		{[][]string{nil, nil, nil}, []int{}},
	}
	for _, c := range cases {
		var f fairState
		got := f.deal(c.lists, len(c.want), true)
		if !slices.Equal(got, c.want) {
			t.Errorf("deal(%v) = %v, want %v", c.lists, got, c.want)
		}
	}
}

// TestDealOncePerRotation serves the dealt turns as the shards would
// (each rotating its own tenants) over many claims of several sizes and
// checks every window of as many turns as tenants serves each tenant once.
func TestDealOncePerRotation(t *testing.T) {
	for _, max := range []int{1, 3, 7} {
		lists := [][]string{{"T2"}, {"T0", "T3"}, {"T1"}}
		var f fairState
		var seq []string
		for len(seq) < 120 {
			picks := f.deal(lists, max, true)
			served := make([][]string, len(lists))
			for k, l := range lists { // each shard serves its share in its order
				for i := range count(picks, k) {
					served[k] = append(served[k], l[i%len(l)])
				}
				n := count(picks, k) % len(l)
				lists[k] = append(slices.Clone(l[n:]), l[:n]...)
			}
			next := make([]int, len(lists))
			for _, k := range picks {
				tn := served[k][next[k]]
				next[k]++
				f.served(tn)
				seq = append(seq, tn)
			}
		}
		for i := 0; i+4 <= len(seq); i++ {
			w := slices.Clone(seq[i : i+4])
			slices.Sort(w)
			if !slices.Equal(slices.Compact(w), []string{"T0", "T1", "T2", "T3"}) {
				t.Fatalf("max %d: turns %d..%d served %v", max, i+1, i+4, seq[i:i+4])
			}
		}
	}
}

func count(xs []int, x int) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

// TestDealPassesPaused: a paused tenant is dealt no turn and keeps its
// place at the head of its shard's list.
func TestDealPassesPaused(t *testing.T) {
	var f fairState
	paused := map[string]bool{"p": true}
	picks, tenants := f.dealTenants([][]string{{"p", "q"}, {"r"}}, paused, 4, true)
	if !slices.Equal(picks, []int{1, 0, 1, 0}) || !slices.Equal(tenants, []string{"r", "q", "r", "q"}) {
		t.Errorf("deal with p paused = %v %v, want r q r q", picks, tenants)
	}
	if picks, tenants = f.dealTenants([][]string{{"p", "q"}, {"r"}}, nil, 1, true); picks[0] != 0 || tenants[0] != "p" {
		t.Errorf("deal after p's resume = %v %v, want p first", picks, tenants)
	}
}
