package kv_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestCrash_OpenRetriedThenMachineCrash fails the first Open of a new
// store at each of its changes of the file system in turn, the machine
// staying up; a second Open then creates the store in the directory the
// first left and acknowledges a Sync write, and the machine crashes. The
// write must survive: the second Open must make durable the directory
// entries the first added and did not sync.
func TestCrash_OpenRetriedThenMachineCrash(t *testing.T) {
	for n := 0; ; n++ {
		mem := vfs.NewStrictMem()
		if err := mem.MkdirAll("data", 0o755); err != nil {
			t.Fatal(err)
		}
		syncMemDir(t, mem, "")
		fs := newCrashFS(mem)
		fs.arm(n)
		db, err := kv.Open("data/db", &kv.Options{FS: fs})
		if err == nil {
			fs.arm(-1)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if n < 3 {
				t.Fatalf("the first Open made only %d changes", n)
			}
			return // every change of the first Open has failed once
		}
		where := fmt.Sprintf("first Open failed at change %d (%s)", n, fs.firstRefused())
		fs = newCrashFS(mem) // the process restarts
		db, err = kv.Open("data/db", &kv.Options{FS: fs})
		if err != nil {
			t.Fatalf("%s: second Open: %v", where, err)
		}
		if err := db.Set([]byte("k"), []byte("v"), kv.Sync); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		fs.arm(fs.count()) // the machine crashes
		_ = db.Close()     // fails, with the power off
		mem.ResetToSyncedState()
		db, err = kv.Open("data/db", &kv.Options{FS: mem, ErrorIfNotExists: true})
		if err != nil {
			t.Fatalf("%s: Open after the machine crash: %v", where, err)
		}
		if v, err := db.Get([]byte("k")); err != nil || string(v) != "v" {
			t.Fatalf("%s: the acknowledged Sync write reads %q, %v", where, v, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCrash_CheckpointRetriedThenMachineCrash fails a Checkpoint into a
// new directory at each of its changes of the file system in turn, the
// machine staying up; a second Checkpoint then succeeds, and the machine
// crashes: the checkpoint must be there, whole.
func TestCrash_CheckpointRetriedThenMachineCrash(t *testing.T) {
	for n := 0; ; n++ {
		mem := vfs.NewStrictMem()
		fs := newCrashFS(mem)
		db, err := kv.Open("db", &kv.Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Set([]byte("k"), []byte("v"), kv.Sync); err != nil {
			t.Fatal(err)
		}
		fs.arm(fs.count() + n)
		err = db.Checkpoint("backup/ckpt")
		refused := fs.firstRefused()
		fs.arm(-1)
		if err == nil && refused == "" {
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if n < 3 {
				t.Fatalf("the first Checkpoint made only %d changes", n)
			}
			return
		}
		if err := db.Close(); err != nil && !errors.Is(err, errPowerLoss) {
			t.Fatal(err)
		}
		where := fmt.Sprintf("first Checkpoint failed at change %d (%s)", n, refused)
		db, err = kv.Open("db", &kv.Options{FS: mem})
		if err != nil {
			t.Fatalf("%s: reopen: %v", where, err)
		}
		err = db.Checkpoint("backup/ckpt")
		if errors.Is(err, os.ErrExist) {
			// The first one failed once it had renamed its directory
			// into place: the caller removes it and tries again.
			if err := mem.RemoveAll("backup/ckpt"); err != nil {
				t.Fatal(err)
			}
			err = db.Checkpoint("backup/ckpt")
		}
		if err != nil {
			t.Fatalf("%s: second Checkpoint: %v", where, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		mem.ResetToSyncedState()
		got, err := readDir(mem, "backup/ckpt")
		if err != nil || got["k"] != "v" {
			t.Fatalf("%s: the checkpoint after the machine crash: %v, %v", where, got, err)
		}
	}
}

// syncMemDir syncs directory dir of fs, failing the test if it cannot.
func syncMemDir(t *testing.T, fs vfs.FS, dir string) {
	t.Helper()
	d, err := fs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	d.Close()
}

// dirSyncFailFS fails the Sync of directory dir with EINVAL, as Linux
// does for a directory on squashfs or iso9660.
type dirSyncFailFS struct {
	vfs.FS
	dir string
}

type dirSyncFailFile struct{ vfs.File }

func (dirSyncFailFile) Sync() error {
	return &os.PathError{Op: "sync", Path: "dir", Err: syscall.EINVAL}
}

func (fs dirSyncFailFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err == nil && filepath.Clean(name) == fs.dir {
		return dirSyncFailFile{f}, nil
	}
	return f, err
}

// TestOpen_AncestorThatCannotSync reopens a store on the disk where its
// directory's parent's parent cannot be synced: the Open succeeds, since
// that ancestor existed before (its sync is best effort). A store
// created in a new directory whose parent cannot be synced is refused:
// the entry it adds there must survive a crash.
func TestOpen_AncestorThatCannotSync(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "a", "db")
	db, err := kv.Open(dir, &kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("k"), []byte("v"), kv.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = kv.Open(dir, &kv.Options{FS: dirSyncFailFS{vfs.Default, tmp}, ErrorIfNotExists: true})
	if err != nil {
		t.Fatalf("reopen with %s unable to sync: %v", tmp, err)
	}
	if v, err := db.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(tmp, "b", "db")
	if db, err := kv.Open(fresh, &kv.Options{FS: dirSyncFailFS{vfs.Default, tmp}}); err == nil || !errors.Is(err, syscall.EINVAL) {
		if err == nil {
			db.Close()
		}
		t.Fatalf("Open creating %s under an unsyncable %s: %v, want EINVAL", fresh, tmp, err)
	}
}
