package kv

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// TestBitFlip_WALFirstChunkType is issue 21's repro: ten keys each Set
// with Sync, a clean Close, and one bit of the WAL's first chunk type
// flipped (recyclable full, 5, becomes legacy full, 1, or 4, 7). Open
// must report corruption at offset 0 of the WAL, not read the log as a
// torn tail and lose all ten keys.
func TestBitFlip_WALFirstChunkType(t *testing.T) {
	for _, bit := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("bit%d", bit), func(t *testing.T) {
			fs := vfs.NewMem()
			d, err := Open("db", &Options{FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				if err := d.Set([]byte(fmt.Sprintf("key%02d", i)), []byte("value"), Sync); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			data := readFile(t, fs, "db/000001.log")
			if data[6] != 5 {
				t.Fatalf("first chunk type %d, want 5 (recyclable full)", data[6])
			}
			data[6] ^= 1 << bit
			writeFile(t, fs, "db/000001.log", data)
			d, err = Open("db", &Options{FS: fs})
			if err == nil {
				n := 0
				for i := range 10 {
					if _, err := d.Get([]byte(fmt.Sprintf("key%02d", i))); err == nil {
						n++
					}
				}
				d.Close()
				t.Fatalf("Open succeeded with %d of 10 synced keys", n)
			}
			requireNamedCorruption(t, err, "after the flip", "000001.log")
			if !strings.Contains(err.Error(), "offset 0:") {
				t.Fatalf("error %q does not name offset 0", err)
			}
		})
	}
}

// TestBitFlip_WAL sweeps single bits of a WAL holding synced batches (sets,
// multi-key batches, deletions, range deletions), in both WAL modes: every
// bit of its records and of the zeros after them (the first 4 KiB and
// every chunk header of a larger, multi-block WAL with -sweep=full).
func TestBitFlip_WAL(t *testing.T) {
	for _, bgwal := range []bool{false, true} {
		t.Run(fmt.Sprintf("BackgroundWALWrites=%v", bgwal), func(t *testing.T) {
			// The short sweep's WAL: every record and 256 zero bytes after
			// them; the full one's: the first 4 KiB and every chunk header
			// of a WAL of several blocks.
			batches, valueSize, head := 24, 8, int64(0)
			if fullSweep() {
				batches, valueSize, head = 240, 400, 4096
			}
			s := buildWALSweepStore(t, bgwal, batches, valueSize)
			name := s.storeFile(t, func(n string) bool { return strings.HasSuffix(n, ".log") })
			end := logEnd(t, s.fs, "db/"+name)
			if !fullSweep() {
				head = end + 256
			} else if end < 2*walBlockSize {
				t.Fatalf("the full sweep's WAL is %d bytes, want several blocks", end)
			}
			headers := walChunkHeaderBytes(readFile(t, s.fs, "db/"+name), end)
			want := func(bit int64) bool { return bit < 8*head || headers[bit/8] }
			min := 8 * head
			for off := range headers {
				if off >= head {
					min += 8
				}
			}
			s.sweepBits(t, name, want, int(min))
		})
	}
}

// walSealSize is the size of a WAL's seal (see sealLog): a recyclable
// chunk header and an empty batch.
const walSealSize = 11 + batchHeaderLen

// walBlockSize is internal/record's block size: no chunk crosses a
// multiple of it.
const walBlockSize = 32 << 10

// walChunkHeaderBytes returns the byte offsets of the chunk headers of the
// recyclable log data, whose records end at end.
func walChunkHeaderBytes(data []byte, end int64) map[int64]bool {
	const hdr = 11
	bytes := make(map[int64]bool)
	for pos := int64(0); pos < end; {
		if left := walBlockSize - pos%walBlockSize; left < hdr {
			pos += left
			continue
		}
		for i := range int64(hdr) {
			bytes[pos+i] = true
		}
		pos += hdr + int64(binary.LittleEndian.Uint16(data[pos+4:]))
	}
	return bytes
}

// buildWALSweepStore writes batches synced batches (values of valueSize
// bytes) to a new store in a MemFS, closing and reopening it halfway, and
// closes it, leaving them all in one WAL: the first half, a seal, the
// second half, a seal.
func buildWALSweepStore(t *testing.T, bgwal bool, batches, valueSize int) *sweepStore {
	t.Helper()
	s := &sweepStore{
		fs:     vfs.NewMem(),
		opts:   Options{MemTableSize: int64(max(64<<10, 2*batches*valueSize)), BackgroundWALWrites: bgwal},
		values: make(map[string]string),
	}
	o := s.opts
	o.FS = s.fs
	for half := range 2 {
		d, err := Open("db", &o)
		if err != nil {
			t.Fatal(err)
		}
		for i := half * batches / 2; i < (half+1)*batches/2; i++ {
			s.writeSweepBatch(t, d, i, valueSize)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// writeSweepBatch writes batch i of a sweep store, with Sync, and records
// it in the model: a set, a batch of two sets and a deletion, a deletion,
// or a range deletion.
func (s *sweepStore) writeSweepBatch(t *testing.T, d *DB, i, valueSize int) {
	t.Helper()
	key := func(j int) string { return fmt.Sprintf("k%04d", j) }
	value := strings.Repeat(fmt.Sprintf("v%d.", i), valueSize)[:valueSize]
	b := d.NewBatch()
	set := func(k string) {
		b.Set([]byte(k), []byte(value))
		s.values[k] = value
	}
	del := func(k string) {
		b.Delete([]byte(k))
		if _, ok := s.values[k]; ok {
			delete(s.values, k)
			s.gone = append(s.gone, k)
		}
	}
	switch {
	case i%4 != 3 || i < 8:
		set(key(i))
	case i%8 == 3:
		set(key(i))
		set(key(i) + "b")
		del(key(i - 2))
	default:
		lo, hi := key(i-7), key(i-5)
		b.DeleteRange([]byte(lo), []byte(hi))
		for k := range s.values {
			if lo <= k && k < hi {
				del(k)
			}
		}
	}
	if err := d.Apply(b, Sync); err != nil {
		t.Fatal(err)
	}
}
