package kv_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// rbShapes are the option sets RocksDB's ChangeOptions loops run its
// tests under, as far as bloomkv has them: defaults, small blocks and
// memtables, static levels, no filters.
func rbShapes() map[string]*kv.Options {
	return map[string]*kv.Options{
		"default":      nil,
		"small-blocks": {BlockSize: 128, MemTableSize: 16 << 10, TargetFileSize: 2 << 10},
		"static":       {StaticLevels: true, LBaseMaxBytes: 8 << 10, TargetFileSize: 2 << 10},
		"no-filters":   {DisableFilters: true, DisableAutomaticCompactions: true},
	}
}

// TestRocksDBBasic_PutDeleteGet ports DBBasicTest.PutDeleteGet (under
// each option set of its ChangeOptions loop): a Delete hides the key in
// the memtable, after a flush, after a compaction and after a reopen.
func TestRocksDBBasic_PutDeleteGet(t *testing.T) {
	for name, o := range rbShapes() {
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMem()
			db := ldbOpen(t, fs, o)
			ldbSet(t, db, "foo", "v1")
			ldbWant(t, db, "foo", "v1")
			ldbSet(t, db, "foo", "v2")
			ldbWant(t, db, "foo", "v2")
			ldbDelete(t, db, "foo")
			ldbWant(t, db, "foo", "NOT_FOUND")
			ldbSet(t, db, "bar", "b")
			ldbFlush(t, db)
			ldbWant(t, db, "foo", "NOT_FOUND")
			ldbCompact(t, db, "", "")
			ldbWant(t, db, "foo", "NOT_FOUND")
			db = ldbReopen(t, db, fs, o)
			defer ldbClose(t, db)
			ldbWant(t, db, "foo", "NOT_FOUND")
			ldbWant(t, db, "bar", "b")
		})
	}
}

// TestRocksDBBasic_EmptyFlush ports DBBasicTest.EmptyFlush: a Flush with
// nothing to flush succeeds and writes no table; a flush of a memtable
// whose only key is set and deleted leaves the key deleted, also after a
// compaction and a reopen.
func TestRocksDBBasic_EmptyFlush(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{DisableAutomaticCompactions: true}
	db := ldbOpen(t, fs, o)
	ldbFlush(t, db)
	if n := ldbTables(db); n != 0 {
		t.Fatalf("empty Flush wrote %d tables", n)
	}
	ldbSet(t, db, "a", "")
	ldbDelete(t, db, "a")
	ldbFlush(t, db)
	ldbWant(t, db, "a", "NOT_FOUND")
	ldbFlush(t, db)
	ldbCompact(t, db, "", "")
	ldbWant(t, db, "a", "NOT_FOUND")
	if n := ldbEntries(db); n != 0 {
		t.Fatalf("a compaction to the bottom kept %d entries of a deleted key", n)
	}
	db = ldbReopen(t, db, fs, o)
	defer ldbClose(t, db)
	ldbWant(t, db, "a", "NOT_FOUND")
	ldbSet(t, db, "b", "")
	ldbFlush(t, db)
	ldbWant(t, db, "b", "") // an empty value is a value
}

// TestRocksDBBasic_FlushMultipleMemtable ports
// DBBasicTest.FlushMultipleMemtable: with several memtables filled and
// waiting (RocksDB: max_write_buffer_number 4, min_write_buffer_number_to_
// merge 3), one Flush writes them all, and every key reads back.
func TestRocksDBBasic_FlushMultipleMemtable(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{MemTableSize: 64 << 10, MemTableStopWritesThreshold: 8,
		DisableAutomaticCompactions: true}
	db := ldbOpen(t, fs, o)
	model := map[string]string{}
	for i := range 300 {
		k := fmt.Sprintf("k%04d", i)
		model[k] = strings.Repeat("v", 500) + k
		ldbSet(t, db, k, model[k])
	}
	ldbFlush(t, db)
	if m := db.Metrics(); m.MemTable.Count > 1 || m.Flush.Count == 0 {
		t.Fatalf("after Flush: %d memtables, %d flushed", m.MemTable.Count, m.Flush.Count)
	}
	rdCheck(t, db, model, []string{"k", "k0300"}, "flushed")
	db = ldbReopen(t, db, fs, o)
	defer ldbClose(t, db)
	rdCheck(t, db, model, nil, "reopened")
}

