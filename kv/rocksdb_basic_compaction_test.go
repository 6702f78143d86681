package kv_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestRocksDBBasic_CompactBetweenSnapshots ports
// DBTest.CompactBetweenSnapshots: of six versions of a key written around
// two snapshots, a flush and a full compaction keep exactly the newest
// and the newest each snapshot sees; once the first snapshot is released, and
// then the second, compactions drop what only it kept. Run for a short
// key and for keys of 127 to 300 bytes, whose versions share a prefix
// longer than the bytes left near a block's end.
func TestRocksDBBasic_CompactBetweenSnapshots(t *testing.T) {
	for _, n := range []int{3, 127, 128, 200, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rbCompactBetweenSnapshots(t, strings.Repeat("f", n-3)+"foo")
		})
	}
}

func rbCompactBetweenSnapshots(t *testing.T, key string) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{DisableAutomaticCompactions: true, BlockSize: 256})
	defer ldbClose(t, db)
	ldbSet(t, db, key, "first")
	s1 := db.NewSnapshot()
	for _, v := range []string{"second", "third", "fourth"} {
		ldbSet(t, db, key, v)
	}
	s2 := db.NewSnapshot()
	ldbSet(t, db, key, "fifth")
	ldbSet(t, db, key, "sixth")
	ldbFlush(t, db)
	entries := func(want int64, what string) {
		t.Helper()
		if got := ldbEntries(db); got != want {
			t.Fatalf("%s: %d versions stored, want %d", what, got, want)
		}
	}
	// RocksDB counts six versions in the memtable; bloomkv's flush, as
	// RocksDB's and Pebble's, already drops those no snapshot sees.
	entries(3, "flushed under two snapshots")
	ldbCompact(t, db, "", "")
	entries(3, "compacted under two snapshots")
	ldbWant(t, db, key, "sixth")
	ldbWant(t, s2, key, "fourth")
	ldbWant(t, s1, key, "first")
	rdCheck(t, s1, map[string]string{key: "first"}, nil, "snapshot 1")
	rdCheck(t, s2, map[string]string{key: "fourth"}, nil, "snapshot 2")
	must1(t, s1.Close())
	ldbCompact(t, db, "", "")
	entries(2, "compacted under snapshot 2")
	ldbWant(t, s2, key, "fourth")
	must1(t, s2.Close())
	ldbCompact(t, db, "", "")
	entries(1, "compacted under no snapshot")
	rdCheck(t, db, map[string]string{key: "sixth"}, nil, "no snapshot")
}

// TestRocksDBBasic_CompactionTrigger ports
// DBCompactionTestWithParam.CompactionTrigger: L0 tables that overlap
// pile up without a compaction until their count reaches
// L0CompactionThreshold (level0_file_num_compaction_trigger); the table
// that reaches it starts a compaction that empties L0, and every key reads
// its last value.
func TestRocksDBBasic_CompactionTrigger(t *testing.T) {
	const trigger = 4
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{L0CompactionThreshold: trigger, DisableL0Settling: true})
	defer ldbClose(t, db)
	rng := rand.New(rand.NewPCG(301, 2))
	model := map[string]string{}
	for f := range trigger {
		for i := range 100 {
			k := ldbKey(i * 3)
			model[k] = ldbRandom(rng, 200)
			ldbSet(t, db, k, model[k])
		}
		ldbFlush(t, db)
		waitLDB(t, db)
		l0 := db.Metrics().Levels[0].NumFiles
		if f < trigger-1 && (l0 != f+1 || db.Metrics().Compact.Count != 0) {
			t.Fatalf("after %d flushes: levels %s, %d compactions; want %d L0 tables and none",
				f+1, ldbLevels(db), db.Metrics().Compact.Count, f+1)
		}
		if f == trigger-1 && l0 != 0 {
			t.Fatalf("after %d flushes: levels %s, want L0 compacted", f+1, ldbLevels(db))
		}
	}
	rdCheck(t, db, model, []string{ldbKey(1)}, "compacted")
}

// TestRocksDBBasic_DisableAutoCompaction ports DBCompactionTest's
// DisableAutoCompaction and ManualAutoRace: with automatic compactions
// off, flushes far past the L0 thresholds neither compact nor stall the
// writers; a manual Compact of the whole range empties L0.
func TestRocksDBBasic_DisableAutoCompaction(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{DisableAutomaticCompactions: true,
		L0CompactionThreshold: 2, L0StopWritesThreshold: 4})
	defer ldbClose(t, db)
	model := map[string]string{}
	for f := range 12 {
		for i := range 20 {
			k := ldbKey(i)
			model[k] = fmt.Sprintf("v%d-%d", f, i)
			ldbSet(t, db, k, model[k])
		}
		ldbFlush(t, db)
	}
	waitLDB(t, db)
	if m := db.Metrics(); m.Levels[0].NumFiles != 12 || m.Compact.Count != 0 {
		t.Fatalf("levels %s, %d compactions; want 12 L0 tables and none", ldbLevels(db), m.Compact.Count)
	}
	ldbCompact(t, db, "", "")
	if m := db.Metrics(); m.Levels[0].NumFiles != 0 {
		t.Fatalf("levels %s after Compact, want L0 empty", ldbLevels(db))
	}
	rdCheck(t, db, model, nil, "compacted")
}

