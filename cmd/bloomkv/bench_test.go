package main

import (
	"errors"
	"math"
	"testing"
)

func TestBenchRow_Fill(t *testing.T) {
	r := benchRow{Filter: "bloomkv.bloom.v1",
		Absent: phase{Lookups: lookupCounts{Gets: 1000, TablesConsidered: 2000, FilterNegatives: 1980,
			FilterFalsePositives: 20, BlockReads: 20}},
		Present: phase{Lookups: lookupCounts{Gets: 1000, TablesConsidered: 1500, FilterNegatives: 495,
			FilterTruePositives: 1000, FilterFalsePositives: 5, BlockReads: 1005}},
	}
	r.fill(footprint{FilterBytes: 1250, Keys: 1000}, 0.01)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"observed FPR", float64(r.ObservedFPR), 0.01},
		{"target", float64(r.TargetFPR), 0.01},
		{"bits/key", float64(r.FilterBitsPerKey), 10},
		{"absent tables/lookup", float64(r.Absent.TablesPerLookup), 2},
		{"absent reads saved", float64(r.Absent.ReadsSavedPerLookup), 1.98},
		{"present block reads", float64(r.Present.BlockReadsPerLookup), 1.005},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}

	none := benchRow{Filter: "none", Absent: phase{Lookups: lookupCounts{Gets: 10, BlockReads: 10}}}
	none.fill(footprint{Keys: 100}, 0.01)
	if !math.IsNaN(float64(none.ObservedFPR)) || !math.IsNaN(float64(none.TargetFPR)) ||
		!math.IsNaN(float64(none.FilterBitsPerKey)) {
		t.Errorf("a store without filters got FPR %v, target %v, bits/key %v; want none",
			none.ObservedFPR, none.TargetFPR, none.FilterBitsPerKey)
	}
}

func TestCompareWithPebble(t *testing.T) {
	rows := []benchRow{
		{Config: "bloomkv, no filter", Engine: "bloomkv", Filter: "none", Absent: phase{NsPerOp: 9000}},
		{Config: "bloomkv, ours", Engine: "bloomkv", Filter: "A", Absent: phase{NsPerOp: 500}, Present: phase{NsPerOp: 900}},
		{Config: "bloomkv, theirs", Engine: "bloomkv", Filter: "B", Absent: phase{NsPerOp: 400}, Present: phase{NsPerOp: 800}},
		{Config: "pebble, ours", Engine: "pebble", Filter: "A", Absent: phase{NsPerOp: 1000}, Present: phase{NsPerOp: 1800}},
		{Config: "pebble, theirs", Engine: "pebble", Filter: "B", Absent: phase{NsPerOp: 2000}, Present: phase{NsPerOp: 400}},
	}
	got := compareWithPebble(rows)
	want := []vsPebble{{"ours", 0.5, 0.5}, {"theirs", 0.2, 2}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if got := compareWithPebble(rows[:3]); got != nil {
		t.Errorf("without Pebble rows: got %+v, want nothing", got)
	}
}

func TestBenchOptions_CheckPlot(t *testing.T) {
	o := benchOptions{keys: 1, lookups: 1, fpr: 0.01, cache: 1}
	for _, plot := range []string{"", "p.svg", "p.png", "P.SVG"} {
		o.plot = plot
		if err := o.check(); err != nil {
			t.Errorf("--plot %q: %v", plot, err)
		}
	}
	for _, plot := range []string{"p.pdf", "p"} {
		o.plot = plot
		var u usageError
		if err := o.check(); !errors.As(err, &u) {
			t.Errorf("--plot %q: got %v, want a usage error", plot, err)
		}
	}
}
