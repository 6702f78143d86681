package kv_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
)

// TestRocksDB_RangeDel_GetCoveredKey ports GetCoveredKeyFromMutableMemtable,
// GetCoveredKeyFromImmutableMemtable and GetCoveredKeyFromSst: a key
// covered by a newer tombstone is not found wherever the two are, in the
// memtable, in memtables queued for a flush, in a table (the key kept by
// a snapshot), or split between a table and the memtable.
func TestRocksDB_RangeDel_GetCoveredKey(t *testing.T) {
	for _, where := range []string{"memtable", "queued", "table", "table+memtable"} {
		t.Run(where, func(t *testing.T) {
			o := rdOptions()
			o.MemTableSize = 1 << 10 // the first memtables fill after a few writes
			db, _ := rdOpen(t, o)
			snap := rdSnapshot(t, db) // keeps key through flushes
			ldbSet(t, db, "key", "val")
			if where == "table+memtable" {
				ldbFlush(t, db)
			}
			rdDeleteRange(t, db, "a", "z")
			switch where {
			case "queued":
				for i := 0; i < 200; i++ { // the memtable switches, flushes run
					ldbSet(t, db, fmt.Sprintf("blah%03d", i), "val")
				}
			case "table":
				ldbFlush(t, db)
			}
			ldbWant(t, db, "key", "NOT_FOUND")
			if keys := rdScan(t, db, &kv.IterOptions{UpperBound: []byte("blah")}); len(keys) != 0 {
				t.Fatalf("scan shows %q", keys)
			}
			ldbWant(t, snap, "key", "NOT_FOUND")
		})
	}
}

// TestRocksDB_RangeDel_GetIgnoresRangeDeletions ports
// GetIgnoresRangeDeletions and IteratorIgnoresRangeDeletions: RocksDB's
// ignore_range_deletions has no counterpart, so the promise checked is
// the one it relies on: keys in a table, in a flushed memtable and in the
// memtable, each covered by a later tombstone [a, z), are gone for the
// DB and stay visible to the snapshots taken before each tombstone.
func TestRocksDB_RangeDel_GetIgnoresRangeDeletions(t *testing.T) {
	db, _ := rdOpen(t, nil)
	ldbSet(t, db, "sst_key", "val")
	s1 := rdSnapshot(t, db)
	rdDeleteRange(t, db, "a", "z")
	ldbFlush(t, db)
	ldbSet(t, db, "imm_key", "val")
	s2 := rdSnapshot(t, db)
	rdDeleteRange(t, db, "a", "z")
	ldbFlush(t, db)
	ldbSet(t, db, "mem_key", "val")
	s3 := rdSnapshot(t, db)
	rdDeleteRange(t, db, "a", "z")
	for _, k := range []string{"sst_key", "imm_key", "mem_key"} {
		ldbWant(t, db, k, "NOT_FOUND")
	}
	rdCheck(t, s1, map[string]string{"sst_key": "val"}, []string{"imm_key"}, "s1")
	rdCheck(t, s2, map[string]string{"imm_key": "val"}, []string{"sst_key"}, "s2")
	rdCheck(t, s3, map[string]string{"mem_key": "val"}, []string{"sst_key", "imm_key"}, "s3")
	rdCheck(t, db, map[string]string{}, []string{"sst_key", "imm_key", "mem_key"}, "DB")
	ldbCompact(t, db, "", "")
	rdCheck(t, s2, map[string]string{"imm_key": "val"}, []string{"sst_key"}, "s2 compacted")
	rdCheck(t, db, map[string]string{}, []string{"sst_key", "imm_key", "mem_key"}, "DB compacted")
}

