package compaction

import (
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// l0Point is a user key where an L0 table starts, with the number of L0
// tables holding it: L0's depth there.
type l0Point struct {
	key   []byte
	depth int
}

// l0Depths sweeps the bounds of v's L0 tables not in busy in key order and
// returns the depth at each table's smallest key. L0's depth only rises
// where a table starts, so the deepest point of L0 is among them.
//
// A table holds the user keys from its smallest to its largest, both
// included, unless its largest key is a range deletion's exclusive end
// (see manifest.FileMetadata.EndsBefore): a table of tombstones up to k
// and a table from k on are side by side, not one over the other, as a
// read and pickColumn see them. Counted one over the other, they made a
// depth of 2 that no compaction could reduce: a settling store merged the
// column under k, one table, within L0, again and again.
func l0Depths(v *manifest.Version, cmp base.Compare, busy map[*manifest.FileMetadata]bool) []l0Point {
	// The order of the edges at one user key: exclusive ends (the key is
	// not in the table), then starts, then inclusive ends.
	const (
		endBefore = iota
		start
		endAt
	)
	type edge struct {
		key  []byte
		kind int
	}
	var edges []edge
	for _, f := range v.Levels[0] {
		if !busy[f] {
			end := edge{f.Largest.UserKey, endAt}
			if f.Largest.IsExclusiveSentinel() {
				end.kind = endBefore
			}
			edges = append(edges, edge{f.Smallest.UserKey, start}, end)
		}
	}
	sort.Slice(edges, func(i, j int) bool {
		if c := cmp(edges[i].key, edges[j].key); c != 0 {
			return c < 0
		}
		return edges[i].kind < edges[j].kind
	})
	points := make([]l0Point, 0, len(edges)/2)
	depth := 0
	for _, e := range edges {
		if e.kind != start {
			depth--
			continue
		}
		depth++
		points = append(points, l0Point{e.key, depth})
	}
	return points
}

// l0Stats is what a pick counts of L0 once, leaving out the tables
// being compacted: its free tables, the depth at each one's smallest key
// (l0Depths) and the deepest, its read amplification.
type l0Stats struct {
	free    int
	readAmp int
	points  []l0Point
}

// newL0Stats counts v's L0, leaving out busy.
func newL0Stats(v *manifest.Version, cmp base.Compare, busy map[*manifest.FileMetadata]bool) l0Stats {
	s := l0Stats{points: l0Depths(v, cmp, busy)}
	for _, f := range v.Levels[0] {
		if !busy[f] {
			s.free++
		}
	}
	for _, p := range s.points {
		s.readAmp = max(s.readAmp, p.depth)
	}
	return s
}

// l0ReadAmp returns L0's read amplification in v, leaving out busy: the
// most L0 tables holding one user key, the deepest of l0Depths.
func l0ReadAmp(v *manifest.Version, cmp base.Compare, busy map[*manifest.FileMetadata]bool) int {
	return newL0Stats(v, cmp, busy).readAmp
}

// l0Score is L0's compaction score: its read amplification over
// L0CompactionThreshold, or its table count over
// L0CompactionFileThreshold when that is higher, as in Pebble: a store
// whose flushes are split narrow piles up many tables of low read
// amplification, and compacting them late would make one huge backlog.
func (p *Picker) l0Score(l0 l0Stats) float64 {
	amp, count := p.l0ScoreTerms(l0)
	return max(amp, count)
}

// l0ScoreTerms returns the two terms of l0Score: by read amplification,
// by table count.
func (p *Picker) l0ScoreTerms(l0 l0Stats) (amp, count float64) {
	return float64(l0.readAmp) / float64(p.opts.L0CompactionThreshold),
		float64(l0.free) / float64(p.opts.L0CompactionFileThreshold)
}

// PickSettle returns the compaction of L0 a store whose writes have
// stopped (every acknowledged write is in a table) should run, or nil when
// it should run what [Picker.Pick] returns instead. L0 settles once its
// read amplification has reached half L0CompactionThreshold, where Pebble
// v1.1.5 compacts it (its score, 2 × read amplification /
// L0CompactionThreshold, at 1 or more), and at least 2, as long as no
// level is due; and, when L0 is due itself, when it is the level Pick
// would try first. nil when a deeper level goes first, when L0 is settled
// or when it is blocked by inProgress. (Under a threshold of 1 or 2
// Pebble also compacts an L0 of read amplification 1; settled is one
// table under each key, so PickSettle leaves it.) [Picker.PickOrSettle]
// asks both in one pass.
//
// The compaction takes the L0 tables Pick would, and goes into the base
// level or, as Pick's, within L0 when that writes fewer bytes (see
// cheaperInL0): either way the store then settles, as Pebble's does, with
// at most one L0 table under each key. See "Settling L0" and "Merging
// within L0" in the package documentation.
func (p *Picker) PickSettle(v *Version, inProgress []*Compaction) *Compaction {
	s := p.newPass(v, inProgress)
	if top := s.topDue(); top > 0 || (top < 0 && !p.settleDue(s)) {
		return nil
	}
	return p.pickL0(s)
}

// settleDue reports whether a store whose writes have stopped should
// compact L0 now though no level is due (see PickSettle): when L0's read
// amplification, leaving out the tables being compacted, reaches half
// L0CompactionThreshold and 2.
func (p *Picker) settleDue(s *pickPass) bool {
	amp := s.l0.readAmp
	return amp >= 2 && 2*amp >= p.opts.L0CompactionThreshold
}

// pickL0 returns the L0 compaction of pass s (pickColumn), scored, as a
// merge within L0 when that is cheaper (cheaperInL0); nil when none.
func (p *Picker) pickL0(s *pickPass) *Compaction {
	c := p.cheaperInL0(s.v, p.pickColumn(s), s.l0)
	if c != nil {
		c.Score = s.scores[0]
	}
	return c
}

// cheaperInL0 returns c, an L0 compaction into the base level (nil: none),
// as a merge within L0 when that writes fewer bytes (settleInL0) and
// reduces what makes L0 due (by l0, its statistics): its read
// amplification, 2 or more, scoring at least as high as its table count.
// A merge within L0 leaves as many tables side by side as it found, so an
// L0 due by its table count goes into the base level. See "Merging
// within L0" in the package documentation.
func (p *Picker) cheaperInL0(v *manifest.Version, c *Compaction, l0 l0Stats) *Compaction {
	if c == nil {
		return nil
	}
	if amp, count := p.l0ScoreTerms(l0); l0.readAmp < 2 || amp < count {
		return c
	}
	if in := p.settleInL0(v, c); in != nil {
		return in
	}
	return c
}

// settleInL0 returns c, an L0 compaction into the base level, as one
// that merges the same L0 tables into new L0 tables instead, when that
// writes fewer bytes: when they hold fewer bytes than the base-level
// tables under them, which c would rewrite too. The outputs do not
// overlap one another and line up with the base level's tables (their
// grandparents), so L0 keeps one table under each key of the range at a
// fraction of the cost; the data goes down with a later L0 compaction,
// as part of a base-level rewrite that happens anyway. nil when c writes
// less, or when an L0 table left out overlaps the inputs' key range and
// has sequence numbers among theirs: the outputs could not be ordered
// with it (see l0SeqDisjoint). See "Merging within L0" in the package
// documentation.
//
// A single L0 table is never merged within L0: its outputs would stand
// where it stood, one over no other, and L0 would be as deep as before.
// It goes into the base level, so each such compaction leaves L0 smaller
// whatever the statistics that picked it said.
func (p *Picker) settleInL0(v *manifest.Version, c *Compaction) *Compaction {
	cmp := p.cmp.Compare
	if len(c.Inputs[0]) < 2 || totalSize(c.Inputs[0]) >= totalSize(c.Inputs[1]) || !l0SeqDisjoint(v, cmp, c.Inputs[0]) {
		return nil
	}
	in := &Compaction{StartLevel: 0, OutputLevel: 0, Grandparents: c.Inputs[1],
		MaxGrandparentOverlap: c.MaxGrandparentOverlap}
	in.Inputs[0] = c.Inputs[0]
	in.Smallest, in.Largest = keyRange(cmp, in.Inputs[0])
	return in
}

// l0SeqDisjoint reports whether every L0 table of v outside inputs that
// overlaps their key range holds only sequence numbers above or only
// below all of theirs. L0 is read newest table first, by largest sequence
// number: tables written by merging inputs within L0, spanning their
// sequence numbers, then sort correctly against each such table, but not
// against one whose sequence numbers interleave with theirs.
func l0SeqDisjoint(v *manifest.Version, cmp base.Compare, inputs []*manifest.FileMetadata) bool {
	taken := make(map[*manifest.FileMetadata]bool, len(inputs))
	lo, hi := base.SeqNumMax, base.SeqNum(0)
	for _, f := range inputs {
		taken[f] = true
		lo, hi = min(lo, f.SmallestSeqNum), max(hi, f.LargestSeqNum)
	}
	s, l := keyRange(cmp, inputs)
	for _, f := range v.Levels[0] {
		if !taken[f] && f.Overlaps(cmp, s, l) && f.LargestSeqNum >= lo && f.SmallestSeqNum <= hi {
			return false
		}
	}
	return true
}

// pickColumn compacts a column of L0 into the base level of pass s:
// every free L0 table holding the user key where L0 is deepest, with the
// older L0 tables they overlap (l0Closure). Of points equally deep, the
// one whose oldest table is oldest goes first. A point whose column is
// blocked gives way to the next point outside it. The column's key range
// then grows to the boundaries of the base-level tables under it, and
// the L0 tables inside that range join when they pull in no more of the
// base level (see expandInputs), so one L0 compaction takes the part of
// L0 above a few base-level tables, not all of L0 with all of the base
// level.
func (p *Picker) pickColumn(s *pickPass) *Compaction {
	v, baseLevel, busy, inProgress := s.v, s.shape.BaseLevel, s.busy, s.inProgress
	cmp := p.cmp.Compare
	points := s.l0.points
	oldest := make([]int, len(points)) // index in L0 of the oldest free table at the point
	for i, pt := range points {
		for j, f := range v.Levels[0] {
			if !busy[f] && f.Overlaps(cmp, pt.key, pt.key) {
				oldest[i] = j
				break
			}
		}
	}
	order := make([]int, len(points))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := order[a], order[b]
		if points[pa].depth != points[pb].depth {
			return points[pa].depth > points[pb].depth
		}
		return oldest[pa] < oldest[pb]
	})
	var tried [][2][]byte // key ranges of the columns tried
	for _, i := range order {
		key := points[i].key
		if inRanges(cmp, tried, key) {
			continue
		}
		var column []*manifest.FileMetadata
		for _, f := range v.Levels[0] {
			if !busy[f] && f.Overlaps(cmp, key, key) {
				column = append(column, f)
			}
		}
		inputs := l0Closure(v, cmp, column)
		s, l := keyRange(cmp, inputs)
		tried = append(tried, [2][]byte{s, l})
		if c := p.build(v, 0, baseLevel, inputs, busy, true); c != nil && !c.Conflicts(cmp, inProgress) {
			return c
		}
	}
	return nil
}

