package kv

import (
	"fmt"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/rangedel"
	"github.com/bloomkv/bloomkv/memtable"
	"github.com/bloomkv/bloomkv/sstable"
)

// memTable is a memtable with the WALs that hold its writes.
//
// A reservation reads and changes the fields up to writers.reserved,
// and no other of the memtable's but, now and then, the MemTable's
// Size: they come first, together, so that on many cores the
// reservation, which every other writer waits for, fetches as few cache
// lines as it can.
type memTable struct {
	*memtable.MemTable
	// limit is the size at which the memtable is full: a write that
	// would take it past limit goes to the next one (see
	// DB.takeMemSizeLocked).
	limit int64
	// lastSeq is the sequence number of the last write reserved in it: a
	// flush records it as the MANIFEST's last sequence number. Written
	// and read like batchBytes.
	lastSeq base.SeqNum
	// batchBytes counts the bytes of the batches reserved in it, as they
	// went to the WAL: what a flush of this memtable brings into L0.
	// Written under the commit pipeline's mu (or by the WAL replay at
	// Open), only while the memtable is mutable; the flush reads it after
	// the rotation, under d.mu, so it needs no atomic.
	batchBytes int64
	// sizeSeen is the MemTable's Size when a reservation last read it,
	// and reservedSince bounds what the batches reserved since then add
	// to it (see hasRoom). Written and read like batchBytes.
	sizeSeen, reservedSince int64
	// writers counts the writers that reserved room in the memtable, and
	// those of them that finished inserting: a flush waits for them all.
	writers writerCount
	// logs lists every WAL holding the memtable's writes, ascending. A
	// memtable created by a rotation has one; the one recovered at Open has
	// the WALs it was replayed from, and possibly a new one taking its new
	// writes. They are deleted once the memtable is flushed.
	logs []memLog
	// refs counts the holds on the memtable's memory: the DB's, from its
	// creation until its flush is installed, and one for each read state
	// that lists it (a read holds its read state). The last release
	// offers the memtable for reuse (see DB.releaseMem).
	refs atomic.Int32
}

// cacheLinePad keeps the fields before it off the cache line of those
// after it: 128 bytes, as adjacent lines are fetched in pairs on many
// processors.
type cacheLinePad [128]byte

// writerCount counts the writers of a memtable: those reserved, under
// the commit pipeline's mu, and those done, each once its batch is
// inserted or failed. The count done is on a cache line of its own,
// which every writer changes as it ends: the reservation, which every
// other writer waits for, does not wait for it. A flush waits until
// every writer reserved is done.
type writerCount struct {
	reserved int64 // under the commit pipeline's mu
	_        cacheLinePad
	done     atomic.Int64
	waiters  waiters // wait's, woken by each finish
	_        cacheLinePad
}

// finish counts one writer done, and wakes wait if it is waiting.
func (c *writerCount) finish() {
	c.done.Add(1)
	c.waiters.wake()
}

// wait returns once every writer reserved is done. It runs after the
// memtable's rotation, when no writer reserves in it any more.
func (c *writerCount) wait() {
	if c.done.Load() < c.reserved {
		c.waiters.waitUntil(func() bool { return c.done.Load() >= c.reserved })
	}
}

// reset zeroes the counts, for a memtable's reuse once every writer is
// done.
func (c *writerCount) reset() {
	c.reserved = 0
	c.done.Store(0)
}

// memLog is one of the WALs holding a memtable's writes.
type memLog struct {
	num base.FileNum
	// size is the length of the WAL's records once it takes no more
	// writes, sealed and synced at a rotation, or replayed at Open; 0
	// while it takes writes. Close records it (see DB.closedLogsLocked).
	size int64
}

