package sstable

import (
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/bloomkv/bloomkv/internal/base"
)

func TestCache_GetSet(t *testing.T) {
	var none *Cache // a Reader without a cache asks a nil one
	if none.get(1, 0, new(cacheSlot)) != nil {
		t.Fatal("nil cache hit")
	}
	c := NewCache(1 << 20)
	if c.get(1, 0, nil) != nil {
		t.Fatal("empty cache hit")
	}
	c.set(1, 0, []byte("block"), nil)
	if got := c.get(1, 0, nil); string(got) != "block" {
		t.Fatalf("get = %q", got)
	}
	again := []byte("again")
	c.set(1, 0, again, nil)
	m := c.Metrics()
	if m.Count != 1 || m.Hits != 1 || m.Misses != 1 || m.Size != int64(cap(again))+cacheEntryOverhead {
		t.Fatalf("metrics %+v", m)
	}
}

// TestCache_Evicts keeps the cache within its capacity, dropping the oldest
// block of a shard not read since it was cached.
func TestCache_Evicts(t *testing.T) {
	c, offs := fullShard(5)
	c.get(1, offs[0], nil) // offs[1] is now the oldest block not read
	c.set(1, offs[4], make([]byte, testBlockLen), nil)
	if c.get(1, offs[1], nil) != nil {
		t.Fatal("oldest unread block kept")
	}
	for _, off := range []uint64{offs[0], offs[2], offs[3], offs[4]} {
		if c.get(1, off, nil) == nil {
			t.Fatalf("block %d evicted", off)
		}
	}
	if m := c.Metrics(); m.Size > m.Capacity {
		t.Fatalf("size %d over capacity %d", m.Size, m.Capacity)
	}
	c.set(1, 1, make([]byte, 1<<20), nil) // larger than a shard: not cached
	if c.get(1, 1, nil) != nil {
		t.Fatal("oversized block cached")
	}
}

// TestCache_SecondChance follows the hand round one shard's ring: a block
// read since the hand last passed it stays for another turn, and the hand
// clears its bit as it passes, so it goes the next time unless read again.
func TestCache_SecondChance(t *testing.T) {
	c, offs := fullShard(8)
	c.get(1, offs[0], nil)
	c.get(1, offs[2], nil)
	for _, step := range []struct {
		set     int   // cache offs[set], evicting one block
		read    []int // then read these
		evicted int   // the block evicted
		kept    []int // the blocks left
	}{
		// The hand, at 0, clears 0's bit and evicts 1.
		{set: 4, evicted: 1, kept: []int{0, 2, 3, 4}},
		// At 2: clears it, evicts 3, though 3 is newer.
		{set: 5, read: []int{0}, evicted: 3, kept: []int{0, 2, 4, 5}},
		// At 4, never read: evicted.
		{set: 6, evicted: 4, kept: []int{0, 2, 5, 6}},
		// At 0, read again since the hand passed: kept; 5 goes.
		{set: 7, evicted: 5, kept: []int{0, 2, 6, 7}},
	} {
		c.set(1, offs[step.set], make([]byte, testBlockLen), nil)
		if cached(c, 1, offs[step.evicted]) {
			t.Fatalf("after caching block %d: block %d kept", step.set, step.evicted)
		}
		for _, i := range step.kept {
			if !cached(c, 1, offs[i]) {
				t.Fatalf("after caching block %d: block %d evicted", step.set, i)
			}
		}
		for _, i := range step.read {
			c.get(1, offs[i], nil)
		}
	}
}

// testBlockLen is the length of the blocks fullShard caches.
const testBlockLen = 1000

// fullShard returns a cache whose shards each have room for four blocks of
// testBlockLen bytes, and n offsets of file 1 that fall in one shard, the
// first four of them cached there, in order.
func fullShard(n int) (*Cache, []uint64) {
	c := NewCache(cacheShards * 4 * (testBlockLen + cacheEntryOverhead))
	offs := sameShardOffsets(c, n)
	for _, off := range offs[:4] {
		c.set(1, off, make([]byte, testBlockLen), nil)
	}
	return c, offs
}

