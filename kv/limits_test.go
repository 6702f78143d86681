package kv

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// limitsValue returns n bytes that differ from one offset to the next, so
// that a value read back with a chunk missing, repeated or misplaced
// differs from it.
func limitsValue(n int, seed byte) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(i*7+i>>8) ^ seed
	}
	return v
}

func mustGetBytes(t testing.TB, d *DB, key, want []byte) {
	t.Helper()
	got, err := d.Get(key)
	if err != nil {
		t.Fatalf("Get(%.20q): %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%.20q): %d bytes, want %d (equal prefix %d)", key, len(got), len(want), commonPrefix(got, want))
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestLimits_ValueLargerThanMemTable writes 1 MiB values into a store
// whose memtables hold 64 KiB: each is written, read back from the
// memtable, survives a reopen (the WAL record spans 32 blocks), a power
// loss after a Sync write (vfs.NewStrictMem), a flush and a compaction;
// with the WAL written by the writers and in the background.
func TestLimits_ValueLargerThanMemTable(t *testing.T) {
	for _, bg := range []bool{false, true} {
		t.Run(fmt.Sprintf("bg=%v", bg), func(t *testing.T) { testValueLargerThanMemTable(t, bg) })
	}
}

func testValueLargerThanMemTable(t *testing.T, bg bool) {
	fs := vfs.NewStrictMem()
	o := func() *Options {
		return &Options{FS: fs, MemTableSize: 64 << 10, DisableAutomaticCompactions: true,
			BackgroundWALWrites: bg}
	}
	d, err := Open("db", o())
	must(t, err)
	big := [][]byte{limitsValue(1<<20, 1), limitsValue(1<<20+12345, 2), limitsValue(3<<20, 3)}
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	check := func(what string) {
		t.Helper()
		for i := range keys {
			mustGetBytes(t, d, keys[i], big[i])
		}
		mustGet(t, d, "small", "s")
		it, err := d.NewIter(nil)
		must(t, err)
		n := 0
		for it.First(); it.Valid(); it.Next() {
			if n < len(keys) && (!bytes.Equal(it.Key(), keys[n]) || !bytes.Equal(it.Value(), big[n])) {
				t.Fatalf("%s: entry %d: key %q, %d-byte value", what, n, it.Key(), len(it.Value()))
			}
			n++
		}
		must(t, it.Close())
		if n != len(keys)+1 {
			t.Fatalf("%s: %d entries, want %d", what, n, len(keys)+1)
		}
	}
	must(t, d.Set(keys[0], big[0], NoSync))
	must(t, d.Set([]byte("small"), []byte("s"), NoSync))
	b := d.NewBatch()
	must(t, b.Set(keys[1], big[1]))
	must(t, b.Set(keys[2], big[2]))
	must(t, d.Apply(b, Sync))
	check("written")
	// A power loss: only what was synced survives.
	fs.SetIgnoreSyncs(true)
	_ = d.Close() // nothing it writes lasts
	fs.ResetToSyncedState()
	fs.SetIgnoreSyncs(false)
	d, err = Open("db", o())
	must(t, err)
	check("after a power loss")
	must(t, d.Close())
	d, err = Open("db", o())
	must(t, err)
	check("reopened")
	must(t, d.Flush())
	check("flushed")
	must(t, d.Compact([]byte("a"), []byte("z")))
	check("compacted")
	must(t, d.Close())
	d, err = Open("db", o())
	must(t, err)
	check("reopened after the compaction")
	must(t, d.Close())
}

// TestLimits_MaxSizesThroughDB writes a value of exactly MaxValueSize and
// a batch of exactly MaxBatchSize bytes, on disk (where the WAL may be
// memory-mapped) and in memory, and reads them back from the memtable,
// after a reopen (WAL replay) and from the flushed tables.
func TestLimits_MaxSizesThroughDB(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 256 MiB batch")
	}
	for _, disk := range []bool{false, true} {
		t.Run(fmt.Sprintf("disk=%v", disk), func(t *testing.T) {
			var fs vfs.FS = vfs.NewMem()
			dir := "db"
			if disk {
				fs, dir = vfs.Default, t.TempDir()
			}
			o := func() *Options { return &Options{FS: fs, DisableAutomaticCompactions: true} }
			d, err := Open(dir, o())
			must(t, err)
			big := limitsValue(MaxValueSize, 9)
			must(t, d.Set([]byte("max"), big, NoSync))
			// Three values of MaxValueSize, and a fourth that fills the
			// batch to MaxBatchSize exactly.
			b := d.NewBatch()
			for _, k := range []string{"b0", "b1", "b2"} {
				must(t, b.Set([]byte(k), big))
			}
			rest := MaxBatchSize - b.Len() - 1 - 1 - 2 // kind, key length, key
			last := rest - uvarintLen(rest)
			must(t, b.Set([]byte("b3"), big[:last]))
			if b.Len() != MaxBatchSize {
				t.Fatalf("batch of %d bytes, want MaxBatchSize", b.Len())
			}
			must(t, d.Apply(b, Sync))
			b.Close()
			check := func(what string) {
				t.Helper()
				mustGetBytes(t, d, []byte("max"), big)
				for _, k := range []string{"b0", "b1", "b2"} {
					mustGetBytes(t, d, []byte(k), big)
				}
				mustGetBytes(t, d, []byte("b3"), big[:last])
			}
			check("written")
			must(t, d.Close())
			d, err = Open(dir, o())
			must(t, err)
			check("reopened")
			must(t, d.Flush())
			check("flushed")
			must(t, d.Close())
		})
	}
}

// TestLimits_KeysOfMaxKeySize takes keys of MaxKeySize that differ only
// in their last byte (so index separators cannot be shortened), a
// DeleteRange whose bounds are both MaxKeySize long, and a key one byte
// longer (refused, nothing written): through the memtable, a flush (one
// block per entry), a compaction and a reopen.
func TestLimits_KeysOfMaxKeySize(t *testing.T) {
	fs := vfs.NewMem()
	o := func() *Options {
		return &Options{FS: fs, BlockSize: 1 << 10, DisableAutomaticCompactions: true}
	}
	d, err := Open("db", o())
	must(t, err)
	key := func(c byte, last byte) []byte {
		k := bytes.Repeat([]byte{c}, MaxKeySize)
		k[MaxKeySize-1] = last
		return k
	}
	for i := range 6 {
		must(t, d.Set(key('k', byte(i)), []byte{'v', byte(i)}, NoSync))
	}
	must(t, d.Flush())
	// Delete k..1 up to k..4, with bounds of MaxKeySize.
	must(t, d.DeleteRange(key('k', 1), key('k', 4), NoSync))
	if err := d.DeleteRange(key('k', 0), append(key('k', 5), 0), NoSync); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("DeleteRange to a key of MaxKeySize+1: %v", err)
	}
	if err := d.Set(append(key('k', 2), 0), nil, NoSync); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("Set of a key of MaxKeySize+1: %v", err)
	}
	check := func(what string) {
		t.Helper()
		for i := range 6 {
			v, err := d.Get(key('k', byte(i)))
			if deleted := i >= 1 && i < 4; deleted {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: Get(k..%d) = %q, %v; want deleted", what, i, v, err)
				}
			} else if err != nil || !bytes.Equal(v, []byte{'v', byte(i)}) {
				t.Fatalf("%s: Get(k..%d) = %q, %v", what, i, v, err)
			}
		}
		it, err := d.NewIter(&IterOptions{LowerBound: key('k', 0), UpperBound: key('k', 5)})
		must(t, err)
		var got []byte
		for it.Last(); it.Valid(); it.Prev() {
			got = append(got, it.Key()[MaxKeySize-1])
		}
		must(t, it.Close())
		if !bytes.Equal(got, []byte{4, 0}) {
			t.Fatalf("%s: backward scan finds keys ending %v, want [4 0]", what, got)
		}
	}
	check("memtable tombstone")
	must(t, d.Flush())
	check("flushed")
	must(t, d.Compact(nil, bytes.Repeat([]byte{0xff}, MaxKeySize)))
	check("compacted")
	must(t, d.Close())
	d, err = Open("db", o())
	must(t, err)
	check("reopened")
	must(t, d.Close())
}

