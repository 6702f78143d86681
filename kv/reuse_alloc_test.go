package kv

import (
	"bytes"
	"fmt"
	"testing"
)

// loadReuseStore fills a store with keys k00000.. in tables of two levels,
// with a range deletion among them, and more in the memtable, so that
// reads touch every kind of source.
func loadReuseStore(t testing.TB, d *DB) {
	t.Helper()
	value := make([]byte, 100)
	for i := 0; i < 4000; i++ {
		if err := d.Set(fmt.Appendf(nil, "k%05d", i), value, NoSync); err != nil {
			t.Fatal(err)
		}
		switch i {
		case 1999:
			if err := d.DeleteRange([]byte("k00100"), []byte("k00200"), NoSync); err != nil {
				t.Fatal(err)
			}
			if err := d.Compact(nil, []byte{0xff}); err != nil {
				t.Fatal(err)
			}
		case 2999:
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// openReuseIter returns an iterator over a store loaded by
// loadReuseStore, both closed when the test ends, for the allocation
// tests; it skips the test under the race detector, which allocates.
func openReuseIter(t *testing.T) *Iterator {
	t.Helper()
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	d, _ := openMem(t, &Options{DisableAutomaticCompactions: true})
	t.Cleanup(func() { d.Close() })
	loadReuseStore(t, d)
	it, err := d.NewIter(&IterOptions{LowerBound: []byte("k00000"), UpperBound: []byte("k99999")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { it.Close() })
	return it
}

// TestIterator_SetBounds_NoAllocs checks that SetBounds and a scan within
// the new bounds allocate nothing once the iterator has held bounds that
// long: the same iterator is repositioned over tables of two levels, a
// memtable and a range deletion.
func TestIterator_SetBounds_NoAllocs(t *testing.T) {
	it := openReuseIter(t)
	lower, upper := []byte("k00000"), []byte("k00000")
	i, seen := 0, 0
	reuse := func() {
		start := i * 37 % 3900
		i++
		lower, upper = appendKey(lower[:0], start), appendKey(upper[:0], start+50)
		it.SetBounds(lower, upper)
		for ok := it.First(); ok; ok = it.Next() {
			seen++
		}
		for ok := it.SeekLT(upper); ok && seen%2 == 0; ok = it.Prev() {
			seen++
		}
	}
	reuse()
	if n := testing.AllocsPerRun(200, reuse); n != 0 {
		t.Errorf("SetBounds and a scan allocate %v times", n)
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	if seen < 201*40 {
		t.Fatalf("the scans saw %d keys, want at least %d", seen, 201*40)
	}
}

// TestIterator_Refresh_NoAllocs checks that Refresh, SetBounds and a
// SeekGE allocate nothing on reuse while the DB's state stays the same:
// the loop a pool of iterators runs for each read, over tables of two
// levels, a memtable and a range deletion. It also checks that each
// refreshed seek lands where a fresh iterator's would.
func TestIterator_Refresh_NoAllocs(t *testing.T) {
	it := openReuseIter(t)
	lower, upper, wantKey := []byte("k00000"), []byte("k00000"), []byte("k00000")
	i, found := 0, 0
	reuse := func() {
		start := i * 37 % 3900
		i++
		if err := it.Refresh(); err != nil {
			t.Fatal(err)
		}
		lower, upper = appendKey(lower[:0], start), appendKey(upper[:0], start+50)
		it.SetBounds(lower, upper)
		// The first key at or after start that the range deletion of
		// [k00100, k00200) left, if within the bounds.
		want := start
		if want >= 100 && want < 200 {
			want = 200
		}
		ok := it.SeekGE(lower)
		if ok == (want < start+50) && (!ok || bytes.Equal(it.Key(), appendKey(wantKey[:0], want))) {
			found++
		}
	}
	reuse()
	if n := testing.AllocsPerRun(200, reuse); n != 0 {
		t.Errorf("Refresh, SetBounds and SeekGE allocate %v times", n)
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	if found != 202 {
		t.Fatalf("%d of 202 seeks landed where they should", found)
	}
}

// appendKey appends key k%05d of i, without fmt's allocations.
func appendKey(dst []byte, i int) []byte {
	dst = append(dst, 'k')
	for div := 10000; div > 0; div /= 10 {
		dst = append(dst, byte('0'+i/div%10))
	}
	return dst
}

// TestDB_GetAppend_NoAllocs checks that GetAppend of a present key, from
// the memtable and from tables of each level, allocates nothing when the
// buffer has room, and that it appends the same value Get returns.
func TestDB_GetAppend_NoAllocs(t *testing.T) {
	d, _ := openMem(t, &Options{DisableAutomaticCompactions: true})
	defer d.Close()
	loadReuseStore(t, d)
	buf := make([]byte, 0, 256)
	for _, ks := range []string{"k00005", "k02500", "k03500"} { // L6, L0, memtable
		k := []byte(ks)
		want, err := d.Get(k)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.GetAppend(append(buf[:0], "x"...), k)
		if err != nil || string(got) != "x"+string(want) {
			t.Fatalf("GetAppend(%s) = %q, %v; want %q", k, got, err, "x"+string(want))
		}
		if raceEnabled {
			continue
		}
		if n := testing.AllocsPerRun(200, func() { buf, err = d.GetAppend(buf[:0], k) }); n != 0 {
			t.Errorf("GetAppend(%s) allocates %v times", k, n)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.GetAppend(buf[:0], []byte("k00150")) // range-deleted
	if err == nil || len(got) != 0 {
		t.Fatalf("GetAppend of a deleted key = %q, %v", got, err)
	}
}

// BenchmarkDB_GetAppend reads present keys from a store of tables and a
// memtable with GetAppend into one buffer; it should report 0 allocs/op.
func BenchmarkDB_GetAppend(b *testing.B) {
	d, _ := openMem(b, &Options{DisableAutomaticCompactions: true})
	defer d.Close()
	loadReuseStore(b, d)
	keys := make([][]byte, 4000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k%05d", (i*7919)%3800+200)
	}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		if buf, err = d.GetAppend(buf[:0], keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
	}
}
