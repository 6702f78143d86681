package record

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"testing"
)

// Pebble v1.1.5's recycled-log scenarios (record/record_test.go), for
// NewRecyclableWriterAt and NewLogReader. Pebble's LogWriter ends a log
// with an EOF chunk at Close; bloomkv's Writer writes none (its store
// seals a WAL with an empty record of its own), so where Pebble's
// scenario counts on that chunk an empty record stands in for it.

// limitedWriter takes the first limit writes and drops the rest, as a
// crash leaves a file whose later writes never happened.
type limitedWriter struct {
	w       io.Writer
	limit   int
	written int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	l.limit--
	if l.limit < 0 {
		return len(p), nil
	}
	l.written += int64(len(p))
	return l.w.Write(p)
}

// TestPortPebble_RecycleLog ports TestRecycleLog: one file recycled 60
// times (Pebble's 100 take too long), each log writing random records and cut after a random number
// of block writes. Each log reads back exactly its records that were
// written whole, then io.EOF: never a record of an earlier log, never
// corruption, whatever of them follows.
func TestPortPebble_RecycleLog(t *testing.T) {
	seed := uint64(20240611)
	rnd := rand.New(rand.NewPCG(seed, seed))
	backing := make([]byte, 1<<19) // room for 110 records of 4 KiB
	logs := 60
	if testing.Short() {
		logs = 15
	}
	for i := 1; i <= logs; i++ {
		lw := &limitedWriter{w: bytes.NewBuffer(backing[:0]), limit: rnd.IntN(100)}
		w := NewRecyclableWriterAt(lw, 0, uint32(i))
		var recs [][]byte
		var ends []int64
		for range 10 + rnd.IntN(100) {
			rec := make([]byte, 16+rnd.IntN(4096-16))
			for j := range rec {
				rec[j] = byte(rnd.Uint32())
			}
			if _, err := w.WriteRecord(rec); err != nil {
				t.Fatalf("seed %d, log %d: %v", seed, i, err)
			}
			recs, ends = append(recs, rec), append(ends, w.Size())
		}
		must(t, w.Flush())
		whole := 0
		for whole < len(ends) && ends[whole] <= lw.written {
			whole++
		}
		for _, format := range logFormats {
			r := NewLogReader(bytes.NewReader(backing), "recycled.log", uint32(i), format)
			r.AllowUnwritten()
			got, err := readAllRecords(r)
			if desc := describeEnd(t, got, err); desc != fmt.Sprintf("EOF after %d", whole) {
				t.Fatalf("seed %d, log %d, %v: %s, want EOF after %d of %d records", seed, i, format, desc, whole, len(recs))
			}
			for j := range got {
				if !bytes.Equal(got[j], recs[j]) {
					t.Fatalf("seed %d, log %d: record %d differs", seed, i, j)
				}
			}
		}
	}
}

// TestPortPebble_TruncatedLog ports TestTruncatedLog: a record across two
// blocks, its second block missing, is a torn tail (Pebble's record
// reader says io.ErrUnexpectedEOF).
func TestPortPebble_TruncatedLog(t *testing.T) {
	log, _, _ := writeRecyclable(t, repeated(blockSize+100), 1)
	r := NewLogReader(bytes.NewReader(log[:blockSize]), "000001.log", 1, RecyclableFormat)
	got, err := readAllRecords(r)
	expectRead(t, got, err, nil, "EOF")
	if r.End() != 0 {
		t.Fatalf("End = %d, want 0", r.End())
	}
}

