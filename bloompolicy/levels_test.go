package bloompolicy

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// treeRuns is a leveled tree of 2e8 keys: four L0 tables of 1e5 keys, then
// levels of 2e6, 2e7 and 2e8 keys.
var treeRuns = []Runs{{Count: 4, Keys: 1e5}, {Count: 1, Keys: 2e6}, {Count: 1, Keys: 2e7}, {Count: 1, Keys: 2e8}}

func totals(runs []Runs, filters []RunFilter) (keys, bits, fps float64) {
	for i, r := range runs {
		n := float64(r.Count) * float64(r.Keys)
		keys += n
		bits += n * filters[i].BitsPerKey
		if r.Keys > 0 {
			fps += float64(r.Count) * filters[i].FPR
		}
	}
	return keys, bits, fps
}

// TestAllocate_MonkeyRule checks the rule itself: rates proportional to the
// runs' key counts, and the budget spent, in both kinds of budget.
func TestAllocate_MonkeyRule(t *testing.T) {
	for _, budget := range []Budget{{BitsPerKey: 10}, {BitsPerKey: 5}, {FalsePositives: 0.05}, {FalsePositives: 0.001}} {
		filters, err := Allocate(treeRuns, budget)
		if err != nil {
			t.Fatalf("%+v: %v", budget, err)
		}
		keys, bits, fps := totals(treeRuns, filters)
		for i, f := range filters {
			ratio := f.FPR / float64(treeRuns[i].Keys) / (filters[0].FPR / float64(treeRuns[0].Keys))
			if math.Abs(ratio-1) > 1e-3 {
				t.Errorf("%+v: run %d's rate per key is %.5f times run 0's", budget, i, ratio)
			}
			if i > 0 && f.BitsPerKey >= filters[i-1].BitsPerKey {
				t.Errorf("%+v: run %d (larger) gets %.3f bits, run %d %.3f", budget, i, f.BitsPerKey, i-1, filters[i-1].BitsPerKey)
			}
		}
		if budget.BitsPerKey != 0 && (bits > budget.BitsPerKey*keys || bits < budget.BitsPerKey*keys*(1-1e-6)) {
			t.Errorf("%+v: spends %.6f bits per key", budget, bits/keys)
		}
		if budget.FalsePositives != 0 && (fps > budget.FalsePositives || fps < budget.FalsePositives*(1-1e-6)) {
			t.Errorf("%+v: sum of rates %.6g", budget, fps)
		}
		t.Logf("%+v: %.3f bits/key, %.4g false positives per absent lookup: %+v", budget, bits/keys, fps, filters)
	}
}

// TestAllocate_BeatsUniform compares with every run at the same bits per
// key: fewer false positives at equal memory, and for three levels of ratio
// 10 about half (Monkey's closed form gives exp(H)/3 = 0.47, with H the
// entropy of the key shares, for filters whose bits are the log of the rate;
// the blocked layout's penalty at low rates moves it a little).
func TestAllocate_BeatsUniform(t *testing.T) {
	uniform, err := NewBitsPerKey(10)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		runs     []Runs
		maxRatio float64
	}{
		{[]Runs{{Count: 1, Keys: 1e6}, {Count: 1, Keys: 1e7}, {Count: 1, Keys: 1e8}}, 0.55},
		{treeRuns, 0.25},
		{[]Runs{{Count: 1, Keys: 1e6}, {Count: 1, Keys: 1e6}}, 1 + 1e-6},
	} {
		filters, err := Allocate(tc.runs, Budget{BitsPerKey: 10})
		if err != nil {
			t.Fatal(err)
		}
		_, _, fps := totals(tc.runs, filters)
		runs := 0
		for _, r := range tc.runs {
			runs += r.Count
		}
		ratio := fps / (float64(runs) * uniform.ExpectedFPR())
		t.Logf("%v: %.4g false positives against %.4g uniform: %.3fx", tc.runs, fps, float64(runs)*uniform.ExpectedFPR(), ratio)
		if ratio > tc.maxRatio {
			t.Errorf("%v: %.3f times the uniform false positives, want at most %.2f", tc.runs, ratio, tc.maxRatio)
		}
	}
}

// TestAllocate_SizingAgreesWithNew checks that one run's rate costs the
// bits New finds for it, to the resolution of the curve.
func TestAllocate_SizingAgreesWithNew(t *testing.T) {
	for _, p := range []float64{0.1, 0.01, 1e-3, 1e-4, 1e-6} {
		filters, err := Allocate([]Runs{{Count: 1, Keys: 1000}}, Budget{FalsePositives: p})
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := filters[0].BitsPerKey; math.Abs(got-b.BitsPerKey()) > 1.0/curveSteps {
			t.Errorf("rate %g: %.4f bits per key, New sizes %.4f", p, got, b.BitsPerKey())
		}
		if got := filters[0].FPR; got > p || got < p*(1-1e-6) {
			t.Errorf("rate %g: allocated rate %g", p, got)
		}
	}
}

