package kv_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// These tests inject one I/O error (errorfs.ErrInjected) at each operation
// index of Open, of a write workload, of reads and of Close. The rule
// everywhere: the error comes back to the caller wrapped (errors.Is), or
// the call gives the right answer; never a panic, never a wrong answer.
// Some failures may go unreported, as they change nothing: listing the
// directory for files the store no longer needs, and removing them
// (garbage either way, which the next Open removes); and the Stat with
// which Open checks whether the directory exists (it then creates it,
// which is harmless when it does); and preallocating a WAL's space. Files
// fail their SyncData as their Sync (wrapFaults), so the WAL's syncs are
// among the operations failed. Whatever failed, contents are checked too,
// so an unreported failure that mattered would show. Writes stop
// for good after a failed write, flush or compaction, and a reopen on the
// same files without faults shows every acknowledged write and no
// half-applied one.

// faultOpts are the options of the error-injection tests: small memtables
// and tables so flushes and compactions happen, a one-byte block cache and
// the fewest open tables so reads go to the files.
func faultOpts(fs vfs.FS) *kv.Options {
	return &kv.Options{
		FS:                    fs,
		MemTableSize:          4 << 10,
		BlockSize:             256,
		TargetFileSize:        4 << 10,
		L0CompactionThreshold: 2,
		LBaseMaxBytes:         16 << 10,
		MaxManifestFileSize:   1 << 10,
		BlockCacheSize:        1,
		MaxOpenFiles:          kv.MinMaxOpenFiles,
	}
}

// quietFaultOpts returns faultOpts over fs wrapped with a new, disarmed
// faultInjector, and that injector. Automatic compactions are off, so no
// background work takes the fault meant for the call under test.
func quietFaultOpts(fs vfs.FS) (*kv.Options, *faultInjector) {
	inj := &faultInjector{}
	opts := faultOpts(wrapFaults(fs, inj))
	opts.DisableAutomaticCompactions = true
	return opts, inj
}

// tolerated reports whether a failed operation may go unreported.
// Preallocating a WAL's space is advice: its failure leaves the file to
// grow as it is written.
func tolerated(op string) bool {
	return strings.HasPrefix(op, "remove ") || strings.HasPrefix(op, "preallocate ") ||
		op == "stat db" || op == "list db" ||
		// The sync of ".", the parent of the store's directory, which
		// existed before: best effort (see DB.makeDir).
		op == "opendir ." || op == "sync ."
}

// faultBase builds a closed store with tables in L1 and L0 and writes only
// in its WAL, and returns it with its contents.
func faultBase(t *testing.T, seed uint64) (vfs.FS, map[string]string) {
	t.Helper()
	rng := newRand(seed)
	mem := vfs.NewMem()
	opts := faultOpts(mem)
	opts.DisableAutomaticCompactions = true
	db, err := kv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for phase, n := range []int{300, 100, 40} {
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("f%04d", 2*rng.IntN(1000)) // odd numbers stay absent
			v := randomLetters(rng, rng.IntN(100))
			want[k] = v
			if err := db.Set([]byte(k), []byte(v), kv.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		switch phase {
		case 0:
			err = db.Compact(nil, nil)
		case 1:
			err = db.Flush()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return mem, want
}

// readStore opens the store in fs without faults, reads all it holds and
// closes it.
func readStore(fs vfs.FS) (map[string]string, error) {
	db, err := kv.Open("db", faultOpts(fs))
	if err != nil {
		return nil, fmt.Errorf("reopening without faults: %w", err)
	}
	got, err := readAll(db.NewIter)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("reading after reopening without faults: %w", err)
	}
	return got, nil
}

// checkStore opens the store in fs without faults and checks it holds
// want.
func checkStore(t *testing.T, fs vfs.FS, want map[string]string, what string) {
	t.Helper()
	got, err := readStore(fs)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if d := diffMaps(got, want); d != "" {
		t.Fatalf("%s: after reopening without faults: %s", what, d)
	}
}

// checkInjected fails the test unless err is nil or wraps the injected
// error, and unless an error was injected when err is not nil.
func checkInjected(t *testing.T, err error, fired, what string) {
	t.Helper()
	switch {
	case err == nil:
	case fired == "":
		t.Fatalf("%s: failed with no fault injected: %v", what, err)
	case !errors.Is(err, errorfs.ErrInjected):
		t.Fatalf("%s: error does not wrap the injected one (%s): %v", what, fired, err)
	}
}

// TestErrorFS_Open fails each operation of Open in turn, on a store with
// tables and a WAL to replay.
func TestErrorFS_Open(t *testing.T) {
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		base, want := faultBase(t, seed)
		for i := 0; ; i++ {
			mem := copyDir(t, base, "db")
			opts, inj := quietFaultOpts(mem)
			inj.arm(i)
			db, err := kv.Open("db", opts)
			inj.disarm()
			fired := inj.firedOp()
			what := fmt.Sprintf("seed %d, Open with operation %d (%s) failing", seed, i, fired)
			checkInjected(t, err, fired, what)
			if err == nil {
				if fired != "" && !tolerated(fired) {
					t.Fatalf("%s: Open succeeded", what)
				}
				got, rerr := readAll(db.NewIter)
				if rerr != nil {
					t.Fatalf("%s: reading: %v", what, rerr)
				}
				if d := diffMaps(got, want); d != "" {
					t.Fatalf("%s: contents: %s", what, d)
				}
				if err := db.Close(); err != nil {
					t.Fatalf("%s: Close: %v", what, err)
				}
			}
			checkStore(t, mem, want, what)
			if fired == "" {
				// Open reads the MANIFEST, the tables' footers and the WAL:
				// far more than 20 operations.
				requireRan(t, "failing operations of Open", i, 20)
				return
			}
		}
	})
}

