package kv

import (
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Iterator walks the DB's keys in order, showing for each key the newest
// value visible at the iterator's sequence number and hiding deleted keys,
// range deletions included.
// It sees one point in time: the moment NewIter was called (or the
// snapshot's). It holds the tables it reads, so no compaction deletes them
// under it; Close it when done. After Close every method is harmless:
// positioning calls return false, Key and Value nil, Error and Close
// ErrClosed.
//
// Positioning methods report whether the iterator landed on a key. Key and
// Value are valid until the next positioning call; copy them to keep them.
// An Iterator is not safe for concurrent use.
//
// What an iterator costs: NewIter opens nothing; its state (the merge of
// the memtables and levels, one table iterator per level, key buffers)
// comes from a pool that Close returns it to, so a NewIter, SeekGE, Close
// allocates only the small Iterator itself. A seek opens, in each level,
// the one table that may hold the key; moving on to the next table of a
// level reuses the level's table iterator.
//
// Range deletions cost an iterator this much: the range tombstones of the
// tables of the DB's current state are gathered and fragmented once, by
// the first iterator over that state (one table-cache lookup per table),
// and shared by the later ones; those of the memtables are cached by the
// memtables. Each key the iterator shows then costs one binary search per
// source of tombstones, and keys a tombstone covers are stepped over one
// by one. With no tombstones in reach, nothing is searched.
type Iterator struct {
	s *iterState // nil once closed
}

// NewIter returns an iterator over the DB's current state, restricted to
// opts' bounds.
func (d *DB) NewIter(opts *IterOptions) (*Iterator, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	if err := d.checkIterOptions(opts); err != nil {
		return nil, err
	}
	return d.newIter(opts, nil), nil
}

// checkIterOptions refuses options the DB cannot serve.
func (d *DB) checkIterOptions(opts *IterOptions) error {
	if opts != nil && opts.PrefixOnly && d.cmp.Split == nil {
		return fmt.Errorf("%w: IterOptions.PrefixOnly needs a Comparer with a Split", ErrInvalidPrefixSeek)
	}
	return nil
}

// newIter builds an iterator as of the snapshot, or the current state when
// snap is nil, on a pooled state.
func (d *DB) newIter(opts *IterOptions, snap *Snapshot) *Iterator {
	s := iterStatePool.Get().(*iterState)
	s.init(d, opts, snap)
	return &Iterator{s: s}
}

// First moves to the first key.
func (i *Iterator) First() bool { return i.s != nil && i.s.first() }

// Last moves to the last key.
func (i *Iterator) Last() bool { return i.s != nil && i.s.last() }

// SeekGE moves to the first key >= key (and within the bounds). With
// IterOptions.PrefixOnly it is SeekPrefixGE.
func (i *Iterator) SeekGE(key []byte) bool { return i.s != nil && i.s.seekGE(key) }

// SeekLT moves to the last key < key (and within the bounds).
func (i *Iterator) SeekLT(key []byte) bool { return i.s != nil && i.s.seekLT(key) }

// Next moves to the following key. On an iterator that is not Valid it
// returns false. In prefix mode it stops at the end of the prefix.
func (i *Iterator) Next() bool { return i.s != nil && i.s.next() }

// Prev moves to the preceding key. On an iterator that is not Valid it
// returns false. In prefix mode it is not supported: it fails with
// ErrReversePrefixIteration, as Pebble's does.
func (i *Iterator) Prev() bool { return i.s != nil && i.s.prev() }

// Valid reports whether the iterator is at a key.
func (i *Iterator) Valid() bool { return i.s != nil && i.s.valid }

// Key returns the current key, or nil when not Valid.
func (i *Iterator) Key() []byte {
	if !i.Valid() {
		return nil
	}
	return i.s.key
}

// Value returns the current value, or nil when not Valid.
func (i *Iterator) Value() []byte {
	if !i.Valid() {
		return nil
	}
	return i.s.value
}

// Error returns the error that stopped the iterator, if any: an I/O or
// corruption error, or ErrClosed after the iterator or its DB was closed.
func (i *Iterator) Error() error {
	if i.s == nil {
		return ErrClosed
	}
	return i.s.err
}

// Close releases the iterator and the tables it holds. It returns the
// iterator's error, if any; ErrClosed if called twice or after the DB was
// closed.
func (i *Iterator) Close() error {
	if i.s == nil {
		return ErrClosed
	}
	s := i.s
	i.s = nil
	return s.close()
}

// first is Iterator.First.
func (i *iterState) first() bool {
	if i.lower != nil {
		return i.seekGE(i.lower)
	}
	if !i.reposition() {
		return false
	}
	i.merging.First()
	return i.findNext()
}

// last is Iterator.Last.
func (i *iterState) last() bool {
	if i.upper != nil {
		return i.seekLT(i.upper)
	}
	if !i.reposition() {
		return false
	}
	i.merging.Last()
	return i.findPrev()
}

// seekGE is Iterator.SeekGE.
func (i *iterState) seekGE(key []byte) bool {
	if i.prefixOnly {
		return i.seekPrefixGE(key)
	}
	if !i.reposition() {
		return false
	}
	if i.lower != nil && i.cmp(key, i.lower) < 0 {
		key = i.lower
	}
	i.merging.SeekGE(key)
	return i.findNext()
}

// seekLT is Iterator.SeekLT.
func (i *iterState) seekLT(key []byte) bool {
	if !i.reposition() {
		return false
	}
	if i.upper != nil && i.cmp(key, i.upper) > 0 {
		key = i.upper
	}
	i.merging.SeekLT(key)
	return i.findPrev()
}

// next is Iterator.Next.
func (i *iterState) next() bool {
	if !i.usable() || !i.valid {
		return false
	}
	if i.dir < 0 {
		// merging is before the current key: come back to it.
		i.merging.SeekGE(i.key)
	}
	i.skipCurrentKey()
	ok := i.findNext()
	if i.prefix != nil {
		i.flushStats()
	}
	return ok
}

// prev is Iterator.Prev.
func (i *iterState) prev() bool {
	if !i.usable() || !i.valid {
		return false
	}
	if i.prefix != nil {
		i.valid, i.err = false, ErrReversePrefixIteration
		return false
	}
	if i.dir > 0 {
		i.merging.SeekLT(i.key)
	}
	return i.findPrev()
}

// usable checks that the DB is open and no error stopped the iterator.
func (i *iterState) usable() bool {
	if i.err == nil {
		i.err = i.db.checkOpen()
	}
	if i.err != nil {
		i.valid = false
		return false
	}
	return true
}

// skipCurrentKey moves merging past every entry of the current key; it must
// be at one of them or before the first.
func (i *iterState) skipCurrentKey() {
	for i.merging.Valid() && i.cmp(i.merging.Key().UserKey, i.key) <= 0 {
		i.merging.Next()
	}
}

// findNext moves forward from merging's entry to the first key whose newest
// visible version is a value.
func (i *iterState) findNext() bool {
	i.dir = +1
	for i.merging.Valid() {
		k := i.merging.Key()
		if i.upper != nil && i.cmp(k.UserKey, i.upper) >= 0 || i.prefix != nil && !i.hasPrefix(k.UserKey) {
			break
		}
		if !k.Visible(i.seq) {
			i.merging.Next()
			continue
		}
		i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
		i.key = i.keyBuf
		if k.Kind() == base.KindSet && (len(i.rangeDels) == 0 || !i.rangeDeleted(k.UserKey, k.SeqNum())) {
			i.value, i.valid = i.merging.Value(), true
			return true
		}
		i.skipCurrentKey()
	}
	return i.stop()
}

// findPrev moves backward from merging's entry to the last key whose newest
// visible version is a value. Moving backward meets a key's versions
// oldest first, so it reads the whole key before deciding.
func (i *iterState) findPrev() bool {
	i.dir = -1
	for i.merging.Valid() {
		k := i.merging.Key()
		if i.lower != nil && i.cmp(k.UserKey, i.lower) < 0 {
			break
		}
		i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
		live := false
		var liveSeq base.SeqNum
		for i.merging.Valid() && i.cmp(i.merging.Key().UserKey, i.keyBuf) == 0 {
			if k := i.merging.Key(); k.Visible(i.seq) {
				live, liveSeq = k.Kind() == base.KindSet, k.SeqNum()
				if live {
					// Values are immutable in every source (memtables,
					// blocks): no need to copy it before moving on.
					i.value = i.merging.Value()
				}
			}
			i.merging.Prev()
		}
		live = live && !i.rangeDeleted(i.keyBuf, liveSeq)
		if i.merging.Error() != nil {
			// The failure may hide a newer version of the key: show
			// nothing rather than an older value.
			break
		}
		if live {
			i.key, i.valid = i.keyBuf, true
			return true
		}
	}
	return i.stop()
}

// stop marks the iterator exhausted, keeping any error of merging.
func (i *iterState) stop() bool {
	i.valid = false
	if err := i.merging.Error(); err != nil {
		i.err = err
	}
	return false
}
