package kv_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// pcReopen opens the store in fs with o, or returns nil when Open refuses
// it with a corruption naming file (which bloomkv may find at Open, where
// LevelDB finds it at the read).
func pcReopen(t *testing.T, fs vfs.FS, o *kv.Options, file string) *kv.DB {
	t.Helper()
	opts := kv.Options{}
	if o != nil {
		opts = *o
	}
	opts.FS = fs
	db, err := kv.Open("db", &opts)
	if err != nil {
		pcWantCorruption(t, "Open", err, file)
		t.Logf("Open refused the store: %v", err)
		return nil
	}
	return db
}

// pcScanDamaged scans db, which holds keys 0..n-1 of Build, and fails the
// test unless the scan gives right keys and values and either all n or an
// error naming file as corruption.
func pcScanDamaged(t *testing.T, db *kv.DB, n, size int, file string) {
	t.Helper()
	c, err := pcScan(t, db, size)
	if err != nil {
		pcWantCorruption(t, "scan", err, file)
	} else if c != n {
		t.Fatalf("scan: %d keys and no error, want %d", c, n)
	}
}

// TestPortCorruption_TableFile ports TableFile (LevelDB, RocksDB) and
// goleveldb's CorruptDB_Table: 100 keys compacted into one table, one
// byte of its first data block damaged. LevelDB's reads skip the block
// (90 to 99 keys read); bloomkv's give the keys of the other blocks
// right and refuse those of the damaged one, and the scan, with a
// corruption naming the table. A compaction over it fails so, and stops
// writes (a failed compaction does); reads go on. TableFileRepair is not
// ported: bloomkv has no repair.
func TestPortCorruption_TableFile(t *testing.T) {
	const n, size = 100, 1000
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	pcBuild(t, db, 0, n, size)
	ldbFlush(t, db)
	ldbCompact(t, db, "", "")
	ldbClose(t, db)
	table := pcFile(t, fs, ".sst")
	pcCorrupt(t, fs, table, 100, 1)
	if db = pcReopen(t, fs, nil, table); db == nil {
		return
	}
	if c := pcGets(t, db, 0, n, size, table); c < 90 || c > 99 {
		t.Fatalf("%d of %d keys read, want 90..99 (the damaged block's lost)", c, n)
	}
	pcScanDamaged(t, db, n, size, table)
	pcWantCorruption(t, "Compact", db.Compact(nil, nil), table)
	if err := db.Set([]byte("x"), []byte("y"), kv.Sync); err == nil {
		t.Fatal("a write succeeded after a failed compaction")
	}
	if c := pcGets(t, db, 0, n, size, table); c < 90 {
		t.Fatalf("after the failed compaction, %d keys read", c)
	}
	db.Close()
}

// TestPortCorruption_TableFileIndexData ports TableFileIndexData (LevelDB,
// RocksDB) and goleveldb's CorruptDB_TableIndex: keys over several
// tables, 500 bytes near the end of the last one damaged (its index and
// what follows). LevelDB reads at least half the keys; bloomkv must give
// those of the other tables right, and refuse those of the damaged one
// (or the store, at Open) with a corruption naming it.
func TestPortCorruption_TableFileIndexData(t *testing.T) {
	n, size := 10000, 100
	if testing.Short() {
		n = 3000
	}
	fs := vfs.NewMem()
	o := kv.FullSizeMemTables(&kv.Options{MemTableSize: 256 << 10, TargetFileSize: 64 << 10})
	db := ldbOpen(t, fs, o)
	pcBuild(t, db, 0, n, size)
	ldbFlush(t, db)
	ldbCompact(t, db, "", "")
	if ldbTables(db) < 4 {
		t.Fatalf("%d tables (%s), want several", ldbTables(db), ldbLevels(db))
	}
	ldbClose(t, db)
	table := pcFile(t, fs, ".sst")
	pcCorrupt(t, fs, table, -2000, 500)
	if db = pcReopen(t, fs, o, table); db == nil {
		return
	}
	if c := pcGets(t, db, 0, n, size, table); c < n/2 || c == n {
		t.Fatalf("%d of %d keys read, want half at least, and not all", c, n)
	}
	pcScanDamaged(t, db, n, size, table)
	db.Close()
}

