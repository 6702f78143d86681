package compaction

import (
	"math"

	"github.com/bloomkv/bloomkv/internal/manifest"
)

// Shape is how the picker sizes the levels of one version: where L0
// compacts to and what each level below may hold.
type Shape struct {
	// BaseLevel is the level L0 compacts into: L1 under
	// Options.StaticLevels; otherwise the shallowest level that holds
	// data, raised while the levels down to the bottom would grow by more
	// than LevelMultiplier each (L6 for a store holding nothing below L0).
	BaseLevel int
	// MaxBytes is the target size of each level. L0's is 0 (its target is
	// a read amplification); levels above BaseLevel, which stay empty, have
	// math.MaxInt64, so they are never due. Under dynamic sizes, the
	// level above the bottom may have a target below its share, to bound
	// the space that overwritten data takes (Options.MaxSpaceAmp).
	MaxBytes [NumLevels]int64
}

// Shape returns the level targets of v. inProgress are the compactions
// running on v: an L0 compaction's output level counts as holding data,
// so the base level does not move below it while it runs.
func (p *Picker) Shape(v *Version, inProgress []*Compaction) Shape {
	var s Shape
	if p.opts.StaticLevels {
		s.BaseLevel = 1
		for level := 1; level < manifest.NumLevels; level++ {
			s.MaxBytes[level] = p.opts.LevelMaxBytes(level)
		}
		return s
	}
	return p.dynamicShape(v, inProgress)
}

// dynamicShape sizes the levels from the bottom up, as Pebble does. The
// bottom level's target is the store's size less a LevelMultiplier-th
// (what the levels above it hold when each is LevelMultiplier times
// smaller than the next); the base level is the deepest one whose share,
// dividing by LevelMultiplier per level up, stays within LBaseMaxBytes;
// and the targets between them grow from LBaseMaxBytes at the base by one
// smoothed ratio per level, so that they end at the bottom's size. Then
// boundSpaceAmp may lower the target of the level above the bottom.
func (p *Picker) dynamicShape(v *Version, inProgress []*Compaction) Shape {
	var s Shape
	for level := range s.MaxBytes {
		s.MaxBytes[level] = math.MaxInt64
	}
	s.MaxBytes[0] = 0
	first := -1 // shallowest level below L0 holding data
	var sizes [manifest.NumLevels]uint64
	var size uint64 // of L1..L6
	for level := 1; level < manifest.NumLevels; level++ {
		if sizes[level] = totalSize(v.Levels[level]); sizes[level] > 0 {
			if first < 0 {
				first = level
			}
			size += sizes[level]
		}
	}
	for _, c := range inProgress {
		// A merge within L0 writes nothing below it.
		if c.StartLevel == 0 && c.OutputLevel > 0 && (first < 0 || c.OutputLevel < first) {
			first = c.OutputLevel
		}
	}
	if size == 0 {
		s.BaseLevel = manifest.NumLevels - 1
		if first > 0 {
			s.BaseLevel = first
		}
		return s
	}
	mult := float64(p.opts.LevelMultiplier)
	withL0 := size + totalSize(v.Levels[0])
	bottom := float64(withL0 - withL0/uint64(p.opts.LevelMultiplier))
	cur := bottom
	for level := manifest.NumLevels - 2; level >= first; level-- {
		cur /= mult
	}
	lbase := float64(p.opts.LBaseMaxBytes)
	s.BaseLevel = first
	for s.BaseLevel > 1 && cur > lbase {
		s.BaseLevel--
		cur /= mult
	}
	ratio := 1.0
	if s.BaseLevel < manifest.NumLevels-1 {
		ratio = math.Pow(bottom/lbase, 1/float64(manifest.NumLevels-1-s.BaseLevel))
	}
	target := lbase
	for level := s.BaseLevel; level < manifest.NumLevels; level++ {
		if level > s.BaseLevel {
			target *= ratio
		}
		if t := math.Round(target); t < math.MaxInt64 {
			s.MaxBytes[level] = max(int64(t), 1)
		}
	}
	p.boundSpaceAmp(&s, &sizes, size)
	return s
}

