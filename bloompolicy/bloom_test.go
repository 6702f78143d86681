package bloompolicy_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
)

func mustNew(t testing.TB, target float64) *bloompolicy.Bloom {
	t.Helper()
	p, err := bloompolicy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustBits(t testing.TB, bits float64) *bloompolicy.Bloom {
	t.Helper()
	p, err := bloompolicy.NewBitsPerKey(bits)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNew_BadArguments(t *testing.T) {
	for _, c := range []struct {
		target float64
		why    string
	}{
		{0, "not strictly between 0 and 1"},
		{1, "not strictly between 0 and 1"},
		{-0.01, "not strictly between 0 and 1"},
		{1.5, "not strictly between 0 and 1"},
		{math.NaN(), "not strictly between 0 and 1"},
		{math.Inf(1), "not strictly between 0 and 1"},
		{math.Inf(-1), "not strictly between 0 and 1"},
		{1e-300, "needs more than 100 bits per key"},
	} {
		p, err := bloompolicy.New(c.target)
		if err == nil || p != nil {
			t.Errorf("New(%v) = %v, %v; want an error", c.target, p, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "bloompolicy: ") || !strings.Contains(err.Error(), c.why) {
			t.Errorf("New(%v) error %q; want the prefix %q and %q", c.target, err, "bloompolicy: ", c.why)
		}
	}
}

func TestNewBitsPerKey_BadArguments(t *testing.T) {
	for _, c := range []struct {
		bits float64
		why  string
	}{
		{0, "not positive"},
		{-3, "not positive"},
		{math.NaN(), "not a finite number"},
		{math.Inf(1), "not a finite number"},
		{math.Inf(-1), "not a finite number"},
		{100.5, "exceeds the limit of 100"},
		{1e9, "exceeds the limit of 100"},
		// Positive but too thin to size: 1e-6 took minutes in the
		// sizing model, 1e-17 and below indexed it at MinInt64.
		{0.0099, "below the minimum of 0.01"},
		{1e-17, "below the minimum of 0.01"},
		{5e-324, "below the minimum of 0.01"},
		{1e-6, "below the minimum of 0.01"},
	} {
		p, err := bloompolicy.NewBitsPerKey(c.bits)
		if err == nil || p != nil {
			t.Errorf("NewBitsPerKey(%v) = %v, %v; want an error", c.bits, p, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "bloompolicy: ") || !strings.Contains(err.Error(), c.why) {
			t.Errorf("NewBitsPerKey(%v) error %q; want the prefix %q and %q", c.bits, err, "bloompolicy: ", c.why)
		}
	}
}

// TestNew_Range checks that arguments at the edges of the valid range give
// working policies.
func TestNew_Range(t *testing.T) {
	for _, target := range []float64{0.999, 0.5, 1e-6, 1e-9} {
		p := mustNew(t, target)
		if p.ExpectedFPR() > target || p.BitsPerKey() <= 0 || p.BitsPerKey() > 100 {
			t.Errorf("New(%g): %v expects %g", target, p, p.ExpectedFPR())
		}
		checkNoFalseNegatives(t, p, rand.New(rand.NewPCG(1, uint64(1/target))), 3000)
	}
	for _, bits := range []float64{0.01, 1, 10, 33.3, 100} {
		p := mustBits(t, bits)
		if p.BitsPerKey() != bits {
			t.Errorf("NewBitsPerKey(%g).BitsPerKey() = %g", bits, p.BitsPerKey())
		}
		checkNoFalseNegatives(t, p, rand.New(rand.NewPCG(2, uint64(bits*100))), 3000)
	}
}

// checkNoFalseNegatives builds one filter of n random keys and checks that
// each is found.
func checkNoFalseNegatives(t *testing.T, p *bloompolicy.Bloom, r *rand.Rand, n int) {
	t.Helper()
	keys := make([][]byte, n)
	w := p.NewWriter()
	for i := range keys {
		keys[i] = make([]byte, r.IntN(40))
		for j := range keys[i] {
			keys[i][j] = byte(r.Uint32())
		}
		w.AddKey(keys[i])
	}
	filter := w.Finish(nil)
	for _, k := range keys {
		if !p.MayContain(filter, k) {
			t.Fatalf("%v: key %x of %d not found in a filter of %d bytes", p, k, n, len(filter))
		}
	}
}

// TestBloom_NoFalseNegatives builds many random sets of random sizes, both
// layouts included.
func TestBloom_NoFalseNegatives(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	policies := []*bloompolicy.Bloom{mustNew(t, 0.1), mustNew(t, 0.01), mustNew(t, 0.0001), mustBits(t, 3), mustBits(t, 10)}
	for range 300 {
		p := policies[r.IntN(len(policies))]
		n := r.IntN(300)
		if r.IntN(20) == 0 {
			n = 5000 + r.IntN(20000) // the blocked layout
		}
		checkNoFalseNegatives(t, p, r, n)
	}
}

func TestBloom_EmptyFilter(t *testing.T) {
	p := mustNew(t, 0.01)
	filter := p.NewWriter().Finish(nil)
	if !bytes.Equal(filter, []byte{0}) {
		t.Fatalf("filter of no keys = %x; want 00", filter)
	}
	for _, k := range []string{"", "a", "anything"} {
		if p.MayContain(filter, []byte(k)) {
			t.Errorf("the empty filter may contain %q", k)
		}
	}
	info, err := bloompolicy.Inspect(filter)
	if err != nil || !info.Empty || info.Size != 1 {
		t.Errorf("Inspect(empty) = %+v, %v", info, err)
	}
}

func TestBloom_DuplicateAndEmptyKeys(t *testing.T) {
	p := mustNew(t, 0.01)
	w := p.NewWriter()
	for range 5 {
		w.AddKey(nil)
		w.AddKey([]byte("dup"))
		w.AddKey([]byte("dup"))
	}
	filter := w.Finish(nil)
	for _, k := range []string{"", "dup"} {
		if !p.MayContain(filter, []byte(k)) {
			t.Errorf("%q not found", k)
		}
	}
	// Consecutive duplicates are one key for sizing.
	w.AddKey(nil)
	w.AddKey([]byte("dup"))
	if single := w.Finish(nil); len(single) > len(filter) {
		t.Errorf("filter of 2 keys has %d bytes, of 15 adds of 2 keys %d", len(single), len(filter))
	}
}

// TestWriter_Finish checks that Finish appends after dst, leaves dst's
// bytes alone and resets the writer.
func TestWriter_Finish(t *testing.T) {
	p := mustNew(t, 0.01)
	w := p.NewWriter()
	w.AddKey([]byte("a"))
	alone := w.Finish(nil)
	w.AddKey([]byte("a"))
	both := w.Finish([]byte("prefix"))
	if !bytes.Equal(both, append([]byte("prefix"), alone...)) {
		t.Errorf("Finish(prefix) = %x; want prefix then %x", both, alone)
	}
	if got := w.Finish(nil); !bytes.Equal(got, []byte{0}) {
		t.Errorf("Finish after Finish = %x; want the empty filter", got)
	}
	// A writer reused across many filters keeps them independent.
	for n := range 3000 {
		w.AddKey([]byte{byte(n), byte(n >> 8)})
	}
	big := w.Finish(nil)
	w.AddKey([]byte("a"))
	if again := w.Finish(nil); !bytes.Equal(again, alone) {
		t.Errorf("filter after a large one = %x; want %x", again, alone)
	}
	if info, _ := bloompolicy.Inspect(big); info.Blocked {
		t.Errorf("3000 keys at 1%%: blocked layout; want plain")
	}
}

// TestBloom_MayContainUndecodable checks that bytes which are not a filter
// answer true, and that Inspect says why.
func TestBloom_MayContainUndecodable(t *testing.T) {
	for _, c := range []struct {
		name   string
		filter []byte
		why    string
	}{
		{"nil", nil, "no trailer"},
		{"zero probes", []byte{0xff, 0x00}, "zero probes"},
		{"blocked zero probes", append(make([]byte, 64), 0x40), "zero probes"},
		{"reserved layout 2", []byte{0xff, 0x83}, "unknown layout 2"},
		{"reserved layout 3", []byte{0xff, 0xc3}, "unknown layout 3"},
		{"plain no body", []byte{0x03}, "empty body"},
		{"blocked no body", []byte{0x46}, "empty body"},
		{"blocked partial line", append(make([]byte, 65), 0x46), "whole number of 64-byte lines"},
	} {
		for _, k := range []string{"", "a", "key"} {
			if !mustNew(t, 0.01).MayContain(c.filter, []byte(k)) {
				t.Errorf("%s: MayContain(%x, %q) = false; want true", c.name, c.filter, k)
			}
		}
		_, err := bloompolicy.Inspect(c.filter)
		if !errors.Is(err, bloompolicy.ErrInvalidFilter) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: Inspect error %v; want ErrInvalidFilter saying %q", c.name, err, c.why)
		}
	}
}

func TestBloom_String(t *testing.T) {
	for _, c := range []struct {
		p    *bloompolicy.Bloom
		want string
	}{
		{mustNew(t, 0.01), "bloomkv.bloom.v1(fpr=0.01: 9.92 bits/key, 6 probes)"},
		{mustBits(t, 10), "bloomkv.bloom.v1(10 bits/key, 6 probes, fpr≈0.00966)"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("String() = %q; want %q", got, c.want)
		}
	}
}
