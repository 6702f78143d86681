package record

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cespare/xxhash/v2"
)

const (
	// blockSize is the size of every block but the last.
	blockSize = 32 << 10
	// headerSize is the size of a legacy chunk header.
	headerSize = 7
	// recyclableHeaderSize is the size of a recyclable chunk header: the
	// legacy header and the log number.
	recyclableHeaderSize = headerSize + 4
)

// Chunk types, stored in each chunk header. Zero is never written, so a
// zero-filled region never reads as a chunk. A recyclable chunk's type is
// its legacy type plus recyclableOffset.
const (
	chunkFull   = 1
	chunkFirst  = 2
	chunkMiddle = 3
	chunkLast   = 4

	recyclableOffset = 4
	chunkMax         = chunkLast + recyclableOffset
)

// checksum returns the checksum of a chunk given its type byte followed by
// the rest of its header (the log number, in a recyclable chunk) and its
// payload, which the header layout keeps contiguous.
func checksum(typeAndPayload []byte) uint32 {
	return uint32(xxhash.Sum64(typeAndPayload))
}

// Writer appends records to a stream. It buffers up to one block: records
// reach the underlying writer when a block fills up or on Flush. A Writer is
// not safe for concurrent use.
type Writer struct {
	w io.Writer
	// block holds the current block; n bytes of it are filled, and the
	// first flushed of those have been written to w.
	block      [blockSize]byte
	n, flushed int
	// blockStart is the stream offset of the current block.
	blockStart int64
	// hdr is the size of the chunk headers written: headerSize, or
	// recyclableHeaderSize when the chunks carry logNum.
	hdr    int
	logNum uint32
	// err is the first error of w; once set, every call returns it.
	err error
}

// NewWriter returns a Writer of legacy chunks that starts a new stream on
// w at offset 0.
func NewWriter(w io.Writer) *Writer {
	return NewWriterAt(w, 0)
}

// NewWriterAt returns a Writer of legacy chunks that continues a stream of
// size bytes: w must take the bytes that follow them (an io.OffsetWriter
// at size, say). The stream must end cleanly there, just after a whole
// record (see Reader.End), or appended records would follow damage and
// read as corruption.
func NewWriterAt(w io.Writer, size int64) *Writer {
	n := int(size % blockSize)
	return &Writer{w: w, n: n, flushed: n, blockStart: size - int64(n), hdr: headerSize}
}

// NewRecyclableWriterAt is NewWriterAt for a stream of recyclable chunks,
// each carrying logNum (the low 32 bits of the log's file number): the
// stream may overwrite a file that held another log, whose remains a
// Reader of logNum then takes for the end of this one (see the package
// documentation). size is 0 for a new stream.
func NewRecyclableWriterAt(w io.Writer, size int64, logNum uint32) *Writer {
	lw := NewWriterAt(w, size)
	lw.hdr, lw.logNum = recyclableHeaderSize, logNum
	return lw
}

// WriteRecord appends p as one record and returns the stream offset of its
// first chunk. The record is buffered, not yet durable: call Flush, then
// sync the file. p is not retained.
func (w *Writer) WriteRecord(p []byte) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	var start int64
	for first := true; ; first = false {
		if blockSize-w.n < w.hdr {
			clear(w.block[w.n:])
			w.n = blockSize
			if err := w.finishBlock(); err != nil {
				return 0, err
			}
		}
		if first {
			start = w.Size()
		}
		frag := min(len(p), blockSize-w.n-w.hdr)
		last := frag == len(p)
		w.appendChunk(chunkType(first, last), p[:frag])
		p = p[frag:]
		if w.n == blockSize {
			if err := w.finishBlock(); err != nil {
				return 0, err
			}
		}
		if last {
			return start, nil
		}
	}
}

func chunkType(first, last bool) byte {
	switch {
	case first && last:
		return chunkFull
	case first:
		return chunkFirst
	case last:
		return chunkLast
	}
	return chunkMiddle
}

// appendChunk adds one chunk to the current block, which has room for it.
func (w *Writer) appendChunk(typ byte, payload []byte) {
	h := w.block[w.n : w.n+w.hdr]
	binary.LittleEndian.PutUint16(h[4:6], uint16(len(payload)))
	h[6] = typ
	if w.hdr == recyclableHeaderSize {
		h[6] += recyclableOffset
		binary.LittleEndian.PutUint32(h[7:11], w.logNum)
	}
	copy(w.block[w.n+w.hdr:], payload)
	end := w.n + w.hdr + len(payload)
	binary.LittleEndian.PutUint32(h[0:4], checksum(w.block[w.n+6:end]))
	w.n = end
}

// finishBlock writes out the rest of the full current block and starts the
// next one.
func (w *Writer) finishBlock() error {
	if err := w.Flush(); err != nil {
		return err
	}
	w.n, w.flushed = 0, 0
	w.blockStart += blockSize
	return nil
}

// Flush writes every buffered byte to the underlying writer. It does not
// sync: the caller syncs the file when the records must be durable.
func (w *Writer) Flush() error {
	if w.err != nil || w.flushed == w.n {
		return w.err
	}
	if _, err := w.w.Write(w.block[w.flushed:w.n]); err != nil {
		w.err = fmt.Errorf("record: write: %w", err)
		return w.err
	}
	w.flushed = w.n
	return nil
}

// Size returns the length of the stream written so far, buffered bytes
// included.
func (w *Writer) Size() int64 {
	return w.blockStart + int64(w.n)
}
