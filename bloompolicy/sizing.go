package bloompolicy

import "math"

// This file holds the arithmetic that turns a target false-positive rate (or
// a memory budget) into filter dimensions. Every figure comes from the exact
// finite model of the layout actually written, never from the asymptotic
// textbook formula alone: see doc.go for why that matters.

// stirling2[k][j] is the Stirling number of the second kind S(k, j): the
// number of ways to partition k probes into j non-empty groups.
var stirling2 = stirlingTable(maxProbes)

func stirlingTable(n int) [][]float64 {
	s := make([][]float64, n+1)
	for i := range s {
		s[i] = make([]float64, n+1)
	}
	s[0][0] = 1
	for i := 1; i <= n; i++ {
		for j := 1; j <= i; j++ {
			s[i][j] = float64(j)*s[i-1][j] + s[i-1][j-1]
		}
	}
	return s
}

// plainFPR returns the expected false-positive rate of a plain array of m
// bits that holds n keys with k probes each, when every probe is an
// independent uniform choice among the m bits (probes of one key may
// coincide). It is exact, not asymptotic:
//
//	FPR = sum over j of P(the k query probes hit j distinct bits)
//	                  * P(j given bits are all set after k*n probes)
//
// The first factor is S(k,j) * m(m-1)...(m-j+1) / m^k; allSet computes the
// second.
func plainFPR(m float64, n int, k int) float64 {
	if n == 0 {
		return 0
	}
	throws := k * n
	// e[i] = (1 - i/m)^(kn): the chance that i given bits all stay clear.
	var e [maxProbes + 1]float64
	for i := 0; i <= k; i++ {
		e[i] = math.Exp(float64(throws) * math.Log1p(-float64(i)/m))
	}
	fpr := 0.0
	distinct := 1.0 // m(m-1)...(m-j+1) / m^j
	for j := 1; j <= k; j++ {
		distinct *= (m - float64(j-1)) / m
		if distinct <= 0 {
			break // fewer than j bits exist
		}
		pj := stirling2[k][j] * distinct * math.Pow(m, float64(j-k))
		fpr += pj * allSet(e[:j+1], throws, m)
	}
	return fpr
}

// chainBudget bounds the work of allSetChain for one j, in probes times
// bits followed. plainFPR may call it for every j up to k, so this keeps a
// call under about a millisecond.
const chainBudget = 1 << 16

// allSet returns the probability that j = len(e)-1 given bits of m are all
// set after throws probes, where e[i] = (1 - i/m)^throws. Inclusion-exclusion
// over e is exact but an alternating sum: where cancellation would cost too
// many digits (tiny rates with many probes, which come with few throws) the
// Markov chain of allSetChain computes it instead. Past chainBudget it falls
// back to q^j, q = 1 - e[1], an upper bound because bin occupancies are
// negatively associated: the result errs, if at all, on the side of too
// high a rate.
func allSet(e []float64, throws int, m float64) float64 {
	j := len(e) - 1
	sum, largest := 0.0, 0.0
	binom := 1.0 // C(j, i)
	for i := 0; i <= j; i++ {
		term := binom * e[i]
		largest = math.Max(largest, term)
		if i%2 == 0 {
			sum += term
		} else {
			sum -= term
		}
		binom = binom * float64(j-i) / float64(i+1)
	}
	// Each e[i] carries a relative error of about (1 + |ln e[i]|) units of
	// 2^-52, and the sum adds j+1 of them: demand a millionth of the answer.
	digitsLost := float64(j+1) * (2 - math.Log(e[j])) * 0x1p-52
	if sum > 0 && largest*digitsLost <= 1e-6*sum {
		return sum
	}
	if throws*j <= chainBudget {
		return allSetChain(j, throws, m)
	}
	return math.Pow(1-e[1], float64(j))
}

// allSetChain computes the chance that j given bits of m are all set after
// throws probes by following the number of them set, probe by probe: a
// positive sum, stable where inclusion-exclusion is not.
func allSetChain(j, throws int, m float64) float64 {
	var p [maxProbes + 1]float64 // p[s]: chance that s of the j bits are set
	p[0] = 1
	for t := range throws {
		for s := min(j, t+1); s > 0; s-- {
			p[s] = p[s]*(1-float64(j-s)/m) + p[s-1]*float64(j-s+1)/m
		}
		p[0] *= 1 - float64(j)/m
	}
	return p[j]
}

