package compaction

import (
	"math"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// Options tune the leveled compaction scheme. The zero value of each field
// means its default; a nil *Options means all defaults.
type Options struct {
	// L0CompactionThreshold is the L0 read amplification (the most L0
	// tables holding one user key, [Picker.L0ReadAmp]) that triggers a
	// compaction of L0 into the base level, as Pebble's option of that
	// name is documented. (Pebble v1.1.5 scores L0 at 2 × sublevels /
	// threshold, so its L0 compactions start at half the threshold: more
	// of them, each smaller, and fewer L0 tables left once a store
	// settles; [Picker.PickSettle] applies that trigger to a store whose
	// writes have stopped.) 0 means [DefaultL0CompactionThreshold].
	L0CompactionThreshold int
	// L0CompactionFileThreshold is the number of L0 tables that triggers
	// an L0 compaction whatever L0's read amplification, so that narrow
	// flushes do not pile up without bound (Pebble's option of that
	// name). 0 means [DefaultL0CompactionFileThreshold].
	L0CompactionFileThreshold int
	// LBaseMaxBytes is the target size of the base level in bytes (L1
	// under StaticLevels). 0 means
	// [DefaultLBaseMaxBytes].
	LBaseMaxBytes int64
	// LevelMultiplier is the ratio between the target sizes of adjacent
	// levels below the base level: L(n+1) may hold about LevelMultiplier
	// times as much as Ln (exactly, under StaticLevels).
	// 0 means [DefaultLevelMultiplier].
	LevelMultiplier int
	// TargetFileSize is the size at which compaction output tables are cut.
	// 0 means [DefaultTargetFileSize].
	TargetFileSize int64
	// ExpandedCompactionFactor bounds how far the picker grows the input
	// set of a compaction beyond its first choice: an expansion is taken
	// only while the inputs stay under ExpandedCompactionFactor ×
	// TargetFileSize bytes. 0 means [DefaultExpandedCompactionFactor].
	ExpandedCompactionFactor int
	// GrandparentOverlapFactor bounds how many bytes of the level below the
	// output level one output table may overlap: Run cuts a table once the
	// overlap exceeds GrandparentOverlapFactor × TargetFileSize, so that a
	// later compaction of that table stays small. 0 means
	// [DefaultGrandparentOverlapFactor].
	GrandparentOverlapFactor int
	// FlushSplitBytes is the size past which a flush cuts its L0 table at
	// the next boundary between two tables of the base level (see
	// [Picker.FlushSplit]), so that an L0 compaction can take a narrow
	// slice of L0 with the base-level tables under it. 0 means 2 ×
	// TargetFileSize, as in Pebble; a negative value turns the split off.
	FlushSplitBytes int64
	// StaticLevels sizes the levels from the top down, as LevelDB does:
	// L1 is always the base level, LBaseMaxBytes its target, and each
	// deeper level's target LevelMultiplier times the one above. When
	// false (the default) the targets are derived from the bottom level
	// up, as Pebble and RocksDB's level_compaction_dynamic_level_bytes
	// do: see "Level sizes" in the package documentation.
	StaticLevels bool
	// L0CompactionConcurrency and CompactionDebtConcurrency say when a
	// store may run more than one compaction at once (see
	// [Picker.WantsAnother]): one more for each multiple of
	// L0CompactionConcurrency in L0's read amplification, or of
	// CompactionDebtConcurrency in the estimated compaction debt
	// ([Picker.Debt]). 0 means [DefaultL0CompactionConcurrency] and
	// [DefaultCompactionDebtConcurrency].
	L0CompactionConcurrency   int
	CompactionDebtConcurrency int64
	// MaxSpaceAmp bounds the space amplification of the levels below L0
	// under overwrites: the bytes of L1..L6 over the live data they hold,
	// as estimated from the versions that recent compactions into the
	// bottom level dropped (see "Space amplification" in the package
	// documentation and [Picker.RecordBottomCompaction]). Only dynamic
	// level sizes apply it. 0 means [DefaultMaxSpaceAmp]; a negative
	// value turns the bound off, leaving the level above the bottom at
	// its target by size alone, as in Pebble.
	MaxSpaceAmp float64
}

// The defaults of Options, applied to its zero fields; kv's defaults for
// the same settings are these.
const (
	DefaultL0CompactionThreshold = 4
	// DefaultL0CompactionFileThreshold is Pebble v1.1.5's.
	DefaultL0CompactionFileThreshold = 500
	DefaultLBaseMaxBytes             = 64 << 20
	DefaultLevelMultiplier           = 10
	DefaultTargetFileSize            = 2 << 20
	DefaultExpandedCompactionFactor  = 25
	DefaultGrandparentOverlapFactor  = 10
	// DefaultL0CompactionConcurrency and DefaultCompactionDebtConcurrency
	// are Pebble v1.1.5's.
	DefaultL0CompactionConcurrency   = 10
	DefaultCompactionDebtConcurrency = 1 << 30
	DefaultMaxSpaceAmp               = 1.2
)

// withDefaults returns a copy of o with every zero field set to its default.
func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	base.SetDefault(&r.L0CompactionThreshold, DefaultL0CompactionThreshold)
	base.SetDefault(&r.L0CompactionFileThreshold, DefaultL0CompactionFileThreshold)
	base.SetDefault(&r.LBaseMaxBytes, DefaultLBaseMaxBytes)
	base.SetDefault(&r.LevelMultiplier, DefaultLevelMultiplier)
	base.SetDefault(&r.TargetFileSize, DefaultTargetFileSize)
	base.SetDefault(&r.ExpandedCompactionFactor, DefaultExpandedCompactionFactor)
	base.SetDefault(&r.GrandparentOverlapFactor, DefaultGrandparentOverlapFactor)
	if r.FlushSplitBytes == 0 {
		r.FlushSplitBytes = 2 * r.TargetFileSize
	}
	base.SetDefault(&r.L0CompactionConcurrency, DefaultL0CompactionConcurrency)
	base.SetDefault(&r.CompactionDebtConcurrency, DefaultCompactionDebtConcurrency)
	if r.MaxSpaceAmp == 0 {
		r.MaxSpaceAmp = DefaultMaxSpaceAmp
	}
	return r
}

// MaxGrandparentOverlap returns the number of bytes of grandparent tables one
// output table may overlap before Run cuts it (see RunConfig.Grandparents).
func (o *Options) MaxGrandparentOverlap() int64 {
	r := o.withDefaults()
	return int64(r.GrandparentOverlapFactor) * r.TargetFileSize
}

// LevelMaxBytes returns the static target size of level (1 ≤ level <
// [NumLevels]): LBaseMaxBytes for L1, multiplied by LevelMultiplier
// for each level below. These are the targets under StaticLevels; under
// dynamic sizes [Picker.Shape] gives the targets of one version. L0 is
// governed by its table count instead and returns 0.
func (o *Options) LevelMaxBytes(level int) int64 {
	if level <= 0 || level >= manifest.NumLevels {
		return 0
	}
	r := o.withDefaults()
	n := r.LBaseMaxBytes
	for l := 1; l < level; l++ {
		if n > math.MaxInt64/int64(r.LevelMultiplier) {
			return math.MaxInt64
		}
		n *= int64(r.LevelMultiplier)
	}
	return n
}
