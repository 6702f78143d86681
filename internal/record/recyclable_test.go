package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cockroachdb/pebble/vfs"
)

// Tests of the recyclable chunk format: logs that carry their log number,
// so that a file recycled from an earlier log ends where the new log's
// writes stop.

// writeRecyclable writes records as a recyclable log of logNum.
func writeRecyclable(t testing.TB, records [][]byte, logNum uint32) (log []byte, starts, ends []int64) {
	return writeStream(t, records, func(w io.Writer) *Writer { return NewRecyclableWriterAt(w, 0, logNum) })
}

// readLog reads records of log logNum, of a format to detect, until an
// error and returns them with the error and whether the stream was
// recyclable.
func readLog(log []byte, logNum uint32) ([][]byte, error, bool) {
	return readLogAs(log, logNum, DetectFormat)
}

// readLogAs is readLog for a log whose reader is told format.
func readLogAs(log []byte, logNum uint32, format LogFormat) ([][]byte, error, bool) {
	r := NewLogReader(bytes.NewReader(log), "000007.log", logNum, format)
	var recs [][]byte
	for {
		rec, err := r.Next()
		if err != nil {
			return recs, err, r.Recyclable()
		}
		recs = append(recs, rec)
	}
}

func TestRecyclable_RoundTrip(t *testing.T) {
	const h = recyclableHeaderSize
	tests := []struct {
		name     string
		records  [][]byte
		wantSize int64
	}{
		{"no-records", nil, 0},
		{"empty-record", sizes(0), h},
		{"small", sizes(1, 10, 100), 3*h + 111},
		{"fills-block-exactly", sizes(blockSize - h), blockSize},
		{"block-size-payload", sizes(blockSize), blockSize + h + h},
		{"leaves-10-bytes-padded", sizes(blockSize-2*h+1, 3), blockSize + h + 3},
		{"leaves-7-bytes-padded", sizes(blockSize-h-7, 3), blockSize + h + 3},
		{"leaves-exactly-a-header", sizes(blockSize-2*h, 3), blockSize + h + 3},
		{"large-mix", sizes(3, 70_000, 0, 40_000, 1, 32_757, 9), -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, _, _ := writeRecyclable(t, tt.records, 7)
			if tt.wantSize >= 0 && int64(len(log)) != tt.wantSize {
				t.Fatalf("log is %d bytes, want %d", len(log), tt.wantSize)
			}
			for _, format := range logFormats {
				got, err, recyclable := readLogAs(log, 7, format)
				if err != io.EOF || len(got) != len(tt.records) {
					t.Fatalf("%v: read %d records, %v; want %d, io.EOF", format, len(got), err, len(tt.records))
				}
				if want := len(tt.records) > 0 || format == RecyclableFormat; recyclable != want {
					t.Fatalf("%v: Recyclable() = %v", format, recyclable)
				}
				for i := range got {
					if !bytes.Equal(got[i], tt.records[i]) {
						t.Fatalf("%v: record %d differs", format, i)
					}
				}
			}
		})
	}
}

func TestRecyclable_Layout(t *testing.T) {
	// One record pinned byte for byte: checksum, length, type, log
	// number, payload; the checksum covers type, log number and payload.
	log, _, _ := writeRecyclable(t, [][]byte{[]byte("hi")}, 0x04030201)
	want := []byte{0, 0, 0, 0, 2, 0, chunkFull + recyclableOffset, 1, 2, 3, 4, 'h', 'i'}
	c := checksum(want[6:])
	want[0], want[1], want[2], want[3] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
	if !bytes.Equal(log, want) {
		t.Fatalf("got % x, want % x", log, want)
	}
}

// TestRecyclable_OverEarlierLog writes log 7 over the bytes of log 6, as
// a recycled file holds them, and cuts log 7's writes at every offset: the
// reader returns the records of log 7 that were whole, then io.EOF, never
// one of log 6 and never corruption.
func TestRecyclable_OverEarlierLog(t *testing.T) {
	old, _, _ := writeRecyclable(t, sizes(5, 900, 40_000, 30, 12_000, 25_000, 7, 3), 6)
	records := sizes(100, 0, 20_000, 12_650, 3, 30, 1)
	log, _, ends := writeRecyclable(t, records, 7)
	step := 7
	if testing.Short() {
		step = 61
	}
	cuts := 0
	for cut := 0; cut <= len(log); cut += step {
		file := append(bytes.Clone(log[:cut]), old[min(cut, len(old)):]...)
		want := 0
		for want < len(ends) && ends[want] <= int64(cut) {
			want++
		}
		for _, format := range logFormats {
			got, err, _ := readLogAs(file, 7, format)
			if err != io.EOF || len(got) != want {
				t.Fatalf("%v: cut at %d: read %d records, %v; want %d, io.EOF", format, cut, len(got), err, want)
			}
			for i := range got {
				if !bytes.Equal(got[i], records[i]) {
					t.Fatalf("%v: cut at %d: record %d differs", format, cut, i)
				}
			}
		}
		cuts++
	}
	if cuts < len(log)/step {
		t.Fatalf("only %d cuts tried", cuts)
	}
}

