package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Scenarios of LevelDB's db/log_test.cc. LevelDB's reader reports damage
// to a Reporter and skips it, reading on; bloomkv's stops: damage with
// nothing valid of the log after it is a torn tail (io.EOF, silently,
// where LevelDB reports dropped bytes), and damage followed by valid
// data is corruption naming the offset (where LevelDB drops what it
// cannot read and returns the records after it), since those records
// were acknowledged and a crash cannot leave valid data after a tear.

// numberString is LevelDB's NumberString.
func numberString(n int) string { return fmt.Sprintf("%d.", n) }

// TestPortLevelDB_ReadWrite ports Empty, ReadWrite, ManyBlocks,
// Fragmentation and RandomRead; io.EOF stays io.EOF on a second read.
func TestPortLevelDB_ReadWrite(t *testing.T) {
	many := 100_000
	if testing.Short() {
		many = 10_000
	}
	var numbers, skewed [][]byte
	for i := range many {
		numbers = append(numbers, []byte(numberString(i)))
	}
	rnd := rand.New(rand.NewPCG(301, 301))
	for i := range 500 {
		// Random::Skewed(17): a length up to 2^17, skewed towards short.
		skewed = append(skewed, []byte(big(numberString(i), rnd.IntN(1<<rnd.IntN(18)))))
	}
	tests := []struct {
		name string
		recs [][]byte
	}{
		{"empty", nil},
		{"read-write", strs("foo", "bar", "", "xxxx")},
		{"many-blocks", numbers},
		{"fragmentation", strs("small", big("medium", 50000), big("large", 100000))},
		{"random-read", skewed},
	}
	forEachFormat(t, func(t *testing.T, f portFormat) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				log, _, _ := f.write(t, tt.recs)
				r := f.newReader(bytes.NewReader(log))
				got, err := readAllRecords(r)
				expectRead(t, got, err, tt.recs, "EOF")
				if _, err := r.Next(); err != io.EOF {
					t.Fatalf("read at EOF: %v", err)
				}
			})
		}
	})
}

// TestPortLevelDB_Trailers ports MarginalTrailer, MarginalTrailer2,
// ShortTrailer and AlignedEof: a first record that leaves exactly a
// header at the block's end, or less. An empty record, or the empty
// first fragment of the next record, fills the header-sized tail (see
// the package documentation); a shorter tail is padding.
func TestPortLevelDB_Trailers(t *testing.T) {
	forEachFormat(t, func(t *testing.T, f portFormat) {
		h := f.hdr
		marginal, short := big("foo", blockSize-2*h), big("foo", blockSize-2*h+4)
		tests := []struct {
			name    string
			recs    [][]byte
			written int64   // after the first record
			offsets []int64 // of the records
		}{
			{"marginal", strs(marginal, "", "bar"), int64(blockSize - h), []int64{0, blockSize - int64(h), blockSize}},
			{"marginal2", strs(marginal, "bar"), int64(blockSize - h), []int64{0, blockSize - int64(h)}},
			{"short", strs(short, "", "bar"), int64(blockSize - h + 4), []int64{0, blockSize, blockSize + int64(h)}},
			{"aligned-eof", strs(short), int64(blockSize - h + 4), []int64{0}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				log, starts, ends := f.write(t, tt.recs)
				if ends[0] != tt.written || fmt.Sprint(starts) != fmt.Sprint(tt.offsets) {
					t.Fatalf("first record ends at %d, records at %v; want %d, %v", ends[0], starts, tt.written, tt.offsets)
				}
				got, err := f.read(log)
				expectRead(t, got, err, tt.recs, "EOF")
			})
		}
	})
}

// TestPortLevelDB_OpenForAppend ports OpenForAppend: a stream continued
// by a Writer made at its size reads as one.
func TestPortLevelDB_OpenForAppend(t *testing.T) {
	forEachFormat(t, func(t *testing.T, f portFormat) {
		log, _, _ := f.write(t, strs("hello"))
		buf := bytes.NewBuffer(bytes.Clone(log))
		w := NewWriterAt(buf, int64(len(log)))
		if f.hdr == recyclableHeaderSize {
			w = NewRecyclableWriterAt(buf, int64(len(log)), 7)
		}
		_, err := w.WriteRecord([]byte("world"))
		must(t, err)
		must(t, w.Flush())
		got, err := f.read(buf.Bytes())
		expectRead(t, got, err, strs("hello", "world"), "EOF")
	})
}