// TestRocksDB_RangeDel_IteratorRemovesCoveredKeys ports
// IteratorRemovesCoveredKeys and IteratorOverUserSnapshot: half the keys
// written before a tombstone [50, 150), half after, over many tables; an
// iterator hides exactly the covered ones, and one over a snapshot taken
// before the tombstone sees every key written before it.
func TestRocksDB_RangeDel_IteratorRemovesCoveredKeys(t *testing.T) {
	for _, long := range []bool{false, true} {
		t.Run(fmt.Sprintf("long=%v", long), func(t *testing.T) {
			const n, lo, hi = 200, 50, 150
			o := rdOptions()
			o.MemTableSize = 1 << 10
			db, _ := rdOpen(t, o)
			var snap *kv.Snapshot
			model, snapModel := map[string]string{}, map[string]string{}
			for i := 0; i < n; i++ {
				if i == n/2 {
					snap = rdSnapshot(t, db)
					snapModel = maps.Clone(model)
					rdDeleteRange(t, db, rdKey(lo, long), rdKey(hi, long))
					for j := lo; j < hi; j++ {
						delete(model, rdKey(j, long))
					}
				}
				ldbSet(t, db, rdKey(i, long), "val")
				model[rdKey(i, long)] = "val"
			}
			if ldbTables(db) < 2 {
				t.Fatalf("%d tables, want several", ldbTables(db))
			}
			rdCheck(t, db, model, []string{rdKey(lo, long), rdKey(n/2-1, long)}, "DB")
			rdCheck(t, snap, snapModel, []string{rdKey(n/2, long)}, "snapshot")
			ldbCompact(t, db, "", "")
			rdCheck(t, db, model, []string{rdKey(lo, long)}, "DB compacted")
			rdCheck(t, snap, snapModel, []string{rdKey(n/2, long)}, "snapshot compacted")
		})
	}
}

// TestRocksDB_RangeDel_TailingIterator ports
// TailingIteratorRangeTombstoneUnsupported: RocksDB refuses tailing
// iterators over range tombstones; bloomkv's Refresh is the tailing read,
// and must apply the tombstones written since, wherever they and the keys
// are (memtable, L0, the bottom).
func TestRocksDB_RangeDel_TailingIterator(t *testing.T) {
	db, _ := rdOpen(t, nil)
	ldbSet(t, db, "key", "val")
	it, err := db.NewIter(nil)
	must1(t, err)
	defer it.Close()
	steps := []func(){
		func() { rdDeleteRange(t, db, "a", "z") },
		func() { ldbSet(t, db, "key", "v2"); ldbFlush(t, db) },
		func() { ldbCompact(t, db, "", ""); rdDeleteRange(t, db, "k", "l") },
		func() { ldbSet(t, db, "key", "v3"); ldbCompact(t, db, "", "") },
	}
	want := []string{"", "key=v2", "", "key=v3"}
	for i, step := range steps {
		step()
		must1(t, it.Refresh())
		var got string
		if it.First() {
			got = string(it.Key()) + "=" + string(it.Value())
		}
		if it.Next() || got != want[i] {
			t.Fatalf("step %d: refreshed iterator shows %q (more: %v), want %q", i, got, it.Valid(), want[i])
		}
	}
}

// rdPrefixComparer is bytewise order with a fixed 8-byte prefix, as
// RocksDB's NewFixedPrefixTransform(8).
func rdPrefixComparer() *sstable.Comparer {
	c := *sstable.DefaultComparer
	c.Split, c.SplitName = func(k []byte) int { return min(len(k), 8) }, "rocksdb.fixed8"
	return &c
}

// TestRocksDB_RangeDel_MemtableBloomFilter ports MemtableBloomFilter (and
// Pebble's prefix-seek tests over tombstones): keys in a table with
// prefix filters, then a tombstone over all of them in the memtable.
// Get and prefix seeks must apply it though the filters of the table say
// "maybe" and the memtable holds no point key of the prefix; a tombstone
// in a table whose filter rules the prefix out must apply too.
func TestRocksDB_RangeDel_MemtableBloomFilter(t *testing.T) {
	const n = 300
	o := rdOptions()
	o.Comparer = rdPrefixComparer()
	db, _ := rdOpen(t, o)
	for i := 0; i < n; i++ {
		ldbSet(t, db, ldbKey(i), "val")
	}
	ldbFlush(t, db)
	rdDeleteRange(t, db, ldbKey(0), ldbKey(n/2))
	check := func(what string) {
		t.Helper()
		it, err := db.NewIter(&kv.IterOptions{PrefixOnly: true})
		must1(t, err)
		defer it.Close()
		for i := 0; i < n; i++ {
			k := ldbKey(i)
			found := i >= n/2
			want := map[bool]string{true: "val", false: "NOT_FOUND"}[found]
			if got := ldbGet(t, db, k); got != want {
				t.Fatalf("%s: Get(%s) = %s, want %s", what, k, got, want)
			}
			ok := it.SeekPrefixGE([]byte(k))
			if found != (ok && string(it.Key()) == k) {
				t.Fatalf("%s: SeekPrefixGE(%s) = %v at %q", what, k, ok, it.Key())
			}
		}
		must1(t, it.Error())
	}
	check("tombstone in the memtable")
	ldbFlush(t, db)
	check("tombstone in L0")
	ldbCompact(t, db, "", "")
	check("compacted")
	if got := ldbEntries(db); got != n/2 {
		t.Fatalf("entries = %d, want %d", got, n/2)
	}
}