// newMemTable returns an empty memtable, held by the DB, whose writes go
// to WAL num, or to none yet (num 0) while the WAL replay fills it at
// Open.
func newMemTable(cmp *base.Comparer, num base.FileNum) *memTable {
	m := &memTable{MemTable: memtable.New(cmp)}
	if num != 0 {
		m.logs = []memLog{{num: num}}
	}
	m.refs.Store(1)
	return m
}

// newMemTableLocked returns an empty memtable whose writes go to WAL num,
// held by the DB: the flushed memtable DB.releaseMem kept, reset, if
// there is one, so that the writes go into memory allocated before
// rather than new memory the garbage collector must then collect, about
// a memtable's worth per memtable.
func (d *DB) newMemTableLocked(num base.FileNum, limit int64) *memTable {
	m := d.spareMem.Swap(nil)
	if m == nil {
		m = newMemTable(d.cmp, num)
		m.limit = limit
		return m
	}
	m.MemTable.Reset()
	m.limit = limit
	// A new slice: the flush handed the old one on with the WALs to
	// retire.
	m.logs = []memLog{{num: num}}
	m.lastSeq, m.batchBytes, m.sizeSeen, m.reservedSince = 0, 0, 0, 0
	m.writers.reset()
	m.refs.Store(1)
	return m
}

// initialMemTableSize is the least size limit of a store's first
// memtable, when Options.MemTableSize is larger: Pebble's first size.
const initialMemTableSize = 256 << 10

// takeMemSizeLocked returns the size limit of the next memtable, and
// doubles the one after it, up to Options.MemTableSize; after retiring a
// memtable that was not half full (a Flush), the next one gets the same
// limit again. Memtables start at MemTableSize/16, at least
// initialMemTableSize (see startFresh), as Pebble's ramp up from 256 KiB:
// a store that takes few writes holds little memory in its memtable and
// WAL, and a store filling up inserts into skiplists that stay smaller,
// and so faster, while it does. Pebble starts at 256 KiB whatever its
// MemTableSize; but a read searches every memtable not yet flushed, and
// from 256 KiB up to 64 MiB that made up to eight, which cost YCSB A
// (half reads) 7% here.
func (d *DB) takeMemSizeLocked(retired *memTable) int64 {
	size := d.mu.nextMemSize
	if retired != nil && retired.Size() < retired.limit/2 {
		return size
	}
	d.mu.nextMemSize = min(2*size, d.opts.MemTableSize)
	return size
}

// releaseMem drops one hold on m. The last one keeps m for the next
// memtable switch to reuse, unless one is kept already: no read can
// reach m's memory any more, since no read state lists m, and the DB no
// longer does.
func (d *DB) releaseMem(m *memTable) {
	n := m.refs.Add(-1)
	if n < 0 {
		panic(fmt.Sprintf("kv: memtable released too often (%d)", n))
	}
	if n == 0 {
		d.spareMem.CompareAndSwap(nil, m)
	}
}

// logNum returns the oldest WAL holding the memtable's writes, 0 while it
// has none.
func (m *memTable) logNum() base.FileNum {
	if len(m.logs) == 0 {
		return 0
	}
	return m.logs[0].num
}

// liveLogsLocked yields the WALs that hold writes in no table, oldest
// first: those of the memtables waiting for a flush, then the mutable
// one's. d.mu is held.
func (d *DB) liveLogsLocked() iter.Seq[memLog] {
	return func(yield func(memLog) bool) {
		for _, m := range append(d.mu.imm[:len(d.mu.imm):len(d.mu.imm)], d.mu.mem) {
			for _, l := range m.logs {
				if !yield(l) {
					return
				}
			}
		}
	}
}

// logNums returns the numbers of the WALs holding the memtable's writes.
func (m *memTable) logNums() []base.FileNum {
	nums := make([]base.FileNum, len(m.logs))
	for i, l := range m.logs {
		nums[i] = l.num
	}
	return nums
}

// empty reports whether no entry is inserted in m yet.
func (m *memTable) empty() bool { return m.Len() == 0 }