// TestLimits_IndexedBatchHuge reads huge entries back from an indexed
// batch, before and after Apply.
func TestLimits_IndexedBatchHuge(t *testing.T) {
	d, _ := openMem(t, &Options{MemTableSize: 64 << 10})
	defer mustClose(t, d)
	big := limitsValue(8<<20, 4)
	bigKey := bytes.Repeat([]byte("z"), MaxKeySize)
	must(t, d.Set([]byte("c"), []byte("hidden"), NoSync))
	b := d.NewIndexedBatch()
	must(t, b.Set(bigKey, big))
	must(t, b.Set([]byte("a"), big[:1<<20]))
	must(t, b.DeleteRange([]byte("b"), bigKey))
	got, err := b.Get(bigKey)
	must(t, err)
	if !bytes.Equal(got, big) {
		t.Fatalf("batch Get of the big key: %d bytes", len(got))
	}
	it, err := b.NewIter(nil)
	must(t, err)
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	if it.Last(); !it.Valid() || !bytes.Equal(it.Key(), bigKey) || !bytes.Equal(it.Value(), big) {
		t.Fatalf("batch iterator's last entry is not the big one")
	}
	must(t, it.Close())
	if n != 2 {
		t.Fatalf("batch iterator: %d entries, want 2", n)
	}
	if v, err := b.Get([]byte("c")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("batch Get of a key its range deletes: %q, %v", v, err)
	}
	must(t, d.Apply(b, Sync))
	mustNotFind(t, d, "c")
	mustGetBytes(t, d, bigKey, big)
	mustGetBytes(t, d, []byte("a"), big[:1<<20])
}

