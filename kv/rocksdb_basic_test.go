package kv_test

// The rocksdb_basic_*_test.go files port the behavioural scenarios of
// RocksDB's db/db_basic_test.cc, db/db_compaction_test.cc, db/db_test.cc
// and db/db_test2.cc that apply to bloomkv, on top of those the
// leveldb_*_test.go files already port from LevelDB (RocksDB's db_test.cc
// began as LevelDB's). RocksDB's test hooks have no counterpart here, so
// each port keeps the promise its test stands for and asserts it through
// the public API: values read (Get, GetAppend, iterators, snapshots),
// errors, Metrics, EstimateDiskUsage and the files on the FS.
//
// Not ported, for want of the feature: SingleDelete (PutSingleDeleteGet),
// column families (FlushEmptyColumnFamily and the CF variants of every
// test), KeyMayExist, the metadata databases (DestroyDBMetaDatabase),
// merge operators, and the options that only tune RocksDB's internals
// (max_sequential_skip_in_iterations is ported as a behaviour:
// IterPrevMaxSkip). Where RocksDB's read-only mode differs from Pebble's,
// which bloomkv follows, the port says so.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// rbWantErr fails the test unless err wraps want.
func rbWantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

// rbReadOnly opens the store "db" on fs read-only, with o's other options.
func rbReadOnly(t *testing.T, fs vfs.FS, o *kv.Options) *kv.DB {
	t.Helper()
	var opts kv.Options
	if o != nil {
		opts = *o
	}
	opts.ReadOnly = true
	return ldbOpen(t, fs, &opts)
}

// TestRocksDBBasic_OpenWhenOpen ports DBBasicTest.OpenWhenOpen: a second
// Open of a store that is open fails (RocksDB: IOError on the LOCK), and
// leaves the first DB working.
func TestRocksDBBasic_OpenWhenOpen(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	ldbSet(t, db, "foo", "v1")
	for _, o := range []kv.Options{{FS: fs}, {FS: fs, ReadOnly: true}, {FS: fs, ErrorIfNotExists: true}} {
		if db2, err := kv.Open("db", &o); err == nil {
			db2.Close()
			t.Fatalf("second Open (ReadOnly %v) of an open store succeeded", o.ReadOnly)
		}
	}
	ldbWant(t, db, "foo", "v1")
	ldbSet(t, db, "foo", "v2")
	db = ldbReopen(t, db, fs, nil)
	defer ldbClose(t, db)
	ldbWant(t, db, "foo", "v2")
}

// TestRocksDBBasic_CheckLock ports DBTest.CheckLock: while one DB holds
// the store, a second Open fails, read-only or not; once it is closed, a
// read-only DB holds it the same way.
func TestRocksDBBasic_CheckLock(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	ldbSet(t, db, "a", "1")
	ldbClose(t, db)
	ro := rbReadOnly(t, fs, nil)
	if db2, err := kv.Open("db", &kv.Options{FS: fs}); err == nil {
		db2.Close()
		t.Fatal("Open for writes of a store open read-only succeeded")
	}
	ldbWant(t, ro, "a", "1")
	ldbClose(t, ro)
	db = ldbOpen(t, fs, nil)
	defer ldbClose(t, db)
	ldbWant(t, db, "a", "1")
}

