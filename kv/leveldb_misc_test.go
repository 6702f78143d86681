package kv_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestLevelDB_ComparatorCheck ports DBTest.ComparatorCheck: a store
// created under one comparer does not open under another name, and the
// error names the comparers.
func TestLevelDB_ComparatorCheck(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	ldbSet(t, db, "foo", "v1")
	ldbFlush(t, db)
	ldbClose(t, db)
	other := *sstable.DefaultComparer
	other.Name = "leveldb.NewComparator"
	_, err := kv.Open("db", &kv.Options{FS: fs, Comparer: &other})
	if err == nil {
		t.Fatal("Open under another comparer succeeded")
	}
	if !strings.Contains(err.Error(), "leveldb.NewComparator") || !strings.Contains(err.Error(), sstable.DefaultComparer.Name) {
		t.Fatalf("error does not name both comparers: %v", err)
	}
}

// ldbNumberComparer orders keys "[n]" by the number n, in any base
// strconv reads ("[10]" and "[0xa]" are the same key): LevelDB's
// NumberComparator. Keys equal under it differ in bytes, so no filter can
// serve it: stores using it are opened with DisableFilters, as LevelDB's
// test opens them without a filter policy.
var ldbNumberComparer = &sstable.Comparer{
	Compare: func(a, b []byte) int {
		x, y := ldbNumber(a), ldbNumber(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	},
	Separator: func(dst, a, _ []byte) []byte { return append(dst, a...) },
	Successor: func(dst, a []byte) []byte { return append(dst, a...) },
	Name:      "test.NumberComparator",
}

func ldbNumber(key []byte) int64 {
	s := string(key)
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		panic(fmt.Sprintf("key %q is not a [number]", s))
	}
	n, err := strconv.ParseInt(s[1:len(s)-1], 0, 64)
	if err != nil {
		panic(err)
	}
	return n
}

// TestLevelDB_CustomComparator ports DBTest.CustomComparator: under a
// comparer that holds keys of different bytes equal, Gets find a key by
// any of its spellings, in the memtable and after compactions, and
// rounds of writes compacted across the key space read back.
func TestLevelDB_CustomComparator(t *testing.T) {
	o := &kv.Options{Comparer: ldbNumberComparer, DisableFilters: true, MemTableSize: 4 << 10}
	db := ldbOpen(t, vfs.NewMem(), o)
	defer ldbClose(t, db)
	ldbSet(t, db, "[10]", "ten")
	ldbSet(t, db, "[0x14]", "twenty")
	for range 2 {
		ldbWant(t, db, "[10]", "ten")
		ldbWant(t, db, "[0xa]", "ten")
		ldbWant(t, db, "[20]", "twenty")
		ldbWant(t, db, "[0x14]", "twenty")
		ldbWant(t, db, "[15]", "NOT_FOUND")
		ldbWant(t, db, "[0xf]", "NOT_FOUND")
		ldbCompact(t, db, "[0]", "[9999]")
	}
	n := 1000
	if testing.Short() {
		n = 300
	}
	for range 2 {
		for i := range n {
			k := fmt.Sprintf("[%d]", i*10)
			ldbSet(t, db, k, k)
		}
		ldbCompact(t, db, "[0]", "[1000000]")
	}
	for i := range n {
		ldbWant(t, db, fmt.Sprintf("[%#x]", i*10), fmt.Sprintf("[%d]", i*10))
	}
}

// ldbMakeTables ports LevelDB's MakeTables: n flushes of two keys each,
// small and large.
func ldbMakeTables(t *testing.T, db *kv.DB, n int, small, large string) {
	t.Helper()
	for range n {
		ldbSet(t, db, small, "begin")
		ldbSet(t, db, large, "end")
		ldbFlush(t, db)
	}
}

// TestLevelDB_ManualCompaction ports DBTest.ManualCompaction: Compact of a
// range that misses the tables (before them, after them) changes nothing;
// of a range inside them merges them into one table; of ranges covering
// newer tables merges those too.
func TestLevelDB_ManualCompaction(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{DisableAutomaticCompactions: true})
	defer ldbClose(t, db)
	ldbMakeTables(t, db, 3, "p", "q")
	unchanged := func(start, end string) {
		t.Helper()
		before, count := ldbLevels(db), db.Metrics().Compact.Count
		ldbCompact(t, db, start, end)
		if after := ldbLevels(db); after != before || db.Metrics().Compact.Count != count {
			t.Fatalf("Compact(%q, %q) outside the tables changed them: %s to %s", start, end, before, after)
		}
	}
	tables := func(what string, want int) {
		t.Helper()
		if n := ldbTables(db); n != want {
			t.Fatalf("%s: %d tables (%s), want %d", what, n, ldbLevels(db), want)
		}
	}
	tables("three flushes", 3)
	unchanged("", "c")
	unchanged("r", "z")
	ldbCompact(t, db, "p1", "p9")
	tables("Compact inside the range", 1)
	ldbMakeTables(t, db, 3, "c", "e")
	tables("three more flushes", 4)
	ldbCompact(t, db, "b", "f")
	tables("Compact over the new range", 2)
	ldbMakeTables(t, db, 1, "a", "z")
	tables("a flush over both", 3)
	ldbCompact(t, db, "", "zzz")
	tables("Compact over everything", 1)
	for k, v := range map[string]string{"a": "begin", "c": "begin", "e": "end", "p": "begin", "q": "end", "z": "end"} {
		ldbWant(t, db, k, v)
	}
}

