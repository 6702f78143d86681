package bloompolicy

import (
	"math"
	"testing"
)

// occupancyFPR is the reference for plainFPR: it carries the distribution of
// the number of set bits through all k*n probes (a positive sum, no
// cancellation), then averages (set/m)^k over it. It costs O(k*n*m).
func occupancyFPR(m, n, k int) float64 {
	dist := make([]float64, m+1)
	dist[0] = 1
	for range k * n {
		for x := min(m, k*n); x >= 0; x-- {
			stay := dist[x] * float64(x) / float64(m)
			if x > 0 {
				stay += dist[x-1] * float64(m-x+1) / float64(m)
			}
			dist[x] = stay
		}
	}
	fpr := 0.0
	for x, p := range dist {
		fpr += p * math.Pow(float64(x)/float64(m), float64(k))
	}
	return fpr
}

// TestPlainFPR_MatchesOccupancy compares plainFPR with the reference over
// a grid that covers dense and sparse arrays, few and many probes, and so
// both the inclusion-exclusion and the Markov-chain paths of allSet.
func TestPlainFPR_MatchesOccupancy(t *testing.T) {
	for _, m := range []int{8, 104, 512} {
		for _, n := range []int{1, 2, 5, 20, 51, 100} {
			for _, k := range []int{1, 2, 3, 6, 8, 12, 16, 24, 32} {
				got, want := plainFPR(float64(m), n, k), occupancyFPR(m, n, k)
				if math.Abs(got-want) > 1e-6*want {
					t.Errorf("plainFPR(m=%d, n=%d, k=%d) = %.12g; occupancy model says %.12g", m, n, k, got, want)
				}
			}
		}
	}
	if got := plainFPR(64, 0, 5); got != 0 {
		t.Errorf("plainFPR of no keys = %g; want 0", got)
	}
}

// TestAllSet_Bound checks the last resort of allSet, past chainBudget: the
// bound it returns must not fall below the exact figure.
func TestAllSet_Bound(t *testing.T) {
	for _, c := range []struct{ j, throws int }{{32, 40000}, {24, 50000}} {
		m := float64(40 * c.throws) // sparse: a tiny rate, far past reliable cancellation
		e := make([]float64, c.j+1)
		for i := range e {
			e[i] = math.Exp(float64(c.throws) * math.Log1p(-float64(i)/m))
		}
		got, exact := allSet(e, c.throws, m), allSetChain(c.j, c.throws, m)
		if !(got >= exact*(1-1e-9)) || got > 2*exact {
			t.Errorf("allSet(j=%d, throws=%d, m=%g) = %.6g; exact %.6g", c.j, c.throws, m, got, exact)
		}
	}
}

// TestBlockedBitsFor pins the calibration figures given in doc.go.
func TestBlockedBitsFor(t *testing.T) {
	for _, c := range []struct {
		target float64
		bits   float64
		probes int
	}{{0.1, 4.84, 3}, {0.01, 9.92, 6}, {0.001, 15.55, 9}, {0.0001, 22.03, 12}, {1e-6, 38.83, 16}} {
		bits, probes, fpr, ok := blockedBitsFor(c.target)
		if !ok || math.Abs(bits-c.bits) > 0.005 || probes != c.probes || fpr > c.target || fpr < 0.99*c.target {
			t.Errorf("blockedBitsFor(%g) = %.4f bits, %d probes, fpr %.5g, %v; want %.2f bits, %d probes",
				c.target, bits, probes, fpr, ok, c.bits, c.probes)
		}
	}
	k, fpr := blockedProbesFor(10)
	if k != 6 || math.Abs(fpr-0.00966) > 0.00001 {
		t.Errorf("blockedProbesFor(10) = %d probes, fpr %.5g; want 6, 0.966%%", k, fpr)
	}
}

// TestPlainSizeForTarget checks the walk to the fewest bytes.
func TestPlainSizeForTarget(t *testing.T) {
	for _, n := range []int{1, 2, 20, 60, 200, 1000} {
		for _, target := range []float64{0.5, 0.1, 0.01, 0.0001} {
			s := plainSizeForTarget(n, target)
			if _, fpr := bestPlainProbes(float64(8*s.bytes), n); fpr > target {
				t.Errorf("n=%d target=%g: %d bytes give %g", n, target, s.bytes, fpr)
			}
			if s.bytes > 1 {
				if _, fpr := bestPlainProbes(float64(8*(s.bytes-1)), n); fpr <= target {
					t.Errorf("n=%d target=%g: %d bytes, but %d suffice", n, target, s.bytes, s.bytes-1)
				}
			}
		}
	}
}
