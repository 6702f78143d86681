package kv_test

// The rocksdb_rangedel_*_test.go files port the behavioural scenarios of
// RocksDB's db/db_range_del_test.cc, and of Pebble v1.1.5's range-deletion
// tests (testdata/range_del, and the iterator and compaction tests that
// involve range tombstones), to bloomkv's API. RocksDB's test hooks have
// no counterpart here, so the ports keep the promise each test stands for
// and assert it through the public API: the values read (Get, iterators,
// snapshots), Metrics (tables, entries per level) and EstimateDiskUsage.
// Where RocksDB reads with ignore_range_deletions to see whether a covered
// key is still stored, the ports read through a snapshot taken before the
// tombstone (which must see it) or count the entries in Metrics (which
// shrink once a compaction drops it). Merge operands have no counterpart;
// the scenarios that use merges only to keep many versions of one user key
// use snapshots instead. Each test names the scenario it ports.

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// rdOptions returns options that make many small tables: a small
// memtable, small output tables and small blocks.
func rdOptions() *kv.Options {
	return &kv.Options{MemTableSize: 64 << 10, TargetFileSize: 4 << 10, BlockSize: 256,
		DisableAutomaticCompactions: true}
}

// rdOpen opens a store on a new in-memory FS with o (nil: rdOptions).
// The test's cleanup closes it, after the snapshots of rdSnapshot.
func rdOpen(t *testing.T, o *kv.Options) (*kv.DB, vfs.FS) {
	t.Helper()
	if o == nil {
		o = rdOptions()
	}
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, o)
	t.Cleanup(func() { ldbClose(t, db) })
	return db, fs
}

// rdKey is key i of a scenario; long keys share a prefix of 150 bytes, so
// that they cross the 128-byte mark and blocks hold few of them.
func rdKey(i int, long bool) string {
	if long {
		return strings.Repeat("p", 150) + ldbKey(i)
	}
	return ldbKey(i)
}

func rdDeleteRange(t *testing.T, db *kv.DB, start, end string) {
	t.Helper()
	if err := db.DeleteRange([]byte(start), []byte(end), kv.NoSync); err != nil {
		t.Fatalf("DeleteRange(%s, %s): %v", ldbShort(start), ldbShort(end), err)
	}
}

// rdSnapshot takes a snapshot that the test's cleanup closes.
func rdSnapshot(t *testing.T, db *kv.DB) *kv.Snapshot {
	t.Helper()
	s := db.NewSnapshot()
	t.Cleanup(func() { s.Close() })
	return s
}

// rdCheck checks that r holds exactly model (Gets, scans both ways, scans
// within random bounds) and that none of absent is found.
func rdCheck(t *testing.T, r ldbIterable, model map[string]string, absent []string, what string) {
	t.Helper()
	ldbCheckModel(t, rand.New(rand.NewPCG(1, 2)), r, model, what)
	for _, k := range absent {
		if _, ok := model[k]; !ok {
			ldbWant(t, r, k, "NOT_FOUND")
		}
	}
}

