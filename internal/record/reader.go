package record

import (
	"bytes"
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
	// logNum is the log number of this stream's recyclable chunks, and
	// recyclable whether such chunks are accepted (NewLogReader).
	logNum     uint32
	recyclable bool
	// format is the header size of the stream's chunks, which tells
	// legacy from recyclable: 0 until the first valid chunk is read,
	// unless fixed, when the caller knows it (RecyclableFormat).
	format int
	fixed  bool
	// foreignChunk is the last chunk nextChunk found not of this log;
	// foreign is that chunk, and foreignOff its offset, when the stream
	// ended at it.
	foreignChunk, foreign chunkInfo
	foreignOff            int64
	// recordStart and recordEnd bound the record Next returned last: the
	// stream offsets of its first byte and just past its last chunk.
	recordStart, recordEnd int64
	// unwritten is set by AllowUnwritten; hole, holeAt and resumeAt
	// describe the unwritten pages the stream ended at, if it did.
	unwritten        bool
	hole             bool
	holeAt, resumeAt int64
	// claimedFrom and claimedTo bound the payload the damaged chunk's
	// header claims, while damaged scans past it (see unwrittenAt).
	claimedFrom, claimedTo int64
	// err is io.EOF, a corruption or an I/O error; once set, Next returns it.
	err error
}

// NewReader returns a Reader of the stream r, a stream of legacy chunks
// (a MANIFEST). name (usually the file's name) is used in errors.
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{r: r, name: name, block: make([]byte, 0, blockSize), format: headerSize}
}

// LogFormat is what a log's reader knows of the format of its chunks.
type LogFormat uint8

const (
	// DetectFormat reads a log of either chunk format, legacy or
	// recyclable, as its first valid chunk shows: the WAL of a store that
	// does not record its WALs' format. A damaged byte decides nothing.
	DetectFormat LogFormat = iota
	// RecyclableFormat reads a log known to be written in recyclable
	// chunks: a legacy chunk is damage, never the log's format.
	RecyclableFormat
)

// NewLogReader returns a Reader of a WAL written in chunks of format, of
// log number logNum (the low 32 bits of the log's file number) where
// they are recyclable. The stream ends at the first valid chunk that
// does not belong to it, of another log number, or of the other format
// once the format is known: the remains of the log the file held before
// it was recycled.
func NewLogReader(r io.Reader, name string, logNum uint32, format LogFormat) *Reader {
	lr := &Reader{r: r, name: name, block: make([]byte, 0, blockSize), logNum: logNum, recyclable: true}
	if format == RecyclableFormat {
		lr.format, lr.fixed = recyclableHeaderSize, true
	}
	return lr
}

// EndedAtLog reports whether the stream ended (Next returned io.EOF) at a
// valid recyclable chunk of another log, and returns that log's number
// and the chunk's offset: the remains of the log a recycled file held
// before, or of a log copied into this one's file.
func (r *Reader) EndedAtLog() (logNum uint32, off int64, ok bool) {
	f := r.foreign
	return f.logNum, r.foreignOff, f.hdr == recyclableHeaderSize
}

// Recyclable reports whether the stream read so far is of recyclable
// chunks; false for a legacy or empty stream.
func (r *Reader) Recyclable() bool { return r.format == recyclableHeaderSize }

// pageSize is the granularity at which a file system writes a file's
// pages back from the page cache: the unit of an unwritten hole.
const pageSize = 4096

// AllowUnwritten makes damage followed by valid data end the stream as a
// torn tail (io.EOF), not corruption, when the damaged bytes hold what a
// crash leaves where the file system never wrote a page: a whole page of
// zeros (page-aligned in the stream, which must start at the file's
// offset 0), or a valid chunk of an older log (the remains of a recycled
// file). For the WAL being written at a crash of the machine: its pages
// not yet synced reach the disk in any order, or not at all, and the
// records after a page that never did were never synced (a sync writes
// every page before it), so never acknowledged as durable. Damage of any
// other kind followed by valid data is still corruption, and so is an
// unwritten page that nothing tells from damage: one within the payload
// of the damaged chunk (see unwrittenAt), or one of a recycled file that
// holds no whole chunk of the older log.
func (r *Reader) AllowUnwritten() { r.unwritten = true }

