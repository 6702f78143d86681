package manifest

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
)

// NumLevels is the number of levels of the LSM tree: L0, where flushes land
// and tables may overlap, and L1..L6, each sorted and non-overlapping.
const NumLevels = 7

// FileMetadata describes one table of the store. Everything but the
// reference count is immutable once the table is installed in a Version.
type FileMetadata struct {
	FileNum base.FileNum
	// Size is the table's length in bytes.
	Size uint64
	// Smallest and Largest are the table's first and last internal keys,
	// range tombstones included. A Largest that is a range-deletion
	// sentinel (base.InternalKey.IsExclusiveSentinel) excludes its user
	// key: the table's last tombstone ends there, exclusive.
	Smallest, Largest base.InternalKey
	// SmallestSeqNum and LargestSeqNum bound the sequence numbers in the
	// table. Among L0 tables, a larger LargestSeqNum means newer data.
	SmallestSeqNum, LargestSeqNum base.SeqNum
	// NumEntries counts the table's entries (every version, tombstones
	// included).
	NumEntries uint64
	// FilterBytes is the size of the table's filter block, offsets and
	// trailer included; 0 when the table has no filter.
	FilterBytes uint64
	// GlobalSeqNum, when not 0, is the one sequence number of all the
	// table's keys, which the file stores as 0: a table written outside
	// the store and ingested (sstable.ReaderOptions.GlobalSeqNum). Then
	// SmallestSeqNum and LargestSeqNum both equal it.
	GlobalSeqNum base.SeqNum

	// refs counts the Versions that include the table. When it drops to
	// zero no reader can reach the table and its file may be deleted.
	refs atomic.Int32
}

// String formats the table as "000012:[a#5,SET-k#3,DEL]".
func (m *FileMetadata) String() string {
	return fmt.Sprintf("%s:[%s-%s]", m.FileNum, m.Smallest, m.Largest)
}

// Ref records one more Version holding the table.
func (m *FileMetadata) Ref() { m.refs.Add(1) }

// Unref drops one Version's hold and reports whether it was the last.
func (m *FileMetadata) Unref() bool {
	n := m.refs.Add(-1)
	if n < 0 {
		panic(fmt.Sprintf("manifest: table %s unreferenced too often", m.FileNum))
	}
	return n == 0
}

// Refs returns the number of Versions holding the table.
func (m *FileMetadata) Refs() int32 { return m.refs.Load() }

// Overlaps reports whether the table holds any user key in [start, end]
// (both inclusive; a nil bound is unbounded).
func (m *FileMetadata) Overlaps(cmp base.Compare, start, end []byte) bool {
	if end != nil && cmp(m.Smallest.UserKey, end) > 0 {
		return false
	}
	return start == nil || !m.EndsBefore(cmp, start)
}

// EndsBefore reports whether every user key of the table sorts before key:
// its largest user key does, or equals key and is an exclusive sentinel.
func (m *FileMetadata) EndsBefore(cmp base.Compare, key []byte) bool {
	c := cmp(m.Largest.UserKey, key)
	return c < 0 || c == 0 && m.Largest.IsExclusiveSentinel()
}

// Version is one immutable state of the store: the tables at each level.
//
// L0 tables may overlap one another and are ordered oldest first (by
// LargestSeqNum, then FileNum). The tables of L1..L6 are sorted by key and
// do not overlap, so at most one of them can hold a given user key.
//
// Readers and iterators hold a Version (Ref) for as long as they read its
// tables; the tables of a Version are not deleted until it is released.
type Version struct {
	Levels [NumLevels][]*FileMetadata

	refs atomic.Int32
}

// Ref records one more holder of the version.
func (v *Version) Ref() { v.refs.Add(1) }

// Unref drops one holder and reports whether it was the last. The caller that
// sees true releases the version's tables (see Release).
func (v *Version) Unref() bool {
	n := v.refs.Add(-1)
	if n < 0 {
		panic("manifest: version unreferenced too often")
	}
	return n == 0
}

