package record

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// Scenarios of Pebble v1.1.5's record/record_test.go. Pebble's Reader
// hands out an io.Reader per record and has recover() and seekRecord()
// to skip damage; bloomkv's Next returns whole records and stops at
// damage (io.EOF for a torn tail, corruption when valid data follows),
// so the recover and seek scenarios assert that rule instead. Pebble's
// tests named TestEmpty, TestCorruptBlockHeader and TestStaleChunks are
// not in v1.1.5; LevelDB's Empty is in port_leveldb_test.go.

// TestPortPebble_Generators ports TestMany, TestRandom and TestBasic:
// records written then read back whole, in both formats.
func TestPortPebble_Generators(t *testing.T) {
	many := 100_000
	if testing.Short() {
		many = 10_000
	}
	var numbers, random [][]byte
	for i := range many {
		numbers = append(numbers, fmt.Appendf(nil, "%d.", i))
	}
	rnd := rand.New(rand.NewPCG(0, 0))
	for i := 1; i <= 100; i++ {
		random = append(random, bytes.Repeat([]byte{byte(i)}, rnd.IntN(2*blockSize+16)))
	}
	basic := strs(strings.Repeat("a", 1000), strings.Repeat("b", 97270), strings.Repeat("c", 8000))
	forEachFormat(t, func(t *testing.T, f portFormat) {
		for name, recs := range map[string][][]byte{"many": numbers, "random": random, "basic": basic} {
			log, _, _ := f.write(t, recs)
			got, err := f.read(log)
			t.Run(name, func(t *testing.T) { expectRead(t, got, err, recs, "EOF") })
		}
	})
}

// TestPortPebble_Boundary ports TestBoundary: two records of about a
// block each, with nothing, an empty record or a one-byte one between
// them, so that every end of the first falls at or near a block's end.
// Pebble tries 32×32 lengths; the second record's length matters less
// (it only moves the stream's end), so a few are tried.
func TestPortPebble_Boundary(t *testing.T) {
	step := 1
	if testing.Short() {
		step = 5
	}
	forEachFormat(t, func(t *testing.T, f portFormat) {
		for i := blockSize - 2*f.hdr - 2; i < blockSize+16; i += step {
			s0 := big("abcd", i)
			for _, j := range []int{blockSize - 16, blockSize - f.hdr, blockSize + 15} {
				s1 := big("ABCDE", j)
				for _, recs := range [][][]byte{strs(s0, s1), strs(s0, "", s1), strs(s0, "x", s1)} {
					log, _, _ := f.write(t, recs)
					got, err := f.read(log)
					expectRead(t, got, err, recs, "EOF")
				}
			}
		}
	})
}

