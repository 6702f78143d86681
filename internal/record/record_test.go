package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// payload returns n bytes that differ from record to record.
func payload(seed, n int) []byte {
	p := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range p {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		p[i] = byte(x)
	}
	return p
}

// writeLog writes records and returns the stream, each record's offset and
// the offset just past each record's last chunk.
func writeLog(t testing.TB, records [][]byte) (log []byte, starts, ends []int64) {
	return writeStream(t, records, NewWriter)
}

// writeStream is writeLog with the Writer newWriter returns.
func writeStream(t testing.TB, records [][]byte, newWriter func(io.Writer) *Writer) (log []byte, starts, ends []int64) {
	var buf bytes.Buffer
	w := newWriter(&buf)
	for _, rec := range records {
		off, err := w.WriteRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, off)
		ends = append(ends, w.Size())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != w.Size() {
		t.Fatalf("wrote %d bytes, Size says %d", buf.Len(), w.Size())
	}
	return buf.Bytes(), starts, ends
}

// readAll reads records until an error and returns them with the error.
func readAll(log []byte) ([][]byte, []int64, error) {
	r := NewReader(bytes.NewReader(log), "000007.log")
	var recs [][]byte
	var offs []int64
	for {
		rec, err := r.Next()
		if err != nil {
			return recs, offs, err
		}
		recs = append(recs, rec)
		offs = append(offs, r.Offset())
	}
}

func sizes(ns ...int) [][]byte {
	var recs [][]byte
	for i, n := range ns {
		recs = append(recs, payload(i, n))
	}
	return recs
}

func TestWriter_Reader_RoundTrip(t *testing.T) {
	const h = headerSize
	tests := []struct {
		name     string
		records  [][]byte
		wantSize int64
	}{
		{"no-records", nil, 0},
		{"empty-record", sizes(0), h},
		{"empty-records", sizes(0, 0, 0), 3 * h},
		{"small", sizes(1, 10, 100), 3*h + 111},
		{"fills-block-exactly", sizes(blockSize - h), blockSize},
		{"then-next-block", sizes(blockSize-h, 5), blockSize + h + 5},
		{"block-size-payload", sizes(blockSize), blockSize + h + h},
		{"leaves-6-bytes-padded", sizes(blockSize-2*h+1, 3), blockSize + h + 3},
		{"leaves-exactly-a-header", sizes(blockSize-2*h, 3), blockSize + h + 3},
		{"large", sizes(100_000), 100_000 + 4*h},
		{"large-mix", sizes(3, 70_000, 0, 40_000, 1, 32_761, 9), -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, starts, _ := writeLog(t, tt.records)
			if tt.wantSize >= 0 && int64(len(log)) != tt.wantSize {
				t.Fatalf("log is %d bytes, want %d", len(log), tt.wantSize)
			}
			got, offs, err := readAll(log)
			if err != io.EOF {
				t.Fatalf("err = %v, want io.EOF", err)
			}
			if len(got) != len(tt.records) {
				t.Fatalf("read %d records, want %d", len(got), len(tt.records))
			}
			for i := range got {
				if !bytes.Equal(got[i], tt.records[i]) || got[i] == nil {
					t.Fatalf("record %d: got %d bytes, want %d", i, len(got[i]), len(tt.records[i]))
				}
				if offs[i] != starts[i] {
					t.Fatalf("record %d: reader offset %d, writer offset %d", i, offs[i], starts[i])
				}
			}
		})
	}
}