// TestRocksDBBasic_ReadOnlyDB ports DBBasicTest.ReadOnlyDB: a store
// written (flushed tables and WAL) opens read-only; Gets and an iterator
// read every write; writes, Flush, Compact and Ingest fail with
// ErrReadOnly; and after reopening for writes and writing more, a
// read-only reopen sees the new writes that are only in the WAL.
// (RocksDB also opens a read-only DB next to a writer; bloomkv, as Pebble,
// takes the LOCK: see CheckLock.)
func TestRocksDBBasic_ReadOnlyDB(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	ldbSet(t, db, "foo", "v1")
	ldbSet(t, db, "bar", "v2")
	ldbSet(t, db, "foo", "v3")
	ldbClose(t, db)

	check := func(model map[string]string) {
		t.Helper()
		before := ldbFiles(t, fs)
		ro := rbReadOnly(t, fs, nil)
		rdCheck(t, ro, model, []string{"baz", "fo", "fooo"}, "read-only")
		rbReadOnlyRefuses(t, ro)
		s := ro.NewSnapshot()
		ldbWant(t, s, "foo", model["foo"])
		must1(t, s.Close())
		ldbClose(t, ro)
		if after := ldbFiles(t, fs); !slices.Equal(before, after) {
			t.Fatalf("a read-only session changed the files: %v to %v", before, after)
		}
	}
	check(map[string]string{"foo": "v3", "bar": "v2"})

	db = ldbOpen(t, fs, nil)
	ldbFlush(t, db)
	ldbSet(t, db, "foo", "v4") // in the WAL only
	ldbDelete(t, db, "bar")
	ldbSet(t, db, "baz", "v5")
	ldbClose(t, db)
	check(map[string]string{"foo": "v4", "baz": "v5"})
}

// rbReadOnlyRefuses checks that every write path of a read-only db fails
// with ErrReadOnly and changes nothing a read sees.
func rbReadOnlyRefuses(t *testing.T, db *kv.DB) {
	t.Helper()
	before := ldbContents(t, db)
	rbWantErr(t, "Set", db.Set([]byte("new"), []byte("x"), kv.Sync), kv.ErrReadOnly)
	rbWantErr(t, "Delete", db.Delete([]byte("foo"), kv.NoSync), kv.ErrReadOnly)
	rbWantErr(t, "DeleteRange", db.DeleteRange([]byte("a"), []byte("z"), kv.NoSync), kv.ErrReadOnly)
	b := db.NewBatch()
	must1(t, b.Set([]byte("new"), []byte("x")))
	rbWantErr(t, "Apply", db.Apply(b, kv.NoSync), kv.ErrReadOnly)
	b.Close()
	rbWantErr(t, "Flush", db.Flush(), kv.ErrReadOnly)
	rbWantErr(t, "Compact", db.Compact(nil, nil), kv.ErrReadOnly)
	rbWantErr(t, "Ingest", db.Ingest([]string{"nonexistent.sst"}), kv.ErrReadOnly)
	if after := ldbContents(t, db); after != before {
		t.Fatalf("refused writes changed the contents: %s to %s", before, after)
	}
}

