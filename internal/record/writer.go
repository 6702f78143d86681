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
		w.n += putChunk(w.block[w.n:], w.hdr, w.logNum, chunkType(first, last), p[:frag], uint16(frag))
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

// pendingLength is the length field of a chunk that Reservation.Encode
// stores and Reservation.Complete overwrites: longer than any chunk's
// payload, it makes the chunk invalid, whatever its other bytes hold.
const pendingLength = 0xffff

// A Reservation is the place in the stream of one record that
// Writer.Reserve appended without encoding it. The record's bytes are
// the caller's to store, in two steps and from any goroutine, while the
// Writer appends more records after them:
//
//   - Encode stores every byte of the record but each chunk's length
//     field, which it leaves at pendingLength: no chunk of the record
//     reads as valid yet, however much of it is stored.
//   - Complete stores the length fields, first chunk first: from then on
//     the record reads back whole.
//
// So several records may be encoded at once, each by its own writer,
// and a reader never finds a valid chunk after an incomplete one as long
// as the records are completed in stream order: a process killed in
// mid-stream leaves a torn tail, as one writer would.
type Reservation struct {
	// Start and End are the stream offsets of the record's bytes: from
	// the zero padding of a block's tail that it starts with, if any, to
	// just past its last chunk.
	Start, End int64
	n          int // the record's length
	hdr        int
	logNum     uint32
}

// Reserve appends a record of n bytes to the stream, as WriteRecord
// would, but leaves its bytes to the caller (see Reservation), who
// stores them where the stream's bytes from Start on go. Nothing may be
// buffered: call it after Flush. ok is false, and nothing changed, when
// something is, when the record would take more than room bytes, or when
// the Writer has failed.
func (w *Writer) Reserve(n, room int) (r Reservation, ok bool) {
	if w.err != nil || w.flushed != w.n {
		return Reservation{}, false
	}
	length := w.recordLen(n)
	if length > room {
		return Reservation{}, false
	}
	r = Reservation{Start: w.Size(), n: n, hdr: w.hdr, logNum: w.logNum}
	r.End = r.Start + int64(length)
	w.blockStart = r.End - r.End%blockSize
	w.n = int(r.End % blockSize)
	w.flushed = w.n
	return r, true
}

// Encode stores the record p, of the length reserved, into dst, the
// stream's bytes from r.Start to r.End, with every chunk incomplete (see
// Reservation). It stores in ascending order.
func (r Reservation) Encode(dst, p []byte) {
	if len(p) != r.n || len(dst) != int(r.End-r.Start) {
		panic("record: Encode of a record other than the one reserved")
	}
	if r.oneChunk() {
		putChunk(dst, r.hdr, r.logNum, chunkFull, p, pendingLength)
		return
	}
	if left := blockSize - int(r.Start%blockSize); left < r.hdr {
		clear(dst[:left]) // a block's tail too short for a header
	}
	r.chunks(func(at int, typ byte, from, to int) {
		putChunk(dst[at:], r.hdr, r.logNum, typ, p[from:to], pendingLength)
	})
}

// Complete stores the length field of each chunk of the record that
// Encode stored into dst, first chunk first: the record is then valid.
func (r Reservation) Complete(dst []byte) {
	if r.oneChunk() {
		binary.LittleEndian.PutUint16(dst[4:6], uint16(r.n))
		return
	}
	r.chunks(func(at int, _ byte, from, to int) {
		binary.LittleEndian.PutUint16(dst[at+4:at+6], uint16(to-from))
	})
}

// oneChunk reports whether the record is one chunk at r.Start, with no
// padding before it (a second chunk, or padding, would take more bytes):
// most are, and they are stored without walking the chunks.
func (r Reservation) oneChunk() bool { return r.End-r.Start == int64(r.hdr+r.n) }

// chunks calls fn for each chunk of the record, in order, with the
// chunk's offset from r.Start, its type and the range of the record it
// holds. Only the first chunk may follow padding: every other starts a
// block. The first may hold nothing, where its header fills a block's
// tail.
func (r Reservation) chunks(fn func(at int, typ byte, from, to int)) {
	pos, at, from := int(r.Start%blockSize), 0, 0
	for first := true; ; first = false {
		if blockSize-pos < r.hdr {
			at += blockSize - pos
			pos = 0
		}
		frag := min(r.n-from, blockSize-pos-r.hdr)
		last := from+frag == r.n
		fn(at, chunkType(first, last), from, from+frag)
		at += r.hdr + frag
		pos = (pos + r.hdr + frag) % blockSize
		from += frag
		if last {
			return
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

// putChunk stores a chunk of type typ (its legacy type) holding payload
// at the start of dst, which has room for it, in the format of hdr bytes
// of header, and returns its length. Its length field holds length: the
// payload's, or pendingLength (see Reservation). The header is stored
// before the payload and the checksum last, so a process killed in
// mid-chunk leaves a chunk whose checksum fails.
func putChunk(dst []byte, hdr int, logNum uint32, typ byte, payload []byte, length uint16) int {
	h := dst[:hdr]
	binary.LittleEndian.PutUint16(h[4:6], length)
	h[6] = typ
	if hdr == recyclableHeaderSize {
		h[6] += recyclableOffset
		binary.LittleEndian.PutUint32(h[7:11], logNum)
	}
	end := hdr + copy(dst[hdr:], payload)
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
