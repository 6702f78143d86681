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
		w.n += w.encodeChunk(w.block[w.n:], chunkType(first, last), p[:frag])
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

// WriteRecordInto appends p as one record, as WriteRecord does, but
// encodes it straight into dst, which stands for the stream's bytes from
// Size() on (a mapping of the file, say), and not into the Writer's
// buffer, so the record costs one copy and no Flush. Nothing may be
// buffered: call it after Flush. It returns the stream offset of the
// record's first chunk and the bytes of dst it filled, the zero padding
// of a block's end included; ok is false, and nothing changed, when dst
// is too short for the record, or the Writer has failed.
//
// The chunks are stored in ascending order, each header before its
// payload and its checksum last, so a process killed in mid-record leaves
// a torn tail, never a valid chunk after damage.
func (w *Writer) WriteRecordInto(dst, p []byte) (start int64, n int, ok bool) {
	if w.err != nil || w.flushed != w.n || w.recordLen(len(p)) > len(dst) {
		return 0, 0, false
	}
	for first := true; ; first = false {
		if blockSize-w.n < w.hdr {
			pad := blockSize - w.n
			clear(dst[n : n+pad])
			n += pad
			w.n = blockSize
			w.nextBlock()
		}
		if first {
			start = w.Size()
		}
		frag := min(len(p), blockSize-w.n-w.hdr)
		last := frag == len(p)
		c := w.encodeChunk(dst[n:], chunkType(first, last), p[:frag])
		n += c
		w.n += c
		w.flushed = w.n
		p = p[frag:]
		if w.n == blockSize {
			w.nextBlock()
		}
		if last {
			return start, n, true
		}
	}
}

// recordLen returns the bytes a record of n bytes takes, appended now:
// its chunks' headers and payloads, and the padding of every block end
// it passes too short for a header.
func (w *Writer) recordLen(n int) int {
	total, pos := 0, w.n
	for first := true; first || n > 0; first = false {
		if blockSize-pos < w.hdr {
			total += blockSize - pos
			pos = 0
		}
		frag := min(n, blockSize-pos-w.hdr)
		total += w.hdr + frag
		pos = (pos + w.hdr + frag) % blockSize
		n -= frag
	}
	return total
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

// encodeChunk stores one chunk of type typ holding payload at the start of
// dst, which has room for it, and returns its length. The header is
// stored before the payload and the checksum last (see WriteRecordInto).
func (w *Writer) encodeChunk(dst []byte, typ byte, payload []byte) int {
	h := dst[:w.hdr]
	binary.LittleEndian.PutUint16(h[4:6], uint16(len(payload)))
	h[6] = typ
	if w.hdr == recyclableHeaderSize {
		h[6] += recyclableOffset
		binary.LittleEndian.PutUint32(h[7:11], w.logNum)
	}
	end := w.hdr + copy(dst[w.hdr:], payload)
	binary.LittleEndian.PutUint32(h[0:4], checksum(dst[6:end]))
	return end
}

// finishBlock writes out the rest of the full current block and starts the
// next one.
func (w *Writer) finishBlock() error {
	if err := w.Flush(); err != nil {
		return err
	}
	w.nextBlock()
	return nil
}

// nextBlock starts the next block once the current one is full and
// written.
func (w *Writer) nextBlock() {
	w.n, w.flushed = 0, 0
	w.blockStart += blockSize
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
