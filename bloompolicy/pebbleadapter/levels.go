package pebbleadapter

import (
	"fmt"
	"math"

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
// for the target shape of a Pebble tree holding b.Keys keys: L0 as
// L0CompactionThreshold runs of a memtable's worth of keys (MemTableSize
// bytes), and below it the levels Pebble v1.1.5 sizes from the bottom up,
// L6 holding all but 1/LevelMultiplier of the data and each level above a
// LevelMultiplier-th of the one below, up to the base level, the first
// whose target is at most LBaseMaxBytes. Levels above the base hold
// nothing and get the base level's policy. Zero options mean Pebble's
// defaults. Other fields of opts.Levels are kept; missing entries are
// added.
//
// Remember that Pebble's DB.Get skips L6 filters (see [LevelBudget]'s
// NoL6Filter). The policies all share the name of bloomkv's Bloom
// encoding, so a reopened store with other budgets reads every table's
// filter.
func SetLevelFilters(opts *pebble.Options, b LevelBudget) error {
	if b.Keys <= 0 || math.IsNaN(b.BytesPerKey) || b.BytesPerKey <= 0 || math.IsInf(b.BytesPerKey, 0) {
		return fmt.Errorf("pebbleadapter: LevelBudget needs a positive key count (%d) and bytes per key (%v)", b.Keys, b.BytesPerKey)
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

// levelRuns returns the runs of each level of the target shape (see
// SetLevelFilters), index = level; levels without data have Count 0, as
// does L6 with NoL6Filter.
func levelRuns(opts *pebble.Options, b LevelBudget) [numLevels]bloompolicy.Runs {
	d := shapeOptions(opts)
	l0Runs, lbase, memtable := d.L0CompactionThreshold, d.LBaseMaxBytes, d.MemTableSize
	mult := float64(d.Experimental.LevelMultiplier)

	var runs [numLevels]bloompolicy.Runs
	keysPerByte := 1 / b.BytesPerKey
	runs[0] = bloompolicy.Runs{Count: l0Runs, Keys: max(1, int64(float64(memtable)*keysPerByte))}
	size := float64(b.Keys) * b.BytesPerKey * (1 - 1/mult)
	for level := numLevels - 1; level >= 1; level-- {
		runs[level] = bloompolicy.Runs{Count: 1, Keys: max(1, int64(size*keysPerByte))}
		if size <= float64(lbase) {
			break // the base level
		}
		size /= mult
	}
	if b.NoL6Filter {
		runs[numLevels-1].Count = 0
	}
	return runs
}

// shapeOptions returns the options the target shape depends on
// (L0CompactionThreshold, LBaseMaxBytes, LevelMultiplier, MemTableSize),
// with Pebble's own defaults where opts leaves them zero. Pebble applies
// them (pebble.Options.EnsureDefaults) to a fresh Options holding only
// those fields: on the caller's it would change the Levels entries and
// EventListener in place, and a nil FS would be wrapped with a
// disk-health goroutine, so the copy carries an in-memory FS it never
// uses.
func shapeOptions(opts *pebble.Options) *pebble.Options {
	d := &pebble.Options{
		FS:                    vfs.NewMem(),
		L0CompactionThreshold: opts.L0CompactionThreshold,
		LBaseMaxBytes:         opts.LBaseMaxBytes,
		MemTableSize:          opts.MemTableSize,
	}
	d.Experimental.LevelMultiplier = opts.Experimental.LevelMultiplier
	return d.EnsureDefaults()
}
