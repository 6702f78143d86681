package sstable

import (
	"errors"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// TestReader_ReservesInCache checks that an open Reader reserves its
// in-memory structures in its cache, at least its index and filter
// blocks, and gives them back on Close, and that a table that fails to
// open reserves nothing.
func TestReader_ReservesInCache(t *testing.T) {
	rng := seedRNG(t)
	c := NewCache(1 << 20)
	var rs []*Reader
	var want int64
	for n := FileNum(1); n <= 2; n++ {
		data := buildBytes(t, randomEntries(rng, 300), WriterOptions{BlockSize: 256, FilterPolicy: hashSetPolicy{}})
		r, err := openBytes(data, ReaderOptions{Cache: c, FileNum: n, Filters: filters(hashSetPolicy{})})
		if err != nil {
			t.Fatal(err)
		}
		if r.filter == nil {
			t.Fatal("filter not loaded")
		}
		size := r.memSize()
		if min := int64(len(r.index) + len(r.filter.data) + 4*len(r.filter.offsets) + 32*len(r.blocks)); size < min {
			t.Fatalf("memSize %d below the index, filter and per-block %d bytes", size, min)
		}
		want += (size + cacheShards - 1) / cacheShards * cacheShards
		if m := c.Metrics(); m.Reserved != want || m.Size != want {
			t.Fatalf("reader %d open: reserved %d, size %d, want %d", n, m.Reserved, m.Size, want)
		}
		rs = append(rs, r)
	}
	if err := rs[0].Close(); err != nil {
		t.Fatal(err)
	}
	want -= (rs[0].memSize() + cacheShards - 1) / cacheShards * cacheShards
	if m := c.Metrics(); m.Reserved != want {
		t.Fatalf("after one Close: reserved %d, want %d", m.Reserved, want)
	}
	if err := rs[1].Close(); err != nil {
		t.Fatal(err)
	}
	if err := rs[1].Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
	_, data := smallTable(t, hashSetPolicy{})
	if _, err := openBytes(data[:len(data)-1], ReaderOptions{Cache: c, Filters: filters(hashSetPolicy{})}); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("truncated table opened: %v", err)
	}
	if m := c.Metrics(); m.Reserved != 0 || m.Size != 0 {
		t.Fatalf("after every Close and a failed open: %+v", m)
	}
}

