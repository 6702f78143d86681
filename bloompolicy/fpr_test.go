package bloompolicy_test

import (
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
)

// The acceptance bounds of the false-positive and space tests.
const (
	fprLow, fprHigh = 0.75, 1.10 // measured rate ÷ target
	expectedFPs     = 2000       // false positives to expect per measurement
)

var fprTargets = []float64{0.1, 0.01, 0.001, 0.0001}

// measurement is what measure found.
type measurement struct {
	fpr        float64 // false positives ÷ absent-key queries
	bitsPerKey float64 // every byte of every filter, trailers included
}

// measure builds filters filters of n keys each (shape indices [0,
// filters*n)), queries them with queries absent keys in all (indices from
// filters*n on, shared round-robin across filters), and checks that every
// added key is found.
func measure(t testing.TB, p *bloompolicy.Bloom, shape keyShape, n, filters, queries int) measurement {
	t.Helper()
	// Many filters share a pool of absent keys: each filter is queried
	// with a different slice of it, and the answers of distinct filters
	// are independent. A single filter gets a fresh key every query.
	poolSize := min(queries, 1<<17)
	if filters == 1 {
		poolSize = 0
	}
	pool := make([][]byte, poolSize)
	for i := range pool {
		pool[i] = shape.key(nil, uint64(filters*n+i))
	}
	var fresh []byte
	absent := func(q int) []byte {
		if poolSize > 0 {
			return pool[q%poolSize]
		}
		fresh = shape.key(fresh[:0], uint64(filters*n+q))
		return fresh
	}
	perFilter := (queries + filters - 1) / filters
	w := p.NewWriter()
	var key, filter []byte
	var bytes, falsePositives, asked int
	next := 0
	for f := range filters {
		for i := range n {
			key = shape.key(key[:0], uint64(f*n+i))
			w.AddKey(key)
		}
		filter = w.Finish(filter[:0])
		bytes += len(filter)
		for i := range n {
			key = shape.key(key[:0], uint64(f*n+i))
			if !p.MayContain(filter, key) {
				t.Fatalf("%s: false negative for key %q (filter %d of %d keys)", shape.name, key, f, n)
			}
		}
		for range perFilter {
			if p.MayContain(filter, absent(next)) {
				falsePositives++
			}
			asked++
			next++
		}
	}
	return measurement{
		fpr:        float64(falsePositives) / float64(asked),
		bitsPerKey: 8 * float64(bytes) / float64(filters*n),
	}
}

// checkFPR runs measure for every target and key shape and checks the rate
// against [fprLow, fprHigh] × target and the space against spaceLimit ×
// the textbook bits per key.
func checkFPR(t *testing.T, n, filters int, spaceLimit float64) {
	for _, target := range fprTargets {
		p, err := bloompolicy.New(target)
		if err != nil {
			t.Fatal(err)
		}
		for _, shape := range keyShapes {
			name := fmt.Sprintf("target=%g/keys=%d/%s", target, n, shape.name)
			t.Run(name, func(t *testing.T) {
				m := measure(t, p, shape, n, filters, int(expectedFPs/target))
				ratio := m.fpr / target
				space := m.bitsPerKey / bloompolicy.TextbookBitsPerKey(target)
				t.Logf("fpr %.4g%% (%.3f× target), %.2f bits/key (%.3f× textbook)", 100*m.fpr, ratio, m.bitsPerKey, space)
				if ratio < fprLow || ratio > fprHigh {
					t.Errorf("fpr %.4g%% is %.3f× the target %g%%; want within [%v, %v]", 100*m.fpr, ratio, 100*target, fprLow, fprHigh)
				}
				if space > spaceLimit {
					t.Errorf("%.3f bits/key is %.3f× textbook %.3f; want at most %v×", m.bitsPerKey, space, bloompolicy.TextbookBitsPerKey(target), spaceLimit)
				}
			})
		}
	}
}

// TestFPR_PerBlock checks small per-block filters: 2000 filters of each
// size, so the average covers the spread between filters.
func TestFPR_PerBlock(t *testing.T) {
	for _, c := range []struct {
		keys  int
		space float64
	}{{20, 1.25}, {60, 1.10}, {200, 1.10}} {
		checkFPR(t, c.keys, 2000, c.space)
	}
}

// TestFPR_Large checks one filter of a million keys (the blocked layout).
func TestFPR_Large(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 16 filters of a million keys")
	}
	checkFPR(t, 1_000_000, 1, 1.20)
}
