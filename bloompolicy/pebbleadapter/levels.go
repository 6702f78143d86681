package pebbleadapter

import (
	"fmt"
	"math"
	"slices"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// numLevels is the number of levels of a Pebble v1 tree, L0 to L6.
const numLevels = 7

// LevelBudget describes the store [SetLevelFilters] sizes filters for.
type LevelBudget struct {
	// Budget is what the filters may spend, over the keys of the levels
	// that get filters (see bloompolicy.Allocate).
	Budget bloompolicy.Budget
	// Keys is the number of keys the store is sized for, and BytesPerKey
	// the average bytes an entry takes in its tables (key, value and
	// per-entry overhead); together they place the store's data in levels.
	Keys        int64
	BytesPerKey float64
	// L0Tables is the number of memtable-sized L0 tables the plan expects
	// the store to hold, each a run of its own whose filter bits count
	// against the budget. 0, the default, plans for a settled store: Pebble
	// compacts L0 away between bursts of writes, so L0 tables are
	// transient and an allowance for them would go unspent (a plan that
	// reserved L0CompactionThreshold of them spent about 9.5 of 10 bits per
	// key on a settled 1.5M-key store). L0 tables still get the filters
	// the rule gives a memtable-sized run. Set it to L0CompactionThreshold
	// for a store whose L0 stays full under constant writes.
	L0Tables int
	// NoL6Filter leaves L6 tables without a filter and applies the budget
	// to L0–L5 alone (a budget of bits per key then counts their keys
	// only). Pebble v1.1.5's DB.Get never reads an L6 filter (only
	// iterators opened with IterOptions.UseL6Filters do, for SeekPrefixGE),
	// so a store read by Get alone gains nothing from them.
	NoL6Filter bool
}

// SetLevelFilters sets opts.Levels[i].FilterPolicy, for all seven levels,
// to Bloom policies (bloompolicy.NewBitsPerKey, through [ToPebble]) that
// divide b.Budget among the levels by Monkey's rule, bloompolicy.Allocate,
// for the shape a settled Pebble v1.1.5 store of b.Keys keys holds, so
// that the memory asked for is the memory spent:
//
//   - L0 as b.L0Tables runs of a memtable's worth of keys (MemTableSize
//     bytes; none by default, as a settled store holds).
//   - Below it, Pebble's own targets (dynamic level bytes): L6's is all but
//     1/LevelMultiplier of the data; the base level is the lowest whose
//     share, dividing L6's by LevelMultiplier per level up, is at most
//     LBaseMaxBytes; its target is LBaseMaxBytes, and the targets grow to
//     L6's by one smoothed multiplier per level.
//   - A level above L6 compacts a table down whenever it is over its
//     target, so at rest it holds its target less up to one table: it is
//     planned at its target less half its TargetFileSize, and L6 with the
//     rest.
//   - A level whose TargetFileSize is at least its target is one table that
//     a compaction moves or merges down whole, so at rest it holds anything
//     from nothing to its target, and a table moved down keeps its filter:
//     it gets the filters of the level below (with NoL6Filter, which has no
//     L6 filters to share, it is planned at half its target). Under Pebble's
//     defaults (a 64 MiB base level, 2 MiB tables at L0 doubling per level)
//     that is the base level L5 of a store under about 700 MB, whose
//     filters are then uniform; a smaller LBaseMaxBytes with the default
//     table sizes makes it every level above L6 of larger stores. Monkey's
//     gain needs levels of many tables.
//
// Levels above the base hold nothing and get the base level's policy. Zero
// options mean Pebble's defaults. Other fields of opts.Levels are kept;
// missing entries are added. Settled 300,000- and 1.5M-key stores spend
// the bits per key asked for within 3% (TestSetLevelFilters_SpendsBudget).
//
// Remember that Pebble's DB.Get skips L6 filters (see [LevelBudget]'s
// NoL6Filter). The policies all share the name of bloomkv's Bloom
// encoding, so a reopened store with other budgets reads every table's
// filter.
func SetLevelFilters(opts *pebble.Options, b LevelBudget) error {
	if b.Keys <= 0 || math.IsNaN(b.BytesPerKey) || b.BytesPerKey <= 0 || math.IsInf(b.BytesPerKey, 0) {
		return fmt.Errorf("pebbleadapter: LevelBudget needs a positive key count (%d) and bytes per key (%v)", b.Keys, b.BytesPerKey)
	}
	if b.L0Tables < 0 {
		return fmt.Errorf("pebbleadapter: LevelBudget.L0Tables is negative (%d)", b.L0Tables)
	}
	runs := levelRuns(opts, b)
	filters, err := bloompolicy.Allocate(runs[:], b.Budget)
	if err != nil {
		return fmt.Errorf("pebbleadapter: %w", err)
	}
	fillLevels(opts)
	base := 1
	for base < numLevels-1 && runs[base].Count == 0 {
		base++
	}
	for level := range numLevels {
		f := filters[max(level, base)]
		if level == 0 {
			f = filters[0]
		}
		bloom, err := f.Policy()
		if err != nil {
			return fmt.Errorf("pebbleadapter: L%d: %w", level, err)
		}
		opts.Levels[level].FilterPolicy = nil
		if bloom != nil && !(level == numLevels-1 && b.NoL6Filter) {
			opts.Levels[level].FilterPolicy = ToPebble(bloom)
		}
	}
	return nil
}

// fillLevels gives opts.Levels all seven entries, each added one as Pebble
// would configure that level: a copy of the last entry with its
// TargetFileSize doubled (pebble.Options.Level), after the defaults of
// pebble.LevelOptions when there is none.
func fillLevels(opts *pebble.Options) {
	if len(opts.Levels) == 0 {
		opts.Levels = []pebble.LevelOptions{{}}
		opts.Levels[0].EnsureDefaults()
	}
	for len(opts.Levels) < numLevels {
		opts.Levels = append(opts.Levels, opts.Level(len(opts.Levels)))
	}
}

// levelRuns returns the runs of each level of the shape a settled Pebble
// store holds (see SetLevelFilters), index = level; levels above the base
// level have Count 0, as does L6 with NoL6Filter. A level whose tables are
// as large as its target has Count 0 too, and the keys of the level below,
// so that it gets that level's filters.
func levelRuns(opts *pebble.Options, b LevelBudget) [numLevels]bloompolicy.Runs {
	d := shapeOptions(opts)
	keysPerByte := 1 / b.BytesPerKey
	var runs [numLevels]bloompolicy.Runs
	runs[0] = bloompolicy.Runs{Count: b.L0Tables, Keys: max(1, int64(float64(d.MemTableSize)*keysPerByte))}
	total := float64(b.Keys) * b.BytesPerKey
	base, targets := levelTargets(total, float64(d.LBaseMaxBytes), float64(d.Experimental.LevelMultiplier))
	files := targetFileSizes(opts)
	rest := total
	for level := base; level < numLevels-1; level++ {
		file := min(float64(files[level]), targets[level])
		if file == targets[level] && !b.NoL6Filter {
			continue // turns over whole: planned with the level below
		}
		size := min(targets[level]-file/2, rest)
		runs[level] = bloompolicy.Runs{Count: 1, Keys: max(1, int64(size*keysPerByte))}
		rest -= size
	}
	runs[numLevels-1] = bloompolicy.Runs{Count: 1, Keys: max(1, int64(rest*keysPerByte))}
	if b.NoL6Filter {
		runs[numLevels-1].Count = 0
	}
	for level := numLevels - 2; level >= base; level-- {
		if runs[level].Count == 0 {
			runs[level].Keys = runs[level+1].Keys
		}
	}
	return runs
}

// targetFileSizes returns the size at which Pebble cuts each level's
// tables under opts: its Levels entries, with Pebble's defaults, and
// each level past them twice the one above (pebble.Options.Level).
func targetFileSizes(opts *pebble.Options) [numLevels]int64 {
	c := &pebble.Options{Levels: slices.Clone(opts.Levels)}
	for i := range c.Levels {
		c.Levels[i].EnsureDefaults()
	}
	fillLevels(c)
	var sizes [numLevels]int64
	for level := range sizes {
		sizes[level] = c.Levels[level].TargetFileSize
	}
	return sizes
}

// levelTargets returns the base level and the target size of each level
// from it down that Pebble v1.1.5 sets (compactionPickerByScore.
// initLevelMaxBytes, dynamic level bytes) for a store of total bytes
// below L0: L6's target is all but 1/mult of the data; the base level is
// the lowest whose share, dividing L6's by mult per level up, is at most
// lbase; the base level's target is lbase, and the targets grow from it to
// L6's by one smoothed multiplier per level. At rest every level above L6
// holds at most its target (it compacts when over) and L6 the rest.
func levelTargets(total, lbase, mult float64) (base int, targets [numLevels]float64) {
	bottom := total - total/mult
	base = numLevels - 1
	for size := bottom; base > 1 && size > lbase; base-- {
		size /= mult
	}
	smoothed := 1.0
	if base < numLevels-1 {
		smoothed = math.Pow(bottom/lbase, 1/float64(numLevels-1-base))
	}
	size := lbase
	for level := base; level < numLevels; level++ {
		if level > base {
			size *= smoothed
		}
		targets[level] = size
	}
	return base, targets
}

// shapeOptions returns the options the target shape depends on
// (LBaseMaxBytes, LevelMultiplier, MemTableSize),
// with Pebble's own defaults where opts leaves them zero. Pebble applies
// them (pebble.Options.EnsureDefaults) to a fresh Options holding only
// those fields: on the caller's it would change the Levels entries and
// EventListener in place, and a nil FS would be wrapped with a
// disk-health goroutine, so the copy carries an in-memory FS it never
// uses.
func shapeOptions(opts *pebble.Options) *pebble.Options {
	d := &pebble.Options{
		FS:            vfs.NewMem(),
		LBaseMaxBytes: opts.LBaseMaxBytes,
		MemTableSize:  opts.MemTableSize,
	}
	d.Experimental.LevelMultiplier = opts.Experimental.LevelMultiplier
	return d.EnsureDefaults()
}
