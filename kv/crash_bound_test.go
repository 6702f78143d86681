package kv_test

// The loss bound of Options.BackgroundWALWrites, checked the way a crash
// of the process leaves the files: whatever the OS was given (the page
// cache), synced or not, and nothing the process still held in memory.

import (
	"encoding/binary"
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
const walLossBound = kv.BackgroundWALLossBound

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
		case r < 25:
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

// batchID returns the number of the batch key belongs to.
func batchID(key string) (int, error) {
	id, err := strconv.Atoi(strings.TrimPrefix(strings.Split(key, "/")[0], "b"))
	if err != nil {
		return 0, fmt.Errorf("unexpected key %q", key)
	}
	return id, nil
}

// wholeBatches checks that every batch of the workload of seed with a key
// in got, a store's contents after a crash, is there whole and right, and
// nothing else is, and returns those batches' numbers.
func wholeBatches(got map[string]string, seed uint64) (map[int]bool, error) {
	seen := map[int]int{}
	for k := range got {
		id, err := batchID(k)
		if err != nil {
			return nil, err
		}
		seen[id]++
	}
	ids := map[int]bool{}
	for id, n := range seen {
		want := boundBatch(seed, id)
		if n != len(want) {
			return nil, fmt.Errorf("batch %d has %d of its %d writes: not whole", id, n, len(want))
		}
		for k, v := range want {
			if got[k] != v {
				return nil, fmt.Errorf("batch %d: %q holds %s, want %s", id, k, short([]byte(got[k])), short([]byte(v)))
			}
		}
		ids[id] = true
	}
	return ids, nil
}

// recoveredBatches checks that got, a store's contents after a crash
// during the workload of seed committed by one writer, is its first r
// batches, whole and right, and nothing else, and returns r.
func recoveredBatches(got map[string]string, seed uint64) (int, error) {
	ids, err := wholeBatches(got, seed)
	if err != nil {
		return 0, err
	}
	for id := range ids {
		if id >= len(ids) {
			return 0, fmt.Errorf("%d batches back, among them batch %d: not a prefix", len(ids), id)
		}
	}
	return len(ids), nil
}

// walRecords returns, for each record of the one WAL in dir, the number
// of its batch (read from its first key: see kv/batch.go for the
// encoding) and the stream offset at which it ends.
func walRecords(fs vfs.FS, dir string) (ids []int, ends []int64, err error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, nil, err
	}
	wals := 0
	for _, name := range names {
		typ, num, ok := base.ParseFilename(name)
		if !ok || typ != base.FileTypeLog {
			continue
		}
		wals++
		f, err := fs.Open(fs.PathJoin(dir, name))
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		r := record.NewLogReader(f, name, uint32(num), record.RecyclableFormat)
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, nil, err
			}
			if len(rec) == batchHeaderLen {
				continue // a seal: an empty batch, which Close and rotations write
			}
			id, err := firstBatchID(rec)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: record at %d: %w", name, r.Offset(), err)
			}
			ids, ends = append(ids, id), append(ends, r.End())
		}
	}
	if wals != 1 {
		return nil, nil, fmt.Errorf("%d WALs in %s, want 1", wals, dir)
	}
	return ids, ends, nil
}

// batchHeaderLen is the length of a batch's header: its sequence number and
// count.
const batchHeaderLen = 12

// firstBatchID returns the batch number of the first key of the batch
// encoded in rec: a 12-byte header, then kind, key length (uvarint), key.
func firstBatchID(rec []byte) (int, error) {
	if len(rec) < 14 {
		return 0, fmt.Errorf("batch of %d bytes", len(rec))
	}
	n, w := binary.Uvarint(rec[13:])
	if w <= 0 || uint64(len(rec)-13-w) < n {
		return 0, fmt.Errorf("bad key length")
	}
	return batchID(string(rec[13+w : 13+w+int(n)]))
}

// crashCopy is the state of the files at one moment of the workload, and
// the number of batches each writer had acknowledged by then.
type crashCopy struct {
	fs    *vfs.MemFS
	acked []int
}

// boundOpts are the options of the loss-bound tests: memtables big
// enough, from the first, that the workload stays in one memtable and
// one WAL.
func boundOpts(fs vfs.FS, background bool) *kv.Options {
	return kv.FullSizeMemTables(&kv.Options{FS: fs, MemTableSize: 256 << 20, BackgroundWALWrites: background})
}