// cached reports whether c holds the block at (file, off), without
// marking it read as get does.
func cached(c *Cache, file base.FileNum, off uint64) bool {
	s := c.shard(cacheKey{file, off})
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.entries[cacheKey{file, off}] != nil
}

// sameShardOffsets returns n offsets of file 1 whose blocks land in one
// shard of c.
func sameShardOffsets(c *Cache, n int) []uint64 {
	s := c.shard(cacheKey{1, 0})
	var offs []uint64
	for off := uint64(0); len(offs) < n; off += 4096 {
		if c.shard(cacheKey{1, off}) == s {
			offs = append(offs, off)
		}
	}
	return offs
}

// TestCache_Accounting checks what the cache charges: a block's capacity
// and the entry overhead, and reservations, which evict blocks to make
// room and may exceed the capacity.
func TestCache_Accounting(t *testing.T) {
	const shardCap = 8 << 10
	const entry = 2048 + cacheEntryOverhead // a 100-byte block in a 2048-byte buffer
	type step struct {
		set     int   // cache the next block, of 100 bytes in a buffer of this capacity
		reserve int64 // or reserve this many bytes per shard
		release bool  // or release the oldest reservation not yet released
	}
	for _, tc := range []struct {
		name                    string
		steps                   []step
		wantCount, wantReserved int64
		wantSize                int64
		cached                  bool // whether a block set after the steps is kept
	}{
		{name: "capacity charged", steps: []step{{set: 2048}},
			wantCount: 1, wantSize: entry, cached: true},
		{name: "blocks fill the shard", steps: []step{{set: 2048}, {set: 2048}, {set: 2048}, {set: 2048}, {set: 2048}},
			wantCount: 3, wantSize: 3 * entry, cached: true},
		{name: "reservation evicts", steps: []step{{set: 2048}, {set: 2048}, {set: 2048}, {reserve: 3000}},
			wantCount: 2, wantReserved: cacheShards * 3000, wantSize: 2*entry + cacheShards*3000, cached: true},
		{name: "release makes room", steps: []step{{set: 2048}, {set: 2048}, {set: 2048}, {reserve: 3000}, {release: true}, {set: 2048}},
			wantCount: 3, wantSize: 3 * entry, cached: true},
		{name: "reservations add up", steps: []step{{reserve: 1000}, {reserve: 2000}, {release: true}},
			wantReserved: cacheShards * 2000, wantSize: cacheShards * 2000, cached: true},
		{name: "reservation over capacity", steps: []step{{set: 2048}, {reserve: shardCap + 1}},
			wantReserved: cacheShards * (shardCap + 1), wantSize: cacheShards * (shardCap + 1)},
		{name: "no room beside reservation", steps: []step{{reserve: shardCap - entry + 1}},
			wantReserved: cacheShards * (shardCap - entry + 1), wantSize: cacheShards * (shardCap - entry + 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache(cacheShards * shardCap)
			offs := sameShardOffsets(c, len(tc.steps)+1)
			var releases []func()
			for i, s := range tc.steps {
				switch {
				case s.set > 0:
					c.set(1, offs[i], make([]byte, 100, s.set), nil)
				case s.reserve > 0:
					releases = append(releases, c.Reserve(cacheShards*s.reserve))
				case s.release:
					releases[0]()
					releases[0]() // a second call does nothing
					releases = releases[1:]
				}
			}
			m := c.Metrics()
			if m.Count != tc.wantCount || m.Reserved != tc.wantReserved || m.Size != tc.wantSize {
				t.Fatalf("count %d reserved %d size %d, want %d %d %d",
					m.Count, m.Reserved, m.Size, tc.wantCount, tc.wantReserved, tc.wantSize)
			}
			last := offs[len(tc.steps)]
			c.set(1, last, make([]byte, 100, 2048), nil)
			if got := c.get(1, last, nil) != nil; got != tc.cached {
				t.Fatalf("block set after the steps cached: %v, want %v", got, tc.cached)
			}
			for _, release := range releases {
				release()
			}
			if m := c.Metrics(); m.Reserved != 0 || m.Size > m.Capacity {
				t.Fatalf("after releasing all: %+v", m)
			}
		})
	}
}

