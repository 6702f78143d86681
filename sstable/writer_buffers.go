package sstable

import (
	"bufio"
	"io"
	"sync"
)

// writeBufferSize is the size of a Writer's file buffer.
const writeBufferSize = 64 << 10

// maxPooledBuffer bounds a buffer kept for the next Writer: one grown by an
// outsized entry or table is left to the garbage collector instead of
// being held by the pool.
const maxPooledBuffer = 4 << 20

// writerBuffers is the memory a Writer reuses from block to block: the
// file buffer, the pending data and index blocks, the compression output,
// the filters and the key scratch space. Close hands it to the next Writer
// through writerBufferPool, so a store that writes table after table
// (flushes, compactions) allocates it once, not per table and per block;
// the garbage it would make costs collections and, allocated during a
// collection's mark phase, counts as live heap.
type writerBuffers struct {
	buf   *bufio.Writer
	data  blockWriter
	index blockWriter

	snappy   []byte // compressed data, filter, properties and metaindex blocks
	indexOut []byte // the compressed index, kept until it is written last

	scratch    []byte // encoded keys
	sepBuf     []byte // index separators
	prevKeyBuf []byte // the last key added

	filters, lengths []byte // the filter block's parts (filterBlockWriter)
}

var writerBufferPool = sync.Pool{New: func() any {
	return &writerBuffers{buf: bufio.NewWriterSize(nil, writeBufferSize)}
}}

// getWriterBuffers returns buffers, empty, whose file buffer writes to f.
func getWriterBuffers(f io.Writer) *writerBuffers {
	b := writerBufferPool.Get().(*writerBuffers)
	b.buf.Reset(f)
	return b
}

// putWriterBuffers empties b, forgets its file and keeps it for the next
// Writer. The caller must hold no slice into b afterwards.
func putWriterBuffers(b *writerBuffers) {
	b.buf.Reset(nil)
	b.data.reset()
	b.index.reset()
	for _, p := range []*[]byte{&b.data.buf, &b.data.prevKey, &b.index.buf, &b.index.prevKey,
		&b.snappy, &b.indexOut, &b.scratch, &b.sepBuf, &b.prevKeyBuf, &b.filters, &b.lengths} {
		*p = poolable(*p)
	}
	if cap(b.data.restarts) > maxPooledBuffer/4 {
		b.data.restarts = nil
	}
	if cap(b.index.restarts) > maxPooledBuffer/4 {
		b.index.restarts = nil
	}
	writerBufferPool.Put(b)
}

// poolable returns p emptied, or nil when it is too large to keep.
func poolable(p []byte) []byte {
	if cap(p) > maxPooledBuffer {
		return nil
	}
	return p[:0]
}
