package compaction

import (
	"fmt"
	"iter"
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// Compaction describes one compaction chosen by a Picker: which tables to
// merge and the level the result goes to.
type Compaction struct {
	// StartLevel is the level the compaction was picked for; OutputLevel is
	// where its output goes: the base level for L0 (or L0 itself for one
	// that merges L0 tables within L0, see Picker.Pick), else StartLevel+1
	// (StartLevel+2 in a multi-level compaction, see Middle), or L6 itself
	// for L6.
	StartLevel, OutputLevel int
	// Inputs[0] are the tables taken from StartLevel, Inputs[1] those of
	// OutputLevel that overlap them (empty when OutputLevel == StartLevel).
	// Both are in their level's order.
	Inputs [2][]*FileMetadata
	// Middle are, in a multi-level compaction, the tables of StartLevel+1
	// that overlap Inputs[0]: they merge with Inputs[0] and Inputs[1]
	// straight into OutputLevel, StartLevel+2, rather than being written
	// into StartLevel+1 first (see "Multi-level compactions" in the package
	// documentation). Empty in every other compaction.
	Middle []*FileMetadata
	// Smallest and Largest are the user keys bounding all inputs.
	Smallest, Largest []byte
	// Grandparents are the tables of the level below OutputLevel (for an
	// L0 output, the base level) that overlap [Smallest, Largest]. Pass them to RunConfig.Grandparents so
	// Run cuts outputs before any of them overlaps too much of that level.
	Grandparents []*FileMetadata
	// MaxGrandparentOverlap is how many bytes of Grandparents one output
	// table may overlap (Options.MaxGrandparentOverlap of the Picker's
	// options). Pass it to RunConfig.MaxGrandparentOverlap; TrivialMove
	// applies it to the single input too.
	MaxGrandparentOverlap int64
	// Score is the score of StartLevel when the compaction was picked (see
	// Picker.Scores); 0 for manual compactions.
	Score float64
	// Manual is true for the compactions of a manual walk (PickManual,
	// Manual.Next). They always rewrite their inputs.
	Manual bool
}

// InputBytes returns the total size of the input tables.
func (c *Compaction) InputBytes() uint64 {
	return totalSize(c.Inputs[0]) + totalSize(c.Middle) + totalSize(c.Inputs[1])
}

// Tables yields every input table with its level: Inputs[0] at
// StartLevel, Middle at StartLevel+1, Inputs[1] at OutputLevel. The
// compaction's edit deletes each from its level.
func (c *Compaction) Tables() iter.Seq2[int, *FileMetadata] {
	return func(yield func(int, *FileMetadata) bool) {
		for _, in := range []struct {
			level int
			files []*FileMetadata
		}{{c.StartLevel, c.Inputs[0]}, {c.StartLevel + 1, c.Middle}, {c.OutputLevel, c.Inputs[1]}} {
			for _, f := range in.files {
				if !yield(in.level, f) {
					return
				}
			}
		}
	}
}

// TrivialMove reports whether the compaction is to be done by moving its
// single input table to OutputLevel unchanged, without rewriting it: it is
// not manual, nothing in OutputLevel overlaps the table and the table does
// not overlap too much of the level below. A move keeps every entry,
// tombstones and shadowed versions included, which is why manual
// compactions, made to drop them, never move.
func (c *Compaction) TrivialMove() bool {
	return !c.Manual && c.StartLevel != c.OutputLevel && len(c.Inputs[0]) == 1 && len(c.Middle) == 0 && len(c.Inputs[1]) == 0 &&
		int64(totalSize(c.Grandparents)) <= c.MaxGrandparentOverlap
}

// Conflicts reports whether c may not run concurrently with any compaction
// in inProgress: they share an input table, both start at L0 (L0
// compactions run one at a time), or both write into the same level over
// overlapping key ranges.
func (c *Compaction) Conflicts(cmp Compare, inProgress []*Compaction) bool {
	for _, ip := range inProgress {
		if c.StartLevel == 0 && ip.StartLevel == 0 {
			return true
		}
		if c.OutputLevel == ip.OutputLevel &&
			cmp(c.Smallest, ip.Largest) <= 0 && cmp(ip.Smallest, c.Largest) <= 0 {
			return true
		}
		if sharesFile(c, ip) {
			return true
		}
	}
	return false
}

// ElideTombstone returns a function that reports whether no level below
// OutputLevel in v holds a table covering userKey. For such a key a
// tombstone written by the compaction hides nothing outside its own input,
// so Run may drop it once no snapshot needs it (RunConfig.ElideTombstone).
// v is the version the compaction was picked from or a later one: only the
// levels below OutputLevel are read, and no other compaction writes into
// the compaction's key range there while it runs.
func (c *Compaction) ElideTombstone(v *Version, cmp Compare) func(userKey []byte) bool {
	below := c.below(v, cmp)
	return func(userKey []byte) bool { return !below(userKey, userKey) }
}

// ElideRangeTombstone is ElideTombstone for range tombstones: the function
// reports whether no level below OutputLevel in v holds a table meeting
// [start, end) (RunConfig.ElideRangeTombstone).
func (c *Compaction) ElideRangeTombstone(v *Version, cmp Compare) func(start, end []byte) bool {
	below := c.below(v, cmp)
	return func(start, end []byte) bool { return !below(start, end) }
}

// ZeroSeqNums reports whether Run may zero the sequence numbers of the
// versions that every snapshot sees (RunConfig.ZeroSeqNums): the output
// is below L0, and no level below it in v holds a table meeting
// [Smallest, Largest]. No older version of an input key then remains
// outside the input, and the versions and tombstones above the output
// that meet the range are newer than every input version, as the levels'
// order requires. v is as for ElideTombstone.
func (c *Compaction) ZeroSeqNums(v *Version, cmp Compare) bool {
	return c.OutputLevel > 0 && !c.below(v, cmp)(c.Smallest, c.Largest)
}

// below returns a function reporting whether a level below OutputLevel in
// v holds a table meeting [start, end] (end inclusive: for a range
// tombstone's exclusive end that errs toward keeping it).
func (c *Compaction) below(v *Version, cmp Compare) func(start, end []byte) bool {
	var levels [][]*manifest.FileMetadata
	for level := c.OutputLevel + 1; level < manifest.NumLevels; level++ {
		if files := overlapsSorted(v.Levels[level], cmp, c.Smallest, c.Largest); len(files) > 0 {
			levels = append(levels, files)
		}
	}
	return func(start, end []byte) bool {
		for _, files := range levels {
			if len(overlapsSorted(files, cmp, start, end)) > 0 {
				return true
			}
		}
		return false
	}
}

// String formats the compaction for logs and tests:
// "L1->L2 [000004] + [000007 000008] range [a, k]", with the middle
// level's tables after a second "+" in a multi-level compaction.
func (c *Compaction) String() string {
	middle := ""
	if len(c.Middle) > 0 {
		middle = " + " + formatFiles(c.Middle)
	}
	return fmt.Sprintf("L%d->L%d %s%s + %s range [%s, %s]", c.StartLevel, c.OutputLevel,
		formatFiles(c.Inputs[0]), middle, formatFiles(c.Inputs[1]), c.Smallest, c.Largest)
}

func formatFiles(files []*manifest.FileMetadata) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.FileNum.String()
	}
	return "[" + strings.Join(names, " ") + "]"
}

