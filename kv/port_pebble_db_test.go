package kv_test

// The port_pebble_db_*_test.go files port the behavioural scenarios of
// Pebble v1.1.5's db_test.go, open_test.go, snapshot_test.go and
// event_listener_test.go to bloomkv's API and rules (kv/doc.go). Pebble's
// datadriven scripts become table tests; its panics on a closed DB become
// ErrClosed; merges, range keys, format major versions and Pebble's
// internal structures (the snapshot list, the file cache, the version
// list), which bloomkv has not or does not export, are left out or
// checked through what a user observes. Each test names what it ports.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestPortPebbleDBBasicWrites ports Pebble's TestBasicWrites
// (testdata/basic_writes): sets, overwrites and deletes seen by Get and an
// iterator, across a flush and a reopen.
func TestPortPebbleDBBasicWrites(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	pbMust(t, db.Set([]byte("a"), []byte("1"), kv.NoSync))
	pbMust(t, db.Set([]byte("b"), []byte("2"), kv.Sync))
	pbMust(t, db.Set([]byte("a"), []byte("3"), kv.NoSync))
	pbMust(t, db.Delete([]byte("b"), kv.NoSync))
	pbMust(t, db.Delete([]byte("nope"), kv.NoSync))
	pbWantGets(t, "memtable", db, "a=3 b=- nope=-")
	pbWantScan(t, "memtable", db, "a=3")
	pbMust(t, db.Flush())
	pbMust(t, db.Set([]byte("c"), []byte("4"), kv.NoSync))
	pbWantGets(t, "flushed", db, "a=3 b=- c=4")
	pbWantScan(t, "flushed", db, "a=3 c=4")
	ldbClose(t, db)
	db = ldbOpen(t, fs, nil)
	defer ldbClose(t, db)
	pbWantGets(t, "reopened", db, "a=3 b=- c=4")
	pbWantScan(t, "reopened", db, "a=3 c=4")
}

// TestPortPebbleDBBasicReads ports Pebble's TestBasicReads
// (testdata/basic_reads): a key's newest version wins whether it sits in
// the memtable, L0 or a deeper level, and a deletion above hides it.
func TestPortPebbleDBBasicReads(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	pbMust(t, db.Set([]byte("a"), []byte("deep"), kv.NoSync))
	pbMust(t, db.Set([]byte("b"), []byte("deep"), kv.NoSync))
	pbMust(t, db.Set([]byte("c"), []byte("deep"), kv.NoSync))
	pbMust(t, db.Compact([]byte("a"), []byte("c")))
	pbMust(t, db.Set([]byte("b"), []byte("l0"), kv.NoSync))
	pbMust(t, db.Delete([]byte("c"), kv.NoSync))
	pbMust(t, db.Flush())
	pbMust(t, db.Set([]byte("a"), []byte("mem"), kv.NoSync))
	pbMust(t, db.Set([]byte("d"), []byte("mem"), kv.NoSync))
	pbWantGets(t, "layered", db, "a=mem b=l0 c=- d=mem e=-")
	pbWantScan(t, "layered", db, "a=mem b=l0 d=mem")
}

// TestPortPebbleDBRandomWrites ports Pebble's TestRandomWrites: random
// sets and deletes over a small key space with a memtable of 8 KiB,
// checked against a map as the memtable rotates.
func TestPortPebbleDBRandomWrites(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{MemTableSize: 8 << 10})
	defer ldbClose(t, db)
	const nKeys = 64
	model := map[string]string{}
	n := 3000
	if testing.Short() {
		n = 1000
	}
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("k%02d", rng.Intn(nKeys))
		if rng.Intn(4) == 0 {
			pbMust(t, db.Delete([]byte(k), kv.NoSync))
			delete(model, k)
		} else {
			v := strings.Repeat(string(rune('a'+i%26)), 1+rng.Intn(100))
			pbMust(t, db.Set([]byte(k), []byte(v), kv.NoSync))
			model[k] = v
		}
		if i%500 == 499 {
			ppCheckModel(t, db, model, nKeys)
		}
	}
	ppCheckModel(t, db, model, nKeys)
	if db.Metrics().Flush.Count == 0 {
		t.Errorf("no flush in %d writes to an 8 KiB memtable", n)
	}
}

