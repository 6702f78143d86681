package kv

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// tableCache keeps up to capacity tables open. Every lookup and iterator
// goes through it once per table it touches, so a hit takes the read
// lock only and writes nothing shared but its entry's reference count and
// referenced bit: eviction is CLOCK (second chance) rather than LRU. The
// entries sit in a ring; to make room, the hand, under the write lock,
// walks the ring clearing the referenced bits it finds set, and the new
// entry takes the slot of the first entry whose bit was already clear
// (one not got since the hand last passed it). Entries are reference
// counted: a reader in use by a lookup or an iterator stays open after
// eviction until its last user releases it.
//
// A large cache is split into shards by file number, each with its own
// lock, ring and share of the capacity (see tableCacheShards): on many
// cores, one read lock that every read of every table takes is one cache
// line that every read changes.
type tableCache struct {
	d *DB

	// indexBytes counts the memory the open tables' indexes take
	// (sstable.Reader.IndexSize).
	indexBytes atomic.Int64

	shards []tableCacheShard
}

// tableCacheShard is the part of a tableCache that holds the tables
// whose file numbers it is given.
type tableCacheShard struct {
	_        cacheLinePad
	mu       sync.RWMutex
	capacity int
	entries  map[base.FileNum]*tableEntry
	clock    []*tableEntry // the ring of listed entries, at most capacity
	hand     int           // index in clock of the entry the hand looks at next
	// closed is set by the cache's close: a get that comes later (a
	// lookup or an iterator that began before Close) opens no table,
	// which no one would close.
	closed bool
}

// tableCacheShards returns the number of shards of a cache of capacity
// tables: one per minTablesPerShard tables, at most maxTableCacheShards.
// A small cache is one shard, whose CLOCK sees every table. The number
// depends on the capacity alone, not on the machine, so which tables a
// store keeps open does not either.
func tableCacheShards(capacity int) int {
	return max(1, min(capacity/minTablesPerShard, maxTableCacheShards))
}

// minTablesPerShard is the least capacity of a table cache's shard, and
// maxTableCacheShards the most shards (the default MaxOpenFiles makes 7).
const (
	minTablesPerShard   = 64
	maxTableCacheShards = 16
)

// tableEntry is one table, opened at most once. ready is closed, and
// opened set, when the open attempt finishes; reader or err tell how it
// went.
type tableEntry struct {
	num    base.FileNum
	ready  chan struct{}
	opened atomic.Bool
	reader *sstable.Reader
	err    error

	// filterBytes is the table's filter block size by the MANIFEST: what
	// holding its own filter charges against a cap (see filterHolder).
	// entries is its entries, blocks its data blocks as a plan reckons
	// them (tableBlocks), and
	// ownBits its own filter's bits per entry (see ownBits); both set once
	// open.
	filterBytes int64
	entries     int64
	blocks      int64
	ownBits     float64
	// filterMu guards what the filter holder charged for the filter the
	// Reader holds: heldBytes (0: none), its bits per entry heldBits, and
	// heldBuilt, set when it was built in memory rather than the table's
	// own.
	filterMu  sync.Mutex
	heldBytes int64
	heldBits  float64
	heldBuilt bool

	refs       atomic.Int32 // the cache's own reference while listed, plus users
	referenced atomic.Bool  // got since it was listed or the hand last passed it
	slot       int          // index in clock while listed; under mu
}

func newTableCache(d *DB, capacity int) *tableCache {
	c := &tableCache{d: d, shards: make([]tableCacheShard, tableCacheShards(capacity))}
	for i := range c.shards {
		s := &c.shards[i]
		// The first capacity % len(shards) shards take one table more.
		s.capacity = capacity / len(c.shards)
		if i < capacity%len(c.shards) {
			s.capacity++
		}
		s.entries = make(map[base.FileNum]*tableEntry)
	}
	return c
}

// shard returns the shard that holds table num. The number is mixed
// first: file numbers are not spread evenly over residues (a flush takes
// one for its WAL and one for its table, say).
func (c *tableCache) shard(num base.FileNum) *tableCacheShard {
	h := uint64(num) * 0x9e3779b97f4a7c15 // Fibonacci hashing
	return &c.shards[(h>>32)%uint64(len(c.shards))]
}