// runBoundWorkload opens a store over fs and commits the workload of
// seed from writers goroutines, writer w committing batches w, w+writers,
// w+2*writers... one NoSync batch at a time, and copies the files at
// copies moments a few milliseconds apart while they run. It returns the
// copies and the sizes of the batches committed, by number, once the
// store is closed.
func runBoundWorkload(t *testing.T, fs *slowWALFS, seed uint64, background bool, writers, copies int) ([]crashCopy, map[int]int) {
	t.Helper()
	db, err := kv.Open("db", boundOpts(fs, background))
	if err != nil {
		t.Fatal(err)
	}
	acked := make([]atomic.Int64, writers)
	sizes := make([][]int, writers)
	stop := make(chan struct{})
	done := make(chan error, writers)
	for w := range writers {
		go func() {
			for k := 0; ; k++ {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				n, err := applyBoundBatch(db, seed, w+k*writers)
				if err != nil {
					done <- err
					return
				}
				sizes[w] = append(sizes[w], n)
				acked[w].Add(1)
			}
		}()
	}
	rng := newRand(seed)
	var out []crashCopy
	for range copies {
		time.Sleep(time.Duration(1+rng.IntN(4)) * time.Millisecond)
		c := crashCopy{acked: make([]int, writers)}
		c.fs, err = fs.snapshot("db", func() {
			for w := range acked {
				c.acked[w] = int(acked[w].Load())
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	close(stop)
	for range writers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	byID := map[int]int{}
	for w, ns := range sizes {
		for k, n := range ns {
			byID[w+k*writers] = n
		}
	}
	return out, byID
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
// their bytes (Batch.Len) and the bytes of their WAL records, from the
// end of the last record recovered to the end of the last one lost.
type boundLoss struct {
	batches, bytes int
	walBytes       int64
}

// boundHistory is what a round of the workload committed: the sizes of
// its batches by number, and the batch and end offset of each WAL record,
// in commit order.
type boundHistory struct {
	writers int
	sizes   map[int]int
	ids     []int
	ends    []int64
}

// TestBackgroundWAL_LossBound crashes the process, in effect, while 1 or
// 4 writers commit NoSync batches over a slow WAL file: the files are
// copied as they are at one moment (unsynced bytes included), and the
// copy is opened. It must hold the first r batches of the WAL's commit
// order, whole and right, and nothing else. In the default mode they
// include every batch acknowledged by then. With BackgroundWALWrites the
// acknowledged batches lost must span at most walLossBound bytes of WAL
// records, from the end of the last record recovered (and their batches
// hold at most that many bytes), and the background writer must have
// fallen far enough behind to test that.
func TestBackgroundWAL_LossBound(t *testing.T) {
	rounds, copies := 6, 8
	if testing.Short() {
		rounds = 2
	}
	for _, mode := range walModes {
		for _, writers := range []int{1, 4} {
			t.Run(fmt.Sprintf("wal=%s/writers=%d", mode.name, writers), func(t *testing.T) {
				forEachSeed(t, 1, func(t *testing.T, seed uint64) {
					runLossBound(t, seed, mode.background, writers, rounds, copies)
				})
			})
		}
	}
}

// runLossBound runs rounds of the workload of TestBackgroundWAL_LossBound
// from seed on, with copies crashes each. With BackgroundWALWrites it runs
// more rounds, up to 4 times as many, until a crash has lost at least a
// quarter of the bound: a slow machine (or -race) can slow the writers
// more than the WAL.
func runLossBound(t *testing.T, seed uint64, background bool, writers, rounds, copies int) {
	worst, checked := boundLoss{}, 0
	tooFast := func() bool { return background && worst.walBytes < walLossBound/4 }
	for round := 0; round < rounds || (tooFast() && round < 4*rounds); round++ {
		s := seed + uint64(round)
		fs := &slowWALFS{FS: vfs.NewMem(), piece: 4 << 10, pause: 50 * time.Microsecond}
		crashes, sizes := runBoundWorkload(t, fs, s, background, writers, copies)
		h := boundHistory{writers: writers, sizes: sizes}
		var err error
		if h.ids, h.ends, err = walRecords(fs.FS, "db"); err != nil {
			t.Fatal(err)
		}
		if len(h.ids) != len(sizes) {
			t.Fatalf("round %d: %d WAL records for %d batches", round, len(h.ids), len(sizes))
		}
		for i, c := range crashes {
			l := checkBoundCrash(t, c, s, background, h)
			t.Logf("round %d, crash %d: %d acknowledged batches lost, %d bytes (%d of WAL records)",
				round, i, l.batches, l.bytes, l.walBytes)
			worst.batches = max(worst.batches, l.batches)
			worst.bytes = max(worst.bytes, l.bytes)
			worst.walBytes = max(worst.walBytes, l.walBytes)
			checked++
		}
	}
	t.Logf("%d crashes: at most %d acknowledged batches lost, %d bytes (%d of WAL records); the bound is %d",
		checked, worst.batches, worst.bytes, worst.walBytes, walLossBound)
	if checked < rounds*copies {
		t.Fatalf("%d crashes checked, want at least %d", checked, rounds*copies)
	}
	if tooFast() {
		t.Fatalf("at most %d bytes of WAL records lost: the WAL was too fast to test the bound of %d", worst.walBytes, walLossBound)
	}
}

// checkBoundCrash opens the copy c of a crashed store and checks what it
// holds against the workload of seed and its history h. It returns what
// the crash lost.
func checkBoundCrash(t *testing.T, c crashCopy, seed uint64, background bool, h boundHistory) boundLoss {
	t.Helper()
	got, err := readBoundStore(c.fs)
	if err != nil {
		t.Fatalf("reopening after the crash: %v", err)
	}
	back, err := wholeBatches(got, seed)
	if err != nil {
		t.Fatalf("after the crash: %v", err)
	}
	r := len(back)
	pos := map[int]int{}
	for i, id := range h.ids {
		pos[id] = i
		if i < r && !back[id] {
			t.Fatalf("%d batches back after the crash, but not batch %d, record %d of the WAL: not a prefix", r, id, i)
		}
	}
	var l boundLoss
	lastEnd := int64(0)
	for w, n := range c.acked {
		for k := range n {
			id := w + k*h.writers
			if back[id] {
				continue
			}
			l.batches++
			l.bytes += h.sizes[id]
			lastEnd = max(lastEnd, h.ends[pos[id]])
		}
	}
	if l.batches > 0 {
		l.walBytes = lastEnd
		if r > 0 {
			l.walBytes -= h.ends[r-1]
		}
	}
	switch {
	case !background && l.batches > 0:
		t.Fatalf("%d acknowledged NoSync batches lost in the default mode (%d back)", l.batches, r)
	case l.walBytes > walLossBound || l.bytes > walLossBound:
		t.Fatalf("%d acknowledged batches lost (%d back): %d bytes, %d of WAL records, over the bound of %d",
			l.batches, r, l.bytes, l.walBytes, walLossBound)
	}
	return l
}