// TestPortPebble_Flush ports TestFlush: records reach the underlying
// writer when a block fills up or on Flush, never sooner.
func TestPortPebble_Flush(t *testing.T) {
	forEachFormat(t, func(t *testing.T, f portFormat) {
		var buf bytes.Buffer
		w := f.newWriter(&buf)
		write := func(p []byte) {
			t.Helper()
			if _, err := w.WriteRecord(p); err != nil {
				t.Fatal(err)
			}
		}
		check := func(step string, want int) {
			t.Helper()
			if buf.Len() != want {
				t.Fatalf("%s: %d bytes written, want %d", step, buf.Len(), want)
			}
		}
		h := f.hdr
		write([]byte("0"))
		write([]byte("11"))
		check("two small records", 0)
		must(t, w.Flush())
		check("flushed", 2*h+3)
		write(bytes.Repeat([]byte("2"), 10000))
		check("a record within the block", 2*h+3)
		must(t, w.Flush())
		check("flushed", 3*h+10003)
		write(bytes.Repeat([]byte("3"), 40000))
		check("a record filling the block", blockSize)
		must(t, w.Flush())
		check("flushed", 5*h+50003)
		got, err := f.read(buf.Bytes())
		expectRead(t, got, err, strs("0", "11", big("2", 10000), big("3", 40000)), "EOF")
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestPortPebble_StaleReader ports TestStaleReader and
// TestNonExhaustiveRead. Pebble's record readers go stale at the next
// Next; bloomkv's Next returns a slice that is the caller's to keep, so
// a record read early still holds its bytes after later records, from
// later blocks, have been read.
func TestPortPebble_StaleReader(t *testing.T) {
	forEachFormat(t, func(t *testing.T, f portFormat) {
		rnd := rand.New(rand.NewPCG(1, 1))
		n := 100
		if testing.Short() {
			n = 20
		}
		var recs [][]byte
		for i := range n {
			recs = append(recs, []byte(big(string(rune('A'+i%26))+"123456789abcdefgh", 10+rnd.IntN(3*blockSize))))
		}
		log, _, _ := f.write(t, recs)
		r := f.newReader(bytes.NewReader(log))
		var kept [][]byte
		for range recs {
			rec, err := r.Next()
			must(t, err)
			kept = append(kept, rec)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("after the records: %v", err)
		}
		expectRead(t, kept, io.EOF, recs, "EOF")
	})
}

// corruptBlock is Pebble's: it changes the checksum of the chunk that
// starts block n.
func corruptBlock(log []byte, n int) {
	if log[blockSize*n] == 0 {
		log[blockSize*n] = 0xff
	} else {
		log[blockSize*n] = 0
	}
	clear(log[blockSize*n+1 : blockSize*n+4])
}

// TestPortPebble_Recover ports TestBasicRecover, TestRecoverSingleBlock,
// TestRecoverMultipleBlocks, TestRecoverLastPartialBlock and
// TestRecoverLastCompleteBlock. Pebble's reader returns ErrInvalidChunk
// and recover() skips to the next block, dropping what the damaged
// blocks held. bloomkv has no recover: damage with a valid chunk of the
// log after it is corruption at the damage (the records it would drop
// were acknowledged); damage to the last record alone is a torn tail.
func TestPortPebble_Recover(t *testing.T) {
	forEachFormat(t, func(t *testing.T, f portFormat) {
		B, h := blockSize, f.hdr
		// fill4 fills what the 3-block record leaves of block 3.
		fill4 := B - 5*h
		tests := []struct {
			name    string
			sizes   []int
			corrupt []int // blocks
			read    int   // records read before the end
			end     string
		}{
			{"basic", []int{B - h, B - h, B - h}, []int{1}, 1, fmt.Sprintf("offset %d:", B)},
			{"single-block", []int{3 * B, B - h, B / 2}, []int{3}, 0, fmt.Sprintf("offset %d:", 3*B)},
			{"multiple-blocks", []int{3 * B, fill4, B - h, B - h, B / 2}, []int{3, 4, 5}, 0, fmt.Sprintf("offset %d:", 3*B)},
			{"last-partial-block", []int{3 * B, fill4, B / 2}, []int{4}, 2, "EOF"},
			{"last-complete-block", []int{3 * B, fill4, B - h}, []int{4}, 2, "EOF"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				recs := repeated(tt.sizes...)
				log, _, _ := f.write(t, recs)
				for _, b := range tt.corrupt {
					corruptBlock(log, b)
				}
				got, err := f.read(log)
				expectRead(t, got, err, recs[:tt.read], tt.end)
			})
		}
	})
}

// seekRecords are the records of TestSeekRecord and
// TestLastRecordOffset: one of three blocks and a bit, one filling the
// rest of block 3, two filling blocks 4 and 5, and half a block.
func seekRecords(h int) [][]byte {
	return repeated(3*blockSize, blockSize-5*h, blockSize-h, blockSize-h, blockSize/2)
}

// TestPortPebble_LastRecordOffset ports TestLastRecordOffset,
// TestReaderOffset and TestNoLastRecordOffset: the offsets WriteRecord
// returns (Pebble's LastRecordOffset) and Reader.Offset are those of
// each record's first chunk; before any record the stream is empty.
func TestPortPebble_LastRecordOffset(t *testing.T) {
	forEachFormat(t, func(t *testing.T, f portFormat) {
		B, h := int64(blockSize), int64(f.hdr)
		want := []int64{0, 3*B + 4*h, 4 * B, 5 * B, 6 * B}
		if f.hdr == headerSize && want[1] != 98332 {
			t.Fatalf("offset %d, Pebble's is 98332", want[1])
		}
		for _, recs := range [][][]byte{seekRecords(f.hdr), repeated(2*blockSize, 400, 500, 600, 700, 800, 9000, 1000)} {
			log, starts, _ := f.write(t, recs)
			if len(recs) == 5 && fmt.Sprint(starts) != fmt.Sprint(want) {
				t.Fatalf("offsets %v, want %v", starts, want)
			}
			r := f.newReader(bytes.NewReader(log))
			for i := range recs {
				_, err := r.Next()
				must(t, err)
				if r.Offset() != starts[i] {
					t.Fatalf("record %d: Offset %d, WriteRecord said %d", i, r.Offset(), starts[i])
				}
			}
		}
		var buf bytes.Buffer
		w := f.newWriter(&buf)
		must(t, w.Flush())
		if w.Size() != 0 || buf.Len() != 0 {
			t.Fatalf("no record: Size %d, %d bytes written", w.Size(), buf.Len())
		}
		if off, err := w.WriteRecord([]byte("testrecord")); off != 0 || err != nil {
			t.Fatalf("first record at %d, %v; want 0", off, err)
		}
	})
}

// TestPortPebble_SeekRecord ports TestSeekRecord. bloomkv's Reader has
// no seek: a stream must start at a block boundary, so seeking reads as
// a stream that starts at the seek offset. Pebble's seek into a
// multi-block record skips to the next record; here a stream that
// starts with a record's later fragment is corruption, as a log whose
// first chunk continues a record is no crash's. Past the end is empty.
func TestPortPebble_SeekRecord(t *testing.T) {
	forEachFormat(t, func(t *testing.T, f portFormat) {
		recs := seekRecords(f.hdr)
		log, _, _ := f.write(t, recs)
		tests := []struct {
			at   int
			want [][]byte
			end  string
		}{
			{blockSize, nil, "offset 0: fragment of a record whose start is missing"},
			{blockSize + 3, nil, "offset 0: chunk fails its checksum"},
			{4 * blockSize, recs[2:], "EOF"},
			{3 * blockSize, nil, "offset 0: fragment of a record whose start is missing"},
			{1 << 20, nil, "EOF"},
		}
		for _, tt := range tests {
			t.Run(fmt.Sprint(tt.at), func(t *testing.T) {
				got, err := f.read(log[min(tt.at, len(log)):])
				expectRead(t, got, err, tt.want, tt.end)
			})
		}
	})
}

// TestPortPebble_InvalidLogNum ports TestInvalidLogNum: a log of log 1
// read as log 2 is empty, its chunks another log's (the remains of a
// recycled file), whatever format the reader is told.
func TestPortPebble_InvalidLogNum(t *testing.T) {
	var recs [][]byte
	for i := range 10 {
		recs = append(recs, fmt.Appendf(nil, "%04d\n", i))
	}
	log, _, _ := writeRecyclable(t, recs, 1)
	for _, format := range logFormats {
		got, err := readAllRecords(NewLogReader(bytes.NewReader(log), "000001.log", 1, format))
		expectRead(t, got, err, recs, "EOF")
		r := NewLogReader(bytes.NewReader(log), "000002.log", 2, format)
		got, err = readAllRecords(r)
		expectRead(t, got, err, nil, "EOF")
		if num, off, ok := r.EndedAtLog(); !ok || num != 1 || off != 0 {
			t.Fatalf("%v: EndedAtLog = %d, %d, %v; want log 1 at 0", format, num, off, ok)
		}
	}
}

// TestPortPebble_Size ports TestSize: after each Flush, Size is the
// bytes written.
func TestPortPebble_Size(t *testing.T) {
	rnd := rand.New(rand.NewPCG(2, 2))
	forEachFormat(t, func(t *testing.T, f portFormat) {
		var buf bytes.Buffer
		w := f.newWriter(&buf)
		for range 100 {
			_, err := w.WriteRecord(make([]byte, rnd.IntN(8<<10)))
			must(t, err)
			must(t, w.Flush())
			if int64(buf.Len()) != w.Size() {
				t.Fatalf("%d bytes written, Size %d", buf.Len(), w.Size())
			}
		}
	})
}