// TestRocksDB_RangeDel_TableEvictedDuringScan ports TableEvictedDuringScan:
// tombstones in many tables below L0, and a table cache (MaxOpenFiles at
// its minimum) too small to keep them open; a scan that opens and closes
// tables as it goes must still apply the tombstones of tables it passed.
func TestRocksDB_RangeDel_TableEvictedDuringScan(t *testing.T) {
	const n, lo, hi, ranges = 25, 0, 7, 5
	o := rdOptions()
	o.MaxOpenFiles = kv.MinMaxOpenFiles
	o.BlockCacheSize = 1 << 10
	o.DisableAutomaticCompactions = false
	o.L0CompactionThreshold, o.L0StopWritesThreshold = 4, 4
	db, _ := rdOpen(t, o)
	snap := rdSnapshot(t, db)                            // the tombstones stay at the bottom
	val := rdValue(rand.New(rand.NewPCG(301, 3)), 2<<10) // two keys a table: more tables than MaxOpenFiles
	for i := 0; i < n; i++ {
		ldbSet(t, db, ldbKey(i), val)
		ldbFlush(t, db)
		if i >= n/2 && i < n/2+ranges {
			rdDeleteRange(t, db, ldbKey(lo), ldbKey(hi))
		}
	}
	ldbCompact(t, db, ldbKey(0), ldbKey(n/2))
	var want []string
	for i := hi; i < n; i++ {
		want = append(want, ldbKey(i))
	}
	for range 2 {
		if got := rdScan(t, db, nil); !slices.Equal(got, want) {
			t.Fatalf("scan = %q, want %q (%s)", got, want, ldbLevels(db))
		}
		ldbCompact(t, db, "", "")
	}
	ldbWant(t, snap, ldbKey(0), "NOT_FOUND")
	if ldbTables(db) <= kv.MinMaxOpenFiles {
		t.Fatalf("%d tables (%s), want more than MaxOpenFiles", ldbTables(db), ldbLevels(db))
	}
}

// TestRocksDB_RangeDel_SnapshotPreventsDroppedKeys ports
// SnapshotPreventsDroppedKeys and ...InImmMemTables: a snapshot taken
// before a tombstone sees the key it covers, in the memtable, once
// flushed, and through an iterator made before the flush.
func TestRocksDB_RangeDel_SnapshotPreventsDroppedKeys(t *testing.T) {
	db, _ := rdOpen(t, nil)
	ldbSet(t, db, ldbKey(0), "a")
	snap := rdSnapshot(t, db)
	rdDeleteRange(t, db, ldbKey(0), ldbKey(10))
	it, err := snap.NewIter(nil)
	must1(t, err)
	defer it.Close()
	ldbFlush(t, db)
	if !it.First() || string(it.Key()) != ldbKey(0) || it.Next() {
		t.Fatalf("iterator made before the flush: valid %v at %q", it.Valid(), it.Key())
	}
	if got := rdScan(t, snap, nil); !slices.Equal(got, []string{ldbKey(0)}) {
		t.Fatalf("snapshot scan after flush = %q", got)
	}
	ldbCompact(t, db, "", "")
	ldbWant(t, snap, ldbKey(0), "a")
	ldbWant(t, db, ldbKey(0), "NOT_FOUND")
}
