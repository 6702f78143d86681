package kv

import (
	"errors"
	"fmt"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/iterator"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// errCanceled stops background work when the DB closes.
var errCanceled = errors.New("kv: background work canceled by Close")

// Flush makes the memtable immutable and waits until every memtable written
// before the call is flushed to an L0 table. Writes go on meanwhile. While
// writes are stalled (Options.MemTableStopWritesThreshold,
// Options.L0StopWritesThreshold), Flush waits for the stall to end before
// it switches memtables; Close ends that wait with ErrClosed. Once
// background work has failed (see EventListener.BackgroundError) it
// returns that error, whether or not anything was left to flush.
func (d *DB) Flush() error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	var logNum base.FileNum
	err := d.commit.runExclusive(func() error {
		if err := d.commit.err.get(); err != nil {
			return err
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if err := d.checkOpen(); err != nil {
			return err
		}
		if d.mu.bgErr != nil {
			// With nothing left to flush, the wait below would not see
			// it.
			return d.mu.bgErr
		}
		if !d.mu.mem.empty() {
			if err := d.rotateMemTableLocked(); err != nil {
				return err
			}
		}
		logNum = d.mu.mem.logNum()
		d.forceFlushLocked(logNum)
		return nil
	})
	if err != nil {
		return err
	}
	return d.waitFlushed(logNum)
}

// waitFlushed waits until the memtables older than the one with WAL logNum
// are flushed.
func (d *DB) waitFlushed(logNum base.FileNum) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.mu.imm) > 0 && d.mu.imm[0].logNum() < logNum {
		if d.mu.bgErr != nil {
			return d.mu.bgErr
		}
		if d.closed.Load() {
			return ErrClosed
		}
		d.mu.cond.Wait()
	}
	return nil
}

// maybeScheduleFlushLocked starts the flush goroutine if memtables wait
// and none runs.
func (d *DB) maybeScheduleFlushLocked() {
	if d.mu.flushing || !d.flushDueLocked() || d.mu.bgErr != nil || d.closed.Load() {
		return
	}
	d.mu.flushing = true
	d.bgWG.Add(1)
	go d.flushLoop()
}

// flushDueLocked reports whether the oldest immutable memtable is to be
// flushed now: once the immutable memtables' size limits add up to half
// of Options.MemTableSize, as Pebble flushes (passedFlushThreshold), or
// once a Flush or an ingest asked for it (flushUpTo). A full-size
// memtable is due as soon as it is immutable; the small memtables that
// start a store's life (see takeMemSizeLocked) wait for each other, so a
// store that takes a few megabytes after Open flushes none of them,
// while its skiplists stay small.
func (d *DB) flushDueLocked() bool {
	if len(d.mu.imm) == 0 || d.opts.ReadOnly {
		return false
	}
	if d.mu.imm[0].logNum() < d.mu.flushUpTo {
		return true
	}
	return d.immLimitsLocked() >= d.opts.MemTableSize/2
}

// immLimitsLocked returns the sum of the immutable memtables' size
// limits.
func (d *DB) immLimitsLocked() int64 {
	var n int64
	for _, m := range d.mu.imm {
		n += m.limit
	}
	return n
}

// forceFlushLocked makes the immutable memtables whose WALs are below
// logNum due for a flush, and starts it.
func (d *DB) forceFlushLocked(logNum base.FileNum) {
	d.mu.flushUpTo = max(d.mu.flushUpTo, logNum)
	d.maybeScheduleFlushLocked()
}

// flushLoop flushes immutable memtables, oldest first, while one is due.
func (d *DB) flushLoop() {
	defer d.bgWG.Done()
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.recoverLocked("flush", func() { d.mu.flushing = false })
	for d.flushDueLocked() && d.mu.bgErr == nil && !d.closed.Load() {
		if err := d.flushOneLocked(); err != nil {
			if !errors.Is(err, errCanceled) {
				d.setBackgroundErrorLocked(err)
			}
			break
		}
	}
	d.mu.flushing = false
	d.workEndedLocked()
}

