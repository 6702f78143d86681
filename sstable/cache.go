package sstable

import (
	"fmt"
	"sync"

	"github.com/bloomkv/bloomkv/internal/base"
)

// cacheShards is the number of independently locked parts of a Cache.
const cacheShards = 16

// cacheEntryOverhead is what one cached block costs beyond its buffer,
// charged against the capacity too: the entry (72 bytes, allocated as 80)
// and its slot in the shard's map, 113-137 bytes in all as measured over
// maps of 200 to 100,000 entries at their load factors.
const cacheEntryOverhead = 128

// Cache keeps recently read blocks in memory, shared by all the readers
// of a store. It holds at most its capacity in bytes, evicting the least
// recently used blocks first, and is split into shards so concurrent
// readers rarely contend.
//
// A block is charged what it occupies on the heap: the capacity of its
// buffer (which the reader allocates rounded up to the allocator's size
// class, see Reader) plus cacheEntryOverhead. Memory kept outside the cache
// can be charged against its capacity too (see Reserve): an open Reader
// reserves what its index, filter and other in-memory structures take, as
// Pebble keeps those blocks in its cache, so the cache's capacity bounds
// all the table memory a store holds.
//
// Cached blocks are immutable. A block handed out stays valid after it is
// evicted: the cache drops its reference and the garbage collector frees
// it once no reader uses it, so buffers are never recycled.
type Cache struct {
	shards [cacheShards]cacheShard
}

// CacheMetrics reports a Cache's contents and effectiveness.
type CacheMetrics struct {
	// Size is the bytes charged: the blocks held, overhead included, and
	// Reserved. Count is the blocks held.
	Size, Count int64
	// Reserved is the part of Size charged through Reserve: for a store,
	// the index, filter and other in-memory structures of its open tables.
	Reserved int64
	// Hits and Misses count the lookups that found a block or did not.
	Hits, Misses int64
	// Capacity is the configured bound of Size.
	Capacity int64
}

type cacheKey struct {
	file base.FileNum
	off  uint64
}

type cacheEntry struct {
	key                cacheKey
	data               []byte
	prev, next         *cacheEntry // recency list, most recent after the sentinel
	filePrev, fileNext *cacheEntry // the blocks of one file
}

// charge is what e costs: its buffer's capacity, all of which it keeps
// alive, and the overhead.
func (e *cacheEntry) charge() int64 { return int64(cap(e.data)) + cacheEntryOverhead }

type cacheShard struct {
	mu           sync.Mutex
	capacity     int64
	size         int64 // charged for the blocks held
	reserved     int64 // charged through Reserve
	entries      map[cacheKey]*cacheEntry
	files        map[base.FileNum]*cacheEntry // head of each file's list
	lru          cacheEntry                   // sentinel of the recency list
	hits, misses int64
	_            [64]byte // keep shards' hot fields on separate cache lines
}

// NewCache returns a cache that holds up to capacity bytes.
func NewCache(capacity int64) *Cache {
	c := &Cache{}
	for i := range c.shards {
		s := &c.shards[i]
		s.capacity = capacity / cacheShards
		s.entries = make(map[cacheKey]*cacheEntry)
		s.files = make(map[base.FileNum]*cacheEntry)
		s.lru.prev, s.lru.next = &s.lru, &s.lru
	}
	return c
}

func (c *Cache) shard(k cacheKey) *cacheShard {
	h := (uint64(k.file)*0x9e3779b97f4a7c15 ^ k.off*0xc2b2ae3d27d4eb4f) >> 32
	return &c.shards[h%cacheShards]
}

// get returns the cached block at (file, off), or nil.
func (c *Cache) get(file base.FileNum, off uint64) []byte {
	k := cacheKey{file, off}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[k]
	if e == nil {
		s.misses++
		return nil
	}
	s.hits++
	s.unlink(e)
	s.pushFront(e)
	return e.data
}

// set caches data, which must never be modified again, as the block at
// (file, off). A block larger than the room its shard has beside the
// reservations is not cached.
func (c *Cache) set(file base.FileNum, off uint64, data []byte) {
	k := cacheKey{file, off}
	s := c.shard(k)
	e := &cacheEntry{key: k, data: data}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.entries[k]; old != nil {
		s.remove(old)
	}
	if e.charge() > s.capacity-s.reserved {
		return
	}
	s.entries[k] = e
	s.pushFront(e)
	e.fileNext = s.files[file]
	if e.fileNext != nil {
		e.fileNext.filePrev = e
	}
	s.files[file] = e
	s.size += e.charge()
	s.evict()
}

// Reserve charges n bytes of memory kept outside the cache against its
// capacity, until the returned function, which must be called once, gives
// them back. The cache evicts blocks to make room; while reservations
// exceed the capacity it holds no blocks, and Metrics reports a Size over
// the Capacity. A Reader reserves what it keeps in memory from NewReader
// to Close. n must not be negative.
func (c *Cache) Reserve(n int64) (release func()) {
	if n < 0 {
		panic(fmt.Sprintf("sstable: negative cache reservation %d", n))
	}
	share := (n + cacheShards - 1) / cacheShards
	c.reserve(share)
	var once sync.Once
	return func() { once.Do(func() { c.reserve(-share) }) }
}

// reserve adds share to every shard's reservation (share < 0 gives it
// back).
func (c *Cache) reserve(share int64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.reserved += share
		s.evict()
		s.mu.Unlock()
	}
}

// EvictFile drops every cached block of file n, as when the table is
// deleted. Blocks already handed out stay valid.
func (c *Cache) EvictFile(n FileNum) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for s.files[n] != nil {
			s.remove(s.files[n])
		}
		s.mu.Unlock()
	}
}

// Metrics returns the cache's current figures.
func (c *Cache) Metrics() CacheMetrics {
	var m CacheMetrics
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		m.Size += s.size + s.reserved
		m.Reserved += s.reserved
		m.Count += int64(len(s.entries))
		m.Hits += s.hits
		m.Misses += s.misses
		m.Capacity += s.capacity
		s.mu.Unlock()
	}
	return m
}

// evict drops least recently used blocks until the shard's blocks and
// reservations fit its capacity, or no block is left.
func (s *cacheShard) evict() {
	for s.size+s.reserved > s.capacity && s.lru.prev != &s.lru {
		s.remove(s.lru.prev)
	}
}

func (s *cacheShard) pushFront(e *cacheEntry) {
	e.prev, e.next = &s.lru, s.lru.next
	e.next.prev = e
	s.lru.next = e
}

func (s *cacheShard) unlink(e *cacheEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// remove drops e from the shard entirely.
func (s *cacheShard) remove(e *cacheEntry) {
	s.unlink(e)
	if e.filePrev != nil {
		e.filePrev.fileNext = e.fileNext
	} else if e.fileNext != nil {
		s.files[e.key.file] = e.fileNext
	} else {
		delete(s.files, e.key.file)
	}
	if e.fileNext != nil {
		e.fileNext.filePrev = e.filePrev
	}
	e.filePrev, e.fileNext = nil, nil
	delete(s.entries, e.key)
	s.size -= e.charge()
}