// TestRocksDBBasic_LevelLimitReopen ports DBTest.LevelLimitReopen and
// DBTest.DBOpen_Change_NumLevels: bloomkv's level count is fixed at seven,
// so the ports reopen a store that has data in deep levels under other
// level shapes (static or dynamic levels, other base-level sizes and
// multipliers, per-level filter options) and check it reads the same and
// compacts on; options naming an eighth level are refused, leaving the
// store as it was.
func TestRocksDBBasic_LevelLimitReopen(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{MemTableSize: 16 << 10, TargetFileSize: 2 << 10, LBaseMaxBytes: 4 << 10,
		LevelMultiplier: 2, StaticLevels: true}
	db := ldbOpen(t, fs, o)
	rng := rand.New(rand.NewPCG(301, 1))
	model := map[string]string{}
	write := func(n int) {
		for range n {
			k := ldbKey(rng.IntN(2000))
			model[k] = ldbRandom(rng, 100)
			ldbSet(t, db, k, model[k])
		}
	}
	write(2000)
	waitLDB(t, db)
	deep := 0
	for l, m := range db.Metrics().Levels {
		if m.NumFiles > 0 {
			deep = l
		}
	}
	if deep < 3 {
		t.Fatalf("data reached only L%d (%s), want deeper levels", deep, ldbLevels(db))
	}
	ldbClose(t, db)

	eight := &kv.Options{Levels: make([]kv.LevelOptions, 8)}
	if db2, err := kv.Open("db", &kv.Options{FS: fs, Levels: eight.Levels}); err == nil {
		db2.Close()
		t.Fatal("Open with eight levels' options succeeded")
	}
	for i, o2 := range []*kv.Options{
		nil,
		{LBaseMaxBytes: 1 << 20, LevelMultiplier: 20},
		{StaticLevels: true, LBaseMaxBytes: 2 << 10, LevelMultiplier: 3, TargetFileSize: 1 << 10},
		{Levels: make([]kv.LevelOptions, 7), DisableFilters: true},
	} {
		db = ldbOpen(t, fs, o2)
		rdCheck(t, db, model, []string{ldbKey(2000)}, fmt.Sprintf("reopen %d", i))
		write(300)
		ldbCompact(t, db, "", "")
		rdCheck(t, db, model, nil, fmt.Sprintf("reopen %d, compacted", i))
		ldbClose(t, db)
	}
}

// TestRocksDBBasic_GetEncountersEmptyLevel ports DBBasicTest's (and
// DBTest's) GetEncountersEmptyLevel, under RocksDB's shape: tables in L0
// and the bottom level with empty levels between; Gets of a key missing
// from all of them, many times over, trigger no error, and a key in each
// is found.
func TestRocksDBBasic_GetEncountersEmptyLevel(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{DisableAutomaticCompactions: true})
	defer ldbClose(t, db)
	ldbSet(t, db, "a", "begin")
	ldbSet(t, db, "z", "end")
	ldbFlush(t, db)
	ldbCompact(t, db, "", "")
	ldbSet(t, db, "a", "begin2")
	ldbSet(t, db, "z", "end2")
	ldbFlush(t, db)
	if l := db.Metrics().Levels; l[0].NumFiles != 1 || l[1].NumFiles+l[2].NumFiles != 0 {
		t.Fatalf("levels %s, want one L0 table over empty levels", ldbLevels(db))
	}
	for range 1000 {
		ldbWant(t, db, "missing", "NOT_FOUND")
	}
	ldbWant(t, db, "a", "begin2")
	ldbWant(t, db, "z", "end2")
}

