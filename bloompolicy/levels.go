package bloompolicy

import (
	"fmt"
	"math"
	"sync"
)

// This file divides filter memory among the sorted runs of an LSM tree.
//
// A lookup of an absent key reaches every run whose key range covers it and
// asks each run's filter; the expected number of false positives is the sum
// of the runs' rates. Giving every run the same bits per key (the same
// rate) is not the cheapest way to a given sum. Monkey (Dayan, Athanassoulis
// and Idreos, SIGMOD 2017) shows that, for a fixed memory budget, the sum is
// smallest when each run's rate is proportional to its number of keys:
//
//	p_i = c * n_i     (capped at 1: a run that would get p_i >= 1 gets no filter)
//
// A key of a small run costs as much as a key of a large one, but the small
// run's rate counts just as much in the sum, so its keys get more bits and
// the bottom level, which holds most keys, gets fewer. The constant c is set
// by the budget: the sum of the rates, or the total bits.
//
// The bits a rate costs come from the same model of the layout that [New]
// sizes its filters with (the blocked layout's measured rate, see doc.go),
// tabulated once per process on a grid of 1/16 bit. The rule is exactly
// optimal when bits grow linearly in -ln p, as in the textbook; the
// blocked layout's cost grows a little faster at low rates, so there the
// rule is close to the optimum rather than at it.

// Budget is what an allocation of filter memory may spend. Set exactly one
// field.
type Budget struct {
	// BitsPerKey is the average number of filter bits per key over all the
	// runs' keys (greater than 0, at most MaxBitsPerKey).
	BitsPerKey float64
	// FalsePositives is the expected number of false positives of a lookup
	// of an absent key that reaches every run: the sum of the runs' rates
	// (greater than 0).
	FalsePositives float64
}

// Validate reports whether b sets exactly one usable field.
func (b Budget) Validate() error {
	switch {
	case b.BitsPerKey != 0 && b.FalsePositives != 0:
		return fmt.Errorf("bloompolicy: budget sets both BitsPerKey (%v) and FalsePositives (%v)", b.BitsPerKey, b.FalsePositives)
	case b.BitsPerKey != 0:
		if math.IsNaN(b.BitsPerKey) || b.BitsPerKey < 0 || b.BitsPerKey > MaxBitsPerKey {
			return fmt.Errorf("bloompolicy: budget of %v bits per key is not in (0, %d]", b.BitsPerKey, MaxBitsPerKey)
		}
	case b.FalsePositives != 0:
		if math.IsNaN(b.FalsePositives) || math.IsInf(b.FalsePositives, 0) || b.FalsePositives < 0 {
			return fmt.Errorf("bloompolicy: budget of %v false positives is not a positive number", b.FalsePositives)
		}
	default:
		return fmt.Errorf("bloompolicy: budget sets neither BitsPerKey nor FalsePositives")
	}
	return nil
}

// Runs describes Count sorted runs of Keys keys each: L0 of an LSM tree is
// one run per table, each deeper level one run.
type Runs struct {
	Count int
	Keys  int64
}

// RunFilter is the filter sizing [Allocate] gives each run of a [Runs].
type RunFilter struct {
	// BitsPerKey is the bits per key of the run's filters; 0 means the run
	// gets no filter.
	BitsPerKey float64
	// FPR is the model's false-positive rate at BitsPerKey; 1 without a
	// filter.
	FPR float64
}

// Policy returns a Bloom policy that spends r.BitsPerKey, rounded to the
// nearest 1/16 bit, or nil when the run gets no filter. The rounding bounds
// the number of distinct sizings a process caches when allocations are
// recomputed often (as a store does at every flush and compaction); it moves
// the rate by well under 1%.
func (r RunFilter) Policy() (*Bloom, error) {
	bits := math.Round(r.BitsPerKey*policySteps) / policySteps
	if bits <= 0 {
		return nil, nil
	}
	return NewBitsPerKey(bits)
}

// policySteps is the resolution, per bit, of RunFilter.Policy.
const policySteps = 16

// Allocate returns the filter sizing of each element of runs (one
// RunFilter per element, in order) that spends budget with the smallest sum
// of the runs' false-positive rates, by Monkey's rule: rates proportional
// to the runs' key counts. A budget of bits per key is met on average over
// all keys; a budget of false positives is met as the sum over every run of
// its rate. Runs of no keys cost nothing and get the most bits,
// MaxBitsPerKey per key; no run gets more. Allocate fails when the budget is invalid or cannot be
// met within MaxBitsPerKey bits per key.
func Allocate(runs []Runs, budget Budget) ([]RunFilter, error) {
	if err := budget.Validate(); err != nil {
		return nil, err
	}
	var total, largest float64
	for i, r := range runs {
		if r.Count < 0 || r.Keys < 0 {
			return nil, fmt.Errorf("bloompolicy: runs[%d] has a negative count (%d) or key count (%d)", i, r.Count, r.Keys)
		}
		total += float64(r.Count) * float64(r.Keys)
		largest = max(largest, float64(r.Keys))
	}
	a := allocation{runs: runs, curve: curve()}
	if total == 0 {
		// No key to spend on: a rate of 0 gives every run the most bits.
		return a.filters(0), nil
	}
	if budget.BitsPerKey != 0 {
		// The larger constant of the bracket spends at most the budget.
		_, c := a.solve(func(c float64) float64 { return budget.BitsPerKey*total - a.bits(c) }, largest)
		return a.filters(c), nil
	}
	if a.fps(0) > budget.FalsePositives {
		return nil, fmt.Errorf("bloompolicy: %v false positives need more than %d bits per key", budget.FalsePositives, MaxBitsPerKey)
	}
	// The smaller constant of the bracket stays within the sum of rates.
	c, _ := a.solve(func(c float64) float64 { return a.fps(c) - budget.FalsePositives }, largest)
	return a.filters(c), nil
}

