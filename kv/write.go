package kv

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
)

// The commit pipeline. Writers queue in arrival order. The writer at the
// head of the queue is the leader: it takes a group of queued batches,
// makes room in the memtable, assigns their sequence numbers, appends them
// to the WAL with one write and at most one fsync, inserts them into the
// memtable, publishes the new visible sequence number, and then hands each
// writer of the group its result. Everyone else just waits. Only a leader
// touches the WAL and inserts into the memtable, so both need no further
// locking, and one group becomes visible at once.
//
// An exclusive operation (rotating the memtable for Flush, closing the WAL)
// queues like a write and runs alone when it reaches the head.

// maxGroupBytes bounds the bytes a leader commits in one group; a small
// first batch bounds its group more tightly, so small writes are not held
// up behind big ones.
const (
	maxGroupBytes   = 1 << 20
	smallBatchBytes = 128 << 10
)

type commitPipeline struct {
	mu    sync.Mutex
	queue []*writer
	// lastGroup is the number of writers of the last group committed.
	lastGroup int

	// Owned by the leader.
	log    *walWriter  // the WAL of the mutable memtable
	logSeq base.SeqNum // the last sequence number assigned
	// sealedAt is log's size when its records end in a seal, or hold none
	// (see sealLog); -1 otherwise.
	sealedAt int64
	// err is the sticky failure of a WAL write or sync: once set, nothing
	// more is acknowledged.
	err error
	// walBuffers passes the buffers of BackgroundWALWrites from each
	// WAL's flusher to the next's.
	walBuffers walBuffers
	// recycler keeps flushed WALs' files for the next WALs.
	recycler walRecycler
}

// writer is one queued request.
type writer struct {
	batch *Batch
	sync  bool
	fn    func() error // an exclusive operation instead of a batch
	done  bool
	err   error
	cond  sync.Cond
	// own is the batch of a single Set or Delete: pooled with the writer,
	// its buffer serves write after write.
	own Batch
}

// writerPool recycles writers, and the buffers of their own batches, so a
// write allocates nothing once the pool is warm.
var writerPool = sync.Pool{New: func() any { return new(writer) }}

// maxPooledBatch bounds the buffer a pooled writer keeps: one big write
// does not pin its memory for the writes after it.
const maxPooledBatch = 64 << 10

// getWriter returns a writer with an empty own batch.
func getWriter() *writer {
	w := writerPool.Get().(*writer)
	w.own.Reset()
	return w
}

// putWriter returns w to the pool once no goroutine refers to it: its
// writer has returned from run.
func putWriter(w *writer) {
	w.batch, w.fn, w.done, w.err = nil, nil, false, nil
	if cap(w.own.data) > maxPooledBatch {
		w.own.data = nil
	}
	writerPool.Put(w)
}

// Set writes value under key. The DB keeps no reference to key or value.
func (d *DB) Set(key, value []byte, opts *WriteOptions) error {
	return d.applyOne(base.KindSet, key, value, opts)
}

// Delete removes key. Deleting a missing key is not an error.
func (d *DB) Delete(key []byte, opts *WriteOptions) error {
	return d.applyOne(base.KindDelete, key, nil, opts)
}

// applyOne commits a batch of one write, encoded into a pooled writer's own
// batch.
func (d *DB) applyOne(kind base.Kind, key, value []byte, opts *WriteOptions) error {
	w := getWriter()
	defer putWriter(w)
	if err := w.own.add(kind, key, value); err != nil {
		return err
	}
	return d.applyWriter(w, &w.own, opts)
}

// DeleteRange removes every key k with start <= k < end (under the DB's
// comparer), atomically: reads and iterators that start after it returns
// see none of them, snapshots taken before still see them all. Keys
// written later in the range are not affected. An empty range
// (start >= end) deletes nothing and is not an error, as in Pebble. The DB
// keeps no reference to start or end.
//
// The range is stored as one range tombstone, whatever the number of keys
// it covers; compactions drop the keys it covers, then the tombstone once
// no snapshot and no deeper level needs it.
func (d *DB) DeleteRange(start, end []byte, opts *WriteOptions) error {
	w := getWriter()
	defer putWriter(w)
	if err := w.own.DeleteRange(start, end); err != nil {
		return err
	}
	return d.applyWriter(w, &w.own, opts)
}