func TestWriter_FlushDoesNotChangeBytes(t *testing.T) {
	records := sizes(3, 70_000, 0, 40_000, 1, 32_761, 9)
	want, _, _ := writeLog(t, records)
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, rec := range records {
		if _, err := w.WriteRecord(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if int64(buf.Len()) != w.Size() {
			t.Fatalf("after Flush %d bytes written, Size says %d", buf.Len(), w.Size())
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatal("flushing after every record changed the stream")
	}
}

func TestWriter_Layout(t *testing.T) {
	// One record pinned byte for byte: checksum, length, type, payload.
	log, _, _ := writeLog(t, [][]byte{[]byte("hi")})
	want := []byte{0, 0, 0, 0, 2, 0, chunkFull, 'h', 'i'}
	c := checksum([]byte{chunkFull, 'h', 'i'})
	want[0], want[1], want[2], want[3] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
	if !bytes.Equal(log, want) {
		t.Fatalf("got % x, want % x", log, want)
	}
	if checksum([]byte{0}) == 0 {
		t.Fatal("a zeroed header would verify")
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriter_ErrorIsSticky(t *testing.T) {
	w := NewWriter(&failWriter{n: 1})
	if _, err := w.WriteRecord(payload(1, blockSize)); err != nil {
		t.Fatalf("first block: %v", err)
	}
	if _, err := w.WriteRecord(payload(2, blockSize)); err == nil || !strings.Contains(err.Error(), "record: write: disk full") {
		t.Fatalf("second block: err = %v", err)
	}
	if _, err := w.WriteRecord([]byte("x")); err == nil {
		t.Fatal("WriteRecord after a failure succeeded")
	}
	if err := w.Flush(); err == nil {
		t.Fatal("Flush after a failure succeeded")
	}
}

type failReader struct{ r io.Reader }

func (f failReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("bad sector")
	}
	return n, err
}

func TestReader_ReadErrorIsNotCorruption(t *testing.T) {
	log, _, _ := writeLog(t, sizes(10, 50_000))
	r := NewReader(failReader{bytes.NewReader(log)}, "000009.log")
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := r.Next()
	if err == nil || errors.Is(err, base.ErrCorruption) || err == io.EOF ||
		!strings.Contains(err.Error(), "record: 000009.log: read at offset 32768: bad sector") {
		t.Fatalf("err = %v", err)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Fatalf("error not sticky: %v then %v", err, err2)
	}
}

// tornLog is a multi-record log crossing two block boundaries, with records
// split across blocks, block tail padding and empty records.
func tornLog(t testing.TB) ([][]byte, []byte, []int64) {
	records := sizes(100, 0, 20_000, 12_650, 3, 30_000, 1, 0, 5_000)
	log, _, ends := writeLog(t, records)
	return records, log, ends
}

func TestReader_TornTail_EveryTruncation(t *testing.T) {
	records, log, ends := tornLog(t)
	if len(log) < 2*blockSize {
		t.Fatalf("log of %d bytes does not cross two blocks", len(log))
	}
	step := 1
	if testing.Short() {
		step = 7
	}
	for cut := 0; cut <= len(log); cut += step {
		got, _, err := readAll(log[:cut])
		if err != io.EOF {
			t.Fatalf("cut at %d: err = %v, want io.EOF", cut, err)
		}
		want := 0
		for want < len(ends) && ends[want] <= int64(cut) {
			want++
		}
		if len(got) != want {
			t.Fatalf("cut at %d: read %d records, want %d", cut, len(got), want)
		}
		for i := range got {
			if !bytes.Equal(got[i], records[i]) {
				t.Fatalf("cut at %d: record %d differs", cut, i)
			}
		}
	}
}

func TestReader_TornTail_Garbled(t *testing.T) {
	// The last record lies within the final block: garbling any of it
	// leaves nothing valid after the damage.
	records := append(sizes(100, 0, 20_000, 12_650, 3, 30_000, 1, 0, 5_000), payload(99, 300))
	log, _, ends := writeLog(t, records)
	last := len(records) - 1
	start := int(ends[last-1])
	tests := []struct {
		name string
		tail func([]byte) []byte
	}{
		{"zeroed-last-record", func(l []byte) []byte { clear(l[start:]); return l }},
		{"zero-filled-extension", func(l []byte) []byte { return append(l, make([]byte, 3*blockSize)...) }},
		{"garbage-extension", func(l []byte) []byte { return append(l, bytes.Repeat([]byte{0xa5}, 50_000)...) }},
		{"last-payload-flipped", func(l []byte) []byte { l[len(l)-1] ^= 1; return l }},
		{"last-header-length", func(l []byte) []byte { l[start+4] ^= 0x10; return l }},
		{"last-type-zeroed", func(l []byte) []byte { l[start+6] = 0; return l }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.tail(bytes.Clone(log))
			got, _, err := readAll(l)
			if err != io.EOF {
				t.Fatalf("err = %v, want io.EOF", err)
			}
			want := len(records)
			if tt.name != "zero-filled-extension" && tt.name != "garbage-extension" {
				want = last
			}
			if len(got) != want {
				t.Fatalf("read %d records, want %d", len(got), want)
			}
		})
	}
}

func TestReader_DamagedRecordStartBeforeValidFragment(t *testing.T) {
	// Garbling the first chunk of a record that crosses into the next block
	// leaves its valid last chunk after the damage: that is corruption.
	_, log, ends := tornLog(t)
	start := int(ends[len(ends)-2])
	l := bytes.Clone(log)
	l[start+4] ^= 0x10
	_, _, err := readAll(l)
	want := fmt.Sprintf("offset %d: chunk fails its checksum, type or length check, and valid data follows at offset %d", start, 2*blockSize)
	if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want corruption containing %q", err, want)
	}
}

func TestReader_MidFileCorruption(t *testing.T) {
	records, log, ends := tornLog(t)
	// Record 2 (20,000 bytes) starts in block 0; record 3 crosses into block 1.
	r2 := int(ends[1])
	tests := []struct {
		name    string
		damage  func([]byte)
		wantOff int
		before  int
	}{
		{"checksum", func(l []byte) { l[r2] ^= 0xff }, r2, 2},
		{"length", func(l []byte) { l[r2+5] ^= 0x40 }, r2, 2},
		{"type", func(l []byte) { l[r2+6] = 9 }, r2, 2},
		{"payload", func(l []byte) { l[r2+headerSize+500] ^= 1 }, r2, 2},
		{"zeroed-range", func(l []byte) { clear(l[r2 : r2+100]) }, r2, 2},
		{"first-record", func(l []byte) { l[10] ^= 1 }, 0, 0},
		{"second-block-start", func(l []byte) { l[blockSize+headerSize+3] ^= 1 }, blockSize, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := bytes.Clone(log)
			tt.damage(l)
			got, _, err := readAll(l)
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("err = %v, want corruption", err)
			}
			want := fmt.Sprintf("record: 000007.log: offset %d:", tt.wantOff)
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %q, want it to contain %q", err, want)
			}
			if len(got) != tt.before {
				t.Fatalf("read %d records before the damage, want %d", len(got), tt.before)
			}
			for i := range got {
				if !bytes.Equal(got[i], records[i]) {
					t.Fatalf("record %d differs", i)
				}
			}
		})
	}
}

