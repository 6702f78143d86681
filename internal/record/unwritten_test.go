package record

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// readUnwritten reads log 7 of file, of format, with AllowUnwritten until
// an error, and returns the records, the error and the reader.
func readUnwritten(file []byte, format LogFormat) ([][]byte, error, *Reader) {
	r := NewLogReader(bytes.NewReader(file), "000007.log", 7, format)
	r.AllowUnwritten()
	var recs [][]byte
	for {
		rec, err := r.Next()
		if err != nil {
			return recs, err, r
		}
		recs = append(recs, rec)
	}
}

// smallRecords returns n records of 20 to 420 bytes, as the small batches
// of a WAL (each page of their log holds whole chunks), their bytes drawn
// from seed.
func smallRecords(n, seed int) [][]byte {
	var recs [][]byte
	for i := range n {
		recs = append(recs, payload(seed+i, 20+i*37%400))
	}
	return recs
}

// TestReader_UnwrittenPages makes each page of a log of small records in
// turn one the file system never wrote, as a crash of the machine may
// leave the unsynced pages of the WAL being written: zeros in a new file,
// an older log's bytes in a recycled one. With AllowUnwritten the log
// ends before the page, at the first record it damages, whatever
// follows; without it, that is corruption wherever valid records follow.
func TestReader_UnwrittenPages(t *testing.T) {
	records := smallRecords(600, 0)
	log, starts, ends := writeRecyclable(t, records, 7)
	older, _, _ := writeRecyclable(t, smallRecords(2000, 1000), 6)
	pages, cases := 0, 0
	for page := 0; page+pageSize <= len(log); page += pageSize {
		for _, fill := range []string{"zeros", "older log"} {
			file := bytes.Clone(log)
			if fill == "zeros" {
				clear(file[page : page+pageSize])
			} else {
				copy(file[page:page+pageSize], older[page:])
			}
			cases++
			// The records wholly before the page survive, and none after.
			want := 0
			for want < len(ends) && ends[want] <= int64(page) {
				want++
			}
			got, err, r := readUnwritten(file, RecyclableFormat)
			if err != io.EOF || len(got) != want {
				t.Fatalf("%s at page %d: read %d records, %v; want %d, io.EOF", fill, page, len(got), err, want)
			}
			for i := range got {
				if !bytes.Equal(got[i], records[i]) {
					t.Fatalf("%s at page %d: record %d differs", fill, page, i)
				}
			}
			at, resume, ok := r.Unwritten()
			if !ok {
				continue // nothing valid after the page: a torn tail
			}
			if at > int64(page)+pageSize || resume <= at {
				t.Fatalf("%s at page %d: unwritten from %d, resuming at %d", fill, page, at, resume)
			}
			// Without AllowUnwritten, the valid records after the damage
			// make it corruption.
			if _, err, _ := readLogAs(file, 7, RecyclableFormat); !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("%s at page %d: without AllowUnwritten: %v, want corruption", fill, page, err)
			}
			// ReadPastUnwritten reads on from the first record that starts
			// after the hole, to the log's end.
			next := 0
			for next < len(starts) && starts[next] < resume {
				next++
			}
			r.ReadPastUnwritten()
			for i := next; ; i++ {
				rec, err := r.Next()
				if err != nil {
					if err != io.EOF || i != len(records) {
						t.Fatalf("%s at page %d: past the hole, record %d: %v; want the records from %d on, then io.EOF", fill, page, i, err, next)
					}
					break
				}
				if i >= len(records) || !bytes.Equal(rec, records[i]) {
					t.Fatalf("%s at page %d: past the hole, record %d differs", fill, page, i)
				}
			}
			pages++
		}
	}
	t.Logf("%d of %d pages ended the log as unwritten", pages, cases)
	if pages < cases-2 {
		t.Fatalf("only %d of %d pages ended the log as unwritten", pages, cases)
	}
}

// TestReader_UnwrittenInsideRecord: a page of zeros inside the payload a
// chunk's header claims is the record's own, or what cannot be told from
// it: with AllowUnwritten, a flipped bit in a chunk whose record holds
// pages of zeros, in its payload or its header, and a page never written
// inside a chunk of several pages, are corruption.
func TestReader_UnwrittenInsideRecord(t *testing.T) {
	records := append(sizes(100, 200), make([]byte, 30_000))
	records = append(records, smallRecords(50, 0)...)
	log, starts, _ := writeRecyclable(t, records, 7)
	big := int(starts[2]) + recyclableHeaderSize // the zeros' first byte
	tests := []struct {
		name   string
		damage func([]byte)
	}{
		{"bit flip by pages of zeros", func(l []byte) { l[big+10] ^= 1 }},
		// The length is outside the checksum: its chunk then claims
		// another payload than the one holding the zeros.
		{"length flip, shorter", func(l []byte) { l[int(starts[2])+5] ^= 0x40 }},
		{"length flip, longer", func(l []byte) { l[int(starts[2])+5] ^= 0x80 }},
		{"type flip", func(l []byte) { l[int(starts[2])+6] ^= 0x80 }},
		{"page never written", func(l []byte) {
			for i := range l[big+3*pageSize : big+5*pageSize] {
				l[big+3*pageSize+i] = byte(i) | 1
			}
			p := (big + 3*pageSize + pageSize - 1) / pageSize * pageSize
			clear(l[p : p+pageSize])
		}},
	}
	for _, tt := range tests {
		file := bytes.Clone(log)
		tt.damage(file)
		got, err, r := readUnwritten(file, RecyclableFormat)
		if _, _, ok := r.Unwritten(); ok || !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("%s: read %d records, %v (unwritten: %v); want corruption", tt.name, len(got), err, ok)
		}
	}
}

// TestReader_UnwrittenIsNotBitFlip: with AllowUnwritten, a flipped bit
// followed by valid records is still corruption: only a page of zeros or
// an older log's chunk reads as unwritten.
func TestReader_UnwrittenIsNotBitFlip(t *testing.T) {
	records := sizes(100, 0, 20_000, 12_650, 3, 30_000, 1, 0, 5_000)
	log, _, ends := writeRecyclable(t, records, 7)
	step := 997
	flips := 0
	for off := 0; off < int(ends[len(ends)-2]); off += step {
		for _, bit := range []byte{1, 0x80} {
			file := bytes.Clone(log)
			file[off] ^= bit
			got, err, r := readUnwritten(file, RecyclableFormat)
			if _, _, ok := r.Unwritten(); ok {
				t.Fatalf("a flip at %d reads as unwritten pages (%d records read)", off, len(got))
			}
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("a flip at %d: read %d records, %v; want corruption", off, len(got), err)
			}
			flips++
		}
	}
	if flips < 2*int(ends[len(ends)-2])/step {
		t.Fatalf("only %d flips tried", flips)
	}
}
