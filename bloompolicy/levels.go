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
//
// Bytes is a cap, the shape a store's filter memory is bounded by: a store
// given Budget{Bytes: N} (kv.Options.FilterBudget) sizes new tables so
// that all its filters fit in N bytes as the tree stands, and holds in
// memory only the filters that fit, choosing those that save the most
// reads per byte. A budget of bits per key or of false positives grows
// with the store; a cap does not. A cap lives in Budget rather than in a
// store option of its own because it is one more way to say what the
// filters may spend, and the same allocation serves all three.
type Budget struct {
	// BitsPerKey is the average number of filter bits per key over all the
	// runs' keys (greater than 0, at most MaxBitsPerKey).
	BitsPerKey float64
	// FalsePositives is the expected number of false positives of a lookup
	// of an absent key that reaches every run: the sum of the runs' rates
	// (greater than 0).
	FalsePositives float64
	// Bytes is the total bytes of filter the runs may take (greater than
	// 0): 8*Bytes bits over all the runs' keys.
	Bytes int64
}

// Validate reports whether b sets exactly one usable field.
func (b Budget) Validate() error {
	set := 0
	for _, isSet := range []bool{b.BitsPerKey != 0, b.FalsePositives != 0, b.Bytes != 0} {
		if isSet {
			set++
		}
	}
	switch {
	case set > 1:
		return fmt.Errorf("bloompolicy: budget sets more than one of BitsPerKey (%v), FalsePositives (%v) and Bytes (%d)", b.BitsPerKey, b.FalsePositives, b.Bytes)
	case b.Bytes < 0:
		return fmt.Errorf("bloompolicy: budget Bytes is negative (%d)", b.Bytes)
	case b.Bytes > 0:
	case b.BitsPerKey != 0:
		if math.IsNaN(b.BitsPerKey) || b.BitsPerKey < 0 || b.BitsPerKey > MaxBitsPerKey {
			return fmt.Errorf("bloompolicy: budget of %v bits per key is not in (0, %d]", b.BitsPerKey, MaxBitsPerKey)
		}
	case b.FalsePositives != 0:
		if math.IsNaN(b.FalsePositives) || math.IsInf(b.FalsePositives, 0) || b.FalsePositives < 0 {
			return fmt.Errorf("bloompolicy: budget of %v false positives is not a positive number", b.FalsePositives)
		}
	default:
		return fmt.Errorf("bloompolicy: budget sets none of BitsPerKey, FalsePositives and Bytes")
	}
	return nil
}

// Runs describes Count sorted runs of Keys keys each: L0 of an LSM tree is
// one run per table, each deeper level one run.
//
// Misses weighs the runs by the lookups they serve: the expected number of
// lookups, per lookup served by the store, that reach one of these runs and
// do not find their key in it, so that a false positive there costs a
// wasted data-block read. [Allocate] treats every run alike, as if every
// lookup were of an absent key and reached every run (Monkey's
// assumption), when no run of the slice has Misses set; otherwise a run
// with Misses 0 gets no filter. Misses must not be negative.
//
// MaxBitsPerKey bounds the bits per key Allocate gives the runs' filters,
// at most the package's MaxBitsPerKey (0: that bound). A run held at its
// bound leaves the budget it would have taken to the others, which is
// how a budget larger than the runs need is left unspent rather than
// spent on rates far below any that saves a read.
type Runs struct {
	Count         int
	Keys          int64
	Misses        float64
	MaxBitsPerKey float64
}

