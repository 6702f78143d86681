package bloompolicy_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
)

// fuzzSeedFilters returns valid filters of both layouts, to start from.
func fuzzSeedFilters(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, c := range []struct {
		policy *bloompolicy.Bloom
		keys   int
	}{{mustNew(t, 0.01), 0}, {mustNew(t, 0.01), 1}, {mustNew(t, 0.1), 20}, {mustBits(t, 100), 400}} {
		w := c.policy.NewWriter()
		for i := range c.keys {
			w.AddKey(keyShapes[0].key(nil, uint64(i)))
		}
		seeds = append(seeds, w.Finish(nil))
	}
	return seeds
}

// FuzzMayContain feeds arbitrary bytes to MayContain and Inspect: neither
// may panic, and they must agree: bytes Inspect rejects make MayContain
// answer true, and only the empty filter answers false to everything.
// testdata/fuzz/FuzzMayContain holds the seed corpus beside f.Add's.
func FuzzMayContain(f *testing.F) {
	for _, filter := range fuzzSeedFilters(f) {
		f.Add(filter, []byte("0"))
		f.Add(filter, []byte("absent"))
	}
	f.Add([]byte{}, []byte{})
	f.Add([]byte{0xff, 0xc3}, []byte("k"))
	policy := mustNew(f, 0.01)
	f.Fuzz(func(t *testing.T, filter, key []byte) {
		got := policy.MayContain(filter, key)
		info, err := bloompolicy.Inspect(filter)
		switch {
		case err != nil:
			if !errors.Is(err, bloompolicy.ErrInvalidFilter) {
				t.Fatalf("Inspect(%x): error %v does not wrap ErrInvalidFilter", filter, err)
			}
			if !got {
				t.Fatalf("MayContain(%x, %q) = false for bytes Inspect rejects (%v)", filter, key, err)
			}
		case info.Empty && got:
			t.Fatalf("the empty filter may contain %q", key)
		case !info.Empty && info.BitsSet == info.Bits && !got:
			t.Fatalf("MayContain(%x, %q) = false with every bit set", filter, key)
		}
	})
}

// FuzzNoFalseNegatives builds a filter from keys cut out of arbitrary bytes
// and checks that each is found.
func FuzzNoFalseNegatives(f *testing.F) {
	f.Add([]byte("apple\x00banana\x00\x00cherry"), uint8(10))
	f.Add(bytes.Repeat([]byte("k\x00"), 300), uint8(1))
	f.Add([]byte{}, uint8(100))
	f.Fuzz(func(t *testing.T, data []byte, bits uint8) {
		policy := mustBits(t, float64(bits%100)+0.5)
		keys := bytes.Split(data, []byte{0})
		w := policy.NewWriter()
		for _, k := range keys {
			w.AddKey(k)
		}
		filter := w.Finish(nil)
		for _, k := range keys {
			if !policy.MayContain(filter, k) {
				t.Fatalf("%v: key %q of %d not found", policy, k, len(keys))
			}
		}
	})
}
