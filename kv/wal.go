package kv

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/cockroachdb/pebble/vfs"
)

// A WAL is a file of records (internal/record framing, recyclable chunks
// carrying the WAL's number), one per committed batch, each holding the
// batch's encoding with its sequence number set. Every memtable created by
// a rotation has its own WAL, named by the file number it was created
// with; the memtable recovered at Open keeps the WALs it was replayed from
// (see recovery.go). Once a memtable is flushed its WALs are recycled for
// later WALs, or deleted (see wal_recycle.go).
//
// A Sync write syncs the WAL with SyncData (fdatasync), which skips
// metadata a read does not need. The file's space is preallocated ahead
// of the writes, zero-filled ahead of them before a sync
// (walPreallocWriter), and a recycled file is overwritten within its old
// size, so most syncs have no block allocation or file size to record
// either: a sync of the WAL writes only the data.

// walWriter appends to one WAL.
type walWriter struct {
	num  base.FileNum
	name string
	file vfs.File
	w    *record.Writer
	// space writes the bytes to file, preallocating and zero-filling
	// the file's space ahead of them: a walPreallocWriter, or a
	// walMmapWriter where the file can be mapped (see wal_mmap.go).
	space walSpace
	// flusher, with Options.BackgroundWALWrites, takes w's output and
	// writes it to file from its own goroutine (see wal_flusher.go); nil
	// otherwise, and w's output goes to sink's buffer, which the writers
	// waiting for it write to space.
	flusher *walFlusher
	// sink makes records durable as each writer requires (wal_sink.go).
	sink *walSink
	// direct is the mapped space w copies records into itself, through
	// route, nil if it does not: then a record is written by its writer
	// in sink.wait (or by the flusher), and a Sync write waits for its sync.
	direct *walMmapWriter
	route  *walRoute
	// order keeps direct's file valid in stream order while writers
	// encode their records into it at once (see walOrder); drain waits
	// until every writer reserved is published (publisher.waitDrained).
	order walOrder
	drain func()
	// ends holds the stream offset at which the record being appended
	// ends, for the flusher's loss bound; reused.
	ends []int64
	// closed makes close idempotent (a failed rotation has closed the
	// file already when Close comes to it), and tells the last sync,
	// which close runs once it is set, that no record follows: it
	// zero-fills nothing ahead (see walPreallocWriter). Atomic: the
	// sink's writer of the moment may be another goroutine.
	closed atomic.Bool
}

// createWAL creates WAL num, in recyclable format, by recycling a flushed
// WAL's file if one is kept (wal_recycle.go), and syncs the directory, so
// the file survives a crash under its new name once its contents are
// synced. It preallocates for a memtable of memSize bytes.
func (d *DB) createWAL(num base.FileNum, memSize int64) (*walWriter, error) {
	name := base.MakeFilename(base.FileTypeLog, num)
	f, size, err := d.recycleWAL(name)
	recycled := f != nil
	if f == nil && err == nil {
		f, err = d.fs.Create(d.path(name))
	}
	if err != nil {
		return nil, fmt.Errorf("kv: creating WAL %s: %w", name, err)
	}
	if err := d.dataDir.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("kv: syncing directory for WAL %s: %w", name, err)
	}
	d.walCreated(num, recycled)
	return d.newWALWriter(num, name, f, f, 0, size, memSize, true), nil
}

// newWALWriter returns the writer of WAL num, which continues a stream of
// size bytes, of recyclable chunks or legacy ones: dst takes the bytes
// after them, in f (fileSize bytes long now, a recycled file's old
// contents included), which it preallocates ahead of them. With
// Options.BackgroundWALWrites a flusher goroutine writes them to dst.
func (d *DB) newWALWriter(num base.FileNum, name string, f vfs.File, dst io.Writer, size, fileSize, memSize int64, recyclable bool) *walWriter {
	l := &walWriter{num: num, name: name, file: f}
	maxMapped := int64(maxWALMmapChunk)
	if c := d.opts.private.walMmapChunk; c > 0 {
		maxMapped = c
	}
	l.space = newWALSpace(d.opts.FS, f, dst, size, fileSize, walPreallocSize(memSize), maxMapped)
	l.sink = newWALSink(l, size, &d.metrics, &d.commit.err)
	l.order.start(size)
	l.drain = d.commit.pub.waitDrained
	var out io.Writer = l.sink
	switch mapped, ok := l.space.(*walMmapWriter); {
	case d.opts.BackgroundWALWrites:
		l.flusher = newWALFlusher(l.space, name, &d.commit.walBuffers, size)
		out = l.flusher
	case ok:
		// A record copied into the mapping is in the page cache: written,
		// as the default mode promises, without a system call. So the
		// writers encode their records into it directly (see append and
		// walOrder), and the record writer copies the rest into it
		// through a route that sends a Sync write's record, and those
		// behind a record not yet in the file, to the sink instead.
		l.direct = mapped
		l.route = &walRoute{l: l}
		out = l.route
	}
	if recyclable {
		l.w = record.NewRecyclableWriterAt(out, size, uint32(num))
	} else {
		l.w = record.NewWriterAt(out, size)
	}
	return l
}