// rdScan returns the keys an iterator of r with opts shows, forward.
func rdScan(t *testing.T, r ldbIterable, opts *kv.IterOptions) []string {
	t.Helper()
	it, err := r.NewIter(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(it.Key()))
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// rdLevelOf returns the only level holding tables, failing the test when
// there are several or none.
func rdLevelOf(t *testing.T, db *kv.DB) int {
	t.Helper()
	level := -1
	for l, m := range db.Metrics().Levels {
		if m.NumFiles == 0 {
			continue
		}
		if level >= 0 {
			t.Fatalf("tables in L%d and L%d (%s), want one level", level, l, ldbLevels(db))
		}
		level = l
	}
	if level < 0 {
		t.Fatal("no table")
	}
	return level
}

// TestRocksDB_RangeDel_EndSameAsStartCoversNothing ports
// EndSameAsStartCoversNothing: DeleteRange(k, k) is empty, and an empty
// range deletes nothing, in the memtable and once flushed.
func TestRocksDB_RangeDel_EndSameAsStartCoversNothing(t *testing.T) {
	db, _ := rdOpen(t, nil)
	ldbSet(t, db, "b", "val")
	rdDeleteRange(t, db, "b", "b")
	rdDeleteRange(t, db, "c", "a") // inverted: empty too
	ldbWant(t, db, "b", "val")
	ldbFlush(t, db)
	ldbWant(t, db, "b", "val")
	ldbCompact(t, db, "", "")
	ldbWant(t, db, "b", "val")
}

// TestRocksDB_RangeDel_WriteBatch ports the write-batch scenarios: a range
// deletion in a batch covers the keys written before the batch and those
// the batch wrote before it, not those it writes after it; the batch
// applies atomically, as a reopen (WAL replay) shows too.
func TestRocksDB_RangeDel_WriteBatch(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, rdOptions())
	for _, k := range []string{"a", "b", "c", "d"} {
		ldbSet(t, db, k, "old")
	}
	b := db.NewBatch()
	must1(t, b.Set([]byte("b2"), []byte("in-batch")))
	must1(t, b.DeleteRange([]byte("b"), []byte("d")))
	must1(t, b.Set([]byte("c"), []byte("after")))
	must1(t, db.Apply(b, kv.NoSync))
	b.Close()
	want := map[string]string{"a": "old", "c": "after", "d": "old"}
	rdCheck(t, db, want, []string{"b", "b2"}, "after Apply")
	db = ldbReopen(t, db, fs, rdOptions())
	rdCheck(t, db, want, []string{"b", "b2"}, "after reopen")
	ldbFlush(t, db)
	rdCheck(t, db, want, []string{"b", "b2"}, "after Flush")
	ldbClose(t, db)
}

// TestRocksDB_RangeDel_FlushOutputHasOnlyRangeTombstones ports
// FlushOutputHasOnlyRangeTombstones: a memtable holding only a range
// tombstone flushes to one L0 table.
func TestRocksDB_RangeDel_FlushOutputHasOnlyRangeTombstones(t *testing.T) {
	db, _ := rdOpen(t, nil)
	rdDeleteRange(t, db, "dr1", "dr2")
	ldbFlush(t, db)
	if got := db.Metrics().Levels[0].NumFiles; got != 1 {
		t.Fatalf("L0 tables = %d, want 1 (%s)", got, ldbLevels(db))
	}
	ldbWant(t, db, "dr1", "NOT_FOUND")
}

// TestRocksDB_RangeDel_CompactionOutputHasOnlyRangeTombstone ports
// CompactionOutputHasOnlyRangeTombstone: under a snapshot taken before it,
// a tombstone over nothing is not obsolete, and a compaction keeps it in
// a table of its own; once the snapshot is gone, a compaction drops it
// and leaves no table.
func TestRocksDB_RangeDel_CompactionOutputHasOnlyRangeTombstone(t *testing.T) {
	db, _ := rdOpen(t, nil)
	snap := db.NewSnapshot()
	rdDeleteRange(t, db, "a", "z")
	ldbFlush(t, db)
	ldbCompact(t, db, "a", "z")
	if n := ldbTables(db); n != 1 {
		t.Fatalf("tables after compaction under a snapshot = %d (%s), want 1", n, ldbLevels(db))
	}
	must1(t, snap.Close())
	ldbCompact(t, db, "a", "z")
	if n := ldbTables(db); n != 0 {
		t.Fatalf("tables after compaction without snapshot = %d (%s), want 0", n, ldbLevels(db))
	}
}

