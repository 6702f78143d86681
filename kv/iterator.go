package kv

import (
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/iterator"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/sstable"
)

// Iterator walks the DB's keys in order, showing for each key the newest
// value visible at the iterator's sequence number and hiding deleted keys,
// range deletions included.
// It sees one point in time: the moment NewIter was called (or the
// snapshot's). It holds the tables it reads, so no compaction deletes them
// under it; Close it when done.
//
// Positioning methods report whether the iterator landed on a key. Key and
// Value are valid until the next positioning call; copy them to keep them.
// An Iterator is not safe for concurrent use.
//
// Range deletions cost an iterator this much: NewIter gathers the range
// tombstones visible to it from the memtables and from every table that
// overlaps its bounds (one table-cache lookup per such table; the
// tombstones themselves are in memory), and fragments them once; each key
// the iterator shows then costs one binary search over the fragments, and
// keys a tombstone covers are stepped over one by one. With no tombstones
// in reach, only the table-cache lookups remain.
type Iterator struct {
	db           *DB
	rs           *readState
	seq          base.SeqNum
	iter         base.InternalIterator
	cmp          base.Compare
	lower, upper []byte
	// rangeDels are the range tombstones visible at seq that may cover a
	// key within the bounds, fragmented.
	rangeDels []sstable.RangeTombstone

	// dir is +1 after a forward move, -1 after a backward one. Forward, iter
	// sits on the entry shown; backward, on the last entry before the key
	// shown.
	dir    int
	valid  bool
	key    []byte
	value  []byte
	keyBuf []byte
	valBuf []byte
	err    error
	closed bool

	// prefix is SeekPrefixGE's prefix while the iterator is in prefix
	// mode, in prefixBuf; nil outside it.
	prefix    []byte
	prefixBuf []byte
	// prefixOnly is IterOptions.PrefixOnly: SeekGE seeks by prefix.
	prefixOnly bool
	// stats gathers, per level, what the tables' prefix seeks cost; each
	// move in prefix mode adds it to the DB's lookup counters.
	stats [manifest.NumLevels]sstable.LookupStats
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
// snap is nil: a merge of the memtables, each L0 table, and one level
// iterator per deeper level.
func (d *DB) newIter(opts *IterOptions, snap *Snapshot) *Iterator {
	it := &Iterator{db: d, cmp: d.cmp.Compare}
	if opts != nil {
		it.lower = cloneBytes(opts.LowerBound)
		it.upper = cloneBytes(opts.UpperBound)
		it.prefixOnly = opts.PrefixOnly
	}
	rs := d.loadReadState()
	it.rs = rs
	it.seq = d.readSeqNum(snap)
	iters := []base.InternalIterator{rs.mem.NewIter(it.lower, it.upper)}
	for i := len(rs.imm) - 1; i >= 0; i-- {
		iters = append(iters, rs.imm[i].NewIter(it.lower, it.upper))
	}
	l0 := rs.current.Levels[0]
	for i := len(l0) - 1; i >= 0; i-- {
		if !iterator.OverlapsBounds(d.cmp.Compare, l0[i].Smallest.UserKey, l0[i].Largest.UserKey, it.lower, it.upper) {
			continue
		}
		iters = append(iters, iterator.NewLevel(d.cmp.Compare, l0[i:i+1], it.lower, it.upper, it.tableOpener(0)))
	}
	for level := 1; level < len(rs.current.Levels); level++ {
		if files := rs.current.Levels[level]; len(files) > 0 {
			iters = append(iters, iterator.NewLevel(d.cmp.Compare, files, it.lower, it.upper, it.tableOpener(level)))
		}
	}
	it.iter = iterator.NewMerging(d.cmp.Compare, iters...)
	it.rangeDels, it.err = d.visibleRangeDels(rs, it.seq, it.lower, it.upper)
	return it
}

// visibleRangeDels gathers, fragmented, the range tombstones visible at seq
// of rs's memtables and of its tables that overlap [lower, upper).
func (d *DB) visibleRangeDels(rs *readState, seq base.SeqNum, lower, upper []byte) ([]sstable.RangeTombstone, error) {
	var ts []sstable.RangeTombstone
	visible := func(from []sstable.RangeTombstone) {
		for _, t := range from {
			if t.Seq <= seq {
				ts = append(ts, t)
			}
		}
	}
	visible(rs.mem.RangeDels())
	for _, m := range rs.imm {
		visible(m.RangeDels())
	}
	for _, files := range rs.current.Levels {
		for _, f := range files {
			if !iterator.OverlapsBounds(d.cmp.Compare, f.Smallest.UserKey, f.Largest.UserKey, lower, upper) {
				continue
			}
			ts, err := d.tableCache.rangeDels(f)
			if err != nil {
				return nil, err
			}
			visible(ts)
		}
	}
	return rangedel.Fragment(d.cmp.Compare, ts), nil
}

// rangeDeleted reports whether a range tombstone visible to the iterator
// deletes version seq of key.
func (i *Iterator) rangeDeleted(key []byte, seq base.SeqNum) bool {
	if len(i.rangeDels) == 0 {
		return false
	}
	tseq, ok := rangedel.Covering(i.cmp, i.rangeDels, key, i.seq)
	return ok && tseq > seq
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// tableOpener opens the tables of one level for the iterator, their prefix
// seeks counted in the level's stats.
func (i *Iterator) tableOpener(level int) iterator.TableOpener {
	stats := &i.stats[level]
	return func(f *manifest.FileMetadata, lower, upper []byte) (base.InternalIterator, error) {
		return i.db.tableCache.newIterWithStats(f, lower, upper, stats)
	}
}

// First moves to the first key.
func (i *Iterator) First() bool {
	if i.lower != nil {
		return i.SeekGE(i.lower)
	}
	if !i.reposition() {
		return false
	}
	i.iter.First()
	return i.findNext()
}

// Last moves to the last key.
func (i *Iterator) Last() bool {
	if i.upper != nil {
		return i.SeekLT(i.upper)
	}
	if !i.reposition() {
		return false
	}
	i.iter.Last()
	return i.findPrev()
}

// SeekGE moves to the first key >= key (and within the bounds). With
// IterOptions.PrefixOnly it is SeekPrefixGE.
func (i *Iterator) SeekGE(key []byte) bool {
	if i.prefixOnly {
		return i.SeekPrefixGE(key)
	}
	if !i.reposition() {
		return false
	}
	if i.lower != nil && i.cmp(key, i.lower) < 0 {
		key = i.lower
	}
	i.iter.SeekGE(key)
	return i.findNext()
}

// SeekLT moves to the last key < key (and within the bounds).
func (i *Iterator) SeekLT(key []byte) bool {
	if !i.reposition() {
		return false
	}
	if i.upper != nil && i.cmp(key, i.upper) > 0 {
		key = i.upper
	}
	i.iter.SeekLT(key)
	return i.findPrev()
}

// Next moves to the following key. On an iterator that is not Valid it
// returns false. In prefix mode it stops at the end of the prefix.
func (i *Iterator) Next() bool {
	if !i.usable() || !i.valid {
		return false
	}
	if i.dir < 0 {
		// iter is before the current key: come back to it.
		i.iter.SeekGE(i.key)
	}
	i.skipCurrentKey()
	ok := i.findNext()
	if i.prefix != nil {
		i.flushStats()
	}
	return ok
}

// Prev moves to the preceding key. On an iterator that is not Valid it
// returns false. In prefix mode it is not supported: it fails with
// ErrReversePrefixIteration, as Pebble's does.
func (i *Iterator) Prev() bool {
	if !i.usable() || !i.valid {
		return false
	}
	if i.prefix != nil {
		i.valid, i.err = false, ErrReversePrefixIteration
		return false
	}
	if i.dir > 0 {
		i.iter.SeekLT(i.key)
	}
	return i.findPrev()
}

// Valid reports whether the iterator is at a key.
func (i *Iterator) Valid() bool { return i.valid }

// Key returns the current key, or nil when not Valid.
func (i *Iterator) Key() []byte {
	if !i.valid {
		return nil
	}
	return i.key
}

// Value returns the current value, or nil when not Valid.
func (i *Iterator) Value() []byte {
	if !i.valid {
		return nil
	}
	return i.value
}

// Error returns the error that stopped the iterator, if any: an I/O or
// corruption error, or ErrClosed after the iterator or its DB was closed.
func (i *Iterator) Error() error { return i.err }

// Close releases the iterator and the tables it holds. It returns the
// iterator's error, if any; ErrClosed if called twice or after the DB was
// closed.
func (i *Iterator) Close() error {
	if i.closed {
		return ErrClosed
	}
	i.closed, i.valid = true, false
	err := i.iter.Close()
	i.rs.unref()
	i.rs = nil
	if i.err != nil {
		return i.err
	}
	if cerr := i.db.checkOpen(); cerr != nil {
		return cerr
	}
	return err
}

// usable checks that the iterator and its DB are open and no error
// stopped it.
func (i *Iterator) usable() bool {
	if i.err == nil && i.closed {
		i.err = ErrClosed
	}
	if i.err == nil {
		i.err = i.db.checkOpen()
	}
	if i.err != nil {
		i.valid = false
		return false
	}
	return true
}

// skipCurrentKey moves iter past every entry of the current key; iter must
// be at one of them or before the first.
func (i *Iterator) skipCurrentKey() {
	for i.iter.Valid() && i.cmp(i.iter.Key().UserKey, i.key) <= 0 {
		i.iter.Next()
	}
}

// findNext moves forward from iter's entry to the first key whose newest
// visible version is a value.
func (i *Iterator) findNext() bool {
	i.dir = +1
	for i.iter.Valid() {
		k := i.iter.Key()
		if i.upper != nil && i.cmp(k.UserKey, i.upper) >= 0 || i.prefix != nil && !i.hasPrefix(k.UserKey) {
			break
		}
		if !k.Visible(i.seq) {
			i.iter.Next()
			continue
		}
		i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
		i.key = i.keyBuf
		if k.Kind() == base.KindSet && !i.rangeDeleted(k.UserKey, k.SeqNum()) {
			i.value, i.valid = i.iter.Value(), true
			return true
		}
		i.skipCurrentKey()
	}
	return i.stop()
}

// findPrev moves backward from iter's entry to the last key whose newest
// visible version is a value. Moving backward meets a key's versions
// oldest first, so it reads the whole key before deciding.
func (i *Iterator) findPrev() bool {
	i.dir = -1
	for i.iter.Valid() {
		k := i.iter.Key()
		if i.lower != nil && i.cmp(k.UserKey, i.lower) < 0 {
			break
		}
		i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
		live := false
		var liveSeq base.SeqNum
		for i.iter.Valid() && i.cmp(i.iter.Key().UserKey, i.keyBuf) == 0 {
			if k := i.iter.Key(); k.Visible(i.seq) {
				live, liveSeq = k.Kind() == base.KindSet, k.SeqNum()
				if live {
					i.valBuf = append(i.valBuf[:0], i.iter.Value()...)
				}
			}
			i.iter.Prev()
		}
		live = live && !i.rangeDeleted(i.keyBuf, liveSeq)
		if i.iter.Error() != nil {
			// The failure may hide a newer version of the key: show
			// nothing rather than an older value.
			break
		}
		if live {
			i.key, i.value, i.valid = i.keyBuf, i.valBuf, true
			return true
		}
	}
	return i.stop()
}

// stop marks the iterator exhausted, keeping any error of iter.
func (i *Iterator) stop() bool {
	i.valid = false
	if err := i.iter.Error(); err != nil {
		i.err = err
	}
	return false
}