// get returns the open table of f, referenced; release it with release.
func (c *tableCache) get(f *manifest.FileMetadata) (*tableEntry, error) {
	s := c.shard(f.FileNum)
	s.mu.RLock()
	e, ok := s.entries[f.FileNum]
	if ok {
		refLocked(e)
	}
	s.mu.RUnlock()
	if !ok {
		return c.insert(s, f)
	}
	return c.await(e)
}

// refLocked takes a user's reference on listed entry e and marks it
// referenced. Its shard's mu must be held, for reading or writing: the
// hand, which drops the cache's reference, cannot run meanwhile.
func refLocked(e *tableEntry) {
	e.refs.Add(1)
	if !e.referenced.Load() {
		e.referenced.Store(true)
	}
}

// await waits for e's open attempt and returns e, or its error after
// releasing it.
func (c *tableCache) await(e *tableEntry) (*tableEntry, error) {
	if !e.opened.Load() {
		<-e.ready
	}
	if e.err != nil {
		c.release(e)
		return nil, e.err
	}
	return e, nil
}

// insert lists a new entry for f in its shard s, unless another get
// listed one first, and opens it. After close it returns ErrClosed.
func (c *tableCache) insert(s *tableCacheShard, f *manifest.FileMetadata) (*tableEntry, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if e, ok := s.entries[f.FileNum]; ok {
		refLocked(e)
		s.mu.Unlock()
		return c.await(e)
	}
	e := &tableEntry{num: f.FileNum, ready: make(chan struct{}), filterBytes: int64(f.FilterBytes)}
	e.refs.Store(2)
	var victim *tableEntry
	if len(s.clock) < s.capacity {
		e.slot = len(s.clock)
		s.clock = append(s.clock, e)
	} else {
		victim = s.replaceLocked(e)
	}
	s.entries[f.FileNum] = e
	s.mu.Unlock()
	if victim != nil {
		c.closeEntry(victim)
	}

	e.reader, e.err = c.open(f)
	if e.err == nil {
		c.indexBytes.Add(e.reader.IndexSize())
		e.entries, e.blocks = int64(f.NumEntries), tableBlocks(f, c.d.opts.BlockSize)
		e.ownBits = ownBits(f, e.blocks, c.d.filterMem.blockOverhead())
		c.d.filterMem.opened(e)
	}
	e.opened.Store(true)
	close(e.ready)
	if e.err != nil {
		c.evict(f.FileNum) // let a later get try again
		c.release(e)
		return nil, e.err
	}
	return e, nil
}

// replaceLocked moves the hand on to the first entry whose referenced
// bit is clear, clearing the bits it passes (so it stops within one turn
// of the ring), puts e in that entry's slot and moves the hand past it.
// It unlists the entry e replaces and returns it if that dropped its last
// reference, to be closed. s.mu must be held for writing.
func (s *tableCacheShard) replaceLocked(e *tableEntry) (victim *tableEntry) {
	for ; ; s.hand++ {
		if s.hand >= len(s.clock) {
			s.hand = 0
		}
		old := s.clock[s.hand]
		if old.referenced.Load() {
			old.referenced.Store(false)
			continue
		}
		delete(s.entries, old.num)
		e.slot = s.hand
		s.clock[s.hand] = e
		s.hand++
		if old.refs.Add(-1) == 0 {
			return old
		}
		return nil
	}
}

