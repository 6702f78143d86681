package kv_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// TestPortPebbleDBOpenCloseOpenClose ports Pebble's
// TestOpenCloseOpenClose: on the OS's file system and in memory, in a
// directory that exists or not (nested), start empty or with a write,
// open, close and open again; ErrorIfExists and ErrorIfNotExists refuse
// as they say; the writes survive each cycle.
func TestPortPebbleDBOpenCloseOpenClose(t *testing.T) {
	fss := map[string]func() (vfs.FS, string){
		"disk": func() (vfs.FS, string) { return vfs.Default, t.TempDir() },
		"mem":  func() (vfs.FS, string) { return vfs.NewMem(), "" },
	}
	if testing.Short() {
		delete(fss, "disk") // fsyncs: most of the test's time
	}
	for name, mk := range fss {
		for _, sub := range []string{"", "sub", "non-existent/sub"} {
			for _, length := range []int{-1, 0, 1000} {
				fs, root := mk()
				dir := filepath.Join(root, sub, "db")
				ppOpenCloseOpenClose(t, fmt.Sprintf("%s/%s/%d", name, sub, length), fs, dir, length)
			}
		}
	}
}

// ppOpenCloseOpenClose runs one case of TestPortPebbleDBOpenCloseOpenClose:
// length -1 writes nothing, else a value of length bytes under "key".
func ppOpenCloseOpenClose(t *testing.T, what string, fs vfs.FS, dir string, length int) {
	if _, err := kv.Open(dir, &kv.Options{FS: fs, ErrorIfNotExists: true}); !errors.Is(err, kv.ErrDBDoesNotExist) {
		t.Fatalf("%s: Open of a missing store with ErrorIfNotExists = %v", what, err)
	}
	o := &kv.Options{FS: fs, ErrorIfExists: true}
	db, err := kv.Open(dir, o)
	pbMust(t, err)
	want := "-"
	if length >= 0 {
		want = strings.Repeat("x", length)
		pbMust(t, db.Set([]byte("key"), []byte(want), kv.NoSync))
	}
	pbMust(t, db.Close())
	if _, err := kv.Open(dir, o); !errors.Is(err, kv.ErrDBAlreadyExists) {
		t.Fatalf("%s: second Open with ErrorIfExists = %v", what, err)
	}
	for i := 0; i < 2; i++ {
		db, err = kv.Open(dir, &kv.Options{FS: fs, ErrorIfNotExists: true})
		pbMust(t, err)
		if got := pbGet(t, db, "key"); got != want {
			t.Errorf("%s: reopen %d: Get(key) = %.10q, want %.10q", what, i, got, want)
		}
		pbMust(t, db.Close())
	}
}

// TestPortPebbleDBOpenOptionsCheck ports Pebble's TestOpenOptionsCheck: a
// store written with one comparer refuses to open with another (Pebble
// also checks its merger, which bloomkv has not); bad options are refused
// before any file is touched.
func TestPortPebbleDBOpenOptionsCheck(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	pbMust(t, db.Set([]byte("a"), []byte("a"), kv.NoSync))
	ldbClose(t, db)
	other := *sstable.DefaultComparer
	other.Name = "test-comparer"
	if _, err := kv.Open("db", &kv.Options{FS: fs, Comparer: &other}); err == nil ||
		!strings.Contains(err.Error(), "test-comparer") {
		t.Errorf("Open with another comparer = %v", err)
	}
	if _, err := kv.Open("fresh", &kv.Options{FS: fs, MemTableSize: -1}); err == nil {
		t.Errorf("Open with a negative MemTableSize succeeded")
	}
	if _, err := fs.Stat("fresh"); err == nil {
		t.Errorf("a refused Open created its directory")
	}
	db = ldbOpen(t, fs, nil)
	defer ldbClose(t, db)
	pbWantGets(t, "default comparer", db, "a=a")
}

// TestPortPebbleDBOpenReadOnly ports Pebble's TestOpenReadOnly: a missing
// store is not created; a store's WAL is replayed without being changed;
// writes, Flush and Compact are refused with ErrReadOnly; no file of the
// store is created, changed or removed, and a later read-write Open sees
// everything.
func TestPortPebbleDBOpenReadOnly(t *testing.T) {
	fs := vfs.NewMem()
	if _, err := kv.Open("db", &kv.Options{FS: fs, ReadOnly: true}); err == nil {
		t.Errorf("read-only Open of a missing store succeeded")
	}
	if _, err := fs.Stat("db"); err == nil {
		t.Errorf("read-only Open of a missing store created its directory")
	}
	db := ldbOpen(t, fs, nil)
	pbMust(t, db.Set([]byte("flushed"), []byte("1"), kv.NoSync))
	pbMust(t, db.Flush())
	pbMust(t, db.Set([]byte("wal"), []byte("2"), kv.NoSync))
	ldbClose(t, db)
	before := ppFiles(t, fs)
	ro := ldbOpen(t, fs, &kv.Options{ReadOnly: true})
	pbWantGets(t, "read-only", ro, "flushed=1 wal=2")
	for what, err := range map[string]error{
		"Set":         ro.Set([]byte("x"), nil, kv.NoSync),
		"Delete":      ro.Delete([]byte("x"), kv.Sync),
		"DeleteRange": ro.DeleteRange([]byte("a"), []byte("z"), kv.NoSync),
		"Apply":       ro.Apply(pbBatch(t, ro, "set x 1"), kv.NoSync),
		"Flush":       ro.Flush(),
		"Compact":     ro.Compact([]byte("a"), []byte("z")),
	} {
		if !errors.Is(err, kv.ErrReadOnly) {
			t.Errorf("read-only %s = %v, want ErrReadOnly", what, err)
		}
	}
	ldbClose(t, ro)
	if after := ppFiles(t, fs); after != before {
		t.Errorf("read-only Open changed the store:\nbefore %s\nafter  %s", before, after)
	}
	db = ldbOpen(t, fs, nil)
	defer ldbClose(t, db)
	pbWantGets(t, "read-write after read-only", db, "flushed=1 wal=2 x=-")
}

// ppFiles describes fs's "db": each file's name and size.
func ppFiles(t *testing.T, fs vfs.FS) string {
	t.Helper()
	names, err := fs.List("db")
	pbMust(t, err)
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fi, err := fs.Stat(fs.PathJoin("db", n))
		pbMust(t, err)
		fmt.Fprintf(&b, "%s:%d ", n, fi.Size())
	}
	return b.String()
}
