package sstable

import (
	"sync"

	"github.com/bloomkv/bloomkv/internal/base"
)

// cacheShards is the number of independently locked parts of a Cache.
const cacheShards = 16

// cacheEntryOverhead is what one cached block costs beyond its bytes
// (entry struct, map slot); it is charged against the capacity too.
const cacheEntryOverhead = 96

// Cache keeps recently read blocks in memory, shared by all the readers
// of a store. It holds at most its capacity in bytes, evicting the least
// recently used blocks first, and is split into shards so concurrent
// readers rarely contend.
//
// Cached blocks are immutable. A block handed out stays valid after it is
// evicted: the cache drops its reference and the garbage collector frees
// it once no reader uses it, so buffers are never recycled.
type Cache struct {
	shards [cacheShards]cacheShard
}

// CacheMetrics reports a Cache's contents and effectiveness.
type CacheMetrics struct {
	// Size is the bytes charged, overhead included; Count the blocks held.
	Size, Count int64
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

func (e *cacheEntry) charge() int64 { return int64(len(e.data)) + cacheEntryOverhead }

type cacheShard struct {
	mu           sync.Mutex
	capacity     int64
	size         int64
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
// (file, off). A block larger than a shard's capacity is not cached.
func (c *Cache) set(file base.FileNum, off uint64, data []byte) {
	k := cacheKey{file, off}
	s := c.shard(k)
	e := &cacheEntry{key: k, data: data}
	if e.charge() > s.capacity {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.entries[k]; old != nil {
		s.remove(old)
	}
	s.entries[k] = e
	s.pushFront(e)
	e.fileNext = s.files[file]
	if e.fileNext != nil {
		e.fileNext.filePrev = e
	}
	s.files[file] = e
	s.size += e.charge()
	for s.size > s.capacity {
		s.remove(s.lru.prev)
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
		m.Size += s.size
		m.Count += int64(len(s.entries))
		m.Hits += s.hits
		m.Misses += s.misses
		m.Capacity += s.capacity
		s.mu.Unlock()
	}
	return m
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