// TestLevelDB_DBOpen_Options ports DBTest.DBOpen_Options: opening a
// missing store fails under ErrorIfNotExists (creating nothing) and
// creates it otherwise; opening an existing one fails under ErrorIfExists
// and succeeds otherwise.
func TestLevelDB_DBOpen_Options(t *testing.T) {
	fs := vfs.NewMem()
	_, err := kv.Open("db", &kv.Options{FS: fs, ErrorIfNotExists: true})
	if !errors.Is(err, kv.ErrDBDoesNotExist) {
		t.Fatalf("missing store, ErrorIfNotExists: %v", err)
	}
	if _, err := fs.Stat("db"); err == nil {
		t.Fatal("a failed ErrorIfNotExists Open created the directory")
	}
	db, err := kv.Open("db", &kv.Options{FS: fs, ErrorIfExists: true})
	if err != nil {
		t.Fatalf("missing store, ErrorIfExists: %v", err)
	}
	ldbClose(t, db)
	_, err = kv.Open("db", &kv.Options{FS: fs, ErrorIfExists: true})
	if !errors.Is(err, kv.ErrDBAlreadyExists) {
		t.Fatalf("existing store, ErrorIfExists: %v", err)
	}
	db, err = kv.Open("db", &kv.Options{FS: fs, ErrorIfNotExists: true})
	if err != nil {
		t.Fatalf("existing store, ErrorIfNotExists: %v", err)
	}
	ldbClose(t, db)
}

// TestLevelDB_Locking ports DBTest.Locking: a store open in one DB cannot
// be opened by another until the first closes.
func TestLevelDB_Locking(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	if db2, err := kv.Open("db", &kv.Options{FS: fs}); err == nil {
		db2.Close()
		t.Fatal("a second Open of an open store succeeded")
	}
	ldbClose(t, db)
	ldbClose(t, ldbOpen(t, fs, nil))
}

// TestLevelDB_NoSpace ports DBTest.NoSpace: flushes and compactions that
// fail for want of disk space leave no more than a few files behind;
// reads go on; once there is room, a reopen has every acknowledged write.
// (LevelDB's compactions fail and retry; bloomkv stops writes at the first
// failure, so the later Compacts fail at once.)
func TestLevelDB_NoSpace(t *testing.T) {
	fs := newDiskFullFS(vfs.NewMem(), plentyOfRoom)
	db := ldbOpen(t, fs, nil)
	ldbSet(t, db, "foo", "v1")
	ldbCompact(t, db, "a", "z")
	files := len(ldbFiles(t, fs))
	ldbSet(t, db, "bar", "v2")
	fs.setRoom(0)
	for range 10 {
		if err := db.Compact(nil, nil); err == nil {
			t.Fatal("Compact on a full disk succeeded")
		}
	}
	ldbWant(t, db, "foo", "v1")
	ldbWant(t, db, "bar", "v2")
	if got := ldbFiles(t, fs); len(got) >= files+3 {
		t.Fatalf("failed compactions left files: %d before, now %v", files, got)
	}
	db.Close() // reports the failure
	fs.setRoom(plentyOfRoom)
	db = ldbOpen(t, fs, nil)
	ldbWant(t, db, "foo", "v1")
	ldbWant(t, db, "bar", "v2")
	ldbClose(t, db)
}

// TestLevelDB_FilesDeletedAfterCompaction ports
// DBTest.FilesDeletedAfterCompaction: rounds of an overwrite and a
// compaction leave the store's directory with as many files as the first.
func TestLevelDB_FilesDeletedAfterCompaction(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	defer ldbClose(t, db)
	ldbSet(t, db, "foo", "v2")
	ldbCompact(t, db, "a", "z")
	first := ldbFiles(t, fs)
	for range 10 {
		ldbSet(t, db, "foo", "v2")
		ldbCompact(t, db, "a", "z")
	}
	if got := ldbFiles(t, fs); len(got) != len(first) {
		t.Fatalf("files after the first round %v, after ten more %v", first, got)
	}
}

