package kv_test

// The leveldb_*_test.go files port the behavioural regression scenarios of
// LevelDB's db/db_test.cc (and of goleveldb's leveldb/db_test.go, which
// ports them) to bloomkv's API. LevelDB's test hooks have no counterpart
// here, so the ports use the public API: TEST_CompactMemTable becomes Flush,
// TEST_CompactRange(level) becomes Compact over the keys, and LevelDB's
// exact level numbers (FilesPerLevel) become the promise they stand for, as
// Metrics, EstimateDiskUsage and the files on the FS show it. Each test
// names the LevelDB test it ports and says what it asserts.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
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
