package sstable

import (
	"encoding/binary"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
)

// blockIter walks the entries of one block forward and seeks in it. It
// never panics on bad bytes: a malformed entry or restart array stops it
// with an error wrapping base.ErrCorruption that names the file and the
// block's offset. It keeps no state for moving backward, so a lookup
// that only seeks (Reader.Get, the index searches) carries none;
// bidiBlockIter adds Last, Prev and SeekLT.
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

	file     string
	blockOff uint64
	// globalSeq, when not 0, replaces the sequence number of every key
	// decoded (ReaderOptions.GlobalSeqNum); set after init, for data
	// blocks only.
	globalSeq base.SeqNum
}

// init points the iterator at a block's contents, keeping its buffers.
func (it *blockIter) init(data []byte, cmp base.Compare, file string, blockOff uint64) error {
	*it = blockIter{cmp: cmp, data: data, file: file, blockOff: blockOff, keyBuf: it.keyBuf[:0]}
	if len(data) < 4 {
		return it.corrupt(0, "block shorter than its restart count")
	}
	n := binary.LittleEndian.Uint32(data[len(data)-4:])
	// The first entry's shared-prefix length, which must be 0, is read
	// with the restart count at the block's other end, before either is
	// tested, so that a block not in the CPU's caches costs one memory
	// wait for both: almost every move reads the first entry next.
	firstShared := data[0]
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
	if it.numRestarts > 0 && firstShared != 0 {
		return it.corrupt(0, "first entry shares a prefix")
	}
	return nil
}

// release drops the iterator's hold on its block, keeping its buffers for
// the next init.
func (it *blockIter) release() {
	*it = blockIter{keyBuf: it.keyBuf[:0]}
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
		// The shared prefix comes from the previous key, not from the
		// bytes left, so it may well exceed them (long keys near the
		// block's end): it is bounded by the block, which holds every
		// byte of every key, and the caller checks it against the key.
		if n3 <= 0 || s > uint64(len(it.data)) || u > uint64(len(p)) || v > uint64(len(p)) {
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
		if it.ikey, ok = it.decodeKey(it.rawKey); !ok {
			it.corrupt(off, "bad internal key")
			return false
		}
	}
	it.val = it.data[keyStart+unshared : keyStart+unshared+vlen]
	it.offset, it.nextOffset = off, keyStart+unshared+vlen
	it.valid = true
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
	k, ok := it.decodeKey(it.data[off+n : off+n+unshared])
	if !ok {
		it.corrupt(off, "bad internal key")
	}
	return k, ok
}

// decodeKey decodes an encoded internal key of the block, giving it the
// table's global sequence number if it has one.
func (it *blockIter) decodeKey(encoded []byte) (base.InternalKey, bool) {
	k, ok := base.DecodeInternalKey(encoded)
	if it.globalSeq != 0 {
		k.Trailer = base.MakeTrailer(it.globalSeq, k.Kind())
	}
	return k, ok
}

// searchRestartRange returns the first restart point in [lo, hi) whose
// key is >= target, or hi if there is none; -1 on corruption. The caller
// knows the answer lies in [lo, hi].
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

// SeekGE moves to the first entry whose internal key is >= target.
func (it *blockIter) SeekGE(target base.InternalKey) bool {
	if it.err != nil || it.numRestarts == 0 {
		it.valid = false
		return false
	}
	// Entries before restart point i-1, i the first restart point whose
	// key is >= target, are all below target. Restart point 0 need not be
	// asked: were its key >= target, i-1 would be 0 all the same.
	i := it.searchRestartRange(target, 1, it.numRestarts)
	if i < 0 {
		return false
	}
	if !it.seekRestart(i - 1) {
		return false
	}
	for base.InternalCompare(it.cmp, it.ikey, target) < 0 {
		if !it.Next() {
			return false
		}
	}
	return true
}