// maxBits returns the most bits per key r's filters may take.
func (r Runs) maxBits() float64 {
	if r.MaxBitsPerKey == 0 {
		return MaxBitsPerKey
	}
	return r.MaxBitsPerKey
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
// RunFilter per element, in order) that spends budget with the fewest
// expected wasted data-block reads per lookup: the sum over the runs of
// Misses times the false-positive rate. The rule (see doc.go) makes each
// run's rate proportional to its key count over its Misses; with no Misses
// set, every run weighs 1 and this is Monkey's rule, rates proportional to
// key counts, the smallest sum of rates. A budget of bits per key is met
// on average over all keys, a budget of bytes as 8*Bytes bits over all
// keys; a budget of false positives is met as the sum over every run of
// its weight times its rate. Runs of no keys cost nothing and get the most
// bits, their Runs.MaxBitsPerKey per key; no run gets more. Allocate fails
// when the budget or a run is invalid, or the budget cannot be met within
// the runs' bounds on bits per key.
func Allocate(runs []Runs, budget Budget) ([]RunFilter, error) {
	if err := budget.Validate(); err != nil {
		return nil, err
	}
	a := allocation{runs: runs, curve: curve()}
	var total float64
	for i, r := range runs {
		if r.Count < 0 || r.Keys < 0 || r.Misses < 0 || math.IsNaN(r.Misses) || math.IsInf(r.Misses, 0) {
			return nil, fmt.Errorf("bloompolicy: runs[%d] has a negative count (%d), key count (%d) or Misses (%v)", i, r.Count, r.Keys, r.Misses)
		}
		if !(r.MaxBitsPerKey >= 0 && r.MaxBitsPerKey <= MaxBitsPerKey) {
			return nil, fmt.Errorf("bloompolicy: runs[%d] has MaxBitsPerKey %v, not in [0, %d]", i, r.MaxBitsPerKey, MaxBitsPerKey)
		}
		total += float64(r.Count) * float64(r.Keys)
		a.weighted = a.weighted || r.Misses > 0
	}
	if total == 0 {
		// No key to spend on: a rate of 0 gives every run the most bits.
		return a.filters(0), nil
	}
	if bits := budget.BitsPerKey * total; budget.Bytes > 0 || bits > 0 {
		if budget.Bytes > 0 {
			bits = 8 * float64(budget.Bytes)
		}
		// The larger constant of the bracket spends at most the budget.
		_, c := a.solve(func(c float64) float64 { return bits - a.bits(c) })
		return a.filters(c), nil
	}
	if a.fps(0) > budget.FalsePositives {
		return nil, fmt.Errorf("bloompolicy: %v false positives need more bits per key than the runs' bounds allow (Runs.MaxBitsPerKey, at most %d)", budget.FalsePositives, MaxBitsPerKey)
	}
	// The smaller constant of the bracket stays within the sum of rates.
	c, _ := a.solve(func(c float64) float64 { return a.fps(c) - budget.FalsePositives })
	return a.filters(c), nil
}

// allocation evaluates the rule p_i = c*n_i/w_i for one set of runs, w_i
// being run i's weight (its Misses, or 1 for every run when none is set).
type allocation struct {
	runs     []Runs
	curve    *rateCurve
	weighted bool // some run has Misses set
}

// weight returns r's weight in the sum the rule minimises.
func (a *allocation) weight(r Runs) float64 {
	if !a.weighted {
		return 1
	}
	return r.Misses
}

// scale returns r's keys over its weight, the factor of the constant c in
// its rate; +Inf for a run of keys but no weight.
func (a *allocation) scale(r Runs) float64 {
	return float64(r.Keys) / a.weight(r)
}

// filter returns the sizing of run r at constant c: the bits of the rate
// c*n/w, at most r's bound on bits per key, and no filter at a rate of 1
// or more (a run no lookup misses in gets none).
func (a *allocation) filter(c float64, r Runs) RunFilter {
	if r.Keys == 0 {
		return a.curve.filterAt(r.maxBits())
	}
	return a.curve.filterAt(min(r.maxBits(), a.curve.bitsFor(c*a.scale(r))))
}

// bits returns the total filter bits of the runs at constant c.
func (a *allocation) bits(c float64) float64 {
	sum := 0.0
	for _, r := range a.runs {
		sum += float64(r.Count) * float64(r.Keys) * a.filter(c, r).BitsPerKey
	}
	return sum
}

// fps returns the weighted sum of the runs' rates at constant c: the
// expected wasted reads per lookup. Runs of no keys hold no filter a
// lookup could consult, and count nothing.
func (a *allocation) fps(c float64) float64 {
	sum := 0.0
	for _, r := range a.runs {
		if r.Keys > 0 && a.weight(r) > 0 {
			sum += float64(r.Count) * a.weight(r) * a.filter(c, r).FPR
		}
	}
	return sum
}

// solve brackets the constant c at which excess (rising with c) changes
// sign, to a relative width of 1e-9: excess(lo) < 0 <= excess(hi), unless
// the sign never changes. It bisects log c between the rate of the most
// bits for the run of the largest scale and a rate of 1 for every run.
func (a *allocation) solve(excess func(c float64) float64) (lo, hi float64) {
	smallest, largest := a.scales()
	logLo := math.Log(a.curve.fpr[len(a.curve.fpr)-1] / largest / 2)
	logHi := math.Log(1 / smallest)
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

// scales returns the smallest and largest finite positive scale of the
// runs that count (1 for either if none).
func (a *allocation) scales() (smallest, largest float64) {
	smallest, largest = math.Inf(1), 0
	for _, r := range a.runs {
		if s := a.scale(r); r.Count > 0 && s > 0 && !math.IsInf(s, 1) {
			smallest, largest = min(smallest, s), max(largest, s)
		}
	}
	if largest == 0 {
		return 1, 1
	}
	return smallest, largest
}

// filters returns the sizing of each run at constant c, in order.
func (a *allocation) filters(c float64) []RunFilter {
	out := make([]RunFilter, len(a.runs))
	for i, r := range a.runs {
		out[i] = a.filter(c, r)
	}
	return out
}

// ModelFPR returns the false-positive rate the allocation's model gives a
// filter of bitsPerKey bits per key (the blocked layout with its best probe
// count, as [New] sizes filters; 1 at 0 bits, below, or for NaN, as for
// no filter; the rate at MaxBitsPerKey above it).
func ModelFPR(bitsPerKey float64) float64 {
	if !(bitsPerKey > 0) {
		return 1
	}
	return curve().fprAt(bitsPerKey)
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
