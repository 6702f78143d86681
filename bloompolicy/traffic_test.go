package bloompolicy

import (
	"math"
	"testing"
)

// wasted returns the expected wasted data-block reads per lookup of runs
// sized by filters: the sum of Count * Misses * FPR.
func wasted(runs []Runs, filters []RunFilter) float64 {
	sum := 0.0
	for i, r := range runs {
		if r.Keys > 0 {
			sum += float64(r.Count) * r.Misses * filters[i].FPR
		}
	}
	return sum
}

// mixRuns returns the levels of keys (one run each, top first) weighed by
// a mix in which a fraction present of lookups ask for a stored key, any
// key alike, and the rest for an absent one. An absent lookup reaches and
// misses every level; a present one stops at the level holding its key,
// missing every level above it.
func mixRuns(keys []int64, present float64) []Runs {
	var total float64
	for _, n := range keys {
		total += float64(n)
	}
	runs := make([]Runs, len(keys))
	below := total
	for i, n := range keys {
		below -= float64(n)
		runs[i] = Runs{Count: 1, Keys: n, Misses: (1 - present) + present*below/total}
	}
	return runs
}

// uniformFilters gives every run with keys the same bits per key, and
// runs beyond the first `filtered` none; the bits of the budget are spread
// over the filtered runs' keys.
func uniformFilters(runs []Runs, bitsPerKey float64, filtered int) []RunFilter {
	var all, kept float64
	for i, r := range runs {
		n := float64(r.Count) * float64(r.Keys)
		all += n
		if i < filtered {
			kept += n
		}
	}
	bits := min(bitsPerKey*all/kept, MaxBitsPerKey)
	out := make([]RunFilter, len(runs))
	for i := range runs {
		out[i] = RunFilter{FPR: 1}
		if i < filtered {
			out[i] = RunFilter{BitsPerKey: bits, FPR: ModelFPR(bits)}
		}
	}
	return out
}

// TestAllocate_TrafficRule pins the weighted rule: each filtered run's
// rate over its keys, times its Misses, is the same constant; a run no
// lookup misses in gets no filter; the bits spent are the budget's.
func TestAllocate_TrafficRule(t *testing.T) {
	runs := []Runs{{Count: 2, Keys: 1e5, Misses: 0.5}, {Count: 1, Keys: 1e6, Misses: 0.9},
		{Count: 1, Keys: 1e7, Misses: 0.3}, {Count: 1, Keys: 1e8, Misses: 0.05}, {Count: 1, Keys: 1e6}}
	filters, err := Allocate(runs, Budget{BitsPerKey: 8})
	if err != nil {
		t.Fatal(err)
	}
	keys, bits, _ := totals(runs, filters)
	if bits > 8*keys || bits < 8*keys*(1-1e-6) {
		t.Errorf("spends %.6f bits per key, want 8", bits/keys)
	}
	if f := filters[4]; f.BitsPerKey != 0 || f.FPR != 1 {
		t.Errorf("run of no misses gets %+v, want no filter", f)
	}
	ref := filters[0].FPR * runs[0].Misses / float64(runs[0].Keys)
	checked := 0
	for i, f := range filters[:4] {
		if f.BitsPerKey == 0 || f.BitsPerKey == MaxBitsPerKey {
			continue
		}
		got := f.FPR * runs[i].Misses / float64(runs[i].Keys)
		if math.Abs(got/ref-1) > 1e-3 {
			t.Errorf("run %d: rate*misses/keys is %.5f times run 0's", i, got/ref)
		}
		checked++
	}
	if checked < 4 {
		t.Fatalf("only %d runs checked", checked)
	}
	t.Logf("filters %+v", filters)
}