// TestLevelDB_BloomFilter ports DBTest.BloomFilter: with 1% filters, Gets
// of present keys read about one data block each though a small table of
// every hundredth key overlaps the big one, and Gets of missing keys read
// a block for at most 3% of them.
func TestLevelDB_BloomFilter(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{DisableAutomaticCompactions: true})
	defer ldbClose(t, db)
	n := 10000
	if testing.Short() {
		n = 3000
	}
	for i := range n {
		ldbSet(t, db, ldbKey(i), ldbKey(i))
	}
	ldbCompact(t, db, "a", "z")
	for i := 0; i < n; i += 100 {
		ldbSet(t, db, ldbKey(i), ldbKey(i))
	}
	ldbFlush(t, db)
	if got := ldbTables(db); got < 2 {
		t.Fatalf("%d tables, want the big one and the small one", got)
	}
	reads := func() int64 { return db.Metrics().Lookups.BlockReads }
	before := reads()
	for i := range n {
		ldbWant(t, db, ldbKey(i), ldbKey(i))
	}
	if r := reads() - before; r < int64(n) || r > int64(n+2*n/100) {
		t.Fatalf("%d present keys read %d blocks, want [%d, %d]", n, r, n, n+2*n/100)
	}
	before = reads()
	for i := range n {
		ldbWant(t, db, ldbKey(i)+".missing", "NOT_FOUND")
	}
	if r := reads() - before; r > int64(3*n/100) {
		t.Fatalf("%d missing keys read %d blocks, want at most %d", n, r, 3*n/100)
	}
}

// TestLevelDB_MultiThreaded ports DBTest.MultiThreaded: writers each set
// their own key to "key.writer.counter" with a rising counter, and read
// random keys; a value read is well formed and its counter never above
// the count its writer has reached.
func TestLevelDB_MultiThreaded(t *testing.T) {
	const writers = 4
	db := ldbOpen(t, vfs.NewMem(), ldbSmall(16<<10))
	defer ldbClose(t, db)
	ops := 2000
	if testing.Short() {
		ops = 300
	}
	var counters [writers]atomic.Int64
	var wg sync.WaitGroup
	for id := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(id), 301))
			for c := range ops {
				counters[id].Store(int64(c))
				k := rng.IntN(writers)
				key := []byte(strconv.Itoa(k))
				if rng.IntN(2) == 0 {
					// Writes its own key only: the counter stays
					// monotonic under the key's writer.
					key = []byte(strconv.Itoa(id))
					v := fmt.Sprintf("%d.%d.%d", id, id, c)
					if err := db.Set(key, []byte(v), kv.NoSync); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				v, err := db.Get(key)
				if errors.Is(err, kv.ErrNotFound) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				var kk, w, cc int
				if _, err := fmt.Sscanf(string(v), "%d.%d.%d", &kk, &w, &cc); err != nil || kk != k || w != k {
					t.Errorf("key %d holds %q", k, v)
					return
				}
				if int64(cc) > counters[k].Load() {
					t.Errorf("key %d holds counter %d, its writer is at %d", k, cc, counters[k].Load())
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestLevelDB_GoleveldbIssue72and83 ports goleveldb's
// TestDB_GoleveldbIssue72and83: while a writer applies batches that set
// every one of a group of keys to one value, snapshots and iterators made
// concurrently see each batch whole: all the keys alike.
func TestLevelDB_GoleveldbIssue72and83(t *testing.T) {
	const group = 16
	db := ldbOpen(t, vfs.NewMem(), ldbSmall(16<<10))
	defer ldbClose(t, db)
	batches := 1000
	if testing.Short() {
		batches = 200
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("%s%02d", strings.Repeat("g", 130), i)) }
	var done, stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	defer func() { stop.Store(true); wg.Wait() }() // before the Close
	go func() {
		defer wg.Done()
		defer done.Store(true)
		for n := 0; n < batches && !stop.Load(); n++ {
			b := db.NewBatch()
			for i := range group {
				b.Set(key(i), []byte(fmt.Sprintf("%06d", n)))
			}
			if err := db.Apply(b, kv.NoSync); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for !done.Load() {
		s := db.NewSnapshot()
		first := ""
		for i := range group {
			v := ldbGet(t, s, string(key(i)))
			if i == 0 {
				first = v
			} else if v != first {
				t.Fatalf("snapshot sees key 0 = %s, key %d = %s", first, i, v)
			}
		}
		must1(t, s.Close())
		it, err := db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for ok := it.First(); ok; ok = it.Next() {
			seen[string(it.Value())]++
		}
		must1(t, it.Close())
		if len(seen) > 1 {
			t.Fatalf("iterator sees values %v", seen)
		}
	}
	wg.Wait()
}
