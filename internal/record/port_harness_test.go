package record

import (
	"bytes"
	"encoding/binary"
	"io"
	"strconv"
	"strings"
	"testing"
)

// The harness shared by the ported scenarios (port_*_test.go): Pebble's
// record tests, LevelDB's db/log_test.cc and goleveldb's journal tests,
// run against this package's Writer and Reader in both chunk formats
// where the scenario is not about one of them.

// portFormat is a chunk format a ported scenario runs in: the legacy one
// (a MANIFEST), or the recyclable one of log 7 read as a store that
// records its WALs' format reads it.
type portFormat struct {
	name      string
	hdr       int
	newWriter func(io.Writer) *Writer
	newReader func(io.Reader) *Reader
}

var portFormats = []portFormat{
	{"legacy", headerSize, NewWriter, func(r io.Reader) *Reader { return NewReader(r, "000007.log") }},
	{"recyclable", recyclableHeaderSize,
		func(w io.Writer) *Writer { return NewRecyclableWriterAt(w, 0, 7) },
		func(r io.Reader) *Reader { return NewLogReader(r, "000007.log", 7, RecyclableFormat) }},
}

// write writes records in format f and returns the stream, each record's
// offset and the offset just past each record.
func (f portFormat) write(t testing.TB, records [][]byte) (log []byte, starts, ends []int64) {
	return writeStream(t, records, f.newWriter)
}

// read reads log in format f until an error, and returns the records
// and the error.
func (f portFormat) read(log []byte) ([][]byte, error) {
	return readAllRecords(f.newReader(bytes.NewReader(log)))
}

// forEachFormat runs fn as a subtest in each format.
func forEachFormat(t *testing.T, fn func(t *testing.T, f portFormat)) {
	for _, f := range portFormats {
		t.Run(f.name, func(t *testing.T) { fn(t, f) })
	}
}

// big returns a string of length n made of repetitions of partial
// (LevelDB's BigString, Pebble's big).
func big(partial string, n int) string {
	return strings.Repeat(partial, n/len(partial)+1)[:n]
}

// strs returns the records ss.
func strs(ss ...string) [][]byte {
	recs := make([][]byte, len(ss))
	for i, s := range ss {
		recs[i] = []byte(s)
	}
	return recs
}

// repeated returns records of the lengths ns, record i made of byte i
// (Pebble's makeTestRecords).
func repeated(ns ...int) [][]byte {
	recs := make([][]byte, len(ns))
	for i, n := range ns {
		recs[i] = bytes.Repeat([]byte{byte(i)}, n)
	}
	return recs
}

// fixChecksum recomputes the checksum of the chunk at off of log, of a
// header of hdr bytes, after a test changed its type (LevelDB's
// FixChecksum).
func fixChecksum(log []byte, off, hdr int) {
	n := int(binary.LittleEndian.Uint16(log[off+4:]))
	binary.LittleEndian.PutUint32(log[off:], checksum(log[off+6:off+hdr+n]))
}

// expectRead fails t unless a read returned the records want, in order,
// then ended as end says: "EOF", or a substring of the corruption.
func expectRead(t *testing.T, got [][]byte, err error, want [][]byte, end string) {
	t.Helper()
	desc := describeEnd(t, got, err)
	if end == "EOF" {
		end = "EOF after " + strconv.Itoa(len(want))
	}
	if desc != end && (!strings.HasPrefix(desc, "bloomkv: corruption") || !strings.Contains(desc, end)) {
		t.Fatalf("read ended %q, want %q", desc, end)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d: %d bytes %.20q, want %d bytes %.20q", i, len(got[i]), got[i], len(want[i]), want[i])
		}
	}
}
