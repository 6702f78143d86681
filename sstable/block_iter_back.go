package sstable

import "github.com/bloomkv/bloomkv/internal/base"

// bidiBlockIter is a blockIter that also moves backward (Last, Prev,
// SeekLT), for the table iterator. Entries are prefix-compressed from a
// restart point on, so stepping back means decoding forward from the
// restart point before the current entry; prevEntries caches the entries
// of that restart interval as they are decoded, so that the Prevs that
// follow within the interval decode nothing. The keys that do not alias
// the block are in prevBuf.
//
// The cache belongs to the block: init empties it, and nothing else needs
// to. prevIdx is the index in it of the entry the last Prev or Last moved
// to; whether the iterator is still there is known from the entry's
// offset, so the forward moves of blockIter, which Get uses alone, keep
// no account of the cache.
type bidiBlockIter struct {
	blockIter
	prevEntries []prevEntry
	prevBuf     []byte
	prevIdx     int
}

// prevEntry locates one cached entry: its offsets, its key (in data, or
// in prevBuf) and its value, which ends where the next entry begins.
type prevEntry struct {
	offset, nextOffset int
	keyStart, keyEnd   int
	keyInData          bool
	valStart           int
}

// init points the iterator at a block's contents, keeping its buffers.
func (it *bidiBlockIter) init(data []byte, cmp base.Compare, file string, blockOff uint64) error {
	it.prevEntries, it.prevBuf, it.prevIdx = it.prevEntries[:0], it.prevBuf[:0], 0
	return it.blockIter.init(data, cmp, file, blockOff)
}

// release drops the iterator's hold on its block, keeping its buffers.
func (it *bidiBlockIter) release() {
	it.prevEntries, it.prevBuf, it.prevIdx = it.prevEntries[:0], it.prevBuf[:0], 0
	it.blockIter.release()
}

// Last moves to the last entry.
func (it *bidiBlockIter) Last() bool {
	if it.err != nil || it.numRestarts == 0 {
		it.valid = false
		return false
	}
	return it.decodeInterval(it.numRestarts-1, it.restarts)
}

// Prev moves to the preceding entry: the cached one before the current,
// or else the last one of those it decodes forward from the restart point
// before the current entry, caching them.
func (it *bidiBlockIter) Prev() bool {
	if !it.valid {
		return false
	}
	if j := it.prevIdx; j > 0 && j < len(it.prevEntries) && it.prevEntries[j].offset == it.offset {
		it.useCached(j - 1)
		return true
	}
	target := it.offset
	if target == 0 {
		it.valid = false
		return false
	}
	lo, hi := 0, it.numRestarts // find the last restart point before target
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		off := it.restartOffset(m)
		if off < 0 {
			return false
		}
		if off < target {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		it.corrupt(target, "no restart point before entry")
		return false
	}
	return it.decodeInterval(lo-1, target)
}

// decodeInterval decodes the entries from restart point i up to offset
// end, which must be where an entry begins (or the end of the entries),
// caches them, and moves to the last.
func (it *bidiBlockIter) decodeInterval(i, end int) bool {
	it.prevEntries, it.prevBuf = it.prevEntries[:0], it.prevBuf[:0]
	if !it.seekRestart(i) {
		return false
	}
	for {
		it.cacheEntry()
		if it.nextOffset >= end {
			break
		}
		if !it.readEntry(it.nextOffset) {
			return false
		}
	}
	if it.nextOffset != end {
		it.corrupt(end, "entry not reachable from its restart point")
		return false
	}
	it.prevIdx = len(it.prevEntries) - 1
	return true
}

// cacheEntry appends the current entry to the cache.
func (it *bidiBlockIter) cacheEntry() {
	e := prevEntry{offset: it.offset, nextOffset: it.nextOffset, valStart: it.nextOffset - len(it.val)}
	if it.keyInBuf {
		e.keyStart = len(it.prevBuf)
		it.prevBuf = append(it.prevBuf, it.rawKey...)
		e.keyEnd = len(it.prevBuf)
	} else {
		// A key not in keyBuf is a whole slice of data (shared == 0).
		e.keyEnd = it.nextOffset - len(it.val)
		e.keyStart, e.keyInData = e.keyEnd-len(it.rawKey), true
	}
	it.prevEntries = append(it.prevEntries, e)
}

// useCached moves to cached entry j, whose key was decoded whole before.
func (it *bidiBlockIter) useCached(j int) {
	e := &it.prevEntries[j]
	if e.keyInData {
		it.rawKey = it.data[e.keyStart:e.keyEnd]
	} else {
		it.rawKey = it.prevBuf[e.keyStart:e.keyEnd]
	}
	it.keyInBuf = false
	if it.cmp != nil {
		it.ikey, _ = it.decodeKey(it.rawKey)
	}
	it.val = it.data[e.valStart:e.nextOffset]
	it.offset, it.nextOffset, it.prevIdx = e.offset, e.nextOffset, j
}

// SeekLT moves to the last entry whose internal key is < target.
func (it *bidiBlockIter) SeekLT(target base.InternalKey) bool {
	if it.SeekGE(target) {
		return it.Prev()
	}
	if it.err != nil {
		return false
	}
	return it.Last()
}