// ppCheckModel checks Get of keys k00..k<n> against model.
func ppCheckModel(t *testing.T, db *kv.DB, model map[string]string, n int) {
	t.Helper()
	for j := 0; j < n; j++ {
		k := fmt.Sprintf("k%02d", j)
		want, ok := model[k]
		if !ok {
			want = "-"
		}
		if got := pbGet(t, db, k); got != want {
			t.Fatalf("Get(%q) = %.10q, want %.10q", k, got, want)
		}
	}
}

// TestPortPebbleDBLargeBatch ports Pebble's TestLargeBatch: a batch larger
// than the memtable gets a memtable and a WAL of its own. Pebble checks
// its WAL numbers; bloomkv's are checked through what they hold: the
// earlier write and the big batch survive a reopen, and the WALs of the
// flushed memtables are retired.
func TestPortPebbleDBLargeBatch(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{MemTableSize: kv.MinMemTableSize * 16}
	db := ldbOpen(t, fs, o)
	pbMust(t, db.Set([]byte("a"), bytes.Repeat([]byte("a"), 512), kv.NoSync))
	big := bytes.Repeat([]byte("b"), int(o.MemTableSize)+1)
	pbMust(t, db.Set([]byte("b"), big, kv.NoSync))
	pbMust(t, db.Set([]byte("c"), []byte("c"), kv.NoSync))
	if v, err := db.Get([]byte("b")); err != nil || !bytes.Equal(v, big) {
		t.Fatalf("Get(b) = %d bytes, %v", len(v), err)
	}
	pbMust(t, db.Flush())
	if m := db.Metrics(); m.WAL.Files != 1 {
		t.Errorf("after Flush: %d WALs live, want 1", m.WAL.Files)
	}
	pbMust(t, db.Set([]byte("d"), big, kv.Sync))
	ldbClose(t, db)
	db = ldbOpen(t, fs, o)
	defer ldbClose(t, db)
	pbWantGets(t, "reopened", db, "c=c")
	for _, k := range []string{"b", "d"} {
		if v, err := db.Get([]byte(k)); err != nil || !bytes.Equal(v, big) {
			t.Fatalf("reopened: Get(%s) = %d bytes, %v", k, len(v), err)
		}
	}
}

// TestPortPebbleDBGetNoCache ports Pebble's TestGetNoCache: a store with
// the smallest block cache (Pebble: none) still reads its tables.
func TestPortPebbleDBGetNoCache(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), &kv.Options{BlockCacheSize: 1})
	defer ldbClose(t, db)
	pbMust(t, db.Set([]byte("a"), []byte("aa"), kv.NoSync))
	pbMust(t, db.Flush())
	pbWantGets(t, "no cache", db, "a=aa b=-")
}

// TestPortPebbleDBIterLeak ports Pebble's TestIterLeak: Close with an
// iterator (or snapshot) left open closes the store and reports it with
// ErrLeaked; closed first, nothing is reported. Pebble reports through a
// panic-free error too (LeakedIterators); bloomkv also reopens cleanly.
func TestPortPebbleDBIterLeak(t *testing.T) {
	for _, leak := range []bool{true, false} {
		for _, flush := range []bool{true, false} {
			fs := vfs.NewMem()
			db := ldbOpen(t, fs, nil)
			pbMust(t, db.Set([]byte("a"), []byte("a"), kv.NoSync))
			if flush {
				pbMust(t, db.Flush())
			}
			it, err := db.NewIter(nil)
			pbMust(t, err)
			it.First()
			if !leak {
				pbMust(t, it.Close())
			}
			err = db.Close()
			if leak != errors.Is(err, kv.ErrLeaked) || (!leak && err != nil) {
				t.Errorf("leak=%v flush=%v: Close = %v", leak, flush, err)
			}
			if leak {
				if err := it.Close(); err != nil && !errors.Is(err, kv.ErrClosed) {
					t.Errorf("flush=%v: leaked iterator's Close after the DB's = %v", flush, err)
				}
			}
			db = ldbOpen(t, fs, nil)
			pbWantGets(t, "reopened", db, "a=a")
			ldbClose(t, db)
		}
	}
}

