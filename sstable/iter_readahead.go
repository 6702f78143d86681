package sstable

import (
	"slices"
	"sync"
)

// dataBlock returns the contents of data block i for the iterator: for a
// compaction iterator, from the cache or read into its buffer through its
// readahead (see IterOptions.Compaction); otherwise from the cache, or
// from the file and then cached, read on its own or, once the iterator
// has read scanReadaheadAfter blocks in a row from the file, each next to
// the one before in the same direction, through its readahead (backward
// for a backward pass). stats may be nil.
func (it *Iter) dataBlock(i int, stats *LookupStats) ([]byte, error) {
	r := it.r
	if b := r.cachedBlock(i); b != nil {
		return b, nil
	}
	if it.compaction {
		b, err := it.ahead.block(r, r.blocks[i].handle, it.blockBuf, false)
		if err == nil {
			it.blockBuf = b
		}
		return b, err
	}
	if d := i - it.lastRead; (d == 1 || d == -1) && (it.readsInRow == 1 || d == it.readStep) {
		it.readsInRow++
		it.readStep = d
	} else {
		it.readsInRow = 1
	}
	it.lastRead = i
	var ra *readahead
	if it.readsInRow >= scanReadaheadAfter {
		ra = &it.ahead
	}
	return r.readDataBlock(i, stats, ra, it.readStep < 0)
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
}

// reset forgets the bytes held, keeping the buffer: the next block is
// read from the file, whichever table it belongs to.
func (ra *readahead) reset() { ra.buf = ra.buf[:0] }

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
// block, if larger) read from h on, up to the footer; or, for a pass
// moving backward (back), the bytes up to the end of h's trailer, from
// the file's start on at most.
func (ra *readahead) block(r *Reader, h BlockHandle, dst []byte, back bool) ([]byte, error) {
	if err := r.checkHandle(h); err != nil {
		return nil, err
	}
	end := h.Offset + h.Length + blockTrailerLen
	if h.Offset < ra.off || end > ra.off+uint64(len(ra.buf)) {
		from, n := h.Offset, max(min(compactionReadahead, r.dataEnd-h.Offset), end-h.Offset)
		if back {
			n = max(min(compactionReadahead, end), end-h.Offset)
			from = end - n
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