// TestPortCorruption_CompactionInputError ports CompactionInputError
// (LevelDB, RocksDB) and goleveldb's CorruptDB_CompactionInputError: a
// flushed table of 10 keys with its first block damaged, then 10,000
// writes (Build again from key 0) to force compactions. LevelDB's
// compaction drops the damaged block and all 10,000 keys read. bloomkv's
// compaction fails with a corruption naming the table, which stops
// writes; every acknowledged write then reads right (the rewritten keys
// hide the damaged ones), in the store as in a reopen of it.
func TestPortCorruption_CompactionInputError(t *testing.T) {
	const size = 100
	n := 10000
	if testing.Short() {
		n = 3000
	}
	fs := vfs.NewMem()
	o := kv.FullSizeMemTables(&kv.Options{MemTableSize: 32 << 10, L0CompactionThreshold: 2})
	db := ldbOpen(t, fs, o)
	pcBuild(t, db, 0, 10, size)
	ldbFlush(t, db)
	ldbClose(t, db)
	table := pcFile(t, fs, ".sst")
	pcCorrupt(t, fs, table, 100, 1)
	if db = pcReopen(t, fs, o, table); db == nil {
		return
	}
	if c := pcGets(t, db, 0, 10, size, table); c > 9 {
		t.Fatalf("%d of 10 keys read from the damaged table", c)
	}
	acked := 0
	var werr error
	for ; acked < n; acked++ {
		if werr = db.Set([]byte(pcKey(acked)), []byte(pcValue(acked, size)), kv.NoSync); werr != nil {
			break
		}
	}
	if werr == nil {
		werr = db.Compact(nil, nil)
	}
	t.Logf("after %d writes: %v", acked, werr)
	pcWantCorruption(t, fmt.Sprintf("after %d writes", acked), werr, table)
	check := func(db *kv.DB, what string) {
		t.Helper()
		if c := pcGets(t, db, 0, acked, size, ".sst"); c != acked {
			t.Fatalf("%s: %d of %d acknowledged keys read", what, c, acked)
		}
	}
	check(db, "after the failure")
	if err := db.Close(); err == nil {
		t.Fatal("Close reported no failure")
	}
	db = ldbOpen(t, fs, o)
	check(db, "reopened")
	db.Close()
}

// TestPortCorruption_CompactionInputErrorParanoid ports
// CompactionInputErrorParanoid (LevelDB, RocksDB) and goleveldb's
// CorruptDB_CompactionInputErrorStrict: two L0 tables, each with a block
// damaged; compacting them fails with a corruption naming one, and the
// next write is refused. bloomkv is always paranoid.
func TestPortCorruption_CompactionInputErrorParanoid(t *testing.T) {
	const size = 1000
	fs := vfs.NewMem()
	o := &kv.Options{DisableAutomaticCompactions: true}
	for range 2 {
		db := ldbOpen(t, fs, o)
		pcBuild(t, db, 0, 10, size)
		ldbFlush(t, db)
		ldbClose(t, db)
		pcCorrupt(t, fs, pcFile(t, fs, ".sst"), 100, 1)
	}
	db := ldbOpen(t, fs, o)
	pcWantCorruption(t, "Compact", db.Compact(nil, nil), ".sst")
	if err := db.Set([]byte(pcKey(5)), []byte(pcValue(5, size)), kv.Sync); err == nil {
		t.Fatal("a write succeeded after a failed compaction")
	}
	db.Close()
}

// TestPortCorruption_UnrelatedKeys ports UnrelatedKeys (LevelDB, RocksDB)
// and goleveldb's CorruptDB_UnrelatedKeys: with a flushed table damaged,
// a key it does not hold is written, read, flushed and read again.
func TestPortCorruption_UnrelatedKeys(t *testing.T) {
	const size = 1000
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	pcBuild(t, db, 0, 10, size)
	ldbFlush(t, db)
	ldbClose(t, db)
	table := pcFile(t, fs, ".sst")
	pcCorrupt(t, fs, table, 100, 1)
	if db = pcReopen(t, fs, nil, table); db == nil {
		return
	}
	k, v := pcKey(1000), pcValue(1000, size)
	ldbSet(t, db, k, v)
	ldbWant(t, db, k, v)
	ldbFlush(t, db)
	ldbWant(t, db, k, v)
	pcGets(t, db, 0, 10, size, table)
	db = ldbReopen(t, db, fs, nil)
	ldbWant(t, db, k, v)
	ldbClose(t, db)
}

