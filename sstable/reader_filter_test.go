package sstable

import (
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
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

// TestReader_LoadFilter_InPlaceOfBuilt: LoadFilter replaces a filter held
// by HoldFilter with the table's own in one step (the reservation follows
// it), loads nothing while the own one is held, and HoldFilter replaces
// the own one in turn.
func TestReader_LoadFilter_InPlaceOfBuilt(t *testing.T) {
	entries := randomEntries(seedRNG(t), 500)
	data := buildBytes(t, entries, WriterOptions{BlockSize: 256, FilterPolicy: hashSetPolicy{}})
	c := NewCache(1 << 20)
	r := openTable(t, data, ReaderOptions{Cache: c, FileNum: 1, Filters: filters(hashSetPolicy{}), DeferFilter: true})
	base := c.Metrics().Reserved
	p, err := bloompolicy.NewBitsPerKey(4)
	if err != nil {
		t.Fatal(err)
	}
	f, err := r.BuildFilter(p)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for round := range 2 {
		if replaced := r.HoldFilter(f); replaced != (round == 1) {
			t.Fatalf("round %d: HoldFilter replaced %v", round, replaced)
		}
		built := r.filter.Load()
		if loaded, err := r.LoadFilter(); !loaded || err != nil {
			t.Fatalf("round %d: LoadFilter in place of a built filter: %v, %v", round, loaded, err)
		}
		own := r.filter.Load()
		if own == nil || own == built || own.policy != (hashSetPolicy{}) {
			t.Fatalf("round %d: held %p (built %p), policy %v", round, own, built, own.policy)
		}
		if got, want := c.Metrics().Reserved, base+reservedShares(filterMemSize(own)); got != want {
			t.Fatalf("round %d: own filter held: reserved %d, want %d", round, got, want)
		}
		if loaded, _ := r.LoadFilter(); loaded || r.filter.Load() != own {
			t.Fatalf("round %d: LoadFilter loaded again over the own filter", round)
		}
		steps++
	}
	if steps != 2 {
		t.Fatalf("%d rounds ran", steps)
	}
}
