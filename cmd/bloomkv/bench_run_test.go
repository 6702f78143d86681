package main

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/bench"
)

// smallBenchOptions sizes the stores so that a few thousand keys settle
// into L0 and several levels, as a million do with the defaults.
func smallBenchOptions(t *testing.T, pebble bool) benchOptions {
	return benchOptions{keys: 8000, valueSize: 100, lookups: 2000, fpr: 0.01, cache: 1 << 20,
		memtable: 32 << 10, tableSize: 32 << 10, l1Size: 64 << 10, pebble: pebble, seed: 1,
		dir: t.TempDir()}
}

// runBenchRows runs every configuration of o, growing the stores in steps.
func runBenchRows(t *testing.T, o benchOptions) []benchRow {
	t.Helper()
	ours, err := bloompolicy.New(o.fpr)
	if err != nil {
		t.Fatal(err)
	}
	w := bench.NewWorkload(o.seed, o.keys, o.valueSize, o.lookups)
	var rows []benchRow
	for _, cfg := range benchConfigs(o, ours) {
		row, err := (&app{}).benchOne(context.Background(), cfg, w, o.dir+"/"+cfg.id, o)
		if err != nil {
			t.Fatalf("%s: %v", cfg.name, err)
		}
		rows = append(rows, row)
	}
	return rows
}

// TestBenchOne_Shapes runs the real engines through the shapes and checks
// what the shapes promise: the settled LSM has L0 tables and several
// levels below, not a manual compaction's single level; the compacted one is one level, where a lookup considers at most one table.
// A present key's lookup saves reads in the tables above the one holding
// it, so its reads saved exceed zero exactly where the LSM has more than
// one level.
func TestBenchOne_Shapes(t *testing.T) {
	o := smallBenchOptions(t, true)
	o.growth = true
	rows := runBenchRows(t, o)
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 4 bloomkv and 2 Pebble", len(rows))
	}
	for _, r := range rows {
		t.Run(r.Config, func(t *testing.T) {
			checkShapes(t, r, o)
			checkGrowth(t, r, o)
		})
	}
}

func checkShapes(t *testing.T, r benchRow, o benchOptions) {
	settled, _ := r.shape(shapeSettled)
	wh, _ := r.shape(shapeWriteHeavy)
	compacted, _ := r.shape(shapeCompacted)
	if len(settled.LSM) < 3 || settled.LSM[0].Level != 0 || settled.LSM[0].Tables != bench.SettledL0Tables {
		t.Errorf("settled: LSM %s, want %d L0 tables and several levels below", fmtShape(settled.LSM), bench.SettledL0Tables)
	}
	// How many L0 tables the write-heavy lookups meet depends on how far
	// the background flushes got, so only the sampling is checked here.
	if wh.L0 == nil || wh.L0.Min > wh.L0.Max || wh.Keys != o.keys+bench.WriteHeavyKeys(o.keys) {
		t.Errorf("write-heavy: L0 %+v over %d keys, want L0 sampled over %d keys", wh.L0, wh.Keys,
			o.keys+bench.WriteHeavyKeys(o.keys))
	}
	if settled.LSMAfter != nil || compacted.LSMAfter != nil {
		t.Errorf("the LSM changed during the lookups: settled to %s, compacted to %s",
			fmtShape(settled.LSMAfter), fmtShape(compacted.LSMAfter))
	}
	if len(compacted.LSM) != 1 || compacted.Absent.TablesPerLookup > 1 || compacted.Present.TablesPerLookup > 1 {
		t.Errorf("compacted: LSM %s, %v / %v tables per lookup; want one level, at most one table",
			fmtShape(compacted.LSM), compacted.Absent.TablesPerLookup, compacted.Present.TablesPerLookup)
	}
	for _, s := range r.Shapes {
		for _, p := range []phase{s.Absent, s.Present} {
			checkPhase(t, r, s.Shape, p, o)
		}
	}
	if r.Filter == filterNone {
		return
	}
	if settled.Present.ReadsSavedPerLookup <= 0 || wh.Present.ReadsSavedPerLookup <= 0 {
		t.Errorf("present keys saved %v reads per lookup settled, %v write-heavy; want some",
			settled.Present.ReadsSavedPerLookup, wh.Present.ReadsSavedPerLookup)
	}
	if fpr := float64(settled.Absent.FPR); fpr <= 0 || fpr > 0.05 {
		t.Errorf("settled: observed FPR %v, want near the 1%% target", fpr)
	}
}