// flushBatchLocked returns how many of the oldest immutable memtables the
// next flush writes together: as many as a memtable's worth of size
// limits holds, at least one. A full-size memtable is flushed alone, as
// it always was; the small memtables a store starts with (see
// takeMemSizeLocked) go out together, into one set of L0 tables, as
// Pebble flushes the memtables it holds back.
func (d *DB) flushBatchLocked() int {
	n, sum := 1, d.mu.imm[0].limit
	for n < len(d.mu.imm) && sum+d.mu.imm[n].limit <= d.opts.MemTableSize {
		sum += d.mu.imm[n].limit
		n++
	}
	return n
}

// flushOneLocked writes the oldest immutable memtables (flushBatchLocked)
// to L0, records them in the MANIFEST with the log number of the next
// memtable and their last sequence number, and deletes their WALs. d.mu
// is released while writing.
func (d *DB) flushOneLocked() (err error) {
	mems := append([]*memTable(nil), d.mu.imm[:d.flushBatchLocked()]...)
	last := mems[len(mems)-1]
	var inputBytes int64
	for _, m := range mems {
		inputBytes += m.batchBytes
	}
	job, start := d.flushBegin(inputBytes), time.Now()
	var files []*manifest.FileMetadata
	defer func() { d.flushEnd(job, inputBytes, files, start, err) }()
	d.unlockedDo(func() {
		for _, m := range mems {
			m.writers.wait() // the writes reserved before the rotation
		}
		d.commit.pub.waitDone(d, last.lastSeq)
	})
	// The snapshots are listed once every write in mems is visible: a
	// snapshot taken while a write reserved in them was still being
	// inserted sees below that write, and the flush must keep the
	// version it sees. Those taken from now on see every write in mems.
	snaps := d.mu.snaps.seqNums()
	d.unlockedDo(func() {
		files, err = d.writeL0(mems, snaps, job, d.cancelCheck())
	})
	if err != nil {
		return err
	}
	nextLog := d.mu.mem.logNum()
	if len(d.mu.imm) > len(mems) {
		nextLog = d.mu.imm[len(mems)].logNum()
	}
	edit := &manifest.VersionEdit{LogNum: nextLog, LastSeqNum: last.lastSeq}
	for _, f := range files {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: f})
	}
	if err := d.mu.versions.logAndApply(edit); err != nil {
		return err
	}
	// Clear the slots first: the backing array stays reachable through the
	// shorter slice, and would keep the flushed memtables alive with it.
	clear(d.mu.imm[:len(mems)])
	d.mu.imm = d.mu.imm[len(mems):]
	d.updateReadStateLocked()
	d.countFlush(inputBytes, files)
	for _, m := range mems {
		d.retireWALs(m.logNums())
		d.releaseMem(m) // the DB's hold
	}
	d.mu.cond.Broadcast()
	return nil
}

// countFlush counts in the metrics a flush of memtables holding
// inputBytes of batches into the L0 tables files.
func (d *DB) countFlush(inputBytes int64, files []*manifest.FileMetadata) {
	var written int64
	for _, f := range files {
		written += int64(f.Size)
	}
	d.metrics.flushes.Add(1)
	d.metrics.flushBytes.Add(written)
	d.metrics.levels[0].bytesIn.Add(inputBytes)
	d.metrics.levels[0].bytesWritten.Add(written)
	d.metrics.levels[0].bytesFlushed.Add(written)
}

