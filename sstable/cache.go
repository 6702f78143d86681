package sstable

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bloomkv/bloomkv/internal/base"
)

// cacheShards is the number of independently locked parts of a Cache.
const cacheShards = 16

// cacheEntryOverhead is what one cached block costs beyond its buffer,
// charged against the capacity too: the entry (88 bytes, allocated as 96)
// and its slot in the shard's map, 125-153 bytes in all (measured as
// 113-137 over maps of 200 to 100,000 entries at their load factors when
// the entry was allocated as 80).
const cacheEntryOverhead = 144

// Cache keeps recently read blocks in memory, shared by all the readers
// of a store. It holds at most its capacity in bytes and is split into
// shards so concurrent readers rarely contend.
//
// Eviction is CLOCK (second chance) rather than LRU, so that a hit, the
// path every cached read takes, writes nothing shared but the hit count
// and, the first time since the hand last passed, its entry's referenced
// bit; an LRU hit relinks the entry in a list under the shard's lock,
// touching two other entries' memory. A shard's blocks sit in a ring,
// each new one just behind the hand; to make room, the hand, under the
// shard's lock, walks the ring clearing the referenced bits it finds set
// and evicts the first block whose bit was clear: one not read since the
// hand last passed it.
//
// A Reader keeps, beside each data block's handle, a cacheSlot: the
// cache links the slot to the block's entry when the Reader caches or
// finds the block, copying the block's address and length into it, and
// empties it when the entry goes. A Reader's next read of the block then
// finds it in the slot, lock-free, without hashing its key, probing the
// shard's map or touching the entry: on a lookup of a large store, each
// of those is a memory wait. A read through the slot marks the slot
// referenced, which the hand counts as the entry's bit. An entry is
// linked to at most one slot at a time: when two Readers of one table
// (the old one still in use while a new one opens) read the same block,
// the later one takes the link.
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
	referenced         atomic.Bool // read since it was cached or the hand last passed it
	slot               *cacheSlot  // the slot linked to the entry, or nil; under the write lock
	prev, next         *cacheEntry // the shard's ring; under the write lock
	filePrev, fileNext *cacheEntry // the blocks of one file; under the write lock
}

// cacheSlot is where a Reader finds one of its data blocks in the cache:
// linked and emptied by the cache, under the shard's write lock (see
// Cache). data, when not nil, is the block's first byte, and n its
// length; n is the same for every entry of the block, since the block's
// contents are.
type cacheSlot struct {
	data       atomic.Pointer[byte]
	n          atomic.Int32
	referenced atomic.Bool // read through the slot since it was linked or the hand last passed its entry
}

// load returns the block the slot is linked to, or nil.
func (slot *cacheSlot) load() []byte {
	p := slot.data.Load()
	if p == nil {
		return nil
	}
	if !slot.referenced.Load() {
		slot.referenced.Store(true)
	}
	return unsafe.Slice(p, slot.n.Load())
}

// charge is what e costs: its buffer's capacity, all of which it keeps
// alive, and the overhead.
func (e *cacheEntry) charge() int64 { return int64(cap(e.data)) + cacheEntryOverhead }

type cacheShard struct {
	mu           sync.RWMutex
	capacity     int64
	size         int64 // charged for the blocks held
	reserved     int64 // charged through Reserve
	entries      map[cacheKey]*cacheEntry
	files        map[base.FileNum]*cacheEntry // head of each file's list
	hand         *cacheEntry                  // the ring's entry the hand looks at next; nil when empty
	hits, misses atomic.Int64
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
	}
	return c
}

func (c *Cache) shard(k cacheKey) *cacheShard {
	h := (uint64(k.file)*0x9e3779b97f4a7c15 ^ k.off*0xc2b2ae3d27d4eb4f) >> 32
	return &c.shards[h%cacheShards]
}

// get returns the cached block at (file, off), or nil; nil also from a
// nil Cache. slot, if not nil, is the caller's slot for the block: get
// looks there first, and links it to the block's entry when it finds the
// entry in the shard's map.
func (c *Cache) get(file base.FileNum, off uint64, slot *cacheSlot) []byte {
	if c == nil {
		return nil
	}
	k := cacheKey{file, off}
	s := c.shard(k)
	if slot != nil {
		// The entry may be evicted from here on: its block stays valid.
		if b := slot.load(); b != nil {
			s.hits.Add(1)
			return b
		}
	}
	s.mu.RLock()
	e := s.entries[k]
	s.mu.RUnlock()
	if e == nil {
		s.misses.Add(1)
		return nil
	}
	if !e.referenced.Load() {
		e.referenced.Store(true)
	}
	s.hits.Add(1)
	if slot != nil && linkable(e.data) {
		s.mu.Lock()
		if s.entries[k] == e {
			s.link(e, slot)
		}
		s.mu.Unlock()
	}
	return e.data
}

