package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// Tests of the memory-mapped WAL (wal_mmap.go). They run on vfs.Default in
// a temporary directory: the mapping needs a real file. The crash and
// fault tests on vfs.NewMem, StrictMem and errorfs run the other writer,
// walPreallocWriter.

// createMappedWAL creates a file in a temporary directory and returns it
// with a mapped writer from offset 0 of chunk bytes a chunk, allocating
// through alloc. It skips the test where the file system cannot be mapped.
func createMappedWAL(t *testing.T, chunk int64, alloc func(fd uintptr, off, n int64) error) (string, vfs.File, *walMmapWriter) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "000001.log")
	f, err := vfs.Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w, err := newWALMmapWriter(f, 0, chunk, alloc)
	if err != nil {
		t.Skipf("no mapped WAL here: %v", err)
	}
	return name, f, w
}

// testRecord returns record i of a test log: a few bytes to a few
// kilobytes, so records cross blocks and chunks.
func testRecord(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("record %d;", i)), 1+i%300)
}

// readLog returns the records of log 1 in the file name.
func readLog(t *testing.T, name string) [][]byte {
	t.Helper()
	f, err := vfs.Default.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := record.NewLogReader(f, name, 1, record.RecyclableFormat)
	var recs [][]byte
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return recs
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
}

