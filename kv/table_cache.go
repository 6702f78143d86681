package kv

import (
	"bytes"
	"container/list"
	"fmt"
	"sync"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/sstable"
)

// tableCache keeps up to capacity tables open, least recently used first
// out. Entries are reference counted: a reader in use by a lookup or an
// iterator stays open after eviction until its last user releases it.
type tableCache struct {
	d        *DB
	capacity int

	mu      sync.Mutex
	entries map[base.FileNum]*tableEntry
	lru     list.List // of *tableEntry, most recent at the front
}

// tableEntry is one table, opened at most once. ready is closed when the
// open attempt finishes; reader or err tell how it went.
type tableEntry struct {
	num    base.FileNum
	ready  chan struct{}
	reader *sstable.Reader
	err    error
	refs   int // the cache's own reference while listed, plus users
	elem   *list.Element
}

func newTableCache(d *DB, capacity int) *tableCache {
	return &tableCache{d: d, capacity: capacity, entries: make(map[base.FileNum]*tableEntry)}
}

// get returns the open table of f, referenced; release it with release.
func (c *tableCache) get(f *manifest.FileMetadata) (*tableEntry, error) {
	c.mu.Lock()
	e, ok := c.entries[f.FileNum]
	if ok {
		c.lru.MoveToFront(e.elem)
		e.refs++
		c.mu.Unlock()
		<-e.ready
		if e.err != nil {
			c.release(e)
			return nil, e.err
		}
		return e, nil
	}
	e = &tableEntry{num: f.FileNum, ready: make(chan struct{}), refs: 2}
	e.elem = c.lru.PushFront(e)
	c.entries[f.FileNum] = e
	victims := c.trimLocked()
	c.mu.Unlock()
	c.closeAll(victims)

	e.reader, e.err = c.open(f)
	close(e.ready)
	if e.err != nil {
		c.evict(f.FileNum) // let a later get try again
		c.release(e)
		return nil, e.err
	}
	return e, nil
}

// open opens f's file and reader, and checks the table is the one the
// MANIFEST describes.
func (c *tableCache) open(f *manifest.FileMetadata) (*sstable.Reader, error) {
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

// trimLocked drops least recently used entries over capacity from the
// cache and returns those that no one uses any more, to be closed.
func (c *tableCache) trimLocked() []*tableEntry {
	var victims []*tableEntry
	for c.lru.Len() > c.capacity {
		e := c.lru.Remove(c.lru.Back()).(*tableEntry)
		delete(c.entries, e.num)
		if e.refs--; e.refs == 0 {
			victims = append(victims, e)
		}
	}
	return victims
}

// release drops one user's reference.
func (c *tableCache) release(e *tableEntry) {
	c.mu.Lock()
	e.refs--
	last := e.refs == 0
	c.mu.Unlock()
	if last {
		c.closeAll([]*tableEntry{e})
	}
}

func (c *tableCache) closeAll(entries []*tableEntry) {
	for _, e := range entries {
		<-e.ready
		if e.reader != nil {
			e.reader.Close()
		}
	}
}

// evict drops table num from the cache, and its blocks from the block
// cache. A reader still in use closes when its last user is done.
func (c *tableCache) evict(num base.FileNum) {
	c.mu.Lock()
	e, ok := c.entries[num]
	last := false
	if ok {
		c.lru.Remove(e.elem)
		delete(c.entries, num)
		e.refs--
		last = e.refs == 0
	}
	c.mu.Unlock()
	if last {
		c.closeAll([]*tableEntry{e})
	}
	c.d.blockCache.EvictFile(num)
}

// close drops every entry. Readers still in use close when released.
func (c *tableCache) close() {
	c.mu.Lock()
	var victims []*tableEntry
	for num, e := range c.entries {
		delete(c.entries, num)
		if e.refs--; e.refs == 0 {
			victims = append(victims, e)
		}
	}
	c.lru.Init()
	c.mu.Unlock()
	c.closeAll(victims)
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
// compaction reads its inputs (sstable.Reader.NewCompactionIter: blocks
// not in the block cache are read into a buffer of the iterator's, and
// not cached), that holds the table open until closed.
func (c *tableCache) newCompactionIter(f *manifest.FileMetadata) (base.InternalIterator, error) {
	e, err := c.get(f)
	if err != nil {
		return nil, err
	}
	t := &tableIter{cache: c, entry: e}
	if err := e.reader.InitCompactionIter(&t.Iter); err != nil {
		c.release(e)
		return nil, err
	}
	return t, nil
}

// initIter readies t, new or closed, to iterate over f's entries with user
// keys in [lower, upper), reading through the block cache, reusing t's
// buffers: an iterator that keeps t allocates nothing per table it opens.
// t holds the table open until closed; the cost of its prefix seeks is
// added to stats (see sstable.Reader.NewIterWithStats).
func (c *tableCache) initIter(t *tableIter, f *manifest.FileMetadata, lower, upper []byte, stats *sstable.LookupStats) error {
	e, err := c.get(f)
	if err != nil {
		return err
	}
	if err := e.reader.InitIter(&t.Iter, lower, upper, stats); err != nil {
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