// TestErrorFS_Close fails each operation of Close in turn, after writes
// both flushed and only in the WAL.
func TestErrorFS_Close(t *testing.T) {
	for i := 0; ; i++ {
		mem := vfs.NewMem()
		opts, inj := quietFaultOpts(mem)
		db, err := kv.Open("db", opts)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for j := 0; j < 200; j++ {
			k, v := fmt.Sprintf("c%03d", j%150), fmt.Sprintf("v%d", j)
			opts := kv.NoSync
			if j%7 == 0 {
				opts = kv.Sync
			}
			if err := db.Set([]byte(k), []byte(v), opts); err != nil {
				t.Fatal(err)
			}
			want[k] = v
			if j == 100 {
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		inj.arm(i)
		err = db.Close()
		inj.disarm()
		fired := inj.firedOp()
		what := fmt.Sprintf("Close with operation %d (%s) failing", i, fired)
		checkInjected(t, err, fired, what)
		if err == nil && fired != "" && !tolerated(fired) {
			t.Fatalf("%s: Close succeeded", what)
		}
		checkStore(t, mem, want, what)
		if fired == "" {
			// Close syncs the WAL at least.
			requireRan(t, "failing operations of Close", i, 1)
			return
		}
	}
}

// TestErrorFS_WALSyncFailure fails the fsync of a Sync write: the write
// fails, and so does every later write, Flush, Checkpoint and Close, while
// reads go on.
// A reopen shows every write acknowledged before, the failed one perhaps,
// and none after. Both WAL modes: with BackgroundWALWrites, the later
// NoSync writes must be refused before their records reach the WAL's
// writer, not only be kept from view.
func TestErrorFS_WALSyncFailure(t *testing.T) {
	for _, background := range []bool{false, true} {
		t.Run(fmt.Sprintf("BackgroundWALWrites=%v", background), func(t *testing.T) {
			testWALSyncFailure(t, background)
		})
	}
}

func testWALSyncFailure(t *testing.T, background bool) {
	mem := vfs.NewMem()
	var failSync atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpFileSync && strings.HasSuffix(path, ".log") && failSync.CompareAndSwap(true, false) {
			return errorfs.ErrInjected
		}
		return nil
	})
	opts := faultOpts(wrapFaults(mem, inj))
	opts.BackgroundWALWrites = background
	db, err := kv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for j := 0; j < 30; j++ {
		k, v := fmt.Sprintf("k%02d", j), fmt.Sprintf("v%d", j)
		if err := db.Set([]byte(k), []byte(v), kv.NoSync); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	failSync.Store(true)
	if err := db.Set([]byte("failed"), []byte("x"), kv.Sync); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Sync write with a failing fsync: %v, want the injected error", err)
	}
	b := db.NewBatch()
	must(t, b.Set([]byte("after-batch"), []byte("x")))
	later := map[string]func() error{
		"NoSync Set": func() error { return db.Set([]byte("after1"), []byte("x"), kv.NoSync) },
		"Sync Set":   func() error { return db.Set([]byte("after2"), []byte("x"), kv.Sync) },
		"Delete":     func() error { return db.Delete([]byte("k00"), kv.NoSync) },
		"Apply":      func() error { return db.Apply(b, kv.Sync) },
		"Flush":      db.Flush,
		"Checkpoint": func() error { return db.Checkpoint("checkpoint") },
	}
	for what, fn := range later {
		if err := fn(); err == nil {
			t.Errorf("%s after a failed WAL sync succeeded", what)
		}
	}
	for k, v := range want {
		if got, err := db.Get([]byte(k)); err != nil || string(got) != v {
			t.Fatalf("Get(%q) after a failed WAL sync = %q, %v; want %q", k, got, err, v)
		}
	}
	if err := db.Close(); !errors.Is(err, errorfs.ErrInjected) {
		t.Errorf("Close after a failed WAL sync: %v, want the injected error", err)
	}
	// The failed write may or may not have reached the file; nothing later
	// did.
	got, err := readStore(mem)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["failed"]; ok {
		want["failed"] = "x"
	}
	if d := diffMaps(got, want); d != "" {
		t.Fatalf("after reopening: %s", d)
	}
}