// TestPortCorruption_MissingTableFiles ports goleveldb's
// CorruptDB_MissingTableFiles: two tables, one deleted; Open must refuse
// the store (goleveldb's openAssert(false)), or every read of the lost
// table's keys must fail with a corruption naming it, never read as not
// found.
func TestPortCorruption_MissingTableFiles(t *testing.T) {
	for _, which := range []int{0, 1} {
		t.Run(fmt.Sprintf("table%d", which), func(t *testing.T) {
			fs := vfs.NewMem()
			db := ldbOpen(t, fs, nil)
			ldbSet(t, db, "a", "v1")
			ldbSet(t, db, "b", "v2")
			ldbFlush(t, db)
			ldbSet(t, db, "c", "v3")
			ldbSet(t, db, "d", "v4")
			ldbFlush(t, db)
			ldbClose(t, db)
			var tables []string
			for _, n := range ldbFiles(t, fs) {
				if len(n) > 4 && n[len(n)-4:] == ".sst" {
					tables = append(tables, n)
				}
			}
			if len(tables) != 2 {
				t.Fatalf("tables %v, want 2", tables)
			}
			if err := fs.Remove("db/" + tables[which]); err != nil {
				t.Fatal(err)
			}
			if db = pcReopen(t, fs, nil, tables[which]); db == nil {
				return
			}
			defer db.Close()
			for _, k := range []string{"a", "b", "c", "d"} {
				if _, err := db.Get([]byte(k)); err != nil && !errors.Is(err, kv.ErrCorruption) {
					t.Errorf("Get(%s): %v, want a value or a corruption naming %s", k, err, tables[which])
				} else if errors.Is(err, kv.ErrNotFound) {
					t.Errorf("Get(%s): not found", k)
				}
			}
		})
	}
}

// TestPortCorruption_RangeDeletionCorrupted ports RocksDB's
// RangeDeletionCorrupted: a table's range-deletion block damaged; the
// reads that reach the table fail with a corruption naming it (or Open
// refuses the store), never read keys the tombstone deletes.
func TestPortCorruption_RangeDeletionCorrupted(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, &kv.Options{DisableAutomaticCompactions: true})
	ldbSet(t, db, "a", "old")
	ldbSet(t, db, "b", "old")
	ldbFlush(t, db)
	if err := db.DeleteRange([]byte("a"), []byte("c"), kv.Sync); err != nil {
		t.Fatal(err)
	}
	ldbSet(t, db, "d", "new")
	ldbFlush(t, db)
	ldbClose(t, db)
	table := pcFile(t, fs, ".sst")
	l := pcLayout(t, fs, table)
	if l.RangeDel.Length == 0 {
		t.Fatalf("%s holds no range-deletion block", table)
	}
	for off := range int(l.RangeDel.Length) + 5 {
		damaged := copyDir(t, fs, "db")
		pcCorrupt(t, damaged, table, int(l.RangeDel.Offset)+off, 1)
		db := pcReopen(t, damaged, nil, table)
		if db == nil {
			continue
		}
		for _, k := range []string{"a", "b", "d"} {
			v, err := db.Get([]byte(k))
			switch {
			case err != nil && !errors.Is(err, kv.ErrNotFound):
				pcWantCorruption(t, "Get("+k+")", err, table)
			case k != "d" && err == nil:
				t.Fatalf("byte %d damaged: Get(%s) = %q, deleted", off, k, v)
			case k == "d" && string(v) != "new":
				t.Fatalf("byte %d damaged: Get(d) = %q, %v", off, v, err)
			}
		}
		db.Close()
	}
}

// pcLayout returns the layout of the store's table name.
func pcLayout(t *testing.T, fs vfs.FS, name string) *sstable.Layout {
	t.Helper()
	f, err := fs.Open("db/" + name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sstable.NewReader(f, sstable.ReaderOptions{FileName: name})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestPortCorruption_TruncatedTable cuts the newest of two tables at each
// tenth of its length (RocksDB's TableFileWrongSize, cut): Open refuses
// the store naming it, or the keys of the other table read right and
// those of the cut one right or refused with a corruption naming it.
func TestPortCorruption_TruncatedTable(t *testing.T) {
	const n, size = 200, 100
	fs := vfs.NewMem()
	o := &kv.Options{DisableAutomaticCompactions: true, BlockSize: 1024}
	db := ldbOpen(t, fs, o)
	pcBuild(t, db, 0, n, size)
	ldbFlush(t, db)
	pcBuild(t, db, n, 2*n, size)
	ldbFlush(t, db)
	ldbClose(t, db)
	table := pcFile(t, fs, ".sst")
	length := len(readFSFile(t, fs, "db/"+table))
	for tenth := range 10 {
		damaged := copyDir(t, fs, "db")
		pcCut(t, damaged, table, length*tenth/10)
		db := pcReopen(t, damaged, o, table)
		if db == nil {
			continue
		}
		if c := pcGets(t, db, 0, n, size, table); c != n {
			t.Fatalf("cut at %d/10: %d of the other table's %d keys read", tenth, c, n)
		}
		if c := pcGets(t, db, n, 2*n, size, table); c == n {
			t.Fatalf("cut at %d/10: every key of the cut table read", tenth)
		}
		pcScanDamaged(t, db, 2*n, size, table)
		db.Close()
	}
}