// hasRoom reports whether b goes into m: no batch is reserved in m yet,
// or m stays within its limit with it. Called under the commit
// pipeline's mu, while m is mutable.
//
// It reads Size, which every insert adds to, only when the batches
// reserved since it last did could take m past its limit: on many
// cores, a counter that every insert changes is a cache line that the
// reservation, which every other writer waits for, would wait for. As
// when it read Size every time, the batches reserved but still being
// inserted when it does are not counted yet.
func (m *memTable) hasRoom(b *Batch) bool {
	if m.batchBytes == 0 || m.sizeSeen+m.reservedSince+sizeBound(b) <= m.limit {
		return true
	}
	m.sizeSeen, m.reservedSince = m.Size(), 0
	return m.sizeSeen+int64(b.Len()) <= m.limit
}

// sizeBound returns the most that b, inserted, adds to a MemTable's Size.
func sizeBound(b *Batch) int64 { return sizeBoundOf(b.Len(), b.Count()) }

// sizeBoundOf returns the most that an encoded batch of n bytes holding
// count entries, inserted, adds to a MemTable's Size: its keys and values
// are among its bytes.
func sizeBoundOf(n, count int) int64 {
	return int64(n) + int64(count)*int64(memtable.MaxEntryOverhead)
}

// holdsWrites reports whether m holds a write: inserted, or reserved
// (batchBytes counts it from then on) and still to be inserted. Read
// batchBytes' way: under the commit pipeline's mu while m is mutable.
func (m *memTable) holdsWrites() bool { return !m.empty() || m.batchBytes > 0 }

// reserve counts b, whose last sequence number is lastSeq, as the
// memtable's, and its writer as one to wait for (see writers). Called
// under the commit pipeline's mu.
func (m *memTable) reserve(b *Batch, lastSeq base.SeqNum) {
	m.batchBytes += int64(len(b.data))
	m.reservedSince += sizeBound(b)
	m.lastSeq = lastSeq
	m.writers.reserved++
}

// apply counts and inserts an encoded batch whose sequence number is set,
// as the WAL replay at Open does, one batch at a time.
func (m *memTable) apply(batch []byte) error {
	r, err := newBatchReader(batch)
	if err != nil {
		return err
	}
	m.batchBytes += int64(len(batch))
	m.reservedSince += sizeBoundOf(len(batch), int(r.Count()))
	if r.Count() > 0 {
		m.lastSeq = r.SeqNum() + base.SeqNum(r.Count()) - 1
	}
	var ins memtable.Inserter
	return m.insert(batch, &ins)
}

// insert inserts an encoded batch whose sequence number is set, through
// ins. Any number of goroutines may insert at once, each through its own
// inserter.
func (m *memTable) insert(batch []byte, ins *memtable.Inserter) error {
	r, err := newBatchReader(batch)
	if err != nil {
		return err
	}
	for {
		rec, seq, ok, err := r.Next()
		if err != nil || !ok {
			return err
		}
		if err := ins.Add(m.MemTable, base.MakeInternalKey(rec.Key, seq, rec.Kind), rec.Value); err != nil {
			return err
		}
	}
}

// readState is what a read needs, taken in one step: the memtables and the
// current Version. A read holds a reference for as long as it reads, which
// keeps the Version, and so its tables, alive.
type readState struct {
	db      *DB
	refs    atomic.Int32
	mem     *memTable
	imm     []*memTable // oldest first
	current *manifest.Version

	// tableDels holds, once gathered, the range tombstones of current's
	// tables, fragmented (see tableRangeDels): readers load frags without a
	// lock; mu lets one gatherer at a time fill it.
	tableDels struct {
		mu    sync.Mutex
		frags atomic.Pointer[[]sstable.RangeTombstone]
	}
}