// recycleOver writes the records of log over those of log old in one
// file of size bytes, and reads the file as log new.
func recycleOver(t *testing.T, size int, oldNum, newNum uint32, old, recs [][]byte) ([][]byte, error) {
	t.Helper()
	backing := make([]byte, size)
	for _, l := range []struct {
		num  uint32
		recs [][]byte
	}{{oldNum, old}, {newNum, recs}} {
		w := NewRecyclableWriterAt(bytes.NewBuffer(backing[:0]), 0, l.num)
		for _, rec := range l.recs {
			_, err := w.WriteRecord(rec)
			must(t, err)
		}
		must(t, w.Flush())
	}
	if len(backing) != size {
		t.Fatalf("the logs outgrew the file")
	}
	return readAllRecords(NewLogReader(bytes.NewReader(backing), "recycled.log", newNum, RecyclableFormat))
}

// TestPortPebble_RecycleLogWithPartialBlock ports
// TestRecycleLogWithPartialBlock and TestRecycleLogNumberOverflow: a
// 27-byte file holds log 1's "aaaaa" and an empty record (Pebble's EOF
// chunk), then log 2's "a" and an empty record over it; the 4 bytes left
// of log 1 are too few for a header, and end the log. Log numbers are
// the low 32 bits of file numbers, so log 1<<32 after log 1<<32-1 is 0
// after math.MaxUint32.
func TestPortPebble_RecycleLogWithPartialBlock(t *testing.T) {
	for _, nums := range [][2]uint64{{1, 2}, {math.MaxUint32, math.MaxUint32 + 1}} {
		got, err := recycleOver(t, 27, uint32(nums[0]), uint32(nums[1]), strs("aaaaa", ""), strs("a", ""))
		expectRead(t, got, err, strs("a", ""), "EOF")
	}
}

// TestPortPebble_RecycleLogWithPartialRecord ports
// TestRecycleLogWithPartialRecord: log 2's record of a block and a half
// over log 1's, with log 1's second block where log 2's should be (a
// crash before log 2 wrote it). Pebble's reader says ErrInvalidChunk;
// bloomkv's reads a torn tail: nothing of log 2 follows.
//
// Its variants put records of log 2 after that block: damage followed by
// valid data is corruption, unless the reader allows unwritten pages
// (the WAL being written at a crash of the machine), for which the block
// of the earlier log is what a page never written leaves. That holds
// whether log 1's chunk there ends mid-block or fills the block up to
// where log 2's next chunk starts (a record of more than two blocks,
// whose middle chunk verifies with its own length: not a chunk of log 2
// whose length alone was damaged).
func TestPortPebble_RecycleLogWithPartialRecord(t *testing.T) {
	const recordSize = blockSize * 3 / 2
	tests := []struct {
		name      string
		old, recs [][]byte
		strict    string // how a strict reader ends
	}{
		{"pebble", repeated(recordSize), repeated(recordSize), "EOF"},
		{"then-records", repeated(recordSize), repeated(recordSize, 100, 2*blockSize), fmt.Sprintf("offset %d:", blockSize)},
		{"old-chunk-fills-block", repeated(3 * blockSize), repeated(3*blockSize, 100), fmt.Sprintf("offset %d:", blockSize)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, _, _ := writeRecyclable(t, tt.old, 1)
			log, _, _ := writeRecyclable(t, tt.recs, 2)
			file := make([]byte, max(len(log), 2*blockSize))
			copy(file, log)
			n := copy(file[blockSize:2*blockSize], old[blockSize:])
			clear(file[blockSize+n : 2*blockSize])
			got, err := readAllRecords(NewLogReader(bytes.NewReader(file), "000002.log", 2, RecyclableFormat))
			expectRead(t, got, err, nil, tt.strict)
			r := NewLogReader(bytes.NewReader(file), "000002.log", 2, RecyclableFormat)
			r.AllowUnwritten()
			got, err = readAllRecords(r)
			expectRead(t, got, err, nil, "EOF")
			if at, resume, ok := r.Unwritten(); tt.strict != "EOF" && (!ok || at != blockSize || resume != 2*blockSize) {
				t.Fatalf("Unwritten = %d, %d, %v; want the block at %d, then log 2 at %d", at, resume, ok, blockSize, 2*blockSize)
			}
		})
	}
}
