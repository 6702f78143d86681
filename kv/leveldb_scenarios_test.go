package kv_test

// This file ports the behavioural regression scenarios of LevelDB's
// db/db_test.cc (and of goleveldb's leveldb/db_test.go, which ports them)
// to bloomkv's API. LevelDB's test hooks have no counterpart here, so the
// ports use the public API: TEST_CompactMemTable becomes Flush,
// TEST_CompactRange(level) becomes Compact over the keys, and LevelDB's
// exact level numbers (FilesPerLevel) become the promise they stand for,
// as Metrics, EstimateDiskUsage and the files on the FS show it. Each test
// names the LevelDB test it ports and says what it asserts.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// ldbOpen opens the store "db" on fs with a copy of o (nil: defaults).
func ldbOpen(t *testing.T, fs vfs.FS, o *kv.Options) *kv.DB {
	t.Helper()
	var opts kv.Options
	if o != nil {
		opts = *o
	}
	opts.FS = fs
	db, err := kv.Open("db", &opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return db
}

// ldbReopen closes db and opens the store again with o.
func ldbReopen(t *testing.T, db *kv.DB, fs vfs.FS, o *kv.Options) *kv.DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return ldbOpen(t, fs, o)
}

// ldbClose closes db, failing the test on an error.
func ldbClose(t *testing.T, db *kv.DB) {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// ldbGetter is what ldbGet reads from: a DB or a Snapshot.
type ldbGetter interface {
	Get(key []byte) ([]byte, error)
}

// ldbGet returns key's value, or "NOT_FOUND" as LevelDB's tests spell it.
func ldbGet(t *testing.T, r ldbGetter, key string) string {
	t.Helper()
	v, err := r.Get([]byte(key))
	if errors.Is(err, kv.ErrNotFound) {
		return "NOT_FOUND"
	}
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return string(v)
}

// ldbWant fails the test unless key reads want (or "NOT_FOUND").
func ldbWant(t *testing.T, r ldbGetter, key, want string) {
	t.Helper()
	if got := ldbGet(t, r, key); got != want {
		t.Fatalf("Get(%s) = %s, want %s", ldbShort(key), ldbShort(got), ldbShort(want))
	}
}

// ldbShort abbreviates a long value for a failure message.
func ldbShort(s string) string {
	if len(s) > 20 {
		return fmt.Sprintf("%q...(%d bytes)", s[:10], len(s))
	}
	return strconv.Quote(s)
}

func ldbSet(t *testing.T, db *kv.DB, key, value string) {
	t.Helper()
	if err := db.Set([]byte(key), []byte(value), kv.NoSync); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
}

func ldbDelete(t *testing.T, db *kv.DB, key string) {
	t.Helper()
	if err := db.Delete([]byte(key), kv.NoSync); err != nil {
		t.Fatalf("Delete(%q): %v", key, err)
	}
}

func ldbFlush(t *testing.T, db *kv.DB) {
	t.Helper()
	if err := db.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// ldbCompact compacts [start, end] ("" for an open end).
func ldbCompact(t *testing.T, db *kv.DB, start, end string) {
	t.Helper()
	var s, e []byte
	if start != "" {
		s = []byte(start)
	}
	if end != "" {
		e = []byte(end)
	}
	if err := db.Compact(s, e); err != nil {
		t.Fatalf("Compact(%q, %q): %v", start, end, err)
	}
}

// ldbContents returns the store's contents as LevelDB's tests print them,
// "(k->v)" per key, after checking that a backward scan sees the same keys.
func ldbContents(t *testing.T, db *kv.DB) string {
	t.Helper()
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var fwd, bwd []string
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, fmt.Sprintf("(%s->%s)", it.Key(), it.Value()))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		bwd = append(bwd, fmt.Sprintf("(%s->%s)", it.Key(), it.Value()))
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(bwd)
	if !slices.Equal(fwd, bwd) {
		t.Fatalf("forward scan %v, backward scan %v", fwd, bwd)
	}
	return strings.Join(fwd, "")
}

// ldbTables returns the tables of the store, over all levels.
func ldbTables(db *kv.DB) int {
	n := 0
	for _, l := range db.Metrics().Levels {
		n += l.NumFiles
	}
	return n
}

// ldbEntries returns the entries of the store's tables, every version and
// tombstone (LevelDB's AllEntriesFor, for a store of few keys).
func ldbEntries(db *kv.DB) int64 {
	var n int64
	for _, l := range db.Metrics().Levels {
		n += l.Keys
	}
	return n
}

// ldbLevels returns the tables per level, as LevelDB's FilesPerLevel, for
// failure messages.
func ldbLevels(db *kv.DB) string {
	var s []string
	for _, l := range db.Metrics().Levels {
		s = append(s, strconv.Itoa(l.NumFiles))
	}
	return strings.Join(s, ",")
}

// ldbFiles returns the names of the files in the store's directory.
func ldbFiles(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

func ldbKey(i int) string { return fmt.Sprintf("key%06d", i) }

// ldbRandom returns n random bytes, which no compression shrinks.
func ldbRandom(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return string(b)
}

// ldbSmall returns options of a store whose memtables fill at size bytes.
func ldbSmall(size int64) *kv.Options { return &kv.Options{MemTableSize: size} }

// TestLevelDB_Empty ports DBTest.Empty: a new store finds no key.
func TestLevelDB_Empty(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	ldbWant(t, db, "foo", "NOT_FOUND")
}

// TestLevelDB_ReadWrite ports DBTest.ReadWrite: a Get reads the last Set
// of its key.
func TestLevelDB_ReadWrite(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	ldbSet(t, db, "foo", "v1")
	ldbWant(t, db, "foo", "v1")
	ldbSet(t, db, "bar", "v2")
	ldbSet(t, db, "foo", "v3")
	ldbWant(t, db, "foo", "v3")
	ldbWant(t, db, "bar", "v2")
}

// TestLevelDB_PutDeleteGet ports DBTest.PutDeleteGet: a Delete hides
// every earlier version of its key.
func TestLevelDB_PutDeleteGet(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	ldbSet(t, db, "foo", "v1")
	ldbWant(t, db, "foo", "v1")
	ldbSet(t, db, "foo", "v2")
	ldbWant(t, db, "foo", "v2")
	ldbDelete(t, db, "foo")
	ldbWant(t, db, "foo", "NOT_FOUND")
}

// TestLevelDB_GetFromImmutableLayer ports DBTest.GetFromImmutableLayer: a
// key stays readable while the memtable holding it turns immutable and is
// flushed, because big writes fill the memtables behind it. (LevelDB holds
// the flush back with a test Env; here the Gets race the flushes.)
func TestLevelDB_GetFromImmutableLayer(t *testing.T) {
	const size = 16 << 10
	db := ldbOpen(t, vfs.NewMem(), ldbSmall(size))
	defer ldbClose(t, db)
	ldbSet(t, db, "foo", "v1")
	ldbWant(t, db, "foo", "v1")
	big := strings.Repeat("x", size)
	for i := range 4 {
		ldbSet(t, db, fmt.Sprintf("k%d", i), big) // each fills a memtable
		ldbWant(t, db, "foo", "v1")
	}
	waitLDB(t, db)
	ldbWant(t, db, "foo", "v1")
	if db.Metrics().Flush.Count == 0 {
		t.Fatal("no memtable was flushed")
	}
}

// waitLDB waits until no flush or compaction runs or is due.
func waitLDB(t *testing.T, db *kv.DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}
}

// TestLevelDB_GetFromVersions ports DBTest.GetFromVersions: a key flushed
// to a table reads back from it.
func TestLevelDB_GetFromVersions(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	ldbSet(t, db, "foo", "v1")
	ldbFlush(t, db)
	ldbWant(t, db, "foo", "v1")
	if ldbTables(db) == 0 {
		t.Fatal("Flush wrote no table")
	}
}

// TestLevelDB_GetSnapshot ports DBTest.GetSnapshot: a snapshot reads the
// version it saw, for a short key and a 200-byte one, before and after
// the newer version and the older one are flushed.
func TestLevelDB_GetSnapshot(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	for _, key := range []string{"foo", strings.Repeat("x", 200)} {
		ldbSet(t, db, key, "v1")
		s := db.NewSnapshot()
		ldbSet(t, db, key, "v2")
		ldbWant(t, db, key, "v2")
		ldbWant(t, s, key, "v1")
		ldbFlush(t, db)
		ldbWant(t, db, key, "v2")
		ldbWant(t, s, key, "v1")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLevelDB_GetLevel0Ordering ports DBTest.GetLevel0Ordering: of two L0
// tables holding a key, the newer one's version wins.
func TestLevelDB_GetLevel0Ordering(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{DisableAutomaticCompactions: true})
	defer ldbClose(t, db)
	ldbSet(t, db, "bar", "b")
	ldbSet(t, db, "foo", "v1")
	ldbFlush(t, db)
	ldbSet(t, db, "foo", "v2")
	ldbFlush(t, db)
	if n := db.Metrics().Levels[0].NumFiles; n != 2 {
		t.Fatalf("L0 holds %d tables, want 2", n)
	}
	ldbWant(t, db, "foo", "v2")
}

// TestLevelDB_GetOrderedByLevels ports DBTest.GetOrderedByLevels: a newer
// version in the memtable, then in L0, wins over an older one compacted
// to a deeper level.
func TestLevelDB_GetOrderedByLevels(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	ldbSet(t, db, "foo", "v1")
	ldbCompact(t, db, "a", "z")
	ldbWant(t, db, "foo", "v1")
	ldbSet(t, db, "foo", "v2")
	ldbWant(t, db, "foo", "v2")
	ldbFlush(t, db)
	ldbWant(t, db, "foo", "v2")
}

// TestLevelDB_GetPicksCorrectFile ports DBTest.GetPicksCorrectFile: with
// tables of disjoint ranges compacted separately, each Get finds its key
// in the right one.
func TestLevelDB_GetPicksCorrectFile(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	ldbSet(t, db, "a", "va")
	ldbCompact(t, db, "a", "b")
	ldbSet(t, db, "x", "vx")
	ldbCompact(t, db, "x", "y")
	ldbSet(t, db, "f", "vf")
	ldbCompact(t, db, "f", "g")
	ldbWant(t, db, "a", "va")
	ldbWant(t, db, "f", "vf")
	ldbWant(t, db, "x", "vx")
	ldbWant(t, db, "c", "NOT_FOUND")
	ldbWant(t, db, "z", "NOT_FOUND")
}

// TestLevelDB_GetEncountersEmptyLevel ports DBTest.GetEncountersEmptyLevel:
// Gets of a missing key walk a tree with a level between its tables empty
// and find nothing, while the present keys read right. (LevelDB also
// asserts that the missed lookups trigger a seek compaction; bloomkv has
// none, so this port asserts the values alone.)
func TestLevelDB_GetEncountersEmptyLevel(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{DisableAutomaticCompactions: true})
	defer ldbClose(t, db)
	ldbSet(t, db, "a", "begin")
	ldbSet(t, db, "z", "end")
	ldbCompact(t, db, "", "") // to the bottom level
	ldbSet(t, db, "a", "begin2")
	ldbSet(t, db, "z", "end2")
	ldbFlush(t, db) // L0, over an empty middle
	for range 1000 {
		ldbWant(t, db, "missing", "NOT_FOUND")
	}
	ldbWant(t, db, "a", "begin2")
	ldbWant(t, db, "z", "end2")
}

// TestLevelDB_IterMulti ports DBTest.IterEmpty, IterSingle and IterMulti:
// First, Last, SeekGE and Next/Prev over three keys, before and after a
// version of a key changes under an open iterator (which keeps showing the
// old one) and after a flush.
func TestLevelDB_IterMulti(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	if got := ldbContents(t, db); got != "" {
		t.Fatalf("empty store: %s", got)
	}
	ldbSet(t, db, "a", "va")
	ldbSet(t, db, "b", "vb")
	ldbSet(t, db, "c", "vc")
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	at := func(ok bool, want string) {
		t.Helper()
		got := "(invalid)"
		if ok {
			got = string(it.Key()) + "->" + string(it.Value())
		}
		if got != want {
			t.Fatalf("iterator at %s, want %s", got, want)
		}
	}
	at(it.First(), "a->va")
	at(it.Next(), "b->vb")
	at(it.Next(), "c->vc")
	at(it.Next(), "(invalid)")
	at(it.Last(), "c->vc")
	at(it.Prev(), "b->vb")
	at(it.Prev(), "a->va")
	at(it.Prev(), "(invalid)")
	at(it.SeekGE([]byte("")), "a->va")
	at(it.SeekGE([]byte("a")), "a->va")
	at(it.SeekGE([]byte("ax")), "b->vb")
	at(it.SeekGE([]byte("b")), "b->vb")
	at(it.SeekGE([]byte("z")), "(invalid)")
	at(it.SeekLT([]byte("b")), "a->va")
	at(it.SeekLT([]byte("a")), "(invalid)")
	// Switch directions.
	at(it.First(), "a->va")
	at(it.Next(), "b->vb")
	at(it.Prev(), "a->va")
	at(it.Last(), "c->vc")
	at(it.Prev(), "b->vb")
	at(it.Next(), "c->vc")

	// Changes after the iterator was made are not seen by it.
	ldbSet(t, db, "a", "va2")
	ldbSet(t, db, "a2", "va3")
	ldbSet(t, db, "b", "vb2")
	ldbSet(t, db, "c", "vc2")
	ldbDelete(t, db, "b")
	ldbFlush(t, db)
	at(it.First(), "a->va")
	at(it.Next(), "b->vb")
	at(it.Next(), "c->vc")
	at(it.Next(), "(invalid)")
	if got, want := ldbContents(t, db), "(a->va2)(a2->va3)(c->vc2)"; got != want {
		t.Fatalf("contents %s, want %s", got, want)
	}
}

// TestLevelDB_IterSmallAndLargeMix ports DBTest.IterSmallAndLargeMix: a
// scan both ways over small values and values of 100,000 bytes.
func TestLevelDB_IterSmallAndLargeMix(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	want := map[string]string{
		"a": "va", "b": strings.Repeat("b", 100000), "c": "vc",
		"d": strings.Repeat("d", 100000), "e": strings.Repeat("e", 100000),
	}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		ldbSet(t, db, k, want[k])
	}
	for round := range 2 {
		it, err := db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		var fwd, bwd []string
		for ok := it.First(); ok; ok = it.Next() {
			if string(it.Value()) != want[string(it.Key())] {
				t.Fatalf("round %d: %q has a value of %d bytes", round, it.Key(), len(it.Value()))
			}
			fwd = append(fwd, string(it.Key()))
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			if string(it.Value()) != want[string(it.Key())] {
				t.Fatalf("round %d: %q has a value of %d bytes backward", round, it.Key(), len(it.Value()))
			}
			bwd = append(bwd, string(it.Key()))
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if strings.Join(fwd, "") != "abcde" || strings.Join(bwd, "") != "edcba" {
			t.Fatalf("round %d: forward %v, backward %v", round, fwd, bwd)
		}
		ldbFlush(t, db)
	}
}

// TestLevelDB_IterMultiWithDelete ports DBTest.IterMultiWithDelete: a
// deleted key is skipped by SeekGE and by Prev, in the memtable and in a
// table.
func TestLevelDB_IterMultiWithDelete(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	ldbSet(t, db, "a", "va")
	ldbSet(t, db, "b", "vb")
	ldbSet(t, db, "c", "vc")
	ldbDelete(t, db, "b")
	for round := range 2 {
		ldbWant(t, db, "b", "NOT_FOUND")
		it, err := db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !it.SeekGE([]byte("c")) || string(it.Key()) != "c" {
			t.Fatalf("round %d: SeekGE(c) missed c", round)
		}
		if !it.Prev() || string(it.Key()) != "a" {
			t.Fatalf("round %d: Prev from c did not reach a (valid %v, key %q)", round, it.Valid(), it.Key())
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		ldbFlush(t, db)
	}
}

// TestLevelDB_Recover ports DBTest.Recover: writes survive reopens, each
// reopen replaying the WAL and taking new writes on top.
func TestLevelDB_Recover(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	ldbSet(t, db, "foo", "v1")
	ldbSet(t, db, "baz", "v5")
	db = ldbReopen(t, db, fs, nil)
	ldbWant(t, db, "foo", "v1")
	ldbWant(t, db, "baz", "v5")
	ldbSet(t, db, "bar", "v2")
	ldbSet(t, db, "foo", "v3")
	db = ldbReopen(t, db, fs, nil)
	ldbWant(t, db, "foo", "v3")
	ldbSet(t, db, "foo", "v4")
	ldbWant(t, db, "foo", "v4")
	ldbWant(t, db, "bar", "v2")
	ldbWant(t, db, "baz", "v5")
	ldbClose(t, db)
}

// TestLevelDB_RecoveryWithEmptyLog ports DBTest.RecoveryWithEmptyLog: a
// reopen that leaves an empty WAL behind loses nothing at the next one.
func TestLevelDB_RecoveryWithEmptyLog(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	ldbSet(t, db, "foo", "v1")
	ldbSet(t, db, "foo", "v2")
	db = ldbReopen(t, db, fs, nil)
	db = ldbReopen(t, db, fs, nil)
	ldbSet(t, db, "foo", "v3")
	db = ldbReopen(t, db, fs, nil)
	ldbWant(t, db, "foo", "v3")
	ldbClose(t, db)
}

// TestLevelDB_RecoverDuringMemtableCompaction ports
// DBTest.RecoverDuringMemtableCompaction: writes that switched memtables
// (a value bigger than the memtable among them) are all there after a
// reopen, flushed or not.
func TestLevelDB_RecoverDuringMemtableCompaction(t *testing.T) {
	fs := vfs.NewMem()
	o := ldbSmall(64 << 10)
	db := ldbOpen(t, fs, o)
	big1 := strings.Repeat("x", 300<<10)
	big2 := strings.Repeat("y", 1000)
	ldbSet(t, db, "foo", "v1")
	ldbSet(t, db, "big1", big1)
	ldbSet(t, db, "big2", big2)
	ldbSet(t, db, "bar", "v2")
	db = ldbReopen(t, db, fs, o)
	ldbWant(t, db, "foo", "v1")
	ldbWant(t, db, "bar", "v2")
	ldbWant(t, db, "big1", big1)
	ldbWant(t, db, "big2", big2)
	ldbClose(t, db)
}

// TestLevelDB_MinorCompactionsHappen ports DBTest.MinorCompactionsHappen:
// writing five hundred times a 10 KB memtable flushes it to tables, and
// every value reads back, before and after a reopen.
func TestLevelDB_MinorCompactionsHappen(t *testing.T) {
	fs := vfs.NewMem()
	o := ldbSmall(10000)
	db := ldbOpen(t, fs, o)
	n := 500
	if testing.Short() {
		n = 200
	}
	value := func(i int) string { return ldbKey(i) + strings.Repeat("v", 1000) }
	before := db.Metrics().Flush.Count
	for i := range n {
		ldbSet(t, db, ldbKey(i), value(i))
	}
	if after := db.Metrics().Flush.Count; after <= before {
		t.Fatalf("flushes %d before, %d after %d KB of writes", before, after, n)
	}
	for i := range n {
		ldbWant(t, db, ldbKey(i), value(i))
	}
	db = ldbReopen(t, db, fs, o)
	for i := range n {
		ldbWant(t, db, ldbKey(i), value(i))
	}
	ldbClose(t, db)
}

// TestLevelDB_RecoverWithLargeLog ports DBTest.RecoverWithLargeLog: a WAL
// written under big memtables is replayed by a store opened with small
// ones. (LevelDB asserts that the replay writes three L0 tables; bloomkv
// replays into memtables, so this port asserts the values, after the
// reopen and after a flush and another reopen.)
func TestLevelDB_RecoverWithLargeLog(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	want := map[string]string{
		"big1":   strings.Repeat("1", 200000),
		"big2":   strings.Repeat("2", 200000),
		"small3": strings.Repeat("3", 10),
		"small4": strings.Repeat("4", 10),
	}
	for _, k := range []string{"big1", "big2", "small3", "small4"} {
		ldbSet(t, db, k, want[k])
	}
	small := ldbSmall(100000)
	for round := range 2 {
		db = ldbReopen(t, db, fs, small)
		for k, v := range want {
			ldbWant(t, db, k, v)
		}
		if round == 0 {
			ldbFlush(t, db)
		}
	}
	ldbClose(t, db)
}

// TestLevelDB_CompactionsGenerateMultipleFiles ports
// DBTest.CompactionsGenerateMultipleFiles: compacting more than a target
// file size of data writes several tables, and every value reads back.
func TestLevelDB_CompactionsGenerateMultipleFiles(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{MemTableSize: 64 << 20, TargetFileSize: 64 << 10}
	db := ldbOpen(t, fs, o)
	rng := rand.New(rand.NewPCG(301, 0))
	values := make([]string, 80)
	for i := range values {
		values[i] = ldbRandom(rng, 10000)
		ldbSet(t, db, ldbKey(i), values[i])
	}
	db = ldbReopen(t, db, fs, o)
	ldbCompact(t, db, "", "")
	if n := ldbTables(db); n <= 1 {
		t.Fatalf("compacting 800 KB at a 64 KB target wrote %d tables (%s)", n, ldbLevels(db))
	}
	for i, v := range values {
		ldbWant(t, db, ldbKey(i), v)
	}
	ldbClose(t, db)
}

// TestLevelDB_RepeatedWritesToSameKey ports
// DBTest.RepeatedWritesToSameKey: overwriting one key with values twice
// the memtable's size keeps the store within the tables L0's stop
// threshold and the levels allow; compactions keep up.
func TestLevelDB_RepeatedWritesToSameKey(t *testing.T) {
	const size = 16 << 10
	o := ldbSmall(size)
	db := ldbOpen(t, vfs.NewMem(), o)
	defer ldbClose(t, db)
	maxFiles := 7 + kv.DefaultL0StopWritesThreshold
	rng := rand.New(rand.NewPCG(301, 0))
	value := ldbRandom(rng, 2*size)
	rounds := 5 * maxFiles
	if testing.Short() {
		rounds = 2 * maxFiles
	}
	for i := range rounds {
		ldbSet(t, db, "key", value)
		if n := ldbTables(db); n > maxFiles {
			t.Fatalf("after write %d: %d tables (%s), want at most %d", i, n, ldbLevels(db), maxFiles)
		}
	}
	ldbWant(t, db, "key", value)
}

// TestLevelDB_SparseMerge ports DBTest.SparseMerge: a small update to keys
// at both ends of a large range (A, B100, C) followed by a flush does not
// make the automatic compactions rewrite the whole range below. (LevelDB
// bounds the bytes a future compaction would read,
// MaxNextLevelOverlappingBytes; the port bounds the bytes the background
// compactions that follow read.)
func TestLevelDB_SparseMerge(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{TargetFileSize: 64 << 10})
	defer ldbClose(t, db)
	n := 10000
	if testing.Short() {
		n = 3000
	}
	rng := rand.New(rand.NewPCG(301, 0))
	b := db.NewBatch()
	b.Set([]byte("A"), []byte("va"))
	for i := range n {
		b.Set([]byte(fmt.Sprintf("B%010d", i)), []byte(ldbRandom(rng, 100)))
	}
	b.Set([]byte("C"), []byte("vc"))
	if err := db.Apply(b, kv.NoSync); err != nil {
		t.Fatal(err)
	}
	ldbCompact(t, db, "", "")
	total := uint64(0)
	for _, l := range db.Metrics().Levels {
		total += uint64(l.Size)
	}
	for round := range 3 {
		before := db.Metrics().Compact.BytesRead
		ldbSet(t, db, "A", fmt.Sprint("va", round))
		ldbSet(t, db, "B100", fmt.Sprint("bvalue", round))
		ldbSet(t, db, "C", fmt.Sprint("vc", round))
		ldbFlush(t, db)
		waitLDB(t, db)
		if read := uint64(db.Metrics().Compact.BytesRead - before); read > total/2 {
			t.Fatalf("round %d: a flush of three keys made compactions read %d bytes of a %d-byte store", round, read, total)
		}
	}
	ldbWant(t, db, "A", "va2")
	ldbWant(t, db, "B100", "bvalue2")
	ldbWant(t, db, "C", "vc2")
}

// TestLevelDB_ApproximateSizes ports DBTest.ApproximateSizes to
// EstimateDiskUsage: nothing for an empty store or one whose writes are
// all in the memtable; after a flush and after a compaction into several
// tables, about one value's size per key of a range, for every prefix of
// the keys (EstimateDiskUsage's end is inclusive, LevelDB's exclusive: a
// range to key i holds i+1 keys).
func TestLevelDB_ApproximateSizes(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{MemTableSize: 64 << 20, TargetFileSize: 100 << 10}
	db := ldbOpen(t, fs, o)
	defer func() { ldbClose(t, db) }()
	usage := func(start, end string) uint64 {
		t.Helper()
		var s []byte
		if start != "" {
			s = []byte(start)
		}
		n, err := db.EstimateDiskUsage(s, []byte(end))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := usage("", "xyz"); n != 0 {
		t.Fatalf("empty store: %d bytes", n)
	}
	const n, size = 80, 10000
	rng := rand.New(rand.NewPCG(301, 0))
	for i := range n {
		ldbSet(t, db, ldbKey(i), ldbRandom(rng, size))
	}
	if got := usage("", ldbKey(50)); got != 0 {
		t.Fatalf("writes in the memtable: %d bytes", got)
	}
	for _, step := range []string{"flush", "reopen", "compact"} {
		switch step {
		case "flush":
			ldbFlush(t, db)
		case "reopen":
			db = ldbReopen(t, db, fs, o)
		case "compact":
			ldbCompact(t, db, "", "")
		}
		for i := 0; i < n; i += 10 {
			got := usage("", ldbKey(i))
			if lo, hi := uint64(i*size), uint64((i+1)*(size+500)+4096); got < lo || got > hi {
				t.Fatalf("%s: usage to %s = %d, want in [%d, %d] (%s)", step, ldbKey(i), got, lo, hi, ldbLevels(db))
			}
			if got := usage(ldbKey(i), ldbKey(i)); got < size || got > 2*size+4096 {
				t.Fatalf("%s: usage of %s alone = %d, want about %d", step, ldbKey(i), got, size)
			}
		}
		if got := usage(ldbKey(n), "xyz"); got != 0 {
			t.Fatalf("%s: usage past the keys = %d", step, got)
		}
	}
	if n := ldbTables(db); n < 2 {
		t.Fatalf("compaction wrote %d tables, want several", n)
	}
}

// TestLevelDB_ApproximateSizesMixOfSmallAndLarge ports
// DBTest.ApproximateSizes_MixOfSmallAndLarge: with values of 10,000,
// 100 and 300,000 bytes mixed, the usage of each prefix of the keys sums
// the sizes of its values, after a flush and after a compaction into
// several tables. (LevelDB's offset of key i counts the blocks before
// it; bloomkv's inclusive end counts key i's block too.)
func TestLevelDB_ApproximateSizesMixOfSmallAndLarge(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{MemTableSize: 64 << 20, TargetFileSize: 100 << 10})
	defer ldbClose(t, db)
	sizes := []int{10000, 10000, 100, 10000, 10000, 300000, 10000, 10000}
	rng := rand.New(rand.NewPCG(301, 0))
	for i, n := range sizes {
		ldbSet(t, db, ldbKey(i), ldbRandom(rng, n))
	}
	for _, step := range []string{"flush", "compact"} {
		if step == "flush" {
			ldbFlush(t, db)
		} else {
			ldbCompact(t, db, "", "")
		}
		sum := 0
		for i, n := range sizes {
			sum += n
			got, err := db.EstimateDiskUsage(nil, []byte(ldbKey(i)))
			if err != nil {
				t.Fatal(err)
			}
			// The estimate counts whole data blocks, and a value
			// under the block size shares its block with the next
			// entry, which then counts too.
			hi := sum
			if n < kv.DefaultBlockSize && i+1 < len(sizes) {
				hi += sizes[i+1]
			}
			if lo, hi := uint64(sum), uint64(hi+hi/20+5000); got < lo || got > hi {
				t.Fatalf("%s: usage to %s = %d, want in [%d, %d] (%s)", step, ldbKey(i), got, lo, hi, ldbLevels(db))
			}
		}
	}
}

// TestLevelDB_IteratorPinsRef ports DBTest.IteratorPinsRef: an iterator
// keeps showing the store as it was made, while writes fill memtables,
// flush and compact the tables it reads away.
func TestLevelDB_IteratorPinsRef(t *testing.T) {
	const size = 16 << 10
	db := ldbOpen(t, vfs.NewMem(), ldbSmall(size))
	defer ldbClose(t, db)
	ldbSet(t, db, "foo", "hello")
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	ldbSet(t, db, "foo", "newvalue1")
	big := strings.Repeat("v", size)
	for i := range 100 {
		ldbSet(t, db, ldbKey(i), big)
	}
	ldbSet(t, db, "foo", "newvalue2")
	ldbCompact(t, db, "", "")
	if !it.First() || string(it.Key()) != "foo" || string(it.Value()) != "hello" {
		t.Fatalf("iterator shows %q=%q, want foo=hello", it.Key(), it.Value())
	}
	if it.Next() {
		t.Fatalf("iterator shows %q after foo", it.Key())
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
}

// TestLevelDB_Snapshot ports DBTest.Snapshot: three snapshots each read
// the version they saw, through a flush, and closing one leaves the
// others (and the store) reading right.
func TestLevelDB_Snapshot(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	ldbSet(t, db, "foo", "v1")
	s1 := db.NewSnapshot()
	ldbSet(t, db, "foo", "v2")
	s2 := db.NewSnapshot()
	s3 := db.NewSnapshot()
	ldbSet(t, db, "foo", "v3")
	ldbFlush(t, db)
	ldbSet(t, db, "foo", "v4")
	check := func(s *kv.Snapshot, want string) {
		t.Helper()
		ldbWant(t, s, "foo", want)
	}
	check(s1, "v1")
	check(s2, "v2")
	check(s3, "v2")
	ldbWant(t, db, "foo", "v4")
	must1(t, s3.Close())
	check(s1, "v1")
	check(s2, "v2")
	ldbCompact(t, db, "", "")
	must1(t, s1.Close())
	check(s2, "v2")
	ldbWant(t, db, "foo", "v4")
	must1(t, s2.Close())
	ldbWant(t, db, "foo", "v4")
}

func must1(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

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

// TestLevelDB_Randomized ports DBTest.Randomized: random sets, deletes and
// batches of both, checked against a map: every so often the whole store
// (scanned both ways, within random bounds, and read key by key) and a
// snapshot taken earlier against the map as it was then, with reopens and
// compactions in between. Beyond LevelDB's, the keys include long ones
// sharing 150-byte prefixes, and the ops DeleteRange.
func TestLevelDB_Randomized(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	fs := vfs.NewMem()
	o := ldbSmall(8 << 10)
	db := ldbOpen(t, fs, o)
	defer func() { ldbClose(t, db) }()
	n := 20000
	if testing.Short() {
		n = 3000
	}
	long := strings.Repeat("p", 150)
	model := map[string]string{}
	key := func() string {
		switch rng.IntN(10) {
		case 0:
			return ldbRandom(rng, 1+rng.IntN(20)) // outside the usual space
		case 1, 2:
			return long + fmt.Sprintf("%03d", rng.IntN(100))
		}
		return fmt.Sprintf("k%03d", rng.IntN(300))
	}
	value := func() string {
		if rng.IntN(20) == 0 {
			return ldbRandom(rng, 1000+rng.IntN(4000))
		}
		return fmt.Sprintf("v%d", rng.Int())
	}
	var snap *kv.Snapshot
	var snapModel map[string]string
	for step := range n {
		switch r := rng.IntN(100); {
		case r < 45:
			k, v := key(), value()
			ldbSet(t, db, k, v)
			model[k] = v
		case r < 72:
			k := key()
			ldbDelete(t, db, k)
			delete(model, k)
		case r < 75:
			start, end := key(), key()
			if start > end {
				start, end = end, start
			}
			must1(t, db.DeleteRange([]byte(start), []byte(end), kv.NoSync))
			maps.DeleteFunc(model, func(k, _ string) bool { return start <= k && k < end })
		default:
			b := db.NewBatch()
			for range rng.IntN(10) {
				k := key()
				if rng.IntN(2) == 0 {
					v := value()
					must1(t, b.Set([]byte(k), []byte(v)))
					model[k] = v
				} else {
					must1(t, b.Delete([]byte(k)))
					delete(model, k)
				}
			}
			must1(t, db.Apply(b, kv.NoSync))
		}
		if step%200 != 199 {
			continue
		}
		ldbCheckModel(t, rng, db, model, fmt.Sprintf("step %d", step))
		if snap != nil {
			ldbCheckModel(t, rng, snap, snapModel, fmt.Sprintf("step %d, snapshot", step))
			must1(t, snap.Close())
			snap = nil
		}
		switch rng.IntN(4) {
		case 0:
			db = ldbReopen(t, db, fs, o)
			ldbCheckModel(t, rng, db, model, fmt.Sprintf("step %d, reopened", step))
		case 1:
			start, end := key(), key()
			if start > end {
				start, end = end, start
			}
			ldbCompact(t, db, start, end)
		}
		snap = db.NewSnapshot()
		snapModel = maps.Clone(model)
	}
	if snap != nil {
		must1(t, snap.Close())
	}
}

// ldbIterable is what ldbCheckModel reads: a DB or a Snapshot.
type ldbIterable interface {
	ldbGetter
	NewIter(*kv.IterOptions) (*kv.Iterator, error)
}

// ldbCheckModel checks r's contents against model: read key by key,
// scanned both ways, and scanned both ways within random bounds.
func ldbCheckModel(t *testing.T, rng *rand.Rand, r ldbIterable, model map[string]string, what string) {
	t.Helper()
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
		if got := ldbGet(t, r, k); got != model[k] {
			t.Fatalf("%s: Get(%s) = %s, want %s", what, ldbShort(k), ldbShort(got), ldbShort(model[k]))
		}
	}
	slices.Sort(keys)
	ldbCheckScan(t, r, nil, keys, model, what)
	for range 3 {
		lo, hi := ldbBound(rng, keys), ldbBound(rng, keys)
		if lo > hi {
			lo, hi = hi, lo
		}
		var in []string
		for _, k := range keys {
			if lo <= k && k < hi {
				in = append(in, k)
			}
		}
		opts := &kv.IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)}
		ldbCheckScan(t, r, opts, in, model, fmt.Sprintf("%s, bounds [%s, %s)", what, ldbShort(lo), ldbShort(hi)))
	}
}

