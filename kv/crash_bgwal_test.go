package kv_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// Crash and fault tests of the two WAL modes: the default, where an
// acknowledged NoSync write is in the OS, and Options.BackgroundWALWrites,
// where it reaches the OS from a background goroutine. Both run the
// workload of TestCrash_PowerLoss (crash_test.go) with the power or the
// process cut at hundreds of points.

// walModes names the WAL modes and how to set each.
var walModes = []struct {
	name       string
	background bool
}{
	{"default", false},
	{"background", true},
}

// runCrashPoints runs the crash workload of each seed with the crash at up
// to points operations, in WAL mode background, and checks each run with
// check.
func runCrashPoints(t *testing.T, points int, background bool, check func(r *crashRun)) {
	if testing.Short() {
		points /= 10
	}
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		newRun := func(at int) *crashRun {
			r := newCrashRun(t, seed, at)
			r.opts.BackgroundWALWrites = background
			return r
		}
		total := fewestOfThree(func() int { return newRun(-1).run() })
		t.Logf("the workload makes about %d filesystem changes; crashing at %d points", total, min(points, total))
		crashed := 0
		for _, at := range crashPoints(newRand(seed), total, points) {
			r := newRun(at)
			r.run()
			if r.fs.isCrashed() {
				crashed++
			}
			check(r)
			if t.Failed() {
				return
			}
		}
		// A run's count of changes varies (see fewestOfThree), so a point
		// near the end may still fall past a run's last change; nearly
		// all must crash.
		requireRan(t, "crash points", crashed, points*9/10)
	})
}

// TestCrash_PowerLossBackgroundWAL cuts the power during the crash
// workload with BackgroundWALWrites: what recovers is a prefix of the
// attempted writes, batches whole, holding every write acknowledged before
// the last Sync write, Flush, Compact or Close. (The background writer's
// writes make the count of filesystem changes vary a little from run to
// run; each crash point is still a point of the workload.)
func TestCrash_PowerLossBackgroundWAL(t *testing.T) {
	runCrashPoints(t, 300, true, (*crashRun).verify)
}

// TestCrash_ProcessCrash kills the process during the crash workload: the
// filesystem refuses every change from the crash point on, and keeps every
// byte it took before, synced or not, as the OS does when only the
// process dies. In the default mode every acknowledged write, NoSync
// included, must be back; with BackgroundWALWrites, a prefix of the
// attempted writes holding every write acknowledged before the last Sync
// write, Flush, Compact or Close.
func TestCrash_ProcessCrash(t *testing.T) {
	for _, mode := range walModes {
		t.Run("wal="+mode.name, func(t *testing.T) {
			runCrashPoints(t, 300, mode.background, func(r *crashRun) {
				if !mode.background {
					r.durable = r.acked
				}
				r.verifyProcessCrash()
			})
		})
	}
}

// verifyProcessCrash reopens the store as a crash of the process leaves
// it, unsynced bytes included, and checks what it holds.
func (r *crashRun) verifyProcessCrash() {
	r.t.Helper()
	if r.db != nil {
		_ = r.db.Close() // fails, with the filesystem refusing changes
		r.db = nil
	}
	r.opts.FS = r.mem
	r.matchPrefix(r.reopenAndRead("reopen after the process crash"))
}

// walWriteFault fails the n-th write to a WAL file (counting from 0) and
// every WAL write after it, as a full or failing disk does, and records
// that it fired.
type walWriteFault struct {
	n     int32
	seen  atomic.Int32
	fired atomic.Bool
}

func (f *walWriteFault) MaybeError(op errorfs.Op, path string) error {
	if op != errorfs.OpFileWrite || !strings.HasSuffix(path, ".log") {
		return nil
	}
	if f.seen.Add(1)-1 >= f.n {
		f.fired.Store(true)
		return errorfs.ErrInjected
	}
	return nil
}

// TestBackgroundWAL_WriteError fails the background writer's n-th write to
// the WAL, for each n the workload reaches, while NoSync writes, Sync
// writes every 25th and memtable switches (small memtables) go on. The
// failure must come back, wrapped, from a later write; after it no Sync
// write succeeds, every write fails, and Flush and Close report it.
// Reopened without faults, the store holds a prefix of the acknowledged
// writes holding every one acknowledged before the last successful Sync
// write.
func TestBackgroundWAL_WriteError(t *testing.T) {
	for n := int32(0); ; n++ {
		mem := vfs.NewMem()
		fault := &walWriteFault{n: n}
		opts := faultOpts(wrapFaults(mem, fault))
		opts.DisableAutomaticCompactions = true
		opts.BackgroundWALWrites = true
		acked, durable := writeUntilWALFault(t, opts, fault)
		if !fault.fired.Load() {
			t.Logf("the workload makes %d WAL writes", n)
			if n < 5 {
				t.Fatalf("the workload made only %d WAL writes", n)
			}
			return
		}
		got, err := readStore(mem)
		if err != nil {
			t.Fatalf("fault at WAL write %d: %v", n, err)
		}
		checkKeyPrefix(t, got, durable, acked, fmt.Sprintf("fault at WAL write %d", n))
	}
}

