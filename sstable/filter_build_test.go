package sstable

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
)

// TestReader_BuildFilter_SameBytes checks that a filter built from a
// table's keys holds exactly what the writer put in the table's own: with
// the exact test policy the two filter blocks are the same bytes, for whole
// keys with several versions each and for prefixes under a Split, in
// blocks small enough that keys and prefixes straddle them.
func TestReader_BuildFilter_SameBytes(t *testing.T) {
	rng := seedRNG(t)
	var slashEntries []testEntry
	var keys []string
	for range 400 {
		keys = append(keys, fmt.Sprintf("%c%c/%d", 'a'+rng.IntN(6), 'a'+rng.IntN(6), rng.IntN(20)))
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		slashEntries = append(slashEntries, testEntry{base.MakeInternalKey([]byte(k), 1, base.KindSet), []byte(k)})
	}
	policy := hashSetPolicy{}
	cases := 0
	for _, tc := range []struct {
		cmp     *base.Comparer
		entries []testEntry
	}{
		{base.DefaultComparer, randomEntries(rng, 500)},
		{itertest.SlashComparer(), slashEntries},
	} {
		data := buildBytes(t, tc.entries, WriterOptions{BlockSize: 48, Comparer: tc.cmp, FilterPolicy: policy})
		r := openTable(t, data, ReaderOptions{Comparer: tc.cmp, Filters: filters(policy)})
		own, err := r.decodeFilter()
		if err != nil {
			t.Fatal(err)
		}
		built, err := r.BuildFilter(policy)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(built.fb.data, own.data) || built.Size() != int64(len(own.data)) {
			t.Errorf("%s: built filter block of %d bytes differs from the table's of %d", tc.cmp.Name, built.Size(), len(own.data))
		}
		if built.BytesRead() != int64(r.props.DataSize) {
			t.Errorf("%s: the build read %d bytes of data blocks, the table holds %d", tc.cmp.Name, built.BytesRead(), r.props.DataSize)
		}
		if len(r.blocks) < 20 || built.Keys() < int64(len(r.blocks)) {
			t.Fatalf("%s: %d blocks, %d keys: too few to straddle", tc.cmp.Name, len(r.blocks), built.Keys())
		}
		cases++
	}
	if cases != 2 {
		t.Fatalf("%d cases ran", cases)
	}
}

// TestReader_HoldFilter gives a table written without filters a Bloom
// filter built from its keys, then a smaller one, then none: absent keys
// are ruled out while one is held (fewer by the smaller), present keys
// are found throughout, and the cache reservation follows the filter held.
// Misses counts the lookups of absent keys, and no others.
func TestReader_HoldFilter(t *testing.T) {
	rng := seedRNG(t)
	entries := randomEntries(rng, 2000)
	data := buildBytes(t, entries, WriterOptions{BlockSize: 512})
	c := NewCache(1 << 20)
	r := openTable(t, data, ReaderOptions{Cache: c, FileNum: 1, CountMisses: true})
	base := c.Metrics().Reserved
	negatives := func() int64 {
		var s LookupStats
		for i := range 2000 {
			if _, _, found, err := r.Get(fmt.Appendf(nil, "key%04d~", 4*i), 1000, &s); err != nil || found {
				t.Fatalf("absent key %d: found %v, err %v", i, found, err)
			}
		}
		for _, e := range entries {
			if _, _, found, err := r.Get(e.key.UserKey, 1000, nil); err != nil || !found {
				t.Fatalf("present key %q: found %v, err %v", e.key.UserKey, found, err)
			}
		}
		return s.FilterNegatives
	}
	if n := negatives(); n != 0 || r.FilterHeld() {
		t.Fatalf("no filter: %d negatives, held %v", n, r.FilterHeld())
	}
	var got []int64
	for _, bits := range []float64{12, 3} {
		p, err := bloompolicy.NewBitsPerKey(bits)
		if err != nil {
			t.Fatal(err)
		}
		f, err := r.BuildFilter(p)
		if err != nil {
			t.Fatal(err)
		}
		if replaced := r.HoldFilter(f); replaced != (bits == 3) {
			t.Fatalf("%v bits: replaced %v", bits, replaced)
		}
		if want := base + reservedShares(filterMemSize(r.filter.Load())); c.Metrics().Reserved != want {
			t.Fatalf("%v bits: reserved %d, want %d", bits, c.Metrics().Reserved, want)
		}
		got = append(got, negatives())
		t.Logf("%v bits/key: %d bytes for %d keys, %d of 2000 absent keys ruled out", bits, f.Size(), f.Keys(), got[len(got)-1])
	}
	if got[0] < 1980 || got[1] >= got[0] || got[1] < 1000 {
		t.Fatalf("negatives at 12 and 3 bits per key: %v", got)
	}
	if got := r.Misses(); got != 3*2000 {
		t.Fatalf("Misses %d after %d lookups of absent keys", got, 3*2000)
	}
	if !r.DropFilter() || c.Metrics().Reserved != base {
		t.Fatalf("dropped: reserved %d, want %d", c.Metrics().Reserved, base)
	}
}

// TestReader_CheckWithBuiltFilter holds a filter that BuildFilter built
// on tables without a filter and with one of another policy: Layout
// reports the table's own filters, as stored, and Check checks those
// against the table's own policy (none for the first), whatever the
// reader holds.
func TestReader_CheckWithBuiltFilter(t *testing.T) {
	entries := randomEntries(seedRNG(t), 500)
	bloom, err := bloompolicy.NewBitsPerKey(10)
	if err != nil {
		t.Fatal(err)
	}
	for _, own := range []bloompolicy.FilterPolicy{nil, hashSetPolicy{}} {
		var ropts ReaderOptions
		if own != nil {
			ropts.Filters = filters(own)
		}
		r := openTable(t, buildBytes(t, entries, WriterOptions{BlockSize: 512, FilterPolicy: own}), ropts)
		before, err := r.Layout()
		if err != nil {
			t.Fatal(err)
		}
		f, err := r.BuildFilter(bloom)
		if err != nil {
			t.Fatal(err)
		}
		r.HoldFilter(f)
		after, err := r.Layout()
		if err != nil {
			t.Fatal(err)
		}
		for i := range after.Data {
			if !bytes.Equal(after.Data[i].Filter, before.Data[i].Filter) || (own != nil) != (after.Data[i].Filter != nil) {
				t.Fatalf("own filter %v: block %d's filter in Layout changed with the filter held", own, i)
			}
		}
		if err := r.Check(); err != nil {
			t.Fatalf("own filter %v: Check of a sound table: %v", own, err)
		}
		r.Close()
	}
}

// TestReader_MissesOff: without ReaderOptions.CountMisses, lookups that
// find nothing leave Misses at 0.
func TestReader_MissesOff(t *testing.T) {
	entries := randomEntries(seedRNG(t), 200)
	r := openTable(t, buildBytes(t, entries, WriterOptions{BlockSize: 512}), ReaderOptions{})
	misses := 0
	for i := range 200 {
		_, _, found, err := r.Get(fmt.Appendf(nil, "key%04d~", 4*i), 1000, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			misses++
		}
	}
	if misses < 100 || r.Misses() != 0 {
		t.Fatalf("%d lookups found nothing, Misses %d: want 0 uncounted", misses, r.Misses())
	}
}
