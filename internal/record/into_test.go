package record

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// TestWriteRecordInto_SameBytes checks that records encoded straight into
// a destination are the bytes WriteRecord buffers, in both formats, for
// sizes that end exactly at, just short of and across block ends, and
// with the buffered and direct paths interleaved as a mapped WAL
// interleaves them.
func TestWriteRecordInto_SameBytes(t *testing.T) {
	const recyclable = 1
	sizes := []int{0, 1, 100, blockSize - headerSize, blockSize - recyclableHeaderSize,
		blockSize - recyclableHeaderSize - 3, blockSize, 3 * blockSize, 70000}
	for _, format := range []int{0, recyclable} {
		newWriter := func(w io.Writer) *Writer { return NewWriter(w) }
		if format == recyclable {
			newWriter = func(w io.Writer) *Writer { return NewRecyclableWriterAt(w, 0, 9) }
		}
		for _, lead := range []int{0, 5, blockSize - 20} {
			for _, n := range sizes {
				t.Run(fmt.Sprintf("format=%d/lead=%d/n=%d", format, lead, n), func(t *testing.T) {
					recs := [][]byte{payload(1, lead), payload(2, n), payload(3, 40), payload(4, n)}
					want, _, _ := writeStream(t, recs, newWriter)

					// Odd records through the buffer, even ones straight
					// into the stream's next bytes.
					var out bytes.Buffer
					w := newWriter(&out)
					stream := make([]byte, len(want)+64)
					for i, rec := range recs {
						if i%2 == 0 {
							if _, err := w.WriteRecord(rec); err != nil {
								t.Fatal(err)
							}
							if err := w.Flush(); err != nil {
								t.Fatal(err)
							}
							copy(stream, out.Bytes())
							continue
						}
						size := w.Size()
						need := w.recordLen(len(rec))
						if _, _, ok := w.WriteRecordInto(stream[size:size+int64(need)-1], rec); ok {
							t.Fatalf("record %d: a destination one byte short was taken", i)
						}
						if w.Size() != size {
							t.Fatalf("record %d: a refused record moved the stream to %d", i, w.Size())
						}
						start, filled, ok := w.WriteRecordInto(stream[size:], rec)
						if !ok || filled != need || start < size || w.Size() != size+int64(filled) {
							t.Fatalf("record %d: ok %v, start %d, filled %d (want %d), size %d -> %d",
								i, ok, start, filled, need, size, w.Size())
						}
						// The buffered path continues after these bytes.
						out.Write(stream[size : size+int64(filled)])
					}
					if got := stream[:w.Size()]; !bytes.Equal(got, want) {
						t.Fatalf("stream differs from WriteRecord's (%d bytes against %d)", len(got), len(want))
					}
				})
			}
		}
	}
}

// TestWriteRecordInto_RefusesBuffered checks that a Writer holding bytes
// not yet flushed encodes nothing straight into a destination: they come
// first in the stream.
func TestWriteRecordInto_RefusesBuffered(t *testing.T) {
	w := NewWriter(io.Discard)
	if _, err := w.WriteRecord([]byte("buffered")); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := w.WriteRecordInto(make([]byte, 1024), []byte("x")); ok {
		t.Fatal("encoded a record while bytes before it were buffered")
	}
}
