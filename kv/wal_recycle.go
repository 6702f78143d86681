package kv

import (
	"io"
	"math"
	"sync"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cockroachdb/pebble/vfs"
)

// WAL recycling, as in Pebble and RocksDB. A flushed memtable's WAL files
// are not deleted but kept, a few at most, and the next WAL created takes
// one over: the file is renamed to the new WAL's name and overwritten from
// offset 0. Writing within the file's old size, the WAL's syncs need not
// record a new size or new blocks, which makes a Sync write cheaper. The
// old log's records remain past the new one's last write; their chunks
// carry the old WAL's number, so recovery stops at them (see
// internal/record).
//
// Crash safety. A WAL is recycled only once the MANIFEST's log number
// has passed it (its writes are in tables), so it is no longer replayed
// under its old name. The rename is followed by a sync of the directory
// before anything is written under the new name, and the new name is
// replayed: a crash before the new log's first write reaches the disk
// leaves a file whose first chunk carries another number, which reads as
// an empty WAL. Only WALs this DB created are recycled: those in recyclable
// chunks; a WAL replayed at Open may be legacy, whose chunks carry no
// number, and is deleted.

// walRecycler keeps the files of flushed WALs for the next WALs: as many
// as there may be memtables, Options.MemTableStopWritesThreshold
// immutable ones and the mutable one, so a busy DB seldom creates a WAL
// file, and an idle one keeps no more files than it had WALs when busy.
type walRecycler struct {
	mu sync.Mutex
	// minNum is the first WAL number that may be recycled: the first this
	// DB created.
	minNum base.FileNum
	// limit is the number of files kept at most.
	limit int
	nums  []base.FileNum
}

// start sets the first WAL number that may be recycled, and the number of
// files kept from the most immutable memtables there may be: one more,
// for the mutable one (a threshold as large as an int keeps as many).
// Called at Open, before any WAL is retired.
func (r *walRecycler) start(minNum base.FileNum, immutables int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.minNum, r.limit = minNum, immutables
	if immutables < math.MaxInt {
		r.limit++
	}
}

// add keeps WAL num for recycling and reports whether it did.
func (r *walRecycler) add(num base.FileNum) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if num < r.minNum || len(r.nums) >= r.limit {
		return false
	}
	r.nums = append(r.nums, num)
	return true
}

// take returns the number of a kept WAL, the oldest, and forgets it.
func (r *walRecycler) take() (base.FileNum, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.nums) == 0 {
		return 0, false
	}
	num := r.nums[0]
	r.nums = r.nums[1:]
	return num, true
}

// retireWALs disposes of the WALs of a flushed memtable: each is kept for
// recycling, or deleted; while a checkpoint copies WALs, later (see
// checkpoint.go). d.mu is held.
func (d *DB) retireWALs(nums []base.FileNum) {
	if d.holdRetiredWALs(nums) {
		return
	}
	for _, num := range nums {
		if !d.commit.recycler.add(num) {
			d.cleaner.deleteFile(d, base.FileTypeLog, num)
		}
	}
}

// recycleWAL renames a kept WAL file to name and opens it for writing
// from offset 0, and returns it with its size. It returns a nil file when
// none is kept.
func (d *DB) recycleWAL(name string) (vfs.File, int64, error) {
	num, ok := d.commit.recycler.take()
	if !ok {
		return nil, 0, nil
	}
	if err := d.fs.Rename(d.path(base.MakeFilename(base.FileTypeLog, num)), d.path(name)); err != nil {
		return nil, 0, err
	}
	f, err := d.fs.OpenReadWrite(d.path(name))
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	d.metrics.walsRecycled.Add(1)
	return f, st.Size(), nil
}

// walPreallocSize returns the size of the chunks in which a WAL's space is
// preallocated: as Pebble does, a tenth more than a memtable, so that one
// chunk usually holds the WAL whole.
func walPreallocSize(memTableSize int64) int64 {
	return memTableSize + memTableSize/10
}

// walPreallocWriter writes a WAL's bytes to dst, which writes them to
// file, preallocating the file's space a chunk at a time ahead of them.
// Preallocation is advice: a file system that cannot do it grows the
// file as it is written, so its failure is ignored.
//
// Before a sync, fillAhead also makes sure the file extends well past the
// last byte written, writing zeros past its end if it does not (as
// PostgreSQL zero-fills its WAL segments): the syncs that follow then
// have only data to write, the file's size and the allocation of its
// blocks being recorded once, by the first. A recycled file needs none
// until the WAL outgrows it, and the last sync of a WAL, when a memtable
// switch or Close retires it, none at all: no record follows, and the
// zeros would only add to what that sync writes back, on the writers'
// path. Recovery reads the zeros past the last record as the end of the
// WAL.
type walPreallocWriter struct {
	// mu orders Write and fillAhead: with BackgroundWALWrites the
	// flusher writes while a Sync writer fills ahead.
	mu        sync.Mutex
	file      vfs.File
	dst       io.Writer
	off       int64 // the file offset of the next byte written
	allocated int64 // the file offset up to which space is preallocated
	filled    int64 // the file's size: the offset up to which it holds bytes
	chunk     int64
}

// zeros is what fillAhead writes, a piece at a time.
var zeros [64 << 10]byte

// maxFillAhead bounds the zeros written at a time.
const maxFillAhead = 1 << 20

// newWALPreallocWriter returns a writer of the bytes from file offset off
// on, into a file fileSize bytes long, preallocating chunk bytes at a
// time.
func newWALPreallocWriter(file vfs.File, dst io.Writer, off, fileSize, chunk int64) *walPreallocWriter {
	return &walPreallocWriter{file: file, dst: dst, off: off, allocated: off, filled: max(off, fileSize), chunk: max(chunk, 1)}
}

// Write preallocates what p needs, if not done already, and writes p.
func (w *walPreallocWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if end := w.off + int64(len(p)); end > w.allocated {
		n := (end - w.allocated + w.chunk - 1) / w.chunk * w.chunk
		_ = w.file.Preallocate(w.allocated, n)
		w.allocated += n
	}
	n, err := w.dst.Write(p)
	w.off += int64(n)
	w.filled = max(w.filled, w.off)
	return n, err
}

// fillAhead writes zeros past the file's end when fewer than half of
// min(chunk, maxFillAhead) bytes lie between the last byte written and
// the end. Called before a sync, once every byte to sync is written;
// bytes written after it overwrite its zeros.
func (w *walPreallocWriter) fillAhead() error {
	return w.fillAheadWithin(math.MaxInt64)
}

// fillAheadWithin is fillAhead, writing no zeros at or past file offset
// limit.
func (w *walPreallocWriter) fillAheadWithin(limit int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	ahead := min(w.chunk, maxFillAhead)
	if w.filled-w.off >= ahead/2 {
		return nil
	}
	for end := min(w.off+ahead, limit); w.filled < end; {
		n, err := w.file.WriteAt(zeros[:min(int64(len(zeros)), end-w.filled)], w.filled)
		w.filled += int64(n)
		if err != nil {
			return err
		}
	}
	return nil
}