func inRanges(cmp base.Compare, ranges [][2][]byte, key []byte) bool {
	for _, r := range ranges {
		if cmp(r[0], key) <= 0 && cmp(key, r[1]) <= 0 {
			return true
		}
	}
	return false
}

// l0Closure returns the L0 tables of v in seeds and, repeatedly, every L0
// table that overlaps one of them and may hold older versions (a smaller
// SmallestSeqNum than its LargestSeqNum), in L0's order. Compacting them
// down leaves no older version of any of their keys above a newer one;
// newer overlapping tables may stay, since they stay above.
func l0Closure(v *manifest.Version, cmp base.Compare, seeds []*manifest.FileMetadata) []*manifest.FileMetadata {
	taken := make(map[*manifest.FileMetadata]bool, len(seeds))
	for _, f := range seeds {
		taken[f] = true
	}
	for grew := true; grew; {
		grew = false
		files := v.Levels[0]
		for i := len(files) - 1; i >= 0; i-- { // newest first, so one pass mostly suffices
			if f := files[i]; !taken[f] && olderOverlapTaken(cmp, f, files, taken) {
				taken[f], grew = true, true
			}
		}
	}
	out := make([]*manifest.FileMetadata, 0, len(taken))
	for _, f := range v.Levels[0] {
		if taken[f] {
			out = append(out, f)
		}
	}
	return out
}

