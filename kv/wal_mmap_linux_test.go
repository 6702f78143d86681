//go:build linux

package kv

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/cockroachdb/pebble/vfs"
)

// TestWALMmapWriter_FaultIsError: a store that faults (the file was
// truncated under the mapping) is an error, not a crash.
func TestWALMmapWriter_FaultIsError(t *testing.T) {
	_, f, w := createMappedWAL(t, 1<<20, fallocate)
	if _, err := w.Write([]byte("before")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Ftruncate(int(f.Fd()), 0); err != nil {
		t.Fatal(err)
	}
	_, err := w.Write(make([]byte, 2*pageSize))
	if err == nil {
		t.Fatal("a write into a truncated mapping succeeded")
	}
	t.Logf("write after truncation: %v", err)
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
}

// TestWALMmapWriter_FaultIsError_InPlace: a record encoded straight into
// a mapping whose file was truncated is an error, not a crash.
func TestWALMmapWriter_FaultIsError_InPlace(t *testing.T) {
	_, f, w := createMappedWAL(t, 1<<20, fallocate)
	lw := record.NewRecyclableWriterAt(w, 0, 1)
	if ok, err := w.writeRecord(lw, []byte("before")); !ok || err != nil {
		t.Fatalf("first record: ok %v, %v", ok, err)
	}
	if err := syscall.Ftruncate(int(f.Fd()), 0); err != nil {
		t.Fatal(err)
	}
	_, err := w.writeRecord(lw, make([]byte, 2*pageSize))
	if err == nil {
		t.Fatal("a record encoded into a truncated mapping succeeded")
	}
	t.Logf("record after truncation: %v", err)
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
}

// TestWALMmapWriter_Prefaults: the prefaulter populates the pages ahead
// of the writes, keeps up with them, and the records written meanwhile
// read back whole.
func TestWALMmapWriter_Prefaults(t *testing.T) {
	name, _, w := createMappedWAL(t, 4<<20, fallocate)
	populated := func() int64 {
		w.pf.mu.Lock()
		defer w.pf.mu.Unlock()
		return w.pf.next
	}
	waitPopulated := func(upTo int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for populated() < upTo {
			if time.Now().After(deadline) {
				t.Fatalf("populated up to %d, want %d: the kernel may lack MADV_POPULATE_WRITE", populated(), upTo)
			}
			time.Sleep(time.Millisecond)
		}
	}
	lw := record.NewRecyclableWriterAt(w, 0, 1)
	want := [][]byte{[]byte("first")}
	if _, err := lw.WriteRecord(want[0]); err != nil {
		t.Fatal(err)
	}
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
	waitPopulated(prefaultAhead)
	for i := 0; w.off < 2<<20; i++ {
		rec := testRecord(i)
		want = append(want, rec)
		if _, err := lw.WriteRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
	waitPopulated(w.off + prefaultAhead/2)
	t.Logf("%d records, %d bytes written, populated up to %d", len(want), w.off, populated())
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	got := readLog(t, name)
	if len(got) != len(want) {
		t.Fatalf("read %d records back, wrote %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}

// TestWALMmapWriter_RetiredMappingsRemoved: the chunks the writes have
// left are unmapped in the background, so a WAL holds one mapping of its
// file however long it grows, and none once closed.
func TestWALMmapWriter_RetiredMappingsRemoved(t *testing.T) {
	name, _, w := createMappedWAL(t, 1, fallocate)
	lw := record.NewRecyclableWriterAt(w, 0, 1)
	for i := range 200 {
		if _, err := lw.WriteRecord(testRecord(i)); err != nil {
			t.Fatal(err)
		}
		if err := lw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if lw.Size() < 32*int64(pageSize) {
		t.Fatalf("wrote %d bytes: too few chunks of a page to test", lw.Size())
	}
	deadline := time.Now().Add(30 * time.Second)
	for mappingsOf(t, name) > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d mappings of the WAL after the writes left them, want 1", mappingsOf(t, name))
		}
		time.Sleep(time.Millisecond)
	}
	if n := mappingsOf(t, name); n != 1 {
		t.Fatalf("%d mappings of the WAL while it is written, want 1", n)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	if n := mappingsOf(t, name); n != 0 {
		t.Fatalf("%d mappings of the WAL after close, want 0", n)
	}
}

// mappingsOf counts the mappings of the file name in this process.
func mappingsOf(t *testing.T, name string) int {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	return bytes.Count(maps, []byte(" "+name+"\n"))
}

// TestWALMmap_PrefaultsAheadOfCommits: records that commits encode in
// place ask the prefaulter for pages under the commit pipeline's mu, and
// the writers wake it once out of the mu; it then keeps the pages ahead
// of the commits populated.
func TestWALMmap_PrefaultsAheadOfCommits(t *testing.T) {
	d, mw := openLargeMapped(t)
	defer d.Close()
	value := make([]byte, 100)
	for i := 0; mw.off < 2*prefaultAhead; i++ {
		if err := d.Set([]byte(fmt.Sprintf("key%08d", i)), value, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if d.commit.log.direct != mw || mw.pwrites != 0 {
		t.Fatalf("records written with %d pwrites, or to another WAL: want every one copied in place", mw.pwrites)
	}
	off := mw.off
	deadline := time.Now().Add(10 * time.Second)
	for {
		mw.pf.mu.Lock()
		next := mw.pf.next
		mw.pf.mu.Unlock()
		if next >= off {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("populated up to %d, records written up to %d: the kernel may lack MADV_POPULATE_WRITE, or the prefaulter was not woken", next, off)
		}
		time.Sleep(time.Millisecond)
	}
	if mw.pf.due.Load() {
		t.Fatal("a wake is still due after the writes returned")
	}
}

// openLargeMapped opens a store in a temporary directory on the disk,
// with memtables (and WALs) of 64 MiB, and returns it with its mapped
// WAL's writer; it skips the test where the WAL is not mapped.
func openLargeMapped(t *testing.T) (*DB, *walMmapWriter) {
	t.Helper()
	return openMappedWith(t, t.TempDir(), &Options{FS: vfs.Default, MemTableSize: 64 << 20})
}

// TestWALMmap_WritesBackUnmappedChunks: as the records move on, the
// prefaulter starts the writeback of each chunk the writes have left, so
// that the WAL's sync at the next rotation has less to write; and it
// starts none within the chunk mapped, whose pages are still written
// (see prefaulter).
func TestWALMmap_WritesBackUnmappedChunks(t *testing.T) {
	o := &Options{FS: vfs.Default, MemTableSize: 64 << 20}
	o.private.fullSizeMemTables = true // one WAL for the whole test
	o.private.walMmapChunk = 1 << 20
	d, mw := openMappedWith(t, t.TempDir(), o)
	defer d.Close()
	value := make([]byte, 1000)
	want := 3 * mw.chunk
	mapped := func() (off int64) {
		mw.mu.Lock()
		defer mw.mu.Unlock()
		return mw.mapOff
	}
	for i := 0; mw.off < want+prefaultAhead; i++ {
		if err := d.Set([]byte(fmt.Sprintf("key%08d", i)), value, NoSync); err != nil {
			t.Fatal(err)
		}
		// A new WAL's chunks start at offset 0, so the bytes written
		// back end where the count does.
		if back, from := mw.pf.writtenBack.Load(), mapped(); back > from {
			t.Fatalf("writeback started up to offset %d; the chunk mapped starts at %d", back, from)
		}
	}
	if d.commit.log.direct != mw {
		t.Fatal("the WAL rotated while it was written")
	}
	deadline := time.Now().Add(10 * time.Second)
	for back := mw.pf.writtenBack.Load(); back < want; back = mw.pf.writtenBack.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("writeback started for %d bytes, records written up to %d: want it for %d", back, mw.off, want)
		}
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < 10; i++ {
		mustGet(t, d, fmt.Sprintf("key%08d", i), string(value))
	}
}

// TestPrefaulter_WakeAfterClose: a writer wakes the prefaulter once out
// of the commit pipeline's mu (wakeDue), so a rotation or Close may have
// closed the WAL, and stopped its prefaulter, in between: the wake must
// then do nothing. Before, it sent on the channel that stop closed.
func TestPrefaulter_WakeAfterClose(t *testing.T) {
	_, _, w := createMappedWAL(t, 1<<20, fallocate)
	if ok, err := w.writeRecord(record.NewRecyclableWriterAt(io.Discard, 0, 1), []byte("record")); !ok || err != nil {
		t.Fatalf("writeRecord: %v, %v", ok, err)
	}
	if !w.pf.due.Load() {
		t.Fatal("the first record left no wake due")
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	w.pf.wakeDue()
	w.pf.wake()
}

// TestWALMmap_FaultStopsWrites: records that fault while stored into
// the mapping (the WAL was truncated under the store), by writers that
// overlap, so that most encode their own records out of the commit
// pipeline's mu, fail their writes and stop every later one; Close then
// reports the failure, once every writer that reserved a record is done
// with it, rather than wait for records that are never completed.
func TestWALMmap_FaultStopsWrites(t *testing.T) {
	d := openMapped(t, t.TempDir(), false)
	if err := d.Set([]byte("before"), []byte("v"), NoSync); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Ftruncate(int(d.commit.log.file.Fd()), 0); err != nil {
		t.Fatal(err)
	}
	// The next writes fault once they reach a page the truncation took.
	var wg sync.WaitGroup
	var failed atomic.Int32
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				k := []byte(fmt.Sprintf("w%d-%04d", w, i))
				if err := d.Set(k, bytes.Repeat([]byte("v"), 1000), NoSync); err != nil {
					if failed.Add(1) == 1 {
						t.Logf("write after truncation: %v", err)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 4 {
		t.Fatalf("%d of 4 writers failed writing into a truncated WAL", failed.Load())
	}
	if err := d.Set([]byte("after"), []byte("v"), NoSync); err == nil {
		t.Fatal("a write after the failed ones succeeded")
	}
	if err := d.Close(); err == nil {
		t.Fatal("Close after a failed WAL write reported nothing")
	}
}

// TestWALMmap_EncodeFaultStopsOrder: a record that faults while its
// writer encodes it (the file was truncated under the mapping) stops the
// WAL's order: the record after it is never completed, and closing the
// WAL reports the failure.
func TestWALMmap_EncodeFaultStopsOrder(t *testing.T) {
	d := openMapped(t, t.TempDir(), false)
	defer d.Close()
	l, _ := createMappedLog(t, d)
	first, second := reserveForWriter(t, l, testRecord(0)), reserveForWriter(t, l, testRecord(1))
	if err := syscall.Ftruncate(int(l.file.Fd()), 0); err != nil {
		t.Fatal(err)
	}
	err := first.encode(testRecord(0))
	if err == nil {
		t.Fatal("a record encoded into a truncated mapping succeeded")
	}
	t.Logf("encoding after truncation: %v", err)
	if err := first.complete(); err == nil {
		t.Fatal("the failed record completed")
	}
	if err := second.encode(testRecord(1)); err == nil {
		if err := second.complete(); err == nil {
			t.Fatal("the record after the failed one completed")
		}
	}
	if err := l.close(); err == nil {
		t.Fatal("closing the WAL after a failed record reported nothing")
	}
}

// TestWALMmapWriter_PastFourGiB writes records across the 4 GiB offset of
// a (sparse) WAL file, mapped 16 KiB at a time, some encoded in place and
// some through the record writer's buffer, and reads them back from the
// file: offsets into the file and the mapping hold past 32 bits.
func TestWALMmapWriter_PastFourGiB(t *testing.T) {
	const start = 1<<32 - 64<<10 // a block boundary
	name := t.TempDir() + "/000001.log"
	f, err := vfs.Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := newWALMmapWriter(f, start, 16<<10, fallocate)
	if err != nil {
		t.Skipf("no mapped WAL here: %v", err)
	}
	lw := record.NewRecyclableWriterAt(w, start, 1)
	const n = 200
	for i := range n {
		if ok, err := writeRecordInPlace(w, lw, i, testRecord(i)); err != nil {
			t.Fatal(err)
		} else if !ok {
			if _, err := lw.WriteRecord(testRecord(i)); err == nil {
				err = lw.Flush()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if lw.Size() < 1<<32+64<<10 || w.off != lw.Size() {
		t.Fatalf("records end at %d, writer at %d: want both past 4 GiB + 64 KiB", lw.Size(), w.off)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	r := record.NewLogReader(io.NewSectionReader(f, start, lw.Size()-start), name, 1, record.RecyclableFormat)
	for i := range n {
		rec, err := r.Next()
		if err != nil || !bytes.Equal(rec, testRecord(i)) {
			t.Fatalf("record %d: %.40q, %v", i, rec, err)
		}
	}
}