// allocation evaluates Monkey's rule p_i = c*n_i for one set of runs.
type allocation struct {
	runs  []Runs
	curve *rateCurve
}

// filter returns the sizing of a run of n keys at constant c: the bits of
// the rate c*n, at most MaxBitsPerKey bits per key, and no filter at a rate of 1 or
// more.
func (a *allocation) filter(c float64, n int64) RunFilter {
	if n == 0 {
		return a.curve.filterAt(MaxBitsPerKey)
	}
	return a.curve.filterAt(a.curve.bitsFor(c * float64(n)))
}

// bits returns the total filter bits of the runs at constant c.
func (a *allocation) bits(c float64) float64 {
	sum := 0.0
	for _, r := range a.runs {
		sum += float64(r.Count) * float64(r.Keys) * a.filter(c, r.Keys).BitsPerKey
	}
	return sum
}

// fps returns the sum of the runs' rates at constant c. Runs of no keys
// hold no filter a lookup could consult, and count nothing.
func (a *allocation) fps(c float64) float64 {
	sum := 0.0
	for _, r := range a.runs {
		if r.Keys > 0 {
			sum += float64(r.Count) * a.filter(c, r.Keys).FPR
		}
	}
	return sum
}

// solve brackets the constant c at which excess (rising with c) changes
// sign, to a relative width of 1e-9: excess(lo) < 0 <= excess(hi), unless
// the sign never changes. It bisects log c between the rate of the most
// bits for the largest run and a rate of 1 for every run.
func (a *allocation) solve(excess func(c float64) float64, largest float64) (lo, hi float64) {
	logLo := math.Log(a.curve.fpr[len(a.curve.fpr)-1] / largest / 2)
	logHi := math.Log(1 / minPositiveKeys(a.runs))
	for logHi-logLo > 1e-9 {
		mid := (logLo + logHi) / 2
		if excess(math.Exp(mid)) < 0 {
			logLo = mid
		} else {
			logHi = mid
		}
	}
	return math.Exp(logLo), math.Exp(logHi)
}

// minPositiveKeys returns the smallest positive key count of runs (1 if
// none).
func minPositiveKeys(runs []Runs) float64 {
	m := math.Inf(1)
	for _, r := range runs {
		if r.Keys > 0 && r.Count > 0 {
			m = min(m, float64(r.Keys))
		}
	}
	if math.IsInf(m, 1) {
		return 1
	}
	return m
}

// filters returns the sizing of each run at constant c, in order.
func (a *allocation) filters(c float64) []RunFilter {
	out := make([]RunFilter, len(a.runs))
	for i, r := range a.runs {
		out[i] = a.filter(c, r.Keys)
	}
	return out
}

// curveSteps is the resolution, per bit, of the tabulated rate curve.
const curveSteps = 16

// rateCurve tabulates the blocked layout's false-positive rate, with the
// best probe count, at every 1/curveSteps bit per key from 0 to
// MaxBitsPerKey: fpr[j] is the rate at j/curveSteps bits. It falls as j
// grows.
type rateCurve struct {
	fpr []float64
}

// curve returns the process's rate curve, computing it on first use (tens
// of milliseconds).
var curve = sync.OnceValue(newRateCurve)

func newRateCurve() *rateCurve {
	models := make([]*lineModel, maxProbes+1)
	for k := range models {
		models[k] = &lineModel{k: k}
	}
	rc := &rateCurve{fpr: make([]float64, MaxBitsPerKey*curveSteps+1)}
	rc.fpr[0] = 1
	for j := 1; j < len(rc.fpr); j++ {
		bits := float64(j) / curveSteps
		_, f := bestProbes(func(k int) float64 { return models[k].fpr(bits) })
		rc.fpr[j] = min(f, rc.fpr[j-1]) // the model is monotone; keep the table so despite rounding
	}
	return rc
}

// fprAt returns the rate at bits per key, interpolating log rates between
// grid points.
func (rc *rateCurve) fprAt(bits float64) float64 {
	x := math.Min(math.Max(bits, 0), MaxBitsPerKey) * curveSteps
	j := min(int(x), len(rc.fpr)-2)
	t := x - float64(j)
	return math.Exp((1-t)*math.Log(rc.fpr[j]) + t*math.Log(rc.fpr[j+1]))
}

// bitsFor returns the bits per key at which the rate is p, interpolating as
// fprAt does: 0 for p >= 1, MaxBitsPerKey for rates below the curve's end.
func (rc *rateCurve) bitsFor(p float64) float64 {
	if p >= 1 {
		return 0
	}
	last := len(rc.fpr) - 1
	if p <= rc.fpr[last] {
		return MaxBitsPerKey
	}
	// The first grid point with a rate at or below p.
	lo, hi := 0, last
	for lo < hi {
		mid := (lo + hi) / 2
		if rc.fpr[mid] <= p {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	a, b := math.Log(rc.fpr[hi-1]), math.Log(rc.fpr[hi])
	t := 0.0
	if a != b {
		t = (a - math.Log(p)) / (a - b)
	}
	return (float64(hi-1) + t) / curveSteps
}

// filterAt returns the sizing at bits per key.
func (rc *rateCurve) filterAt(bits float64) RunFilter {
	if bits <= 0 {
		return RunFilter{BitsPerKey: 0, FPR: 1}
	}
	return RunFilter{BitsPerKey: bits, FPR: rc.fprAt(bits)}
}
