package testseed

import (
	"flag"
	"testing"
)

// TestSeed checks that Seed returns -seed's value when it is set, and a
// seed from the clock, never 0, when it is not.
func TestSeed(t *testing.T) {
	f := flag.Lookup("seed")
	if f == nil {
		t.Fatal("importing testseed registered no -seed flag")
	}
	defer f.Value.Set(f.Value.String())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.Value.Set("0"))
	if s := Seed(t); s == 0 {
		t.Error("Seed returned 0 without -seed")
	}
	must(f.Value.Set("1234"))
	if s := Seed(t); s != 1234 {
		t.Errorf("Seed returned %d with -seed 1234", s)
	}
}
