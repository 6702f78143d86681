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
	c.set(1, 0, []byte("again"))
	m := c.Metrics()
	if m.Count != 1 || m.Hits != 1 || m.Misses != 1 || m.Size != 5+cacheEntryOverhead {
		t.Fatalf("metrics %+v", m)
	}
}

// TestCache_Evicts keeps the cache within its capacity, dropping the least
// recently used block of a shard first.
func TestCache_Evicts(t *testing.T) {
	const blockLen = 1000
	c := NewCache(cacheShards * 4 * (blockLen + cacheEntryOverhead)) // 4 blocks per shard
	s := c.shard(cacheKey{1, 0})
	var offs []uint64 // offsets that land in the same shard
	for off := uint64(0); len(offs) < 5; off += 4096 {
		if c.shard(cacheKey{1, off}) == s {
			offs = append(offs, off)
		}
	}
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
