package bloompolicy_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/testseed"
)

// This file measures the false-positive rate on the key shapes real stores
// hold, at the sizes a table makes: per-block filters of 1 to 5 keys (tiny
// blocks) and one filter of 100,000 keys.
//
// Two checks per cell, each failing a correct filter with probability under
// 1e-9, so that the ~250 cells of both tests together fail one with
// probability under 1e-6 (a union bound):
//
//   - The hash check. Given the filters built, a query of an absent key is a
//     false positive with the probability Inspect's EstimatedFPR gives (the
//     share of set bits, per line for the blocked layout, to the power k),
//     if the key's probes behave as independent uniform choices. The count
//     of false positives is then a sum of independent Bernoulli variables,
//     and the Chernoff bound P(X >= x) <= e^-mu (e mu / x)^x caps it. A key
//     shape that defeats the hash overshoots that cap.
//   - The promise check. The rate those filters deliver (the mean of their
//     EstimatedFPR) must not exceed what the policy promises: the target of
//     New, or for a large filter of NewBitsPerKey the model's ExpectedFPR,
//     by more than 6 standard errors of that mean (over the filters, or for
//     one large filter over its lines; normal tail 1e-9).
//
// Margins are logged in standard errors, (measured - reference) / SE:
// negative means better than promised.

const (
	shapeTailBound = 1e-9 // per cell and check; see above
	shapeMaxZ      = 6.0  // the promise check's bound, in standard errors
)

// realShapes are the key shapes of this file; distinct indices give
// distinct keys.
var realShapes = []keyShape{
	{"be64", func(dst []byte, i uint64) []byte { return binary.BigEndian.AppendUint64(dst, i) }},
	{"le64", func(dst []byte, i uint64) []byte { return binary.LittleEndian.AppendUint64(dst, i) }},
	{"decimal", func(dst []byte, i uint64) []byte { return strconv.AppendUint(dst, i, 10) }},
	// A 100-byte common prefix, then a 3-byte big-endian counter:
	// neighbours differ in the last byte, or the last two.
	{"prefix100", func(dst []byte, i uint64) []byte {
		for range 100 {
			dst = append(dst, 'k')
		}
		return append(dst, byte(i>>16), byte(i>>8), byte(i))
	}},
	// A version-4 UUID, 16 random bytes with the version and variant bits.
	{"uuid", func(dst []byte, i uint64) []byte {
		dst = binary.BigEndian.AppendUint64(dst, splitmix64(i)&^0xf000|0x4000)
		return binary.BigEndian.AppendUint64(dst, splitmix64(^i)&^(3<<62)|1<<63)
	}},
	// 24 zero bytes, then the Gray code of i: the keys of neighbouring
	// indices, one present and one absent, differ in a single bit.
	{"onebit", func(dst []byte, i uint64) []byte {
		dst = append(dst, make([]byte, 24)...)
		return binary.BigEndian.AppendUint64(dst, i^i>>1)
	}},
}

// shapePolicy is a policy under test and the rate it promises for large
// filters (for New, at every size).
type shapePolicy struct {
	name    string
	p       *bloompolicy.Bloom
	target  float64 // New's target; 0 for NewBitsPerKey
	promise float64
}

func shapePolicies(t testing.TB) []shapePolicy {
	var ps []shapePolicy
	for _, target := range []float64{0.1, 0.01, 0.001} {
		ps = append(ps, shapePolicy{fmt.Sprintf("fpr=%g", target), mustNew(t, target), target, target})
	}
	for _, b := range []float64{1, 4, 10, 16, 24} {
		p := mustBits(t, b)
		ps = append(ps, shapePolicy{fmt.Sprintf("bits=%g", b), p, 0, p.ExpectedFPR()})
	}
	return ps
}

// shapeCell is what one measurement found.
type shapeCell struct {
	queries, falsePositives int
	mu, variance            float64 // sum and variance of the per-query false-positive chances
	rate, rateSE            float64 // the filters' mean EstimatedFPR and its standard error
	bits                    int     // every byte of every filter, in bits
}

// measureShape builds filters filters of n keys of shape (indices from
// base), checks that each finds its keys, and queries each with
// perFilter absent keys of the same shape (the indices after the keys).
func measureShape(t *testing.T, p *bloompolicy.Bloom, shape keyShape, base uint64, n, filters, perFilter int) shapeCell {
	t.Helper()
	var c shapeCell
	var rates []float64
	w := p.NewWriter()
	var key, filter []byte
	next := base
	for range filters {
		for i := range n {
			w.AddKey(shape.key(key[:0], next+uint64(i)))
		}
		filter = w.Finish(filter[:0])
		c.bits += 8 * len(filter)
		for i := range n {
			if key = shape.key(key[:0], next+uint64(i)); !p.MayContain(filter, key) {
				t.Fatalf("%s %v: false negative for key %x", shape.name, p, key)
			}
		}
		next += uint64(n)
		info, err := bloompolicy.Inspect(filter)
		if err != nil {
			t.Fatal(err)
		}
		q := info.EstimatedFPR
		for i := range perFilter {
			if p.MayContain(filter, shape.key(key[:0], next+uint64(i))) {
				c.falsePositives++
			}
		}
		next += uint64(perFilter)
		c.queries += perFilter
		c.mu += float64(perFilter) * q
		c.variance += float64(perFilter) * q * (1 - q)
		rates = append(rates, q)
		if filters == 1 {
			rates = lineRates(filter, info.Probes)
		}
	}
	c.rate, c.rateSE = meanSE(rates)
	return c
}

