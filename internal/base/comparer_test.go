package base

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestComparer_Bytewise(t *testing.T) {
	reverse := func(a, b []byte) int { return bytes.Compare(b, a) }
	wrapped := func(a, b []byte) int { return bytes.Compare(a, b) }
	for _, tc := range []struct {
		name string
		c    *Comparer
		want bool
	}{
		{"default", DefaultComparer, true},
		{"a copy of the default", &Comparer{Compare: bytes.Compare, Name: "mine"}, true},
		{"bytewise name, other order", &Comparer{Compare: reverse, Name: DefaultComparer.Name}, false},
		{"bytes.Compare wrapped", &Comparer{Compare: wrapped, Name: DefaultComparer.Name}, false},
	} {
		if got := tc.c.Bytewise(); got != tc.want {
			t.Errorf("%s: Bytewise() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ prefix, want []byte }{
		{[]byte("user/"), []byte("user0")},
		{[]byte("a"), []byte("b")},
		{[]byte("a\xff"), []byte("b")},
		{[]byte("a\xfe\xff\xff"), []byte("a\xff")},
		{[]byte("\xff\xff"), nil},
		{nil, nil},
	} {
		got := PrefixEnd(tc.prefix)
		if !bytes.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("PrefixEnd(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

// TestPrefixEnd_Bounds checks, for random prefixes and keys, that a key
// lies in [prefix, PrefixEnd(prefix)) exactly when it begins with prefix.
func TestPrefixEnd_Bounds(t *testing.T) {
	alphabet := []byte{0, 1, 'a', 0xfe, 0xff}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 0
	for range 20000 {
		prefix := randomKey(rng, alphabet, 3)
		key := randomKey(rng, alphabet, 5)
		end := PrefixEnd(prefix)
		in := bytes.Compare(key, prefix) >= 0 && (end == nil || bytes.Compare(key, end) < 0)
		if in != bytes.HasPrefix(key, prefix) {
			t.Fatalf("key %q, prefix %q, end %q: in range %v, has prefix %v", key, prefix, end, in, !in)
		}
		if in {
			n++
		}
	}
	if n < 100 {
		t.Fatalf("only %d keys bore their prefix: the test checked too little", n)
	}
}

func randomKey(rng *rand.Rand, alphabet []byte, maxLen int) []byte {
	k := make([]byte, rng.IntN(maxLen+1))
	for i := range k {
		k[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return k
}

func TestImmediateSuccessor(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("a"), []byte("a\xff")} {
		succ := ImmediateSuccessor(key)
		if bytes.Compare(succ, key) <= 0 || !bytes.Equal(succ[:len(key)], key) || succ[len(key)] != 0 || len(succ) != len(key)+1 {
			t.Errorf("ImmediateSuccessor(%q) = %q", key, succ)
		}
	}
}

func TestNewSplitComparer(t *testing.T) {
	split := func(k []byte) int { return min(len(k), 2) }
	c := NewSplitComparer("two", split)
	if c.Name != DefaultComparer.Name || c.SplitName != "two" || !c.Bytewise() || c.CheckSplit() != nil {
		t.Fatalf("NewSplitComparer = %+v", c)
	}
	if got := c.Prefix([]byte("abc")); string(got) != "ab" {
		t.Fatalf("Prefix(abc) = %q", got)
	}
	if DefaultComparer.Split != nil {
		t.Fatal("NewSplitComparer changed DefaultComparer")
	}
}
