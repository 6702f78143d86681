package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

// reserveFormats are the two chunk formats, each with a Writer over w
// and a reader of its stream.
var reserveFormats = []struct {
	name      string
	hdr       int
	newWriter func(w io.Writer) *Writer
	read      func(log []byte) ([][]byte, error)
}{
	{"legacy", headerSize, func(w io.Writer) *Writer { return NewWriter(w) },
		func(log []byte) ([][]byte, error) { recs, _, err := readAll(log); return recs, err }},
	{"recyclable", recyclableHeaderSize, func(w io.Writer) *Writer { return NewRecyclableWriterAt(w, 0, 9) },
		func(log []byte) ([][]byte, error) {
			recs, err, _ := readLogAs(log, 9, RecyclableFormat)
			return recs, err
		}},
}

// TestReservation_SameBytes checks that records reserved, encoded and
// completed are the bytes WriteRecord buffers, in both formats, for
// sizes that end exactly at, just short of and across block ends, with
// the buffered and reserved paths interleaved as a mapped WAL
// interleaves them; and that a reservation with one byte too little
// room is refused and changes nothing.
func TestReservation_SameBytes(t *testing.T) {
	sizes := []int{0, 1, 100, blockSize - headerSize, blockSize - recyclableHeaderSize,
		blockSize - recyclableHeaderSize - 3, blockSize, 3 * blockSize, 70000}
	for _, format := range reserveFormats {
		// The leads put the next record at a block's start, within it,
		// past a tail too short for a header (padding), and where its
		// first chunk's header fills a block's tail, holding nothing,
		// in either format.
		for _, lead := range []int{0, 5, blockSize - 20, blockSize - 2*recyclableHeaderSize - 1,
			blockSize - 2*headerSize, blockSize - 2*recyclableHeaderSize} {
			for _, n := range sizes {
				t.Run(fmt.Sprintf("format=%s/lead=%d/n=%d", format.name, lead, n), func(t *testing.T) {
					recs := [][]byte{payload(1, lead), payload(2, n), payload(3, n), payload(4, 40), payload(5, n), payload(6, n)}
					want, _, _ := writeStream(t, recs, format.newWriter)

					// Even records through the buffer, odd ones reserved
					// and stored into the stream's next bytes.
					var out bytes.Buffer
					w := format.newWriter(&out)
					stream := make([]byte, len(want))
					for i, rec := range recs {
						size, need := w.Size(), w.recordLen(len(rec))
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
						if _, ok := w.Reserve(len(rec), need-1); ok {
							t.Fatalf("record %d: reserved with one byte too little room", i)
						}
						if w.Size() != size {
							t.Fatalf("record %d: a refused reservation moved the stream to %d", i, w.Size())
						}
						r, ok := w.Reserve(len(rec), need)
						if !ok || r.Start != size || r.End != size+int64(need) || w.Size() != r.End {
							t.Fatalf("record %d: ok %v, reserved [%d, %d), want [%d, %d); size now %d",
								i, ok, r.Start, r.End, size, size+int64(need), w.Size())
						}
						r.Encode(stream[r.Start:r.End], rec)
						r.Complete(stream[r.Start:r.End])
						// The buffered path continues after these bytes.
						out.Write(stream[r.Start:r.End])
					}
					if !bytes.Equal(stream, want) {
						t.Fatal("stream differs from WriteRecord's")
					}
				})
			}
		}
	}
}

// TestReserve_RefusesBuffered checks that a Writer holding bytes not yet
// flushed reserves nothing: they come first in the stream.
func TestReserve_RefusesBuffered(t *testing.T) {
	w := NewWriter(io.Discard)
	if _, err := w.WriteRecord([]byte("buffered")); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Reserve(1, 1024); ok {
		t.Fatal("reserved a record while bytes before it were buffered")
	}
}

