package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Reader reads back the records of a stream written by a Writer. It is not
// safe for concurrent use.
type Reader struct {
	r    io.Reader
	name string
	// block holds the current block; pos is the read position in it.
	// blockStart is the block's stream offset.
	block      []byte
	pos        int
	blockStart int64
	// last is set once r is exhausted: block is the final block.
	last bool
	// recordStart and recordEnd bound the record Next returned last: the
	// stream offsets of its first byte and just past its last chunk.
	recordStart, recordEnd int64
	// err is io.EOF, a corruption or an I/O error; once set, Next returns it.
	err error
}

// NewReader returns a Reader of the stream r. name (usually the file's
// name) is used in errors.
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{r: r, name: name, block: make([]byte, 0, blockSize)}
}

// Next returns the next record. The slice is the caller's to keep.
//
// At the end of the log Next returns io.EOF, both at a clean end and at a
// torn tail (an incomplete or garbled last record with nothing valid after
// it: a crash while appending). Damage followed by valid data gives an error
// wrapping base.ErrCorruption that names the file and the damaged offset.
// After an error every call returns it again.
func (r *Reader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	var rec []byte
	inRecord := false
	var start int64
	for {
		typ, payload, off, err := r.nextChunk()
		if err != nil {
			if errors.Is(err, errBadChunk) {
				err = r.damaged(off, err)
			}
			r.err = err
			return nil, err
		}
		if !inRecord {
			start = off
		}
		switch {
		case (typ == chunkFull || typ == chunkFirst) && inRecord:
			r.err = r.corrupt(start, "record has no last fragment")
		case (typ == chunkMiddle || typ == chunkLast) && !inRecord:
			r.err = r.corrupt(off, "fragment of a record whose start is missing")
		}
		if r.err != nil {
			return nil, r.err
		}
		rec = append(rec, payload...)
		inRecord = typ == chunkFirst || typ == chunkMiddle
		if !inRecord {
			r.recordStart, r.recordEnd = start, r.offset()
			if rec == nil {
				rec = []byte{}
			}
			return rec, nil
		}
	}
}

// Offset returns the stream offset of the record Next returned last.
func (r *Reader) Offset() int64 { return r.recordStart }

// End returns the stream offset just past the record Next returned last (0
// before the first). Once Next has returned io.EOF, a stream whose length
// equals End ends cleanly; a longer one has a torn tail, and a Writer must
// not continue it (NewWriterAt).
func (r *Reader) End() int64 { return r.recordEnd }

func (r *Reader) offset() int64 { return r.blockStart + int64(r.pos) }

// errBadChunk marks a chunk that is truncated or fails its checks.
var errBadChunk = errors.New("chunk fails its checksum, type or length check")

// nextChunk returns the next chunk's type, payload (aliasing the block) and
// stream offset; io.EOF when the stream holds no further header; or, with
// the offset, an error wrapping errBadChunk when the chunk there is damaged.
func (r *Reader) nextChunk() (typ byte, payload []byte, off int64, err error) {
	for r.pos+headerSize > len(r.block) {
		if r.last {
			return 0, nil, r.offset(), io.EOF
		}
		if err := r.readBlock(); err != nil {
			return 0, nil, r.offset(), err
		}
	}
	off = r.offset()
	typ, n, ok := chunkAt(r.block, r.pos)
	if !ok {
		return 0, nil, off, errBadChunk
	}
	payload = r.block[r.pos+headerSize : r.pos+headerSize+n]
	r.pos += headerSize + n
	return typ, payload, off, nil
}

// chunkAt reports whether a valid chunk starts at b[pos:], lying wholly
// within b, and returns its type and payload length.
func chunkAt(b []byte, pos int) (typ byte, n int, ok bool) {
	if pos+headerSize > len(b) {
		return 0, 0, false
	}
	h := b[pos : pos+headerSize]
	typ, n = h[6], int(binary.LittleEndian.Uint16(h[4:6]))
	if typ < chunkFull || typ > chunkLast || pos+headerSize+n > len(b) {
		return 0, 0, false
	}
	if checksum(b[pos+6:pos+headerSize+n]) != binary.LittleEndian.Uint32(h[0:4]) {
		return 0, 0, false
	}
	return typ, n, true
}

// readBlock replaces the current block with the next one from the stream.
func (r *Reader) readBlock() error {
	r.blockStart += int64(len(r.block))
	r.pos = 0
	n, err := io.ReadFull(r.r, r.block[:blockSize])
	r.block = r.block[:n]
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		r.last = true
	case err != nil:
		return fmt.Errorf("record: %s: read at offset %d: %w", r.name, r.blockStart, err)
	}
	return nil
}

// damaged decides what damage at stream offset off means: a torn tail
// (io.EOF) when no valid chunk follows it, corruption otherwise.
func (r *Reader) damaged(off int64, cause error) error {
	found, at, err := r.scanForChunk(off + 1)
	switch {
	case err != nil:
		return err
	case !found:
		return io.EOF
	}
	return r.corrupt(off, fmt.Sprintf("%v, and valid data follows at offset %d", cause, at))
}

// scanForChunk looks for a valid chunk starting at any stream offset from
// `from` on, consuming the stream. It only runs once damage is found, so it
// may be slow; it stops at the first valid chunk.
func (r *Reader) scanForChunk(from int64) (found bool, at int64, err error) {
	for {
		for p := max(0, int(from-r.blockStart)); p+headerSize <= len(r.block); p++ {
			if _, _, ok := chunkAt(r.block, p); ok {
				return true, r.blockStart + int64(p), nil
			}
		}
		if r.last {
			return false, 0, nil
		}
		if err := r.readBlock(); err != nil {
			return false, 0, err
		}
	}
}

func (r *Reader) corrupt(off int64, what string) error {
	return base.CorruptionErrorf("record: %s: offset %d: %s", r.name, off, what)
}
