package kv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// TestDB_DirRemovedWhileOpen removes the store's directory while the
// store is open: a Sync write, whose WAL file is then in no directory,
// fails rather than being acknowledged into a file no Open will find,
// later writes fail too, and Close reports the failure without a panic.
func TestDB_DirRemovedWhileOpen(t *testing.T) {
	for _, bg := range []bool{false, true} {
		t.Run(fmt.Sprintf("BackgroundWALWrites=%v", bg), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "db")
			db, err := kv.Open(path, &kv.Options{FS: vfs.Default, BackgroundWALWrites: bg})
			must(t, err)
			must(t, db.Set([]byte("a"), []byte("1"), kv.Sync))
			must(t, os.RemoveAll(path))
			if err := db.Set([]byte("b"), []byte("2"), kv.Sync); err == nil {
				t.Fatal("Sync write into a removed store acknowledged")
			}
			if err := db.Set([]byte("c"), []byte("3"), kv.NoSync); err == nil {
				t.Fatal("write after a failed Sync write acknowledged")
			}
			if err := db.Close(); err == nil {
				t.Fatal("Close of a removed store reported nothing")
			}
		})
	}
}
