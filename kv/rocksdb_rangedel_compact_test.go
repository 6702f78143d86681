package kv_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// rdRangeDels waits until the store is idle (its obsolete tables deleted)
// and returns the range tombstones its tables hold, as stored, and the
// number of tables holding any.
func rdRangeDels(t *testing.T, db *kv.DB, fs vfs.FS) (tombstones, tables int) {
	t.Helper()
	must1(t, db.WaitIdle(context.Background()))
	for _, name := range ldbFiles(t, fs) {
		if !strings.HasSuffix(name, ".sst") {
			continue
		}
		f, err := fs.Open(path.Join("db", name))
		must1(t, err)
		r, err := sstable.NewReader(f, sstable.ReaderOptions{FileName: name})
		must1(t, err)
		if n := len(r.RangeDels()); n > 0 {
			tombstones += n
			tables++
		}
		must1(t, r.Close())
	}
	return tombstones, tables
}

// rdValue returns a value of n random bytes.
func rdValue(rng *rand.Rand, n int) string { return ldbRandom(rng, n) }

// TestRocksDB_RangeDel_CompactionRemovesCoveredKeys ports
// CompactionRemovesCoveredKeys: four L0 tables, each after the first
// preceded by a tombstone over the first half of the one before; a full
// compaction leaves L0 empty and drops exactly the covered keys (and the
// tombstones, nothing being older below).
func TestRocksDB_RangeDel_CompactionRemovesCoveredKeys(t *testing.T) {
	const perFile, files = 100, 4
	db, fs := rdOpen(t, nil)
	model := map[string]string{}
	for i := 0; i < files; i++ {
		if i > 0 {
			rdDeleteRange(t, db, ldbKey((i-1)*perFile), ldbKey((i-1)*perFile+perFile/2))
			for j := 0; j < perFile/2; j++ {
				delete(model, ldbKey((i-1)*perFile+j))
			}
		}
		ldbSet(t, db, ldbKey(perFile*files), "val") // in every table: no move
		model[ldbKey(perFile*files)] = "val"
		for j := 0; j < perFile; j++ {
			ldbSet(t, db, ldbKey(i*perFile+j), "val")
			model[ldbKey(i*perFile+j)] = "val"
		}
		ldbFlush(t, db)
	}
	if n := db.Metrics().Levels[0].NumFiles; n != files {
		t.Fatalf("L0 tables = %d, want %d", n, files)
	}
	rdCheck(t, db, model, []string{ldbKey(0), ldbKey(perFile + 1)}, "before compaction")
	ldbCompact(t, db, "", "")
	if n := db.Metrics().Levels[0].NumFiles; n != 0 {
		t.Fatalf("L0 tables after compaction = %d", n)
	}
	if got, want := ldbEntries(db), int64(len(model)); got != want {
		t.Fatalf("entries after compaction = %d, want %d (the covered keys dropped)", got, want)
	}
	if n, _ := rdRangeDels(t, db, fs); n != 0 {
		t.Fatalf("%d range tombstones kept at the bottom with no snapshot", n)
	}
	rdCheck(t, db, model, []string{ldbKey(0), ldbKey(perFile + 1)}, "after compaction")
}

// TestRocksDB_RangeDel_ObsoleteTombstoneCleanup ports
// ObsoleteTombstoneCleanup: a compaction to the bottom drops a tombstone
// older than every snapshot and keeps the one a snapshot still needs;
// once that snapshot is closed, the next compaction drops it too.
func TestRocksDB_RangeDel_ObsoleteTombstoneCleanup(t *testing.T) {
	db, fs := rdOpen(t, nil)
	rdDeleteRange(t, db, "dr1", "dr10") // obsolete after compaction
	ldbSet(t, db, "key", "val")
	ldbFlush(t, db)
	snap := db.NewSnapshot()
	rdDeleteRange(t, db, "dr2", "dr20") // a snapshot protects it
	ldbSet(t, db, "key", "val2")
	ldbFlush(t, db)
	ldbCompact(t, db, "", "")
	if n, tables := rdRangeDels(t, db, fs); n != 1 || tables != 1 {
		t.Fatalf("range tombstones kept = %d in %d tables, want 1 in 1", n, tables)
	}
	if n := ldbTables(db); n != 1 {
		t.Fatalf("tables = %d (%s), want 1", n, ldbLevels(db))
	}
	ldbWant(t, snap, "key", "val")
	must1(t, snap.Close())
	ldbCompact(t, db, "", "")
	if n, _ := rdRangeDels(t, db, fs); n != 0 {
		t.Fatalf("range tombstones kept = %d with no snapshot, want 0", n)
	}
	ldbWant(t, db, "key", "val2")
}

