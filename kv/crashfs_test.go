package kv_test

// crashFS, a vfs.FS that loses power after a given number of operations.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/cockroachdb/pebble/vfs"
)

// errPowerLoss is what every operation that would change the filesystem
// returns once the power is off.
var errPowerLoss = errors.New("crashfs: power lost")

// crashFS passes every operation to an underlying FS and counts those that
// change it: creating, linking, renaming and removing files and
// directories, taking locks, and writing, preallocating and syncing files.
// The crashAt-th such operation (counting from 0) and every later one fail
// with errPowerLoss without reaching the FS: the machine is off, so nothing
// more is written and nothing more becomes durable. Reads still work, as
// from a page cache nobody writes to. Over a vfs.NewStrictMem, the crash
// is then completed with ResetToSyncedState, which drops all that was not
// synced.
type crashFS struct {
	vfs.FS

	mu      sync.Mutex
	ops     int
	crashAt int // -1: never
	crashed bool
	crashOp string // the first operation refused
	recent  opLog  // the operations before the crash
}

func newCrashFS(fs vfs.FS) *crashFS { return &crashFS{FS: fs, crashAt: -1} }

// arm makes operation n (counted from the start) the first to fail.
func (fs *crashFS) arm(n int) {
	fs.mu.Lock()
	fs.crashAt = n
	fs.mu.Unlock()
}

// count returns the number of changing operations carried out so far.
func (fs *crashFS) count() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.ops
}

// isCrashed reports whether the power is off.
func (fs *crashFS) isCrashed() bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.crashed
}

// firstRefused returns the operation the crash refused first, or "".
func (fs *crashFS) firstRefused() string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.crashOp
}

// lastOps lists the operations carried out just before the crash.
func (fs *crashFS) lastOps() string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.recent.String()
}

// step admits or refuses one changing operation.
func (fs *crashFS) step(op, name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if !fs.crashed && fs.ops == fs.crashAt {
		fs.crashed = true
		fs.crashOp = op
		fs.recent.add("CRASH before %s %s", op, name)
	}
	if fs.crashed {
		return fmt.Errorf("%s %s: %w", op, name, errPowerLoss)
	}
	fs.recent.add("op %d: %s %s", fs.ops, op, name)
	fs.ops++
	return nil
}

func (fs *crashFS) wrap(f vfs.File, name string) vfs.File {
	return &crashFile{File: f, fs: fs, name: name}
}

func (fs *crashFS) Create(name string) (vfs.File, error) {
	if err := fs.step("create", name); err != nil {
		return nil, err
	}
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return fs.wrap(f, name), nil
}

func (fs *crashFS) Link(oldname, newname string) error {
	if err := fs.step("link", newname); err != nil {
		return err
	}
	return fs.FS.Link(oldname, newname)
}

func (fs *crashFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	return fs.wrap(f, name), nil
}

func (fs *crashFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := fs.step("open-rw", name); err != nil {
		return nil, err
	}
	f, err := fs.FS.OpenReadWrite(name, opts...)
	if err != nil {
		return nil, err
	}
	return fs.wrap(f, name), nil
}

func (fs *crashFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return fs.wrap(f, name), nil
}

func (fs *crashFS) Remove(name string) error {
	if err := fs.step("remove", name); err != nil {
		return err
	}
	return fs.FS.Remove(name)
}

func (fs *crashFS) RemoveAll(name string) error {
	if err := fs.step("remove-all", name); err != nil {
		return err
	}
	return fs.FS.RemoveAll(name)
}

func (fs *crashFS) Rename(oldname, newname string) error {
	if err := fs.step("rename", oldname+" -> "+newname); err != nil {
		return err
	}
	return fs.FS.Rename(oldname, newname)
}

func (fs *crashFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	if err := fs.step("reuse", oldname+" -> "+newname); err != nil {
		return nil, err
	}
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	if err != nil {
		return nil, err
	}
	return fs.wrap(f, newname), nil
}

func (fs *crashFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := fs.step("mkdir", dir); err != nil {
		return err
	}
	return fs.FS.MkdirAll(dir, perm)
}

func (fs *crashFS) Lock(name string) (io.Closer, error) {
	if err := fs.step("lock", name); err != nil {
		return nil, err
	}
	return fs.FS.Lock(name)
}

// crashFile counts the changing operations on one file.
type crashFile struct {
	vfs.File
	fs   *crashFS
	name string
}

func (f *crashFile) Write(p []byte) (int, error) {
	if err := f.fs.step(fmt.Sprintf("write %d B", len(p)), f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *crashFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.step(fmt.Sprintf("write %d B at %d", len(p), off), f.name); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *crashFile) Preallocate(off, n int64) error {
	if err := f.fs.step("preallocate", f.name); err != nil {
		return err
	}
	return f.File.Preallocate(off, n)
}

func (f *crashFile) Sync() error {
	if err := f.fs.step("sync", f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *crashFile) SyncData() error {
	if err := f.fs.step("syncdata", f.name); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *crashFile) SyncTo(length int64) (bool, error) {
	if err := f.fs.step("syncto", f.name); err != nil {
		return false, err
	}
	return f.File.SyncTo(length)
}