// TestErrorFS_Write fails each operation of a workload of writes, flushes
// and compactions in turn (those of background flushes and compactions
// included). See faultWriteRun for what is checked.
func TestErrorFS_Write(t *testing.T) {
	points := 600
	if testing.Short() {
		points = 40
	}
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		total := fewestOfThree(func() int {
			dry := newFaultWriteRun(t, seed, -1)
			dry.run()
			return dry.inj.opsSeen()
		})
		t.Logf("the workload makes %d operations or more; failing %d of them", total, min(total, points))
		failed, fired := map[string]int{}, 0
		for _, i := range crashPoints(newRand(seed), total, points) {
			r := newFaultWriteRun(t, seed, i)
			r.run()
			if t.Failed() {
				return
			}
			if r.inj.firedOp() != "" {
				fired++
			}
			op, _, _ := strings.Cut(r.inj.firedOp(), " ")
			failed[op]++
		}
		t.Logf("operations failed, by kind: %v", failed)
		// A point near the end may still fall past a run's last
		// operation; nearly all must fire.
		requireRan(t, "injected failures", fired, min(total, points)*9/10)
	})
}

// faultWriteRun is the write workload with one operation failing.
type faultWriteRun struct {
	faultWorkload
	seed    uint64
	index   int
	mem     vfs.FS
	inj     *faultInjector
	errored bool
}

func newFaultWriteRun(t *testing.T, seed uint64, index int) *faultWriteRun {
	r := &faultWriteRun{seed: seed, index: index, mem: vfs.NewMem(), inj: &faultInjector{}}
	r.faultWorkload = newFaultWorkload(t, seed, 5, r.check)
	return r
}

// faultWorkload is the random workload of the fault tests (faultWriteRun,
// diskFullRun): Flush, Compact and writes (randomWrite), the acknowledged
// ones kept in model. checkCall, the test's, reports whether a call
// succeeded, after checking the error of one that did not.
type faultWorkload struct {
	t   *testing.T
	rng *rand.Rand
	db  *kv.DB
	log opLog
	// model holds the acknowledged writes; pending the one whose outcome
	// is unknown, if any.
	model   map[string]string
	pending *crashWrite
	// syncOneIn makes a write Sync one time in syncOneIn (1: every time).
	syncOneIn int
	checkCall func(err error, what string) bool
}

func newFaultWorkload(t *testing.T, seed uint64, syncOneIn int, check func(error, string) bool) faultWorkload {
	return faultWorkload{t: t, rng: newRand(seed), model: map[string]string{}, syncOneIn: syncOneIn, checkCall: check}
}

// step runs one step of the workload, step numbering its value.
func (w *faultWorkload) step(step int) {
	switch p := w.rng.IntN(100); {
	case p < 6:
		w.log.add("Flush")
		w.checkCall(w.db.Flush(), "Flush")
	case p < 8:
		w.log.add("Compact")
		w.checkCall(w.db.Compact(nil, nil), "Compact")
	default:
		b := w.db.NewBatch()
		c := randomWrite(w.t, w.rng, b, step)
		opts := kv.NoSync
		if w.syncOneIn == 1 || w.rng.IntN(w.syncOneIn) == 0 {
			opts = kv.Sync
		}
		w.log.add("write %d keys, %d ranges deleted, sync=%v", len(c.kvs), len(c.delRanges), opts.Sync)
		if w.checkCall(w.db.Apply(b, opts), "write") {
			c.apply(w.model)
		} else {
			w.pending = &c
		}
	}
}

func (r *faultWriteRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d, operation %d (%s) failing: %s\nsteps:\n%s", r.seed, r.index, r.inj.firedOp(),
		fmt.Sprintf(format, args...), r.log.String())
}