// TestReservation_IncompleteIsTornTail stores records as concurrent
// writers of a mapped WAL do: each reserved in turn, encoded in any
// order, completed in stream order. At every point of that, and with
// the stores of one record cut short anywhere (a process killed in mid-
// store), the stream reads back the records completed so far, then ends
// as a torn tail: no incomplete record, and no record past one, reads as
// valid or as corruption. The bytes under the records are another
// log's, as in a recycled file, or random.
func TestReservation_IncompleteIsTornTail(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, format := range reserveFormats {
		for _, under := range []string{"zeros", "random", "older log"} {
			t.Run(format.name+"/"+under, func(t *testing.T) {
				// Record 2's first chunk is a header alone, filling the
				// first block's tail.
				recs := [][]byte{payload(1, 30), payload(2, blockSize-3*format.hdr-30), payload(3, 90),
					payload(4, 0), payload(5, 2*blockSize+7), payload(6, 90)}
				var out bytes.Buffer
				w := format.newWriter(&out)
				var rs []Reservation
				for _, rec := range recs {
					r, ok := w.Reserve(len(rec), 1<<30)
					if !ok {
						t.Fatal("reserve refused")
					}
					rs = append(rs, r)
				}
				stream := make([]byte, w.Size()+blockSize)
				switch under {
				case "random":
					for i := range stream {
						stream[i] = byte(rng.Uint32())
					}
				case "older log":
					old, _, _ := writeStream(t, sizes(100, 5000, 40000, 300, 20000), func(w io.Writer) *Writer {
						return NewRecyclableWriterAt(w, 0, 8)
					})
					copy(stream, old)
				}
				check := func(what string, stream []byte, completed int) {
					t.Helper()
					got, err := format.read(stream)
					if !errors.Is(err, io.EOF) {
						t.Fatalf("%s: %v after %d records, want the end of the log", what, err, len(got))
					}
					if len(got) != completed {
						t.Fatalf("%s: read %d records, want the %d completed", what, len(got), completed)
					}
					for i := range got {
						if !bytes.Equal(got[i], recs[i]) {
							t.Fatalf("%s: record %d differs", what, i)
						}
					}
				}
				// Encoded out of order, completed in order.
				order := rng.Perm(len(recs))
				encoded := map[int]bool{}
				for _, i := range order {
					r := rs[i]
					// Cut short at a few points: a prefix of the stores.
					full := append([]byte(nil), stream...)
					r.Encode(full[r.Start:r.End], recs[i])
					for _, cut := range []int64{0, 1, 6, 7, 11, (r.End - r.Start) / 2, r.End - r.Start - 1} {
						cut = min(max(cut, 0), r.End-r.Start)
						partial := append([]byte(nil), stream...)
						copy(partial[r.Start:r.Start+cut], full[r.Start:r.Start+cut])
						check(fmt.Sprintf("record %d encoded to byte %d of %d", i, cut, r.End-r.Start), partial, 0)
					}
					stream = full
					encoded[i] = true
					check(fmt.Sprintf("records %v encoded", order[:len(encoded)]), stream, 0)
				}
				for i, r := range rs {
					// Completed chunk by chunk: cut after the first
					// chunk's length, which completes a record of one
					// chunk and leaves one of several incomplete.
					done := append([]byte(nil), stream...)
					r.Complete(done[r.Start:r.End])
					first := append([]byte(nil), stream...)
					chunks := 0
					r.chunks(func(at int, _ byte, _, _ int) {
						if chunks++; chunks == 1 {
							length := r.Start + int64(at) + 4
							copy(first[length:length+2], done[length:length+2])
						}
					})
					if chunks == 1 {
						check(fmt.Sprintf("record %d completed", i), first, i+1)
					} else {
						check(fmt.Sprintf("record %d's first of %d chunks completed", i, chunks), first, i)
					}
					stream = done
					check(fmt.Sprintf("records to %d completed", i), stream, i+1)
				}
			})
		}
	}
}