// checkPhase checks that a phase's counters add up: every lookup counted,
// each table considered either skipped by its filter or read, and the
// levels summing to the total.
func checkPhase(t *testing.T, r benchRow, shape string, p phase, o benchOptions) {
	c := p.Lookups
	if c.Gets != int64(o.lookups) {
		t.Errorf("%s: %d gets counted, want %d", shape, c.Gets, o.lookups)
	}
	if r.Filter == filterNone && c.FilterNegatives+c.FilterTruePositives+c.FilterFalsePositives != 0 {
		t.Errorf("%s: filter verdicts %+v in a store without filters", shape, c)
	}
	if r.Filter != filterNone && c.TablesConsidered != c.FilterNegatives+c.FilterTruePositives+c.FilterFalsePositives {
		t.Errorf("%s: %d tables considered, but verdicts %+v", shape, c.TablesConsidered, c)
	}
	if r.Engine == enginePebble {
		if p.Levels != nil {
			t.Errorf("%s: Pebble counts no levels, got %+v", shape, p.Levels)
		}
		return
	}
	var sum lookupCounts
	for _, l := range p.Levels {
		sum = sum.plus(l.Lookups, 1)
	}
	sum.Gets = c.Gets
	if sum != c {
		t.Errorf("%s: levels add up to %+v, total %+v", shape, sum, c)
	}
}

// checkGrowth checks the growth series: the doubling steps up to the keys,
// the last being the settled shape, with the tables considered below L0
// not falling as the store grows from its first step to its last.
func checkGrowth(t *testing.T, r benchRow, o benchOptions) {
	steps := bench.GrowthSteps(o.keys, true)
	if len(r.Growth) != len(steps) {
		t.Fatalf("%d growth points, want %d", len(r.Growth), len(steps))
	}
	for i, g := range r.Growth {
		if g.Keys != steps[i] || g.Shape != shapeSettled {
			t.Errorf("growth point %d: %s with %d keys, want settled with %d", i, g.Shape, g.Keys, steps[i])
		}
	}
	settled, _ := r.shape(shapeSettled)
	last := r.Growth[len(r.Growth)-1]
	if fmt.Sprint(last) != fmt.Sprint(settled) {
		t.Errorf("last growth point differs from the settled shape:\n%+v\n%+v", last, settled)
	}
	// Tables per absent lookup below L0 (all of them where the engine
	// counts no levels): how many tables L0 holds under a key once
	// settled depends on when its tables merged, within L0 or into the
	// base level, and a bigger store may settle with fewer; its levels
	// below only grow.
	first := r.Growth[0]
	a, b := belowL0(first.Absent), belowL0(last.Absent)
	t.Logf("absent tables per lookup below L0: %v at %d keys, %v at %d", a, first.Keys, b, last.Keys)
	if math.IsNaN(a) || b < a {
		t.Errorf("absent tables per lookup below L0 went from %v at %d keys to %v at %d", a, first.Keys, b, last.Keys)
	}
}

// belowL0 returns the tables p's lookups considered per lookup below L0,
// or in all if the engine counts no levels.
func belowL0(p phase) float64 {
	if p.Levels == nil {
		return float64(p.TablesPerLookup)
	}
	var tables int64
	for _, l := range p.Levels {
		if l.Level > 0 {
			tables += l.Lookups.TablesConsidered
		}
	}
	return float64(tables) / float64(p.Lookups.Gets)
}
