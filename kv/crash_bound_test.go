package kv_test

// The loss bound of Options.BackgroundWALWrites, checked the way a crash
// of the process leaves the files: whatever the OS was given (the page
// cache), synced or not, and nothing the process still held in memory.

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// walLossBound is the bound Options.BackgroundWALWrites documents (256
// KiB, as TestWALFlusher_LimitDocumented checks): a crash of the process
// loses acknowledged writes whose WAL records hold at most this many
// bytes (so whose batches, Batch.Len, hold at most this many too).
const walLossBound = kv.WALLossBound

// slowWALFS passes every operation to an FS, but takes each write to a
// WAL file a piece at a time, pausing before each piece, as a slow disk
// or a busy OS does: the background WAL writer falls behind the commits,
// and a crash can come in the middle of a write. snapshot copies the
// files as they are at one moment (what the OS holds when the process
// dies): every change holds mu for reading, snapshot holds it for
// writing.
type slowWALFS struct {
	vfs.FS
	piece int
	pause time.Duration
	mu    sync.RWMutex
}

// change runs fn, a change to the files, outside any snapshot.
func (fs *slowWALFS) change(fn func() error) error {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fn()
}

// snapshot copies dir, as it is at one moment, into a new MemFS, and
// calls at at that moment.
func (fs *slowWALFS) snapshot(dir string, at func()) (*vfs.MemFS, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	at()
	mem := vfs.NewMem()
	if _, err := vfs.Clone(fs.FS, mem, dir, dir); err != nil {
		return nil, err
	}
	return mem, nil
}

func (fs *slowWALFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &slowWALFile{File: f, fs: fs, wal: strings.HasSuffix(name, ".log")}, nil
}

func (fs *slowWALFS) Create(name string) (f vfs.File, err error) {
	err = fs.change(func() error { f, err = fs.FS.Create(name); return err })
	return fs.wrap(f, name, err)
}

