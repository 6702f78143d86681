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

// TestReader_UnwrittenPages makes each page of a log in turn one the file
// system never wrote, as a crash of the machine may leave the unsynced
// pages of the WAL being written: zeros in a new file, an older log's
// bytes in a recycled one. With AllowUnwritten the log ends before the
// page, at the first record it damages, whatever follows; without it,
// that is corruption wherever valid records follow.
func TestReader_UnwrittenPages(t *testing.T) {
	records := sizes(100, 0, 20_000, 12_650, 3, 30_000, 1, 0, 5_000, 700, 9_000, 40_000, 2, 300)
	log, _, ends := writeRecyclable(t, records, 7)
	// The older log's records are small batches, so each page of it
	// holds whole chunks: a page in the middle of a chunk of several
	// pages holds nothing that tells it from damage.
	var small []int
	for i := 0; len(small) < 2000; i++ {
		small = append(small, 20+i*37%400)
	}
	older, _, _ := writeRecyclable(t, sizes(small...), 6)
	pages := 0
	for page := 0; page+pageSize <= len(log); page += pageSize {
		for _, fill := range []string{"zeros", "older log"} {
			file := bytes.Clone(log)
			if fill == "zeros" {
				clear(file[page : page+pageSize])
			} else {
				copy(file[page:page+pageSize], older[page:])
			}
			// The records wholly before the page survive.
			want := 0
			for want < len(ends) && ends[want] <= int64(page) {
				want++
			}
			got, err, r := readUnwritten(file, RecyclableFormat)
			if err != io.EOF || len(got) < want {
				t.Fatalf("%s at page %d: read %d records, %v; want %d or more, io.EOF", fill, page, len(got), err, want)
			}
			for i := range got {
				if !bytes.Equal(got[i], records[i]) {
					t.Fatalf("%s at page %d: record %d differs", fill, page, i)
				}
			}
			// A record that ends past the page's start was damaged by it,
			// unless the page left its bytes as they were (a record of
			// zeros over a page of zeros).
			if len(got) > want && !bytes.Equal(file[page:page+pageSize], log[page:page+pageSize]) {
				t.Fatalf("%s at page %d: read %d records, but record %d ends at %d, past the page", fill, page, len(got), want, ends[want])
			}
			at, resume, ok := r.Unwritten()
			if ok && (at > int64(page)+pageSize || resume <= at) {
				t.Fatalf("%s at page %d: unwritten from %d, resuming at %d", fill, page, at, resume)
			}
			// Without AllowUnwritten, valid records after the damage make
			// it corruption, at the offset where the reader above stopped.
			if ok {
				_, err, _ := readLogAs(file, 7, RecyclableFormat)
				if !errors.Is(err, base.ErrCorruption) {
					t.Fatalf("%s at page %d: without AllowUnwritten: %v, want corruption", fill, page, err)
				}
				pages++
			}
		}
	}
	t.Logf("%d of %d pages ended the log as unwritten", pages, 2*(len(log)/pageSize))
	if pages < len(log)/pageSize {
		t.Fatalf("only %d of %d pages ended the log as unwritten", pages, 2*(len(log)/pageSize))
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