// TestAllocate_Edges covers runs without keys, runs that get no filter and
// budgets at the limits.
func TestAllocate_Edges(t *testing.T) {
	filters, err := Allocate([]Runs{{Count: 1, Keys: 0}, {Count: 1, Keys: 1000}}, Budget{BitsPerKey: 10})
	if err != nil {
		t.Fatal(err)
	}
	if filters[0].BitsPerKey != MaxBitsPerKey || math.Abs(filters[1].BitsPerKey-10) > 1e-6 {
		t.Errorf("empty run: %+v", filters)
	}
	// A budget of 3 false positives over two runs: the large one needs no
	// filter (its share would be a rate over 1).
	filters, err = Allocate([]Runs{{Count: 1, Keys: 1e3}, {Count: 1, Keys: 1e6}}, Budget{FalsePositives: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	if filters[1].BitsPerKey != 0 || filters[1].FPR != 1 || filters[0].FPR > 0.5+1e-6 || filters[0].FPR < 0.49 {
		t.Errorf("capped run: %+v", filters)
	}
	if p, err := filters[1].Policy(); p != nil || err != nil {
		t.Errorf("Policy of no filter = %v, %v", p, err)
	}
	filters, err = Allocate([]Runs{{Count: 2, Keys: 10}}, Budget{BitsPerKey: 100})
	if err != nil || filters[0].BitsPerKey != MaxBitsPerKey {
		t.Errorf("budget of the most bits: %+v, %v", filters, err)
	}
	if filters, err := Allocate(nil, Budget{BitsPerKey: 10}); err != nil || len(filters) != 0 {
		t.Errorf("no runs: %+v, %v", filters, err)
	}
}

// TestAllocate_MaxBitsPerKey: a run's bound holds it at that many bits
// per key, and leaves what it would have taken to the others; a budget
// beyond every run's bound is left unspent.
func TestAllocate_MaxBitsPerKey(t *testing.T) {
	runs := []Runs{{Count: 2, Keys: 1000}, {Count: 1, Keys: 10000}, {Count: 1, Keys: 100000}}
	free, err := Allocate(runs, Budget{BitsPerKey: 10})
	if err != nil {
		t.Fatal(err)
	}
	const most = 12
	if free[0].BitsPerKey <= most {
		t.Fatalf("Monkey's rule gives the smallest runs %.2f bits per key, not above the bound %d this test needs", free[0].BitsPerKey, most)
	}
	bounded := slices.Clone(runs)
	for i := range bounded {
		bounded[i].MaxBitsPerKey = most
	}
	got, err := Allocate(bounded, Budget{BitsPerKey: 10})
	if err != nil {
		t.Fatal(err)
	}
	var spent, keys float64
	for i, r := range bounded {
		if got[i].BitsPerKey > most {
			t.Errorf("run %d: %.3f bits per key, above its bound %d", i, got[i].BitsPerKey, most)
		}
		spent += float64(r.Count) * float64(r.Keys) * got[i].BitsPerKey
		keys += float64(r.Count) * float64(r.Keys)
	}
	if got[0].BitsPerKey != most || got[2].BitsPerKey <= free[2].BitsPerKey {
		t.Errorf("bounded %+v against free %+v: want the smallest runs at the bound and the largest given more", got, free)
	}
	if avg := spent / keys; math.Abs(avg-10) > 0.01 {
		t.Errorf("bounded runs spend %.3f bits per key, want the budget's 10", avg)
	}
	for _, budget := range []Budget{{BitsPerKey: 50}, {Bytes: 1 << 30}} {
		all, err := Allocate(bounded, budget)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range all {
			if f.BitsPerKey != most {
				t.Errorf("budget %+v beyond the bounds: run %d gets %.3f bits per key, want %d", budget, i, f.BitsPerKey, most)
			}
		}
	}
}

func TestAllocate_Errors(t *testing.T) {
	for _, tc := range []struct {
		runs   []Runs
		budget Budget
		want   string
	}{
		{treeRuns, Budget{}, "none of"},
		{treeRuns, Budget{BitsPerKey: 10, FalsePositives: 0.1}, "more than one"},
		{treeRuns, Budget{BitsPerKey: 10, Bytes: 1 << 20}, "more than one"},
		{treeRuns, Budget{Bytes: -1}, "Bytes is negative"},
		{[]Runs{{Count: 1, Keys: 1, Misses: -1}}, Budget{BitsPerKey: 10}, "negative"},
		{[]Runs{{Count: 1, Keys: 1, Misses: math.NaN()}}, Budget{BitsPerKey: 10}, "Misses"},
		{treeRuns, Budget{BitsPerKey: -1}, "not in (0, 100]"},
		{treeRuns, Budget{BitsPerKey: 101}, "not in (0, 100]"},
		{treeRuns, Budget{BitsPerKey: math.NaN()}, "not in (0, 100]"},
		{treeRuns, Budget{FalsePositives: -0.1}, "not a positive number"},
		{treeRuns, Budget{FalsePositives: math.Inf(1)}, "not a positive number"},
		{treeRuns, Budget{FalsePositives: 1e-30}, "more bits per key than the runs' bounds allow (Runs.MaxBitsPerKey, at most 100)"},
		{[]Runs{{Count: 1, Keys: 100, MaxBitsPerKey: 4}}, Budget{FalsePositives: 0.01}, "more bits per key than the runs' bounds allow"},
		{[]Runs{{Count: 1, Keys: 1, MaxBitsPerKey: -1}}, Budget{BitsPerKey: 10}, "MaxBitsPerKey -1, not in [0, 100]"},
		{[]Runs{{Count: 1, Keys: 1, MaxBitsPerKey: 101}}, Budget{BitsPerKey: 10}, "MaxBitsPerKey 101, not in [0, 100]"},
		{[]Runs{{Count: 1, Keys: 1, MaxBitsPerKey: math.NaN()}}, Budget{BitsPerKey: 10}, "MaxBitsPerKey NaN"},
		{[]Runs{{Count: -1, Keys: 1}}, Budget{BitsPerKey: 10}, "negative"},
		{[]Runs{{Count: 1, Keys: -1}}, Budget{BitsPerKey: 10}, "negative"},
	} {
		_, err := Allocate(tc.runs, tc.budget)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "bloompolicy: ") {
			t.Errorf("%+v, %+v: error %v, want one containing %q", tc.runs, tc.budget, err, tc.want)
		}
	}
}

func TestRunFilter_Policy(t *testing.T) {
	p, err := RunFilter{BitsPerKey: 9.97, FPR: 0.01}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	if p.BitsPerKey() != 10 {
		t.Errorf("BitsPerKey %v, want 9.97 rounded to 1/16: 10", p.BitsPerKey())
	}
}

// TestModelFPR_Edges checks ModelFPR outside the curve: no bits, or NaN
// (which used to index the curve at MinInt64), is no filter; past
// MaxBitsPerKey, the curve's last rate.
func TestModelFPR_Edges(t *testing.T) {
	for _, bits := range []float64{0, -1, math.Inf(-1), math.NaN()} {
		if got := ModelFPR(bits); got != 1 {
			t.Errorf("ModelFPR(%v) = %v, want 1", bits, got)
		}
	}
	last := ModelFPR(MaxBitsPerKey)
	if last <= 0 || last >= ModelFPR(MaxBitsPerKey-1) {
		t.Fatalf("ModelFPR(MaxBitsPerKey) = %v", last)
	}
	for _, bits := range []float64{MaxBitsPerKey + 1, math.Inf(1)} {
		if got := ModelFPR(bits); got != last {
			t.Errorf("ModelFPR(%v) = %v, want %v", bits, got, last)
		}
	}
}

// TestRateCurve checks the table against the model it tabulates and its
// inverse against itself.
func TestRateCurve(t *testing.T) {
	rc := curve()
	for _, bits := range []float64{2, 4.84, 9.92, 15.55, 22.03} {
		_, want := blockedProbesFor(bits)
		if got := rc.fprAt(bits); math.Abs(got/want-1) > 0.02 {
			t.Errorf("fprAt(%v) = %.5g, model %.5g", bits, got, want)
		}
		if got := rc.bitsFor(rc.fprAt(bits)); math.Abs(got-bits) > 1e-6 {
			t.Errorf("bitsFor(fprAt(%v)) = %v", bits, got)
		}
	}
	for j := 1; j < len(rc.fpr); j++ {
		if rc.fpr[j] > rc.fpr[j-1] {
			t.Fatalf("rate rises from %.4g to %.4g at %v bits", rc.fpr[j-1], rc.fpr[j], float64(j)/curveSteps)
		}
	}
	if rc.bitsFor(1) != 0 || rc.bitsFor(0) != MaxBitsPerKey {
		t.Errorf("bitsFor at the ends: %v, %v", rc.bitsFor(1), rc.bitsFor(0))
	}
}