// TestRocksDBBasic_ReadOnlyDBManyMemtables ports the part of
// DBBasicTest.ReadOnlyDB (and DBTest2's read-only replays) where the WAL
// holds more writes than one memtable: written under a large memtable
// and reopened read-only under a small one, the replay fills several
// memtables, which stay in memory, and every write reads back (a range
// deletion across the memtables and the keys written over it included),
// also through a refreshed iterator and after a Checkpoint of the
// read-only DB is opened for writes.
func TestRocksDBBasic_ReadOnlyDBManyMemtables(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, &kv.Options{MemTableSize: 64 << 20})
	model := map[string]string{}
	n := 3000
	if testing.Short() {
		n = 1000
	}
	val := strings.Repeat("v", 100)
	for i := range n {
		k := rdKey(i, i%3 == 0)
		model[k] = fmt.Sprintf("%s%d", val, i)
		ldbSet(t, db, k, model[k])
	}
	for i := 0; i < n; i += 7 {
		ldbDelete(t, db, rdKey(i, i%3 == 0))
		delete(model, rdKey(i, i%3 == 0))
	}
	lo, hi := rdKey(n/3, false), rdKey(n/2, false) // spans replayed memtables
	rdDeleteRange(t, db, lo, hi)
	for k := range model {
		if k >= lo && k < hi {
			delete(model, k)
		}
	}
	for i := n / 3; i < n/2; i += 10 { // rewritten over the range deletion
		k := rdKey(i, false)
		model[k] = "again"
		ldbSet(t, db, k, model[k])
	}
	if tables := ldbTables(db); tables != 0 {
		t.Fatalf("%d tables, want the writes in the WAL alone", tables)
	}
	ldbClose(t, db)

	ro := rbReadOnly(t, fs, &kv.Options{MemTableSize: kv.MinMemTableSize})
	rdCheck(t, ro, model, []string{rdKey(0, false), rdKey(n, true)}, "read-only replay")
	if ldbTables(ro) != 0 {
		t.Fatalf("read-only replay wrote tables: %s", ldbLevels(ro))
	}
	it, err := ro.NewIter(nil)
	must1(t, err)
	must1(t, it.Refresh())
	if got, want := rbIterContents(t, it), ldbContents(t, ro); got != want {
		t.Fatal("a refreshed read-only iterator differs from the DB")
	}
	must1(t, it.Close())
	must1(t, ro.Checkpoint("cp"))
	ldbClose(t, ro)
	cp, err := kv.Open("cp", &kv.Options{FS: fs, ErrorIfNotExists: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ldbClose(t, cp)
	rdCheck(t, cp, model, nil, "checkpoint of the read-only DB")
}

// TestRocksDBBasic_ReadOnlyMissing ports DBBasicTest.ReadOnlyDB's opening
// of a store that does not exist: it fails with ErrDBDoesNotExist and
// creates nothing; ReadOnly with ErrorIfExists is refused.
func TestRocksDBBasic_ReadOnlyMissing(t *testing.T) {
	fs := vfs.NewMem()
	_, err := kv.Open("db", &kv.Options{FS: fs, ReadOnly: true})
	rbWantErr(t, "read-only Open of no store", err, kv.ErrDBDoesNotExist)
	if _, err := fs.Stat("db"); err == nil {
		t.Fatal("read-only Open of no store created its directory")
	}
	ldbClose(t, ldbOpen(t, fs, nil))
	if db, err := kv.Open("db", &kv.Options{FS: fs, ReadOnly: true, ErrorIfExists: true}); err == nil {
		db.Close()
		t.Fatal("ReadOnly with ErrorIfExists was accepted")
	}
}

// TestRocksDBBasic_CompactedDB ports DBBasicTest.CompactedDB: a store
// compacted into one level, with tables of several key ranges, opens
// read-only (RocksDB then serves it through CompactedDBImpl); Gets of
// keys in each table, between tables and outside them, and scans, read
// right; a WAL written after the compaction is read too.
func TestRocksDBBasic_CompactedDB(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{TargetFileSize: 2 << 10, BlockSize: 512}
	db := ldbOpen(t, fs, o)
	model := map[string]string{}
	for _, c := range "acegikmoqs" { // ten groups of keys, gaps between
		for i := range 40 {
			k := fmt.Sprintf("%c%03d", c, i)
			model[k] = strings.Repeat(string(c), 30+i)
			ldbSet(t, db, k, model[k])
		}
	}
	ldbCompact(t, db, "", "")
	if ldbTables(db) < 3 {
		t.Fatalf("compaction made %s tables, want several", ldbLevels(db))
	}
	rdLevelOf(t, db)
	ldbClose(t, db)

	absent := []string{"0", "b", "d020", "k040", "s039a", "t", "zzz"}
	ro := rbReadOnly(t, fs, o)
	rdCheck(t, ro, model, absent, "compacted, read-only")
	ldbClose(t, ro)

	db = ldbOpen(t, fs, o)
	ldbSet(t, db, "b", "new")
	ldbDelete(t, db, "c005")
	ldbClose(t, db)
	model["b"] = "new"
	delete(model, "c005")
	ro = rbReadOnly(t, fs, o)
	defer ldbClose(t, ro)
	rdCheck(t, ro, model, []string{"c005"}, "compacted plus WAL, read-only")
}
