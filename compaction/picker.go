package compaction

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// Picker chooses compactions under the leveled scheme described in the
// package documentation. Every decision is made from the Version it is
// given and one estimate the store keeps it informed of, the overwrite
// ratio ([Picker.RecordBottomCompaction]). A Picker is safe for
// concurrent use.
type Picker struct {
	opts       Options
	cmp        *base.Comparer
	overwrites overwriteEstimate
}

// overwriteWindow is the number of recent compactions into the bottom
// level that the overwrite ratio covers.
const overwriteWindow = 16

// overwriteEstimate sums the entries moved into the bottom level and
// freed there over the last overwriteWindow compactions.
type overwriteEstimate struct {
	mu           sync.Mutex
	moved, freed [overwriteWindow]int64
	next         int
	ratio        atomic.Uint64 // math.Float64bits of the current ratio
}

// RecordBottomCompaction tells the picker what a compaction into the
// bottom level (L6) found: moved entries came down from the levels above,
// and the merge dropped freed entries (versions replaced by newer ones,
// and tombstones elided with what they deleted). From the last 16 such
// compactions the picker estimates what share of the data above the
// bottom only replaces data in it (OverwriteRatio), to bound the space
// that takes (Options.MaxSpaceAmp). A store reports each such compaction
// as it finishes; a picker told nothing estimates 0 and sizes the levels
// by size alone.
func (p *Picker) RecordBottomCompaction(moved, freed int64) {
	if moved <= 0 {
		return
	}
	e := &p.overwrites
	e.mu.Lock()
	defer e.mu.Unlock()
	e.moved[e.next], e.freed[e.next] = moved, max(freed, 0)
	e.next = (e.next + 1) % overwriteWindow
	var m, f int64
	for i := range e.moved {
		m += e.moved[i]
		f += e.freed[i]
	}
	e.ratio.Store(math.Float64bits(min(float64(f)/float64(m), 1)))
}

// OverwriteRatio returns the estimated share, between 0 and 1, of the
// entries above the bottom level that will free an entry when compacted
// into it (see RecordBottomCompaction): about 1 under a workload that
// overwrites the same keys, 0 while a store only grows.
func (p *Picker) OverwriteRatio() float64 {
	return math.Float64frombits(p.overwrites.ratio.Load())
}

// NewPicker returns a Picker. A nil opts means the defaults; a nil cmp
// means sstable.DefaultComparer.
func NewPicker(opts *Options, cmp *Comparer) *Picker {
	if cmp == nil {
		cmp = base.DefaultComparer
	}
	return &Picker{opts: opts.withDefaults(), cmp: cmp}
}

// Scores returns the compaction score of each level of v: for L0 its read
// amplification ([Picker.L0ReadAmp]) over L0CompactionThreshold, or its
// table count over L0CompactionFileThreshold when higher; for deeper levels their size over
// their target size (see [Picker.Shape]). A level scoring 1 or more is
// over its target. L6's score is reported but never acted on, since L6 has
// nowhere to compact to. Pick weighs the scores against one another (see
// the package documentation).
func (p *Picker) Scores(v *Version) [NumLevels]float64 {
	return p.newPass(v, nil).scores
}

// Priorities returns the priority of each level of v, the weighed score
// Pick goes by (see the package documentation): a level of L0..L5 with
// priority 1 or more is due. As Pebble's LevelMetrics.Score, which is its
// score ratio.
func (p *Picker) Priorities(v *Version) [NumLevels]float64 {
	return p.newPass(v, nil).prio
}

// pickPass is what one pick computes of a Version once, for Pick,
// PickSettle and PickOrSettle alike: the tables that the compactions in
// progress are already moving out of their level (busy), the shape, L0's
// statistics, and each level's score and priority.
type pickPass struct {
	v          *manifest.Version
	inProgress []*Compaction
	busy       map[*manifest.FileMetadata]bool
	shape      Shape
	l0         l0Stats
	scores     [manifest.NumLevels]float64
	prio       [manifest.NumLevels]float64
}

// newPass computes the pass over v with inProgress running.
func (p *Picker) newPass(v *manifest.Version, inProgress []*Compaction) *pickPass {
	s := &pickPass{v: v, inProgress: inProgress, busy: busyTables(inProgress), shape: p.Shape(v, inProgress)}
	s.l0 = newL0Stats(v, p.cmp.Compare, s.busy)
	s.scores = p.scores(v, s.shape, s.busy, s.l0)
	s.prio = priorities(s.scores, s.shape.BaseLevel)
	return s
}