// append adds batch as one record and hands it on: to the sink's buffer,
// for the writer to wait for it there (sink.wait), into the mapped file
// when direct, or with BackgroundWALWrites to the flusher, waiting as its
// loss bound requires. It returns the stream offset at which the record
// ends, and either fills in mapped, the place reserved for the record in
// the mapping, for its writer to encode it into (see walOrder), or
// reports whether the record was copied into the mapping already. Either
// way its writer has nothing to wait for (and counts it as a WAL write,
// outside the mu: see commitPipeline.run). The commit pipeline calls it
// under its mu, in sequence order.
//
// In direct mode a Sync write's record goes to the sink, whose writer
// writes it with pwrite(2), together with the records of every other
// writer waiting, before the sync they share: a sync leaves the file's
// pages clean and write-protected, and a store through the mapping to
// each of them then faults to make it writable again (and, on ext4, to
// start a journal handle), a cost per Sync write that one write(2) into
// the same page cache pays once per group. The records appended while
// the sink holds bytes not yet in the file go to the sink too, so the
// file is written in stream order (see walRoute).
//
// A NoSync record that fits in the chunk mapped is encoded straight
// into the mapping, without the record writer's buffer, one copy of the
// batch where Flush through the route would make two. Where writers
// overlap (other writers wait for the mu, or a record before it is still
// being stored by its writer), it is only reserved, and its own writer
// encodes it, out of the mu, so that the writers waiting do not wait for
// the copy. Otherwise it is stored whole here at once, which costs less
// than two steps. One that does not fit goes through the route, which
// maps the next chunk.
func (l *walWriter) append(batch []byte, sync, overlapped bool, m *dbMetrics, mapped *mappedRecord) (end int64, copied bool, err error) {
	if r := l.route; r != nil {
		switch {
		case sync || !l.sink.idle.Load():
			// Through the sink, below.
		case overlapped || l.order.pending():
			if rec, dst, ok := l.direct.reserveRecord(l.w, len(batch)); ok {
				*mapped = mappedRecord{log: l, r: rec, dst: dst}
				l.order.reserve(rec.End)
				return rec.End, false, nil
			}
		default:
			ok, err := l.direct.writeRecord(l.w, batch)
			if err != nil {
				err = l.writing(err)
				l.order.fail(err)
				return 0, false, err
			}
			if ok {
				end := l.w.Size()
				l.order.wrote(end)
				return end, true, nil
			}
		}
		r.toSink, r.routed = sync, false
	}
	if _, err := l.w.WriteRecord(batch); err != nil {
		return 0, false, l.writing(err)
	}
	if err := l.w.Flush(); err != nil {
		return 0, false, l.writing(err)
	}
	end = l.w.Size()
	copied = l.route != nil && !l.route.routed
	if l.flusher != nil {
		l.ends = append(l.ends[:0], end)
		if err := l.flusher.commit(l.ends); err != nil {
			return 0, false, err
		}
		l.sink.handedOn(end)
		m.walWrites.Add(1)
	}
	return end, copied, nil
}

// mappedRecord is the place of a writer's record in a mapped WAL's file,
// reserved under the commit pipeline's mu (walWriter.append). The writer
// encodes the record there itself, out of the mu (encode), and whoever
// publishes the writer completes it, in stream order (complete; see
// walOrder). log is nil where the record was handed on otherwise.
type mappedRecord struct {
	log     *walWriter
	r       record.Reservation
	dst     []byte
	encoded bool
}

