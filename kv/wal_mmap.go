package kv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/cockroachdb/pebble/vfs"
)

// A memory-mapped WAL. By default an acknowledged NoSync write survives a
// crash of the process: its WAL bytes are in the operating system before
// the write returns. Writing them with write(2) costs a system call per
// commit; copying them into a shared mapping of the file (MAP_SHARED)
// puts them in the same page cache at the cost of a memory copy, and a
// process that dies leaves the pages to the kernel, which writes them to
// the file as it would a write's.
//
// The mapped pages must be backed by allocated blocks before they are
// written: a store to a page past the file's end, or one the file system
// cannot find a block for (a full disk), raises SIGBUS instead of
// returning an error. So the file's space is allocated for real
// (fallocate, which extends the file and fails with ENOSPC when the disk
// is full) a chunk at a time, before the chunk is mapped, and the mapping
// is used only on file systems where allocated blocks are overwritten in
// place (ext4, XFS, tmpfs; not copy-on-write ones such as Btrfs, whose
// writes need new blocks). A fault that happens anyway (an I/O error
// reading a recycled file's page, a file truncated by another process) is
// turned into an error by runtime/debug.SetPanicOnFault.
//
// A Sync write syncs the file with SyncData (fdatasync), which on Linux
// writes the pages dirtied through a shared mapping as it does those
// dirtied by write(2): since Linux 2.6.19 the kernel tracks a shared
// mapping's dirty pages itself, and msync(MS_ASYNC) does nothing more.
//
// The mapping is used only where Options.FS is vfs.Default and the file
// has a descriptor: a wrapping vfs.FS (errorfs, a byte counter, a disk
// health checker) expects to see every write, and an in-memory one has no
// file to map. Elsewhere, or when mapping fails, a WAL is written through
// walPreallocWriter as before.

// walSpace writes a WAL's bytes into its file: a walPreallocWriter, or a
// walMmapWriter. fillAhead is called before each sync, once the bytes to
// sync are written (others may be written meanwhile: they overwrite its
// zeros); close after the last sync, before the file is closed.
type walSpace interface {
	io.Writer
	fillAhead() error
	close() error
}

// close does nothing: a walPreallocWriter holds nothing but the file.
func (w *walPreallocWriter) close() error { return nil }

// errWALMmapUnavailable is why a WAL is not mapped on a platform that
// has no mapped writer.
var errWALMmapUnavailable = errors.New("kv: memory-mapped WAL not available on " + runtime.GOOS)

// newWALSpace returns the writer of a WAL's bytes from file offset off on,
// into f, fileSize bytes long now, preallocating chunk bytes at a time: a
// mapped one where fs and f allow it, mapping at most maxMapped bytes at
// a time, otherwise a walPreallocWriter writing through dst.
func newWALSpace(fs vfs.FS, f vfs.File, dst io.Writer, off, fileSize, chunk, maxMapped int64) walSpace {
	if fs == vfs.Default && f.Fd() != vfs.InvalidFd {
		if m, err := newWALMmapWriter(f, off, min(chunk, maxMapped), fallocate); err == nil {
			return m
		}
	}
	return newWALPreallocWriter(f, dst, off, fileSize, chunk)
}

// maxWALMmapChunk bounds the chunk a mapped WAL allocates and maps at a
// time. The space of a mapped chunk is allocated for real and counts in
// the file's size, so a WAL of large memtables allocated whole would hold
// its full size on disk from its first write: a store of a few keys would
// take the memtable's size, which a written WAL does not. A chunk of this
// size costs one allocation, mapping and unmapping per 4 MiB of records,
// a fraction of a millisecond.
const maxWALMmapChunk = 4 << 20