const walFaultWrites = 400

func walFaultKey(i int) string { return fmt.Sprintf("w%05d", i) }

// writeUntilWALFault opens a store with opts and writes walFaultKey(i) =
// "v" for i = 0.. until a write fails or walFaultWrites are written, then
// closes it. It returns the number of writes acknowledged, and of those
// acknowledged by the last successful Sync write.
func writeUntilWALFault(t *testing.T, opts *kv.Options, fault *walWriteFault) (acked, durable int) {
	t.Helper()
	db, err := kv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	var failed error
	for i := range walFaultWrites {
		sync := i%25 == 24
		firedBefore := fault.fired.Load()
		err := db.Set([]byte(walFaultKey(i)), []byte("v"), &kv.WriteOptions{Sync: sync})
		switch {
		case err == nil && sync && firedBefore:
			t.Fatalf("fault at WAL write %d: Sync write %d succeeded after the failed WAL write", fault.n, i)
		case err == nil && failed != nil:
			t.Fatalf("fault at WAL write %d: write %d succeeded after write %d failed", fault.n, i, acked)
		case err == nil:
			acked++
			if sync {
				durable = acked
			}
		case !errors.Is(err, errorfs.ErrInjected):
			t.Fatalf("fault at WAL write %d: write %d: error does not wrap the injected one: %v", fault.n, i, err)
		default:
			failed = err
		}
	}
	if failed != nil || fault.fired.Load() {
		if err := db.Flush(); !errors.Is(err, errorfs.ErrInjected) {
			t.Fatalf("fault at WAL write %d: Flush after the failure: %v", fault.n, err)
		}
	}
	if err := db.Close(); fault.fired.Load() != errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("fault at WAL write %d (fired: %v): Close: %v", fault.n, fault.fired.Load(), err)
	}
	return acked, durable
}

// checkKeyPrefix checks that got holds walFaultKey(i) = "v" for every i
// below some n in [durable, acked], and nothing else.
func checkKeyPrefix(t *testing.T, got map[string]string, durable, acked int, what string) {
	t.Helper()
	n := len(got)
	if n < durable || n > acked {
		t.Fatalf("%s: %d keys recovered, want between %d (durable) and %d (acknowledged)", what, n, durable, acked)
	}
	for i := range n {
		if got[walFaultKey(i)] != "v" {
			t.Fatalf("%s: %d keys recovered, but not %s: no prefix of the writes", what, n, walFaultKey(i))
		}
	}
}

// TestBackgroundWAL_ConcurrentWriters runs writers at once, NoSync and
// Sync mixed, over small memtables (so WALs switch while the background
// writer runs) and readers checking each writer's latest key: every
// acknowledged write is readable at once, and all are back after Close and
// a reopen.
func TestBackgroundWAL_ConcurrentWriters(t *testing.T) {
	mem := vfs.NewMem()
	opts := faultOpts(mem)
	opts.BackgroundWALWrites = true
	db, err := kv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	const writers, perWriter = 4, 300
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				k := fmt.Sprintf("c%d/%04d", w, i)
				if err := db.Set([]byte(k), []byte(k), &kv.WriteOptions{Sync: i%50 == 49}); err != nil {
					t.Error(err)
					return
				}
				if v, err := db.Get([]byte(k)); err != nil || string(v) != k {
					t.Errorf("Get(%s) right after its Set: %q, %v", k, v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := readStore(mem)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != writers*perWriter {
		t.Fatalf("%d keys after reopening, want %d", len(got), writers*perWriter)
	}
}

// TestDB_ModelBackgroundWAL runs the randomized model test of
// model_test.go with BackgroundWALWrites: every acknowledged write is
// readable at once, through Get, iterators and snapshots, across flushes,
// compactions and reopens.
func TestDB_ModelBackgroundWAL(t *testing.T) {
	seeds, steps := 2, 3000
	if testing.Short() {
		seeds, steps = 1, 1000
	}
	forEachSeed(t, seeds, func(t *testing.T, seed uint64) {
		r := newModelRun(t, seed)
		defer r.closeAll()
		r.check(r.db.Close(), "Close, to reopen with BackgroundWALWrites")
		r.opts.BackgroundWALWrites = true
		r.open()
		for range steps {
			r.step()
		}
		r.checkFull()
	})
}