// encode encodes batch, the record, into its place. A failure stops the
// WAL's order, and the caller's writes.
func (m *mappedRecord) encode(batch []byte) error {
	if err := storeMapped(m.r.Start, func() { m.r.Encode(m.dst, batch) }); err != nil {
		err = m.log.writing(err)
		m.log.order.fail(err)
		return err
	}
	m.encoded = true
	return nil
}

// complete completes the record, if it was encoded, once every record
// before it is. It returns the error that stopped the WAL's order, if
// the record is not complete: its writer must not be acknowledged then.
// Called once per record, by whoever publishes its writer.
func (m *mappedRecord) complete() error {
	if !m.encoded {
		return m.log.order.err.get() // its encoding's failure
	}
	return m.log.order.complete(m.r.Start, m.r.End, func() error {
		return m.log.writing(storeMapped(m.r.Start, func() { m.r.Complete(m.dst) }))
	})
}

// walRoute is the output of a mapped WAL's record writer. It copies the
// bytes into the mapping while the sink holds nothing that is not in the
// file yet, and hands them to the sink otherwise, or when toSink is set:
// once a record waits in the sink for its writer, every record after it
// follows it there, so that the file is written in stream order and no
// record is in the file before one that precedes it. The commit pipeline
// uses it under its mu.
type walRoute struct {
	l *walWriter
	// toSink sends the bytes to the sink whatever it holds; routed is
	// set once a Write has sent bytes there.
	toSink, routed bool
}

// Write sends p, the next bytes of the stream, into the mapping or to
// the sink, as above.
func (r *walRoute) Write(p []byte) (int, error) {
	off := r.l.w.Size() - int64(len(p)) // p is all the record writer holds unflushed
	// The copy below, or the sink's write, waits for the bytes before it.
	r.l.order.catchUp()
	if r.toSink || !r.l.sink.idle.Load() {
		r.routed = true
		return r.l.sink.writeAt(p, off)
	}
	n := 0
	err := r.l.order.complete(off, off+int64(len(p)), func() (err error) {
		n, err = r.l.direct.Write(p)
		return err
	})
	return n, err
}

// writeOut writes data, the sink's buffered bytes, which end at stream
// offset end, to the file: a mapped one's in its turn (see walOrder).
// Only the sink's writer of the moment calls it.
func (l *walWriter) writeOut(data []byte, end int64) error {
	if len(data) == 0 {
		return nil
	}
	if l.direct == nil {
		_, err := l.space.Write(data)
		return l.writing(err)
	}
	return l.order.complete(end-int64(len(data)), end, func() error {
		_, err := l.direct.writeThrough(data)
		return l.writing(err)
	})
}

// writing returns err, a failure to write this WAL, naming it; nil if
// err is nil.
func (l *walWriter) writing(err error) error {
	if err != nil {
		return fmt.Errorf("kv: writing WAL %s: %w", l.name, err)
	}
	return nil
}

// syncOut syncs the file, once the flusher, if any, has written every
// byte handed to it, zero-filling ahead of the writes first (see
// walPreallocWriter). Only the sink's syncer of the moment calls it; the
// sink's writer may be writing meanwhile.
func (l *walWriter) syncOut() error {
	if l.flusher != nil {
		if err := l.flusher.drain(); err != nil {
			return err
		}
	}
	if !l.closed.Load() {
		if err := l.space.fillAhead(); err != nil {
			return l.writing(err)
		}
	}
	if err := l.file.SyncData(); err != nil {
		return fmt.Errorf("kv: syncing WAL %s: %w", l.name, err)
	}
	return nil
}

// writeAll writes every record appended so far to the file, through the
// flusher if any, without syncing: a copy of the file then holds them.
// It runs under the commit pipeline's mu, so nothing is appended
// meanwhile.
func (l *walWriter) writeAll() error {
	if err := l.w.Flush(); err != nil {
		return l.writing(err)
	}
	if l.flusher != nil {
		return l.flusher.drain()
	}
	if err := l.order.settle(l.drain); err != nil {
		return err
	}
	return l.sink.wait(l.w.Size(), false)
}