// TestPortLevelDB_ReadError ports ReadError: LevelDB reports a read
// error as a dropped block and ends at EOF; bloomkv returns the error,
// naming the file and offset, which is neither io.EOF nor corruption.
func TestPortLevelDB_ReadError(t *testing.T) {
	forEachFormat(t, func(t *testing.T, f portFormat) {
		r := f.newReader(failReader{bytes.NewReader(nil)})
		_, err := r.Next()
		if err == nil || err == io.EOF || errors.Is(err, base.ErrCorruption) ||
			!strings.Contains(err.Error(), "000007.log: read at offset 0: bad sector") {
			t.Fatalf("err = %v, want the read error", err)
		}
	})
}

// damage is a change to a log of records, in a format of header size h.
type damage func(log []byte, h int) []byte

// setType sets the type of the chunk at 0 to typ (a legacy type) and
// fixes its checksum.
func setType(typ byte) damage {
	return func(l []byte, h int) []byte {
		if h == recyclableHeaderSize {
			typ += recyclableOffset
		}
		l[6] = typ
		fixChecksum(l, 0, h)
		return l
	}
}

func shrink(n int) damage { return func(l []byte, _ int) []byte { return l[:len(l)-n] } }

// TestPortLevelDB_ErrorPaths ports the tests of log_reader.cc's error
// paths. Where LevelDB reports dropped bytes and returns what follows,
// bloomkv's rule is asserted: corruption at the damage when valid data
// follows, a torn tail (EOF) when none does.
func TestPortLevelDB_ErrorPaths(t *testing.T) {
	bar := big("bar", 100000)
	tests := []struct {
		name   string
		recs   func(h int) [][]byte
		damage damage
		want   func(h int) [][]byte // read before the end
		end    string
	}{
		{"bad-record-type", fixed(strs("foo")), func(l []byte, h int) []byte { l[6] += 100; fixChecksum(l, 0, h); return l }, none, "EOF"},
		{"bad-record-type-then-record", fixed(strs("foo", "bar")), func(l []byte, h int) []byte { l[6] += 100; fixChecksum(l, 0, h); return l },
			none, "offset 0: chunk fails its checksum, type or length check, and valid data follows"},
		{"truncated-trailing-record", fixed(strs("foo")), shrink(4), none, "EOF"},
		{"bad-length", func(h int) [][]byte { return strs(big("bar", blockSize-h), "foo") },
			func(l []byte, _ int) []byte { l[4]++; return l }, none, fmt.Sprintf("offset 0: chunk fails its checksum, type or length check, and valid data follows at offset %d", blockSize)},
		{"bad-length-at-end", fixed(strs("foo")), shrink(1), none, "EOF"},
		{"checksum-mismatch", fixed(strs("foo")), func(l []byte, _ int) []byte { l[0] += 10; return l }, none, "EOF"},
		{"unexpected-middle-type", fixed(strs("foo")), setType(chunkMiddle), none, "offset 0: fragment of a record whose start is missing"},
		{"unexpected-last-type", fixed(strs("foo")), setType(chunkLast), none, "offset 0: fragment of a record whose start is missing"},
		{"unexpected-full-type", fixed(strs("foo", "bar")), setType(chunkFirst), none, "offset 0: record has no last fragment"},
		{"unexpected-first-type", fixed(strs("foo", bar)), setType(chunkFirst), none, "offset 0: record has no last fragment"},
		{"missing-last", fixed(strs(big("bar", blockSize))), func(l []byte, h int) []byte { return l[:len(l)-2*h] }, none, "EOF"},
		{"partial-last", fixed(strs(big("bar", blockSize))), shrink(1), none, "EOF"},
		// Records that span two blocks, the middle block wiped: never
		// first(R1) joined with last(R2).
		{"error-joins-records", fixed(strs(big("foo", blockSize), big("bar", blockSize), "correct")),
			func(l []byte, _ int) []byte {
				copy(l[blockSize:2*blockSize], bytes.Repeat([]byte("x"), blockSize))
				return l
			},
			none, fmt.Sprintf("offset %d: chunk fails its checksum, type or length check, and valid data follows at offset %d", blockSize, 2*blockSize)},
	}
	forEachFormat(t, func(t *testing.T, f portFormat) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				log, _, _ := f.write(t, tt.recs(f.hdr))
				got, err := f.read(tt.damage(log, f.hdr))
				expectRead(t, got, err, tt.want(f.hdr), tt.end)
			})
		}
	})
}