// scores computes the scores of v under shape leaving out the tables in
// busy, L0's from l0 (which leaves them out too).
func (p *Picker) scores(v *manifest.Version, shape Shape, busy map[*manifest.FileMetadata]bool, l0 l0Stats) [manifest.NumLevels]float64 {
	var s [manifest.NumLevels]float64
	s[0] = p.l0Score(l0)
	for level := 1; level < manifest.NumLevels; level++ {
		var size uint64
		for _, f := range v.Levels[level] {
			if !busy[f] {
				size += f.Size
			}
		}
		s[level] = float64(size) / float64(shape.MaxBytes[level])
	}
	return s
}

// minNextScore bounds from below the score a level's score is divided by
// in priorities, so that an empty next level does not make it absurd.
const minNextScore = 0.01

// priorities weighs the scores as Pebble does: a level's score over 1 is
// divided by the score of the level it compacts into (L0's by the base
// level's), so a level whose next level is further over its target waits
// for that one, and data moves down the tree before more piles onto it.
func priorities(scores [manifest.NumLevels]float64, baseLevel int) [manifest.NumLevels]float64 {
	prio := scores
	prev := 0
	for level := baseLevel; level < manifest.NumLevels; level++ {
		if prio[prev] >= 1 {
			prio[prev] /= max(scores[level], minNextScore)
		}
		prev = level
	}
	return prio
}

// Pick returns the most pressing compaction of v that does not conflict
// with any of inProgress (see Compaction.Conflicts), or nil when no level is
// due or every due level is blocked. L0 and the levels from the base level
// to L5 whose priority (see the package documentation) is 1 or more are
// tried highest priority first, the shallower level first on a tie; L0
// compacts into the base level, or within L0 when that writes fewer bytes
// (see "Merging within L0" in the package documentation), the others into
// the level below.
func (p *Picker) Pick(v *Version, inProgress []*Compaction) *Compaction {
	return p.pickDue(p.newPass(v, inProgress))
}

// PickOrSettle returns what a store whose writes have stopped runs next:
// [Picker.PickSettle]'s compaction of v if any, else [Picker.Pick]'s,
// computing the shape, the scores and L0's statistics once for both.
func (p *Picker) PickOrSettle(v *Version, inProgress []*Compaction) *Compaction {
	s := p.newPass(v, inProgress)
	if s.topDue() < 0 {
		// Nothing due: Pick has nothing, PickSettle settles L0 or nothing.
		if !p.settleDue(s) {
			return nil
		}
		return p.pickL0(s)
	}
	// PickSettle's L0 compaction, when L0 is the top due level, is the
	// one Pick tries first.
	return p.pickDue(s)
}

// pickDue is Pick over pass s.
func (p *Picker) pickDue(s *pickPass) *Compaction {
	levels := make([]int, 0, manifest.NumLevels-1)
	for level := 0; level < manifest.NumLevels-1; level++ {
		if s.prio[level] >= 1 {
			levels = append(levels, level)
		}
	}
	sort.SliceStable(levels, func(i, j int) bool { return s.prio[levels[i]] > s.prio[levels[j]] })
	for _, level := range levels {
		var c *Compaction
		if level == 0 {
			c = p.pickL0(s) // scored
		} else if c = p.pickLevel(s.v, level, s.busy, s.inProgress); c != nil {
			c.Score = s.scores[level]
		}
		if c != nil {
			return c
		}
	}
	return nil
}

// topDue returns the due level (priority 1 or more) of s of the highest
// priority, the shallower on a tie, as Pick tries them; -1 when none is
// due.
func (s *pickPass) topDue() int {
	top := -1
	for level := 0; level < manifest.NumLevels-1; level++ {
		if s.prio[level] >= 1 && (top < 0 || s.prio[level] > s.prio[top]) {
			top = level
		}
	}
	return top
}

// pickLevel compacts one table of level (1 ≤ level < L6) into level+1: the
// free table that overlaps the fewest bytes of level+1 for its own size,
// since it costs the least rewriting per byte moved down.
func (p *Picker) pickLevel(v *manifest.Version, level int, busy map[*manifest.FileMetadata]bool, inProgress []*Compaction) *Compaction {
	cmp := p.cmp.Compare
	files := v.Levels[level]
	type candidate struct {
		index int
		ratio float64
	}
	var cands []candidate
	for i, f := range files {
		if busy[f] {
			continue
		}
		next := overlapsSorted(v.Levels[level+1], cmp, f.Smallest.UserKey, f.Largest.UserKey)
		cands = append(cands, candidate{i, float64(totalSize(next)) / float64(max(f.Size, 1))})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].ratio < cands[j].ratio })
	for _, cand := range cands {
		c := p.build(v, level, level+1, p.boundedInputs(files, cand.index, cand.index+1), busy, true)
		if c != nil && !c.Conflicts(cmp, inProgress) {
			return p.multiLevel(v, c, busy, inProgress)
		}
	}
	return nil
}