func TestCache_EvictFile(t *testing.T) {
	c := NewCache(1 << 20)
	for f := base.FileNum(1); f <= 3; f++ {
		for off := uint64(0); off < 100; off++ {
			c.set(f, off, []byte{byte(f)}, nil)
		}
	}
	held := c.get(2, 7, nil)
	c.EvictFile(2)
	for off := uint64(0); off < 100; off++ {
		if c.get(2, off, nil) != nil {
			t.Fatalf("block %d of file 2 survived", off)
		}
		if c.get(1, off, nil) == nil || c.get(3, off, nil) == nil {
			t.Fatalf("block %d of another file evicted", off)
		}
	}
	if held[0] != 2 {
		t.Fatal("evicted block changed")
	}
	if m := c.Metrics(); m.Count != 200 {
		t.Fatalf("count %d after eviction", m.Count)
	}
}

// TestCache_Concurrent hammers the cache from several goroutines (run it
// with -race): half of them share one set of slots, as the users of one
// Reader do, the others have their own, as a second Reader of the same
// tables would, or none; one closes its slots now and then, as a Reader
// does.
func TestCache_Concurrent(t *testing.T) {
	const files, offs = 5, 300
	c := NewCache(64 << 10)
	shared := make([]cacheSlot, files*offs)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		slots := shared
		switch g % 4 {
		case 1:
			slots = make([]cacheSlot, files*offs)
		case 3:
			slots = nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				f, off := base.FileNum(i%files), uint64(i%offs)
				var slot *cacheSlot
				if slots != nil {
					slot = &slots[int(f)*offs+int(off)]
				}
				want := fmt.Sprintf("%d/%d", f, off)
				if b := c.get(f, off, slot); b != nil && string(b) != want {
					t.Errorf("got %q, want %q", b, want)
					return
				}
				c.set(f, off, []byte(want), slot)
				switch {
				case i%500 == 0:
					c.EvictFile(f)
				case i%700 == 0 && g == 1:
					for j := range slots {
						c.unlink(base.FileNum(j/offs), uint64(j%offs), &slots[j])
					}
				}
			}
		}()
	}
	wg.Wait()
	if m := c.Metrics(); m.Size > m.Capacity {
		t.Fatalf("size %d over capacity %d", m.Size, m.Capacity)
	}
	checkSlots(t, c)
}

// checkSlots checks that every entry of c is linked to a slot that holds
// its block, or to none.
func checkSlots(t *testing.T, c *Cache) {
	t.Helper()
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		for k, e := range s.entries {
			if e.slot != nil && !holds(e.slot, e.data) {
				t.Errorf("entry %v linked to a slot holding %p (%d bytes), not its block", k, e.slot.data.Load(), e.slot.n.Load())
			}
		}
		s.mu.RUnlock()
	}
}

// holds reports whether slot is linked to block.
func holds(slot *cacheSlot, block []byte) bool {
	return slot.data.Load() == &block[0] && int(slot.n.Load()) == len(block)
}

// linked reports whether slot is linked to a block.
func linked(slot *cacheSlot) bool { return slot.data.Load() != nil }

