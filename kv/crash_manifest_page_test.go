package kv_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// pageSize is the unit in which a file's unsynced bytes reach the disk,
// in any order.
const pageSize = 4096

// pageCrashFS cuts the power at the first sync of a MANIFEST whose
// unsynced bytes cross a page boundary with at least a record header's
// worth past it, and notes the file, its synced size and its size then.
type pageCrashFS struct {
	*crashFS
	mu       sync.Mutex
	synced   map[string]int64
	hit      string
	from, to int64
}

func (fs *pageCrashFS) Create(name string) (vfs.File, error) {
	f, err := fs.crashFS.Create(name)
	if err != nil || !strings.Contains(name, "MANIFEST") {
		return f, err
	}
	return &pageCrashFile{File: f, fs: fs, name: name}, nil
}

type pageCrashFile struct {
	vfs.File
	fs   *pageCrashFS
	name string
}

func (f *pageCrashFile) Sync() error {
	st, err := f.File.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	f.fs.mu.Lock()
	from := f.fs.synced[f.name]
	boundary := (from/pageSize + 1) * pageSize
	if f.fs.hit == "" && from > 0 && size-7 >= boundary && !f.fs.isCrashed() {
		f.fs.hit, f.fs.from, f.fs.to = f.name, from, size
		f.fs.arm(f.fs.count()) // this sync and every later change fail
	}
	f.fs.mu.Unlock()
	if err := f.File.Sync(); err != nil {
		return err
	}
	f.fs.mu.Lock()
	f.fs.synced[f.name] = size
	f.fs.mu.Unlock()
	return nil
}

// TestCrash_ManifestPagesOutOfOrder crashes the machine while a flush's
// MANIFEST edit is being synced, the edit crossing a page boundary, and
// leaves the disk as a file system may: the page past the boundary
// written back, the one before it not (zeros after the synced bytes).
// The edit was never acknowledged and nothing acted on it: Open must
// succeed, with every Sync write.
func TestCrash_ManifestPagesOutOfOrder(t *testing.T) {
	mem := vfs.NewStrictMem()
	fs := &pageCrashFS{crashFS: newCrashFS(mem), synced: map[string]int64{}}
	db, err := kv.Open("db", reopenOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i < 500 && fs.hit == ""; i++ {
		k, v := fmt.Sprintf("k%04d", i), fmt.Sprintf("v%d", i)
		if err := db.Set([]byte(k), []byte(v), kv.Sync); err != nil {
			t.Fatal(err)
		}
		want[k] = v
		if err := db.Flush(); err != nil && fs.hit == "" {
			t.Fatal(err)
		}
	}
	_ = db.Close() // fails, with the power off
	if fs.hit == "" {
		t.Fatal("no MANIFEST sync crossed a page boundary")
	}
	disk := readFSFile(t, mem, fs.hit)[:fs.to] // the page cache's
	mem.ResetToSyncedState()
	boundary := (fs.from/pageSize + 1) * pageSize
	clear(disk[fs.from:boundary])
	writeFSFile(t, mem, fs.hit, disk)
	t.Logf("%s: synced up to %d, %d when the power went; bytes %d to %d never written", fs.hit, fs.from, fs.to, fs.from, boundary)
	db, err = kv.Open("db", reopenOpts(mem))
	if err != nil {
		t.Fatalf("Open after a crash during a MANIFEST edit's sync: %v", err)
	}
	defer db.Close()
	got, err := readAll(db.NewIter)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffMaps(got, want); d != "" {
		t.Fatalf("contents: %s", d)
	}
}