// TestRecyclable_OverLegacyBytes: a legacy log's chunks after a recyclable
// log's end are not taken for its records.
func TestRecyclable_OverLegacyBytes(t *testing.T) {
	old, _, _ := writeLog(t, sizes(5, 900, 40_000, 30))
	log, _, _ := writeRecyclable(t, sizes(10, 20), 7)
	for _, format := range logFormats {
		got, err, _ := readLogAs(append(bytes.Clone(log), old[len(log):]...), 7, format)
		if err != io.EOF || len(got) != 2 {
			t.Fatalf("%v: read %d records, %v; want 2, io.EOF", format, len(got), err)
		}
	}
}

func TestRecyclable_Damage(t *testing.T) {
	records := sizes(100, 0, 20_000, 12_650, 3, 30_000, 1, 0, 5_000)
	log, _, ends := writeRecyclable(t, records, 7)
	r2 := int(ends[1])
	tests := []struct {
		name   string
		damage func([]byte) []byte
		want   string // "EOF after n" or the corruption's offset
	}{
		{"payload-mid-file", func(l []byte) []byte { l[r2+recyclableHeaderSize+9] ^= 1; return l }, fmt.Sprintf("offset %d:", r2)},
		{"log-number-mid-file", func(l []byte) []byte { l[r2+8] ^= 1; return l }, fmt.Sprintf("offset %d:", r2)},
		{"torn-last", func(l []byte) []byte { return l[:len(l)-3] }, "EOF after 8"},
		{"other-log-mid-record", func(l []byte) []byte {
			// The last fragment of record 3 is another log's: the record
			// is torn, and valid chunks of this log follow it.
			l[blockSize+8] ^= 0xff
			c := checksum(l[blockSize+6 : int(ends[3])])
			l[blockSize], l[blockSize+1], l[blockSize+2], l[blockSize+3] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
			return l
		}, fmt.Sprintf("offset %d:", blockSize)},
		{"other-log-at-end", func(l []byte) []byte {
			other, _, _ := writeRecyclable(t, sizes(40, 50), 8)
			return append(l, other...)
		}, "EOF after 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, format := range logFormats {
				got, err, _ := readLogAs(tt.damage(bytes.Clone(log)), 7, format)
				if desc := describeEnd(t, got, err); !strings.Contains(desc, tt.want) {
					t.Fatalf("%v: got %q, want %q", format, desc, tt.want)
				}
			}
		})
	}
}

// TestLogReader_Legacy: a log reader reads legacy logs, the golden WALs
// among them, as a legacy reader does.
func TestLogReader_Legacy(t *testing.T) {
	records, log, _ := tornLog(t)
	got, err, recyclable := readLog(log, 7)
	if err != io.EOF || len(got) != len(records) || recyclable {
		t.Fatalf("read %d records, %v, recyclable %v; want %d, io.EOF, false", len(got), err, recyclable, len(records))
	}
	for _, path := range goldenLogs[:2] {
		data := readFile(t, path)
		want, wantErr := readAllRecords(NewReader(bytes.NewReader(data), path))
		got, err, _ := readLog(data, 1)
		if err != wantErr || len(got) != len(want) || len(got) == 0 {
			t.Fatalf("%s: log reader read %d records, %v; legacy reader %d, %v", path, len(got), err, len(want), wantErr)
		}
	}
}

// TestReader_LegacyOnly: a MANIFEST's reader takes no recyclable chunk.
func TestReader_LegacyOnly(t *testing.T) {
	log, _, _ := writeRecyclable(t, sizes(10, 20), 7)
	got, err := readAllRecords(NewReader(bytes.NewReader(log), "MANIFEST-000001"))
	if err != io.EOF || len(got) != 0 {
		t.Fatalf("read %d records, %v; want none, io.EOF", len(got), err)
	}
}

