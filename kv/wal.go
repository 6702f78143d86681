package kv

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/cockroachdb/pebble/vfs"
)

// A WAL is a file of records (internal/record framing), one per committed
// batch, each holding the batch's encoding with its sequence number set.
// Every memtable created by a rotation has its own WAL, named by the file
// number it was created with; the memtable recovered at Open keeps the WALs
// it was replayed from (see recovery.go). Once a memtable is flushed its
// WALs are deleted.

// walWriter appends to one WAL.
type walWriter struct {
	num  base.FileNum
	name string
	file vfs.File
	w    *record.Writer
	// flusher, with Options.BackgroundWALWrites, takes w's output and
	// writes it to file from its own goroutine (see wal_flusher.go); nil
	// otherwise, and w writes to file.
	flusher *walFlusher
	// closed makes close idempotent: a failed rotation has closed the
	// file already when Close comes to it.
	closed bool
}

// createWAL creates WAL num and syncs the directory, so the file survives a
// crash once its contents are synced.
func (d *DB) createWAL(num base.FileNum) (*walWriter, error) {
	name := base.MakeFilename(base.FileTypeLog, num)
	f, err := d.fs.Create(d.path(name))
	if err != nil {
		return nil, fmt.Errorf("kv: creating WAL %s: %w", name, err)
	}
	if err := d.dataDir.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("kv: syncing directory for WAL %s: %w", name, err)
	}
	return d.newWALWriter(num, name, f, f, 0), nil
}

// newWALWriter returns the writer of WAL num, which continues a stream of
// size bytes: dst takes the bytes after them, in f. With
// Options.BackgroundWALWrites a flusher goroutine writes them to dst.
func (d *DB) newWALWriter(num base.FileNum, name string, f vfs.File, dst io.Writer, size int64) *walWriter {
	l := &walWriter{num: num, name: name, file: f}
	if d.opts.BackgroundWALWrites {
		l.flusher = newWALFlusher(dst, name, &d.commit.walBuffers)
		dst = l.flusher
	}
	l.w = record.NewWriterAt(dst, size)
	return l
}

// writeGroup appends one record per batch of the group, pushes them to the
// file in one write (to the flusher's buffer with BackgroundWALWrites), and
// syncs if asked: then every byte before the group's is in the file too.
func (l *walWriter) writeGroup(group []*writer, sync bool, m *dbMetrics) error {
	var n int64
	for _, w := range group {
		if _, err := l.w.WriteRecord(w.batch.data); err != nil {
			return fmt.Errorf("kv: writing WAL %s: %w", l.name, err)
		}
		n += int64(len(w.batch.data))
	}
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("kv: writing WAL %s: %w", l.name, err)
	}
	if sync {
		if err := l.drain(); err != nil {
			return err
		}
		if err := l.file.Sync(); err != nil {
			return fmt.Errorf("kv: syncing WAL %s: %w", l.name, err)
		}
		m.walSyncs.Add(1)
	}
	m.walBytesIn.Add(n)
	m.walWrites.Add(1)
	return nil
}

// drain waits until the flusher, if any, has written every byte pushed to
// it.
func (l *walWriter) drain() error {
	if l.flusher == nil {
		return nil
	}
	return l.flusher.drain()
}

// close flushes and syncs the WAL, then closes it; the flusher, if any,
// drains and stops first. Later calls do nothing.
func (l *walWriter) close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.w.Flush()
	if l.flusher != nil {
		if ferr := l.flusher.close(); err == nil {
			err = ferr
		}
	}
	if err == nil {
		err = l.file.Sync()
	}
	if cerr := l.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("kv: closing WAL %s: %w", l.name, err)
	}
	return nil
}

// replayWAL reads WAL num and calls apply for each batch, in order, with
// where naming the file and the record's byte offset for errors. A torn
// last record ends the replay quietly (it was never acknowledged); other
// damage is an error that wraps ErrCorruption and names the file and
// offset. It returns the offset just past the last whole record, and
// whether the file ends there (no torn tail), so it may be continued.
func (d *DB) replayWAL(num base.FileNum, apply func(batch []byte, where recordPos) error) (end int64, clean bool, err error) {
	name := base.MakeFilename(base.FileTypeLog, num)
	f, err := d.fs.Open(d.path(name))
	if err != nil {
		return 0, false, fmt.Errorf("kv: opening WAL %s: %w", name, err)
	}
	defer f.Close()
	r := record.NewReader(f, name)
	file := "WAL " + name
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, false, fmt.Errorf("kv: recovering WAL %s: %w", name, err)
		}
		if err := apply(rec, recordPos{file, r.Offset()}); err != nil {
			return 0, false, err
		}
	}
	st, err := f.Stat()
	if err != nil {
		return 0, false, fmt.Errorf("kv: recovering WAL %s: %w", name, err)
	}
	return r.End(), st.Size() == r.End(), nil
}

// reopenWAL opens WAL num, whose records end cleanly at size, to append to
// it. The file already survives a crash; what is appended survives once
// synced.
func (d *DB) reopenWAL(num base.FileNum, size int64) (*walWriter, error) {
	name := base.MakeFilename(base.FileTypeLog, num)
	f, err := d.fs.OpenReadWrite(d.path(name))
	if err != nil {
		return nil, fmt.Errorf("kv: reopening WAL %s: %w", name, err)
	}
	return d.newWALWriter(num, name, f, io.NewOffsetWriter(f, size), size), nil
}

// recordPos names a record of a log file (WAL or MANIFEST) by its byte
// offset, for errors. It is formatted only when an error names it, so
// replaying a record costs no formatting.
type recordPos struct {
	file   string
	offset int64
}

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