// lineRates returns the false-positive chance of each 512-bit line of a
// blocked filter, or the one of a plain filter alone.
func lineRates(filter []byte, probes int) []float64 {
	body := filter[:len(filter)-1]
	region := len(body)
	if filter[len(filter)-1]>>6 == 1 {
		region = 64
	}
	var rates []float64
	for off := 0; off < len(body); off += region {
		set := 0
		for _, b := range body[off : off+region] {
			set += bits.OnesCount8(b)
		}
		rates = append(rates, math.Pow(float64(set)/float64(8*region), float64(probes)))
	}
	return rates
}

func meanSE(xs []float64) (mean, se float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1) / float64(len(xs)))
}

// chernoffCap returns the smallest count x > mu that a sum of independent
// Bernoulli variables of mean mu reaches with probability at most
// shapeTailBound, by P(X >= x) <= e^-mu (e mu / x)^x.
func chernoffCap(mu float64) int {
	for x := math.Floor(mu) + 1; ; x++ {
		if -mu+x*(1+math.Log(mu/x)) <= math.Log(shapeTailBound) {
			return int(x)
		}
	}
}

// checkShapeCell applies the two checks to c and logs its margins.
func checkShapeCell(t *testing.T, name string, sp shapePolicy, c shapeCell, promised bool) {
	t.Helper()
	measured := float64(c.falsePositives) / float64(c.queries)
	hashZ := (float64(c.falsePositives) - c.mu) / math.Sqrt(max(c.variance, 1))
	if limit := chernoffCap(c.mu); c.falsePositives >= limit {
		t.Errorf("%s %s: %d false positives in %d queries; the filters' bits allow %.1f, at most %d (hash check)",
			name, sp.name, c.falsePositives, c.queries, c.mu, limit-1)
	}
	promiseZ := math.NaN()
	if promised {
		promiseZ = (c.rate - sp.promise) / math.Max(c.rateSE, 1e-300)
		if c.rate > sp.promise && promiseZ > shapeMaxZ {
			t.Errorf("%s %s: the filters deliver %.5g, %.1f standard errors over the promised %.5g",
				name, sp.name, c.rate, promiseZ, sp.promise)
		}
	}
	t.Logf("%-10s %-9s measured %.3e  filters %.3e ± %.1e  hash %+5.1f SE  promise %.3e %+7.1f SE",
		name, sp.name, measured, c.rate, c.rateSE, hashZ, sp.promise, promiseZ)
}

// TestFPR_Shapes_PerBlock measures per-block filters of 1, 2, 3 and 5 keys,
// 4000 of each, every filter asked 50 absent keys. New promises its target
// at every key count; NewBitsPerKey promises a rate only for large filters,
// so its small ones get the hash check alone.
func TestFPR_Shapes_PerBlock(t *testing.T) {
	base := testseed.Seed(t) % (1 << 20)
	policies := shapePolicies(t)
	for _, shape := range realShapes {
		for _, n := range []int{1, 2, 3, 5} {
			for _, sp := range policies {
				c := measureShape(t, sp.p, shape, base, n, 4000, 50)
				checkShapeCell(t, fmt.Sprintf("%s/n=%d", shape.name, n), sp, c, sp.target > 0)
			}
		}
	}
}

// TestFPR_Shapes_Large measures one filter of 100,000 keys per shape and
// policy, asked 400,000 absent keys, and checks that it spends the bits
// per key the policy claims: BitsPerKey, rounded up to whole lines, plus
// the trailer.
func TestFPR_Shapes_Large(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 48 filters of 100,000 keys")
	}
	const n = 100_000
	base := testseed.Seed(t) % (1 << 20)
	for _, shape := range realShapes {
		for _, sp := range shapePolicies(t) {
			c := measureShape(t, sp.p, shape, base, n, 1, 400_000)
			checkShapeCell(t, shape.name+"/n=100k", sp, c, true)
			lines := math.Ceil(n * sp.p.BitsPerKey() / 512)
			if want := int(512*lines) + 8; c.bits != want {
				t.Errorf("%s %s: %d keys take %d bits (%.3f per key); %.3f bits per key claimed make %d",
					shape.name, sp.name, n, c.bits, float64(c.bits)/n, sp.p.BitsPerKey(), want)
			}
		}
	}
}