// TestPortPebbleDBCacheEvict ports Pebble's TestCacheEvict: once a range's
// tables are compacted away and the store closes, the block cache holds
// none of their blocks. bloomkv's cache is the DB's own, so the check is
// that Metrics' cache size falls back after the deletion is compacted.
func TestPortPebbleDBCacheEvict(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	for i := 0; i < 1000; i++ {
		pbMust(t, db.Set([]byte(fmt.Sprintf("k%04d", i)), bytes.Repeat([]byte("v"), 100), kv.NoSync))
	}
	pbMust(t, db.Flush())
	for i := 0; i < 1000; i++ {
		_, err := db.Get([]byte(fmt.Sprintf("k%04d", i)))
		pbMust(t, err)
	}
	full := db.Metrics().BlockCache.Size
	if full == 0 {
		t.Fatalf("reads cached nothing")
	}
	pbMust(t, db.DeleteRange([]byte("k"), []byte("l"), kv.NoSync))
	pbMust(t, db.Compact([]byte("k"), []byte("l")))
	if n := ldbTables(db); n != 0 {
		t.Fatalf("%d tables left after compacting the deleted range", n)
	}
	if size := db.Metrics().BlockCache.Size; size >= full {
		t.Errorf("cache holds %d B after its tables were deleted, %d B before", size, full)
	}
}

// TestPortPebbleDBFlushEmpty ports Pebble's TestFlushEmpty: flushing an
// empty memtable writes no table and does not hang.
func TestPortPebbleDBFlushEmpty(t *testing.T) {
	db := ldbOpen(t, vfs.NewMem(), nil)
	defer ldbClose(t, db)
	pbMust(t, db.Flush())
	pbMust(t, db.Flush())
	if n := ldbTables(db); n != 0 {
		t.Errorf("Flush of an empty memtable wrote %d tables", n)
	}
}

// TestPortPebbleDBRollManifest ports Pebble's TestRollManifest: with a
// tiny MaxManifestFileSize, flushes roll the MANIFEST over to a new file;
// the replaced ones are deleted (Pebble keeps NumPrevManifest of them;
// bloomkv keeps none), and the store
// reopens with every table.
func TestPortPebbleDBRollManifest(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{MaxManifestFileSize: 1, DisableAutomaticCompactions: true}
	db := ldbOpen(t, fs, o)
	seen := map[string]bool{}
	for i := 0; i < 6; i++ {
		pbMust(t, db.Set([]byte(fmt.Sprintf("k%d", i)), []byte("v"), kv.NoSync))
		pbMust(t, db.Flush())
		pbMust(t, db.WaitIdle(context.Background())) // the cleaner's deletions
		for _, m := range ppManifests(t, fs) {
			seen[m] = true
		}
		if ms := ppManifests(t, fs); len(ms) != 1 {
			t.Errorf("flush %d: %d MANIFESTs kept: %v", i, len(ms), ms)
		}
	}
	if len(seen) < 3 {
		t.Errorf("6 flushes with MaxManifestFileSize 1 used %d MANIFESTs", len(seen))
	}
	ldbClose(t, db)
	db = ldbOpen(t, fs, o)
	defer ldbClose(t, db)
	if n := ldbTables(db); n != 6 {
		t.Errorf("reopened with %d tables, want 6", n)
	}
	pbWantGets(t, "reopened", db, "k0=v k5=v")
}

// ppManifests lists the MANIFEST files in fs's "db".
func ppManifests(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List("db")
	pbMust(t, err)
	var ms []string
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST-") {
			ms = append(ms, n)
		}
	}
	return ms
}
