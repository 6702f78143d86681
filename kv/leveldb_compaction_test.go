package kv_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestLevelDB_HiddenValuesAreRemoved ports DBTest.HiddenValuesAreRemoved:
// a version a snapshot needs survives a full compaction (the snapshot
// reads it, its bytes stay on disk); once the snapshot is closed, the next
// full compaction removes it, as Metrics' entry count and
// EstimateDiskUsage show.
func TestLevelDB_HiddenValuesAreRemoved(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	rng := rand.New(rand.NewPCG(301, 0))
	big := ldbRandom(rng, 50000)
	ldbSet(t, db, "foo", big)
	ldbSet(t, db, "pastfoo", "v")
	s := db.NewSnapshot()
	ldbSet(t, db, "foo", "tiny")
	ldbSet(t, db, "pastfoo2", "v2")
	ldbFlush(t, db)
	ldbWant(t, db, "foo", "tiny")
	ldbWant(t, s, "foo", big)
	ldbCompact(t, db, "", "")
	ldbWant(t, s, "foo", big)
	if n := ldbEntries(db); n != 4 {
		t.Fatalf("with the snapshot open, tables hold %d entries, want 4 (foo twice)", n)
	}
	if n, _ := db.EstimateDiskUsage(nil, []byte("pastfoo")); n < 50000 {
		t.Fatalf("with the snapshot open, usage to pastfoo = %d, want the big value's 50000 bytes", n)
	}
	must1(t, s.Close())
	ldbCompact(t, db, "", "")
	ldbWant(t, db, "foo", "tiny")
	if n := ldbEntries(db); n != 3 {
		t.Fatalf("after the snapshot closed and a full compaction, tables hold %d entries, want 3 (%s)", n, ldbLevels(db))
	}
	if n, _ := db.EstimateDiskUsage(nil, []byte("pastfoo")); n > 1000 {
		t.Fatalf("after the snapshot closed and a full compaction, usage to pastfoo = %d, want under 1000", n)
	}
}

// TestLevelDB_DeletionMarkers1 ports DBTest.DeletionMarkers1: a tombstone
// written over a version in the bottom level, followed by a new version,
// reads as the new version throughout, and a full compaction leaves only
// it (LevelDB's AllEntriesFor "[ v2 ]", here Metrics' entry count).
func TestLevelDB_DeletionMarkers1(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{DisableAutomaticCompactions: true})
	defer ldbClose(t, db)
	ldbSet(t, db, "foo", "v1")
	ldbCompact(t, db, "", "")
	ldbSet(t, db, "a", "begin")
	ldbSet(t, db, "z", "end")
	ldbFlush(t, db)
	ldbDelete(t, db, "foo")
	ldbSet(t, db, "foo", "v2")
	ldbWant(t, db, "foo", "v2")
	ldbFlush(t, db)
	ldbWant(t, db, "foo", "v2")
	ldbCompact(t, db, "a", "foo") // part of the range first
	ldbWant(t, db, "foo", "v2")
	ldbCompact(t, db, "", "")
	ldbWant(t, db, "foo", "v2")
	if n := ldbEntries(db); n != 3 {
		t.Fatalf("after a full compaction tables hold %d entries, want 3 (a, foo=v2, z)", n)
	}
}

// TestLevelDB_DeletionMarkers2 ports DBTest.DeletionMarkers2: a tombstone
// over a version in the bottom level hides it throughout, and a full
// compaction drops both (LevelDB's AllEntriesFor "[ ]").
func TestLevelDB_DeletionMarkers2(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{DisableAutomaticCompactions: true})
	defer ldbClose(t, db)
	ldbSet(t, db, "foo", "v1")
	ldbCompact(t, db, "", "")
	ldbSet(t, db, "a", "begin")
	ldbSet(t, db, "z", "end")
	ldbFlush(t, db)
	ldbDelete(t, db, "foo")
	ldbFlush(t, db)
	ldbWant(t, db, "foo", "NOT_FOUND")
	ldbCompact(t, db, "a", "foo")
	ldbWant(t, db, "foo", "NOT_FOUND")
	ldbCompact(t, db, "", "")
	ldbWant(t, db, "foo", "NOT_FOUND")
	if n := ldbEntries(db); n != 2 {
		t.Fatalf("after a full compaction tables hold %d entries, want 2 (a, z)", n)
	}
}

// TestLevelDB_BulkInsertDelete ports goleveldb's TestDB_BulkInsertDelete:
// keys written and then all deleted, in rounds, leave nothing after a
// full compaction: no key, no table, no bytes.
func TestLevelDB_BulkInsertDelete(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), ldbSmall(32<<10))
	defer ldbClose(t, db)
	n := 3000
	if testing.Short() {
		n = 1000
	}
	for round := range 3 {
		for i := range n {
			ldbSet(t, db, ldbKey(i), fmt.Sprint(round, strings.Repeat("v", 100)))
		}
		for i := range n {
			ldbDelete(t, db, ldbKey(i))
		}
	}
	ldbCompact(t, db, "", "")
	if got := ldbContents(t, db); got != "" {
		t.Fatalf("contents %s", ldbShort(got))
	}
	if n, tables := ldbEntries(db), ldbTables(db); n != 0 || tables != 0 {
		t.Fatalf("after a full compaction: %d entries in %d tables (%s)", n, tables, ldbLevels(db))
	}
	if n, err := db.EstimateDiskUsage(nil, nil); err != nil || n != 0 {
		t.Fatalf("after a full compaction: usage %d, %v", n, err)
	}
}

