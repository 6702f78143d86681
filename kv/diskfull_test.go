package kv_test

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// These tests run a store out of disk space. Unlike errorfs, which fails
// one whole call once, a full disk (diskFullFS) writes what fits, fails the
// rest with ENOSPC, and stays full: every later write, preallocation and
// file creation fails too. The rule: from the first failure on, the error
// wraps syscall.ENOSPC and no write is acknowledged; Close may report it;
// Open on the full disk fails with it or opens the right contents; and
// once the disk has room, Open shows every acknowledged write and the
// failed one wholly or not at all, and takes writes again.

// diskFullFS passes every operation to an underlying FS, holding the files
// to a shared budget of room: the bytes by which they may still grow
// (overwriting a file's bytes needs no room, as on a real disk). A write
// that needs more writes the prefix that fits and fails with ENOSPC, as
// write(2) does. Once the room is spent, creating a file or a directory
// fails with ENOSPC too, and so does a preallocation that asks for more
// than there is. Removing files gives no room back: others sharing the
// disk take it, so the disk stays full until setRoom.
type diskFullFS struct {
	vfs.FS

	mu      sync.Mutex
	room    int64
	grown   int64  // bytes by which the files grew, all told
	refused int    // calls failed with ENOSPC
	first   string // the call failed first
}

// plentyOfRoom is the room of a disk that does not fill.
const plentyOfRoom = math.MaxInt64 / 2

func newDiskFullFS(fs vfs.FS, room int64) *diskFullFS { return &diskFullFS{FS: fs, room: room} }

// setRoom gives the disk room bytes of free space.
func (fs *diskFullFS) setRoom(room int64) {
	fs.mu.Lock()
	fs.room = room
	fs.mu.Unlock()
}

// grownBy returns the bytes by which the files grew, all told.
func (fs *diskFullFS) grownBy() int64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.grown
}

// firstRefused names the call failed first, and the kind of its file: ""
// if none was.
func (fs *diskFullFS) firstRefused() string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.first
}

// noSpace returns the error of op on name, refused for want of room, as
// the os package reports it.
func (fs *diskFullFS) noSpace(op, name string) error {
	if fs.first == "" {
		kind := strings.TrimRight(strings.TrimLeft(fs.PathBase(name), "0123456789"), "0123456789-")
		fs.first = op + " " + kind
	}
	return &os.PathError{Op: op, Path: name, Err: syscall.ENOSPC}
}

// checkFull refuses op on name when the disk has no room left.
func (fs *diskFullFS) checkFull(op, name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.room > 0 {
		return nil
	}
	return fs.noSpace(op, name)
}

// write writes as much of p, at file offset off of f, as the room allows,
// through write, and fails with ENOSPC if that is not all of it.
func (fs *diskFullFS) write(f vfs.File, name string, p []byte, off int64, write func([]byte) (int, error)) (int, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	fits := len(p)
	if off+int64(len(p))-size > fs.room {
		fits = int(max(0, size+fs.room-off))
	}
	n := 0
	if fits > 0 {
		n, err = write(p[:fits])
	}
	if grew := off + int64(n) - size; grew > 0 {
		fs.room -= grew
		fs.grown += grew
	}
	if err == nil && n < len(p) {
		err = fs.noSpace("write", name)
	}
	return n, err
}

func (fs *diskFullFS) wrap(f vfs.File, name string) vfs.File {
	return &diskFullFile{File: f, fs: fs, name: name}
}

func (fs *diskFullFS) Create(name string) (vfs.File, error) {
	if err := fs.checkFull("open", name); err != nil {
		return nil, err
	}
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return fs.wrap(f, name), nil
}

func (fs *diskFullFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if _, err := fs.FS.Stat(name); err != nil {
		if err := fs.checkFull("open", name); err != nil {
			return nil, err
		}
	}
	f, err := fs.FS.OpenReadWrite(name, opts...)
	if err != nil {
		return nil, err
	}
	return fs.wrap(f, name), nil
}

func (fs *diskFullFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	if err != nil {
		return nil, err
	}
	return fs.wrap(f, newname), nil
}

func (fs *diskFullFS) MkdirAll(dir string, perm os.FileMode) error {
	if _, err := fs.FS.Stat(dir); err != nil {
		if err := fs.checkFull("mkdir", dir); err != nil {
			return err
		}
	}
	return fs.FS.MkdirAll(dir, perm)
}