// Apply commits the batch atomically: readers see all of its writes or none,
// and recovery restores all or none. The batch may be reused (Reset) once
// Apply returns. A batch spoiled by a write over the limits is refused with
// that write's error.
func (d *DB) Apply(b *Batch, opts *WriteOptions) error {
	w := getWriter()
	defer putWriter(w)
	return d.applyWriter(w, b, opts)
}

// applyWriter commits b through the pipeline as w.
func (d *DB) applyWriter(w *writer, b *Batch, opts *WriteOptions) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if b == nil {
		return errors.New("kv: Apply of a nil batch")
	}
	if b.err != nil {
		return b.err
	}
	if b.Empty() {
		return nil
	}
	if err := d.checkSplit(b); err != nil {
		return err
	}
	w.batch, w.sync = b, opts.sync()
	return d.commit.run(d, w)
}

// runExclusive runs fn as the leader, alone, once every write queued before
// it has been committed.
func (p *commitPipeline) runExclusive(d *DB, fn func() error) error {
	return p.run(d, &writer{fn: fn})
}

// run queues w and waits until a leader has committed it, or leads itself.
func (p *commitPipeline) run(d *DB, w *writer) error {
	w.cond.L = &p.mu
	p.mu.Lock()
	p.queue = append(p.queue, w)
	for !w.done && p.queue[0] != w {
		w.cond.Wait()
	}
	if w.done {
		p.mu.Unlock()
		return w.err
	}
	p.gatherSyncWriters(w)
	group := p.takeGroup()
	p.mu.Unlock()

	// The deferred hand-off also runs if the leader panics, so the writers
	// behind it (and Close) are not left waiting forever.
	err := errLeaderPanicked
	defer p.finish(group, &err)
	if w.fn != nil {
		err = w.fn()
	} else {
		err = d.commitGroup(group)
	}
	return err
}

// gatherSyncWriters lets a leader about to sync wait for a moment (one
// yield of the processor) when the last group had several writers, with
// p.mu released: the writers the last leader just released are then
// likely to queue their next writes in time to share this fsync, where
// they would otherwise make the next group and the next fsync. Concurrent
// Sync writers then share one fsync almost all together, not in two
// halves, for the cost of a yield against that of an fsync.
func (p *commitPipeline) gatherSyncWriters(lead *writer) {
	if !lead.sync || p.lastGroup < 2 {
		return
	}
	p.mu.Unlock()
	runtime.Gosched()
	p.mu.Lock()
}

// errLeaderPanicked is handed to the writers of a group whose leader
// panicked.
var errLeaderPanicked = errors.New("kv: commit leader panicked")

// finish hands each writer of the group its result and wakes the next
// leader.
func (p *commitPipeline) finish(group []*writer, err *error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastGroup = len(group)
	for _, g := range group {
		g.done, g.err = true, *err
		g.cond.Signal()
	}
	n := copy(p.queue, p.queue[len(group):])
	clear(p.queue[n:])
	p.queue = p.queue[:n]
	if n > 0 {
		p.queue[0].cond.Signal()
	}
}

// takeGroup returns the writers the leader (queue[0]) commits together: the
// leader alone if it is exclusive, else the batches queued behind it up to
// the group's byte budget or the next exclusive operation.
func (p *commitPipeline) takeGroup() []*writer {
	lead := p.queue[0]
	if lead.fn != nil {
		return p.queue[:1]
	}
	budget := maxGroupBytes
	if lead.batch.Len() <= smallBatchBytes {
		budget = lead.batch.Len() + smallBatchBytes
	}
	size, n := 0, 0
	for _, w := range p.queue {
		if w.fn != nil || (n > 0 && size+w.batch.Len() > budget) {
			break
		}
		size += w.batch.Len()
		n++
	}
	return p.queue[:n:n]
}

// commitGroup writes the group's batches to the WAL and the memtable.
func (d *DB) commitGroup(group []*writer) error {
	p := &d.commit
	if p.err != nil {
		return p.err
	}
	size, count, sync := 0, 0, false
	for _, w := range group {
		size += w.batch.Len()
		count += w.batch.Count()
		sync = sync || w.sync
	}
	mem, err := d.makeRoomForWrite(size)
	if err != nil {
		return err
	}
	seq := p.logSeq
	if uint64(seq)+uint64(count) > uint64(base.SeqNumMax) {
		return fmt.Errorf("%w: %d is the last sequence number", errSeqNumsExhausted, seq)
	}
	for _, w := range group {
		w.batch.setSeqNum(seq + 1)
		seq += base.SeqNum(w.batch.Count())
	}
	if err := p.log.writeGroup(group, sync, &d.metrics); err != nil {
		p.err = fmt.Errorf("kv: WAL write failed, the DB accepts no more writes: %w", err)
		return p.err
	}
	for _, w := range group {
		if err := mem.apply(w.batch.data); err != nil {
			panic(fmt.Sprintf("kv: applying a batch the DB encoded: %v", err))
		}
	}
	p.logSeq = seq
	d.visibleSeq.Store(uint64(seq))
	return nil
}