// writeL0 writes memtables out as L0 tables, keeping every version an
// open snapshot sees: none when they hold nothing, one unless they
// outgrow compaction.Options.FlushSplitBytes, which cuts them along the
// tables of the base level (compaction.Picker.FlushSplit). job is the
// flush's JobID for the listener's events.
func (d *DB) writeL0(mems []*memTable, snaps []base.SeqNum, job int, cancel func() bool) ([]*manifest.FileMetadata, error) {
	iters := make([]base.InternalIterator, len(mems))
	var rangeDels []sstable.RangeTombstone
	var entries int64
	for i, m := range mems {
		iters[i] = m.NewIter(nil, nil)
		rangeDels = append(rangeDels, m.RangeDels()...)
		entries += int64(m.Len())
	}
	input := iters[0] // a full-size memtable is flushed alone, unmerged
	if len(iters) > 1 {
		input = iterator.NewMerging(d.cmp.Compare, iters...)
	}
	if cancel != nil {
		input = &cancelIter{InternalIterator: input, canceled: cancel}
	}
	// The memtables outlive the flush: their keys and values are written
	// from their arenas, not copied.
	cfg := compaction.RunConfig{Snapshots: snaps, RangeDels: rangeDels, StableInput: true}
	var filter bloompolicy.FilterPolicy
	func() {
		d.mu.Lock()
		defer d.mu.Unlock() // the picker's Compare may panic
		filter = d.tableFilterLocked(0, nil, entries)
		cfg.SplitBoundaries, cfg.SplitBytes = d.picker.FlushSplit(d.mu.versions.current)
	}()
	files, _, err := d.runOutputs(input, cfg, filter, job, "flush")
	if err != nil {
		return nil, fmt.Errorf("kv: flushing memtable of WAL %s: %w", mems[0].logNum(), err)
	}
	return files, nil
}

// runOutputs drives compaction.Run over input into new tables with filter
// (nil: none), filling in what cfg leaves to the DB: comparer, table
// options, and file creation. On failure the tables it created are deleted.
// It reports each table it creates to the listener as job's, for reason.
func (d *DB) runOutputs(input base.InternalIterator, cfg compaction.RunConfig, filter bloompolicy.FilterPolicy,
	job int, reason string) (
	[]*manifest.FileMetadata, compaction.RunStats, error) {
	var created []base.FileNum
	cfg.Comparer = d.cmp
	cfg.Writer = sstable.WriterOptions{BlockSize: d.opts.BlockSize, Comparer: d.cmp, FilterPolicy: filter}
	cfg.NewOutput = func() (base.FileNum, vfs.File, error) {
		d.mu.Lock()
		num := d.mu.versions.nextFileNum()
		d.mu.Unlock()
		f, err := d.fs.Create(d.path(base.MakeFilename(base.FileTypeTable, num)))
		if err != nil {
			return 0, nil, err
		}
		created = append(created, num)
		d.tableCreated(job, reason, num)
		return num, f, nil
	}
	files, stats, err := compaction.Run(input, cfg)
	if cerr := input.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.dataDir.Sync()
	}
	if err != nil {
		for _, num := range created {
			removeFile(d, base.FileTypeTable, num)
		}
		return nil, stats, err
	}
	for _, f := range files {
		emptyKeysNonNil(f)
	}
	return files, stats, nil
}

// emptyKeysNonNil makes an empty smallest or largest user key a non-nil
// empty slice. Key-range helpers (manifest.Version.Overlaps and the
// compaction package) read a nil bound as "unbounded", so the empty key,
// a valid key, must never be nil in a FileMetadata.
func emptyKeysNonNil(f *manifest.FileMetadata) {
	if f.Smallest.UserKey == nil {
		f.Smallest.UserKey = []byte{}
	}
	if f.Largest.UserKey == nil {
		f.Largest.UserKey = []byte{}
	}
}

// cancelCheck returns the function background work polls to stop early.
func (d *DB) cancelCheck() func() bool { return d.closed.Load }

// cancelIter ends its input early, with errCanceled, once canceled reports
// true; compaction.Run then fails and its outputs are discarded.
type cancelIter struct {
	base.InternalIterator
	canceled func() bool
	n        int
	err      error
}

func (c *cancelIter) check(ok bool) bool {
	c.n++
	if ok && c.n%256 == 0 && c.canceled() {
		c.err = errCanceled
		return false
	}
	return ok
}

func (c *cancelIter) First() bool            { return c.check(c.InternalIterator.First()) }
func (c *cancelIter) Next() bool             { return c.check(c.InternalIterator.Next()) }
func (c *cancelIter) SeekGE(key []byte) bool { return c.check(c.InternalIterator.SeekGE(key)) }
func (c *cancelIter) Valid() bool            { return c.err == nil && c.InternalIterator.Valid() }

func (c *cancelIter) Error() error {
	if c.err != nil {
		return c.err
	}
	return c.InternalIterator.Error()
}

func (c *cancelIter) Close() error {
	err := c.InternalIterator.Close()
	if c.err != nil {
		return c.err
	}
	return err
}