// multiLevel returns c carried one level further down when that writes
// less per byte moved down, Pebble v1.1.5's rule (its WriteAmpHeuristic):
// c's output tables become the middle level of a compaction into the level
// below, which takes the tables there overlapping the inputs. A two-level
// compaction writes (upper + middle) / upper bytes per upper byte; the
// multi-level one (upper + middle + lower) / (upper + middle) per byte it
// moves down, and saves writing the middle level's bytes once now and
// again later. Otherwise c itself; also when c moves a table, outputs to
// L6, already reads more than the expansion limit, or the level below
// holds nothing under it (then c's outputs can later move down unchanged:
// carrying them further now saves nothing), or when the bigger compaction
// would take a busy table or conflict with one running.
func (p *Picker) multiLevel(v *manifest.Version, c *Compaction, busy map[*manifest.FileMetadata]bool, inProgress []*Compaction) *Compaction {
	if c.StartLevel == 0 || c.OutputLevel+1 >= manifest.NumLevels || len(c.Inputs[1]) == 0 ||
		c.InputBytes() > p.expandLimit() {
		return c
	}
	cmp := p.cmp.Compare
	ml := &Compaction{StartLevel: c.StartLevel, OutputLevel: c.OutputLevel + 1, Middle: c.Inputs[1],
		MaxGrandparentOverlap: c.MaxGrandparentOverlap}
	ml.Inputs[0] = c.Inputs[0]
	ml.Inputs[1] = overlapsSorted(v.Levels[ml.OutputLevel], cmp, c.Smallest, c.Largest)
	for _, f := range ml.Inputs[1] {
		if busy[f] {
			return c
		}
	}
	upper, middle := float64(totalSize(c.Inputs[0])), float64(totalSize(c.Inputs[1]))
	lower := float64(totalSize(ml.Inputs[1]))
	if lower == 0 || (upper+middle+lower)/(upper+middle) > (upper+middle)/upper {
		return c
	}
	ml.Smallest, ml.Largest = keyRange(cmp, ml.Inputs[0], ml.Middle, ml.Inputs[1])
	if ml.OutputLevel+1 < manifest.NumLevels {
		ml.Grandparents = overlapsSorted(v.Levels[ml.OutputLevel+1], cmp, ml.Smallest, ml.Largest)
	}
	if ml.Conflicts(cmp, inProgress) {
		return c
	}
	return ml
}

// PickManual returns a compaction of the tables of level overlapping
// [start, end] (nil bounds are unbounded) into level+1 (from L0: into the
// base level, see [Picker.Shape]), or for L6 a rewrite
// of them in place (see [Manual]); nil when level holds no such table or is
// out of range. It is one step of a [Manual] walk, which serves DB.Compact.
// It does not look at compactions in progress: the caller keeps them from
// running meanwhile, or checks Compaction.Conflicts.
//
// From L0 it takes every overlapping table, and every L0 table overlapping
// those, transitively.
// From L1..L5 it takes overlapping tables in key order up to
// ExpandedCompactionFactor × TargetFileSize bytes (at least one table);
// calling PickManual again after each compaction is installed walks the
// rest of the range.
func (p *Picker) PickManual(v *Version, level int, start, end []byte) *Compaction {
	switch {
	case level < 0 || level >= manifest.NumLevels:
		return nil
	case level == manifest.NumLevels-1:
		return p.pickRewrite(v, level, start, end)
	}
	cmp := p.cmp.Compare
	var inputs []*manifest.FileMetadata
	output := level + 1
	if level == 0 {
		inputs = overlapsL0(v, cmp, start, end)
		output = p.Shape(v, nil).BaseLevel
	} else {
		files := v.Levels[level]
		lo, hi := manifest.OverlapRange(files, cmp, start, end)
		limit := p.expandLimit()
		for n, size := lo, uint64(0); n < hi; n++ {
			if size += files[n].Size; size >= limit {
				hi = n + 1
				break
			}
		}
		inputs = p.boundedInputs(files, lo, hi)
	}
	return p.buildManual(v, level, output, inputs)
}

// pickRewrite returns a compaction of all the tables of level (L1..L6)
// overlapping [start, end] into new tables of the same level, or nil when
// there are none. It is one compaction, since its output replaces its
// inputs in the same level: a second pick would take the output again.
func (p *Picker) pickRewrite(v *manifest.Version, level int, start, end []byte) *Compaction {
	files := v.Levels[level]
	lo, hi := manifest.OverlapRange(files, p.cmp.Compare, start, end)
	return p.buildManual(v, level, level, p.boundedInputs(files, lo, hi))
}