// set caches data, which must never be modified again, as the block at
// (file, off), and links slot, if not nil, to it. A block larger than the
// room its shard has beside the reservations is not cached.
func (c *Cache) set(file base.FileNum, off uint64, data []byte, slot *cacheSlot) {
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
	s.push(e)
	e.fileNext = s.files[file]
	if e.fileNext != nil {
		e.fileNext.filePrev = e
	}
	s.files[file] = e
	s.size += e.charge()
	if slot != nil && linkable(data) {
		s.link(e, slot)
	}
	s.evict()
}

// unlink empties slot, the slot of the block at (file, off), if it holds
// an entry, so that the cache no longer refers to it: a Reader calls it
// for each of its slots as it closes.
func (c *Cache) unlink(file base.FileNum, off uint64, slot *cacheSlot) {
	if slot.data.Load() == nil {
		return
	}
	k := cacheKey{file, off}
	s := c.shard(k)
	s.mu.Lock()
	if e := s.entries[k]; e != nil && e.slot == slot {
		e.slot = nil
	}
	slot.data.Store(nil)
	s.mu.Unlock()
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
		s.mu.RLock()
		m.Size += s.size + s.reserved
		m.Reserved += s.reserved
		m.Count += int64(len(s.entries))
		m.Capacity += s.capacity
		s.mu.RUnlock()
		m.Hits += s.hits.Load()
		m.Misses += s.misses.Load()
	}
	return m
}

// evict moves the hand until the shard's blocks and reservations fit its
// capacity, or no block is left: a block read since the hand last passed
// it loses its referenced bit and stays, the first other one goes. Each
// step clears a bit or evicts, so a full turn of the ring evicts at least
// one block.
func (s *cacheShard) evict() {
	for s.size+s.reserved > s.capacity && s.hand != nil {
		if e := s.hand; e.takeReferenced() {
			s.hand = e.next
		} else {
			s.remove(e)
		}
	}
}

// takeReferenced reports whether e was read since the hand last passed
// it, through the map or through its slot, and clears both bits.
func (e *cacheEntry) takeReferenced() bool {
	ref := e.referenced.Load()
	if ref {
		e.referenced.Store(false)
	}
	if e.slot != nil && e.slot.referenced.Load() {
		e.slot.referenced.Store(false)
		ref = true
	}
	return ref
}

// linkable reports whether a block can be linked to a slot: one not empty
// (the slot holds its first byte) and whose length fits the slot.
func linkable(data []byte) bool { return len(data) > 0 && len(data) <= math.MaxInt32 }

// link links slot to entry e, whose block is linkable, emptying the slot
// e was linked to before.
func (s *cacheShard) link(e *cacheEntry, slot *cacheSlot) {
	if e.slot != nil && e.slot != slot {
		e.unlinkSlot()
	}
	e.slot = slot
	slot.referenced.Store(false) // a bit left from an earlier entry is not e's
	slot.n.Store(int32(len(e.data)))
	slot.data.Store(&e.data[0])
}

// unlinkSlot empties the slot e is linked to, if it still holds e's block.
func (e *cacheEntry) unlinkSlot() {
	e.slot.data.CompareAndSwap(&e.data[0], nil)
	e.slot = nil
}

// push puts e in the ring just behind the hand, the last place the hand
// reaches.
func (s *cacheShard) push(e *cacheEntry) {
	if s.hand == nil {
		e.prev, e.next = e, e
		s.hand = e
		return
	}
	e.prev, e.next = s.hand.prev, s.hand
	e.prev.next = e
	s.hand.prev = e
}

// pop takes e out of the ring, moving the hand on if it is at e.
func (s *cacheShard) pop(e *cacheEntry) {
	switch {
	case e.next == e:
		s.hand = nil
	case s.hand == e:
		s.hand = e.next
	}
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// remove drops e from the shard entirely, emptying its slot.
func (s *cacheShard) remove(e *cacheEntry) {
	s.pop(e)
	if e.slot != nil {
		e.unlinkSlot()
	}
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