// Unwritten reports whether the stream ended at damage AllowUnwritten
// took for unwritten pages, and returns the stream offset of the damage
// and that of the valid chunk after it, the first of those dropped.
func (r *Reader) Unwritten() (at, resume int64, ok bool) {
	return r.holeAt, r.resumeAt, r.hole
}

// ReadPastUnwritten, once the stream ended at unwritten pages (see
// Unwritten), makes Next go on from the first record that starts after
// them: the chunks there that continue a record begun in the hole are
// skipped. It does nothing otherwise. What Next reads then are the records
// AllowUnwritten dropped, for a caller that must know what they hold.
func (r *Reader) ReadPastUnwritten() {
	if !r.hole || !errors.Is(r.err, io.EOF) {
		return
	}
	r.err = nil
	r.pos = int(r.resumeAt - r.blockStart) // scanForChunk stopped in this block
	for {
		typ, _, off, err := r.nextChunk()
		if err != nil {
			if errors.Is(err, errBadChunk) || errors.Is(err, errForeignChunk) {
				err = io.EOF // no record starts after the hole
			}
			r.err = err
			return
		}
		if typ == chunkFull || typ == chunkFirst {
			r.pos = int(off - r.blockStart) // the chunk is in the block read last
			return
		}
	}
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
			switch {
			case errors.Is(err, errForeignChunk) && !inRecord:
				r.foreign, r.foreignOff = r.foreignChunk, off
				err = io.EOF
			case errors.Is(err, errBadChunk) || errors.Is(err, errForeignChunk):
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

// errBadChunk marks a chunk that is truncated or fails its checks;
// errForeignChunk a valid chunk of another log (see NewLogReader).
var (
	errBadChunk     = errors.New("chunk fails its checksum, type or length check")
	errForeignChunk = errors.New("chunk belongs to another log")
)

// nextChunk returns the next chunk's type, payload (aliasing the block) and
// stream offset; io.EOF when the stream holds no further header; or, with
// the offset, an error wrapping errBadChunk or errForeignChunk when the
// chunk there is damaged or not of this log.
func (r *Reader) nextChunk() (typ byte, payload []byte, off int64, err error) {
	for len(r.block)-r.pos < max(r.format, headerSize) {
		// A block tail too short for a header is padding.
		if r.last {
			return 0, nil, r.offset(), io.EOF
		}
		if err := r.readBlock(); err != nil {
			return 0, nil, r.offset(), err
		}
	}
	off = r.offset()
	c, ok := chunkAt(r.block, r.pos)
	switch {
	case ok && r.fixed && c.hdr != r.format && off == 0:
		// Where a log's first chunk belongs, only a crash's garbage or
		// an earlier log of the same format may lie: this is neither.
		return 0, nil, off, r.corrupt(off, "a chunk of the other format begins a log whose format is known")
	case !ok || (c.hdr == recyclableHeaderSize && !r.recyclable) || (r.fixed && c.hdr != r.format):
		return 0, nil, off, errBadChunk
	case !r.ours(c):
		r.foreignChunk = c
		return 0, nil, off, errForeignChunk
	}
	r.format = c.hdr
	payload = r.block[r.pos+c.hdr : r.pos+c.hdr+c.n]
	r.pos += c.hdr + c.n
	return c.typ, payload, off, nil
}

// formatOf returns the header size a chunk type byte announces, 0 for a
// byte that is no chunk type. It is a claim to check, never a decision: a
// log's format comes from its caller or from a chunk whose checksum
// verifies, so that one damaged type byte cannot make the whole log read
// as another format's, and so as a torn tail.
func formatOf(typ byte) int {
	switch {
	case typ >= chunkFull && typ <= chunkLast:
		return headerSize
	case typ > chunkLast && typ <= chunkMax:
		return recyclableHeaderSize
	}
	return 0
}

// ours reports whether the valid chunk c belongs to this log: it is of the
// stream's format (any, while that is unknown), and a recyclable chunk
// carries the log's number.
func (r *Reader) ours(c chunkInfo) bool {
	if c.hdr == recyclableHeaderSize && (!r.recyclable || c.logNum != r.logNum) {
		return false
	}
	return r.format == 0 || r.format == c.hdr
}

// chunkInfo is a chunk's header, decoded.
type chunkInfo struct {
	typ    byte // chunkFull..chunkLast, whatever the format
	hdr    int  // header size: headerSize or recyclableHeaderSize
	n      int  // payload length
	logNum uint32
}

// chunkAt reports whether a valid chunk starts at b[pos:], lying wholly
// within b, and returns its header.
func chunkAt(b []byte, pos int) (c chunkInfo, ok bool) {
	if pos+headerSize > len(b) {
		return c, false
	}
	h := b[pos:]
	c.hdr, c.n = formatOf(h[6]), int(binary.LittleEndian.Uint16(h[4:6]))
	if c.hdr == 0 || pos+c.hdr+c.n > len(b) {
		return c, false
	}
	c.typ = h[6]
	if c.hdr == recyclableHeaderSize {
		c.typ -= recyclableOffset
		c.logNum = headerLogNum(h)
	}
	if checksum(b[pos+6:pos+c.hdr+c.n]) != binary.LittleEndian.Uint32(h[0:4]) {
		return c, false
	}
	return c, true
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
//
// With AllowUnwritten, damage followed by valid data is a torn tail too
// when the bytes from the damage to that data look unwritten.
func (r *Reader) damaged(off int64, cause error) error {
	r.claimedFrom, r.claimedTo = r.claimedPayload(off)
	var chunk []byte // the damaged chunk's block from off on
	if r.unwritten {
		chunk = bytes.Clone(r.block[off-r.blockStart:])
	}
	found, at, unwritten, err := r.scanForChunk(off)
	switch {
	case err != nil:
		return err
	case !found:
		return io.EOF
	case unwritten && !r.mendable(chunk, at-off):
		r.hole, r.holeAt, r.resumeAt = true, off, at
		return io.EOF
	}
	return r.corrupt(off, fmt.Sprintf("%v, and valid data follows at offset %d", cause, at))
}

// mendable reports whether chunk (a copy of a block's bytes from a
// damaged chunk's start on, whose type byte it overwrites), up to the
// next valid chunk, span bytes after it, is a chunk of this log's format
// whose length or type byte alone is damaged: with
// the length its extent gives (up to span, less a block tail's padding)
// and some type, its checksum verifies. The length is outside the
// checksum, so such a chunk claims another payload than its own, and its
// damage is a flipped bit, not pages never written, whatever it holds.
// A valid chunk of an older log is not one: its checksum verifies with
// its own length, which ends at the next valid chunk of this log when it
// fills a block, and it is what an unwritten page of a recycled file
// holds (see unwrittenAt).
func (r *Reader) mendable(chunk []byte, span int64) bool {
	hdr := r.format
	if hdr == 0 || len(chunk) < hdr {
		return false
	}
	if hdr == recyclableHeaderSize && headerLogNum(chunk) < r.logNum {
		return false
	}
	end := int(min(span, int64(len(chunk))))
	want := binary.LittleEndian.Uint32(chunk[0:4])
	first, last := byte(chunkFull), byte(chunkLast)
	if hdr == recyclableHeaderSize {
		first, last = first+recyclableOffset, last+recyclableOffset
	}
	for n := end; n >= max(hdr, end-hdr); n-- { // a block's padding is shorter than a header
		for typ := first; typ <= last; typ++ {
			chunk[6] = typ
			if checksum(chunk[6:n]) == want {
				return true
			}
		}
	}
	return false
}

// scanForChunk looks for a valid chunk of this log starting at any stream
// offset after the damage at off, consuming the stream. It only runs once
// damage is found, so it may be slow; it stops at the first such chunk.
// The remains of an earlier log in a recycled file are not of this log:
// they are scanned over, cheaply (see mayBeOurs). With AllowUnwritten it
// also reports whether the bytes it scanned, from off to the chunk,
// looked unwritten (see unwrittenAt).
func (r *Reader) scanForChunk(off int64) (found bool, at int64, unwritten bool, err error) {
	for {
		for p := max(0, int(off-r.blockStart)); p+headerSize <= len(r.block); p++ {
			if r.blockStart+int64(p) > off && r.mayBeOurs(p) {
				if c, ok := chunkAt(r.block, p); ok && r.ours(c) {
					return true, r.blockStart + int64(p), unwritten, nil
				}
			}
			unwritten = unwritten || (r.unwritten && r.unwrittenAt(p))
		}
		if r.last {
			return false, 0, unwritten, nil
		}
		if err := r.readBlock(); err != nil {
			return false, 0, unwritten, err
		}
	}
}

// unwrittenAt reports whether the block at position p begins what a page
// the file system never wrote leaves: a whole page of zeros, p being a
// page's start, or a valid chunk of an older log. No damage to written
// bytes makes a chunk of an older log whose checksum verifies. Either
// counts only outside the payload the damaged chunk's header claims, if
// it has a sane one: a record may hold a page of zeros, or an old log,
// of its own, and a flipped bit elsewhere in its chunk must read as
// corruption. (A page never written within one chunk of several pages
// then reads as corruption too.)
func (r *Reader) unwrittenAt(p int) bool {
	start := r.blockStart + int64(p)
	if start%pageSize == 0 && p+pageSize <= len(r.block) && allZero(r.block[p:p+pageSize]) &&
		(start < r.claimedFrom || start+pageSize > r.claimedTo) {
		return true
	}
	h := r.block[p:]
	if formatOf(h[6]) != recyclableHeaderSize || p+recyclableHeaderSize > len(r.block) ||
		headerLogNum(h) >= r.logNum {
		return false
	}
	c, ok := chunkAt(r.block, p)
	return ok && c.hdr == recyclableHeaderSize && c.logNum < r.logNum &&
		(start < r.claimedFrom || start+int64(c.hdr+c.n) > r.claimedTo)
}

// claimedPayload returns the stream offsets of the payload the chunk
// header at off, in the current block, claims, if it is a sane header of
// this log's format (a type, a length that fits in the block); an empty
// range otherwise.
func (r *Reader) claimedPayload(off int64) (from, to int64) {
	p := int(off - r.blockStart)
	if p < 0 || p+headerSize > len(r.block) {
		return 0, 0
	}
	h := r.block[p:]
	hdr, n := formatOf(h[6]), int(binary.LittleEndian.Uint16(h[4:6]))
	if hdr == 0 || (r.format != 0 && hdr != r.format) || p+hdr+n > len(r.block) {
		return 0, 0
	}
	return off + int64(hdr), off + int64(hdr+n)
}

// allZero reports whether b holds zeros alone.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// mayBeOurs is the cheap test of scanForChunk: whether the header at
// block position p has a type of this log's format and, in a recyclable
// log, its number. Only then is the checksum worth computing.
func (r *Reader) mayBeOurs(p int) bool {
	h := r.block[p:]
	f := formatOf(h[6])
	switch {
	case f == 0 || (r.format != 0 && f != r.format):
		return false
	case f == recyclableHeaderSize:
		return r.recyclable && p+recyclableHeaderSize <= len(r.block) &&
			headerLogNum(h) == r.logNum
	}
	return true
}

func (r *Reader) corrupt(off int64, what string) error {
	return base.CorruptionErrorf("record: %s: offset %d: %s", r.name, off, what)
}

// headerLogNum returns the log number of the recyclable chunk header at
// h, which holds one whole.
func headerLogNum(h []byte) uint32 { return binary.LittleEndian.Uint32(h[7:11]) }
