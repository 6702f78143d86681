package kv

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/memtable"
)

// The commit pipeline, after Pebble's. A write goes through four steps:
//
//  1. Reserve, under p.mu, held briefly: make room in the memtable, assign
//     the batch its sequence numbers, append its WAL record (a copy of the
//     batch's bytes) to the WAL's buffer, or, for a NoSync record where
//     the WAL is memory-mapped, encode it into the file, or only reserve
//     its place there where writers overlap, and queue it for
//     publication. The order of p.mu is the order of sequence numbers,
//     of records in the WAL and of publication.
//  2. Put the record into the WAL file, and insert the batch into the
//     memtable. Writers do both concurrently, each its own batch: the
//     memtable takes concurrent inserts; a writer whose record has a
//     place in a mapped file encodes it there itself; and whichever
//     writer finds its record not yet in the WAL file writes the buffer
//     out for every writer queued so far, while the others wait for it
//     (see walSink).
//  3. Publish: the visible sequence number moves past a batch only once
//     it and every batch before it are inserted, so readers never see a
//     later write before an earlier one, and see a batch whole or not at
//     all. A record its writer encoded into a mapped file is completed
//     then, in stream order, so that the file never holds a valid record
//     after one that is not (see walOrder).
//  4. A Sync write waits for a sync of the WAL past its record, which
//     one writer runs for all the Sync writers whose records are written
//     (see walSink). The writer returns once its batch is published, and
//     for a Sync write synced.
//
// A batch is inserted only once its record is in the WAL file (or handed
// to the WAL's flusher with Options.BackgroundWALWrites), so a failed WAL
// write leaves nothing in the memtable that the WAL lacks; it fails that
// write and every later one, whose records come after it.
//
// An exclusive operation (rotating the memtable for Flush, closing the
// WAL) holds p.mu: no write reserves meanwhile. Writes that reserved
// before it may still be inserting; a flush waits for them (see
// memTable.writers).

type commitPipeline struct {
	// The fields a reservation reads and changes come first, together,
	// on a cache line of their own: on many cores, each cache line that
	// the last reservation changed is one that the next waits for while
	// every other writer waits for it.
	_ cacheLinePad
	// mu orders reservations; it guards everything below but pub's
	// state and slots, and the error.
	mu     sync.Mutex
	log    *walWriter  // the WAL of the mutable memtable
	logSeq base.SeqNum // the last sequence number assigned
	// sealedAt is log's size when its records end in a seal, or hold none
	// (see sealLog); -1 otherwise.
	sealedAt int64
	// err is the sticky failure of a WAL write or sync, or of an insert:
	// once set, nothing more is acknowledged.
	err stickyError
	// pub's head, which mu guards, comes first in it.
	pub publisher
	// walBuffers passes the buffers of BackgroundWALWrites from each
	// WAL's flusher to the next's.
	walBuffers walBuffers
	// recycler keeps flushed WALs' files for the next WALs.
	recycler walRecycler
}