func (fs *slowWALFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (f vfs.File, err error) {
	f, err = fs.FS.OpenReadWrite(name, opts...)
	return fs.wrap(f, name, err)
}

func (fs *slowWALFS) ReuseForWrite(oldname, newname string) (f vfs.File, err error) {
	err = fs.change(func() error { f, err = fs.FS.ReuseForWrite(oldname, newname); return err })
	return fs.wrap(f, newname, err)
}

func (fs *slowWALFS) Link(oldname, newname string) error {
	return fs.change(func() error { return fs.FS.Link(oldname, newname) })
}

func (fs *slowWALFS) Rename(oldname, newname string) error {
	return fs.change(func() error { return fs.FS.Rename(oldname, newname) })
}

func (fs *slowWALFS) Remove(name string) error {
	return fs.change(func() error { return fs.FS.Remove(name) })
}

func (fs *slowWALFS) RemoveAll(name string) error {
	return fs.change(func() error { return fs.FS.RemoveAll(name) })
}

// slowWALFile is a file of a slowWALFS.
type slowWALFile struct {
	vfs.File
	fs  *slowWALFS
	wal bool
}

func (f *slowWALFile) Write(p []byte) (int, error) {
	return f.pieces(p, func(q []byte) (int, error) { return f.File.Write(q) })
}

func (f *slowWALFile) WriteAt(p []byte, off int64) (int, error) {
	return f.pieces(p, func(q []byte) (int, error) {
		n, err := f.File.WriteAt(q, off)
		off += int64(n)
		return n, err
	})
}

// pieces writes p with write, a piece at a time with a pause before each
// if the file is a WAL, and at once otherwise.
func (f *slowWALFile) pieces(p []byte, write func([]byte) (int, error)) (int, error) {
	size := len(p)
	if f.wal {
		size = f.fs.piece
	}
	done := 0
	for done < len(p) {
		if f.wal {
			time.Sleep(f.fs.pause)
		}
		var n int
		err := f.fs.change(func() (err error) {
			n, err = write(p[done:min(len(p), done+size)])
			return err
		})
		done += n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

func (f *slowWALFile) Preallocate(off, n int64) error {
	return f.fs.change(func() error { return f.File.Preallocate(off, n) })
}

// The workload of the loss-bound tests: batch i, derived from the seed,
// holds 1 to 4 keys "b<i>/<j>" whose values are mostly small, sometimes
// about 70 KB, and rarely bigger than walLossBound on their own.

// boundBatchKey returns the key of write j of batch i.
func boundBatchKey(i, j int) string { return fmt.Sprintf("b%07d/%d", i, j) }

// boundBatch returns batch i of the workload of seed, and its keys and
// values.
func boundBatch(seed uint64, i int) map[string]string {
	rng := newRand(seed + uint64(i)*0x9e3779b97f4a7c15)
	writes := map[string]string{}
	for j := range 1 + rng.IntN(4) {
		var n int
		switch r := rng.IntN(100); {
		case r < 1:
			n = walLossBound + rng.IntN(64<<10)
		case r < 12:
			n = 60<<10 + rng.IntN(20<<10)
		default:
			n = 10 + rng.IntN(200)
		}
		k := boundBatchKey(i, j)
		writes[k] = k + "=" + strings.Repeat(string(rune('a'+rng.IntN(26))), n)
	}
	return writes
}

// applyBoundBatch commits batch i of the workload of seed and returns its
// size (Batch.Len).
func applyBoundBatch(db *kv.DB, seed uint64, i int) (int, error) {
	b := db.NewBatch()
	for k, v := range boundBatch(seed, i) {
		if err := b.Set([]byte(k), []byte(v)); err != nil {
			return 0, err
		}
	}
	return b.Len(), db.Apply(b, kv.NoSync)
}

// recoveredBatches checks that got, a store's contents after a crash
// during the workload of seed, is its first r batches, whole and right,
// and nothing else, and returns r.
func recoveredBatches(got map[string]string, seed uint64) (int, error) {
	seen := map[int]int{}
	for k := range got {
		i, err := strconv.Atoi(strings.TrimPrefix(strings.Split(k, "/")[0], "b"))
		if err != nil {
			return 0, fmt.Errorf("unexpected key %q", k)
		}
		seen[i]++
	}
	r := len(seen)
	for i := range r {
		want := boundBatch(seed, i)
		if seen[i] != len(want) {
			return 0, fmt.Errorf("%d batches back, but batch %d has %d of its %d writes: not a prefix of whole batches", r, i, seen[i], len(want))
		}
		for k, v := range want {
			if got[k] != v {
				return 0, fmt.Errorf("batch %d: %q holds %s, want %s", i, k, short([]byte(got[k])), short([]byte(v)))
			}
		}
	}
	return r, nil
}

// walRecordEnds returns the stream offset at which each record of the
// one WAL in dir ends.
func walRecordEnds(fs vfs.FS, dir string) ([]int64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	var ends []int64
	wals := 0
	for _, name := range names {
		typ, num, ok := base.ParseFilename(name)
		if !ok || typ != base.FileTypeLog {
			continue
		}
		wals++
		f, err := fs.Open(fs.PathJoin(dir, name))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r := record.NewLogReader(f, name, uint32(num))
		for {
			if _, err := r.Next(); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, err
			}
			ends = append(ends, r.End())
		}
	}
	if wals != 1 {
		return nil, fmt.Errorf("%d WALs in %s, want 1", wals, dir)
	}
	return ends, nil
}

// crashCopy is the state of the files at one moment of the workload, and
// the number of batches acknowledged by then.
type crashCopy struct {
	fs    *vfs.MemFS
	acked int
}

// boundOpts are the options of the loss-bound tests: a memtable big
// enough that the workload stays in one memtable and one WAL.
func boundOpts(fs vfs.FS, background bool) *kv.Options {
	return &kv.Options{FS: fs, MemTableSize: 256 << 20, BackgroundWALWrites: background}
}

// runBoundWorkload opens a store over fs and commits the workload of
// seed, one NoSync batch at a time, copying the files at copies moments
// a few milliseconds apart while it runs. It returns the copies and the
// sizes of the batches it committed, once the store is closed.
func runBoundWorkload(t *testing.T, fs *slowWALFS, seed uint64, background bool, copies int) ([]crashCopy, []int) {
	t.Helper()
	db, err := kv.Open("db", boundOpts(fs, background))
	if err != nil {
		t.Fatal(err)
	}
	var acked atomic.Int64
	var sizes []int
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			n, err := applyBoundBatch(db, seed, i)
			if err != nil {
				done <- err
				return
			}
			sizes = append(sizes, n)
			acked.Add(1)
		}
	}()
	rng := newRand(seed)
	var out []crashCopy
	for range copies {
		time.Sleep(time.Duration(1+rng.IntN(8)) * time.Millisecond)
		var c crashCopy
		if c.fs, err = fs.snapshot("db", func() { c.acked = int(acked.Load()) }); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return out, sizes
}

// readBoundStore opens the store in fs, reads all it holds and closes it.
func readBoundStore(fs vfs.FS) (map[string]string, error) {
	db, err := kv.Open("db", boundOpts(fs, false))
	if err != nil {
		return nil, err
	}
	got, err := readAll(db.NewIter)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return got, err
}

// boundLoss is what one crash lost of the acknowledged writes: batches,
// their bytes (Batch.Len) and the bytes of their WAL records.
type boundLoss struct {
	batches, bytes int
	walBytes       int64
}

// lossAt returns what the crash that left c lost of the writes
// acknowledged by then, where r batches were recovered, sizes are the
// batches' sizes and ends where their WAL records end.
func lossAt(c crashCopy, r int, sizes []int, ends []int64) boundLoss {
	var l boundLoss
	if r >= c.acked {
		return l
	}
	l.batches = c.acked - r
	for _, n := range sizes[r:c.acked] {
		l.bytes += n
	}
	l.walBytes = ends[c.acked-1]
	if r > 0 {
		l.walBytes -= ends[r-1]
	}
	return l
}

// TestBackgroundWAL_LossBound crashes the process, in effect, while a
// writer commits NoSync batches over a slow WAL file: the files are copied
// as they are at one moment (unsynced bytes included), and the copy is
// opened. It must hold the first r batches of the workload, whole and
// right, and nothing else. In the default mode r covers every batch
// acknowledged by then. With BackgroundWALWrites the acknowledged batches
// past r must hold at most walLossBound bytes of WAL records (and of
// batches), and the background writer must have fallen far enough
// behind to test that.
func TestBackgroundWAL_LossBound(t *testing.T) {
	rounds, copies := 8, 4
	if testing.Short() {
		rounds = 3
	}
	for _, mode := range walModes {
		t.Run("wal="+mode.name, func(t *testing.T) {
			forEachSeed(t, 1, func(t *testing.T, seed uint64) {
				worst, checked := boundLoss{}, 0
				for round := range rounds {
					s := seed + uint64(round)
					fs := &slowWALFS{FS: vfs.NewMem(), piece: 4 << 10, pause: 50 * time.Microsecond}
					crashes, sizes := runBoundWorkload(t, fs, s, mode.background, copies)
					ends, err := walRecordEnds(fs.FS, "db")
					if err != nil {
						t.Fatal(err)
					}
					if len(ends) != len(sizes) {
						t.Fatalf("round %d: %d WAL records for %d batches", round, len(ends), len(sizes))
					}
					for i, c := range crashes {
						l := checkBoundCrash(t, c, s, mode.background, sizes, ends)
						t.Logf("round %d, crash %d: %d of %d acknowledged batches lost, %d bytes (%d of WAL records)",
							round, i, l.batches, c.acked, l.bytes, l.walBytes)
						worst.batches = max(worst.batches, l.batches)
						worst.bytes = max(worst.bytes, l.bytes)
						worst.walBytes = max(worst.walBytes, l.walBytes)
						checked++
					}
				}
				t.Logf("%d crashes: at most %d acknowledged batches lost, %d bytes (%d of WAL records); the bound is %d",
					checked, worst.batches, worst.bytes, worst.walBytes, walLossBound)
				if checked != rounds*copies {
					t.Fatalf("%d crashes checked, want %d", checked, rounds*copies)
				}
				if mode.background && worst.walBytes < walLossBound/4 {
					t.Fatalf("at most %d bytes of WAL records lost: the WAL was too fast to test the bound of %d", worst.walBytes, walLossBound)
				}
			})
		})
	}
}

// checkBoundCrash opens the copy c of a crashed store and checks what it
// holds against the workload of seed, whose batches had sizes and whose
// WAL records ended at ends. It returns what the crash lost.
func checkBoundCrash(t *testing.T, c crashCopy, seed uint64, background bool, sizes []int, ends []int64) boundLoss {
	t.Helper()
	got, err := readBoundStore(c.fs)
	if err != nil {
		t.Fatalf("reopening after the crash: %v", err)
	}
	r, err := recoveredBatches(got, seed)
	if err != nil {
		t.Fatalf("after the crash: %v", err)
	}
	if r > len(sizes) {
		t.Fatalf("%d batches back after the crash, but only %d were committed", r, len(sizes))
	}
	l := lossAt(c, r, sizes, ends)
	switch {
	case !background && l.batches > 0:
		t.Fatalf("%d acknowledged NoSync batches lost in the default mode (%d of %d back)", l.batches, r, c.acked)
	case l.walBytes > walLossBound || l.bytes > walLossBound:
		t.Fatalf("%d acknowledged batches lost (%d of %d back): %d bytes, %d of WAL records, over the bound of %d",
			l.batches, r, c.acked, l.bytes, l.walBytes, walLossBound)
	}
	return l
}
