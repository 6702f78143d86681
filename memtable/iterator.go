package memtable

import "github.com/bloomkv/bloomkv/internal/base"

// NewIter returns an iterator over the point entries (range tombstones
// are read with RangeDels) whose user keys lie in
// [lower, upper) (nil: unbounded). It may be used while inserters add
// entries; it sees each entry either not at all or whole. Keys and values it
// returns stay valid, unmodified, for as long as the caller holds them,
// longer than [InternalIterator] requires.
//
// Next and Prev on an unpositioned or exhausted iterator return false.
func (m *MemTable) NewIter(lower, upper []byte) InternalIterator {
	it := new(Iter)
	m.InitIter(it, lower, upper)
	return it
}

// InitIter readies it to walk the memtable as NewIter's iterator does, for
// a caller that keeps its iterators: it may be the zero Iter or one used
// before, over any memtable.
func (m *MemTable) InitIter(it *Iter, lower, upper []byte) {
	*it = Iter{m: m, lower: lower, upper: upper}
}

// Iter walks the point entries of a MemTable within [lower, upper); see
// NewIter and InitIter. It implements [InternalIterator].
type Iter struct {
	m            *MemTable
	lower, upper []byte
	n            *node // nil: not positioned at an entry
}

// SeekGE implements [InternalIterator].
func (it *Iter) SeekGE(key []byte) bool {
	if it.lower != nil && it.m.cmp.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	it.n = it.m.points.findGE(base.MakeSearchKey(key))
	return it.checkUpper()
}

// SeekLT implements [InternalIterator].
func (it *Iter) SeekLT(key []byte) bool {
	if it.upper != nil && it.m.cmp.Compare(key, it.upper) > 0 {
		key = it.upper
	}
	it.n = it.m.points.findLT(base.MakeSearchKey(key))
	return it.checkLower()
}

// First implements [InternalIterator].
func (it *Iter) First() bool {
	if it.lower != nil {
		return it.SeekGE(it.lower)
	}
	it.n = it.m.points.head.next(0)
	return it.checkUpper()
}

// Last implements [InternalIterator].
func (it *Iter) Last() bool {
	if it.upper != nil {
		return it.SeekLT(it.upper)
	}
	it.n = it.m.points.findLast()
	return it.checkLower()
}

// Next implements [InternalIterator].
func (it *Iter) Next() bool {
	if it.n == nil {
		return false
	}
	it.n = it.n.next(0)
	return it.checkUpper()
}

// Prev implements [InternalIterator].
func (it *Iter) Prev() bool {
	if it.n == nil {
		return false
	}
	it.n = it.n.prev.Load()
	return it.checkLower()
}

// checkUpper invalidates the iterator if it ran past the upper bound.
func (it *Iter) checkUpper() bool {
	if it.n != nil && it.upper != nil && it.m.cmp.Compare(it.n.userKey(), it.upper) >= 0 {
		it.n = nil
	}
	return it.n != nil
}

// checkLower invalidates the iterator if it ran before the lower bound or
// onto the head.
func (it *Iter) checkLower() bool {
	if it.n == it.m.points.head || (it.n != nil && it.lower != nil && it.m.cmp.Compare(it.n.userKey(), it.lower) < 0) {
		it.n = nil
	}
	return it.n != nil
}

// Valid implements [InternalIterator].
func (it *Iter) Valid() bool { return it.n != nil }

// Key implements [InternalIterator].
func (it *Iter) Key() InternalKey { return it.n.key() }

// Value implements [InternalIterator].
func (it *Iter) Value() []byte { return it.n.value() }

// Error implements [InternalIterator].
func (it *Iter) Error() error { return nil }

// Close implements [InternalIterator].
func (it *Iter) Close() error {
	it.n = nil
	return nil
}