// writer is one write in the pipeline.
type writer struct {
	batch *Batch
	sync  bool
	// lastSeq is the sequence number of the batch's last write.
	lastSeq base.SeqNum
	// outcome tells whoever pops the writer whether its batch was
	// inserted whole (batchApplied) or not (batchFailed), and is 0 until
	// then. visible, set by whoever pops it before its signal, tells the
	// writer whether readers see it.
	outcome atomic.Uint32
	visible bool
	// publishedSig is set once the batch has left the publication
	// queue (see signal).
	publishedSig signal
	// mapped is the place reserved for the batch's record in a mapped
	// WAL's file, which the writer encodes the record into and whoever
	// pops it completes; copied is set instead when the record was
	// copied into the file under p.mu. Either way the record is written
	// once the writer is published, and only a sync could remain to
	// wait for, which a Sync write's record never is (see
	// walWriter.append).
	mapped mappedRecord
	copied bool
	// ins is the writer's memtable inserter, whose hint serves the
	// batch's ascending runs.
	ins memtable.Inserter
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
// batch is published, or was never reserved.
func putWriter(w *writer) {
	w.batch, w.visible = nil, false
	if w.mapped.log != nil {
		w.mapped = mappedRecord{} // no pooled writer pins a WAL
	}
	w.outcome.Store(0)
	w.ins = memtable.Inserter{} // no pooled writer pins a flushed memtable
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
// Apply returns; applied again as it is, it commits again, at new sequence
// numbers, so its writes win once more over any made in between. A batch
// spoiled by a write over the limits is refused with that write's error, and
// an indexed batch made by another DB (NewIndexedBatch) with an error: a
// plain batch may go to any DB.
func (d *DB) Apply(b *Batch, opts *WriteOptions) error {
	w := getWriter()
	defer putWriter(w)
	return d.applyWriter(w, b, opts)
}

// applyWriter commits b through the pipeline as w.
func (d *DB) applyWriter(w *writer, b *Batch, opts *WriteOptions) error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	if b == nil {
		return errors.New("kv: Apply of a nil batch")
	}
	if b.err != nil {
		return b.err
	}
	if b.db != nil && b.db != d {
		return errIndexedBatchOfAnotherDB
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

// errIndexedBatchOfAnotherDB refuses an indexed batch applied to a DB
// other than the one that made it: its reads went over that DB, so its
// writes were decided on another store's state (Pebble panics there).
var errIndexedBatchOfAnotherDB = errors.New("kv: Apply of an indexed batch made by another DB")

// runExclusive runs fn holding p.mu: after every write that reserved
// before it, and before every write that reserves after it.
func (p *commitPipeline) runExclusive(fn func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fn()
}

// run commits w's batch: it reserves, waits for its record to be in the
// WAL file, inserts the batch into the memtable, and publishes it; a
// Sync write then waits for its record to be synced. A batch that a
// failure behind it kept from becoming visible fails with the error that
// stopped writes.
//
// A Sync write's batch is published before its sync, as in Pebble: the
// writes after it, Sync or not, then wait for its record to be written,
// not synced, and a NoSync write among Sync ones costs no fsync. Readers
// may see a Sync write before it is synced, as they see a NoSync write
// that is not; its writer returns once it is synced. Should the sync
// fail, the write is refused, and may be found after a reopen (see
// Failures in the package documentation).
func (p *commitPipeline) run(d *DB, w *writer) error {
	mem, log, end, err := p.reserve(d, w)
	if err != nil {
		return err // never queued for publication
	}
	// Counted here, not under p.mu: the counters' cache line, which
	// every writer adds to, is not one more that the next reservation
	// waits for.
	d.metrics.walBytesIn.Add(int64(len(w.batch.data)))
	if w.mapped.log != nil || w.copied { // stored into the file's pages
		log.direct.pf.wakeDue()
		d.metrics.walWrites.Add(1)
	}
	// Published as failed unless inserted whole: a failed insert must not
	// publish the batch, nor leave the writers behind it waiting.
	err = p.apply(mem, log, end, w)
	p.pub.release(d, w, err == nil)
	if err == nil && w.sync {
		if err = log.sink.syncTo(end); err != nil {
			err = p.err.set(walFailed(err)) // the sink's, set already
		}
	}
	if !p.pub.await(w) && err == nil {
		err = p.stickyErr()
	}
	return err
}

// apply writes w's record into the WAL file, or waits until it is there,
// as the default mode promises, and inserts w's batch into mem. A record
// encoded into the mapping is completed when w is published (see
// walOrder); the record's sync, if w asks for one, is left to run.
func (p *commitPipeline) apply(mem *memTable, log *walWriter, end int64, w *writer) error {
	defer mem.writers.finish()
	switch {
	case w.mapped.log != nil:
		if err := w.mapped.encode(w.batch.data); err != nil {
			return p.err.set(walFailed(err))
		}
	case !w.copied:
		if err := log.sink.wait(end, w.sync); err != nil {
			return p.err.set(walFailed(err)) // the sink's, set already
		}
	}
	return p.insert(mem, w)
}

// insert inserts w's batch into mem. A panic there, of the comparer's
// callbacks (the user's code), may leave part of the batch in the
// memtable: it stops writes, as a failed WAL write does, and the
// publisher then shows readers nothing from this batch on. The failure
// is recorded without p.mu: a writer queueing for publication may hold
// p.mu while it waits for this batch to leave the ring (see
// publisher.enqueue).
func (p *commitPipeline) insert(mem *memTable, w *writer) (err error) {
	defer func() {
		if err != nil {
			p.err.set(fmt.Errorf("kv: the DB accepts no more writes: %w", err))
		}
	}()
	defer recoverCallback("inserting a batch into the memtable", &err)
	if err := mem.insert(w.batch.data, &w.ins); err != nil {
		return fmt.Errorf("kv: applying a batch the DB encoded: %w", err)
	}
	return nil
}

// stickyErr returns the error that stopped writes.
func (p *commitPipeline) stickyErr() error {
	if err := p.err.get(); err != nil {
		return err
	}
	return errors.New("kv: a batch before this one failed, the DB accepts no more writes")
}

// stickyError is the first error of several goroutines, kept: set by
// the first failure, read by every later write, without a lock.
type stickyError struct{ p atomic.Pointer[error] }

// set records err unless an error is recorded already, and returns the
// one recorded.
func (e *stickyError) set(err error) error {
	e.p.CompareAndSwap(nil, &err)
	return *e.p.Load()
}

// get returns the error recorded, nil if none.
func (e *stickyError) get() error {
	if p := e.p.Load(); p != nil {
		return *p
	}
	return nil
}

// reserve reserves w's batch under p.mu (see reserveLocked) and queues
// it for publication. Each writer takes p.mu itself, for the little time
// reserving takes, and then goes on concurrently with the others, its
// own batch. Writers waiting for a group's leader to reserve them all
// would each wait twice per write, for the reservation and for the
// publication, and with 16 writers those waits, and the wake-ups that
// end them, took more time than the work.
//
// A writer that finds p.mu held is one of several at once, which p.mu
// makes wait for each other: its record, where the WAL is mapped, is
// then only given its place under p.mu, and encoded by the writer out of
// it (see walWriter.append).
func (p *commitPipeline) reserve(d *DB, w *writer) (mem *memTable, log *walWriter, end int64, err error) {
	w.publishedSig.reset()
	overlapped := !p.mu.TryLock()
	if overlapped {
		p.mu.Lock()
	}
	mem, log, end, err = p.reserveLocked(d, w, overlapped)
	if err == nil {
		p.pub.enqueue(w)
	}
	p.mu.Unlock()
	return mem, log, end, err
}

// reserveLocked makes room for w's batch in the memtable, assigns its
// sequence numbers and appends its record to the WAL, under p.mu; the
// caller then queues it for publication. It returns the memtable to
// insert into, which counts w among its writers, and the WAL with the
// stream offset at which the record ends. overlapped says whether other
// writers waited for p.mu with w (see walWriter.append).
func (p *commitPipeline) reserveLocked(d *DB, w *writer, overlapped bool) (*memTable, *walWriter, int64, error) {
	if err := p.err.get(); err != nil {
		return nil, nil, 0, err
	}
	b := w.batch
	mem, err := d.makeRoomForWrite(b)
	if err != nil {
		return nil, nil, 0, err
	}
	seq := p.logSeq
	if uint64(seq)+uint64(b.Count()) > uint64(base.SeqNumMax) {
		return nil, nil, 0, fmt.Errorf("%w: %d is the last sequence number", errSeqNumsExhausted, seq)
	}
	b.setSeqNum(seq + 1)
	end, copied, err := p.log.append(b.data, w.sync, overlapped, &d.metrics, &w.mapped)
	if err != nil {
		return nil, nil, 0, p.err.set(walFailed(err))
	}
	p.logSeq = seq + base.SeqNum(b.Count())
	w.lastSeq, w.copied = p.logSeq, copied
	mem.reserve(b, p.logSeq)
	return mem, p.log, end, nil
}

// publisher publishes batches in sequence order: d.visibleSeq moves past
// a batch once it and every batch reserved before it are inserted, and
// its record in a mapped WAL is completed (see walOrder).
//
// Each writer pushes itself, under the pipeline's mu, onto a ring in
// sequence order. A writer whose batch is inserted publishes every
// inserted batch at the ring's tail, its own and those after it, as the
// ring's one publisher of the moment: it claims the ring with one
// compare-and-swap, and a writer that finds it claimed leaves its batch
// to the claimant, which looks at the tail again once it lets go. A
// writer waits for its own batch's signal only when an earlier batch is
// still being inserted, or another writer is publishing. One publisher
// at a time completes the records in stream order without waiting for
// any other goroutine; a lock there would make every writer wait while
// the holder woke the ones it published.
type publisher struct {
	// head counts the writers pushed, under the pipeline's mu, which it
	// shares a cache line with: the publishing, which every writer
	// takes part in, does not read it, so a push does not wait for
	// their cache line.
	head uint32
	_    cacheLinePad
	// state packs publication's halt in bit 31, the claim of the
	// publisher of the moment in bit 30, and the ring's tail, the count
	// published modulo 2^30, in the low 30 bits. Only the claimant
	// changes the halt and the tail.
	state atomic.Uint32
	// slots holds the writers from tail to head, at their count modulo
	// the ring's size. A slot is nil from its writer's publication
	// until the next push; a push waits for it (see enqueue). So the
	// ring is empty where the tail's slot is nil.
	slots [pubRingSize]atomic.Pointer[writer]

	// waitDone's waiters, woken by each publication.
	done waiters
}

// The outcomes of a writer's batch (writer.outcome).
const (
	batchApplied = 1 + iota
	batchFailed
)

// pubRingSize is the size of the publication ring, and so the most
// writers between reservation and publication at once (see enqueue): a
// power of two.
const pubRingSize = 1 << 12

// The fields of publisher.state.
const (
	pubHalted   = 1 << 31        // a batch failed: no batch from it on is visible
	pubClaimed  = 1 << 30        // a writer is publishing
	pubTailMask = pubClaimed - 1 // the tail, modulo 2^30
)

// halted reports whether a failed batch halted publication: no batch from
// it on becomes visible (a failed insert may have left part of it in the
// memtable).
func (q *publisher) halted() bool { return q.state.Load()&pubHalted != 0 }

// enqueue pushes w, reserved, onto the ring, under the pipeline's mu: one
// pusher at a time, in sequence order.
//
// The ring holds at most pubRingSize writers: a push waits until the
// slot's last occupant, pubRingSize writers back, is published and its
// slot cleared, which the writers in the ring do without p.mu (nothing
// between a reservation and its publication takes it). So the head never
// laps the tail. Only more than pubRingSize writers at once wait here,
// holding p.mu.
func (q *publisher) enqueue(w *writer) {
	slot := &q.slots[q.head%pubRingSize]
	for slot.Load() != nil {
		runtime.Gosched()
	}
	slot.Store(w)
	q.head++
}

// release marks w's batch inserted whole, or failed, and publishes every
// batch at the ring's tail that is inserted, unless another writer is
// publishing, which then publishes them; await then waits until w is
// published. A failed batch, or one whose record could not be
// completed, leaves the ring unpublished, and halts publication: no
// batch after it becomes visible either.
//
// A writer that finds the ring claimed leaves: its outcome is stored
// before its claim fails, which is before the claimant lets go and looks
// at the tail again, so the claimant finds it.
func (q *publisher) release(d *DB, w *writer, inserted bool) {
	if inserted {
		w.outcome.Store(batchApplied)
	} else {
		w.outcome.Store(batchFailed)
	}
	for q.ready() && q.claim() {
		q.publishReady(d)
	}
}

// ready reports whether the batch at the ring's tail is inserted, or
// failed.
func (q *publisher) ready() bool {
	x := q.slots[(q.state.Load()&pubTailMask)%pubRingSize].Load()
	return x != nil && x.outcome.Load() != 0
}

// claim makes the caller the ring's publisher, unless another writer is.
func (q *publisher) claim() bool {
	for {
		st := q.state.Load()
		if st&pubClaimed != 0 {
			return false
		}
		if q.state.CompareAndSwap(st, st|pubClaimed) {
			return true
		}
	}
}

// publishReady publishes the batches at the ring's tail that are
// inserted, or failed, in order, completing their records in a mapped
// WAL first, and lets go of the ring. Only the ring's claimant calls it.
// It stores the state once, at the end, with the claim cleared: until
// then the tail it stores is its own, and a writer that reads the older
// one meanwhile finds its slot cleared, or another writer's whose claim
// fails or comes after, and the claimant looks at the tail again anyway.
func (q *publisher) publishReady(d *DB) {
	st := q.state.Load()
	tail, halted := st&pubTailMask, st&pubHalted != 0
	for {
		slot := &q.slots[tail%pubRingSize]
		x := slot.Load()
		if x == nil {
			break // the ring is empty
		}
		outcome := x.outcome.Load()
		if outcome == 0 {
			break // still being inserted
		}
		visible := !halted && outcome == batchApplied
		if x.mapped.log != nil {
			// Every byte before the record is whole in the file: the
			// batches before it are published, and their records,
			// whichever way they went, complete.
			if err := x.mapped.complete(); err != nil && visible {
				visible = false
				d.commit.err.set(walFailed(err))
			}
		}
		halted = halted || !visible
		tail = (tail + 1) & pubTailMask
		slot.Store(nil)
		if x.visible = visible; visible {
			for seq := uint64(x.lastSeq); ; {
				cur := d.visibleSeq.Load()
				if cur >= seq || d.visibleSeq.CompareAndSwap(cur, seq) {
					break
				}
			}
		}
		x.publishedSig.set()
	}
	next := tail
	if halted {
		next |= pubHalted
	}
	q.state.Store(next)
	q.done.wake() // waitDone's and waitDrained's, once per run
}

// await waits until w, released, is published, and reports whether
// readers see it.
func (q *publisher) await(w *writer) bool {
	w.publishedSig.wait()
	return w.visible
}

// waitDrained waits until every writer pushed is published. Called under
// the pipeline's mu, so that none is pushed meanwhile.
func (q *publisher) waitDrained() {
	head := q.head & pubTailMask
	q.done.waitUntil(func() bool {
		st := q.state.Load()
		return st&pubTailMask == head && st&pubClaimed == 0
	})
}

// waitDone waits until every batch up to sequence number seq is
// published, or publication halted, so a flush writes no write that
// readers cannot see yet: a compaction could otherwise drop the older
// version such a reader needs, shadowed by one it does not see. Once
// publication halted no later batch becomes visible, nor is any written.
func (q *publisher) waitDone(d *DB, seq base.SeqNum) {
	q.done.waitUntil(func() bool { return base.SeqNum(d.visibleSeq.Load()) >= seq || q.halted() })
}

// errSeqNumsExhausted refuses writes once every sequence number up to
// base.SeqNumMax is used: a store recovered from a WAL that claims such
// numbers can be read, not written.
var errSeqNumsExhausted = errors.New("kv: sequence numbers exhausted")

// makeRoomForWrite returns the memtable to write b into. When the
// memtable is full it switches to a new one and a new WAL; it stalls while
// too many memtables wait for a flush, or while L0's read amplification is
// too high for compaction to keep up, and slows writes a little before
// that. It fails once the DB is closed or background work has failed.
//
// It runs under the pipeline's mu, which orders it with every change of
// the memtable; it takes d.mu only when the memtable is full or something
// slows writes (see writesUnslowed), so that a write's reservation, which
// every other write waits for, does not wait for background work holding
// d.mu, nor pull d.mu's cache line from the last core that held it.
func (d *DB) makeRoomForWrite(b *Batch) (*memTable, error) {
	if mem := d.mu.mem; d.writesUnslowed.Load() && !d.closed.Load() && mem.hasRoom(b) {
		return mem, nil
	}
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
		case d.mu.mem.hasRoom(b):
			if !slowed && d.l0StallLocked(d.opts.L0SlowdownWritesThreshold) {
				slowed = true
				d.mu.Unlock()
				time.Sleep(time.Millisecond)
				d.mu.Lock()
				continue
			}
			return d.mu.mem, nil
		case d.immLimitsLocked()/d.opts.MemTableSize >= int64(d.opts.MemTableStopWritesThreshold):
			// Divided, not multiplied: a threshold as large as an int
			// (never stall) would overflow the product.
			d.stallLocked("memtables waiting for a flush")
			d.mu.cond.Wait()
		case d.l0StallLocked(d.opts.L0StopWritesThreshold - len(d.mu.imm)):
			// Each memtable waiting for a flush lands in L0 as one more
			// table under a key: counted, L0 does not pass the threshold.
			// They are flushed now, due or not: small memtables (those
			// that start a store's life) may wait for more to add up to
			// a flush, and with L0 below its compaction threshold
			// nothing else would change what this write waits for.
			if len(d.mu.imm) > 0 {
				d.forceFlushLocked(d.mu.mem.logNum())
			}
			d.stallLocked("L0 read amplification at L0StopWritesThreshold")
			d.mu.cond.Wait()
		default:
			if err := d.rotateMemTableLocked(); err != nil {
				return nil, err
			}
		}
	}
}

// updateWritesUnslowedLocked sets d.writesUnslowed from the background
// error and L0's read amplification, as they are now. It runs whenever
// either may have changed: a new Version, a background failure.
func (d *DB) updateWritesUnslowedLocked() {
	d.writesUnslowed.Store(d.mu.bgErr == nil && !d.l0StallLocked(d.opts.L0SlowdownWritesThreshold))
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
// with a new WAL, then schedules a flush. It runs under the pipeline's mu.
// d.mu is released while the files are created and synced.
func (d *DB) rotateMemTableLocked() error {
	p := &d.commit
	num := d.mu.versions.nextFileNum()
	limit := d.takeMemSizeLocked(d.mu.mem)
	d.mu.Unlock()
	newLog, err := d.createWAL(num, limit)
	if err == nil {
		var sealed bool
		if sealed, err = p.closeSealed(); err == nil && sealed {
			err = p.markSwitch(d, newLog)
		}
		if err != nil {
			newLog.abandon()
		}
	}
	d.mu.Lock()
	if err != nil {
		return p.err.set(fmt.Errorf("kv: switching WAL, the DB accepts no more writes: %w", err))
	}
	// The old WAL is sealed and synced: its length is for Close to
	// record, should it still be live then.
	old := d.mu.mem.logs
	old[len(old)-1].size = p.log.w.Size()
	// The new WAL holds no record, or the switch's mark, which serves as
	// its seal while no write follows it.
	p.log, p.sealedAt = newLog, newLog.w.Size()
	d.mu.imm = append(d.mu.imm, d.mu.mem)
	d.mu.mem = d.newMemTableLocked(num, limit)
	d.updateReadStateLocked()
	d.maybeScheduleFlushLocked()
	return nil
}

// closeLog seals, syncs and closes the WAL (closeSealed), and returns
// what the MANIFEST records of it: its number and length. Run under the
// pipeline's mu at Close.
func (p *commitPipeline) closeLog() (manifest.ClosedLog, error) {
	if p.log == nil {
		return manifest.ClosedLog{}, nil
	}
	_, err := p.closeSealed()
	live := manifest.ClosedLog{Num: p.log.num, Size: p.log.w.Size()}
	p.log = nil
	return live, err
}