// close writes out and syncs every record appended, then closes the WAL;
// the flusher, if any, drains and stops first. It runs under the commit
// pipeline's mu, so nothing is appended meanwhile. Later calls do
// nothing.
//
// A mapped WAL is unmapped before its last sync: the pages the records
// were copied into stay in the page cache, dirty, for the sync to write,
// but no longer mapped, so writing them back costs the kernel no
// write-protection of each page in the process's page tables (and no
// flush of the other processors' TLBs). Syncing while mapped made the
// sync at a memtable switch, on the writers' path, several times dearer
// than that of a WAL written with write(2).
func (l *walWriter) close() error { return l.closeSealed(nil) }

// closeSealed is close, with seal, if not nil, appended as the last
// record once every record before it is synced, then synced in turn (see
// commitPipeline.closeSealed).
func (l *walWriter) closeSealed(seal []byte) error {
	if !l.closed.CompareAndSwap(false, true) {
		return nil
	}
	if l.route != nil {
		l.route.toSink = true // written with the sync below, not mapped
	}
	err := l.order.settle(l.drain) // nothing stores into the mapping any more
	if err == nil {
		err = l.w.Flush()
	}
	if err == nil && l.direct != nil {
		err = l.space.close() // see above; the close below does nothing more
	}
	if err == nil {
		err = l.syncAppended()
	}
	if err == nil && seal != nil {
		if _, err = l.w.WriteRecord(seal); err == nil {
			err = l.w.Flush()
		}
		if err = l.writing(err); err == nil {
			err = l.syncAppended()
		}
	}
	if l.flusher != nil {
		if ferr := l.flusher.close(); err == nil {
			err = ferr
		}
	}
	if serr := l.space.close(); err == nil {
		err = serr
	}
	if cerr := l.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("kv: closing WAL %s: %w", l.name, err)
	}
	return nil
}

// syncAppended writes out and syncs every record appended, for close.
func (l *walWriter) syncAppended() error {
	if l.flusher != nil {
		l.sink.handedOn(l.w.Size()) // a seal, say, appended apart
	}
	if err := l.sink.wait(l.w.Size(), true); err != nil {
		return err
	}
	return l.sink.syncTo(l.w.Size())
}

// abandon closes the WAL without flushing or syncing it, for a WAL the DB
// gives up on: the flusher, if any, stops, and the writer releases what
// it holds (a mapping). Later calls, and close, do nothing.
func (l *walWriter) abandon() {
	if !l.closed.CompareAndSwap(false, true) {
		return
	}
	if l.flusher != nil {
		_ = l.flusher.close()
	}
	_ = l.space.close()
	_ = l.file.Close()
}

// walTail is where the replay of a WAL stopped: end is the offset just
// past its last whole record, clean whether the file holds nothing but
// zeros after it (no torn tail, no remains of a recycled file's earlier
// log), so that it may be continued, and recyclable whether its records
// are in recyclable chunks.
//
// unwritten is set when the replay stopped at pages the file system never
// wrote, with valid records after them (see record.Reader.AllowUnwritten):
// those from resume on are dropped.
type walTail struct {
	end        int64
	clean      bool
	recyclable bool
	unwritten  bool
	resume     int64
}

// replayWAL reads WAL num and calls apply for each batch, in order, with
// where naming the file and the record's byte offset for errors. A torn
// last record, or the remains of the log a recycled file held before,
// ends the replay quietly (never acknowledged, or not this WAL's), and so
// do pages the file system never wrote, whatever follows them (see
// replayWALs); other damage is an error that wraps ErrCorruption and
// names the file and offset.
func (d *DB) replayWAL(num base.FileNum, apply func(batch []byte, where recordPos) error) (walTail, error) {
	name := base.MakeFilename(base.FileTypeLog, num)
	f, err := d.fs.Open(d.path(name))
	if err != nil {
		return walTail{}, fmt.Errorf("kv: opening WAL %s: %w", name, err)
	}
	defer f.Close()
	r := record.NewLogReader(f, name, uint32(num), d.mu.versions.walFormat(num))
	r.AllowUnwritten()
	file := walFile(num)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return walTail{}, fmt.Errorf("kv: recovering WAL %s: %w", name, err)
		}
		if err := apply(rec, recordPos{file, r.Offset()}); err != nil {
			return walTail{}, err
		}
	}
	if err := d.checkWALRemains(r, file); err != nil {
		return walTail{}, err
	}
	st, err := f.Stat()
	if err != nil {
		return walTail{}, fmt.Errorf("kv: recovering WAL %s: %w", name, err)
	}
	clean, err := zeroFrom(f, r.End(), st.Size())
	if err != nil {
		return walTail{}, fmt.Errorf("kv: recovering WAL %s: %w", name, err)
	}
	at, resume, unwritten := r.Unwritten()
	tail := walTail{end: r.End(), clean: clean, recyclable: r.Recyclable(), unwritten: unwritten, resume: resume}
	if unwritten {
		if err := sealedPast(r, file, at); err != nil { // reads on: r.End() moves
			return walTail{}, err
		}
	}
	return tail, nil
}

