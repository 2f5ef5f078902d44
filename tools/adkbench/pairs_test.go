package main

import (
	"slices"
	"testing"
)

// Pairs take turns at which side runs first, and each side's row comes
// back in its place whatever the order.
func TestPairInTurn(t *testing.T) {
	var order []string
	base := func() row { order = append(order, "base"); return row{Value: 1} }
	alt := func() row { order = append(order, "alt"); return row{Value: 2} }
	for i := range 4 {
		one, two := pairInTurn(i, base, alt)
		if one.Value != 1 || two.Value != 2 {
			t.Fatalf("pair %d returned base %v, alt %v; want 1 and 2", i, one.Value, two.Value)
		}
	}
	want := []string{"base", "alt", "alt", "base", "base", "alt", "alt", "base"}
	if !slices.Equal(order, want) {
		t.Fatalf("runs in the order %v; want %v", order, want)
	}
}