// TestRocksDBBasic_RecoverWithTableHandle ports DBTest.RecoverWithTableHandle:
// a store of many tables, reopened with the fewest open tables allowed
// (RocksDB: max_open_files and preloaded table handles), reads every key,
// in a random order and scanned, and after a reopen with many.
func TestRocksDBBasic_RecoverWithTableHandle(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{DisableAutomaticCompactions: true}
	db := ldbOpen(t, fs, o)
	model := map[string]string{}
	for f := range 30 {
		for i := range 20 {
			k := fmt.Sprintf("%03d-%03d", i, f) // every table spans the key space
			model[k] = fmt.Sprintf("v%d", f*100+i)
			ldbSet(t, db, k, model[k])
		}
		ldbFlush(t, db)
	}
	ldbClose(t, db)
	for _, n := range []int{kv.MinMaxOpenFiles, 1000} {
		db = ldbOpen(t, fs, &kv.Options{DisableAutomaticCompactions: true, MaxOpenFiles: n})
		if tables := ldbTables(db); tables != 30 {
			t.Fatalf("%d tables after reopen, want 30", tables)
		}
		rdCheck(t, db, model, []string{"000", "020-000"}, fmt.Sprintf("MaxOpenFiles %d", n))
		ldbClose(t, db)
	}
}

// TestRocksDBBasic_ReadFirstRecord ports DBTest.ReadFirstRecordCache and
// the WAL recovery tests around it: a WAL holding a single record, or
// none, and the WALs of many sessions in turn, each a Sync write and a
// close, recover every write.
func TestRocksDBBasic_ReadFirstRecord(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	db = ldbReopen(t, db, fs, nil) // an empty WAL
	ldbWant(t, db, "foo", "NOT_FOUND")
	for i := range 20 {
		must1(t, db.Set([]byte(fmt.Sprintf("foo%02d", i)), []byte(fmt.Sprint(i)), kv.Sync))
		db = ldbReopen(t, db, fs, nil)
		for j := range i + 1 {
			ldbWant(t, db, fmt.Sprintf("foo%02d", j), fmt.Sprint(j))
		}
	}
	ro := ldbReopen(t, db, fs, &kv.Options{ReadOnly: true})
	defer ldbClose(t, ro)
	for j := range 20 {
		ldbWant(t, ro, fmt.Sprintf("foo%02d", j), fmt.Sprint(j))
	}
}

// TestRocksDBBasic_IterPrevMaxSkip ports DBIteratorTest.IterPrevMaxSkip
// (max_sequential_skip_in_iterations bounds how many hidden versions
// Prev steps over before it seeks): with many versions of each key,
// Last finds the newest version of the last key, and as the last keys
// are deleted in turn, of the last one left, in the memtable, after a
// flush and after a reopen.
func TestRocksDBBasic_IterPrevMaxSkip(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	for range 200 {
		for k := 1; k <= 5; k++ {
			ldbSet(t, db, fmt.Sprintf("key%d", k), fmt.Sprintf("v%d", k))
		}
	}
	last := func(want string) {
		t.Helper()
		it, err := db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		got := "(invalid)"
		if it.Last() {
			got = fmt.Sprintf("%s->%s", it.Key(), it.Value())
		}
		must1(t, it.Close())
		if got != want {
			t.Fatalf("Last = %s, want %s", got, want)
		}
	}
	stage := func(i int) {
		switch i {
		case 1:
			ldbFlush(t, db)
		case 2:
			db = ldbReopen(t, db, fs, nil)
		}
	}
	stage(0)
	last("key5->v5")
	for k, i := 5, 0; k >= 1; k, i = k-1, i+1 {
		ldbDelete(t, db, fmt.Sprintf("key%d", k))
		stage(i % 3)
		if k > 1 {
			last(fmt.Sprintf("key%d->v%d", k-1, k-1))
		}
	}
	last("(invalid)")
	ldbClose(t, db)
}