// walMmapWriter writes a WAL's bytes by copying them into a shared
// mapping of its file, a chunk of it at a time; see above.
type walMmapWriter struct {
	// mu orders Write, fillAhead and close: with BackgroundWALWrites the
	// flusher writes while a Sync writer fills ahead.
	mu   sync.Mutex
	file vfs.File
	fd   uintptr
	off  int64 // the file offset of the next byte written
	// mapped maps the file from mapOff (a multiple of the page size).
	mapped []byte
	mapOff int64
	// allocated is the file offset up to which space is allocated, and
	// the file at least as long.
	allocated int64
	chunk     int64
	// alloc allocates the file's space from off to off+n, extending it:
	// fallocate, or a test's failure.
	alloc func(fd uintptr, off, n int64) error
	// fill zero-fills the file ahead of the writes before a sync, as a
	// walPreallocWriter does; it writes nothing else, and learns where
	// the writes are when it is called.
	fill *walPreallocWriter
	// pf faults the pages ahead of the writes in, writable, from its
	// own goroutine (see prefaulter).
	pf *prefaulter
	// pwrites counts the writes of writeThrough.
	pwrites int64
}

// prefaultAhead is how far ahead of the writes the prefaulter keeps the
// mapping's pages faulted in; it is asked for more each time the writes
// come within half of it.
const prefaultAhead = 256 << 10

// prefaultStep is how much the prefaulter populates per call, releasing
// its mutex in between so a remap or close waits for one step at most.
const prefaultStep = 64 << 10

// A prefaulter takes the page faults of a mapped WAL off the writers'
// path. The first store to each page of a shared file mapping faults:
// the kernel finds or allocates the page-cache page and makes it
// writable. One fault per 4 KiB of records (a few microseconds) holds up
// the writer that takes it and every writer after it: those waiting for
// the commit pipeline's mutex, under which the record is encoded, or,
// where writers encode their own records, those whose records are
// completed after it, in stream order (see walOrder). So a goroutine
// populates the pages just ahead of the writes with
// madvise(MADV_POPULATE_WRITE) (Linux 5.14 on), which faults them in
// writable as a store would, and returns an error rather than raising
// SIGBUS where a store would. It is advice: where the kernel lacks it,
// or it fails, the writes fault as before.
//
// The same goroutine removes the mappings of the chunks the writes have
// left (see remap): unmapping a chunk of populated pages costs the kernel
// a page-table walk and a flush of every processor's TLB, half a
// millisecond or more, which would otherwise be serial work too. Then it
// starts the writeback of the chunk's pages (sync_file_range(2),
// SYNC_FILE_RANGE_WRITE, which does not wait for it), so that the WAL's
// sync when its memtable rotates, which every writer waits for, has at
// most the last chunk left to write. It is advice, as populate is: it
// changes what is durable only in making it so sooner, and its failure
// changes nothing.
//
// The writeback waits for the unmapping on purpose. Writing back a dirty
// page that is still mapped write-protects it in the mapping, which
// flushes that page from the TLB of every processor running one of the
// process's threads: an interrupt to each, per page. With writers busy
// on the other processors, that costs many times the writeback itself,
// and more with more processors. An unmapped page has no mapping to
// protect, and the chunk's unmapping flushed the TLBs once for all its
// pages.
type prefaulter struct {
	// want is the file offset up to which population is asked for, and
	// from the offset of the writes when it was asked.
	want, from atomic.Int64
	// due is set while a request waits for its wake (see wakeLater).
	due atomic.Bool
	// kick holds a token while a request is pending. It is never closed:
	// a writer may wake the prefaulter of a WAL closed since its record
	// (see wakeDue), and the token then waits for nobody.
	kick     chan struct{}
	quit     chan struct{} // closed by stop
	done     chan struct{} // closed when the goroutine returns
	stopOnce sync.Once

	// mu is held while populating, and by remap and close while they
	// change the mapping, which it guards, and the retired mappings.
	mu     sync.Mutex
	mapped []byte
	mapOff int64
	next   int64 // the file offset populated up to
	// retired holds the mappings the writes have left, to remove and
	// write back; unmapErr is the first failure to remove one.
	retired  []retiredMapping
	unmapErr error

	// fd is the file's, for the writeback of the retired mappings.
	fd uintptr
	// writtenBack counts the bytes whose writeback it started.
	writtenBack atomic.Int64
}

