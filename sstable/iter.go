package sstable

import (
	"errors"

	"github.com/bloomkv/bloomkv/internal/base"
)

// tableIter is a two-level iterator: it walks the index block, and within
// each data block the index leads to, the data block's entries. It keeps
// to the user-key bounds [lower, upper). Errors are sticky: after one, the
// iterator stays invalid and Error reports it.
type tableIter struct {
	r            *Reader
	cmp          base.Compare
	lower, upper []byte
	index, data  blockIter
	valid        bool
	err          error
	closed       bool
}

// NewIter returns an iterator over the table's internal keys whose user
// keys lie in [lower, upper); a nil bound is open. Blocks are read through
// the block cache. Key and Value are valid until the next move; the value
// bytes themselves are immutable.
func (r *Reader) NewIter(lower, upper []byte) (InternalIterator, error) {
	it := &tableIter{r: r, cmp: r.cmp.Compare, lower: lower, upper: upper}
	if err := r.initIndexIter(&it.index); err != nil {
		return nil, err
	}
	return it, nil
}

// fail records err (if it is the first) and invalidates the iterator.
func (it *tableIter) fail(err error) bool {
	if it.err == nil {
		it.err = err
	}
	it.valid = false
	return false
}

// loadBlock points the data iterator at the block the index is on.
func (it *tableIter) loadBlock() bool {
	h, _ := decodeHandle(it.index.val) // checked by NewReader
	data, err := it.r.dataBlock(h, nil)
	if err == nil {
		err = it.data.init(data, it.cmp, it.r.name, h.Offset)
	}
	if err != nil {
		return it.fail(err)
	}
	return true
}

// settle checks the data iterator's last move: on an error it fails, past
// the block it moves to the neighbouring block (forward or back), and it
// applies the bound on that side.
func (it *tableIter) settle(ok, forward bool) bool {
	for !ok {
		if it.data.err != nil {
			return it.fail(it.data.err)
		}
		var more bool
		if forward {
			more = it.index.Next()
		} else {
			more = it.index.Prev()
		}
		if !more {
			if it.index.err != nil {
				return it.fail(it.index.err)
			}
			it.valid = false
			return false
		}
		if !it.loadBlock() {
			return false
		}
		if forward {
			ok = it.data.First()
		} else {
			ok = it.data.Last()
		}
	}
	k := it.data.ikey.UserKey
	if forward && it.upper != nil && it.cmp(k, it.upper) >= 0 ||
		!forward && it.lower != nil && it.cmp(k, it.lower) < 0 {
		it.valid = false
		return false
	}
	it.valid = true
	return true
}

// usable reports whether the iterator may move; it fails after Close.
func (it *tableIter) usable() bool {
	if it.closed {
		return it.fail(errors.New("sstable: iterator used after Close"))
	}
	it.valid = false
	return it.err == nil
}

// SeekGE moves to the first entry whose user key is >= key (and >= lower).
func (it *tableIter) SeekGE(key []byte) bool {
	if !it.usable() {
		return false
	}
	if it.lower != nil && it.cmp(key, it.lower) < 0 {
		key = it.lower
	}
	target := base.MakeSearchKey(key)
	if !it.index.SeekGE(target) {
		return it.settleIndex()
	}
	if !it.loadBlock() {
		return false
	}
	return it.settle(it.data.SeekGE(target), true)
}

// SeekLT moves to the last entry whose user key is < key (and < upper).
func (it *tableIter) SeekLT(key []byte) bool {
	if !it.usable() {
		return false
	}
	if it.upper != nil && it.cmp(key, it.upper) > 0 {
		key = it.upper
	}
	target := base.MakeSearchKey(key)
	if !it.index.SeekGE(target) {
		// Every block lies below target: the answer is the last entry.
		if it.index.err != nil {
			return it.fail(it.index.err)
		}
		return it.lastEntry()
	}
	if !it.loadBlock() {
		return false
	}
	return it.settle(it.data.SeekLT(target), false)
}

// settleIndex handles an index move that found no block.
func (it *tableIter) settleIndex() bool {
	if it.index.err != nil {
		return it.fail(it.index.err)
	}
	return false
}

// First moves to the first entry (with user key >= lower).
func (it *tableIter) First() bool {
	if it.lower != nil {
		return it.SeekGE(it.lower)
	}
	if !it.usable() {
		return false
	}
	if !it.index.First() {
		return it.settleIndex()
	}
	if !it.loadBlock() {
		return false
	}
	return it.settle(it.data.First(), true)
}

// Last moves to the last entry (with user key < upper).
func (it *tableIter) Last() bool {
	if it.upper != nil {
		return it.SeekLT(it.upper)
	}
	if !it.usable() {
		return false
	}
	return it.lastEntry()
}

// lastEntry moves to the table's last entry, bounded below by lower.
func (it *tableIter) lastEntry() bool {
	if !it.index.Last() {
		return it.settleIndex()
	}
	if !it.loadBlock() {
		return false
	}
	return it.settle(it.data.Last(), false)
}

// Next moves to the following entry.
func (it *tableIter) Next() bool {
	if !it.valid {
		return false
	}
	return it.settle(it.data.Next(), true)
}

// Prev moves to the preceding entry.
func (it *tableIter) Prev() bool {
	if !it.valid {
		return false
	}
	return it.settle(it.data.Prev(), false)
}

// Valid reports whether the iterator is at an entry.
func (it *tableIter) Valid() bool { return it.valid }

// Key returns the current internal key.
func (it *tableIter) Key() base.InternalKey { return it.data.ikey }

// Value returns the current value.
func (it *tableIter) Value() []byte { return it.data.val }

// Error returns the first error met.
func (it *tableIter) Error() error { return it.err }

// Close releases the blocks the iterator holds and returns Error.
func (it *tableIter) Close() error {
	it.closed, it.valid = true, false
	it.index, it.data = blockIter{}, blockIter{}
	return it.err
}