// run opens the store, arms the fault, runs the workload until its end or
// the first error, checks that writes then fail, closes, and reopens
// without faults to check the contents.
func (r *faultWriteRun) run() {
	r.t.Helper()
	db, err := kv.Open("db", faultOpts(wrapFaults(r.mem, r.inj)))
	if err != nil {
		r.fatalf("Open: %v", err)
	}
	r.db = db
	r.inj.arm(r.index)
	for step := 0; step < 200 && !r.errored; step++ {
		r.step(step)
	}
	if r.errored {
		r.checkWritesRefused()
	}
	err = r.db.Close()
	fired := r.inj.firedOp()
	if err != nil {
		r.check(err, "Close")
	} else if fired != "" && !r.errored && !tolerated(fired) {
		r.fatalf("the failure was never reported")
	}
	r.checkReopen()
}

// check records the first error of the workload, which must be the
// injected one.
func (r *faultWriteRun) check(err error, what string) bool {
	r.t.Helper()
	if err == nil {
		return true
	}
	if fired := r.inj.firedOp(); fired == "" || !errors.Is(err, errorfs.ErrInjected) {
		r.fatalf("%s: %v (does not wrap the injected error)", what, err)
	}
	r.errored = true
	return false
}

// randomWrite fills b with the write of a workload's step: a Set, a
// Delete, a DeleteRange or a four-key batch, of keys crashKey(0..91) and
// groupKey, and returns what it does.
func randomWrite(t testing.TB, rng *rand.Rand, b *kv.Batch, step int) crashWrite {
	w := crashWrite{kvs: map[string]*string{}}
	v := fmt.Sprintf("w%d.%s", step, randomLetters(rng, rng.IntN(200)))
	switch p := rng.IntN(20); {
	case p < 2:
		lo := rng.IntN(80)
		k0, k1 := string(crashKey(lo)), string(crashKey(lo+1+rng.IntN(12)))
		must(t, b.DeleteRange([]byte(k0), []byte(k1)))
		w.delRanges = append(w.delRanges, [2]string{k0, k1})
	case p < 12:
		k := string(crashKey(rng.IntN(80)))
		must(t, b.Set([]byte(k), []byte(v)))
		w.kvs[k] = &v
	case p < 16:
		k := string(crashKey(rng.IntN(80)))
		must(t, b.Delete([]byte(k)))
		w.kvs[k] = nil
	default:
		g := rng.IntN(16)
		for i := 0; i < crashGroupKeys; i++ {
			must(t, b.Set([]byte(groupKey(g, i)), []byte(v)))
			w.kvs[groupKey(g, i)] = &v
		}
	}
	return w
}

// checkWritesRefused checks that no write is acknowledged after a failure.
func (r *faultWriteRun) checkWritesRefused() {
	r.t.Helper()
	for i, opts := range []*kv.WriteOptions{kv.NoSync, kv.Sync, kv.NoSync} {
		if err := r.db.Set([]byte("refused"), []byte("x"), opts); err == nil {
			r.fatalf("write %d after the failure was acknowledged", i)
		}
	}
}

// checkReopen checks the store, reopened without faults, holds the
// acknowledged writes and the pending one wholly or not at all.
func (r *faultWriteRun) checkReopen() {
	r.t.Helper()
	got, err := readStore(r.mem)
	if err != nil {
		r.fatalf("%v", err)
	}
	d := diffMaps(got, r.model)
	if d == "" || r.pending == nil {
		if d != "" {
			r.fatalf("after reopening without faults: %s", d)
		}
		return
	}
	with := maps.Clone(r.model)
	r.pending.apply(with)
	if d2 := diffMaps(got, with); d2 != "" {
		r.fatalf("after reopening without faults, neither without the failed write (%s) nor with it (%s)%s",
			d, d2, tornBatches(got))
	}
}

// TestErrorFS_Read fails each operation of a sequence of reads in turn:
// Gets of present and absent keys, full scans both ways, bounded iterators
// moved at random, and snapshot reads, on a store with tables in L0 and L1
// read through a one-byte block cache. Each read either returns the
// injected error or the right answer; one at least returns the error; and
// the reads after it are right again (the fault was transient).
func TestErrorFS_Read(t *testing.T) {
	points := 2000
	if testing.Short() {
		points = 60
	}
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		base, want := faultBase(t, seed)
		mem := copyDir(t, base, "db")
		total := readPass(t, mem, want, seed, -1).inj.opsSeen()
		failed := map[string]int{}
		for _, i := range crashPoints(newRand(seed), total, points) {
			r := readPass(t, mem, want, seed, i)
			fired := r.inj.firedOp()
			if fired == "" {
				t.Fatalf("%s: nothing failed", r.what)
			}
			if r.errors == 0 {
				t.Fatalf("%s (%s) failed, but no read reported it", r.what, fired)
			}
			op, _, _ := strings.Cut(fired, " ")
			failed[op]++
		}
		t.Logf("the reads make %d operations; failed, by kind: %v", total, failed)
	})
}