// TestWALMmapWriter_GrowsAcrossChunks writes records through chunks of
// one page each and reads every one back after close.
func TestWALMmapWriter_GrowsAcrossChunks(t *testing.T) {
	allocs := 0
	name, f, w := createMappedWAL(t, 1, func(fd uintptr, off, n int64) error {
		allocs++
		return fallocate(fd, off, n)
	})
	lw := record.NewRecyclableWriterAt(w, 0, 1)
	const n = 500
	for i := range n {
		if _, err := lw.WriteRecord(testRecord(i)); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			if err := lw.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
	closeAndCheckRecords(t, name, f, w, n)
	if min := int(lw.Size()) / pageSize; allocs < min {
		t.Fatalf("%d allocations for %d bytes in chunks of a page: want at least %d", allocs, lw.Size(), min)
	}
}

// closeAndCheckRecords syncs and closes w, a mapped writer of the file
// name, as a WAL's close does, and checks that the file holds records 0
// to n-1 of testRecord, in order.
func closeAndCheckRecords(t *testing.T, name string, f vfs.File, w *walMmapWriter, n int) {
	t.Helper()
	if err := w.fillAhead(); err != nil {
		t.Fatal(err)
	}
	if err := f.SyncData(); err != nil {
		t.Fatal(err)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	checkTestRecords(t, name, n)
}

// checkTestRecords checks that the log in the file name reads back as
// testRecord(0) to testRecord(n-1).
func checkTestRecords(t *testing.T, name string, n int) {
	t.Helper()
	recs := readLog(t, name)
	if len(recs) != n {
		t.Fatalf("%d records read back, want %d", len(recs), n)
	}
	for i, rec := range recs {
		if !bytes.Equal(rec, testRecord(i)) {
			t.Fatalf("record %d reads back as %.40q", i, rec)
		}
	}
}

// writeRecordInPlace stores p, record i, as the next record of lw
// straight into w's mapping, as a mapped WAL's writers do: whole
// (writeRecord), or, for odd i, reserved, encoded and completed, as by a
// writer that overlaps others. ok is false, and nothing stored, where the
// record does not fit in the chunk mapped.
func writeRecordInPlace(w *walMmapWriter, lw *record.Writer, i int, p []byte) (ok bool, err error) {
	if i%2 == 0 {
		return w.writeRecord(lw, p)
	}
	r, dst, ok := w.reserveRecord(lw, len(p))
	if !ok {
		return false, nil
	}
	if err := storeMapped(r.Start, func() { r.Encode(dst, p) }); err != nil {
		return true, err
	}
	return true, storeMapped(r.Start, func() { r.Complete(dst) })
}

// TestWALMmapWriter_RecordsEncodedInPlace writes records as a mapped WAL
// does: encoded straight into the mapping (writeRecordInPlace) where they fit in
// the chunk mapped, through the record writer's buffer and Write, which
// maps the next chunk, where they do not, and some through the buffer
// anyway, as Sync records go. Every record reads back, in order.
func TestWALMmapWriter_RecordsEncodedInPlace(t *testing.T) {
	name, f, w := createMappedWAL(t, 16<<10, fallocate)
	lw := record.NewRecyclableWriterAt(w, 0, 1)
	const n = 500
	direct := 0
	for i := range n {
		if i%5 != 0 {
			ok, err := writeRecordInPlace(w, lw, i, testRecord(i))
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				direct++
				continue
			}
		}
		if _, err := lw.WriteRecord(testRecord(i)); err != nil {
			t.Fatal(err)
		}
		if err := lw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if w.off != lw.Size() {
		t.Fatalf("the mapping's writer is at %d, the record writer at %d", w.off, lw.Size())
	}
	if direct < n/2 {
		t.Fatalf("%d of %d records encoded in place: want most", direct, n)
	}
	closeAndCheckRecords(t, name, f, w, n)
}

// sinkRoute is the record writer's output in
// TestWALMmapWriter_WrittenThroughPastChunk: the mapping (Write), or,
// while through is set, pwrite(2) (writeThrough), as a WAL's route sends
// a Sync record to the sink, whose writer writes it so.
type sinkRoute struct {
	w       *walMmapWriter
	through bool
}

func (r *sinkRoute) Write(p []byte) (int, error) {
	if r.through {
		return r.w.writeThrough(p)
	}
	return r.w.Write(p)
}

// TestWALMmapWriter_WrittenThroughPastChunk: records written with
// pwrite(2), as the sink writes Sync records, run past the chunk mapped
// without mapping the next one; the records encoded into the mapping
// after them go into the next chunk, not past the end of the last. Every
// record reads back, in order.
func TestWALMmapWriter_WrittenThroughPastChunk(t *testing.T) {
	name, f, w := createMappedWAL(t, int64(pageSize), fallocate)
	route := &sinkRoute{w: w}
	lw := record.NewRecyclableWriterAt(route, 0, 1)
	const n = 500
	past := 0 // records encoded into the mapping while the writes were past its end
	for i := range n {
		if i%2 == 0 {
			pastEnd := w.off >= w.mapOff+int64(len(w.mapped))
			ok, err := writeRecordInPlace(w, lw, i, testRecord(i))
			if err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			if ok {
				if pastEnd {
					t.Fatalf("record %d encoded into a mapping that ends before it", i)
				}
				continue
			}
			if pastEnd {
				past++
			}
		}
		route.through = i%2 == 1
		if _, err := lw.WriteRecord(testRecord(i)); err != nil {
			t.Fatal(err)
		}
		if err := lw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if past == 0 {
		t.Fatal("no record followed writes past the chunk mapped: the test tests nothing")
	}
	if w.off != lw.Size() {
		t.Fatalf("the mapping's writer is at %d, the record writer at %d", w.off, lw.Size())
	}
	closeAndCheckRecords(t, name, f, w, n)
}

// TestWALMmapWriter_FillsWithinAllocation: before a sync, a mapped WAL
// zero-fills ahead of its writes within the space it allocated, and never
// past it, where the zeros would extend the file and, on a full disk,
// fail a sync whose records are all in allocated space.
func TestWALMmapWriter_FillsWithinAllocation(t *testing.T) {
	name, _, w := createMappedWAL(t, 16<<10, fallocate)
	lw := record.NewRecyclableWriterAt(w, 0, 1)
	for i := 0; w.allocated-w.off > 1<<10; i++ {
		if _, err := lw.WriteRecord([]byte(fmt.Sprintf("record %d", i))); err != nil {
			t.Fatal(err)
		}
		if err := lw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	allocated := w.allocated
	if err := w.fillAhead(); err != nil {
		t.Fatal(err)
	}
	if w.fill.filled != allocated {
		t.Fatalf("zeros written up to %d, want up to the allocation's end %d", w.fill.filled, allocated)
	}
	st, err := vfs.Default.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != allocated {
		t.Fatalf("the file is %d bytes after filling ahead, want the %d allocated", st.Size(), allocated)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
}

// TestWALMmapWriter_AllocationFails: when the file's space cannot be
// allocated (a full disk), Write returns an error wrapping the cause, and
// what was written before stays readable.
func TestWALMmapWriter_AllocationFails(t *testing.T) {
	allocs := 0
	name, _, w := createMappedWAL(t, 1, func(fd uintptr, off, n int64) error {
		if allocs++; allocs > 3 {
			return syscall.ENOSPC
		}
		return fallocate(fd, off, n)
	})
	lw := record.NewRecyclableWriterAt(w, 0, 1)
	written := 0
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		if _, err = lw.WriteRecord(testRecord(i)); err == nil {
			err = lw.Flush()
		}
		if err == nil {
			written++
		}
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("got %v after %d records, want ENOSPC", err, written)
	}
	if written == 0 {
		t.Fatal("no record written before the allocation failed")
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	if recs := readLog(t, name); len(recs) < written {
		t.Fatalf("read %d records, want at least the %d written", len(recs), written)
	}
}

// TestWALMmap_Chosen: the DB maps its WAL on vfs.Default only; on an
// in-memory FS or a wrapping one it writes it as before.
func TestWALMmap_Chosen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fs     vfs.FS
		mapped bool
	}{
		{"default", vfs.Default, true},
		{"mem", vfs.NewMem(), false},
		{"errorfs", errorfs.Wrap(vfs.Default, errorfs.OnIndex(-1)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Open(t.TempDir(), &Options{FS: tc.fs})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			_, mapped := d.commit.log.space.(*walMmapWriter)
			if mapped != tc.mapped {
				t.Fatalf("WAL writer %T, want mapped %v", d.commit.log.space, tc.mapped)
			}
		})
	}
}

// mmapTestKeys is how many keys the DB tests of the mapped WAL write:
// enough for several WALs of mmapTestOptions' memtables.
const mmapTestKeys = 3000

// mmapTestOptions are small memtables, so the WAL rotates and recycles
// its files, with the WAL written from the commit or in the background.
func mmapTestOptions(background bool) *Options {
	return &Options{FS: vfs.Default, MemTableSize: 32 << 10, BackgroundWALWrites: background}
}

// mmapTestKV is key i and its value.
func mmapTestKV(i int) (key, value []byte) {
	return []byte(fmt.Sprintf("key%06d", i*7919%mmapTestKeys)), []byte(fmt.Sprintf("value %d", i))
}

// openMapped opens the DB in dir with mmapTestOptions(background), and
// skips the test unless its WAL is mapped.
func openMapped(t *testing.T, dir string, background bool) *DB {
	t.Helper()
	d, _ := openMappedWith(t, dir, mmapTestOptions(background))
	return d
}

// openMappedWith opens the DB in dir with o and returns it with its WAL's
// mapped writer; it skips the test where the WAL is not mapped.
func openMappedWith(t *testing.T, dir string, o *Options) (*DB, *walMmapWriter) {
	t.Helper()
	d, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	mw, ok := d.commit.log.space.(*walMmapWriter)
	if !ok {
		d.Close()
		t.Skipf("no mapped WAL here: writer %T", d.commit.log.space)
	}
	return d, mw
}

// writeMapped writes keys lo..hi-1, one in seven Sync, the others NoSync.
func writeMapped(t *testing.T, d *DB, lo, hi int) {
	t.Helper()
	for i := lo; i < hi; i++ {
		var pwrites int64
		mw := d.commit.log.direct
		if mw != nil {
			pwrites = mw.pwrites
		}
		k, v := mmapTestKV(i)
		// Every seventh write is a Sync one, whose record a mapped WAL
		// writes with pwrite(2) between the records it copies.
		opts := NoSync
		if i%7 == 0 {
			opts = Sync
		}
		if err := d.Set(k, v, opts); err != nil {
			t.Fatal(err)
		}
		if mw != nil && opts == Sync && d.commit.log.direct == mw && mw.pwrites == pwrites {
			t.Fatalf("key %d: a Sync write's record was copied into the mapping", i)
		}
	}
}

// checkMapped checks that keys 0..n-1 hold their values.
func checkMapped(t *testing.T, d *DB, n int) {
	t.Helper()
	for i := range n {
		k, v := mmapTestKV(i)
		got, err := d.Get(k)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("key %s: got %q, %v; want %q", k, got, err, v)
		}
	}
}

// copyOpenDir copies every file of d's directory src into a new directory
// and returns it: what a crash of the process leaves. It waits until no
// flush or compaction runs first, so that the copy is of one moment, and
// fails unless the WAL it copies holds records.
func copyOpenDir(t *testing.T, d *DB, src string) string {
	t.Helper()
	if err := d.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w := d.commit.log.space.(*walMmapWriter); w.off == 0 {
		t.Fatalf("WAL %s is empty: the copy tests no mapped write", d.commit.log.name)
	}
	dst := t.TempDir()
	names, err := vfs.Default.List(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if err := vfs.Copy(vfs.Default, filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestWALMmap_RecoverAfterClose writes NoSync through the mapped WAL over
// several WAL files, closes, and finds every write after reopening; then
// appends to the reopened WAL and finds those too.
func TestWALMmap_RecoverAfterClose(t *testing.T) {
	for _, background := range []bool{false, true} {
		t.Run(fmt.Sprintf("background=%v", background), func(t *testing.T) {
			dir := t.TempDir()
			d := openMapped(t, dir, background)
			first := d.commit.log.num
			writeMapped(t, d, 0, mmapTestKeys/2)
			if last := d.commit.log.num; last < first+2 {
				t.Fatalf("writes went to WALs %s to %s: want several", first, last)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = openMapped(t, dir, background)
			checkMapped(t, d, mmapTestKeys/2)
			writeMapped(t, d, mmapTestKeys/2, mmapTestKeys)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = openMapped(t, dir, background)
			defer d.Close()
			checkMapped(t, d, mmapTestKeys)
		})
	}
}

// TestWALMmap_RecoverAfterCrash copies the directory of an open DB, whose
// last NoSync writes are only in mapped pages, never synced nor written
// with a system call, and finds every acknowledged write in the copy: a
// crash of the process loses nothing. The copy is then continued and
// reopened.
func TestWALMmap_RecoverAfterCrash(t *testing.T) {
	dir := t.TempDir()
	d := openMapped(t, dir, false)
	defer d.Close()
	writeMapped(t, d, 0, mmapTestKeys)
	crashed := copyOpenDir(t, d, dir)
	c := openMapped(t, crashed, false)
	checkMapped(t, c, mmapTestKeys)
	writeMapped(t, c, 0, 10)
	crashed2 := copyOpenDir(t, c, crashed)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = openMapped(t, crashed2, false)
	defer c.Close()
	checkMapped(t, c, mmapTestKeys)
}

// TestWALMmap_SyncWritesPastChunk writes Sync and NoSync in turn into one
// WAL larger than a mapped chunk (maxWALMmapChunk), until a NoSync write
// has followed Sync records that the sink wrote past the chunk mapped:
// every write succeeds, and every one is found in a copy of the open
// store (a crash of the process) and after Close.
func TestWALMmap_SyncWritesPastChunk(t *testing.T) {
	dir := t.TempDir()
	opts := FullSizeMemTables(&Options{FS: vfs.Default, MemTableSize: 3 * maxWALMmapChunk})
	d, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Close() }()
	w, ok := d.commit.log.space.(*walMmapWriter)
	if !ok {
		t.Skipf("no mapped WAL here: writer %T", d.commit.log.space)
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 1000+i%100) }
	n, past := 0, 0
	for ; past == 0 || n%2 == 1; n++ {
		if n == 2*maxWALMmapChunk/1000 {
			t.Fatalf("no NoSync write followed Sync records past a chunk in %d writes", n)
		}
		wo := Sync
		if n%2 == 1 {
			wo = NoSync
			if w.off >= w.mapOff+int64(len(w.mapped)) {
				past++
			}
		}
		if err := d.Set(key(n), value(n), wo); err != nil {
			t.Fatalf("write %d: %v", n, err)
		}
	}
	if d.commit.log.space != w {
		t.Fatal("the WAL rotated: the test wants its writes in one")
	}
	check := func(d *DB) {
		t.Helper()
		for i := range n {
			if got, err := d.Get(key(i)); err != nil || !bytes.Equal(got, value(i)) {
				t.Fatalf("key %d: got %d bytes, %v", i, len(got), err)
			}
		}
	}
	crashed := copyOpenDir(t, d, dir)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{crashed, dir} {
		if d, err = Open(dir, opts); err != nil {
			t.Fatal(err)
		}
		check(d)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// syncSpyFile is a file whose SyncData calls onSync first.
type syncSpyFile struct {
	vfs.File
	onSync func()
}

func (f *syncSpyFile) SyncData() error {
	f.onSync()
	return f.File.SyncData()
}

// TestWALMmap_UnmappedBeforeLastSync checks that closing a mapped WAL
// holding NoSync writes removes the mapping before the syncs that make
// its records durable (see walWriter.close): two, the records' and then
// the seal's (see commitPipeline.closeSealed), and that the records are
// in the file.
func TestWALMmap_UnmappedBeforeLastSync(t *testing.T) {
	dir := t.TempDir()
	d := openMapped(t, dir, false)
	l := d.commit.log
	syncs, mappedAtSync := 0, false
	l.file = &syncSpyFile{File: l.file, onSync: func() {
		l.direct.mu.Lock()
		defer l.direct.mu.Unlock()
		syncs++
		mappedAtSync = mappedAtSync || l.direct.mapped != nil
	}}
	for i := 0; i < 10; i++ {
		k, v := mmapTestKV(i)
		if err := d.Set(k, v, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if d.commit.log != l {
		t.Fatal("the WAL rotated: the test wants its writes in one")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if syncs != 2 || mappedAtSync {
		t.Fatalf("%d syncs of the WAL, one of them while mapped: %v; want 2, unmapped", syncs, mappedAtSync)
	}
	d = openMapped(t, dir, false)
	defer d.Close()
	checkMapped(t, d, 10)
}

// createMappedLog creates WAL 1 of d in a file of its own, mapped, for
// the tests that drive a walWriter as the commit pipeline does. It skips
// the test where no WAL is mapped.
func createMappedLog(t *testing.T, d *DB) (l *walWriter, name string) {
	t.Helper()
	name = filepath.Join(t.TempDir(), "000001.log")
	f, err := vfs.Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	l = d.newWALWriter(1, name, f, f, 0, 0, d.opts.MemTableSize, true)
	if l.direct == nil {
		l.abandon()
		t.Skipf("no mapped WAL here: writer %T", l.space)
	}
	return l, name
}

// closeAndCheckLog closes l, whose file is name, and checks that the
// file reads back as testRecord(0) to testRecord(n-1).
func closeAndCheckLog(t *testing.T, l *walWriter, name string, n int) {
	t.Helper()
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	checkTestRecords(t, name, n)
}

// TestWALMmap_SyncRecordsThroughSink checks how a mapped WAL routes its
// records: a NoSync record is copied into the mapping, a Sync record
// goes to the sink, and so does every record appended while the sink
// holds one unwritten, so that the file is written in stream order. The
// sink's writer then writes them all with one pwrite(2) before its sync.
func TestWALMmap_SyncRecordsThroughSink(t *testing.T) {
	d := openMapped(t, t.TempDir(), false)
	defer d.Close()
	l, name := createMappedLog(t, d)
	var m dbMetrics
	appendRec := func(i int, sync, wantMapped bool) int64 {
		t.Helper()
		var mapped mappedRecord
		end, copied, err := l.append(testRecord(i), sync, false, &m, &mapped)
		if err != nil {
			t.Fatal(err)
		}
		if mapped.log != nil {
			t.Fatalf("record %d was reserved for its writer with no record before it incomplete", i)
		}
		if copied != wantMapped {
			t.Fatalf("record %d (sync %v): copied into the mapping %v, want %v", i, sync, copied, wantMapped)
		}
		return end
	}
	appendRec(0, false, true)
	appendRec(1, true, false)
	end := appendRec(2, false, false) // behind record 1, unwritten
	if l.direct.pwrites != 0 {
		t.Fatalf("%d pwrites before the sink wrote, want 0", l.direct.pwrites)
	}
	if err := l.sink.wait(end, true); err != nil {
		t.Fatal(err)
	}
	if l.direct.pwrites != 1 {
		t.Fatalf("%d pwrites for records 1 and 2, want 1", l.direct.pwrites)
	}
	appendRec(3, false, true) // nothing unwritten: mapped again
	closeAndCheckLog(t, l, name, 4)
}

// TestWAL_RetiredWithoutFillAhead checks that the last sync of a WAL that
// Close retires writes no zeros past its last record, as a sync of a WAL
// still written does (see walPreallocWriter): no record follows them,
// and the sync would write them back with the records.
func TestWAL_RetiredWithoutFillAhead(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	l := d.commit.log
	for i := range 10 {
		k, v := mmapTestKV(i)
		if err := d.Set(k, v, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := fs.Stat(fs.PathJoin("db", l.name))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != l.w.Size() {
		t.Fatalf("retired WAL %s is %d bytes long, its records %d", l.name, st.Size(), l.w.Size())
	}
}

// TestWAL_SealAfterRecordsSynced checks that closing a WAL that holds
// NoSync writes syncs its records first, then appends the seal and syncs
// again: a seal on the disk then vouches for every record before it, in
// whatever order the file's unsynced pages reached the disk (see
// commitPipeline.closeSealed).
func TestWAL_SealAfterRecordsSynced(t *testing.T) {
	d, err := Open("db", &Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	l := d.commit.log
	var sizes []int64 // the stream's size at each sync
	l.file = &syncSpyFile{File: l.file, onSync: func() { sizes = append(sizes, l.w.Size()) }}
	for i := range 10 {
		k, v := mmapTestKV(i)
		if err := d.Set(k, v, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	records := l.w.Size()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || sizes[0] != records || sizes[1] <= records {
		t.Fatalf("syncs at stream sizes %v; want the records' %d, then past the seal", sizes, records)
	}
	recs := walRecords(t, d.fs, l.num)
	if n := len(recs); n != 11 || !isSeal(recs[n-1]) {
		t.Fatalf("%d records, the last a seal: %v; want 10 writes and a seal", n, n > 0 && isSeal(recs[n-1]))
	}
}