// TestRocksDB_RangeDel_SentinelsOmittedFromOutputFile ports
// SentinelsOmittedFromOutputFile and FlushRangeDelsSameStartKey: disjoint
// tombstones and tombstones sharing a start key, flushed, delete what
// each covers and only that.
func TestRocksDB_RangeDel_SentinelsOmittedFromOutputFile(t *testing.T) {
	db, _ := rdOpen(t, nil)
	snap := rdSnapshot(t, db)
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "b1", "b2"} {
		ldbSet(t, db, k, "v")
	}
	snap2 := rdSnapshot(t, db)
	for _, r := range [][2]string{{"a", "b"}, {"c", "d"}, {"e", "f"}} {
		rdDeleteRange(t, db, r[0], r[1])
	}
	ldbSet(t, db, "b1", "new") // then a tombstone with b1's start, over it: RocksDB's b1 case
	rdDeleteRange(t, db, "b", "b2")
	ldbSet(t, db, "b2", "new")
	rdDeleteRange(t, db, "b", "b1")
	want := map[string]string{"b2": "new", "d": "v", "f": "v"}
	absent := []string{"a", "b", "b1", "c", "e"}
	rdCheck(t, db, want, absent, "in the memtable")
	ldbFlush(t, db)
	rdCheck(t, db, want, absent, "flushed")
	ldbCompact(t, db, "", "")
	rdCheck(t, db, want, absent, "compacted")
	all := map[string]string{"a": "v", "b": "v", "b1": "v", "b2": "v", "c": "v", "d": "v", "e": "v", "f": "v"}
	rdCheck(t, snap2, all, nil, "snapshot before the tombstones")
	rdCheck(t, snap, map[string]string{}, absent, "snapshot before any write")
}

// TestRocksDB_RangeDel_CompactRangeDelsSameStartKey ports
// CompactRangeDelsSameStartKey: tombstones [a, c) and [a, b) in separate
// L0 tables over a key in a third; the key stays deleted before and after
// they compact together.
func TestRocksDB_RangeDel_CompactRangeDelsSameStartKey(t *testing.T) {
	db, _ := rdOpen(t, nil)
	ldbSet(t, db, "unused", "val")
	ldbSet(t, db, "b1", "val")
	ldbFlush(t, db)
	rdDeleteRange(t, db, "a", "c")
	ldbFlush(t, db)
	rdDeleteRange(t, db, "a", "b")
	ldbFlush(t, db)
	if n := db.Metrics().Levels[0].NumFiles; n != 3 {
		t.Fatalf("L0 tables = %d, want 3", n)
	}
	ldbWant(t, db, "b1", "NOT_FOUND")
	ldbCompact(t, db, "", "")
	ldbWant(t, db, "b1", "NOT_FOUND")
	ldbWant(t, db, "unused", "val")
	if n := ldbEntries(db); n != 1 {
		t.Fatalf("entries after compaction = %d, want 1 (unused)", n)
	}
}

// TestRocksDB_RangeDel_FlushRemovesCoveredKeys ports
// FlushRemovesCoveredKeys: keys written before a snapshot, between it and
// a tombstone, and after the tombstone. After the flush the snapshot
// still sees every key it saw, the DB sees the uncovered ones, and the
// flush dropped the covered keys no snapshot needs (counted in Metrics).
func TestRocksDB_RangeDel_FlushRemovesCoveredKeys(t *testing.T) {
	for _, long := range []bool{false, true} {
		t.Run(fmt.Sprintf("long=%v", long), func(t *testing.T) {
			const n, lo, hi = 300, 50, 250
			o := rdOptions()
			o.MemTableSize = 1 << 20 // one flush
			db, _ := rdOpen(t, o)
			var snap *kv.Snapshot
			model, snapModel := map[string]string{}, map[string]string{}
			for i := 0; i < n; i++ {
				switch i {
				case n / 3:
					snap = rdSnapshot(t, db)
					snapModel = maps.Clone(model)
				case 2 * n / 3:
					rdDeleteRange(t, db, rdKey(lo, long), rdKey(hi, long))
					for j := lo; j < hi; j++ {
						delete(model, rdKey(j, long))
					}
				}
				ldbSet(t, db, rdKey(i, long), "val")
				model[rdKey(i, long)] = "val"
			}
			ldbFlush(t, db)
			rdCheck(t, db, model, nil, "DB")
			rdCheck(t, snap, snapModel, []string{rdKey(n/2, long)}, "snapshot")
			// Dropped: the range's keys written between the snapshot
			// and the tombstone, all of [n/3, 2n/3) here.
			kept := int64(n - (2*n/3 - n/3))
			if got := db.Metrics().Levels[0].Keys; got != kept {
				t.Fatalf("flushed entries = %d, want %d", got, kept)
			}
		})
	}
}
