package sstable

import (
	"fmt"
	"testing"
)

// TestReader_DropFilter_LoadFilter drops a table's filter and loads it
// again: without it every absent key costs a block read and no verdict,
// with it the exact test filter rules each one out; the cache reservation
// follows, and every present key is found either way.
func TestReader_DropFilter_LoadFilter(t *testing.T) {
	rng := seedRNG(t)
	entries := randomEntries(rng, 500)
	data := buildBytes(t, entries, WriterOptions{BlockSize: 256, FilterPolicy: hashSetPolicy{}})
	c := NewCache(1 << 20)
	r := openTable(t, data, ReaderOptions{Cache: c, FileNum: 1, Filters: filters(hashSetPolicy{}), DeferFilter: true})
	defer r.Close()
	if !r.HasFilter() || r.FilterHeld() {
		t.Fatalf("deferred: HasFilter %v, FilterHeld %v", r.HasFilter(), r.FilterHeld())
	}
	base := c.Metrics().Reserved
	absent := func() LookupStats {
		var s LookupStats
		for i := range 100 {
			if _, _, found, err := r.Get([]byte(fmt.Sprintf("key%04d~", 4*i)), 1000, &s); err != nil || found {
				t.Fatalf("absent key %d: found %v, err %v", i, found, err)
			}
		}
		return s
	}
	if s := absent(); s.FilterNegatives != 0 || s.BlockReads == 0 {
		t.Fatalf("without the filter: %+v", s)
	}
	if loaded, err := r.LoadFilter(); !loaded || err != nil {
		t.Fatalf("LoadFilter: %v, %v", loaded, err)
	}
	if loaded, _ := r.LoadFilter(); loaded {
		t.Fatal("second LoadFilter loaded again")
	}
	if got, want := c.Metrics().Reserved, base+reservedShares(filterMemSize(r.filter.Load())); got != want {
		t.Fatalf("filter held: reserved %d, want %d", got, want)
	}
	if s := absent(); s.FilterNegatives != 100 || s.BlockReads != 0 {
		t.Fatalf("with the filter: %+v", s)
	}
	if !r.DropFilter() || r.DropFilter() {
		t.Fatal("DropFilter did not drop exactly once")
	}
	if got := c.Metrics().Reserved; got != base {
		t.Fatalf("filter dropped: reserved %d, want %d", got, base)
	}
	checked := 0
	for _, e := range entries {
		if _, _, found, err := r.Get(e.key.UserKey, 1000, nil); err != nil || !found {
			t.Fatalf("present key %q: found %v, err %v", e.key.UserKey, found, err)
		}
		checked++
	}
	if checked < 500 {
		t.Fatalf("checked %d present keys", checked)
	}
}