// open opens f's file and reader, and checks the table is the one the
// MANIFEST describes. A panic of a user callback (the Comparer's Split,
// the filter policies') becomes its error.
func (c *tableCache) open(f *manifest.FileMetadata) (_ *sstable.Reader, err error) {
	defer recoverCallback("opening a table", &err)
	d := c.d
	name := base.MakeFilename(base.FileTypeTable, f.FileNum)
	file, err := d.fs.Open(d.path(name))
	if err != nil {
		return nil, fmt.Errorf("kv: opening table %s: %w", name, err)
	}
	r, err := sstable.NewReader(file, sstable.ReaderOptions{
		Cache:    d.blockCache,
		FileNum:  f.FileNum,
		Comparer: d.cmp,
		Filters:  d.filters,
		FileName: name,
		// An ingested table's keys all take the sequence number it was
		// given (see ingest.go).
		GlobalSeqNum: f.GlobalSeqNum,
		// Under a cap the filter is loaded once its bytes are reserved.
		DeferFilter: d.filterMem.cap > 0,
		// Only a cap weighs the tables by their misses.
		CountMisses: d.filterMem.cap > 0,
	})
	if err != nil {
		return nil, err
	}
	if err := checkTableMatches(name, f, r); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// checkTableMatches reports a table whose contents contradict the
// MANIFEST's description of it: reads rely on that description (a level's
// tables are searched by their key ranges, range tombstones included), so
// a mismatch is corruption, whichever of the two files is wrong.
func checkTableMatches(name string, f *manifest.FileMetadata, r *sstable.Reader) error {
	p := r.Properties()
	smallest, largest := r.Bounds()
	if sameKey(smallest, f.Smallest) && sameKey(largest, f.Largest) &&
		p.SmallestSeqNum == f.SmallestSeqNum && p.LargestSeqNum == f.LargestSeqNum && p.NumEntries == f.NumEntries {
		return nil
	}
	return base.CorruptionErrorf("kv: table %s holds keys %x-%x, seqnums %d-%d and %d entries; the MANIFEST says %s, seqnums %d-%d and %d entries",
		name, smallest.AppendEncoded(nil), largest.AppendEncoded(nil), p.SmallestSeqNum, p.LargestSeqNum, p.NumEntries,
		f, f.SmallestSeqNum, f.LargestSeqNum, f.NumEntries)
}

// sameKey reports whether a and b encode to the same bytes, without
// encoding them.
func sameKey(a, b base.InternalKey) bool {
	return a.Trailer == b.Trailer && bytes.Equal(a.UserKey, b.UserKey)
}

// unlistLocked removes e from the shard, moving the last entry of the
// ring into its slot, and drops the cache's reference; it reports whether
// that was the last one. s.mu must be held for writing.
func (s *tableCacheShard) unlistLocked(e *tableEntry) bool {
	delete(s.entries, e.num)
	last := len(s.clock) - 1
	s.clock[e.slot] = s.clock[last]
	s.clock[e.slot].slot = e.slot
	s.clock[last] = nil
	s.clock = s.clock[:last]
	return e.refs.Add(-1) == 0
}

// release drops one user's reference. Only an unlisted entry can lose its
// last one, so no lock is needed.
func (c *tableCache) release(e *tableEntry) {
	if e.refs.Add(-1) == 0 {
		c.closeEntry(e)
	}
}

// closeEntry closes the reader of an entry no one holds any more, once its
// open attempt is over.
func (c *tableCache) closeEntry(e *tableEntry) {
	<-e.ready
	if e.reader != nil {
		c.d.filterMem.drop(e)
		c.indexBytes.Add(-e.reader.IndexSize())
		e.reader.Close()
	}
}

// evict drops table num from the cache, and its blocks from the block
// cache. A reader still in use closes when its last user is done.
func (c *tableCache) evict(num base.FileNum) {
	s := c.shard(num)
	s.mu.Lock()
	e, ok := s.entries[num]
	last := ok && s.unlistLocked(e)
	s.mu.Unlock()
	if last {
		c.closeEntry(e)
	}
	c.d.blockCache.EvictFile(num)
}

// close drops every entry, and refuses the gets that would list new ones.
// Readers still in use close when released.
func (c *tableCache) close() {
	var victims []*tableEntry
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for len(s.clock) > 0 {
			if e := s.clock[len(s.clock)-1]; s.unlistLocked(e) {
				victims = append(victims, e)
			}
		}
		s.hand = 0
		s.closed = true
		s.mu.Unlock()
	}
	for _, e := range victims {
		c.closeEntry(e)
	}
}

// rangeDels returns the range tombstones of table f. They are the open
// Reader's, kept in memory and never modified, so they stay valid after
// the table is released.
func (c *tableCache) rangeDels(f *manifest.FileMetadata) ([]sstable.RangeTombstone, error) {
	e, err := c.get(f)
	if err != nil {
		return nil, err
	}
	defer c.release(e)
	return e.reader.RangeDels(), nil
}

