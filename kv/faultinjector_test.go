package kv_test

// Helpers of the error-injection tests: an errorfs injector that can be
// armed and says what it failed, and copying an in-memory store.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// faultInjector fails one operation with errorfs.ErrInjected: once armed
// with index n, the n-th operation after that (counting from 0, reads
// included), as errorfs.OnIndex counts them. It remembers the operation it
// failed. Armed with a negative index it counts operations and fails none.
type faultInjector struct {
	mu    sync.Mutex
	index *errorfs.InjectIndex // nil: disarmed
	fired string
	seen  int
}

func (f *faultInjector) arm(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n < 0 {
		n = math.MaxInt32
	}
	f.index = errorfs.OnIndex(int32(n))
	f.fired, f.seen = "", 0
}

// disarm stops injecting; firedOp still tells what failed.
func (f *faultInjector) disarm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.index = nil
}

// MaybeError implements errorfs.Injector.
func (f *faultInjector) MaybeError(op errorfs.Op, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.index == nil {
		return nil
	}
	f.seen++
	err := f.index.MaybeError(op, path)
	if err != nil {
		f.fired = opName(op) + " " + path
	}
	return err
}

// firedOp returns the operation failed, or "" if none was.
func (f *faultInjector) firedOp() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// opsSeen returns the number of operations since arm.
func (f *faultInjector) opsSeen() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen
}

var opNames = map[errorfs.Op]string{
	errorfs.OpCreate: "create", errorfs.OpLink: "link", errorfs.OpOpen: "open",
	errorfs.OpOpenDir: "opendir", errorfs.OpRemove: "remove", errorfs.OpRemoveAll: "removeall",
	errorfs.OpRename: "rename", errorfs.OpReuseForRewrite: "reuse", errorfs.OpMkdirAll: "mkdirall",
	errorfs.OpLock: "lock", errorfs.OpList: "list", errorfs.OpFilePreallocate: "preallocate",
	errorfs.OpStat: "stat", errorfs.OpGetDiskUsage: "diskusage", errorfs.OpFileClose: "close",
	errorfs.OpFileRead: "read", errorfs.OpFileReadAt: "readat", errorfs.OpFileWrite: "write",
	errorfs.OpFileWriteAt: "writeat", errorfs.OpFileStat: "fstat", errorfs.OpFileSync: "sync",
	errorfs.OpFileFlush: "flush",
}

func opName(op errorfs.Op) string {
	if s, ok := opNames[op]; ok {
		return s
	}
	return fmt.Sprintf("op%d", int(op))
}

// copyDir returns a new in-memory FS holding a copy of dir's files in src.
func copyDir(t testing.TB, src vfs.FS, dir string) *vfs.MemFS {
	t.Helper()
	dst := vfs.NewMem()
	if err := dst.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := src.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if name == "LOCK" {
			continue
		}
		if err := copyFile(src, dst, src.PathJoin(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// readFSFile returns the contents of file name of fs.
func readFSFile(t testing.TB, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	if err = errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	return data
}

// writeFSFile creates file name of fs holding data, synced.
func writeFSFile(t testing.TB, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(data)
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		t.Fatal(err)
	}
}

func copyFile(src, dst vfs.FS, path string) (err error) {
	in, err := src.Open(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, in.Close()) }()
	data, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	out, err := dst.Create(path)
	if err != nil {
		return err
	}
	if _, err := out.Write(data); err != nil {
		return errors.Join(err, out.Close())
	}
	return out.Close()
}
