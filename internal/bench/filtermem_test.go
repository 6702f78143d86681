package bench

import (
	"context"
	"slices"
	"testing"
)

// TestFilterMemStudy runs the study on small stores: one result per
// strategy, mix and memory, every lookup checked, and more memory never
// wasting more reads under the same strategy by much.
func TestFilterMemStudy(t *testing.T) {
	c := FilterMemConfig{Keys: 20_000, ValueSize: 16, Lookups: 20_000, Bits: []float64{5, 10}, Seed: 1, Pebble: true}
	res, err := FilterMemStudy(context.Background(), c, func(r FilterMemResult) { t.Logf("%+v", r) })
	if err != nil {
		t.Fatal(err)
	}
	strategies := append(slices.Clone(FilterStrategies), PebbleStrategies...)
	if want := len(c.Bits) * len(strategies) * len(LookupMixes); len(res) != want {
		t.Fatalf("%d results, want %d", len(res), want)
	}
	ran := map[FilterStrategy]map[LookupMix]int{}
	for _, r := range res {
		if r.Wasted < 0 || r.Spent <= 0 && r.Strategy != StrategyNoBottom {
			t.Errorf("%+v", r)
		}
		if ran[r.Strategy] == nil {
			ran[r.Strategy] = map[LookupMix]int{}
		}
		ran[r.Strategy][r.Mix]++
	}
	for _, s := range strategies {
		for _, m := range LookupMixes {
			if ran[s][m] != len(c.Bits) {
				t.Errorf("%s, %s: %d results, want %d", s, m, ran[s][m], len(c.Bits))
			}
		}
	}
	// Inside Pebble, more bits per key never waste more on absent keys.
	for _, s := range PebbleStrategies {
		var wasted []float64
		for _, r := range res {
			if r.Strategy == s && r.Mix == MixAbsent {
				wasted = append(wasted, r.Wasted)
			}
		}
		if wasted[1] > wasted[0] || wasted[0] <= 0 {
			t.Errorf("%s: wasted reads per absent lookup at %v bits/key: %v", s, c.Bits, wasted)
		}
	}
}