// boundedInputs returns files[lo:hi] of a sorted level, widened so that
// no user key's versions are split between this compaction and the next.
func (p *Picker) boundedInputs(files []*manifest.FileMetadata, lo, hi int) []*manifest.FileMetadata {
	if lo < hi {
		lo, hi = expandBoundaries(files, p.cmp.Compare, lo, hi)
	}
	return files[lo:hi:hi]
}

// buildManual completes a manual compaction of inputs (tables of start)
// into output; nil when there are no inputs.
func (p *Picker) buildManual(v *manifest.Version, start, output int, inputs []*manifest.FileMetadata) *Compaction {
	if len(inputs) == 0 {
		return nil
	}
	c := p.build(v, start, output, inputs, nil, false)
	if c != nil {
		c.Manual = true
	}
	return c
}

// expandLimit is the size, in bytes, up to which the inputs of a compaction
// may grow beyond the first choice.
func (p *Picker) expandLimit() uint64 {
	return uint64(p.opts.ExpandedCompactionFactor) * uint64(p.opts.TargetFileSize)
}

// build completes a compaction of inputs (tables of start) into output: it
// adds the overlapping tables of output, grows the start inputs when that
// costs no further output tables (only when expand is set), and finds the
// grandparents. It returns nil when any table it needs is in busy, or when
// L0 inputs would leave an older overlapping L0 table behind (see
// leavesOlderL0).
func (p *Picker) build(v *manifest.Version, start, output int, inputs []*manifest.FileMetadata,
	busy map[*manifest.FileMetadata]bool, expand bool) *Compaction {
	cmp := p.cmp.Compare
	c := &Compaction{StartLevel: start, OutputLevel: output}
	c.Inputs[0] = inputs
	if output != start {
		s, l := keyRange(cmp, inputs)
		c.Inputs[1] = overlapsSorted(v.Levels[output], cmp, s, l)
		if expand && len(c.Inputs[1]) > 0 {
			p.expandInputs(v, c, busy)
		}
	}
	for _, files := range c.Inputs {
		for _, f := range files {
			if busy[f] {
				return nil
			}
		}
	}
	if start == 0 && leavesOlderL0(v, cmp, c.Inputs[0]) {
		return nil
	}
	c.Smallest, c.Largest = keyRange(cmp, c.Inputs[0], c.Inputs[1])
	if output+1 < manifest.NumLevels {
		c.Grandparents = overlapsSorted(v.Levels[output+1], cmp, c.Smallest, c.Largest)
	}
	c.MaxGrandparentOverlap = p.opts.MaxGrandparentOverlap()
	return c
}

// expandInputs takes in every table of the start level that lies within the
// key range the compaction already covers, when doing so pulls in no more
// tables of the output level and keeps the inputs under the expansion
// limit: those tables get merged for almost nothing now, and would
// otherwise cost a rewrite of the same output tables later.
func (p *Picker) expandInputs(v *manifest.Version, c *Compaction, busy map[*manifest.FileMetadata]bool) {
	cmp := p.cmp.Compare
	s, l := keyRange(cmp, c.Inputs[0], c.Inputs[1])
	var grown []*manifest.FileMetadata
	if c.StartLevel == 0 {
		grown = expandL0(v, cmp, c.Inputs[0], s, l, busy)
	} else {
		files := v.Levels[c.StartLevel]
		lo, hi := manifest.OverlapRange(files, cmp, s, l)
		lo, hi = expandBoundaries(files, cmp, lo, hi)
		grown = files[lo:hi:hi]
	}
	if len(grown) <= len(c.Inputs[0]) || totalSize(grown)+totalSize(c.Inputs[1]) >= p.expandLimit() {
		return
	}
	for _, f := range grown {
		if busy[f] {
			return
		}
	}
	gs, gl := keyRange(cmp, grown)
	if len(overlapsSorted(v.Levels[c.OutputLevel], cmp, gs, gl)) != len(c.Inputs[1]) {
		return
	}
	c.Inputs[0] = grown
}

// expandBoundaries widens files[lo:hi] of a sorted level while a neighbour
// shares a boundary user key with it, so no user key's versions are split
// between tables that are compacted and tables that are not. (A level that
// passes Version.CheckOrdering has no such neighbours; the picker does not
// rely on it.)
func expandBoundaries(files []*manifest.FileMetadata, cmp base.Compare, lo, hi int) (int, int) {
	for lo > 0 && !files[lo-1].EndsBefore(cmp, files[lo].Smallest.UserKey) {
		lo--
	}
	for hi < len(files) && !files[hi-1].EndsBefore(cmp, files[hi].Smallest.UserKey) {
		hi++
	}
	return lo, hi
}