// retiredMapping is a mapping the writes have left: the file's bytes
// from off on.
type retiredMapping struct {
	m   []byte
	off int64
}

// startPrefaulter starts w's prefaulter goroutine.
func (w *walMmapWriter) startPrefaulter() {
	pf := &prefaulter{kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}), fd: w.fd}
	w.pf = pf
	go pf.run()
}

// run removes the retired mappings, starting their writeback, and
// populates the pages asked for, each time it is woken, until stop; then
// it removes the mappings retired last.
func (pf *prefaulter) run() {
	defer close(pf.done)
	populating := true
	for {
		select {
		case <-pf.kick:
		case <-pf.quit:
			pf.unmapRetired()
			return
		}
		pf.unmapRetired()
		if populating && pf.populate() != nil {
			// Advice the kernel does not take: let the writes fault.
			populating = false
		}
	}
}

// populate populates the pages asked for, a step at a time, and returns
// the error of the advice, if any.
func (pf *prefaulter) populate() error {
	for {
		pf.mu.Lock()
		// Whole pages, as madvise takes them: next and mapOff are
		// page-aligned, and so are from and to.
		from := max(pf.next, pf.from.Load()/int64(pageSize)*int64(pageSize), pf.mapOff)
		to := min(roundUp(pf.want.Load(), int64(pageSize)), pf.mapOff+int64(len(pf.mapped)), from+prefaultStep)
		if pf.mapped == nil || from >= to {
			pf.mu.Unlock()
			return nil
		}
		err := populateWrite(pf.mapped[from-pf.mapOff : to-pf.mapOff])
		pf.next = to
		pf.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// unmapRetired removes the retired mappings, keeping the first error,
// and starts the writeback of each one's pages once it is removed.
func (pf *prefaulter) unmapRetired() {
	pf.mu.Lock()
	retired := pf.retired
	pf.retired = nil
	pf.mu.Unlock()
	for _, r := range retired {
		if err := munmap(r.m); err != nil {
			pf.mu.Lock()
			if pf.unmapErr == nil {
				pf.unmapErr = fmt.Errorf("kv: unmapping WAL: %w", err)
			}
			pf.mu.Unlock()
			continue
		}
		startWriteBack(pf.fd, r.off, int64(len(r.m)))
		pf.writtenBack.Add(int64(len(r.m)))
	}
}

// ask asks the prefaulter to populate ahead of off, the offset of the
// writes, when they have come within half of prefaultAhead of what it
// was asked for last, and reports whether it did: the caller then wakes
// the goroutine, at once (wake) or once it is out of the commit
// pipeline's mu (wakeLater). Called under w.mu.
func (pf *prefaulter) ask(off int64) bool {
	if off+prefaultAhead/2 <= pf.want.Load() {
		return false
	}
	pf.from.Store(off)
	pf.want.Store(off + prefaultAhead)
	return true
}

// wakeLater leaves the wake of a request to wakeDue, which the writer that
// asked calls once it has released the commit pipeline's mu: waking a
// parked goroutine is a system call, which every writer queued on the
// mu would wait for.
func (pf *prefaulter) wakeLater() { pf.due.Store(true) }

// wakeDue wakes the goroutine if a wake was left to it (wakeLater).
func (pf *prefaulter) wakeDue() {
	if pf.due.Load() && pf.due.Swap(false) {
		pf.wake()
	}
}

// wake makes the goroutine look for work.
func (pf *prefaulter) wake() {
	select {
	case pf.kick <- struct{}{}:
	default: // a request is pending already; it reads want when served
	}
}

// setMapping tells the prefaulter the mapping changed. The mapping it
// replaces, if any, the caller removes, or retires.
func (pf *prefaulter) setMapping(m []byte, off int64) {
	pf.mu.Lock()
	pf.mapped, pf.mapOff, pf.next = m, off, off
	pf.mu.Unlock()
}

// retire hands the prefaulter a mapping of the file from off on that
// nothing uses any more, to remove and write back, and wakes it: it
// populates the pages asked for in the new mapping too.
func (pf *prefaulter) retire(m []byte, off int64) {
	pf.mu.Lock()
	pf.retired = append(pf.retired, retiredMapping{m, off})
	pf.mu.Unlock()
	pf.wake()
}

// stop stops the goroutine and waits for it, once it has removed every
// mapping retired, and returns the first failure to remove one. Called
// under w.mu, before the mapping is removed; later calls do nothing
// more.
func (pf *prefaulter) stop() error {
	pf.stopOnce.Do(func() { close(pf.quit) })
	<-pf.done
	return pf.unmapErr
}

// newWALMmapWriter returns a writer of the bytes from file offset off on
// into f, with the first chunk past off allocated and mapped, or an error
// if that fails: then the file is as it was, but perhaps longer.
func newWALMmapWriter(f vfs.File, off, chunk int64, alloc func(fd uintptr, off, n int64) error) (*walMmapWriter, error) {
	chunk = roundUp(max(chunk, 1), int64(pageSize))
	w := &walMmapWriter{
		file: f, fd: f.Fd(), off: off, allocated: off, chunk: chunk, alloc: alloc,
		fill: newWALPreallocWriter(f, nil, off, off, chunk),
	}
	if err := w.checkFileSystem(); err != nil {
		return nil, err
	}
	w.startPrefaulter()
	if err := w.remap(); err != nil {
		w.pf.stop()
		return nil, err
	}
	return w, nil
}

// pageSize is the granularity of mappings.
var pageSize = os.Getpagesize()

// roundUp returns n rounded up to a multiple of m.
func roundUp(n, m int64) int64 { return (n + m - 1) / m * m }

// Write copies p into the mapping, mapping the next chunk whenever the
// current one is full.
func (w *walMmapWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	written := 0
	for len(p) > 0 {
		if w.off >= w.mapOff+int64(len(w.mapped)) {
			if err := w.remap(); err != nil {
				return written, err
			}
		}
		n, err := w.copyIn(p)
		written += n
		w.off += int64(n)
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	if w.pf.ask(w.off) {
		w.pf.wake()
	}
	return written, nil
}

// writeRecord stores p as the next record of rw, whose stream is this
// file's bytes, whole, straight into the mapping, and reports whether it
// did: not where reserveRecord finds no room for it, which Write then
// maps. A memory fault while storing (see above) is returned as an
// error, not a crash.
func (w *walMmapWriter) writeRecord(rw *record.Writer, p []byte) (ok bool, err error) {
	r, dst, ok := w.reserveRecord(rw, len(p))
	if !ok {
		return false, nil
	}
	return true, storeMapped(r.Start, func() {
		r.Encode(dst, p)
		r.Complete(dst)
	})
}

// reserveRecord reserves the place of a record of n bytes, the next of
// rw, whose stream is this file's bytes, in the mapping: it returns the
// record's place and the mapped bytes it takes, for the record to be
// encoded into and then completed (see record.Reservation, and walOrder
// where its writer encodes it). ok is false when the record runs past
// the chunk mapped, or the writes are past it already (writeThrough, the
// sink's, does not map): Write then maps the next chunk.
func (w *walMmapWriter) reserveRecord(rw *record.Writer, n int) (r record.Reservation, dst []byte, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mapped == nil || w.off < w.mapOff || w.off >= w.mapOff+int64(len(w.mapped)) {
		return record.Reservation{}, nil, false
	}
	if r, ok = rw.Reserve(n, int(w.mapOff+int64(len(w.mapped))-w.off)); !ok {
		return record.Reservation{}, nil, false
	}
	dst = w.mapped[r.Start-w.mapOff : r.End-w.mapOff]
	w.off = r.End
	if w.pf.ask(w.off) {
		w.pf.wakeLater() // the commit pipeline's mu is held
	}
	return r, dst, true
}

// storeMapped runs store, which stores into the mapping from file offset
// at on, and returns a memory fault while storing (see above) as an
// error, not a crash.
func storeMapped(at int64, store func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverFault(&err, func() int64 { return at })
	store()
	return nil
}

// writeThrough writes p at the next offset with pwrite(2), not through
// the mapping: the sink's writes (see walWriter.append), which close's
// may follow once the mapping is gone. pwrite extends the file past its
// allocated space, if it must, as any write does.
func (w *walMmapWriter) writeThrough(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.file.WriteAt(p, w.off)
	w.pwrites++
	w.off += int64(n)
	return n, err
}

// copyInPiece bounds the bytes copyIn stores with one copy.
const copyInPiece = 256

// copyIn copies what fits of p into the mapping at w.off. A memory fault
// while copying (see above) is returned as an error, not a crash.
//
// It copies in ascending pieces of at most copyInPiece bytes, so that a
// process killed in mid-copy leaves a prefix of the bytes in the file.
// The runtime's copy of a large slice stores its first bytes last (on
// amd64 it holds the head in registers through the main loop), and a kill
// then would leave a chunk header unwritten with whole chunks after it:
// damage followed by valid data, which recovery must take for
// corruption, where a torn tail is what the crash left. A copy of at
// most 256 bytes stores in ascending order.
func (w *walMmapWriter) copyIn(p []byte) (n int, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverFault(&err, func() int64 { return w.off + int64(n) })
	dst := w.mapped[w.off-w.mapOff:]
	p = p[:min(len(p), len(dst))]
	for n < len(p) {
		n += copy(dst[n:], p[n:min(len(p), n+copyInPiece)])
	}
	return n, nil
}

// recoverFault, deferred by a store into the mapping under
// debug.SetPanicOnFault, turns the panic of a memory fault into *err,
// naming the file offset at returns.
func recoverFault(err *error, at func() int64) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("kv: memory fault writing mapped WAL at offset %d: %v", at(), r)
	}
}

// remap maps the chunk of the file from w.off's page on, allocating its
// space first. The previous mapping's pages stay in the page cache,
// dirty; the prefaulter removes the mapping and then starts their
// writeback (see prefaulter).
func (w *walMmapWriter) remap() error {
	start := w.off / int64(pageSize) * int64(pageSize)
	end := start + w.chunk
	if end > w.allocated {
		if err := w.alloc(w.fd, w.allocated, end-w.allocated); err != nil {
			return fmt.Errorf("kv: allocating WAL space at offset %d: %w", w.allocated, err)
		}
		w.allocated = end
	}
	m, err := mmapFile(w.fd, start, int(w.chunk))
	if err != nil {
		return fmt.Errorf("kv: mapping WAL at offset %d: %w", start, err)
	}
	old, oldOff := w.mapped, w.mapOff
	w.mapped, w.mapOff = m, start
	w.pf.setMapping(m, start)
	if old != nil {
		w.pf.retire(old, oldOff)
	}
	return nil
}

// unmap removes the mapping, if any.
func (w *walMmapWriter) unmap() error {
	if w.mapped == nil {
		return nil
	}
	m := w.mapped
	w.mapped = nil
	w.pf.setMapping(nil, 0) // waits for a populate in progress
	if err := munmap(m); err != nil {
		return fmt.Errorf("kv: unmapping WAL: %w", err)
	}
	return nil
}

// fillAhead zero-fills the file ahead of the writes, so that the syncs
// that follow have only data to write (see walPreallocWriter): the
// allocated space past the last write is allocated but not yet written,
// and the first sync after a write into such blocks records them as
// written. It fills no further than the space allocated: past it the
// zeros would extend the file, and on a full disk fail a sync whose
// records are all in allocated space. The allocation of the next chunk
// extends it, and fails the write that needs it.
func (w *walMmapWriter) fillAhead() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fill.off, w.fill.filled = w.off, max(w.fill.filled, w.off)
	return w.fill.fillAheadWithin(w.allocated)
}

// close removes the mapping. The file keeps its allocated length, zeros
// past the WAL's last record, which recovery reads as its end.
func (w *walMmapWriter) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.pf.stop()
	if uerr := w.unmap(); err == nil {
		err = uerr
	}
	return err
}
