package kv_test

// Seeds and step logs of the randomized tests (model, crash, error
// injection): the -seed flag, one subtest per seed that says how to replay
// it, and the last steps taken, for failure messages.

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/testseed"
)

// testSeeds returns the seeds a randomized test runs: the -seed flag's
// value alone when set (internal/testseed registers it), otherwise n
// seeds derived from the clock.
func testSeeds(n int) []uint64 {
	if s := testseed.Flag(); s != 0 {
		return []uint64{s}
	}
	base := uint64(time.Now().UnixNano())
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = base + uint64(i)*0x9e3779b97f4a7c15
		if seeds[i] == 0 {
			seeds[i] = 1
		}
	}
	return seeds
}

// newRand returns the generator of a seed.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x5eed5eed5eed5eed))
}

// forEachSeed runs fn as one subtest per seed, logging the seed and how to
// replay it.
func forEachSeed(t *testing.T, n int, fn func(t *testing.T, seed uint64)) {
	for _, seed := range testSeeds(n) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("seed %d (replay with -run '%s' -seed %d)", seed, t.Name(), seed)
			fn(t, seed)
		})
	}
}

// opLog keeps the most recent steps of a randomized test, for failure
// messages.
type opLog struct {
	steps []string
	n     int
}

const opLogKeep = 40

func (l *opLog) add(format string, args ...any) {
	l.n++
	s := fmt.Sprintf("%5d: ", l.n) + fmt.Sprintf(format, args...)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if len(l.steps) == opLogKeep {
		copy(l.steps, l.steps[1:])
		l.steps = l.steps[:opLogKeep-1]
	}
	l.steps = append(l.steps, s)
}

func (l *opLog) String() string { return strings.Join(l.steps, "\n") }

// seededRun is what a randomized run's failures name: its test, its seed
// and its recent steps. The model, differential and untidy-key runs embed
// it.
type seededRun struct {
	t    *testing.T
	seed uint64
	log  opLog
}

// fatalf fails the run, naming the seed and the recent steps.
func (r *seededRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d: %s\nrecent steps:\n%s", r.seed, fmt.Sprintf(format, args...), r.log.String())
}

// check fails the run on err, saying what failed.
func (r *seededRun) check(err error, what string) {
	r.t.Helper()
	if err != nil {
		r.fatalf("%s: %v", what, err)
	}
}

// requireRan fails the test when fewer than want of its cases ran: a test
// of injected faults or crash points that injected none would otherwise
// pass without checking anything.
func requireRan(t *testing.T, what string, ran, want int) {
	t.Helper()
	if ran < want {
		t.Fatalf("only %d %s ran, want at least %d: the test checked less than it should", ran, what, want)
	}
	t.Logf("%d %s ran", ran, what)
}

// fewestOfThree returns the least of three counts of a workload's
// operations, each from its own dry run. Background flushes and
// compactions, and how concurrent commits group their WAL writes, make
// the count vary from run to run (by as much as half on a loaded
// machine), so crash and failure points are drawn below the fewest, where
// nearly every run reaches them.
func fewestOfThree(count func() int) int {
	fewest := count()
	for range 2 {
		fewest = min(fewest, count())
	}
	return fewest
}

// must fails the test on a non-nil error: for the calls whose error the
// test does not itself expect.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mustClose closes c, failing the test on an error, for defer.
func mustClose(t testing.TB, c io.Closer) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}
