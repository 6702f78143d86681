package bloompolicy

import (
	"fmt"
	"math"
	"sync"
)

// EncodingName is the name of the filter encoding written by [Bloom]. The
// trailing version changes whenever the bytes of a filter would.
const EncodingName = "bloomkv.bloom.v1"

// Bloom is a [FilterPolicy] that builds Bloom filters, sized either for a
// target false-positive rate ([New]) or for a fixed number of bits per key
// ([NewBitsPerKey]). A Bloom is safe for concurrent use; its writers are not.
// Make one with New or NewBitsPerKey: the zero Bloom has no sizing, and its
// writers cannot build a filter.
//
// Filters are self-describing: [Bloom.MayContain] reads a filter written by
// any Bloom, whatever its parameters.
type Bloom struct {
	target float64 // 0 when sized by bits per key

	// Large filters use the blocked layout with these figures.
	bitsPerKey  float64
	probes      int
	expectedFPR float64

	// plainMaxKeys is the largest key count that still gets the plain
	// layout.
	plainMaxKeys int
}

// plainSize is the dimensions of a plain filter for a given key count.
type plainSize struct {
	bytes  int
	probes int
}

var _ FilterPolicy = (*Bloom)(nil)

// sizings caches the results of the sizing arithmetic for the whole
// process: they are pure functions of their arguments, take a few
// milliseconds (large filters) or tens of microseconds (each key count of
// a small one), and stores open many policies of the same few settings.
var sizings sync.Map // sizingKey → blockedSize or plainSize

// sizingKey names one sizing, for a target rate or for bits per key (the
// other 0): of large filters, or of a small filter of n keys.
type sizingKey struct {
	target, bits float64
	large        bool
	n            int
}

// blockedSize is the sizing of large filters.
type blockedSize struct {
	bitsPerKey, fpr float64
	probes          int
	ok              bool
}

// cached returns the sizing named by key, computing it with f once.
func cached[T any](key sizingKey, f func() T) T {
	if v, ok := sizings.Load(key); ok {
		return v.(T)
	}
	v := f()
	sizings.Store(key, v)
	return v
}

// MaxBitsPerKey is the most bits per key a Bloom spends: the bound of
// NewBitsPerKey, of the sizes New may choose, and of a Budget's runs.
const MaxBitsPerKey = 100

// MinBitsPerKey is the fewest bits per key NewBitsPerKey accepts. A
// filter that thin answers "maybe" for nearly every absent key; below it
// the sizing model, which sums over the number of keys sharing a 512-bit
// line (about 512 / bitsPerKey), takes minutes (at 1e-6 bits) or fails
// outright (at 1e-17), to size a filter that saves nothing.
// RunFilter.Policy never asks for less (it rounds to 1/16 bit).
const MinBitsPerKey = 0.01

// New returns a Bloom whose filters have an expected false-positive rate of
// at most targetFPR (and close to it) for the layout actually written, at
// every key count. targetFPR must lie strictly between 0 and 1, and be
// reachable within MaxBitsPerKey bits per key.
func New(targetFPR float64) (*Bloom, error) {
	if math.IsNaN(targetFPR) || targetFPR <= 0 || targetFPR >= 1 {
		return nil, fmt.Errorf("bloompolicy: target false-positive rate %v is not strictly between 0 and 1", targetFPR)
	}
	bs := cached(sizingKey{target: targetFPR, large: true}, func() (bs blockedSize) {
		bs.bitsPerKey, bs.probes, bs.fpr, bs.ok = blockedBitsFor(targetFPR)
		return bs
	})
	if !bs.ok {
		return nil, fmt.Errorf("bloompolicy: target false-positive rate %v needs more than %d bits per key", targetFPR, MaxBitsPerKey)
	}
	b := &Bloom{target: targetFPR, bitsPerKey: bs.bitsPerKey, probes: bs.probes, expectedFPR: bs.fpr}
	b.plainMaxKeys = int(plainMaxBytes * 8 / TextbookBitsPerKey(targetFPR))
	return b, nil
}

