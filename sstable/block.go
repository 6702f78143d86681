package sstable

import (
	"encoding/binary"
	"math"
)

// blockWriter builds one block: prefix-compressed entries followed by the
// restart array (see doc.go). Every restartInterval-th entry is a restart
// point and stores its whole key, so a reader can binary-search the
// restart points and decode forward from any of them.
type blockWriter struct {
	restartInterval int
	buf             []byte
	restarts        []uint32
	sinceRestart    int // entries added since the last restart point
	nEntries        int
	prevKey         []byte
}

// maxBlockLen bounds the entries of one block: its restart points are
// 32-bit offsets. A data block, cut at WriterOptions.BlockSize (at most
// MaxBlockSize) with entries of at most maxEntrySize, stays under it; the
// index and range-deletion blocks, each one block whatever the table
// holds, are held to it by the Writer (Writer.indexRoom, AddRangeDel).
const maxBlockLen = math.MaxUint32

// entryRoom is the most bytes add appends for an entry of key and value:
// three uvarint lengths and the bytes themselves.
func entryRoom(key, value int) int { return 3*binary.MaxVarintLen64 + key + value }

// add appends an entry. Keys must arrive in increasing order; the caller
// checks that.
func (w *blockWriter) add(key, value []byte) {
	shared := 0
	if w.sinceRestart < w.restartInterval && w.nEntries > 0 {
		n := min(len(key), len(w.prevKey))
		for shared < n && key[shared] == w.prevKey[shared] {
			shared++
		}
	} else {
		w.restarts = append(w.restarts, uint32(len(w.buf)))
		w.sinceRestart = 0
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(key)-shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(value)))
	w.buf = append(w.buf, key[shared:]...)
	w.buf = append(w.buf, value...)
	w.prevKey = append(w.prevKey[:0], key...)
	w.sinceRestart++
	w.nEntries++
}

// empty reports whether no entry was added since the last reset.
func (w *blockWriter) empty() bool { return w.nEntries == 0 }

// estimatedSize returns the size finish would return now.
func (w *blockWriter) estimatedSize() int { return len(w.buf) + 4*len(w.restarts) + 4 }

// finish appends the restart array and returns the block's contents (an
// empty block has no restart points). They alias the writer's buffer and stay valid until the next reset.
func (w *blockWriter) finish() []byte {
	for _, r := range w.restarts {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, r)
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(w.restarts)))
	return w.buf
}

// reset empties the writer, keeping its buffers.
func (w *blockWriter) reset() {
	w.buf = w.buf[:0]
	w.restarts = w.restarts[:0]
	w.sinceRestart = 0
	w.nEntries = 0
	w.prevKey = w.prevKey[:0]
}