func sharesFile(a, b *Compaction) bool {
	for _, f := range a.Tables() {
		for _, g := range b.Tables() {
			if f == g {
				return true
			}
		}
	}
	return false
}

func totalSize(files []*manifest.FileMetadata) uint64 {
	var n uint64
	for _, f := range files {
		n += f.Size
	}
	return n
}

// keyRange returns the user keys bounding files; nil, nil for none.
func keyRange(cmp base.Compare, files ...[]*manifest.FileMetadata) (smallest, largest []byte) {
	for _, fs := range files {
		for _, f := range fs {
			if smallest == nil || cmp(f.Smallest.UserKey, smallest) < 0 {
				smallest = f.Smallest.UserKey
			}
			if largest == nil || cmp(f.Largest.UserKey, largest) > 0 {
				largest = f.Largest.UserKey
			}
		}
	}
	return smallest, largest
}

// overlapsSorted returns the tables of a sorted, non-overlapping level
// (L1..L6) holding any user key in [start, end] (nil bounds are unbounded),
// as a subslice of files.
func overlapsSorted(files []*manifest.FileMetadata, cmp base.Compare, start, end []byte) []*manifest.FileMetadata {
	lo, hi := manifest.OverlapRange(files, cmp, start, end)
	return files[lo:hi:hi]
}

// overlapsL0 returns the L0 tables overlapping [start, end] and, repeatedly,
// those overlapping the range grown to cover them, until the range stops
// growing: no L0 table outside the result shares a user key with it. L0
// tables overlap one another, so a narrower choice could leave an older
// version of a key above a newer one.
func overlapsL0(v *manifest.Version, cmp base.Compare, start, end []byte) []*manifest.FileMetadata {
	files := v.Overlaps(0, cmp, start, end)
	for {
		s, l := keyRange(cmp, files)
		grew := false
		if start != nil && s != nil && cmp(s, start) < 0 {
			start, grew = s, true
		}
		if end != nil && l != nil && cmp(l, end) > 0 {
			end, grew = l, true
		}
		if !grew {
			return files
		}
		files = v.Overlaps(0, cmp, start, end)
	}
}