// TestLevelDB_UkeyShouldntHopAcrossTable ports goleveldb's
// TestDB_UkeyShouldntHopAcrossTable: many versions of each key, held by
// snapshots, compacted into small tables and blocks, so that one key's
// versions span blocks and tables; each snapshot still reads its version
// of every key, and a scan of it shows each key once.
func TestLevelDB_UkeyShouldntHopAcrossTable(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{
		MemTableSize: 16 << 10, TargetFileSize: 4 << 10, BlockSize: 256,
	})
	defer ldbClose(t, db)
	const keys, versions = 20, 30
	rng := rand.New(rand.NewPCG(301, 0))
	snaps := make([]*kv.Snapshot, versions)
	want := make([]map[string]string, versions)
	for v := range versions {
		want[v] = map[string]string{}
		for k := range keys {
			key := fmt.Sprintf("%s%02d", strings.Repeat("u", 100), k)
			val := fmt.Sprintf("v%d.%s", v, ldbRandom(rng, 50))
			ldbSet(t, db, key, val)
			want[v][key] = val
		}
		snaps[v] = db.NewSnapshot()
	}
	ldbCompact(t, db, "", "")
	if n := ldbTables(db); n < 2 {
		t.Fatalf("%d tables, want the versions spread over several", n)
	}
	for v, s := range snaps {
		ldbCheckModel(t, rng, s, want[v], fmt.Sprintf("snapshot %d", v))
		must1(t, s.Close())
	}
	ldbCompact(t, db, "", "")
	ldbCheckModel(t, rng, db, want[versions-1], "after the snapshots closed")
	if n := ldbEntries(db); n != keys {
		t.Fatalf("after the snapshots closed and a full compaction: %d entries, want %d", n, keys)
	}
}

// TestLevelDB_OverlapInLevel0 ports DBTest.OverlapInLevel0: a flushed
// tombstone whose key lies inside overlapping L0 tables (200..900 and
// 300..500) hides the L0 version of its key, after the flush, after the
// compactions that follow and after a reopen. (The LevelDB bug placed the
// tombstone's table below the L0 table holding the key.)
func TestLevelDB_OverlapInLevel0(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{DisableAutomaticCompactions: true}
	db := ldbOpen(t, fs, o)
	ldbSet(t, db, "100", "v100")
	ldbSet(t, db, "999", "v999")
	ldbCompact(t, db, "", "")
	ldbDelete(t, db, "100")
	ldbDelete(t, db, "999")
	ldbFlush(t, db)
	ldbSet(t, db, "300", "v300")
	ldbSet(t, db, "500", "v500")
	ldbFlush(t, db)
	ldbSet(t, db, "200", "v200")
	ldbSet(t, db, "600", "v600")
	ldbSet(t, db, "900", "v900")
	ldbFlush(t, db)
	ldbDelete(t, db, "600")
	ldbFlush(t, db)
	ldbWant(t, db, "600", "NOT_FOUND")
	ldbCompact(t, db, "", "")
	ldbWant(t, db, "600", "NOT_FOUND")
	db = ldbReopen(t, db, fs, o)
	ldbWant(t, db, "600", "NOT_FOUND")
	if got, want := ldbContents(t, db), "(200->v200)(300->v300)(500->v500)(900->v900)"; got != want {
		t.Fatalf("contents %s, want %s", got, want)
	}
	ldbClose(t, db)
}

// TestLevelDB_L0_CompactionBug_Issue44_a ports
// DBTest.L0_CompactionBug_Issue44_a: writes and deletes spread over many
// reopens, each leaving a small WAL or table, end as "(a->v)", before and
// after background compactions settle.
func TestLevelDB_L0_CompactionBug_Issue44_a(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	db = ldbReopen(t, db, fs, nil)
	ldbSet(t, db, "b", "v")
	db = ldbReopen(t, db, fs, nil)
	ldbDelete(t, db, "b")
	ldbDelete(t, db, "a")
	db = ldbReopen(t, db, fs, nil)
	ldbDelete(t, db, "a")
	db = ldbReopen(t, db, fs, nil)
	ldbSet(t, db, "a", "v")
	db = ldbReopen(t, db, fs, nil)
	db = ldbReopen(t, db, fs, nil)
	if got := ldbContents(t, db); got != "(a->v)" {
		t.Fatalf("contents %s, want (a->v)", got)
	}
	waitLDB(t, db)
	if got := ldbContents(t, db); got != "(a->v)" {
		t.Fatalf("after compactions: contents %s, want (a->v)", got)
	}
	ldbClose(t, db)
}

// TestLevelDB_L0_CompactionBug_Issue44_b ports
// DBTest.L0_CompactionBug_Issue44_b, the same with the empty key.
func TestLevelDB_L0_CompactionBug_Issue44_b(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	reopen := func() { db = ldbReopen(t, db, fs, nil) }
	reopen()
	ldbSet(t, db, "", "")
	reopen()
	ldbDelete(t, db, "e")
	ldbSet(t, db, "", "")
	reopen()
	ldbSet(t, db, "c", "cv")
	reopen()
	ldbSet(t, db, "", "")
	reopen()
	ldbSet(t, db, "", "")
	waitLDB(t, db)
	reopen()
	ldbSet(t, db, "d", "dv")
	reopen()
	ldbSet(t, db, "", "")
	reopen()
	ldbDelete(t, db, "d")
	ldbDelete(t, db, "b")
	reopen()
	if got := ldbContents(t, db); got != "(->)(c->cv)" {
		t.Fatalf("contents %s, want (->)(c->cv)", got)
	}
	waitLDB(t, db)
	if got := ldbContents(t, db); got != "(->)(c->cv)" {
		t.Fatalf("after compactions: contents %s, want (->)(c->cv)", got)
	}
	ldbClose(t, db)
}