// boundSpaceAmp lowers the target of the level above the bottom (L5),
// given the sizes of L1..L6 and their total, so that the bytes L1..L5 are
// estimated to free when compacted into L6 stay within MaxSpaceAmp-1
// times the live data, counting the levels from the base level to L5, a
// share OverwriteRatio of each, as replacing data in L6 (see "Space
// amplification" in the package documentation). The target does not go
// below TargetFileSize. Nothing changes while the ratio is 0, under a
// negative MaxSpaceAmp, or when L6 is the base level.
func (p *Picker) boundSpaceAmp(s *Shape, sizes *[manifest.NumLevels]uint64, total uint64) {
	ratio := p.OverwriteRatio()
	last := manifest.NumLevels - 1
	if ratio == 0 || p.opts.MaxSpaceAmp < 0 || s.BaseLevel >= last {
		return
	}
	var above float64 // bytes from the base level to L4
	for level := s.BaseLevel; level < last-1; level++ {
		above += float64(sizes[level])
	}
	upper := above + float64(sizes[last-1])
	live := float64(total) - ratio*upper
	allowed := (p.opts.MaxSpaceAmp-1)*live - ratio*above // what L5 may free
	limit := max(allowed/ratio, float64(p.opts.TargetFileSize))
	if limit < float64(s.MaxBytes[last-1]) {
		s.MaxBytes[last-1] = int64(limit)
	}
}

// L0ReadAmp returns the read amplification of v's L0 leaving out the
// tables in inProgress: the most tables not being compacted that hold any
// one user key, the number a lookup may consult in L0 at worst (Pebble's
// L0 sublevel count).
func (p *Picker) L0ReadAmp(v *Version, inProgress []*Compaction) int {
	return l0ReadAmp(v, p.cmp.Compare, busyTables(inProgress))
}

// Debt estimates the bytes that compactions must still read and write to
// bring every level of v within its target (Pebble's estimate): all of L0
// merged into the base level, then each level's excess over its target
// merged into the next, the next level's tables rewritten in proportion.
func (p *Picker) Debt(v *Version, inProgress []*Compaction) uint64 {
	s := p.Shape(v, inProgress)
	added := totalSize(v.Levels[0])
	var debt uint64
	if base := totalSize(v.Levels[s.BaseLevel]); added > 0 && base > 0 {
		debt += added + base
	}
	for level := s.BaseLevel; level < manifest.NumLevels-1; level++ {
		size := totalSize(v.Levels[level]) + added
		if size <= uint64(s.MaxBytes[level]) {
			added = 0
			continue
		}
		added = size - uint64(s.MaxBytes[level])
		if next := totalSize(v.Levels[level+1]); next > 0 {
			debt += uint64(float64(added) * (float64(next)/float64(size) + 1))
		}
	}
	return debt
}

// WantsAnother reports whether a store running the compactions inProgress
// on v should start one more, Pebble v1.1.5's rule: always when none runs;
// otherwise only while L0's read amplification (L0ReadAmp) reaches
// len(inProgress) × L0CompactionConcurrency or the debt (Debt) reaches
// len(inProgress) × CompactionDebtConcurrency. The store caps the count
// with its own limit (kv's MaxConcurrentCompactions).
func (p *Picker) WantsAnother(v *Version, inProgress []*Compaction) bool {
	n := len(inProgress)
	if n == 0 {
		return true
	}
	return p.L0ReadAmp(v, inProgress) >= n*p.opts.L0CompactionConcurrency ||
		p.Debt(v, inProgress) >= uint64(n)*uint64(p.opts.CompactionDebtConcurrency)
}

// FlushSplit returns where a flush into L0 of v cuts its tables (set them
// as RunConfig.SplitBoundaries and RunConfig.SplitBytes): along the tables
// of the base level, once a table holds Options.FlushSplitBytes. Flushed
// tables then line up with the base level, and each L0 compaction can
// take the slice of L0 above a few base-level tables instead of all of
// it. No boundaries when the split is off.
func (p *Picker) FlushSplit(v *Version) (boundaries []*FileMetadata, splitBytes int64) {
	if p.opts.FlushSplitBytes < 0 {
		return nil, 0
	}
	return v.Levels[p.Shape(v, nil).BaseLevel], p.opts.FlushSplitBytes
}

// busyTables returns the input tables of inProgress.
func busyTables(inProgress []*Compaction) map[*manifest.FileMetadata]bool {
	busy := make(map[*manifest.FileMetadata]bool)
	for _, c := range inProgress {
		for _, f := range c.Tables() {
			busy[f] = true
		}
	}
	return busy
}
