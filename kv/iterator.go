package kv

import (
	"bytes"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Iterator walks the DB's keys in order, showing for each key the newest
// value visible at the iterator's sequence number and hiding deleted keys,
// range deletions included.
// It sees one point in time: the moment NewIter was called (or the
// snapshot's), until Refresh moves it to the DB's current state. It holds
// the tables it reads, so no compaction deletes them under it; Close it
// when done. After Close every method is harmless: positioning calls
// return false, Key and Value nil, Error and Close ErrClosed.
//
// Positioning methods report whether the iterator landed on a key. Key and
// Value are valid until the next positioning call, SetBounds, Refresh or
// Close, whichever comes first (the memory behind them may then be
// reused); copy them to keep them. An Iterator is not safe for
// concurrent use.
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

// Next moves to the following key. On an iterator that is not Valid
// because a backward move ran off the first key (a Prev, a SeekLT or a
// Last that found none), it moves to the first key, as Pebble's does;
// otherwise it returns false (past the last key, or before any
// positioning call). In prefix mode it stops at the end of the prefix.
func (i *Iterator) Next() bool { return i.s != nil && i.s.next() }

// Prev moves to the preceding key. On an iterator that is not Valid
// because a forward move ran off the last key (a Next, a SeekGE or a
// First that found none), it moves to the last key, as Pebble's does;
// otherwise it returns false. In prefix mode it is not supported: it
// fails with ErrReversePrefixIteration, as Pebble's does, whether the
// iterator is Valid or not (after a SeekPrefixGE that found nothing, or a
// Next that reached the end of the prefix, too).
func (i *Iterator) Prev() bool { return i.s != nil && i.s.prev() }

// Valid reports whether the iterator is at a key.
func (i *Iterator) Valid() bool { return i.s != nil && i.s.valid }

// Key returns the current key, or nil when not Valid. The empty key is an
// empty slice that is not nil, so nil always means not Valid.
func (i *Iterator) Key() []byte {
	if !i.Valid() {
		return nil
	}
	if i.s.key == nil {
		return []byte{}
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
// An iterator left open at the DB's Close reports ErrClosed at once, even
// before its next move; until that move (which returns false) Valid, Key
// and Value still show the key it was at, whose memory it holds.
func (i *Iterator) Error() error {
	if i.s == nil {
		return ErrClosed
	}
	if i.s.err == nil {
		return i.s.db.checkOpen()
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

// first is Iterator.First. It is never a prefix seek, PrefixOnly or not.
func (s *iterState) first() bool {
	if s.lower != nil {
		return s.seekGEAll(s.lower)
	}
	if !s.reposition() {
		return false
	}
	s.merging.First()
	return s.findNext()
}

// last is Iterator.Last.
func (s *iterState) last() bool {
	if s.upper != nil {
		return s.seekLT(s.upper)
	}
	if !s.reposition() {
		return false
	}
	s.merging.Last()
	return s.findPrev()
}

// seekGE is Iterator.SeekGE.
func (s *iterState) seekGE(key []byte) bool {
	if s.prefixOnly {
		return s.seekPrefixGE(key)
	}
	return s.seekGEAll(key)
}

// seekGEAll is SeekGE outside prefix mode, whatever PrefixOnly says: the
// seek of First with a LowerBound.
func (s *iterState) seekGEAll(key []byte) bool {
	if !s.reposition() {
		return false
	}
	if s.lower != nil && s.cmp(key, s.lower) < 0 {
		key = s.lower
	}
	s.merging.SeekGE(key)
	return s.findNext()
}

// seekLT is Iterator.SeekLT.
func (s *iterState) seekLT(key []byte) bool {
	if !s.reposition() {
		return false
	}
	if s.upper != nil && s.cmp(key, s.upper) > 0 {
		key = s.upper
	}
	s.merging.SeekLT(key)
	return s.findPrev()
}

// next is Iterator.Next.
func (s *iterState) next() bool {
	if !s.usable() {
		return false
	}
	if !s.valid {
		// Before the first key, where a backward move ran out, Next
		// moves onto it, as in Pebble; elsewhere it stays.
		if s.dir < 0 && s.prefix == nil {
			return s.first()
		}
		return false
	}
	// In prefix mode, what the move costs is counted at once, even when
	// the move ends the mode (a Split that fails on a key it meets).
	prefixMode := s.prefix != nil
	if s.dir < 0 {
		// merging is before the current key: come back to it.
		s.merging.SeekGE(s.key)
		s.skipCurrentKey()
	} else {
		s.nextUserKey()
	}
	ok := s.findNext()
	if prefixMode {
		s.flushStats()
	}
	return ok
}

// prev is Iterator.Prev.
func (s *iterState) prev() bool {
	if !s.usable() {
		return false
	}
	if s.prefix != nil {
		s.valid, s.err = false, ErrReversePrefixIteration
		return false
	}
	if !s.valid {
		// Past the last key, where a forward move ran out, Prev moves
		// back onto it, as in Pebble; elsewhere it stays.
		if s.dir > 0 {
			return s.last()
		}
		return false
	}
	if s.dir > 0 {
		s.merging.SeekLT(s.key)
	}
	return s.findPrev()
}

// usable checks that the DB is open and no error stopped the iterator.
func (s *iterState) usable() bool {
	if s.err == nil {
		s.err = s.db.checkOpen()
	}
	if s.err != nil {
		s.valid = false
		return false
	}
	return true
}

// skipCurrentKey moves merging past every entry of the current key; it must
// be at one of them or before the first.
func (s *iterState) skipCurrentKey() {
	for s.merging.Valid() && s.cmp(s.merging.Key().UserKey, s.key) <= 0 {
		s.merging.Next()
	}
}

// nextUserKey moves merging past every entry of the current key when it
// is at one of them, as it is moving forward: it steps once, then over
// the key's older versions, which forward order puts right after it, so
// that a key with one version costs one comparison, and an equality test
// at that.
func (s *iterState) nextUserKey() {
	for s.merging.Next() && s.sameKey(s.merging.Key().UserKey, s.key) {
	}
}

// sameKey reports whether a and b are the same user key: bytes.Equal,
// which checks lengths first, under a bytewise comparer.
func (s *iterState) sameKey(a, b []byte) bool {
	if s.bytewise {
		return bytes.Equal(a, b)
	}
	return s.cmp(a, b) == 0
}

// findNext moves forward from merging's entry to the first key whose newest
// visible version is a value.
func (s *iterState) findNext() bool {
	s.dir = +1
	for s.merging.Valid() {
		k := s.merging.Key()
		if s.upper != nil && s.cmp(k.UserKey, s.upper) >= 0 || s.prefix != nil && !s.hasPrefix(k.UserKey) {
			break
		}
		if !s.visible(k) {
			s.merging.Next()
			continue
		}
		s.keyBuf = append(s.keyBuf[:0], k.UserKey...)
		s.key = s.keyBuf
		if k.Kind() == base.KindSet && (len(s.rangeDels) == 0 || !s.rangeDeleted(k.UserKey, k.SeqNum())) {
			s.value, s.valid = s.merging.Value(), true
			return true
		}
		s.nextUserKey()
	}
	return s.stop()
}

// findPrev moves backward from merging's entry to the last key whose newest
// visible version is a value. Moving backward meets a key's versions
// oldest first, so it reads the whole key before deciding.
func (s *iterState) findPrev() bool {
	s.dir = -1
	for s.merging.Valid() {
		k := s.merging.Key()
		if s.lower != nil && s.cmp(k.UserKey, s.lower) < 0 {
			break
		}
		s.keyBuf = append(s.keyBuf[:0], k.UserKey...)
		live := false
		var liveSeq base.SeqNum
		for {
			if s.visible(k) {
				live, liveSeq = k.Kind() == base.KindSet, k.SeqNum()
				if live {
					// Values are immutable in every source (memtables,
					// blocks): no need to copy it before moving on.
					s.value = s.merging.Value()
				}
			}
			if !s.merging.Prev() {
				break
			}
			if k = s.merging.Key(); !s.sameKey(k.UserKey, s.keyBuf) {
				break
			}
		}
		live = live && (len(s.rangeDels) == 0 || !s.rangeDeleted(s.keyBuf, liveSeq))
		if s.merging.Error() != nil {
			// The failure may hide a newer version of the key: show
			// nothing rather than an older value.
			break
		}
		if live {
			s.key, s.valid = s.keyBuf, true
			return true
		}
	}
	return s.stop()
}

// stop marks the iterator exhausted, keeping any error of merging.
func (s *iterState) stop() bool {
	s.valid = false
	if err := s.merging.Error(); err != nil {
		s.err = err
	}
	return false
}