// newCompactionIter returns an iterator over all of f's entries for one pass, as a
// compaction reads its inputs (sstable.IterOptions.Compaction: blocks
// not in the block cache are read into a buffer of the iterator's, and
// not cached), that holds the table open until closed.
func (c *tableCache) newCompactionIter(f *manifest.FileMetadata) (base.InternalIterator, error) {
	e, err := c.get(f)
	if err != nil {
		return nil, err
	}
	t := &tableIter{cache: c, entry: e}
	if err := e.reader.InitIter(&t.Iter, &sstable.IterOptions{Compaction: true}); err != nil {
		c.release(e)
		return nil, err
	}
	return t, nil
}

// initIter readies t, new or closed, to iterate over f's entries with user
// keys in [lower, upper), reading through the block cache, reusing t's
// buffers: an iterator that keeps t allocates nothing per table it opens.
// t holds the table open until closed; the cost of its prefix seeks is
// added to stats (see sstable.IterOptions.Stats).
func (c *tableCache) initIter(t *tableIter, f *manifest.FileMetadata, lower, upper []byte, stats *sstable.LookupStats) error {
	e, err := c.get(f)
	if err != nil {
		return err
	}
	if err := e.reader.InitIter(&t.Iter, &sstable.IterOptions{LowerBound: lower, UpperBound: upper, Stats: stats}); err != nil {
		c.release(e)
		return err
	}
	t.cache, t.entry = c, e
	return nil
}

// tableIter is a table's iterator that holds the table open until closed.
// Its SeekPrefixGE asks the table's filters.
type tableIter struct {
	sstable.Iter
	cache *tableCache
	entry *tableEntry
	// considered, if set, counts the table's absolute positionings (a
	// seek, First or Last): the tables an iterator's positioning calls
	// consider (IteratorStats.TablesConsidered), whether its level opened
	// the table for the call or kept it open from an earlier one. Next
	// and Prev within the table count nothing.
	considered *int64
}

// consider counts one positioning of the table, if t counts them.
func (t *tableIter) consider() {
	if t.considered != nil {
		*t.considered++
	}
}

// SeekGE is sstable.Iter's, counted (see considered).
func (t *tableIter) SeekGE(key []byte) bool { t.consider(); return t.Iter.SeekGE(key) }

// SeekLT is sstable.Iter's, counted (see considered).
func (t *tableIter) SeekLT(key []byte) bool { t.consider(); return t.Iter.SeekLT(key) }

// First is sstable.Iter's, counted (see considered).
func (t *tableIter) First() bool { t.consider(); return t.Iter.First() }

// Last is sstable.Iter's, counted (see considered).
func (t *tableIter) Last() bool { t.consider(); return t.Iter.Last() }

// SeekPrefixGE is sstable.Iter's prefix seek, which asks the table's
// filters, counted (see considered).
func (t *tableIter) SeekPrefixGE(prefix, key []byte) bool {
	t.consider()
	return t.Iter.SeekPrefixGE(prefix, key)
}

// Close releases the table; it returns the iterator's error, nil when
// called again.
func (t *tableIter) Close() error {
	if t.entry == nil {
		return nil
	}
	err := t.Iter.Close()
	t.cache.release(t.entry)
	t.entry = nil
	return err
}

// refAll returns every listed entry whose table is open, each referenced
// (without marking it referenced for the clock); release them with
// releaseAll.
func (c *tableCache) refAll() []*tableEntry {
	var out []*tableEntry
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		for _, e := range s.clock {
			if e.opened.Load() && e.err == nil {
				e.refs.Add(1)
				out = append(out, e)
			}
		}
		s.mu.RUnlock()
	}
	return out
}

// releaseAll releases the entries of refAll.
func (c *tableCache) releaseAll(entries []*tableEntry) {
	for _, e := range entries {
		c.release(e)
	}
}

// openWhileRoom opens the tables of v that are not open, where the cache
// has room for them, so that a pass over the filters under a cap gives
// them their filters before a lookup needs them. A table that fails to
// open is left for a lookup to report.
func (c *tableCache) openWhileRoom(v *manifest.Version) {
	for _, files := range v.Levels {
		for _, f := range files {
			if c.d.closed.Load() {
				return
			}
			s := c.shard(f.FileNum)
			s.mu.RLock()
			_, listed := s.entries[f.FileNum]
			full := len(s.clock) >= s.capacity
			s.mu.RUnlock()
			if listed || full {
				continue
			}
			if e, err := c.get(f); err == nil {
				c.release(e)
			}
		}
	}
}