// TestReader_ReservationEvictsBlocks fills a cache with one table's data
// blocks, then opens a second table whose reservation needs the room.
func TestReader_ReservationEvictsBlocks(t *testing.T) {
	rng := seedRNG(t)
	small := buildBytes(t, randomEntries(rng, 100), WriterOptions{BlockSize: 256})
	large := buildBytes(t, randomEntries(rng, 3000), WriterOptions{BlockSize: 256, FilterPolicy: hashSetPolicy{}})
	c := NewCache(64 << 10)
	r := openTable(t, small, ReaderOptions{Cache: c, FileNum: 1})
	readAllBlocks(t, r)
	before := c.Metrics()
	r2 := openTable(t, large, ReaderOptions{Cache: c, FileNum: 2, Filters: filters(hashSetPolicy{})})
	after := c.Metrics()
	if after.Reserved <= before.Reserved || after.Count >= before.Count {
		t.Fatalf("second table's reservation evicted nothing: before %+v, after %+v", before, after)
	}
	if after.Size > after.Capacity && after.Count > 0 {
		t.Fatalf("blocks kept over capacity: %+v", after)
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	if m := c.Metrics(); m.Reserved != before.Reserved {
		t.Fatalf("reservation after Close %d, want %d", m.Reserved, before.Reserved)
	}
}

// TestReader_CloseUnlinksSlots reads a table's blocks through the cache,
// closes the reader and opens the table again: the closed reader's slots
// are emptied and no entry refers to them, and the new reader finds the
// blocks cached and links its own slots.
func TestReader_CloseUnlinksSlots(t *testing.T) {
	rng := seedRNG(t)
	data := buildBytes(t, randomEntries(rng, 300), WriterOptions{BlockSize: 256})
	c := NewCache(1 << 20)
	r := openTable(t, data, ReaderOptions{Cache: c, FileNum: 1})
	readAllBlocks(t, r)
	for i := range r.blocks {
		if !linked(&r.blocks[i].cached) {
			t.Fatalf("block %d read but its slot is empty", i)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range r.blocks {
		if linked(&r.blocks[i].cached) {
			t.Fatalf("block %d's slot still linked after Close", i)
		}
	}
	checkSlots(t, c)
	before := c.Metrics()
	r2 := openTable(t, data, ReaderOptions{Cache: c, FileNum: 1})
	readAllBlocks(t, r2)
	after := c.Metrics()
	if n := int64(len(r2.blocks)); after.Hits != before.Hits+n || after.Misses != before.Misses {
		t.Fatalf("reopened reader: cache before %+v, after %+v, for %d blocks", before, after, n)
	}
	for i := range r2.blocks {
		if !linked(&r2.blocks[i].cached) {
			t.Fatalf("block %d found in the cache but its slot is empty", i)
		}
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
}

// readAllBlocks reads every data block of r through its cache.
func readAllBlocks(t *testing.T, r *Reader) {
	t.Helper()
	for i := range r.blocks {
		if _, err := r.dataBlock(i, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReader_BlockCapacity checks that blocks read from a table, stored
// as they are or Snappy-compressed, come in buffers whose capacity is
// what the allocator gave them (a size class), and that the cache charges
// that capacity.
func TestReader_BlockCapacity(t *testing.T) {
	rng := seedRNG(t)
	for _, comp := range []Compression{NoCompression, SnappyCompression} {
		t.Run(comp.String(), func(t *testing.T) {
			data := buildBytes(t, randomEntries(rng, 500), WriterOptions{BlockSize: 1000, Compression: comp})
			c := NewCache(1 << 20)
			r := openTable(t, data, ReaderOptions{Cache: c, FileNum: 1})
			var charged int64
			for i := range r.blocks {
				b, err := r.dataBlock(i, nil)
				if err != nil {
					t.Fatal(err)
				}
				if sized := append([]byte(nil), b...); cap(b) != cap(sized) {
					t.Fatalf("block of %d bytes has capacity %d, its size class %d", len(b), cap(b), cap(sized))
				}
				charged += int64(cap(b)) + cacheEntryOverhead
			}
			if m := c.Metrics(); m.Size-m.Reserved != charged || m.Count != int64(len(r.blocks)) {
				t.Fatalf("cache %+v, want %d blocks charged %d", m, len(r.blocks), charged)
			}
		})
	}
}

// TestReader_CompactionIter checks that a compaction iterator returns
// every entry, takes the blocks the cache holds from it, caches none, and
// allocates nothing per pass once its buffer has grown (unless the race
// detector, which drops pooled read buffers, is on).
func TestReader_CompactionIter(t *testing.T) {
	rng := seedRNG(t)
	entries := randomEntries(rng, 400)
	for _, comp := range []Compression{NoCompression, SnappyCompression} {
		t.Run(comp.String(), func(t *testing.T) {
			data := buildBytes(t, entries, WriterOptions{BlockSize: 512, Compression: comp})
			c := NewCache(1 << 20)
			r := openTable(t, data, ReaderOptions{Cache: c, FileNum: 1})
			if _, err := r.dataBlock(1, nil); err != nil {
				t.Fatal(err)
			}
			before := c.Metrics()
			it, err := r.NewIter(&IterOptions{Compaction: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := checkIterEntries(it, entries, true); err != nil {
				t.Fatal(err)
			}
			after := c.Metrics()
			if after.Count != before.Count || after.Hits != before.Hits+1 ||
				after.Misses != before.Misses+int64(len(r.blocks))-1 {
				t.Fatalf("cache before %+v, after %+v, for %d blocks", before, after, len(r.blocks))
			}
			var reused Iter
			pass := func() {
				if err := r.InitIter(&reused, &IterOptions{Compaction: true}); err != nil {
					t.Fatal(err)
				}
				for ok := reused.First(); ok; ok = reused.Next() {
				}
				if err := reused.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if allocs := testing.AllocsPerRun(5, pass); allocs != 0 && !raceEnabled {
				t.Fatalf("%.1f allocations per pass", allocs)
			}
		})
	}
}