// olderOverlapTaken reports whether f overlaps a table in taken holding
// versions newer than some of f's.
func olderOverlapTaken(cmp base.Compare, f *manifest.FileMetadata, files []*manifest.FileMetadata, taken map[*manifest.FileMetadata]bool) bool {
	for _, t := range files {
		if taken[t] && f.SmallestSeqNum < t.LargestSeqNum && f.Overlaps(cmp, t.Smallest.UserKey, t.Largest.UserKey) {
			return true
		}
	}
	return false
}

// leavesOlderL0 reports whether an L0 compaction of inputs would leave
// behind an L0 table that overlaps one of them and holds versions older
// than it: moved below that table, the input's newer versions would be
// shadowed by it. l0Closure never does; build checks it anyway, so that no
// compaction the picker returns can reorder versions.
func leavesOlderL0(v *manifest.Version, cmp base.Compare, inputs []*manifest.FileMetadata) bool {
	taken := make(map[*manifest.FileMetadata]bool, len(inputs))
	for _, f := range inputs {
		taken[f] = true
	}
	for _, f := range v.Levels[0] {
		if !taken[f] && olderOverlapTaken(cmp, f, inputs, taken) {
			return true
		}
	}
	return false
}

// expandL0 returns the L0 inputs grown by every free L0 table lying within
// [s, l], with their closure (l0Closure).
func expandL0(v *manifest.Version, cmp base.Compare, inputs []*manifest.FileMetadata, s, l []byte,
	busy map[*manifest.FileMetadata]bool) []*manifest.FileMetadata {
	seeds := append([]*manifest.FileMetadata(nil), inputs...)
	in := make(map[*manifest.FileMetadata]bool, len(inputs))
	for _, f := range inputs {
		in[f] = true
	}
	for _, f := range v.Levels[0] {
		if !in[f] && !busy[f] && cmp(s, f.Smallest.UserKey) <= 0 && cmp(f.Largest.UserKey, l) <= 0 {
			seeds = append(seeds, f)
		}
	}
	return l0Closure(v, cmp, seeds)
}
