package pebbleadapter

import (
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

// The in-Pebble measurements below use 8 overlapping L0 tables of 20,000
// keys and 25,000 absent Gets: about 200,000 filter queries, so at 1% the
// observed rate rests on ~2,000 false positives (±2.2% relative, 1σ).
const (
	measureTables       = 8
	measureKeysPerTable = 20_000
	measureAbsent       = 25_000
)

func newBloom(t testing.TB, targetFPR float64) *bloompolicy.Bloom {
	t.Helper()
	b, err := bloompolicy.New(targetFPR)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newBloomBitsPerKey(t testing.TB, bits float64) *bloompolicy.Bloom {
	t.Helper()
	b, err := bloompolicy.NewBitsPerKey(bits)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestToPebble_BloomMeetsTargetInPebble(t *testing.T) {
	const target = 0.01
	l := newLSM(t, *seedFlag, measureTables, measureKeysPerTable, measureAbsent)
	c, bits := measureInPebble(t, l, ToPebble(newBloom(t, target)))
	ratio := c.fpr() / target
	t.Logf("bloompolicy.New(%g) in Pebble: FPR %.3f%% = %.2f × target (%d/%d), %.2f bits/key",
		target, 100*c.fpr(), ratio, c.misses, c.queries(), bits)
	if ratio < 0.75 || ratio > 1.10 {
		t.Errorf("observed FPR %.4f is %.2f × the target %g, want within [0.75, 1.10]", c.fpr(), ratio, target)
	}
}

func TestToPebble_BloomFoundByName(t *testing.T) {
	testFiltersFoundByName(t, func() pebble.FilterPolicy { return ToPebble(newBloom(t, 0.01)) })
}

func TestToPebble_BloomBeatsPebbleBloomAtEqualMemory(t *testing.T) {
	l := newLSM(t, *seedFlag, measureTables, measureKeysPerTable, measureAbsent)
	ours, ourBits := measureInPebble(t, l, ToPebble(newBloomBitsPerKey(t, 10)))
	theirs, theirBits := measureInPebble(t, l, bloom.FilterPolicy(10))
	t.Logf("bloompolicy.NewBitsPerKey(10): FPR %.3f%% (%d/%d), %.3f bits/key",
		100*ours.fpr(), ours.misses, ours.queries(), ourBits)
	t.Logf("bloom.FilterPolicy(10):        FPR %.3f%% (%d/%d), %.3f bits/key",
		100*theirs.fpr(), theirs.misses, theirs.queries(), theirBits)
	if ourBits > theirBits*1.01 {
		t.Errorf("ours uses %.3f bits/key, Pebble's %.3f: not equal memory", ourBits, theirBits)
	}
	if ours.fpr() >= theirs.fpr() {
		t.Errorf("at equal memory our FPR %.4f is not below Pebble's %.4f", ours.fpr(), theirs.fpr())
	}
}