// NewBitsPerKey returns a Bloom whose filters spend bitsPerKey bits per key
// (the one-byte trailer and rounding up to whole bytes or cache lines
// aside), with the probe count that gives the lowest false-positive rate for
// that memory. bitsPerKey must be finite, at least MinBitsPerKey and at
// most MaxBitsPerKey.
func NewBitsPerKey(bitsPerKey float64) (*Bloom, error) {
	switch {
	case math.IsNaN(bitsPerKey) || math.IsInf(bitsPerKey, 0):
		return nil, fmt.Errorf("bloompolicy: bits per key %v is not a finite number", bitsPerKey)
	case bitsPerKey <= 0:
		return nil, fmt.Errorf("bloompolicy: bits per key %v is not positive", bitsPerKey)
	case bitsPerKey < MinBitsPerKey:
		return nil, fmt.Errorf("bloompolicy: bits per key %v is below the minimum of %v", bitsPerKey, MinBitsPerKey)
	case bitsPerKey > MaxBitsPerKey:
		return nil, fmt.Errorf("bloompolicy: bits per key %v exceeds the limit of %d", bitsPerKey, MaxBitsPerKey)
	}
	bs := cached(sizingKey{bits: bitsPerKey, large: true}, func() (bs blockedSize) {
		bs.probes, bs.fpr = blockedProbesFor(bitsPerKey)
		return bs
	})
	b := &Bloom{bitsPerKey: bitsPerKey, probes: bs.probes, expectedFPR: bs.fpr}
	b.plainMaxKeys = int(plainMaxBytes * 8 / bitsPerKey)
	return b, nil
}

// Name returns the name of the filter encoding, [EncodingName]. It does not depend
// on the Bloom's parameters: every Bloom reads every Bloom's filters.
func (b *Bloom) Name() string { return EncodingName }

// NewWriter returns a writer that builds one filter at a time with b's
// sizing. Each writer is for use by one goroutine.
func (b *Bloom) NewWriter() FilterWriter { return &writer{policy: b} }

// MayContain reports whether key may be in the set filter was built from.
// It never returns false for an added key, never panics, and answers true
// for bytes it cannot decode. It reads everything it needs from filter, so
// the parameters of b do not matter.
func (b *Bloom) MayContain(filter, key []byte) bool { return mayContain(filter, key) }

// BitsPerKey returns the bits per key b spends on a large filter (one that
// uses the cache-line-blocked layout). Small filters are sized individually
// for their key count: for a Bloom made by [NewBitsPerKey] they spend the
// same, for one made by [New] usually fewer, because the plain layout they
// use needs fewer bits for the same rate.
func (b *Bloom) BitsPerKey() float64 { return b.bitsPerKey }

// ExpectedFPR returns the false-positive rate the model of the blocked
// layout predicts for b's large filters. For a Bloom made by [New] it is at
// most the target.
func (b *Bloom) ExpectedFPR() float64 { return b.expectedFPR }

// String describes b's sizing, for logs and tools.
func (b *Bloom) String() string {
	if b.target > 0 {
		return fmt.Sprintf("%s(fpr=%g: %.2f bits/key, %d probes)", EncodingName, b.target, b.bitsPerKey, b.probes)
	}
	return fmt.Sprintf("%s(%g bits/key, %d probes, fpr≈%.3g)", EncodingName, b.bitsPerKey, b.probes, b.expectedFPR)
}

// plainSizeFor returns the dimensions of a plain filter of n keys: sized
// for b's target, or else at b's bits per key.
func (b *Bloom) plainSizeFor(n int) plainSize {
	if b.target > 0 {
		return cached(sizingKey{target: b.target, n: n}, func() plainSize {
			return plainSizeForTarget(n, b.target)
		})
	}
	return cached(sizingKey{bits: b.bitsPerKey, n: n}, func() plainSize {
		bytes := max(1, int(math.Ceil(b.bitsPerKey*float64(n)/8)))
		probes, _ := bestPlainProbes(float64(8*bytes), n)
		return plainSize{bytes: bytes, probes: probes}
	})
}

// plainSizeForTarget returns the fewest whole bytes, and the probe count,
// with which a plain filter of n keys meets target. It starts from the
// textbook estimate and walks to the exact answer.
func plainSizeForTarget(n int, target float64) plainSize {
	fits := func(bytes int) (int, bool) {
		k, fpr := bestPlainProbes(float64(8*bytes), n)
		return k, fpr <= target
	}
	bytes := max(1, int(math.Ceil(TextbookBitsPerKey(target)*float64(n)/8)))
	k, ok := fits(bytes)
	for !ok {
		bytes++
		k, ok = fits(bytes)
	}
	for bytes > 1 {
		k2, ok := fits(bytes - 1)
		if !ok {
			break
		}
		bytes, k = bytes-1, k2
	}
	return plainSize{bytes: bytes, probes: k}
}
