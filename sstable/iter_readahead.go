package sstable

import (
	"slices"
	"sync"
)

// dataBlock returns the contents of data block i for the iterator: for a
// compaction iterator, from the cache or read into its buffer through its
// readahead (see IterOptions.Compaction); otherwise from the cache, or
// from the file and then cached: on its own, or through the iterator's
// readahead once the reads make a scan (readahead.scan). stats may be
// nil.
func (it *Iter) dataBlock(i int, stats *LookupStats) ([]byte, error) {
	r := it.r
	if b := r.cachedBlock(i); b != nil {
		return b, nil
	}
	if it.compaction {
		b, err := it.ahead.block(r, r.blocks[i].handle, it.blockBuf)
		if err == nil {
			it.blockBuf = b
		}
		return b, err
	}
	var ra *readahead
	if it.ahead.scan(i) {
		ra = &it.ahead
	}
	return r.readDataBlock(i, stats, ra)
}

// scanReadaheadAfter is how many blocks in a row an iterator reads from
// the file, each next to the last in one direction, before it reads
// ahead: a scan, not a seek reading a block or two. A scan of a table the
// cache does not hold then costs one system call per compactionReadahead
// bytes rather than one per block, which took a quarter of a forward
// scan's time.
const scanReadaheadAfter = 3

// compactionReadahead is how many bytes of the file a compaction
// iterator, or a scanning one (see scanReadaheadAfter), reads at once,
// from the block it needs on: the blocks after it, which a pass over the
// table reads next, come from memory, and a table of 4 KiB blocks is read
// with one system call per 16 blocks rather than one per block, which
// took a fifth of a scan's time when the file is in the page cache
// (BenchmarkCompactionScan). Reading more at once saved little more, and
// a compaction holds a readahead per L0 table it merges.
const compactionReadahead = 64 << 10

// readahead holds bytes of one table's file read ahead of a pass over its
// blocks: a compaction's, forward, or a scan's, either way.
type readahead struct {
	buf []byte // the file's bytes from off on
	off uint64
	// For an ordinary iterator (see scan): last is the last block read
	// from the file, and inRow how many reads in a row were each of the
	// block step (+1 or -1) away from the one before; 0 before the first.
	last, inRow, step int
}

// reset forgets the bytes held, keeping the buffer, and the reads counted
// by scan: the next block is read from the file, whichever table it
// belongs to.
func (ra *readahead) reset() { ra.buf, ra.inRow, ra.step = ra.buf[:0], 0, 0 }

// scan counts the read of block i from the file and reports whether the
// reads make a scan, to be read ahead: scanReadaheadAfter of them in a
// row, each of the block next to the one before in the same direction.
// block then reads backward when the scan does.
func (ra *readahead) scan(i int) bool {
	if d := i - ra.last; ra.inRow > 0 && (d == 1 || d == -1) && (ra.inRow == 1 || d == ra.step) {
		ra.inRow++
		ra.step = d
	} else {
		ra.inRow, ra.step = 1, 0
	}
	ra.last = i
	return ra.inRow >= scanReadaheadAfter
}

// readaheadPool keeps the buffers of iterators closed, of
// compactionReadahead bytes, for the next: a compaction opens an iterator
// per input table, and a scan one per table it reaches.
var readaheadPool = sync.Pool{New: func() any { return new([compactionReadahead]byte) }}

// release hands the buffer to readaheadPool, if it came from there.
func (ra *readahead) release() {
	if cap(ra.buf) == compactionReadahead {
		readaheadPool.Put((*[compactionReadahead]byte)(ra.buf[:compactionReadahead]))
	}
	ra.buf = nil
}

// block returns the contents of r's block h, in dst's memory as
// Reader.readBlockInto describes, from the bytes held when they hold the
// block and its trailer, else from compactionReadahead bytes (or the
// block, if larger) read from h on, up to the footer; or, for a scan
// moving backward, the bytes up to the end of h's trailer, from the
// file's start on at most.
func (ra *readahead) block(r *Reader, h BlockHandle, dst []byte) ([]byte, error) {
	if err := r.checkHandle(h); err != nil {
		return nil, err
	}
	end := h.Offset + h.Length + blockTrailerLen
	if h.Offset < ra.off || end > ra.off+uint64(len(ra.buf)) {
		var from, n uint64
		if ra.step < 0 {
			n = max(min(compactionReadahead, end), end-h.Offset)
			from = end - n
		} else {
			n = max(min(compactionReadahead, r.dataEnd-h.Offset), end-h.Offset)
			from = h.Offset
		}
		if ra.buf == nil && n <= compactionReadahead {
			ra.buf = readaheadPool.Get().(*[compactionReadahead]byte)[:0]
		}
		ra.buf = slices.Grow(ra.buf[:0], int(n))[:n]
		if err := r.readAt(ra.buf, from); err != nil {
			ra.reset()
			return nil, err
		}
		ra.off = from
	}
	return r.checkBlock(ra.buf[h.Offset-ra.off:end-ra.off], h.Offset, dst)
}
