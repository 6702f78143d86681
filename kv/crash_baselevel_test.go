package kv_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// TestCrash_BaseLevelMoves cuts the power while background compactions
// reshape a store under the dynamic level sizes (MaxConcurrentCompactions
// is 2, but under Pebble's rule a second compaction starts only at an L0
// read amplification of 10, which this store never reaches): its data
// starts in L6 alone, with flushed tables in L0, and is large enough for
// the base level to move up, so the compactions write L0 into a level
// that held nothing before the crash and push data between the levels
// below. Whatever the point, the reopened store, whose base level is
// derived anew from where the data now lives, holds exactly the flushed
// contents; its own compactions then reshape it without losing any of
// them, and leave no level above the base level holding data.
func TestCrash_BaseLevelMoves(t *testing.T) {
	crashReshapes(t, baseLevelFixture, baseLevelOptions, func(t *testing.T, seed uint64, m kv.Metrics) {
		t.Logf("settled with base level L%d", m.Compact.BaseLevel)
		if m.Compact.BaseLevel == 6 {
			t.Fatalf("seed %d: the base level stayed L6: the fixture is too small", seed)
		}
	})
}

// reshapeFixture builds a crash test's store, closes it and returns its
// filesystem and contents.
type reshapeFixture func(t *testing.T, seed uint64) (*crashFS, map[string]string)

// crashReshapes runs the compactions of fixture's store once, to count
// their filesystem changes and hand the settled metrics to settled; then,
// for each of 60 crash points (10 with -short) among those changes, it
// builds the fixture again, cuts the power that many changes into the
// compactions, and checks the reopened store with checkReshaped.
func crashReshapes(t *testing.T, fixture reshapeFixture, opts storeOptions, settled func(*testing.T, uint64, kv.Metrics)) {
	t.Helper()
	points := 60
	if testing.Short() {
		points = 10
	}
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		fs, _ := fixture(t, seed)
		start := fs.count()
		m := runReshape(t, fs, opts)
		total := fs.count() - start
		t.Logf("the compactions make %d filesystem changes; settled:\n%s", total, m)
		settled(t, seed, m)
		for _, k := range crashPoints(newRand(seed), total, points) {
			fs, want := fixture(t, seed)
			fs.arm(fs.count() + k)
			runReshape(t, fs, opts)
			what := fmt.Sprintf("seed %d, crash %d operations into the compactions", seed, k)
			fs.FS.(*vfs.MemFS).ResetToSyncedState()
			checkReshaped(t, fs.FS, opts, want, what)
			if t.Failed() {
				return
			}
		}
	})
}

// baseLevelOptions are the options of TestCrash_BaseLevelMoves's stores:
// small tables and level targets, so that the base level moves.
func baseLevelOptions(fs vfs.FS, auto bool) *kv.Options {
	return &kv.Options{FS: fs, DisableAutomaticCompactions: !auto, MaxConcurrentCompactions: 2,
		MemTableSize: 16 << 10, LBaseMaxBytes: 8 << 10, TargetFileSize: 2 << 10, BlockSize: 256,
		L0CompactionThreshold: 2}
}

// baseLevelFixture builds, with automatic compactions off, a store whose
// L6 holds about 125 KiB and whose L0 holds six flushes, closes it
// and returns its filesystem and contents.
func baseLevelFixture(t *testing.T, seed uint64) (*crashFS, map[string]string) {
	t.Helper()
	rng := newRand(seed)
	fs := newCrashFS(vfs.NewStrictMem())
	db, err := kv.Open("db", baseLevelOptions(fs, false))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	put := func(k string) {
		v := randomLetters(rng, 20+rng.IntN(60))
		want[k] = v
		if err := db.Set([]byte(k), []byte(v), kv.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 1500; i++ {
		put(fmt.Sprintf("b%04d", i))
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 6; round++ {
		for i := 0; i < 250; i++ {
			k := fmt.Sprintf("b%04d", rng.IntN(1600))
			if rng.IntN(6) == 0 {
				delete(want, k)
				if err := db.Delete([]byte(k), kv.NoSync); err != nil {
					t.Fatal(err)
				}
				continue
			}
			put(k)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return fs, want
}

// storeOptions returns the options of a crash test's store on fs, with
// automatic compactions on or off.
type storeOptions func(fs vfs.FS, auto bool) *kv.Options

// runReshape opens the store on fs with opts and automatic compactions on,
// waits until they are done or the power is off, and closes it. It
// returns the metrics of the settled store.
func runReshape(t *testing.T, fs *crashFS, opts storeOptions) kv.Metrics {
	t.Helper()
	db, err := kv.Open("db", opts(fs, true))
	if err != nil {
		if fs.isCrashed() {
			return kv.Metrics{}
		}
		t.Fatal(err)
	}
	m := waitSettled(t, db, func() bool { return fs.isCrashed() })
	if err := db.Close(); err != nil && !fs.isCrashed() {
		t.Fatal(err)
	}
	return m
}

// waitSettled waits until db runs no compaction and none is due
// (DB.WaitIdle), or until a crash stops its background work, and returns
// db's metrics then.
func waitSettled(t *testing.T, db *kv.DB, crashed func() bool) kv.Metrics {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := db.WaitIdle(ctx); err != nil && !crashed() {
		t.Fatalf("compactions still running or due: %v\n%s", err, db.Metrics())
	}
	return db.Metrics()
}

// checkReshaped opens the crashed store on fs with opts: it holds want;
// its compactions, run to the end, keep it so and leave nothing above the
// base level.
func checkReshaped(t *testing.T, fs vfs.FS, opts storeOptions, want map[string]string, what string) {
	t.Helper()
	for pass, auto := range []bool{false, true} {
		db, err := kv.Open("db", opts(fs, auto))
		if err != nil {
			t.Fatalf("%s: Open (pass %d): %v", what, pass, err)
		}
		var m kv.Metrics
		if auto {
			m = waitSettled(t, db, func() bool { return false })
		}
		got, err := readAll(db.NewIter)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("%s: pass %d: %v", what, pass, err)
		}
		if d := diffMaps(got, want); d != "" {
			t.Fatalf("%s: pass %d: contents differ: %s", what, pass, d)
		}
		for level := 1; auto && level < m.Compact.BaseLevel; level++ {
			if m.Levels[level].NumFiles > 0 {
				t.Fatalf("%s: L%d holds tables above the base level L%d:\n%s", what, level, m.Compact.BaseLevel, m)
			}
		}
	}
}