// TestRocksDBBasic_ManualCompactionRanges ports the range cases of
// DBCompactionTestWithParam.ManualCompaction and of DBTest's CompactRange
// tests: Compact's end is inclusive, so a range ending exactly at a
// table's smallest key, or starting exactly at its largest, takes that
// table; a range between tables takes none; and one over part of the
// tables leaves the others in L0.
func TestRocksDBBasic_ManualCompactionRanges(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{DisableAutomaticCompactions: true})
	defer ldbClose(t, db)
	bounds := [][2]string{{"c", "e"}, {"g", "i"}, {"k", "m"}, {"o", "q"}}
	for _, b := range bounds { // four disjoint L0 tables
		ldbSet(t, db, b[0], "lo-"+b[0])
		ldbSet(t, db, b[1], "hi-"+b[1])
		ldbFlush(t, db)
	}
	l0 := func(want int, what string) {
		t.Helper()
		if got := db.Metrics().Levels[0].NumFiles; got != want {
			t.Fatalf("%s: %d L0 tables (%s), want %d", what, got, ldbLevels(db), want)
		}
	}
	l0(4, "flushed")
	ldbCompact(t, db, "a", "b")
	ldbCompact(t, db, "e0", "f")
	ldbCompact(t, db, "r", "z")
	l0(4, "ranges between and around the tables")
	ldbCompact(t, db, "a", "c") // ends at table 1's smallest key
	l0(3, "range ending at a table's smallest key")
	ldbCompact(t, db, "i", "j") // starts at table 2's largest key
	l0(2, "range starting at a table's largest key")
	ldbCompact(t, db, "m", "o") // both of the others, at one key each
	l0(0, "range touching the last two tables at their bounds")
	for _, b := range bounds {
		ldbWant(t, db, b[0], "lo-"+b[0])
		ldbWant(t, db, b[1], "hi-"+b[1])
	}
}

// TestRocksDBBasic_CompactionDeletionTrigger ports
// DBCompactionTestWithParam.CompactionDeletionTrigger (and
// CompactionDeletionTriggerReopen): after every key is deleted, a full
// compaction reclaims the space: the tables shrink far below their size
// with the data, as EstimateDiskUsage and Metrics report, also across a
// reopen.
func TestRocksDBBasic_CompactionDeletionTrigger(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{MemTableSize: 64 << 10, TargetFileSize: 16 << 10}
	db := ldbOpen(t, fs, o)
	rng := rand.New(rand.NewPCG(301, 3))
	n := 2000
	if testing.Short() {
		n = 600
	}
	for i := range n {
		ldbSet(t, db, ldbKey(i), ldbRandom(rng, 200))
	}
	ldbCompact(t, db, "", "")
	full := rbDiskUsage(t, db)
	if full < uint64(n*200) {
		t.Fatalf("EstimateDiskUsage %d with %d values of 200 bytes", full, n)
	}
	for i := range n {
		ldbDelete(t, db, ldbKey(i))
	}
	db = ldbReopen(t, db, fs, o)
	defer ldbClose(t, db)
	ldbCompact(t, db, "", "")
	if after := rbDiskUsage(t, db); after > full/10 {
		t.Fatalf("EstimateDiskUsage %d after deleting all and compacting, %d before", after, full)
	}
	if keys := ldbEntries(db); keys != 0 {
		t.Fatalf("%d entries left after deleting all and compacting", keys)
	}
	if s := rdScan(t, db, nil); len(s) != 0 {
		t.Fatalf("keys left: %d", len(s))
	}
}

// rbDiskUsage returns the store's table bytes, checking that
// EstimateDiskUsage over all keys agrees with Metrics.
func rbDiskUsage(t *testing.T, db *kv.DB) uint64 {
	t.Helper()
	est, err := db.EstimateDiskUsage(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, l := range db.Metrics().Levels {
		size += l.Size
	}
	if est != uint64(size) {
		t.Fatalf("EstimateDiskUsage(nil, nil) = %d, Metrics' table bytes %d", est, size)
	}
	return est
}

// TestRocksDBBasic_SnapshotFiles ports DBTest.SnapshotFiles, whose
// GetLiveFiles copy is bloomkv's Checkpoint: the copy, taken with writes
// in tables and in the memtable, opens as a store holding exactly the
// writes made before it; later writes to the store do not reach it; a
// second Checkpoint to the same directory is refused.
func TestRocksDBBasic_SnapshotFiles(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, &kv.Options{MemTableSize: 16 << 10})
	defer ldbClose(t, db)
	rng := rand.New(rand.NewPCG(301, 4))
	model := map[string]string{}
	for i := range 80 {
		k := rdKey(i, i%2 == 0)
		model[k] = ldbRandom(rng, 100_000/80)
		ldbSet(t, db, k, model[k])
	}
	waitLDB(t, db)
	ldbSet(t, db, "mem", "in the memtable") // not flushed
	model["mem"] = "in the memtable"
	must1(t, db.Checkpoint("snap"))
	if err := db.Checkpoint("snap"); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second Checkpoint to the same directory: %v", err)
	}
	ldbSet(t, db, "after", "x")
	ldbDelete(t, db, rdKey(0, true))
	ldbCompact(t, db, "", "")
	cp, err := kv.Open("snap", &kv.Options{FS: fs, ErrorIfNotExists: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ldbClose(t, cp)
	rdCheck(t, cp, model, []string{"after"}, "checkpoint")
	ldbWant(t, db, rdKey(0, true), "NOT_FOUND")
}
