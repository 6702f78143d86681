//go:build unix

package kv_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// Tests of the store on the disk (vfs.Default), where paths reach files
// through symbolic links, other spellings and other devices, as no
// in-memory FS does.

// checkRegularFiles fails unless every entry of dir is a regular file
// (no symbolic link) or a directory.
func checkRegularFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 {
			t.Fatalf("%s in %s is a symbolic link", e.Name(), dir)
		}
	}
}

// TestDB_Ingest_Symlink ingests tables given as symbolic links, relative
// and absolute: the store links (or copies) the file they lead to, not
// the link itself, so the table stays once the caller's link and file are
// removed, and the store reopens with it.
func TestDB_Ingest_Symlink(t *testing.T) {
	for _, tc := range []struct{ name, target string }{
		{"relative", "real.sst"},
		{"absolute", ""}, // the real file's absolute path
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, extDir := filepath.Join(dir, "db"), filepath.Join(dir, "ext")
			db, err := kv.Open(path, &kv.Options{FS: vfs.Default})
			must(t, err)
			defer db.Close()
			ext := keyRange("a", 0, 50, "x")
			real := filepath.Join(extDir, "real.sst")
			writeExternal(t, vfs.Default, real, ext, sstable.WriterOptions{})
			target := tc.target
			if target == "" {
				target = real
			}
			link := filepath.Join(extDir, "link.sst")
			if err := os.Symlink(target, link); err != nil {
				t.Skipf("no symbolic links here: %v", err)
			}
			must(t, db.Ingest([]string{link}))
			if _, err := os.Stat(real); err != nil {
				t.Fatalf("Ingest moved the caller's file: %v", err)
			}
			checkRegularFiles(t, path)
			must(t, os.RemoveAll(extDir))
			checkContents(t, db, ext, "after removing the ingested file")
			must(t, db.Close())
			checkDir(t, vfs.Default, path, ext, "reopened after removing the ingested file")
		})
	}
}

// TestOpen_TwiceAfterLockRemoved removes the LOCK file of an open store,
// then opens the store again from the same process by other spellings of
// its path (a symbolic link, one through ".."): each is refused, though
// the new LOCK file they would create is locked by no one, and the first
// DB keeps its writes.
func TestOpen_TwiceAfterLockRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db")
	db, err := kv.Open(path, &kv.Options{FS: vfs.Default})
	must(t, err)
	defer db.Close()
	must(t, os.Remove(filepath.Join(path, "LOCK")))
	link := filepath.Join(dir, "link")
	if err := os.Symlink(path, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	for _, p := range []string{link, dir + "/sub/../db", path} {
		if d2, err := kv.Open(p, &kv.Options{FS: vfs.Default}); err == nil || !strings.Contains(err.Error(), "in use") {
			if err == nil {
				d2.Close()
			}
			t.Fatalf("second Open through %s, the LOCK removed: err = %v", p, err)
		}
	}
	must(t, db.Set([]byte("k"), []byte("v"), kv.Sync))
	must(t, db.Close())
	checkDir(t, vfs.Default, link, map[string]string{"k": "v"}, "reopened through the link")
}

// otherDeviceDir returns a new directory on /dev/shm, removed at the
// end of the test, when /dev/shm is on another device than dir (hard
// links from one to the other fail with EXDEV); it skips the test
// otherwise.
func otherDeviceDir(t *testing.T, dir string) string {
	t.Helper()
	var a, b syscall.Stat_t
	if syscall.Stat("/dev/shm", &a) != nil || syscall.Stat(dir, &b) != nil || a.Dev == b.Dev {
		t.Skip("no /dev/shm on another device than the temporary directory")
	}
	shm, err := os.MkdirTemp("/dev/shm", "bloomkv-test-")
	if err != nil {
		t.Skipf("/dev/shm not writable: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	return shm
}

// sameFile reports whether paths a and b name one file.
func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Stat(a)
	must(t, err)
	fb, err := os.Stat(b)
	must(t, err)
	return os.SameFile(fa, fb)
}

// TestDB_AcrossDevices ingests a table from another device, as a symbolic
// link too, and checkpoints the store to another device: hard links fail
// there, so the files are copied, whole, independent of their sources,
// which stay in place.
func TestDB_AcrossDevices(t *testing.T) {
	dir := t.TempDir()
	shm := otherDeviceDir(t, dir)
	path := filepath.Join(dir, "db")
	db, err := kv.Open(path, &kv.Options{FS: vfs.Default})
	must(t, err)
	defer db.Close()
	a, b := keyRange("a", 0, 200, "x"), keyRange("b", 0, 200, "y")
	writeExternal(t, vfs.Default, filepath.Join(shm, "a.sst"), a, sstable.WriterOptions{})
	writeExternal(t, vfs.Default, filepath.Join(shm, "b.sst"), b, sstable.WriterOptions{})
	must(t, os.Symlink(filepath.Join(shm, "b.sst"), filepath.Join(dir, "b-link.sst")))
	srcA, err := os.ReadFile(filepath.Join(shm, "a.sst"))
	must(t, err)
	must(t, db.Ingest([]string{filepath.Join(shm, "a.sst"), filepath.Join(dir, "b-link.sst")}))
	checkRegularFiles(t, path)
	var copied []string
	entries, _ := os.ReadDir(path)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sst") {
			copied = append(copied, filepath.Join(path, e.Name()))
		}
	}
	if len(copied) != 2 {
		t.Fatalf("store holds tables %v, want the 2 ingested", copied)
	}
	if got, err := os.ReadFile(copied[0]); err != nil || string(got) != string(srcA) {
		t.Fatalf("copy of a.sst: %d bytes, %v; want the %d bytes of the source", len(got), err, len(srcA))
	}
	for _, src := range []string{"a.sst", "b.sst"} {
		if _, err := os.Stat(filepath.Join(shm, src)); err != nil {
			t.Fatalf("Ingest did not leave %s in place: %v", src, err)
		}
	}
	must(t, os.Remove(filepath.Join(shm, "a.sst")))
	must(t, os.Remove(filepath.Join(shm, "b.sst")))
	want := keyRange("a", 0, 200, "x")
	maps.Copy(want, b)
	must(t, db.Set([]byte("c"), []byte("wal"), kv.NoSync))
	want["c"] = "wal"
	checkContents(t, db, want, "after ingesting copies")

	ckpt := filepath.Join(shm, "ckpt")
	must(t, db.Checkpoint(ckpt))
	for _, p := range copied {
		if sameFile(t, p, filepath.Join(ckpt, filepath.Base(p))) {
			t.Fatalf("checkpoint's %s is the store's file, on another device", filepath.Base(p))
		}
	}
	must(t, db.Set([]byte("d"), []byte("later"), kv.Sync))
	must(t, db.Close())
	checkDir(t, vfs.Default, ckpt, want, "checkpoint on another device")
	want["d"] = "later"
	checkDir(t, vfs.Default, path, want, "store reopened")
}

