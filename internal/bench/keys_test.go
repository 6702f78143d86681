package bench

import (
	"regexp"
	"testing"
)

// TestKeyGen_Disjoint checks what the benchmark relies on: keys are 16 hex
// digits, present keys are distinct, and no absent key is a present one.
func TestKeyGen_Disjoint(t *testing.T) {
	const n = 20000
	for _, seed := range []uint64{0, 1, 42, 1 << 63} {
		kg := NewKeyGen(seed)
		present := map[string]bool{}
		hex := regexp.MustCompile(`^[0-9a-f]{16}$`)
		for i := range n {
			k := string(kg.Present(nil, i))
			if !hex.MatchString(k) {
				t.Fatalf("seed %d: key %d = %q, want 16 hex digits", seed, i, k)
			}
			if present[k] {
				t.Fatalf("seed %d: key %q generated twice", seed, k)
			}
			present[k] = true
		}
		for i := range n {
			if k := string(kg.Absent(nil, i)); present[k] {
				t.Fatalf("seed %d: absent key %d = %q is present", seed, i, k)
			}
		}
	}
}

func TestKeyGen_Value(t *testing.T) {
	kg := NewKeyGen(7)
	for _, size := range []int{0, 1, 7, 8, 9, 100} {
		v := kg.Value(nil, 3, size)
		if len(v) != size {
			t.Errorf("value of size %d has %d bytes", size, len(v))
		}
		if w := kg.Value(nil, 3, size); string(w) != string(v) {
			t.Errorf("value of size %d differs between calls", size)
		}
	}
	if string(kg.Value(nil, 1, 32)) == string(kg.Value(nil, 2, 32)) {
		t.Error("keys 1 and 2 have the same value")
	}
}

// TestWorkload_LookupKey checks that present lookups read keys among
// the first n loaded, spread over all of them, and that absent lookups do
// not depend on n.
func TestWorkload_LookupKey(t *testing.T) {
	w := NewWorkload(3, 1000, 10, 2500)
	for _, n := range []int{1, 7, 1000} {
		seen := make([]int, n)
		for i := range 20 * n {
			j := w.Gen.Index(i, n)
			if j < 0 || j >= n {
				t.Fatalf("n=%d: lookup %d reads key %d", n, i, j)
			}
			seen[j]++
		}
		for j, c := range seen {
			if c == 0 {
				t.Errorf("n=%d: key %d never read in %d lookups", n, j, 20*n)
			}
		}
	}
	if string(w.LookupKey(nil, 5, 10, false)) != string(w.LookupKey(nil, 5, 1000, false)) {
		t.Error("absent lookup 5 depends on the keys loaded")
	}
	if string(w.LookupKey(nil, 5, 1000, true)) != string(w.Gen.Present(nil, w.Gen.Index(5, 1000))) {
		t.Error("present lookup 5 is not the present key Index names")
	}
}