// sealedPast reports, as corruption, a seal among the records of r, a WAL
// reader stopped at unwritten pages at offset at, past them. A seal is
// synced with every page before it, so pages before one were written: the
// hole is damage, and the records it would drop were synced. Damage past
// the hole ends the search.
func sealedPast(r *record.Reader, file string, at int64) error {
	r.ReadPastUnwritten()
	for {
		rec, err := r.Next()
		if err != nil {
			return nil
		}
		if isSeal(rec) {
			return base.CorruptionErrorf("kv: %s: pages of zeros or of an earlier log, before the seal at offset %d: the WAL was synced whole, so they are damage, not pages a crash left unwritten",
				recordPos{file, at}, r.Offset())
		}
	}
}

// zeroFrom reports whether the bytes of f from off to size are all zero
// (the zeros a sync writes past a WAL's end), or there are none. It stops
// reading at the first byte that is not.
func zeroFrom(f vfs.File, off, size int64) (bool, error) {
	buf := make([]byte, 32<<10)
	for off < size {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		for _, c := range buf[:n] {
			if c != 0 {
				return false, nil
			}
		}
		off += int64(n)
		if err != nil && (err != io.EOF || off < size) {
			return false, err
		}
	}
	return true, nil
}

// checkWALRemains checks the chunks a WAL's replay stopped at, if they are
// another WAL's, are the remains of a recycled file: a WAL is recycled
// only once its writes are in tables, below the MANIFEST's log number.
// Chunks of a WAL at or above it are of a live WAL, copied: corruption.
func (d *DB) checkWALRemains(r *record.Reader, file string) error {
	num, off, ok := r.EndedAtLog()
	if ok && base.FileNum(num) >= d.mu.versions.logNum {
		return base.CorruptionErrorf("kv: %s: WAL %s's records, whose number is not below the MANIFEST's log number %s: a copy of a live WAL, not the remains of a recycled one",
			recordPos{file, off}, base.FileNum(num), d.mu.versions.logNum)
	}
	return nil
}

// reopenWAL opens WAL num, whose records end cleanly at tail.end, to
// append to it in its format, for a memtable of memSize bytes. The file
// already survives a crash; what is appended survives once synced.
func (d *DB) reopenWAL(num base.FileNum, tail walTail, memSize int64) (*walWriter, error) {
	name := base.MakeFilename(base.FileTypeLog, num)
	f, err := d.fs.OpenReadWrite(d.path(name))
	if err != nil {
		return nil, fmt.Errorf("kv: reopening WAL %s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("kv: reopening WAL %s: %w", name, err)
	}
	// An empty WAL has no format yet: it takes the recyclable one.
	recyclable := tail.recyclable || tail.end == 0
	return d.newWALWriter(num, name, f, io.NewOffsetWriter(f, tail.end), tail.end, st.Size(), memSize, recyclable), nil
}

// recordPos names a record of a log file (WAL or MANIFEST) by its byte
// offset, for errors. It is formatted only when an error names it, so
// replaying a record costs no formatting.
type recordPos struct {
	file   string
	offset int64
}

// walPos names offset off of WAL num.
func walPos(num base.FileNum, off int64) *recordPos {
	return &recordPos{walFile(num), off}
}

// walFile names WAL num in recordPos: "WAL 000012.log".
func walFile(num base.FileNum) string { return "WAL " + base.MakeFilename(base.FileTypeLog, num) }

// String returns "file: offset n".
func (p recordPos) String() string { return fmt.Sprintf("%s: offset %d", p.file, p.offset) }

// walNums returns the numbers of the WALs in names numbered at least min,
// ascending.
func walNums(names []string, min base.FileNum) []base.FileNum {
	var nums []base.FileNum
	for _, name := range names {
		if typ, n, ok := base.ParseFilename(name); ok && typ == base.FileTypeLog && n >= min {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	return nums
}
