package pebbleadapter

import (
	"context"
	"flag"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

// spendShape is a configuration of the Pebble stores of the spending
// tests.
type spendShape struct {
	name string
	// tableSize, if set, is every level's TargetFileSize; 0 leaves
	// Pebble's defaults (2 MiB at L0, doubling per level).
	tableSize int64
}

// spendShapes are the two regimes of SetLevelFilters' plan: levels of
// many small tables, which settle just under their targets, and Pebble's
// default table sizes, under which each level above L6 of a store this
// small is one table that a compaction moves down whole.
var spendShapes = []spendShape{{"128 KiB tables", 128 << 10}, {"default tables", 0}}

// spendOptions returns the options of a spending test's store: 1 MiB
// memtables and base level, the shape's table sizes, the comparer
// SeekPrefixGE needs, in memory.
func spendOptions(s spendShape) *pebble.Options {
	opts := &pebble.Options{FS: vfs.NewMem(), Logger: QuietLogger{}, MemTableSize: 1 << 20,
		LBaseMaxBytes: 1 << 20, Comparer: wholeKeyPrefix()}
	if s.tableSize > 0 {
		opts.Levels = make([]pebble.LevelOptions, numLevels)
		for i := range opts.Levels {
			opts.Levels[i].TargetFileSize = s.tableSize
		}
	}
	return opts
}

// settledPebble loads keys keys into a Pebble DB opened with opts, waits
// until it is idle (WaitIdle), and returns the DB with its tables' filter
// bits per entry by level and over all levels.
func settledPebble(t *testing.T, keys int, opts *pebble.Options) (*pebble.DB, [numLevels]float64, float64) {
	t.Helper()
	db := openPebble(t, opts)
	rng := rand.New(rand.NewPCG(*seedFlag, 0))
	value := make([]byte, spendValueBytes)
	for i := range keys {
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		if err := db.Set(levelKey(2*(i*7919%keys)), value, pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := WaitIdle(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	levels, err := db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var bits [numLevels]float64
	var filterBytes, entries uint64
	for level, tables := range levels {
		var f, e uint64
		for _, table := range tables {
			f += table.Properties.FilterSize
			e += table.Properties.NumEntries
		}
		if e > 0 {
			bits[level] = 8 * float64(f) / float64(e)
		}
		filterBytes, entries = filterBytes+f, entries+e
	}
	return db, bits, 8 * float64(filterBytes) / float64(entries)
}

// spendValueBytes is the size of the random, incompressible values of the
// spending tests: with 12-byte keys and Pebble's per-entry overhead, an
// entry takes about spendBytesPerKey bytes in a table.
const (
	spendValueBytes  = 32
	spendBytesPerKey = 46
)

// spendFlag runs the spending tests on the store of the issue that asked
// for them, 1.5M keys settled at L4-L6, and measures SetLevelFilters
// against Pebble's own bloom there (TestSetLevelFilters_VsBloom).
var spendFlag = flag.Bool("spend", false, "measure SetLevelFilters on a settled 1.5M-key Pebble store")

// spendKeys is the size of the spending tests' store: 300,000 keys settle
// at L4-L6 as 1.5M do, in about two seconds.
func spendKeys() int {
	if *spendFlag {
		return 1_500_000
	}
	return 300_000
}

// TestSetLevelFilters_SpendsBudget loads a real Pebble DB under
// SetLevelFilters' policies and lets it settle: the filters spend the
// bits per key asked for within 3%, in both regimes of the plan (the
// small tables' one with -spend only). With
// small tables, the levels above L6 hold data and more bits per key than
// L6 (the plan is Monkey's, not a uniform one in disguise).
func TestSetLevelFilters_SpendsBudget(t *testing.T) {
	keys, ran, want := spendKeys(), 0, 0
	for _, s := range spendShapes {
		if s.tableSize > 0 && !*spendFlag {
			// At 300,000 keys the share of the data Pebble's compactions
			// leave in L4 and L5 varies from run to run: the spend of 5
			// bits per key measured 4.77-5.09, beyond 3% in about half
			// the runs. At 1.5M keys it holds (-spend).
			t.Logf("%s: measured with -spend only", s.name)
			continue
		}
		want += 2
		for _, budget := range []float64{5, 10} {
			opts := spendOptions(s)
			b := LevelBudget{Budget: bloompolicy.Budget{BitsPerKey: budget}, Keys: int64(keys), BytesPerKey: spendBytesPerKey}
			if err := SetLevelFilters(opts, b); err != nil {
				t.Fatal(err)
			}
			db, bits, spent := settledPebble(t, keys, opts)
			t.Logf("%s, %d keys, budget %v bits/key: spent %.3f, by level %.2f\n%s", s.name, keys, budget, spent, bits, db.Metrics())
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if math.Abs(spent/budget-1) > 0.03 {
				t.Errorf("%s, budget %v bits/key: spent %.3f", s.name, budget, spent)
			}
			upper := 0
			for level := 1; level < numLevels-1; level++ {
				if bits[level] > 0 {
					upper++
					if s.tableSize > 0 && bits[level] <= bits[numLevels-1] {
						t.Errorf("%s: L%d has %.2f bits per key, L6 %.2f", s.name, level, bits[level], bits[numLevels-1])
					}
				}
			}
			if s.tableSize > 0 && upper < 2 {
				t.Errorf("%s: %d levels above L6 hold data, want 2 (L4 and L5)", s.name, upper)
			}
			ran++
		}
	}
	if ran != want || ran == 0 {
		t.Fatalf("%d stores ran, want %d", ran, want)
	}
}

// TestSetLevelFilters_VsBloom measures, with -spend, SetLevelFilters at 10
// bits per key against Pebble's bloom.FilterPolicy(10) and against
// bloompolicy's 10 bits per key on every level (the allocation's gain
// alone) on a settled 1.5M-key store: false positives per absent lookup
// (SeekPrefixGE with UseL6Filters, so every level's filter is asked) and
// the bits per key each spent. It asserts only that all were measured.
func TestSetLevelFilters_VsBloom(t *testing.T) {
	if !*spendFlag {
		t.Skip("a measurement on a 1.5M-key Pebble store: run with -spend")
	}
	keys := spendKeys()
	for _, s := range spendShapes {
		levels := spendOptions(s)
		if err := SetLevelFilters(levels, LevelBudget{Budget: bloompolicy.Budget{BitsPerKey: 10}, Keys: int64(keys), BytesPerKey: spendBytesPerKey}); err != nil {
			t.Fatal(err)
		}
		ours, err := bloompolicy.NewBitsPerKey(10)
		if err != nil {
			t.Fatal(err)
		}
		fpLevels, spentLevels := absentFalsePositives(t, keys, levels)
		fpBloom, spentBloom := absentFalsePositives(t, keys, uniformOptions(s, bloom.FilterPolicy(10)))
		fpOurs, spentOurs := absentFalsePositives(t, keys, uniformOptions(s, ToPebble(ours)))
		t.Logf("%s, %d keys, false positives per absent lookup (bits/key spent): SetLevelFilters(10) %.5f (%.3f), "+
			"bloom(10) %.5f (%.3f), bloompolicy 10 bits on every level %.5f (%.3f); SetLevelFilters / bloom(10) %.3f, "+
			"SetLevelFilters / bloompolicy uniform %.3f", s.name, keys, fpLevels, spentLevels, fpBloom, spentBloom,
			fpOurs, spentOurs, fpLevels/fpBloom, fpLevels/fpOurs)
		if fpBloom <= 0 || fpLevels <= 0 || fpOurs <= 0 {
			t.Errorf("%s: no false positives measured", s.name)
		}
	}
}

// uniformOptions returns the options of shape s with policy on every
// level.
func uniformOptions(s spendShape, policy pebble.FilterPolicy) *pebble.Options {
	opts := spendOptions(s)
	fillLevels(opts)
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = policy
	}
	return opts
}

// absentFalsePositives settles a store of keys keys under opts and
// returns the false positives per absent lookup of 200,000 prefix seeks
// of absent keys, and the filter bits per key spent.
func absentFalsePositives(t *testing.T, keys int, opts *pebble.Options) (float64, float64) {
	t.Helper()
	db, _, spent := settledPebble(t, keys, opts)
	defer db.Close()
	it, err := db.NewIter(&pebble.IterOptions{UseL6Filters: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	const lookups = 200_000
	c := countFilter(db, func() {
		for i := range lookups {
			if it.SeekPrefixGE(levelKey(2*(i*7919%keys) + 1)) {
				t.Fatalf("absent key %d found", i)
			}
		}
	})
	if c.queries() < lookups {
		t.Fatalf("%d filter queries for %d lookups", c.queries(), lookups)
	}
	return float64(c.misses) / lookups, spent
}