// ldbBound returns a random iterator bound: one of keys, or a key next
// to one.
func ldbBound(rng *rand.Rand, keys []string) string {
	if len(keys) == 0 || rng.IntN(4) == 0 {
		return fmt.Sprintf("k%03d", rng.IntN(300))
	}
	k := keys[rng.IntN(len(keys))]
	if rng.IntN(2) == 0 {
		return k + "\x00"
	}
	return k
}

// ldbCheckScan checks that an iterator of r with opts shows exactly keys,
// with model's values, forward and backward.
func ldbCheckScan(t *testing.T, r ldbIterable, opts *kv.IterOptions, keys []string, model map[string]string, what string) {
	t.Helper()
	it, err := r.NewIter(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(keys) || string(it.Key()) != keys[i] || string(it.Value()) != model[keys[i]] {
			t.Fatalf("%s: forward scan's entry %d is %s, want %d keys", what, i, ldbShort(string(it.Key())), len(keys))
		}
		i++
	}
	if i != len(keys) {
		t.Fatalf("%s: forward scan saw %d keys, want %d", what, i, len(keys))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
		if i < 0 || string(it.Key()) != keys[i] || string(it.Value()) != model[keys[i]] {
			t.Fatalf("%s: backward scan's entry %d is %s", what, i, ldbShort(string(it.Key())))
		}
	}
	if i != 0 {
		t.Fatalf("%s: backward scan missed %d keys", what, i)
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
}