// chunk builds one chunk by hand.
func chunk(typ byte, p string) []byte {
	b := []byte{0, 0, 0, 0, byte(len(p)), byte(len(p) >> 8), typ}
	b = append(b, p...)
	c := checksum(b[6:])
	b[0], b[1], b[2], b[3] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
	return b
}

func TestReader_FragmentSequence(t *testing.T) {
	cat := func(cs ...[]byte) []byte { return bytes.Join(cs, nil) }
	tests := []struct {
		name string
		log  []byte
		want string // records read, then the error
	}{
		{"first-middle-last", cat(chunk(chunkFirst, "ab"), chunk(chunkMiddle, "c"), chunk(chunkLast, "d")), "abcd EOF"},
		{"first-then-eof", cat(chunk(chunkFull, "x"), chunk(chunkFirst, "ab")), "x EOF"},
		{"orphan-middle", cat(chunk(chunkFull, "x"), chunk(chunkMiddle, "ab")), "x offset 8: fragment of a record whose start is missing"},
		{"orphan-last", chunk(chunkLast, "ab"), "offset 0: fragment of a record whose start is missing"},
		{"first-then-full", cat(chunk(chunkFirst, "ab"), chunk(chunkFull, "c")), "offset 0: record has no last fragment"},
		{"first-then-first", cat(chunk(chunkFull, "x"), chunk(chunkFirst, "ab"), chunk(chunkFirst, "c"), chunk(chunkLast, "d")), "x offset 8: record has no last fragment"},
		{"short-header-at-end", cat(chunk(chunkFull, "x"), []byte{1, 2, 3}), "x EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, _, err := readAll(tt.log)
			var parts []string
			for _, r := range recs {
				parts = append(parts, string(r))
			}
			if err == io.EOF {
				parts = append(parts, "EOF")
			} else {
				if !errors.Is(err, base.ErrCorruption) {
					t.Fatalf("err = %v", err)
				}
				parts = append(parts, err.Error()[strings.Index(err.Error(), "offset"):])
			}
			if got := strings.Join(parts, " "); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReader_ErrorIsSticky(t *testing.T) {
	r := NewReader(bytes.NewReader(chunk(chunkLast, "z")), "x.log")
	_, err := r.Next()
	if _, err2 := r.Next(); err == nil || err2 != err {
		t.Fatalf("errors %v then %v", err, err2)
	}
	r = NewReader(bytes.NewReader(nil), "x.log")
	for range 3 {
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("err = %v, want io.EOF", err)
		}
	}
}

// goldenLogs are the golden WALs and MANIFEST shared by the module's
// packages (see testdata/golden/README.md): whole logs as the engine
// writes them, the fuzz targets' seeds.
var goldenLogs = []string{
	"../../testdata/golden/wal/000001.log",
	"../../testdata/golden/wal/000002.log",
	"../../testdata/golden/manifest/MANIFEST-000002",
}

// readGoldenLogs returns the bytes of each golden log.
func readGoldenLogs(f *testing.F) [][]byte {
	var logs [][]byte
	for _, path := range goldenLogs {
		logs = append(logs, readFile(f, path))
	}
	return logs
}

func FuzzReader(f *testing.F) {
	for _, log := range readGoldenLogs(f) {
		f.Add(log)
	}
	_, log, _ := tornLog(f)
	f.Add(log[:300])
	f.Add(log)
	f.Add(log[:blockSize+50])
	f.Add(append(chunk(chunkFirst, "ab"), chunk(chunkLast, "cd")...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, _, err := readAll(data)
		if err != io.EOF && !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("err = %v, want io.EOF or corruption", err)
		}
		// Whatever was read must survive a rewrite unchanged.
		again, _, err2 := readAll(mustLog(t, recs))
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

func mustLog(t testing.TB, recs [][]byte) []byte {
	log, _, _ := writeLog(t, recs)
	return log
}

// TestWriterAt_ContinuesStream stops a stream after each record, continues
// it with NewWriterAt, and checks the bytes are those of one Writer; the
// Reader's End says where each record stopped.
func TestWriterAt_ContinuesStream(t *testing.T) {
	records := sizes(3, 70_000, 0, blockSize-2*headerSize+1, 3, 40_000, 1, blockSize-2*headerSize, 32_761, 9)
	want, _, ends := writeLog(t, records)
	for cut := range records {
		var buf bytes.Buffer
		buf.Write(want[:ends[cut]])
		w := NewWriterAt(&buf, ends[cut])
		for _, rec := range records[cut+1:] {
			if _, err := w.WriteRecord(rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want) || w.Size() != int64(len(want)) {
			t.Fatalf("continuing after record %d: %d bytes (Size %d), want the %d of one stream", cut, buf.Len(), w.Size(), len(want))
		}
	}
	r := NewReader(bytes.NewReader(want), "000007.log")
	for i := 0; ; i++ {
		if _, err := r.Next(); err != nil {
			if err != io.EOF || r.End() != int64(len(want)) {
				t.Fatalf("at the end: %v, End %d, want io.EOF and %d", err, r.End(), len(want))
			}
			break
		}
		if r.End() != ends[i] {
			t.Fatalf("record %d: End %d, want %d", i, r.End(), ends[i])
		}
	}
}

// TestReader_End_TornTail: a torn tail leaves End at the last whole
// record, short of the stream's length.
func TestReader_End_TornTail(t *testing.T) {
	log, _, ends := writeLog(t, sizes(10, 50_000, 20))
	torn := log[:len(log)-5]
	r := NewReader(bytes.NewReader(torn), "000007.log")
	for {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	if r.End() != ends[1] {
		t.Fatalf("End = %d, want %d (after the second record)", r.End(), ends[1])
	}
}