// TestLimits_GetAppendSmallBuffer appends huge values to a small buffer,
// which must grow and keep its prefix, from the memtable and a table.
func TestLimits_GetAppendSmallBuffer(t *testing.T) {
	d, _ := openMem(t, nil)
	defer mustClose(t, d)
	big := limitsValue(5<<20, 5)
	must(t, d.Set([]byte("k"), big, NoSync))
	for _, where := range []string{"memtable", "table"} {
		if where == "table" {
			must(t, d.Flush())
		}
		dst := make([]byte, 3, 8)
		copy(dst, "pre")
		got, err := d.GetAppend(dst, []byte("k"))
		must(t, err)
		if string(got[:3]) != "pre" || !bytes.Equal(got[3:], big) {
			t.Fatalf("%s: GetAppend gave %d bytes, prefix %q", where, len(got), got[:min(3, len(got))])
		}
		if string(dst) != "pre" {
			t.Fatalf("%s: GetAppend changed dst to %q", where, dst)
		}
	}
}

// TestLimits_IterHugeEntryBlocks iterates forward, backward and by seeks
// over a table whose blocks hold one huge entry each, with small entries
// between them, through a block cache too small for a block, so that
// scans read ahead of them.
func TestLimits_IterHugeEntryBlocks(t *testing.T) {
	d, _ := openMem(t, &Options{BlockSize: 4 << 10, TargetFileSize: 64 << 20, BlockCacheSize: 1 << 10,
		DisableAutomaticCompactions: true})
	defer mustClose(t, d)
	var keys [][]byte
	var vals [][]byte
	b := d.NewBatch() // one memtable, one table
	for i := range 24 {
		k := fmt.Appendf(nil, "k%02d", i)
		v := []byte("small")
		if i%3 == 1 {
			v = limitsValue(2<<20+i, byte(i))
		}
		keys, vals = append(keys, k), append(vals, v)
		must(t, b.Set(k, v))
	}
	must(t, d.Apply(b, NoSync))
	must(t, d.Flush())
	if m := d.Metrics(); m.Levels[0].NumFiles != 1 {
		t.Fatalf("%d L0 tables, want 1", m.Levels[0].NumFiles)
	}
	it, err := d.NewIter(nil)
	must(t, err)
	defer mustClose(t, it)
	want := func(what string, i int) {
		t.Helper()
		if !it.Valid() || !bytes.Equal(it.Key(), keys[i]) || !bytes.Equal(it.Value(), vals[i]) {
			t.Fatalf("%s: not at k%02d (valid %v, err %v)", what, i, it.Valid(), it.Error())
		}
	}
	i := 0
	for it.First(); it.Valid(); it.Next() {
		want("Next", i)
		i++
	}
	i = len(keys) - 1
	for it.Last(); it.Valid(); it.Prev() {
		want("Prev", i)
		i--
	}
	if i != -1 {
		t.Fatalf("Prev stopped at %d", i)
	}
	for j := range keys {
		it.SeekGE(keys[j])
		want("SeekGE", j)
		it.SeekLT(append(keys[j], 0))
		want("SeekLT", j)
	}
	must(t, it.Error())
}

