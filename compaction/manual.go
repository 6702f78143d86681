package compaction

import "github.com/bloomkv/bloomkv/internal/base"

// Manual walks a manual compaction of a key range down the tree, one
// compaction at a time: the plan of DB.Compact. Each level from L0 down to
// the bottom (the deepest level holding keys of the range when the walk
// starts) is pushed into the next, through PickManual until none of its
// tables in the range holds a key written before the walk began; then, if
// no compaction wrote into the bottom (nothing lay above it in the range),
// the bottom's tables in the range are rewritten in place. Afterwards the
// range's keys sit in one level, without the versions no snapshot needs
// and without tombstones where nothing older remains below. A range only
// L0 holds is pushed into the base level (see Picker.Shape).
//
// Tables holding only later writes (flushed, or ingested, while the walk
// runs) are left where they are: writes that never stop would otherwise
// keep the walk at L0 for good.
//
// Manual compactions are never trivial moves (Compaction.TrivialMove): each
// rewrites its inputs, so that what no reader can see is dropped on the
// way down.
type Manual struct {
	p          *Picker
	start, end []byte
	bottom     int  // deepest level holding keys of the range; 0 when only L0 does
	level      int  // the level being pushed into the next
	pushed     bool // a compaction has written into bottom
	done       bool
	// last is the largest sequence number in the tree when the walk
	// starts: a table whose smallest is above it holds only later writes.
	last base.SeqNum
}

// NewManual plans a manual compaction of the tables of v overlapping
// [start, end] (nil bounds are unbounded). The Picker's options size its
// steps.
func (p *Picker) NewManual(v *Version, start, end []byte) *Manual {
	m := &Manual{p: p, start: start, end: end}
	for level, files := range v.Levels {
		if level > 0 && len(v.Overlaps(level, p.cmp.Compare, start, end)) > 0 {
			m.bottom = level
		}
		for _, f := range files {
			m.last = max(m.last, f.LargestSeqNum)
		}
	}
	return m
}

// Next returns the next compaction of the walk, picked from v, or nil when
// the walk is done. v must be the current version, with every compaction
// Next returned before installed, and no other compaction may run in the
// meantime.
func (m *Manual) Next(v *Version) *Compaction {
	if m.done {
		return nil
	}
	for ; m.level < max(m.bottom, 1); m.level++ {
		if !m.holdsEarlier(v, m.level) {
			continue
		}
		if c := m.p.PickManual(v, m.level, m.start, m.end); c != nil {
			m.pushed = m.pushed || c.OutputLevel == m.bottom
			return c
		}
	}
	m.done = true
	if m.bottom == 0 || m.pushed {
		return nil
	}
	return m.p.pickRewrite(v, m.bottom, m.start, m.end)
}

// holdsEarlier reports whether a table of level in the walk's range holds
// a key written before the walk started.
func (m *Manual) holdsEarlier(v *Version, level int) bool {
	for _, f := range v.Overlaps(level, m.p.cmp.Compare, m.start, m.end) {
		if f.SmallestSeqNum <= m.last {
			return true
		}
	}
	return false
}