// TestRocksDB_RangeDel_CompactionOutputFiles ports
// CompactionOutputFilesExactlyFilled and MaxCompactionBytesCutsOutputFiles:
// under a snapshot, a tombstone spanning the whole key range goes into
// every output table of a compaction that cuts many; the outputs must
// not overlap (the store checks its invariants) and every read stays
// right, before and after the snapshot is closed and the tombstone
// compacted away.
func TestRocksDB_RangeDel_CompactionOutputFiles(t *testing.T) {
	for _, long := range []bool{false, true} {
		t.Run(fmt.Sprintf("long=%v", long), func(t *testing.T) {
			const files, perFile = 4, 16
			rng := rand.New(rand.NewPCG(301, 0))
			db, fs := rdOpen(t, nil)
			snap := db.NewSnapshot()
			rdDeleteRange(t, db, rdKey(0, long), rdKey(files*perFile-1, long))
			model := map[string]string{}
			for i := 0; i < files; i++ {
				for j := 0; j < perFile; j++ {
					k := rdKey(i*perFile+j, long)
					model[k] = rdValue(rng, 1<<10)
					ldbSet(t, db, k, model[k])
				}
				ldbFlush(t, db)
			}
			ldbCompact(t, db, "", "")
			if n := ldbTables(db); n < 2 {
				t.Fatalf("compaction wrote %d tables, want several", n)
			}
			if _, tables := rdRangeDels(t, db, fs); tables < 2 {
				t.Fatalf("%d tables hold the tombstone, want every output (%d)", tables, ldbTables(db))
			}
			rdCheck(t, db, model, nil, "DB under the snapshot")
			rdCheck(t, snap, map[string]string{}, []string{rdKey(0, long)}, "snapshot")
			must1(t, snap.Close())
			ldbCompact(t, db, "", "")
			if n, _ := rdRangeDels(t, db, fs); n != 0 {
				t.Fatalf("%d tombstones left with no snapshot", n)
			}
			if got := ldbEntries(db); got != int64(len(model)) {
				t.Fatalf("entries = %d, want %d", got, len(model))
			}
			rdCheck(t, db, model, nil, "DB after the last compaction")
		})
	}
}

// TestRocksDB_RangeDel_OverlappedTombstones ports OverlappedTombstones
// (and OverlappedKeys): keys over several bottom tables, then a tombstone
// over all but the first; a full compaction leaves the first key alone,
// in one table.
func TestRocksDB_RangeDel_OverlappedTombstones(t *testing.T) {
	const n = 8
	rng := rand.New(rand.NewPCG(301, 1))
	db, _ := rdOpen(t, nil)
	v0 := rdValue(rng, 3<<10)
	ldbSet(t, db, ldbKey(0), v0)
	for i := 1; i < n; i++ {
		ldbSet(t, db, ldbKey(i), rdValue(rng, 3<<10))
	}
	ldbCompact(t, db, "", "")
	if got := ldbTables(db); got < 2 {
		t.Fatalf("tables = %d, want several", got)
	}
	rdDeleteRange(t, db, ldbKey(1), ldbKey(n+1))
	ldbFlush(t, db)
	ldbCompact(t, db, "", "")
	if got := ldbTables(db); got != 1 || ldbEntries(db) != 1 {
		t.Fatalf("tables %d, entries %d; want 1 and 1", got, ldbEntries(db))
	}
	rdCheck(t, db, map[string]string{ldbKey(0): v0}, []string{ldbKey(1), ldbKey(n - 1)}, "after compaction")
	if size, err := db.EstimateDiskUsage([]byte(ldbKey(1)), []byte(ldbKey(n))); err != nil || size > 0 {
		t.Fatalf("EstimateDiskUsage of the deleted range = %d, %v; want 0", size, err)
	}
}

// TestRocksDB_RangeDel_RangeTombstoneEndKeyAsSstableUpperBound ports
// RangeTombstoneEndKeyAsSstableUpperBound: a tombstone [k0, k4) under a
// snapshot, split over the tables of a compaction's output, each bounded
// by where the tombstone was cut; compacting the tables one part at a
// time must not make the key at a table's boundary (k2) disappear, nor
// leave overlapping tables.
func TestRocksDB_RangeDel_RangeTombstoneEndKeyAsSstableUpperBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(301, 2))
	db, _ := rdOpen(t, nil)
	ldbSet(t, db, ldbKey(0), "")
	ldbCompact(t, db, "", "")
	snap := rdSnapshot(t, db)
	rdDeleteRange(t, db, ldbKey(0), ldbKey(4))
	value := rdValue(rng, 4<<10)
	model := map[string]string{}
	for j := 0; j < 2; j++ {
		for _, k := range []string{ldbKey(j), ldbKey(3 - j)} {
			ldbSet(t, db, k, value)
			model[k] = value
		}
		ldbFlush(t, db)
	}
	check := func(what string) {
		t.Helper()
		rdCheck(t, db, model, []string{ldbKey(4)}, what)
		rdCheck(t, snap, map[string]string{ldbKey(0): ""}, []string{ldbKey(2)}, what+", snapshot")
	}
	check("in L0")
	ldbCompact(t, db, ldbKey(3), "")
	check("after compacting from k3")
	ldbCompact(t, db, ldbKey(0), ldbKey(0))
	check("after compacting k0")
	ldbCompact(t, db, "", "")
	check("after compacting all")
}

// TestRocksDB_RangeDel_UnorderedTombstones ports UnorderedTombstones:
// tombstones [b, c) and, after a snapshot, [a, b) flushed together over a
// key a in a lower table: a stays deleted, before and after compactions.
func TestRocksDB_RangeDel_UnorderedTombstones(t *testing.T) {
	db, _ := rdOpen(t, nil)
	ldbSet(t, db, "a", "a")
	ldbCompact(t, db, "", "")
	rdDeleteRange(t, db, "b", "c")
	snap := db.NewSnapshot()
	rdDeleteRange(t, db, "a", "b")
	ldbFlush(t, db)
	must1(t, snap.Close())
	if n := db.Metrics().Levels[0].NumFiles; n != 1 {
		t.Fatalf("L0 tables = %d, want 1", n)
	}
	ldbWant(t, db, "a", "NOT_FOUND")
	ldbCompact(t, db, "a", "a")
	ldbWant(t, db, "a", "NOT_FOUND")
	if n := ldbEntries(db); n != 0 {
		t.Fatalf("entries after compaction = %d, want 0", n)
	}
}