// TestCache_Slots follows a block's entry through the slots linked to it:
// get finds it there, eviction, replacement and EvictFile empty the slot,
// a second slot takes the link from the first, and unlink lets go.
func TestCache_Slots(t *testing.T) {
	c := NewCache(cacheShards * 2 * (testBlockLen + cacheEntryOverhead)) // 2 blocks per shard
	offs := sameShardOffsets(c, 3)
	var a, b cacheSlot
	block := make([]byte, testBlockLen)
	c.set(1, offs[0], block, &a)
	if !holds(&a, block) {
		t.Fatal("set left its slot empty")
	}
	// A hit through the slot is counted like one through the map.
	if got := c.get(1, offs[0], &a); &got[0] != &block[0] || len(got) != len(block) {
		t.Fatal("get through the slot returned another block")
	}
	if m := c.Metrics(); m.Hits != 1 {
		t.Fatalf("hits %d after one get through the slot", m.Hits)
	}
	// A second slot finds the entry in the map and takes the link.
	if c.get(1, offs[0], &b) == nil || !holds(&b, block) || linked(&a) {
		t.Fatalf("second slot: a linked %v, b %v", linked(&a), linked(&b))
	}
	// Caching the block again replaces the entry: b is emptied, a linked.
	again := make([]byte, testBlockLen)
	c.set(1, offs[0], again, &a)
	if !holds(&a, again) || linked(&b) {
		t.Fatalf("replaced entry: a linked %v, b %v", linked(&a), linked(&b))
	}
	// Evicted (two more blocks fill the shard; neither the entry nor its
	// slot was read since it was cached: a's bit, set through the first
	// entry, was cleared when a was linked to this one): its slot is
	// emptied.
	c.set(1, offs[1], make([]byte, testBlockLen), &b)
	c.set(1, offs[2], make([]byte, testBlockLen), nil)
	if cached(c, 1, offs[0]) || linked(&a) {
		t.Fatalf("evicted block: cached %v, slot linked %v", cached(c, 1, offs[0]), linked(&a))
	}
	if c.get(1, offs[0], &a) != nil {
		t.Fatal("get of an evicted block through an emptied slot hit")
	}
	// unlink empties b and the entry lets go of it.
	c.unlink(1, offs[1], &b)
	if linked(&b) {
		t.Fatal("unlink left the slot linked")
	}
	checkSlots(t, c)
	// EvictFile empties the slots of the file's blocks.
	c.get(1, offs[2], &a)
	c.EvictFile(1)
	if linked(&a) {
		t.Fatal("EvictFile left a slot linked")
	}
}

// TestCache_SlotSecondChance checks that a block read only through its
// slot, never through the shard's map, gets its second chance too.
func TestCache_SlotSecondChance(t *testing.T) {
	c := NewCache(cacheShards * 2 * (testBlockLen + cacheEntryOverhead)) // 2 blocks per shard
	offs := sameShardOffsets(c, 3)
	var a, b cacheSlot
	c.set(1, offs[0], make([]byte, testBlockLen), &a)
	c.set(1, offs[1], make([]byte, testBlockLen), &b)
	c.get(1, offs[0], &a)
	// The hand, at offs[0]: read through a, so kept; offs[1] goes.
	c.set(1, offs[2], make([]byte, testBlockLen), nil)
	if !cached(c, 1, offs[0]) || cached(c, 1, offs[1]) || !linked(&a) || linked(&b) {
		t.Fatalf("cached %v %v, slots linked %v %v", cached(c, 1, offs[0]), cached(c, 1, offs[1]), linked(&a), linked(&b))
	}
	if a.referenced.Load() {
		t.Fatal("the hand passed the slot's entry without clearing the slot's bit")
	}
}

// TestCache_EntrySize pins the entry size cacheEntryOverhead is worked
// out from.
func TestCache_EntrySize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("cacheEntryOverhead is worked out for 64-bit platforms")
	}
	if n := unsafe.Sizeof(cacheEntry{}); n != 88 {
		t.Fatalf("cacheEntry is %d bytes: work cacheEntryOverhead out again", n)
	}
}

// TestCache_SharedByReaders serves two tables from one cache, then evicts
// one of them.
func TestCache_SharedByReaders(t *testing.T) {
	rng := seedRNG(t)
	c := NewCache(1 << 20)
	var rs []*Reader
	for n := base.FileNum(1); n <= 2; n++ {
		entries := randomEntries(rng, 100)
		r := openTable(t, buildBytes(t, entries, WriterOptions{BlockSize: 256}), ReaderOptions{Cache: c, FileNum: n})
		it, _ := r.NewIter(nil)
		for it.First(); it.Valid(); it.Next() {
		}
		it.Close()
		rs = append(rs, r)
	}
	before := c.Metrics()
	c.EvictFile(1)
	after := c.Metrics()
	if before.Count != int64(rs[0].props.NumDataBlocks+rs[1].props.NumDataBlocks) ||
		after.Count != int64(rs[1].props.NumDataBlocks) {
		t.Fatalf("before %+v after %+v", before, after)
	}
}
