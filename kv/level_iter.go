package kv

import (
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// levelIter iterates over the tables of one sorted, non-overlapping level
// (or a single L0 table) as one stream, opening each table only when the
// iteration reaches it and closing it when it moves on.
type levelIter struct {
	d            *DB
	cmp          base.Compare
	files        []*manifest.FileMetadata
	lower, upper []byte

	index int                   // the table iter reads; -1 or len(files) when off either end
	iter  base.InternalIterator // nil when no table is open
	err   error
}

func newLevelIter(d *DB, files []*manifest.FileMetadata, lower, upper []byte) *levelIter {
	return &levelIter{d: d, cmp: d.cmp.Compare, files: files, lower: lower, upper: upper, index: -1}
}

// open makes table index the current one; false when index is off either
// end, outside the bounds, or the table cannot be opened.
func (l *levelIter) open(index int) bool {
	if l.iter != nil && l.index == index {
		return true
	}
	l.closeTable()
	l.index = index
	if index < 0 || index >= len(l.files) {
		return false
	}
	f := l.files[index]
	if !overlapsBounds(l.cmp, f.Smallest.UserKey, f.Largest.UserKey, l.lower, l.upper) {
		return false
	}
	it, err := l.d.tableCache.newIter(f, l.lower, l.upper)
	if err != nil {
		l.err = err
		return false
	}
	l.iter = it
	return true
}

func (l *levelIter) closeTable() {
	if l.iter != nil {
		if err := l.iter.Close(); err != nil && l.err == nil {
			l.err = err
		}
		l.iter = nil
	}
}

// SeekGE implements base.InternalIterator.
func (l *levelIter) SeekGE(key []byte) bool {
	l.err = nil
	i := sort.Search(len(l.files), func(i int) bool {
		return l.cmp(l.files[i].Largest.UserKey, key) >= 0
	})
	if !l.open(i) {
		return false
	}
	return l.forward(l.iter.SeekGE(key))
}

// SeekLT implements base.InternalIterator.
func (l *levelIter) SeekLT(key []byte) bool {
	l.err = nil
	i := sort.Search(len(l.files), func(i int) bool {
		return l.cmp(l.files[i].Smallest.UserKey, key) >= 0
	}) - 1
	if !l.open(i) {
		return false
	}
	return l.backward(l.iter.SeekLT(key))
}

// First implements base.InternalIterator.
func (l *levelIter) First() bool {
	if l.lower != nil {
		return l.SeekGE(l.lower)
	}
	l.err = nil
	if !l.open(0) {
		return false
	}
	return l.forward(l.iter.First())
}

// Last implements base.InternalIterator.
func (l *levelIter) Last() bool {
	if l.upper != nil {
		return l.SeekLT(l.upper)
	}
	l.err = nil
	if !l.open(len(l.files) - 1) {
		return false
	}
	return l.backward(l.iter.Last())
}

// Next implements base.InternalIterator.
func (l *levelIter) Next() bool {
	if !l.Valid() {
		return false
	}
	return l.forward(l.iter.Next())
}

// Prev implements base.InternalIterator.
func (l *levelIter) Prev() bool {
	if !l.Valid() {
		return false
	}
	return l.backward(l.iter.Prev())
}

// forward moves on to the first entry of the following tables while the
// current one is exhausted.
func (l *levelIter) forward(ok bool) bool {
	for !ok {
		if l.iter == nil || l.iter.Error() != nil {
			return l.fail()
		}
		if !l.open(l.index + 1) {
			return l.fail()
		}
		ok = l.iter.First()
	}
	return true
}

// backward moves on to the last entry of the preceding tables while the
// current one is exhausted.
func (l *levelIter) backward(ok bool) bool {
	for !ok {
		if l.iter == nil || l.iter.Error() != nil {
			return l.fail()
		}
		if !l.open(l.index - 1) {
			return l.fail()
		}
		ok = l.iter.Last()
	}
	return true
}

// fail records the current table's error, if any, and closes it.
func (l *levelIter) fail() bool {
	if l.iter != nil && l.err == nil {
		l.err = l.iter.Error()
	}
	l.closeTable()
	return false
}

// Valid implements base.InternalIterator.
func (l *levelIter) Valid() bool { return l.iter != nil && l.err == nil && l.iter.Valid() }

// Key implements base.InternalIterator.
func (l *levelIter) Key() base.InternalKey { return l.iter.Key() }

// Value implements base.InternalIterator.
func (l *levelIter) Value() []byte { return l.iter.Value() }

// Error implements base.InternalIterator.
func (l *levelIter) Error() error { return l.err }

// Close implements base.InternalIterator.
func (l *levelIter) Close() error {
	l.closeTable()
	return l.err
}
