// Package testseed gives the randomized tests of bloomkv their seeds, so
// that every failure can be replayed: the -seed flag's value when it is
// set, else one drawn from the clock, logged with the command that runs
// the test again on it.
//
// Importing it registers -seed in the test binary, unless a flag of that
// name is registered already.
package testseed

import (
	"flag"
	"strconv"
	"testing"
	"time"
)

func init() {
	if flag.Lookup("seed") == nil {
		flag.Uint64("seed", 0, "replay one seed of the randomized tests (0: new seeds from the clock)")
	}
}

// Flag returns the -seed flag's value: 0 when it is not set.
func Flag() uint64 {
	f := flag.Lookup("seed")
	if f == nil {
		return 0
	}
	s, err := strconv.ParseUint(f.Value.String(), 10, 64)
	if err != nil {
		return 0
	}
	return s
}

// Seed returns the seed of the randomized test t, -seed's value when
// set, else one from the clock, and logs it with the command that
// replays it.
func Seed(t testing.TB) uint64 {
	t.Helper()
	seed := Flag()
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -run '%s$' -seed %d)", seed, t.Name(), seed)
	return seed
}
