package compaction

import (
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// Where Run cuts its output tables. Three rules, each between two user
// keys:
//
//   - Size, along the grandparents. With grandparents (the level below
//     the output), a table is cut before the first key that reaches the
//     start of a grandparent once it holds half the target size, a little
//     more for each grandparent start it has already reached (5% of the
//     target each, up to 90%), as Pebble and RocksDB cut: the output's
//     tables then begin where tables of the level below begin, so that
//     compacting one of them later rewrites whole grandparents rather than
//     one more at each end, and a table that overlaps nothing below stays
//     possible (a trivial move). A table is cut anyway at twice the target
//     size, or at the target once the keys have passed the start of the
//     last grandparent. Without grandparents (a flush, or output to the
//     bottom level), a table is cut at the target size.
//
//	grandparents   [a----d] [e-------j] [k---n] [o----------z]
//	output keys     a b c d  e f g h i j  k l m  o p q ...
//	cut (target 4)           ^ before e, 4 keys ≥ half the target
//
//   - Grandparent overlap: a table is cut once the grandparents it has
//     passed hold more than RunConfig.MaxGrandparentOverlap bytes.
//   - Split boundaries (flushes): a table holding RunConfig.SplitBytes is
//     cut before the first key past the end of a boundary table.

// Grandparent-aligned cuts, as fractions of the target size in percent:
// the least size at a grandparent start, the rise per grandparent start
// already reached in the table, and the most the rise goes to.
const (
	alignedCutMinPercent  = 50
	alignedCutStepPercent = 5
	alignedCutMaxSteps    = 8
)

// grandparentLimiter follows the keys written through the grandparent
// tables: it tells when the table being written has come to overlap more
// than limit bytes of them, so that compacting it later into the level
// below would rewrite too much, counting a grandparent once the keys have
// passed its end; and it tells when a key reaches the start of a
// grandparent, where a table may be cut to line up with them.
type grandparentLimiter struct {
	cmp     base.Compare
	files   []*manifest.FileMetadata
	limit   int64 // 0: no limit
	next    int   // first grandparent whose end the keys have not passed
	overlap int64 // bytes of grandparents passed by the open table
	start   int   // first grandparent whose start the keys have not reached
	starts  int   // grandparent starts reached by the open table's keys, userKey's included
}

// advance moves past the grandparents userKey has passed or reached, given
// whether a table is open, and reports whether userKey reached the start
// of one: it is then the first key at or after that start.
func (g *grandparentLimiter) advance(userKey []byte, tableOpen bool) (reachedStart bool) {
	for g.next < len(g.files) && g.cmp(userKey, g.files[g.next].Largest.UserKey) > 0 {
		if tableOpen {
			g.overlap += int64(g.files[g.next].Size)
		}
		g.next++
	}
	for g.start < len(g.files) && g.cmp(userKey, g.files[g.start].Smallest.UserKey) >= 0 {
		g.start++
		reachedStart = true
	}
	if reachedStart && tableOpen {
		g.starts++
	}
	return reachedStart
}

// overLimit reports whether the open table overlaps more grandparent
// bytes than the limit.
func (g *grandparentLimiter) overLimit() bool { return g.limit > 0 && g.overlap > g.limit }

// reset starts counting for a new table.
func (g *grandparentLimiter) reset() { g.overlap, g.starts = 0, 0 }

// alignedCut reports whether a table of size bytes, whose next key reached
// the start of a grandparent, should be cut before that key for a target
// of target bytes (see "Size, along the grandparents").
func (g *grandparentLimiter) alignedCut(size, target uint64) bool {
	steps := uint64(min(max(g.starts-1, 0), alignedCutMaxSteps))
	return size*100 >= (alignedCutMinPercent+alignedCutStepPercent*steps)*target
}

// sizeCut reports whether a table of size bytes should be cut after the key
// just written, for a target of target bytes: at the target when no
// grandparent start lies ahead (none at all, or all reached), at twice the
// target otherwise, where a grandparent start should come first.
func (g *grandparentLimiter) sizeCut(size, target uint64) bool {
	if g.start < len(g.files) {
		return size >= 2*target
	}
	return size >= target
}

// boundarySplitter tells when the table being written, once it holds
// bytes, has reached the end of one of files: it is then cut there.
type boundarySplitter struct {
	cmp   base.Compare
	files []*manifest.FileMetadata
	bytes int64 // 0: no cuts
	next  int   // first table of files whose end the keys have not passed
}

// cutBefore reports whether the open table w (nil: none) should end before
// userKey.
func (s *boundarySplitter) cutBefore(userKey []byte, w *sstable.Writer) bool {
	passed := false
	for s.next < len(s.files) && s.cmp(userKey, s.files[s.next].Largest.UserKey) > 0 {
		s.next++
		passed = true
	}
	return passed && w != nil && s.bytes > 0 && w.EstimatedSize() >= uint64(s.bytes)
}