// errSeqNumsExhausted refuses writes once every sequence number up to
// base.SeqNumMax is used: a store recovered from a WAL that claims such
// numbers can be read, not written.
var errSeqNumsExhausted = errors.New("kv: sequence numbers exhausted")

// makeRoomForWrite returns the memtable to write n bytes into. When the
// memtable is full it switches to a new one and a new WAL; it stalls while
// too many memtables wait for a flush, or while L0's read amplification is
// too high for compaction to keep up, and slows writes a little before
// that. It fails once the DB is closed or background work has failed.
func (d *DB) makeRoomForWrite(n int) (*memTable, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.stallEndedLocked()
	slowed := false
	for {
		switch {
		case d.closed.Load():
			return nil, ErrClosed
		case d.mu.bgErr != nil:
			return nil, d.mu.bgErr
		case d.mu.mem.empty() || d.mu.mem.Size()+int64(n) <= d.opts.MemTableSize:
			if !slowed && d.l0StallLocked(d.opts.L0SlowdownWritesThreshold) {
				slowed = true
				d.mu.Unlock()
				time.Sleep(time.Millisecond)
				d.mu.Lock()
				continue
			}
			return d.mu.mem, nil
		case len(d.mu.imm) >= d.opts.MemTableStopWritesThreshold:
			d.metrics.writeStalls.Add(1)
			d.stallLocked("memtables waiting for a flush")
			d.mu.cond.Wait()
		case d.l0StallLocked(d.opts.L0StopWritesThreshold):
			d.metrics.writeStalls.Add(1)
			d.stallLocked("L0 read amplification at L0StopWritesThreshold")
			d.mu.cond.Wait()
		default:
			if err := d.rotateMemTableLocked(); err != nil {
				return nil, err
			}
		}
	}
}

// l0StallLocked reports whether L0's read amplification (the most L0
// tables holding one user key, compacting or not, as Pebble counts for its
// L0StopWritesThreshold) is threshold or more while background compaction
// is on to reduce it.
func (d *DB) l0StallLocked(threshold int) bool {
	return !d.opts.DisableAutomaticCompactions && d.l0ReadAmpLocked() >= threshold
}

// l0ReadAmpCache holds the L0 read amplification of one version, so that
// writers check it without sweeping L0 on every write.
type l0ReadAmpCache struct {
	v   *manifest.Version
	amp int
}

// l0ReadAmpLocked returns the L0 read amplification of the current version.
func (d *DB) l0ReadAmpLocked() int {
	c := &d.mu.l0ReadAmp
	if v := d.mu.versions.current; c.v != v {
		c.v, c.amp = v, d.picker.L0ReadAmp(v, nil)
	}
	return c.amp
}

// rotateMemTableLocked makes the memtable immutable and starts a new one
// with a new WAL, then schedules a flush. Only the commit leader calls it.
// d.mu is released while the files are created and synced.
func (d *DB) rotateMemTableLocked() error {
	p := &d.commit
	num := d.mu.versions.nextFileNum()
	d.mu.Unlock()
	newLog, err := d.createWAL(num)
	if err == nil {
		sealErr := p.sealLog()
		if err = p.log.close(); err == nil {
			err = sealErr
		}
		if err != nil {
			newLog.abandon()
		}
	}
	d.mu.Lock()
	if err != nil {
		p.err = fmt.Errorf("kv: switching WAL, the DB accepts no more writes: %w", err)
		return p.err
	}
	p.log, p.sealedAt = newLog, 0
	d.mu.imm = append(d.mu.imm, d.mu.mem)
	d.mu.mem = newMemTable(d.cmp, num)
	d.updateReadStateLocked()
	d.maybeScheduleFlushLocked()
	return nil
}

// closeLog flushes, syncs and closes the WAL. Run by a leader at Close.
func (p *commitPipeline) closeLog() error {
	if p.log == nil {
		return nil
	}
	err := p.log.close()
	p.log = nil
	return err
}
