package sstable

import (
	"encoding/binary"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
)

// blockIter walks the entries of one block. It never panics on bad bytes:
// a malformed entry or restart array stops it with an error wrapping
// base.ErrCorruption that names the file and the block's offset.
//
// With a non-nil cmp the keys are encoded internal keys (data and index
// blocks) and the seeks are available; with a nil cmp the keys are plain
// bytes (metaindex and properties blocks) and only First/Next make sense.
//
// The key returned may alias the block or an internal buffer and is valid
// until the next move; the value always aliases the block, so it lives as
// long as the block does.
type blockIter struct {
	cmp         base.Compare
	data        []byte
	restarts    int // offset of the restart array
	numRestarts int

	offset, nextOffset int // current entry and the one after it
	rawKey             []byte
	ikey               base.InternalKey
	val                []byte
	valid              bool

	keyBuf   []byte
	keyInBuf bool // rawKey lives in keyBuf (else it aliases data)
	err      error

	// prevEntries caches the entries of one restart interval, as a Prev
	// or Last decoded them forward from the restart point, so that the
	// Prevs that follow within the interval decode nothing; the keys that
	// do not alias data are in prevBuf. prevIdx is the current entry's
	// index in the cache, -1 when the iterator moved by other means.
	prevEntries []prevEntry
	prevBuf     []byte
	prevIdx     int

	file     string
	blockOff uint64
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
func (it *blockIter) init(data []byte, cmp base.Compare, file string, blockOff uint64) error {
	*it = blockIter{
		cmp: cmp, data: data, file: file, blockOff: blockOff, prevIdx: -1,
		keyBuf: it.keyBuf[:0], prevEntries: it.prevEntries[:0], prevBuf: it.prevBuf[:0],
	}
	if len(data) < 4 {
		return it.corrupt(0, "block shorter than its restart count")
	}
	n := binary.LittleEndian.Uint32(data[len(data)-4:])
	if uint64(n) > uint64(len(data)-4)/4 {
		return it.corrupt(len(data)-4, fmt.Sprintf("restart count %d too large", n))
	}
	it.numRestarts = int(n)
	it.restarts = len(data) - 4 - 4*it.numRestarts
	if (it.numRestarts == 0) != (it.restarts == 0) {
		return it.corrupt(it.restarts, "restart array does not match entries")
	}
	if it.numRestarts > 0 && binary.LittleEndian.Uint32(data[it.restarts:]) != 0 {
		return it.corrupt(it.restarts, "first restart point is not 0")
	}
	return nil
}

// release drops the iterator's hold on its block, keeping its buffers for
// the next init.
func (it *blockIter) release() {
	*it = blockIter{keyBuf: it.keyBuf[:0], prevEntries: it.prevEntries[:0], prevBuf: it.prevBuf[:0]}
}

// corrupt records and returns a corruption error at byte off of the block.
func (it *blockIter) corrupt(off int, what string) error {
	it.valid = false
	if it.err == nil {
		it.err = base.CorruptionErrorf("sstable: %s: block at offset %d: %s (block byte %d)",
			it.file, it.blockOff, what, off)
	}
	return it.err
}

// restartOffset returns the offset of restart point i, or -1 after
// recording corruption if it points outside the entries.
func (it *blockIter) restartOffset(i int) int {
	off := int(binary.LittleEndian.Uint32(it.data[it.restarts+4*i:]))
	if off >= it.restarts {
		it.corrupt(it.restarts+4*i, fmt.Sprintf("restart point %d out of range", off))
		return -1
	}
	return off
}

// decodeHeader reads an entry's three lengths at off and checks they fit
// in the entries area. n is the header length; ok is false on damage.
func (it *blockIter) decodeHeader(off int) (shared, unshared, vlen, n int, ok bool) {
	p := it.data[off:it.restarts]
	if len(p) >= 3 && p[0]|p[1]|p[2] < 0x80 {
		shared, unshared, vlen, n = int(p[0]), int(p[1]), int(p[2]), 3
	} else {
		s, n1 := binary.Uvarint(p)
		if n1 <= 0 {
			return 0, 0, 0, 0, false
		}
		u, n2 := binary.Uvarint(p[n1:])
		if n2 <= 0 {
			return 0, 0, 0, 0, false
		}
		v, n3 := binary.Uvarint(p[n1+n2:])
		if n3 <= 0 || s > uint64(len(p)) || u > uint64(len(p)) || v > uint64(len(p)) {
			return 0, 0, 0, 0, false
		}
		shared, unshared, vlen, n = int(s), int(u), int(v), n1+n2+n3
	}
	if unshared+vlen > len(p)-n {
		return 0, 0, 0, 0, false
	}
	return shared, unshared, vlen, n, true
}

// readEntry decodes the entry at off, whose predecessor (for the shared
// prefix) is the current key; at a restart point the caller clears it.
func (it *blockIter) readEntry(off int) bool {
	var shared, unshared, vlen, n int
	ok := true
	if p := it.data[off:it.restarts]; len(p) >= 3 && p[0]|p[1]|p[2] < 0x80 {
		// The common case, inlined: three one-byte lengths.
		shared, unshared, vlen, n = int(p[0]), int(p[1]), int(p[2]), 3
		ok = unshared+vlen <= len(p)-3
	} else {
		shared, unshared, vlen, n, ok = it.decodeHeader(off)
	}
	if !ok || shared > len(it.rawKey) {
		it.corrupt(off, "bad entry")
		return false
	}
	keyStart := off + n
	suffix := it.data[keyStart : keyStart+unshared]
	switch {
	case shared == 0:
		it.rawKey, it.keyInBuf = suffix, false
	case it.keyInBuf:
		it.keyBuf = append(it.keyBuf[:shared], suffix...)
		it.rawKey = it.keyBuf
	default:
		it.keyBuf = append(append(it.keyBuf[:0], it.rawKey[:shared]...), suffix...)
		it.rawKey, it.keyInBuf = it.keyBuf, true
	}
	if it.cmp != nil {
		if it.ikey, ok = base.DecodeInternalKey(it.rawKey); !ok {
			it.corrupt(off, "bad internal key")
			return false
		}
	}
	it.val = it.data[keyStart+unshared : keyStart+unshared+vlen]
	it.offset, it.nextOffset = off, keyStart+unshared+vlen
	it.valid, it.prevIdx = true, -1
	return true
}

// seekRestart moves to restart point i.
func (it *blockIter) seekRestart(i int) bool {
	off := it.restartOffset(i)
	if off < 0 {
		return false
	}
	it.rawKey, it.keyInBuf = nil, false
	return it.readEntry(off)
}

// restartKey returns the internal key stored whole at restart point i
// without moving the iterator.
func (it *blockIter) restartKey(i int) (base.InternalKey, bool) {
	off := it.restartOffset(i)
	if off < 0 {
		return base.InternalKey{}, false
	}
	shared, unshared, _, n, ok := it.decodeHeader(off)
	if !ok || shared != 0 {
		it.corrupt(off, "bad restart entry")
		return base.InternalKey{}, false
	}
	k, ok := base.DecodeInternalKey(it.data[off+n : off+n+unshared])
	if !ok {
		it.corrupt(off, "bad internal key")
	}
	return k, ok
}

// searchRestarts returns the first restart point whose key is >= target,
// or numRestarts if there is none; -1 on corruption.
func (it *blockIter) searchRestarts(target base.InternalKey) int {
	return it.searchRestartRange(target, 0, it.numRestarts)
}

// searchRestartRange is searchRestarts for a caller that knows the answer
// lies in [lo, hi].
func (it *blockIter) searchRestartRange(target base.InternalKey, lo, hi int) int {
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		k, ok := it.restartKey(m)
		if !ok {
			return -1
		}
		if base.InternalCompare(it.cmp, k, target) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// First moves to the first entry.
func (it *blockIter) First() bool {
	if it.err != nil || it.numRestarts == 0 {
		it.valid = false
		return false
	}
	return it.seekRestart(0)
}

// Next moves to the following entry.
func (it *blockIter) Next() bool {
	if !it.valid {
		return false
	}
	if it.nextOffset >= it.restarts {
		it.valid = false
		return false
	}
	return it.readEntry(it.nextOffset)
}

// Last moves to the last entry.
func (it *blockIter) Last() bool {
	if it.err != nil || it.numRestarts == 0 {
		it.valid = false
		return false
	}
	return it.decodeInterval(it.numRestarts-1, it.restarts)
}

// Prev moves to the preceding entry: the cached one before the current,
// or else the last one of those it decodes forward from the restart point
// before the current entry, caching them.
func (it *blockIter) Prev() bool {
	if !it.valid {
		return false
	}
	if it.prevIdx > 0 {
		it.useCached(it.prevIdx - 1)
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
func (it *blockIter) decodeInterval(i, end int) bool {
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
func (it *blockIter) cacheEntry() {
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
func (it *blockIter) useCached(j int) {
	e := &it.prevEntries[j]
	if e.keyInData {
		it.rawKey = it.data[e.keyStart:e.keyEnd]
	} else {
		it.rawKey = it.prevBuf[e.keyStart:e.keyEnd]
	}
	it.keyInBuf = false
	if it.cmp != nil {
		it.ikey, _ = base.DecodeInternalKey(it.rawKey)
	}
	it.val = it.data[e.valStart:e.nextOffset]
	it.offset, it.nextOffset, it.prevIdx = e.offset, e.nextOffset, j
}

// SeekGE moves to the first entry whose internal key is >= target.
func (it *blockIter) SeekGE(target base.InternalKey) bool {
	if it.err != nil || it.numRestarts == 0 {
		it.valid = false
		return false
	}
	i := it.searchRestarts(target)
	if i < 0 {
		return false
	}
	// Entries before restart point i-1 are all below target.
	if !it.seekRestart(max(i-1, 0)) {
		return false
	}
	for base.InternalCompare(it.cmp, it.ikey, target) < 0 {
		if !it.Next() {
			return false
		}
	}
	return true
}

// SeekLT moves to the last entry whose internal key is < target.
func (it *blockIter) SeekLT(target base.InternalKey) bool {
	if it.SeekGE(target) {
		return it.Prev()
	}
	if it.err != nil {
		return false
	}
	return it.Last()
}
