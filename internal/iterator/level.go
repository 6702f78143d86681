package iterator

import (
	"bytes"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// TableOpener opens an iterator over the entries of one table whose user
// keys lie in [lower, upper) (a nil bound is unbounded). The caller of
// NewLevel supplies it, typically backed by a cache of open tables; the
// level iterator closes each iterator it gets when it moves off the table.
type TableOpener func(file *manifest.FileMetadata, lower, upper []byte) (base.InternalIterator, error)

// Level iterates over the tables of one sorted, non-overlapping level (or a
// single L0 table) as one stream, opening each table only when the
// iteration reaches it and closing it when it moves on. At most one table
// is open at a time.
//
// An error opening or reading a table makes the iterator invalid; Error
// reports it until the next absolute positioning call (First, Last, SeekGE,
// SeekLT, SeekPrefixGE), which starts afresh.
//
// After SeekPrefixGE the iterator is in prefix mode until the next absolute
// positioning call: it seeks each table it opens with base.SeekPrefixGE, so
// the table's filters may end its part, and it opens no table whose
// smallest key cannot bear the prefix.
type Level struct {
	cmp          base.Compare
	files        []*manifest.FileMetadata
	lower, upper []byte
	openTable    TableOpener
	prefix       []byte // prefix mode's prefix; nil outside prefix mode

	index int                   // the table iter reads; -1 or len(files) when off either end
	iter  base.InternalIterator // nil when no table is open
	// valid is whether the level is at an entry: iter is, and no error
	// stopped the level. Kept apart so Valid and Next need not ask iter.
	valid bool
	err   error
}

// NewLevel returns an iterator over the entries of files, which must be
// sorted by key and not overlap, restricted to the tables that meet
// [lower, upper). It opens tables through open as it reaches them. The
// bounds are passed on to open; NewLevel keeps them, so the caller must not
// modify them while the iterator is in use.
func NewLevel(cmp base.Compare, files []*manifest.FileMetadata, lower, upper []byte, open TableOpener) *Level {
	l := new(Level)
	l.Init(cmp, files, lower, upper, open)
	return l
}

// Init readies l as NewLevel's iterator, for a caller that keeps its
// iterators: l may be the zero Level or a closed one. It opens nothing.
func (l *Level) Init(cmp base.Compare, files []*manifest.FileMetadata, lower, upper []byte, open TableOpener) {
	*l = Level{cmp: cmp, files: files, lower: lower, upper: upper, openTable: open, index: -1}
}

// OverlapsBounds reports whether the user-key range [smallest, largest]
// meets [lower, upper) (a nil bound is unbounded).
func OverlapsBounds(cmp base.Compare, smallest, largest, lower, upper []byte) bool {
	return (lower == nil || cmp(largest, lower) >= 0) && (upper == nil || cmp(smallest, upper) < 0)
}

// open makes table index the current one; false when index is off either
// end, outside the bounds, or the table cannot be opened.
func (l *Level) open(index int) bool {
	if l.iter != nil && l.index == index {
		return true
	}
	l.closeTable()
	l.index = index
	if index < 0 || index >= len(l.files) {
		return false
	}
	f := l.files[index]
	if !OverlapsBounds(l.cmp, f.Smallest.UserKey, f.Largest.UserKey, l.lower, l.upper) {
		return false
	}
	it, err := l.openTable(f, l.lower, l.upper)
	if err != nil {
		l.err = err
		return false
	}
	l.iter = it
	return true
}

// closeTable closes the open table, if any, keeping the first error.
func (l *Level) closeTable() {
	if l.iter != nil {
		if err := l.iter.Close(); err != nil && l.err == nil {
			l.err = err
		}
		l.iter = nil
	}
}

// SeekGE implements base.InternalIterator.
func (l *Level) SeekGE(key []byte) bool {
	l.err, l.prefix, l.valid = nil, nil, false
	if !l.open(l.searchGE(key)) {
		return false
	}
	return l.forward(l.iter.SeekGE(key))
}

// searchGE returns the index of the first table whose largest key is >= key.
func (l *Level) searchGE(key []byte) int {
	return sort.Search(len(l.files), func(i int) bool {
		return l.cmp(l.files[i].Largest.UserKey, key) >= 0
	})
}

// SeekPrefixGE implements base.PrefixIterator. It seeks as SeekGE does,
// except that a table whose smallest key sorts after key without bearing
// prefix holds no key of it at or after key (a Split's prefix is a byte
// prefix of its key, and prefixes order as their keys), so it is skipped
// unopened; the table it opens it seeks with base.SeekPrefixGE.
func (l *Level) SeekPrefixGE(prefix, key []byte) bool {
	l.err, l.prefix, l.valid = nil, prefix, false
	i := l.searchGE(key)
	if !l.mayHoldPrefix(i, key) || !l.open(i) {
		l.closeTable()
		l.index = i
		return false
	}
	return l.forward(base.SeekPrefixGE(l.iter, prefix, key))
}

// mayHoldPrefix reports whether table i may hold keys of the prefix at or
// after key: false when its smallest key sorts after key but does not start
// with the prefix.
func (l *Level) mayHoldPrefix(i int, key []byte) bool {
	if i < 0 || i >= len(l.files) {
		return true // open reports the end
	}
	smallest := l.files[i].Smallest.UserKey
	return l.cmp(smallest, key) <= 0 || bytes.HasPrefix(smallest, l.prefix)
}

// SeekLT implements base.InternalIterator.
func (l *Level) SeekLT(key []byte) bool {
	l.err, l.prefix, l.valid = nil, nil, false
	i := sort.Search(len(l.files), func(i int) bool {
		return l.cmp(l.files[i].Smallest.UserKey, key) >= 0
	}) - 1
	if !l.open(i) {
		return false
	}
	return l.backward(l.iter.SeekLT(key))
}

// First implements base.InternalIterator.
func (l *Level) First() bool {
	if l.lower != nil {
		return l.SeekGE(l.lower)
	}
	l.err, l.prefix, l.valid = nil, nil, false
	if !l.open(0) {
		return false
	}
	return l.forward(l.iter.First())
}

// Last implements base.InternalIterator.
func (l *Level) Last() bool {
	if l.upper != nil {
		return l.SeekLT(l.upper)
	}
	l.err, l.prefix, l.valid = nil, nil, false
	if !l.open(len(l.files) - 1) {
		return false
	}
	return l.backward(l.iter.Last())
}

// Next implements base.InternalIterator.
func (l *Level) Next() bool {
	if !l.Valid() {
		return false
	}
	return l.forward(l.iter.Next())
}

// Prev implements base.InternalIterator.
func (l *Level) Prev() bool {
	if !l.Valid() {
		return false
	}
	return l.backward(l.iter.Prev())
}

// forward moves on to the first entry of the following tables while the
// current one is exhausted. In prefix mode it stops before a table whose
// smallest key does not start with the prefix, and seeks the tables it
// opens to the prefix, so that their filters are asked.
func (l *Level) forward(ok bool) bool {
	l.valid = false
	for !ok {
		if l.iter == nil || l.iter.Error() != nil {
			return l.fail()
		}
		next := l.index + 1
		if l.prefix != nil && next < len(l.files) && !bytes.HasPrefix(l.files[next].Smallest.UserKey, l.prefix) {
			return false // the prefix ends here; the table stays open for the next seek
		}
		if !l.open(next) {
			return l.fail()
		}
		if l.prefix != nil {
			ok = base.SeekPrefixGE(l.iter, l.prefix, l.prefix)
		} else {
			ok = l.iter.First()
		}
	}
	l.valid = true
	return true
}

// backward moves on to the last entry of the preceding tables while the
// current one is exhausted.
func (l *Level) backward(ok bool) bool {
	l.valid = false
	for !ok {
		if l.iter == nil || l.iter.Error() != nil {
			return l.fail()
		}
		if !l.open(l.index - 1) {
			return l.fail()
		}
		ok = l.iter.Last()
	}
	l.valid = true
	return true
}

// fail records the current table's error, if any, and closes it.
func (l *Level) fail() bool {
	if l.iter != nil && l.err == nil {
		l.err = l.iter.Error()
	}
	l.closeTable()
	return false
}

// Valid implements base.InternalIterator.
func (l *Level) Valid() bool { return l.valid }

// Key implements base.InternalIterator.
func (l *Level) Key() base.InternalKey { return l.iter.Key() }

// Value implements base.InternalIterator.
func (l *Level) Value() []byte { return l.iter.Value() }

// Error implements base.InternalIterator.
func (l *Level) Error() error { return l.err }

// Close implements base.InternalIterator.
func (l *Level) Close() error {
	l.valid = false
	l.closeTable()
	return l.err
}
