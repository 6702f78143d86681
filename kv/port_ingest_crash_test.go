package kv_test

// Scenarios of Pebble v1.1.5's ingest_test.go about failures and crashes
// (TestIngestFileNumReuseCrash, TestIngestCleanup) and those that do not
// apply (TestIngestShared, TestIngestExternal). TestIngestError is
// TestErrorFS_Ingest's; an Ingest overlapping Close is
// TestDB_Ingest_CloseWaits'.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// linkCrashFS panics after each hard link it makes, as a process dying
// between linking a table into the store and recording it would.
type linkCrashFS struct{ vfs.FS }

func (fs linkCrashFS) Link(oldname, newname string) error {
	if err := fs.FS.Link(oldname, newname); err != nil {
		return err
	}
	panic(errors.New("crash after link"))
}

// noRemoveFS fails every Remove.
type noRemoveFS struct{ vfs.FS }

func (noRemoveFS) Remove(name string) error {
	return &os.PathError{Op: "remove", Path: name, Err: errors.New("injected")}
}

// TestPortIngest_FileNumReuseCrash ports TestIngestFileNumReuseCrash, on
// the OS's filesystem so that tables are hard-linked: Ingests crash after
// linking, leaving the store's directory with unrecorded tables that are
// links to the external files. Reopened with removals failing, the store
// must not write a new table under one of their numbers: that would
// overwrite the external file through the shared link.
func TestPortIngest_FileNumReuseCrash(t *testing.T) {
	dir := t.TempDir()
	fs := vfs.Default
	dbDir := filepath.Join(dir, "db")
	db, err := kv.Open(dbDir, &kv.Options{FS: linkCrashFS{fs}})
	must(t, err)
	must(t, db.Set([]byte("boop"), []byte("v"), kv.NoSync))
	must(t, db.Flush())
	var ext [][]byte
	for i := range 5 {
		p := filepath.Join(dir, fmt.Sprintf("ext%d", i))
		writePortTable(t, fs, p, sstable.WriterOptions{}, fmt.Sprintf("foo%d=v", i))
		ext = append(ext, readFSFile(t, fs, p))
		func() {
			defer func() { recover() }()
			db.Ingest([]string{p})
		}()
	}
	must(t, db.Set([]byte("wal"), []byte("v"), kv.NoSync))
	must(t, db.Close())
	names, err := fs.List(dbDir)
	must(t, err)
	if n := len(slices.DeleteFunc(names, func(n string) bool { return !strings.HasSuffix(n, ".sst") })); n < 6 {
		t.Fatalf("%d tables in the store, want its own and 5 left by the crashed Ingests", n)
	}

	db, err = kv.Open(dbDir, &kv.Options{FS: noRemoveFS{fs}})
	must(t, err)
	for i := range 3 {
		must(t, db.Set([]byte(fmt.Sprint("bar", i)), []byte("v"), kv.NoSync))
		must(t, db.Flush())
	}
	must(t, db.Compact(nil, nil))
	checkContents(t, db, map[string]string{"boop": "v", "wal": "v", "bar0": "v", "bar1": "v", "bar2": "v"}, "after the reopen")
	must(t, db.Close())
	for i, want := range ext {
		if got := readFSFile(t, fs, filepath.Join(dir, fmt.Sprintf("ext%d", i))); !slices.Equal(got, want) {
			t.Fatalf("external file ext%d changed through a link the crashed Ingest left", i)
		}
	}
}

// failCreateFS fails the creation of tables in the store's directory
// once armed; hard links go through.
type failCreateFS struct {
	vfs.FS
	armed atomic.Bool
}

func (fs *failCreateFS) Create(name string) (vfs.File, error) {
	if fs.armed.Load() && strings.HasPrefix(name, "db/") && strings.HasSuffix(name, ".sst") {
		return nil, &os.PathError{Op: "create", Path: name, Err: errors.New("injected")}
	}
	return fs.FS.Create(name)
}

// TestPortIngest_Cleanup ports TestIngestCleanup: an Ingest that fails
// after linking its tables (here: the flush of the memtable before it
// fails) removes the tables it linked, leaves the files given in place,
// and the store reopens without the ingested keys.
func TestPortIngest_Cleanup(t *testing.T) {
	mem := vfs.NewMem()
	fs := &failCreateFS{FS: mem}
	db, err := kv.Open("db", &kv.Options{FS: fs})
	must(t, err)
	must(t, db.Set([]byte("a"), []byte("1"), kv.Sync))
	writePortTable(t, mem, "ext/1.sst", sstable.WriterOptions{}, "b=1")
	writePortTable(t, mem, "ext/2.sst", sstable.WriterOptions{}, "c=1")
	before, err := mem.List("db")
	must(t, err)
	fs.armed.Store(true)
	if err := db.Ingest([]string{"ext/1.sst", "ext/2.sst"}); err == nil {
		t.Fatal("Ingest succeeded with its flush failing")
	}
	fs.armed.Store(false)
	after, err := mem.List("db")
	must(t, err)
	for _, name := range after {
		if strings.HasSuffix(name, ".sst") && !slices.Contains(before, name) {
			t.Fatalf("the failed Ingest left %s in the store", name)
		}
	}
	for _, p := range []string{"ext/1.sst", "ext/2.sst"} {
		if _, err := mem.Stat(p); err != nil {
			t.Fatalf("%s gone: %v", p, err)
		}
	}
	db.Close() // the failed flush stopped the store; Close reports it
	checkStore(t, mem, map[string]string{"a": "1"}, "reopened after the failed Ingest")
}

// TestPortIngest_SharedExternal stands for TestIngestShared and
// TestIngestExternal: bloomkv has no shared or external (remote) storage.
func TestPortIngest_SharedExternal(t *testing.T) {
	t.Skip("bloomkv has no shared or external object storage to ingest from")
}