// TestLimits_IngestHugeValue ingests a table holding a 100 MiB value,
// over MaxValueSize (which bounds writes, not tables), between small
// entries: it reads back after the ingest, a compaction with the store's
// own writes and a reopen.
func TestLimits_IngestHugeValue(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 100 MiB value")
	}
	d, fs := openMem(t, &Options{DisableAutomaticCompactions: true})
	big := limitsValue(100<<20, 6)
	f, err := fs.Create("ext.sst")
	must(t, err)
	w := sstable.NewWriter(f, sstable.WriterOptions{})
	must(t, w.Add(sstable.MakeInternalKey([]byte("a"), 0, sstable.KindSet), []byte("1")))
	must(t, w.Add(sstable.MakeInternalKey([]byte("b"), 0, sstable.KindSet), big))
	must(t, w.Add(sstable.MakeInternalKey([]byte("c"), 0, sstable.KindSet), []byte("3")))
	must(t, w.Close())
	must(t, d.Set([]byte("b0"), []byte("own"), NoSync))
	must(t, d.Ingest([]string{"ext.sst"}))
	check := func(what string) {
		t.Helper()
		mustGetBytes(t, d, []byte("b"), big)
		mustGet(t, d, "a", "1")
		mustGet(t, d, "b0", "own")
		mustGet(t, d, "c", "3")
		it, err := d.NewIter(&IterOptions{LowerBound: []byte("b"), UpperBound: []byte("b0")})
		must(t, err)
		if it.Last(); !it.Valid() || string(it.Key()) != "b" || !bytes.Equal(it.Value(), big) {
			t.Fatalf("%s: iterator does not find the big value (err %v)", what, it.Error())
		}
		must(t, it.Close())
	}
	check("ingested")
	must(t, d.Compact(nil, []byte("z")))
	check("compacted")
	must(t, d.Close())
	d, err = Open("db", &Options{FS: fs})
	must(t, err)
	check("reopened")
	must(t, d.Close())
}

// TestLimits_ConcurrentHugeWrites has several writers commit values
// larger than the memtable at once, with small writes between them, on
// disk, where the WAL may be memory-mapped and its records reserved by
// writers that overlap: every write reads back, after a reopen too.
func TestLimits_ConcurrentHugeWrites(t *testing.T) {
	dir := t.TempDir()
	o := func() *Options { return &Options{FS: vfs.Default, MemTableSize: 256 << 10} }
	d, err := Open(dir, o())
	must(t, err)
	const writers, each = 4, 6
	val := func(w, i int) []byte {
		if i%2 == 0 {
			return []byte(fmt.Sprintf("small-%d-%d", w, i))
		}
		return limitsValue(300<<10+w*1000+i, byte(w*each+i))
	}
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range each {
				if err := d.Set(fmt.Appendf(nil, "w%d-%d", w, i), val(w, i), NoSync); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		must(t, <-errs)
	}
	check := func(what string) {
		t.Helper()
		for w := range writers {
			for i := range each {
				mustGetBytes(t, d, fmt.Appendf(nil, "w%d-%d", w, i), val(w, i))
			}
		}
	}
	check("written")
	must(t, d.Close())
	d, err = Open(dir, o())
	must(t, err)
	check("reopened")
	must(t, d.Close())
}
