package main

import (
	"math"
	"testing"
)

func TestDBLevel_Derive(t *testing.T) {
	l := dbLevel{Keys: 100, FilterBytes: 125,
		Lookups: lookupCounts{FilterNegatives: 99, FilterTruePositives: 7, FilterFalsePositives: 1}}
	l.derive()
	if float64(l.BitsPerKey) != 10 || math.Abs(float64(l.FPR)-0.01) > 1e-12 {
		t.Errorf("got %v bits/key and FPR %v, want 10 and 0.01", l.BitsPerKey, l.FPR)
	}

	empty := dbLevel{}
	empty.derive()
	if !math.IsNaN(float64(empty.BitsPerKey)) || !math.IsNaN(float64(empty.FPR)) {
		t.Errorf("an empty level got %v bits/key and FPR %v, want neither", empty.BitsPerKey, empty.FPR)
	}
}
