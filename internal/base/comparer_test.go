package base

import (
	"bytes"
	"errors"
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

// TestComparer_CheckSplit checks that CheckSplit refuses Splits that break
// their contract on its sample keys or the caller's, and accepts sound
// ones.
func TestComparer_CheckSplit(t *testing.T) {
	slash := func(k []byte) int {
		if i := bytes.IndexByte(k, '/'); i >= 0 {
			return i + 1
		}
		return len(k)
	}
	onlyOn := func(bad []byte, n int) Split {
		return func(k []byte) int {
			if bytes.Equal(k, bad) {
				return n
			}
			return slash(k)
		}
	}
	for _, tc := range []struct {
		name    string
		split   Split
		samples [][]byte
		ok      bool
	}{
		{"slash", slash, nil, true},
		{"whole key", func(k []byte) int { return len(k) }, nil, true},
		{"empty prefix", func(k []byte) int { return 0 }, nil, true},
		{"len+5", func(k []byte) int { return len(k) + 5 }, nil, false},
		{"-1", func(k []byte) int { return -1 }, nil, false},
		{"not its own prefix", func(k []byte) int { return max(len(k)-1, 0) }, nil, false},
		{"panics", func(k []byte) int { panic("boom") }, nil, false},
		{"bad on a sample only", onlyOn([]byte("zz/9"), 9), [][]byte{[]byte("zz/9")}, false},
		{"bad off the samples", onlyOn([]byte("zz/9"), 9), [][]byte{[]byte("zz/8")}, true},
	} {
		c := &Comparer{Compare: bytes.Compare, Split: tc.split, SplitName: "test", Name: "test"}
		err := c.CheckSplit(tc.samples...)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrInvalidSplit) {
			t.Errorf("%s: CheckSplit = %v, want ok=%v (else ErrInvalidSplit)", tc.name, err, tc.ok)
		}
	}
}

// TestComparer_PrefixOutOfRange checks that Prefix and HasPrefix meet a
// Split's length outside the key with an error or false, never a panic.
func TestComparer_PrefixOutOfRange(t *testing.T) {
	for _, n := range []int{-1, 4, 100} {
		c := &Comparer{Compare: bytes.Compare, Split: func([]byte) int { return n }, SplitName: "test", Name: "test"}
		if p, err := c.Prefix([]byte("abc")); !errors.Is(err, ErrInvalidSplit) || p != nil {
			t.Errorf("Split %d: Prefix(abc) = %q, %v; want ErrInvalidSplit", n, p, err)
		}
		if c.HasPrefix([]byte("abc"), []byte("ab")) {
			t.Errorf("Split %d: HasPrefix(abc, ab) is true", n)
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
	if got, err := c.Prefix([]byte("abc")); err != nil || string(got) != "ab" {
		t.Fatalf("Prefix(abc) = %q, %v", got, err)
	}
	if DefaultComparer.Split != nil {
		t.Fatal("NewSplitComparer changed DefaultComparer")
	}
}