// Refs returns the number of holders of the version.
func (v *Version) Refs() int32 { return v.refs.Load() }

// Release drops the version's hold on each of its tables and returns those
// no other version holds: their files may be deleted.
func (v *Version) Release() (obsolete []*FileMetadata) {
	for _, files := range v.Levels {
		for _, f := range files {
			if f.Unref() {
				obsolete = append(obsolete, f)
			}
		}
	}
	return obsolete
}

// Overlaps returns the tables of level that hold any user key in
// [start, end] (both inclusive; nil is unbounded), in the level's order.
// For L1..L6 the result is a subslice of v.Levels[level], which the caller
// must not modify.
func (v *Version) Overlaps(level int, cmp base.Compare, start, end []byte) []*FileMetadata {
	if level > 0 {
		files := v.Levels[level]
		lo, hi := OverlapRange(files, cmp, start, end)
		return files[lo:hi:hi]
	}
	var out []*FileMetadata
	for _, f := range v.Levels[0] {
		if f.Overlaps(cmp, start, end) {
			out = append(out, f)
		}
	}
	return out
}

// OverlapRange returns the bounds of the tables of files, sorted by key
// with no two sharing a user key (as L1..L6 are), that hold any user key in
// [start, end] (both inclusive; nil is unbounded): files[lo:hi] are those
// tables. It finds the first by binary search.
func OverlapRange(files []*FileMetadata, cmp base.Compare, start, end []byte) (lo, hi int) {
	if start != nil {
		lo = sort.Search(len(files), func(i int) bool { return !files[i].EndsBefore(cmp, start) })
	}
	hi = lo
	for hi < len(files) && (end == nil || cmp(files[hi].Smallest.UserKey, end) <= 0) {
		hi++
	}
	return lo, hi
}

// Describe formats the version for tests and tools: each non-empty level
// as an "L<n>:" line, then one line per table in the level's order, the
// table as FileMetadata.String prints it followed by a space and what
// detail returns for it. An empty version formats as "".
//
//	L0:
//	  000012:[a#5,SET-k#3,DEL] size=812
func (v *Version) Describe(detail func(*FileMetadata) string) string {
	var b strings.Builder
	for level, files := range v.Levels {
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&b, "L%d:\n", level)
		for _, f := range files {
			fmt.Fprintf(&b, "  %s %s\n", f, detail(f))
		}
	}
	return b.String()
}

// CheckOrdering verifies the invariants of the levels: L0 ordered by
// sequence number, and every deeper level sorted with no two tables sharing
// a user key (a table ending in an exclusive sentinel shares none with the
// next table starting at the sentinel's user key).
func (v *Version) CheckOrdering(cmp base.Compare) error {
	for i := 1; i < len(v.Levels[0]); i++ {
		a, b := v.Levels[0][i-1], v.Levels[0][i]
		if l0Compare(a, b) >= 0 {
			return fmt.Errorf("manifest: L0 tables %s and %s out of order", a, b)
		}
	}
	for level := 1; level < NumLevels; level++ {
		files := v.Levels[level]
		for i, f := range files {
			if base.InternalCompare(cmp, f.Smallest, f.Largest) > 0 {
				return fmt.Errorf("manifest: L%d table %s has smallest > largest", level, f)
			}
			if i > 0 && !files[i-1].EndsBefore(cmp, f.Smallest.UserKey) {
				return fmt.Errorf("manifest: L%d tables %s and %s overlap", level, files[i-1], f)
			}
		}
	}
	return nil
}

// l0Compare orders L0 tables oldest first: by LargestSeqNum, then FileNum.
func l0Compare(a, b *FileMetadata) int {
	return cmp.Or(cmp.Compare(a.LargestSeqNum, b.LargestSeqNum), cmp.Compare(a.FileNum, b.FileNum))
}
