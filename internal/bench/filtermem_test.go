package bench

import (
	"context"
	"slices"
	"testing"
)

// TestFilterMemStudy runs the study on small stores: one result per
// strategy, mix and memory, every lookup checked, the Zipf mix measured
// on every ranking asked for, and more memory never wasting more reads
// under the same strategy by much.
func TestFilterMemStudy(t *testing.T) {
	c := FilterMemConfig{Keys: 20_000, ValueSize: 16, Lookups: 20_000, Bits: []float64{5, 10}, Seed: 1, Pebble: true,
		ZipfRankings: 3}
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
		if want := c.rankings(r.Mix); r.Rankings != want || (want > 1) != (r.WastedSE > 0) {
			t.Errorf("%s, %s: %d rankings, standard error %v; want %d rankings", r.Strategy, r.Mix, r.Rankings, r.WastedSE, want)
		}
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

// TestFilterMemStudy_Rankings checks that the Zipf rankings differ where
// it matters: the 100 hottest keys of one ranking share few with
// another's, and ranking 0 is the seed's own.
func TestFilterMemStudy_Rankings(t *testing.T) {
	const keys, hottest, rankings = 100_000, 100, 4
	c := FilterMemConfig{Keys: keys, Seed: 7}
	sets := make([]map[int]bool, rankings)
	for r := range rankings {
		sets[r] = map[int]bool{}
		for rank := range uint64(hottest) {
			sets[r][c.zipfID(rank, r, keys)] = true
		}
	}
	if c.zipfID(3, 0, keys) != int(Mix64(3^c.Seed)%(2*keys)) {
		t.Errorf("ranking 0 is not the seed's own")
	}
	pairs := 0
	for a := range rankings {
		for b := a + 1; b < rankings; b++ {
			shared := 0
			for id := range sets[a] {
				if sets[b][id] {
					shared++
				}
			}
			if shared > 5 {
				t.Errorf("rankings %d and %d share %d of their %d hottest keys", a, b, shared, hottest)
			}
			pairs++
		}
	}
	if pairs != rankings*(rankings-1)/2 {
		t.Fatalf("%d pairs compared", pairs)
	}
}