// TestAllocate_EqualMissesIsMonkey checks that runs weighed alike get
// Monkey's sizing, whatever the common weight.
func TestAllocate_EqualMissesIsMonkey(t *testing.T) {
	monkey, err := Allocate(treeRuns, Budget{BitsPerKey: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []float64{0.01, 1, 7} {
		runs := append([]Runs(nil), treeRuns...)
		for i := range runs {
			runs[i].Misses = w
		}
		got, err := Allocate(runs, Budget{BitsPerKey: 10})
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Abs(got[i].BitsPerKey-monkey[i].BitsPerKey) > 1e-6 {
				t.Errorf("misses %v: run %d gets %.6f bits, Monkey %.6f", w, i, got[i].BitsPerKey, monkey[i].BitsPerKey)
			}
		}
	}
}

// TestAllocate_Bytes checks that a budget of bytes spends 8 bits a byte,
// as the same budget in bits per key does.
func TestAllocate_Bytes(t *testing.T) {
	keys, _, _ := totals(treeRuns, make([]RunFilter, len(treeRuns)))
	for _, bytes := range []int64{1 << 20, 64 << 20, 256 << 20} {
		filters, err := Allocate(treeRuns, Budget{Bytes: bytes})
		if err != nil {
			t.Fatal(err)
		}
		_, bits, _ := totals(treeRuns, filters)
		if bits > 8*float64(bytes) || bits < 8*float64(bytes)*(1-1e-6) {
			t.Errorf("%d bytes: spends %.0f bits", bytes, bits)
		}
		same, err := Allocate(treeRuns, Budget{BitsPerKey: 8 * float64(bytes) / keys})
		if err != nil {
			t.Fatal(err)
		}
		for i := range same {
			if math.Abs(same[i].BitsPerKey-filters[i].BitsPerKey) > 1e-6 {
				t.Errorf("%d bytes: run %d gets %.6f bits, the same bits per key %.6f", bytes, i, filters[i].BitsPerKey, same[i].BitsPerKey)
			}
		}
	}
}

// TestAllocate_Mixes compares, on a model tree of an L0 table and three
// levels of ratio 10, the expected wasted reads per lookup of four ways to
// spend the same memory: uniform bits, uniform without the bottom level's
// filters, Monkey's rule and the traffic-aware rule, for the mixes of the
// filter-memory study. The traffic-aware rule must never lose to the
// others, and no shift of bits between two runs may improve on it (it is
// the optimum the rule claims). On this shape, with present keys drawn
// alike from all keys, the optimum is about 0.71 times Monkey's wasted
// reads for the 90/10 mix: no allocation reaches 0.6 here.
func TestAllocate_Mixes(t *testing.T) {
	keys := []int64{2e5, 1e6, 1e7, 1e8}
	cases := 0
	for _, tc := range []struct {
		present float64
		bits    float64
		target  float64 // traffic-aware over the best of the others, at most
	}{
		{0, 10, 1.0001},
		{0.9, 10, 0.75},
		{0.9, 5, 0.75},
	} {
		runs := mixRuns(keys, tc.present)
		monkeyRuns := append([]Runs(nil), runs...)
		for i := range monkeyRuns {
			monkeyRuns[i].Misses = 0
		}
		monkey, err := Allocate(monkeyRuns, Budget{BitsPerKey: tc.bits})
		if err != nil {
			t.Fatal(err)
		}
		traffic, err := Allocate(runs, Budget{BitsPerKey: tc.bits})
		if err != nil {
			t.Fatal(err)
		}
		others := map[string]float64{
			"uniform":   wasted(runs, uniformFilters(runs, tc.bits, len(runs))),
			"no-bottom": wasted(runs, uniformFilters(runs, tc.bits, len(runs)-1)),
			"monkey":    wasted(runs, monkey),
		}
		best := math.Inf(1)
		for _, w := range others {
			best = min(best, w)
		}
		got := wasted(runs, traffic)
		t.Logf("present %.0f%%, %v bits/key: traffic %.5f, %v (ratio %.3f)", 100*tc.present, tc.bits, got, others, got/best)
		if got > tc.target*best || got > others["monkey"]*(1+1e-9) {
			t.Errorf("present %.0f%%, %v bits/key: traffic-aware %.5f wasted reads, best other %.5f, target %.2fx", 100*tc.present, tc.bits, got, best, tc.target)
		}
		checkNoBetterShift(t, runs, traffic)
		cases++
	}
	if cases != 3 {
		t.Fatalf("%d cases ran", cases)
	}
}

// checkNoBetterShift moves a small share of the bits of each run with a
// filter to each other run, keeping the total, and fails if that lowers
// the wasted reads by more than 0.5%: the rule is exact for filters whose
// bits grow as -ln p, and the blocked layout costs a little more at low
// rates (see levels.go).
func checkNoBetterShift(t *testing.T, runs []Runs, filters []RunFilter) {
	t.Helper()
	base := wasted(runs, filters)
	shifts := 0
	for i := range runs {
		for j := range runs {
			if i == j || filters[i].BitsPerKey < 0.5 {
				continue
			}
			moved := 0.02 * filters[i].BitsPerKey * float64(runs[i].Keys) // bits
			f := append([]RunFilter(nil), filters...)
			bi := filters[i].BitsPerKey - moved/float64(runs[i].Keys)
			bj := min(filters[j].BitsPerKey+moved/float64(runs[j].Keys), MaxBitsPerKey)
			f[i] = RunFilter{BitsPerKey: bi, FPR: ModelFPR(bi)}
			f[j] = RunFilter{BitsPerKey: bj, FPR: ModelFPR(bj)}
			if w := wasted(runs, f); w < base*(1-5e-3) {
				t.Errorf("moving 2%% of run %d's bits to run %d: %.6g wasted reads, below the rule's %.6g", i, j, w, base)
			}
			shifts++
		}
	}
	if shifts == 0 {
		t.Fatal("no shift tried")
	}
}