// TestOpen_PathSpellings opens stores whose paths hold spaces, non-ASCII
// names, "..", a relative spelling and a length near PATH_MAX, with a
// stray file and a subdirectory of the user's in the directory: each
// store keeps its writes through a flush, a compaction and a reopen by
// another spelling, and the user's entries are left alone.
func TestOpen_PathSpellings(t *testing.T) {
	dir := t.TempDir()
	long := dir
	for len(long) < 3900 { // PATH_MAX is 4096 on Linux
		long = filepath.Join(long, strings.Repeat("d", 200))
	}
	wd, err := os.Getwd()
	must(t, err)
	t.Cleanup(func() { os.Chdir(wd) })
	must(t, os.Chdir(dir))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	for _, tc := range []struct{ name, path, again string }{
		{"spaces", filepath.Join(dir, "my store"), "./my store"},
		{"non-ASCII", filepath.Join(dir, "ストア-ß"), "sub/../ストア-ß"},
		{"relative", "rel", filepath.Join(dir, "rel")},
		{"dotdot", "sub/../dotdot", "dotdot/"},
		{"long", long, long + "/."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			must(t, os.MkdirAll(filepath.Join(tc.path, "user dir"), 0o755))
			stray := filepath.Join(tc.path, "notes.txt")
			must(t, os.WriteFile(stray, []byte("mine"), 0o644))
			db, err := kv.Open(tc.path, &kv.Options{FS: vfs.Default})
			must(t, err)
			want := keyRange("k", 0, 100, "v")
			for k, v := range want {
				must(t, db.Set([]byte(k), []byte(v), kv.NoSync))
			}
			must(t, db.Flush())
			must(t, db.Compact(nil, nil))
			must(t, db.Set([]byte("w"), []byte("wal"), kv.Sync))
			want["w"] = "wal"
			if d2, err := kv.Open(tc.again, &kv.Options{FS: vfs.Default}); err == nil || !strings.Contains(err.Error(), "in use") {
				if err == nil {
					d2.Close()
				}
				t.Fatalf("second Open as %q: err = %v", tc.again, err)
			}
			must(t, db.Close())
			checkDir(t, vfs.Default, tc.again, want, "reopened as "+tc.again)
			if got, err := os.ReadFile(stray); err != nil || string(got) != "mine" {
				t.Fatalf("stray file: %q, %v", got, err)
			}
			if fi, err := os.Stat(filepath.Join(tc.path, "user dir")); err != nil || !fi.IsDir() {
				t.Fatalf("user's subdirectory: %v", err)
			}
		})
	}
}

// TestDB_Checkpoint_InsideStore checkpoints a store on the disk into a
// subdirectory of its own directory and to a relative path whose parents
// are missing: the store's compactions and its next Open leave the
// checkpoint alone (its tables are hard links, not the store's files),
// and both open with the writes made before.
func TestDB_Checkpoint_InsideStore(t *testing.T) {
	dir := t.TempDir()
	wd, err := os.Getwd()
	must(t, err)
	t.Cleanup(func() { os.Chdir(wd) })
	must(t, os.Chdir(dir))
	db, err := kv.Open("db", &kv.Options{FS: vfs.Default})
	must(t, err)
	want := keyRange("k", 0, 100, "v")
	for k, v := range want {
		must(t, db.Set([]byte(k), []byte(v), kv.NoSync))
	}
	must(t, db.Flush())
	inside, rel := filepath.Join(dir, "db", "ckpt"), "a/b/ckpt"
	must(t, db.Checkpoint(inside))
	must(t, db.Checkpoint(rel))
	for k := range want {
		must(t, db.Delete([]byte(k), kv.NoSync))
	}
	must(t, db.Compact(nil, nil))
	must(t, db.Close())
	checkDir(t, vfs.Default, "db", map[string]string{}, "store reopened")
	checkDir(t, vfs.Default, inside, want, "checkpoint inside the store")
	checkDir(t, vfs.Default, filepath.Join(dir, rel), want, "checkpoint to a relative path")
}