func fixed(recs [][]byte) func(int) [][]byte { return func(int) [][]byte { return recs } }

func none(int) [][]byte { return nil }

// TestPortLevelDB_SkipIntoMultiRecord ports SkipIntoMultiRecord. bloomkv
// has no initial offset: a stream that starts within a record (here a
// file read from block 1 on) is corruption, not fragments to skip.
// What comes nearest to skipping into a record is ReadPastUnwritten:
// the first page of the file never written, the rest of the record's
// chunks are skipped and the record after them read.
func TestPortLevelDB_SkipIntoMultiRecord(t *testing.T) {
	forEachFormat(t, func(t *testing.T, f portFormat) {
		recs := strs(big("foo", 3*blockSize), "correct")
		log, _, _ := f.write(t, recs)
		got, err := f.read(log[blockSize:])
		expectRead(t, got, err, nil, "offset 0: fragment of a record whose start is missing")
		clear(log[:pageSize])
		r := f.newReader(bytes.NewReader(log))
		r.AllowUnwritten()
		got, err = readAllRecords(r)
		expectRead(t, got, err, nil, "EOF")
		if at, resume, ok := r.Unwritten(); !ok || at != 0 || resume != blockSize {
			t.Fatalf("Unwritten = %d, %d, %v; want 0, %d", at, resume, ok, blockSize)
		}
		r.ReadPastUnwritten()
		got, err = readAllRecords(r)
		expectRead(t, got, err, recs[1:], "EOF")
	})
}

// TestPortLevelDB_InitialOffset ports the initial-offset tests (ReadStart
// to ReadPastEnd) on their records, legacy chunks: Offset gives each
// record's start as LevelDB's table has it, and the first record at or
// after each initial offset is the one LevelDB's reader starts at.
func TestPortLevelDB_InitialOffset(t *testing.T) {
	const h = headerSize
	sizes := []int{10000, 10000, 2*blockSize - 1000, 1, 13716, blockSize - h}
	want := []int64{0, h + 10000, 2 * (h + 10000), 2*(h+10000) + (2*blockSize - 1000) + 3*h,
		2*(h+10000) + (2*blockSize - 1000) + 3*h + h + 1, 3 * blockSize}
	log, _, _ := writeLog(t, repeated(sizes...))
	r := NewReader(bytes.NewReader(log), "000007.log")
	var offs []int64
	for {
		if _, err := r.Next(); err != nil {
			expectRead(t, nil, err, nil, "EOF")
			break
		}
		offs = append(offs, r.Offset())
	}
	if fmt.Sprint(offs) != fmt.Sprint(want) {
		t.Fatalf("offsets %v, want %v", offs, want)
	}
	for _, c := range []struct{ initial, record int64 }{
		{0, 0}, {1, 1}, {10000, 1}, {10007, 1}, {10008, 2}, {20014, 2}, {20015, 3},
		{blockSize - 4, 3}, {blockSize + 1, 3}, {2*blockSize + 1, 3}, {want[3], 3},
		{3*blockSize - 3, 5}, {int64(len(log)), 6}, {int64(len(log)) + 5, 6},
	} {
		first := int64(0)
		for first < int64(len(offs)) && offs[first] < c.initial {
			first++
		}
		if first != c.record {
			t.Fatalf("initial offset %d: first record %d, LevelDB's %d", c.initial, first, c.record)
		}
	}
	if binary.LittleEndian.Uint16(log[want[5]+4:]) != blockSize-h {
		t.Fatal("the last record does not fill block 3")
	}
}
