package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// Scenarios of goleveldb's leveldb/journal/journal_test.go not already
// ported from Pebble (whose record tests goleveldb's were taken from):
// the TestCorrupt_* tests. goleveldb's non-strict reader drops damaged
// chunks and reads on; bloomkv asserts its rule: corruption at the
// damage when valid data of the log follows, a torn tail otherwise.
// TestStaleWriter has no counterpart: WriteRecord takes a whole record.

// TestPortGoLevelDB_Corrupt ports TestCorrupt_MissingLastBlock,
// _CorruptedFirstBlock, _CorruptedMiddleBlock, _CorruptedLastBlock,
// _FirstChuckLengthOverflow and _MiddleChuckLengthOverflow.
func TestPortGoLevelDB_Corrupt(t *testing.T) {
	ones := func(from, to int) damage {
		return func(l []byte, _ int) []byte { copy(l[from:to], bytes.Repeat([]byte("1"), to-from)); return l }
	}
	length := func(at func(h int) int) damage {
		return func(l []byte, h int) []byte { binary.LittleEndian.PutUint16(l[at(h)+4:], 0xffff); return l }
	}
	B := blockSize
	four := func(h int) []int { return []int{B / 2, B - h, B - h + 1, B - h + 2} }
	tests := []struct {
		name   string
		sizes  func(h int) []int
		damage damage
		read   int // records read before the end
		end    func(h int) string
	}{
		// goleveldb: record 1 is cut short (ErrUnexpectedEOF), then EOF.
		{"missing-last-block", func(h int) []int { return []int{B - 1024, B - h} },
			func(l []byte, _ int) []byte { return l[:B] }, 1, eof},
		// goleveldb: records 2 and 3, records 0 and 1 dropped.
		{"corrupted-first-block", four, ones(0, 1024), 0, at(0)},
		// goleveldb: record 0, record 1 cut short, record 3.
		{"corrupted-middle-block", four, ones(B, B+1024), 1, at(B)},
		// goleveldb: records 0 to 2, record 3 cut short: a torn tail.
		{"corrupted-last-block", four, func(l []byte, _ int) []byte { return ones(len(l)-1023, len(l))(l, 0) }, 3, eof},
		// goleveldb: record 0, record 1 cut short, then EOF: record 2,
		// valid, silently lost.
		{"first-chunk-length-overflow", func(h int) []int { return four(h)[:3] }, length(func(int) int { return B }), 1, at(B)},
		// goleveldb: records 0 and 2, record 1 dropped.
		{"middle-chunk-length-overflow", func(h int) []int { return four(h)[:3] }, length(func(h int) int { return B/2 + h }), 1,
			func(h int) string { return at(B/2 + h)(h) }},
	}
	forEachFormat(t, func(t *testing.T, f portFormat) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				recs := repeated(tt.sizes(f.hdr)...)
				log, _, _ := f.write(t, recs)
				got, err := f.read(tt.damage(log, f.hdr))
				expectRead(t, got, err, recs[:tt.read], tt.end(f.hdr))
			})
		}
	})
}

func eof(int) string { return "EOF" }

// at returns the end of a read at corruption at offset off, valid data
// after it.
func at(off int) func(int) string {
	return func(int) string {
		return fmt.Sprintf("offset %d: chunk fails its checksum, type or length check, and valid data follows", off)
	}
}
