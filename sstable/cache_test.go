package sstable

import (
	"fmt"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

func TestCache_GetSet(t *testing.T) {
	c := NewCache(1 << 20)
	if c.get(1, 0) != nil {
		t.Fatal("empty cache hit")
	}
	c.set(1, 0, []byte("block"))
	if got := c.get(1, 0); string(got) != "block" {
		t.Fatalf("get = %q", got)
	}
	again := []byte("again")
	c.set(1, 0, again)
	m := c.Metrics()
	if m.Count != 1 || m.Hits != 1 || m.Misses != 1 || m.Size != int64(cap(again))+cacheEntryOverhead {
		t.Fatalf("metrics %+v", m)
	}
}

// TestCache_Evicts keeps the cache within its capacity, dropping the least
// recently used block of a shard first.
func TestCache_Evicts(t *testing.T) {
	const blockLen = 1000
	c := NewCache(cacheShards * 4 * (blockLen + cacheEntryOverhead)) // 4 blocks per shard
	offs := sameShardOffsets(c, 5)
	for _, off := range offs[:4] {
		c.set(1, off, make([]byte, blockLen))
	}
	c.get(1, offs[0]) // offs[1] is now the least recently used
	c.set(1, offs[4], make([]byte, blockLen))
	if c.get(1, offs[1]) != nil {
		t.Fatal("least recently used block kept")
	}
	for _, off := range []uint64{offs[0], offs[2], offs[3], offs[4]} {
		if c.get(1, off) == nil {
			t.Fatalf("block %d evicted", off)
		}
	}
	if m := c.Metrics(); m.Size > m.Capacity {
		t.Fatalf("size %d over capacity %d", m.Size, m.Capacity)
	}
	c.set(1, 1, make([]byte, 1<<20)) // larger than a shard: not cached
	if c.get(1, 1) != nil {
		t.Fatal("oversized block cached")
	}
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
					c.set(1, offs[i], make([]byte, 100, s.set))
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
			c.set(1, last, make([]byte, 100, 2048))
			if got := c.get(1, last) != nil; got != tc.cached {
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
			c.set(f, off, []byte{byte(f)})
		}
	}
	held := c.get(2, 7)
	c.EvictFile(2)
	for off := uint64(0); off < 100; off++ {
		if c.get(2, off) != nil {
			t.Fatalf("block %d of file 2 survived", off)
		}
		if c.get(1, off) == nil || c.get(3, off) == nil {
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
// with -race).
func TestCache_Concurrent(t *testing.T) {
	c := NewCache(64 << 10)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				f, off := base.FileNum(i%5), uint64(i%300)
				want := fmt.Sprintf("%d/%d", f, off)
				if b := c.get(f, off); b != nil && string(b) != want {
					t.Errorf("got %q, want %q", b, want)
					return
				}
				c.set(f, off, []byte(want))
				if i%500 == 0 {
					c.EvictFile(f)
				}
			}
		}()
	}
	wg.Wait()
	if m := c.Metrics(); m.Size > m.Capacity {
		t.Fatalf("size %d over capacity %d", m.Size, m.Capacity)
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
		it, _ := r.NewIter(nil, nil)
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