// diskFullFile is a file of a diskFullFS, open for writing.
type diskFullFile struct {
	vfs.File
	fs   *diskFullFS
	name string
	wpos int64 // the offset Write writes at
}

func (f *diskFullFile) Write(p []byte) (int, error) {
	n, err := f.fs.write(f.File, f.name, p, f.wpos, f.File.Write)
	f.wpos += int64(n)
	return n, err
}

func (f *diskFullFile) WriteAt(p []byte, off int64) (int, error) {
	return f.fs.write(f.File, f.name, p, off, func(q []byte) (int, error) { return f.File.WriteAt(q, off) })
}

// Preallocate fails when the file would grow by more than the room; it
// reserves nothing, as the in-memory file it wraps does not.
func (f *diskFullFile) Preallocate(off, n int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	fi, err := f.File.Stat()
	if err != nil {
		return err
	}
	if off+n-fi.Size() > f.fs.room {
		return f.fs.noSpace("fallocate", f.name)
	}
	return f.File.Preallocate(off, n)
}

// TestDiskFull_Write runs a workload of writes, Sync and NoSync, flushes
// and compactions, background ones included, on disks of many sizes, up
// to about what the workload needs; each then has room given back, and
// the store is reopened. See diskFullRun for what is checked.
func TestDiskFull_Write(t *testing.T) {
	testDiskFull(t, false)
}

// TestDiskFull_Crash is TestDiskFull_Write with every write Sync, over a
// vfs.NewStrictMem: once the disk is full the power is cut, losing all
// that was not synced, and the store is reopened on the full disk and,
// given room, again.
func TestDiskFull_Crash(t *testing.T) {
	testDiskFull(t, true)
}

func testDiskFull(t *testing.T, crash bool) {
	seeds, sizes := 3, 48
	if testing.Short() {
		seeds, sizes = 1, 12
	}
	forEachSeed(t, seeds, func(t *testing.T, seed uint64) {
		need := fewestOfThree(func() int {
			r := newDiskFullRun(t, seed, plentyOfRoom, crash)
			r.run()
			return int(r.fs.grownBy())
		})
		// Sizes below nine tenths of the fewest bytes a run needs, so
		// that nearly every run fills its disk.
		fill := need * 9 / 10
		t.Logf("the workload grows the files by %d bytes or more; disks of %d sizes below %d", need, sizes, fill)
		filled, where, what, reopened := 0, map[string]int{}, map[string]int{}, 0
		// An empty disk too, where Open fails.
		for _, room := range append([]int{0}, crashPoints(newRand(seed), fill, sizes-1)...) {
			r := newDiskFullRun(t, seed, int64(room), crash)
			r.run()
			if t.Failed() {
				return
			}
			if r.failed != "" {
				filled++
				where[strings.Fields(r.failed)[0]]++
			}
			what[r.fs.firstRefused()]++
			if r.reopenedFull {
				reopened++
			}
		}
		t.Logf("the first failure, by store call: %v; by file operation: %v", where, what)
		t.Logf("%d runs reopened the store on the full disk", reopened)
		requireRan(t, "runs that filled the disk", filled, min(fill, sizes)*9/10)
	})
}

// diskFullRun is the workload of one seed on a disk of one size.
type diskFullRun struct {
	faultWorkload
	seed  uint64
	room  int64
	crash bool
	mem   *vfs.MemFS
	fs    *diskFullFS
	// failed names the call that failed first, "" while none has.
	failed string
	// reopenedFull says whether Open succeeded on the full disk.
	reopenedFull bool
}

// diskFullSteps is the length of the workload.
const diskFullSteps = 200

func newDiskFullRun(t *testing.T, seed uint64, room int64, crash bool) *diskFullRun {
	mem := vfs.NewMem()
	if crash {
		mem = vfs.NewStrictMem()
	}
	r := &diskFullRun{seed: seed, room: room, crash: crash, mem: mem, fs: newDiskFullFS(mem, room)}
	syncOneIn := 3
	if crash {
		syncOneIn = 1
	}
	r.faultWorkload = newFaultWorkload(t, seed, syncOneIn, r.check)
	return r
}

func (r *diskFullRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d, disk of %d bytes, crash=%v, first failure in %q: %s\nsteps:\n%s", r.seed, r.room, r.crash,
		r.failed, fmt.Sprintf(format, args...), r.log.String())
}