// readPass opens the store in mem and makes the reads with operation index
// failing (none when index < 0).
func readPass(t *testing.T, mem vfs.FS, want map[string]string, seed uint64, index int) *faultReadRun {
	t.Helper()
	opts, inj := quietFaultOpts(mem)
	db, err := kv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &faultReadRun{t: t, db: db, want: want, rng: newRand(seed), inj: inj,
		what: fmt.Sprintf("seed %d, operation %d", seed, index)}
	inj.arm(index)
	r.run()
	inj.disarm()
	if err := db.Close(); err != nil {
		t.Fatalf("%s: Close: %v", r.what, err)
	}
	return r
}

// faultReadRun is one pass of the reads of TestErrorFS_Read.
type faultReadRun struct {
	t      *testing.T
	db     *kv.DB
	want   map[string]string
	rng    *rand.Rand
	inj    *faultInjector
	what   string
	errors int
}

// failed reports whether err is the injected error, and fails the test if
// it is another.
func (r *faultReadRun) failed(err error, what string) bool {
	r.t.Helper()
	if err == nil {
		return false
	}
	if r.inj.firedOp() == "" || !errors.Is(err, errorfs.ErrInjected) {
		r.t.Fatalf("%s: %s: %v (not the injected error)", r.what, what, err)
	}
	r.errors++
	return true
}

func (r *faultReadRun) run() {
	snap := r.db.NewSnapshot()
	defer mustClose(r.t, snap)
	for i := 0; i < 30; i++ {
		r.get(r.db.Get, "Get")
	}
	r.iterate(r.db.NewIter, true)
	for i := 0; i < 6; i++ {
		r.iterate(r.db.NewIter, false)
	}
	for i := 0; i < 10; i++ {
		r.get(snap.Get, "Snapshot.Get")
	}
	r.iterate(snap.NewIter, true)
}

// get looks up a present or an absent key.
func (r *faultReadRun) get(get func([]byte) ([]byte, error), what string) {
	r.t.Helper()
	k := fmt.Sprintf("f%04d", r.rng.IntN(2000))
	v, err := get([]byte(k))
	if errors.Is(err, kv.ErrNotFound) {
		err = nil
		v = nil
	} else if r.failed(err, fmt.Sprintf("%s(%q)", what, k)) {
		return
	}
	want, ok := r.want[k]
	if (v != nil) != ok || string(v) != want {
		r.t.Fatalf("%s: %s(%q) = %q (found %v), want %q (found %v): a failure was swallowed (%s)",
			r.what, what, k, v, v != nil, want, ok, r.inj.firedOp())
	}
}

// iterate scans fully both ways, or moves a bounded iterator at random. A
// failure must stop the iterator with the injected error, which Close
// returns too.
func (r *faultReadRun) iterate(newIter func(*kv.IterOptions) (*kv.Iterator, error), full bool) {
	r.t.Helper()
	var o *kv.IterOptions
	if !full {
		lo := fmt.Sprintf("f%04d", r.rng.IntN(2000))
		o = &kv.IterOptions{LowerBound: []byte(lo), UpperBound: []byte(lo + "~")}
		o.UpperBound[1] += byte(1 + r.rng.IntN(3))
	}
	it, err := newIter(o)
	if r.failed(err, "NewIter") {
		return
	}
	im := newIterModel(r.want, o)
	var msg string
	if full {
		msg = scanBoth(it, im)
	} else {
		msg = checkIter(r.rng, it, im, 20, func() []byte { return fmt.Appendf(nil, "f%04d", r.rng.IntN(2000)) })
	}
	itErr := it.Error()
	if itErr != nil && it.Valid() {
		r.t.Fatalf("%s: iterator valid at %q with error %v", r.what, it.Key(), itErr)
	}
	closeErr := it.Close()
	switch {
	case msg != "" && itErr == nil:
		r.t.Fatalf("%s: iterator %s: %s: a failure was swallowed (%s)", r.what, boundsString(o), msg, r.inj.firedOp())
	case itErr != nil:
		r.failed(itErr, "iterator")
		if !errors.Is(closeErr, errorfs.ErrInjected) {
			r.t.Fatalf("%s: Close of a failed iterator: %v, want the injected error", r.what, closeErr)
		}
	case closeErr != nil:
		r.failed(closeErr, "Iterator.Close")
	}
}