// bestProbes returns the probe count in [1, maxProbes] that minimizes rate,
// and that rate. The rate is unimodal in k, so the scan stops once it has
// risen for two steps in a row.
func bestProbes(rate func(k int) float64) (k int, fpr float64) {
	k, fpr = 1, rate(1)
	rising := 0
	for c := 2; c <= maxProbes && rising < 2; c++ {
		if f := rate(c); f < fpr {
			k, fpr, rising = c, f, 0
		} else {
			rising++
		}
	}
	return k, fpr
}

// bestPlainProbes returns the probe count that minimizes plainFPR for m
// bits and n keys, and that rate.
func bestPlainProbes(m float64, n int) (k int, fpr float64) {
	return bestProbes(func(k int) float64 { return plainFPR(m, n, k) })
}

// lineModel computes the false-positive rate of the blocked layout for one
// probe count k. Keys fall into 512-bit lines by a uniform hash, so the
// number of keys sharing a query's line is Poisson with mean
// lambda = 512 / bitsPerKey; within a line the probes are independent
// uniform bits, so a line holding c keys answers falsely with
// plainFPR(512, c, k). lineModel caches that per-line rate.
type lineModel struct {
	k       int
	perLine []float64 // perLine[c] = plainFPR(lineBits, c, k)
}

func (lm *lineModel) lineFPR(c int) float64 {
	for len(lm.perLine) <= c {
		lm.perLine = append(lm.perLine, plainFPR(lineBits, len(lm.perLine), lm.k))
	}
	return lm.perLine[c]
}

// fpr returns the expected false-positive rate at bitsPerKey: the per-line
// rate averaged over the Poisson distribution of keys per line, summed over
// the window that holds all but a negligible part of the mass.
func (lm *lineModel) fpr(bitsPerKey float64) float64 {
	lambda := lineBits / bitsPerKey
	spread := 12*math.Sqrt(lambda) + 12
	lo := int(math.Max(0, math.Floor(lambda-spread)))
	hi := int(math.Ceil(lambda + spread))
	sum := 0.0
	for c := lo; c <= hi; c++ {
		lg, _ := math.Lgamma(float64(c) + 1)
		p := math.Exp(float64(c)*math.Log(lambda) - lambda - lg)
		sum += p * lm.lineFPR(c)
	}
	return sum
}

// blockedProbesFor returns the probe count that minimizes the blocked
// layout's false-positive rate at bitsPerKey, and that rate.
func blockedProbesFor(bitsPerKey float64) (k int, fpr float64) {
	return bestProbes(func(k int) float64 { return (&lineModel{k: k}).fpr(bitsPerKey) })
}

// blockedBitsFor returns the fewest bits per key (to 1/1024 of a bit) with
// which the blocked layout meets target, the probe count that achieves it
// and the resulting rate. ok is false if no probe count reaches target
// within MaxBitsPerKey.
func blockedBitsFor(target float64) (bitsPerKey float64, k int, fpr float64, ok bool) {
	bitsPerKey = math.Inf(1)
	for c := 1; c <= maxProbes; c++ {
		lm := &lineModel{k: c}
		if lm.fpr(MaxBitsPerKey) > target {
			continue // c probes cannot get there
		}
		// Bisect on bits per key: the rate falls as bits grow.
		lo, hi := 0.0, float64(MaxBitsPerKey)
		for hi-lo > 1.0/1024 {
			mid := (lo + hi) / 2
			if lm.fpr(mid) <= target {
				hi = mid
			} else {
				lo = mid
			}
		}
		if hi < bitsPerKey {
			bitsPerKey, k = hi, c
		} else if hi > bitsPerKey*1.05 {
			break // past the best probe count, and getting worse
		}
	}
	if k == 0 {
		return 0, 0, 0, false
	}
	return bitsPerKey, k, (&lineModel{k: k}).fpr(bitsPerKey), true
}

// TextbookBitsPerKey returns -ln(p) / (ln 2)^2, the bits per key of the
// textbook Bloom filter with false-positive rate p: the asymptote of an
// infinite bit array with the real-valued optimal probe count. Real
// layouts need more (see the package documentation): [Bloom.BitsPerKey]
// tells what a [New] policy spends on large filters.
func TextbookBitsPerKey(p float64) float64 {
	return -math.Log(p) / (math.Ln2 * math.Ln2)
}