// run opens the store, runs the workload until its end or the first
// failure, checks that writes are then refused, closes the store (cutting
// the power first with crash), reopens it on the full disk, and then with
// room.
func (r *diskFullRun) run() {
	r.t.Helper()
	db, err := kv.Open("db", faultOpts(r.fs))
	if r.check(err, "Open") {
		r.db = db
		for step := 0; step < diskFullSteps && r.failed == ""; step++ {
			r.step(step)
		}
		if r.failed != "" {
			r.checkWritesRefused()
		}
		r.close()
	}
	if r.room == plentyOfRoom {
		return
	}
	r.reopenFull()
	r.fs.setRoom(plentyOfRoom)
	r.checkReopen()
}

// check records the first failure, which must wrap ENOSPC, and reports
// whether err is nil.
func (r *diskFullRun) check(err error, what string) bool {
	r.t.Helper()
	if err == nil {
		return true
	}
	if !errors.Is(err, syscall.ENOSPC) {
		r.fatalf("%s: %v (does not wrap ENOSPC)", what, err)
	}
	if r.failed == "" {
		r.failed = what
	}
	return false
}

// checkWritesRefused checks that no write is acknowledged after the
// failure, and that the writes refused say why.
func (r *diskFullRun) checkWritesRefused() {
	r.t.Helper()
	for i, opts := range []*kv.WriteOptions{kv.NoSync, kv.Sync, kv.NoSync} {
		err := r.db.Set([]byte("refused"), []byte("x"), opts)
		if err == nil {
			r.fatalf("write %d after the failure was acknowledged", i)
		}
		r.check(err, fmt.Sprintf("write %d after the failure", i))
	}
}

// close closes the store, which may report the failure; with crash the
// power is cut first, so nothing Close writes lasts.
func (r *diskFullRun) close() {
	r.t.Helper()
	if r.crash {
		r.mem.SetIgnoreSyncs(true)
	}
	r.check(r.db.Close(), "Close")
	r.db = nil
	if r.crash {
		r.mem.ResetToSyncedState()
		r.mem.SetIgnoreSyncs(false)
	}
}

// reopenFull opens the store on the still full disk: Open fails with
// ENOSPC, or opens the model's contents and closes, perhaps with ENOSPC.
// The contents seen settle the pending write's outcome.
func (r *diskFullRun) reopenFull() {
	r.t.Helper()
	db, err := kv.Open("db", faultOpts(r.fs))
	if err != nil {
		if !errors.Is(err, syscall.ENOSPC) {
			r.fatalf("Open on the full disk: %v (does not wrap ENOSPC)", err)
		}
		return
	}
	r.reopenedFull = true
	got, err := readAll(db.NewIter)
	if err != nil {
		r.fatalf("reading after Open on the full disk: %v", err)
	}
	if err := db.Close(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		r.fatalf("Close after Open on the full disk: %v (does not wrap ENOSPC)", err)
	}
	r.match(got, "after Open on the full disk")
}

// match checks got holds the acknowledged writes and the pending one
// wholly or not at all, and then settles the pending one.
func (r *diskFullRun) match(got map[string]string, what string) {
	r.t.Helper()
	d := diffMaps(got, r.model)
	if d != "" && r.pending == nil {
		r.fatalf("%s: %s", what, d)
	}
	if d != "" {
		with := maps.Clone(r.model)
		r.pending.apply(with)
		if d2 := diffMaps(got, with); d2 != "" {
			r.fatalf("%s: neither without the failed write (%s) nor with it (%s)%s", what, d, d2, tornBatches(got))
		}
		r.model = with
	}
	r.pending = nil
}

// checkReopen opens the store on a disk with room, checks its contents,
// writes, and checks the write survives a clean restart.
func (r *diskFullRun) checkReopen() {
	r.t.Helper()
	db, err := kv.Open("db", faultOpts(r.fs))
	if err != nil {
		r.fatalf("Open with room: %v", err)
	}
	got, err := readAll(db.NewIter)
	if err != nil {
		r.fatalf("reading after Open with room: %v", err)
	}
	r.match(got, "after Open with room")
	if err := db.Set([]byte("zz-after"), []byte("1"), kv.Sync); err != nil {
		r.fatalf("Set after Open with room: %v", err)
	}
	if err := db.Close(); err != nil {
		r.fatalf("Close after Open with room: %v", err)
	}
	r.model["zz-after"] = "1"
	got, err = readStore(r.fs)
	if err != nil {
		r.fatalf("%v", err)
	}
	r.match(got, "after a clean restart")
}