func readAllRecords(r *Reader) ([][]byte, error) {
	var recs [][]byte
	for {
		rec, err := r.Next()
		if err != nil {
			return recs, err
		}
		recs = append(recs, rec)
	}
}

func FuzzLogReader(f *testing.F) {
	for _, log := range readGoldenLogs(f) {
		f.Add(log)
	}
	old, _, _ := writeRecyclable(f, sizes(5, 900, 40_000, 30), 6)
	log, _, _ := writeRecyclable(f, sizes(100, 0, 20_000, 13_000, 3), 7)
	f.Add(log)
	f.Add(append(bytes.Clone(log[:500]), old[500:]...))
	f.Add(log[:blockSize+50])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		format := LogFormat(len(data) % 2)
		recs, err, _ := readLogAs(data, 7, format)
		if err != io.EOF && !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("err = %v, want io.EOF or corruption", err)
		}
		// AllowUnwritten reads the same records up to where either stops,
		// and ends at most where the strict reader finds corruption.
		lenient, lerr, _ := readUnwritten(data, format)
		if lerr != io.EOF && !errors.Is(lerr, base.ErrCorruption) {
			t.Fatalf("AllowUnwritten: err = %v, want io.EOF or corruption", lerr)
		}
		for i := range min(len(lenient), len(recs)) {
			if !bytes.Equal(lenient[i], recs[i]) {
				t.Fatalf("AllowUnwritten: record %d differs", i)
			}
		}
		if err == io.EOF && (lerr != io.EOF || len(lenient) != len(recs)) {
			t.Fatalf("AllowUnwritten: %d records, %v; the strict reader read %d, io.EOF", len(lenient), lerr, len(recs))
		}
		// Whatever was read must survive a rewrite unchanged.
		log, _, _ := writeRecyclable(t, recs, 7)
		again, err2, _ := readLog(log, 7)
		if err2 != io.EOF || len(again) != len(recs) {
			t.Fatalf("rewrite: %d records, %v", len(again), err2)
		}
		for i := range recs {
			if !bytes.Equal(recs[i], again[i]) {
				t.Fatalf("record %d changed on rewrite", i)
			}
		}
	})
}

// readFile returns the bytes of the file at path.
func readFile(t testing.TB, path string) []byte {
	file, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	data, err := io.ReadAll(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// logFormats are the formats a recyclable log's reader may be told.
var logFormats = []LogFormat{DetectFormat, RecyclableFormat}

func (f LogFormat) String() string {
	if f == RecyclableFormat {
		return "recyclable"
	}
	return "detect"
}

// describeEnd describes how a read ended: "EOF after n" records, or the
// corruption's message; any other error fails the test.
func describeEnd(t *testing.T, got [][]byte, err error) string {
	t.Helper()
	switch {
	case err == io.EOF:
		return fmt.Sprintf("EOF after %d", len(got))
	case errors.Is(err, base.ErrCorruption):
		return err.Error()
	}
	t.Fatalf("err = %v", err)
	return ""
}

// TestRecyclable_FirstHeaderBitFlips flips every bit of a log's first
// chunk header, the one whose type byte once decided the log's format:
// whatever the reader is told, the damage is corruption at offset 0, since
// valid chunks of the log follow it, never a torn tail that hides them.
func TestRecyclable_FirstHeaderBitFlips(t *testing.T) {
	log, _, _ := writeRecyclable(t, sizes(100, 0, 20_000, 3), 7)
	flips := 0
	for bit := 0; bit < 8*recyclableHeaderSize; bit++ {
		damaged := bytes.Clone(log)
		damaged[bit/8] ^= 1 << (bit % 8)
		for _, format := range logFormats {
			got, err, _ := readLogAs(damaged, 7, format)
			if desc := describeEnd(t, got, err); !strings.Contains(desc, "000007.log: offset 0:") {
				t.Fatalf("%v: bit %d of byte %d: got %q, want corruption at offset 0", format, bit%8, bit/8, desc)
			}
			flips++
		}
	}
	if flips != 2*8*recyclableHeaderSize {
		t.Fatalf("%d flips tried", flips)
	}
}

// TestLogReader_LegacyToldRecyclable: a legacy log whose reader is told it
// is recyclable is corruption at offset 0, not an empty log.
func TestLogReader_LegacyToldRecyclable(t *testing.T) {
	_, log, _ := tornLog(t)
	got, err, _ := readLogAs(log, 7, RecyclableFormat)
	if desc := describeEnd(t, got, err); !strings.Contains(desc, "000007.log: offset 0:") {
		t.Fatalf("got %q, want corruption at offset 0", desc)
	}
}