// readStateHolder publishes the current readState. No read takes a
// lock, not even d.mu: a read loads the pointer and adds one to the
// state's count (see DB.loadReadState). A mutex there, which every read
// takes, made reads on 16 cores queue on it and fall asleep.
type readStateHolder struct {
	val atomic.Pointer[readState]
}

// loadReadState returns the current read state, referenced. Call unref
// when done.
//
// The state loaded is the current one when loaded, so the read sees every
// write acknowledged before it began. The reference is taken only while
// the count is above zero: a state replaced and released between the load
// and the increment has let go of its memtables and Version, and the read
// loads the state that replaced it instead.
func (d *DB) loadReadState() *readState {
	for {
		rs := d.readState.val.Load()
		if rs.tryRef() {
			return rs
		}
	}
}

// tryRef takes a reference on rs unless its last one was released.
func (rs *readState) tryRef() bool {
	for {
		n := rs.refs.Load()
		if n <= 0 {
			return false
		}
		if rs.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// updateReadStateLocked publishes a read state built from the current
// memtables and Version. d.mu must be held.
func (d *DB) updateReadStateLocked() {
	rs := &readState{
		db:      d,
		mem:     d.mu.mem,
		imm:     append([]*memTable(nil), d.mu.imm...),
		current: d.mu.versions.current,
	}
	rs.refs.Store(1)
	rs.current.Ref()
	rs.mem.refs.Add(1)
	for _, m := range rs.imm {
		m.refs.Add(1)
	}
	old := d.readState.val.Swap(rs)
	if old != nil {
		if old.current == rs.current {
			rs.inheritTableDels(old)
		}
		old.unref()
	}
	if old == nil || old.current != rs.current {
		d.filterMem.scheduleLocked()
	}
	d.updateWritesUnslowedLocked()
}

// inheritTableDels takes over the table range tombstones old gathered, if
// it did: old has the same Version (a memtable rotation changed only the
// memtables).
func (rs *readState) inheritTableDels(old *readState) {
	if frags := old.tableDels.frags.Load(); frags != nil {
		// rs is published: an iterator may have gathered them already.
		rs.tableDels.frags.CompareAndSwap(nil, frags)
	}
}

// tableRangeDels returns the range tombstones of every table of rs's
// Version, fragmented, whatever their sequence numbers (a reader filters
// by its own). The first caller gathers them, one table-cache lookup per
// table; the later ones share them, so iterators over the same state pay
// nothing. An error (a table that cannot be opened) is not kept: the next
// caller tries again.
func (rs *readState) tableRangeDels() ([]sstable.RangeTombstone, error) {
	td := &rs.tableDels
	if frags := td.frags.Load(); frags != nil {
		return *frags, nil
	}
	td.mu.Lock()
	defer td.mu.Unlock()
	if frags := td.frags.Load(); frags != nil {
		return *frags, nil
	}
	var ts []sstable.RangeTombstone
	for _, files := range rs.current.Levels {
		for _, f := range files {
			fts, err := rs.db.tableCache.rangeDels(f)
			if err != nil {
				return nil, err
			}
			ts = append(ts, fts...)
		}
	}
	frags := rangedel.Fragment(rs.db.cmp.Compare, ts)
	td.frags.Store(&frags)
	return frags, nil
}

// unref drops one reference. The last one releases the Version, and the
// files no other Version holds are deleted, and the memtables.
func (rs *readState) unref() {
	n := rs.refs.Add(-1)
	if n < 0 {
		panic(fmt.Sprintf("kv: read state unreferenced too often (%d)", n))
	}
	if n == 0 {
		rs.db.unrefVersion(rs.current)
		rs.db.releaseMem(rs.mem)
		for _, m := range rs.imm {
			rs.db.releaseMem(m)
		}
	}
}

// unrefVersion drops one hold on v; when it was the last, v's tables that no
// other Version holds are deleted.
func (d *DB) unrefVersion(v *manifest.Version) {
	if v.Unref() {
		d.cleaner.deleteTables(d, v.Release())
	}
}
