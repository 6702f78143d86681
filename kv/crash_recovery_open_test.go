package kv_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// smallReopenOpts open a store with a memtable smaller than the writes of
// recoveryCrashFixture, so that Open writes the replayed writes to L0.
func smallReopenOpts(fs vfs.FS) *kv.Options {
	return &kv.Options{FS: fs, MemTableSize: 16 << 10, DisableAutomaticCompactions: true}
}

// recoveryCrashFixture builds, over a strict filesystem, a store whose
// WALs hold more than smallReopenOpts' memtable: Sync writes across a
// Flush, then a Close (closed) or a power loss after the writes. It
// returns the filesystem, the number of changes so far and the contents.
func recoveryCrashFixture(t *testing.T, closed bool) (*crashFS, int, map[string]string) {
	t.Helper()
	fs := newCrashFS(vfs.NewStrictMem())
	db, err := kv.Open("db", reopenOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	val := strings.Repeat("x", 200)
	for i := range 200 {
		k, v := fmt.Sprintf("k%04d", i%150), fmt.Sprintf("v%d.%s", i, val)
		must(t, db.Set([]byte(k), []byte(v), kv.Sync))
		want[k] = v
		if i == 40 {
			must(t, db.Flush())
		}
	}
	if closed {
		must(t, db.Close())
	} else {
		fs.arm(fs.count())
		_ = db.Close() // fails: the power is off
		mem := fs.FS.(*vfs.MemFS)
		mem.ResetToSyncedState()
		fs = newCrashFS(mem) // the power is back
	}
	return fs, fs.count(), want
}

// TestCrash_RecoveryOpen cuts the power at every filesystem change of an
// Open whose replayed writes exceed the memtable, so that it writes them
// to L0, starts a new WAL, writes a MANIFEST and retires the old WALs; of
// a closed store and of a crashed one. Two Opens after the crash must
// each find every Sync write.
func TestCrash_RecoveryOpen(t *testing.T) {
	for _, closed := range []bool{true, false} {
		t.Run(fmt.Sprintf("closed=%t", closed), func(t *testing.T) {
			fs, base, _ := recoveryCrashFixture(t, closed)
			db, err := kv.Open("db", smallReopenOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			// The fixture's Flush wrote one table; the Open writes more.
			if m := db.Metrics(); m.Levels[0].NumFiles < 2 {
				t.Fatalf("%d L0 tables: the Open wrote none, and the sweep would not cover its flush", m.Levels[0].NumFiles)
			}
			total := fs.count() - base
			must(t, db.Close())
			if total < 10 {
				t.Fatalf("the Open made %d filesystem changes", total)
			}
			for k := range total {
				fs, base, want := recoveryCrashFixture(t, closed)
				fs.arm(base + k)
				if db, err := kv.Open("db", smallReopenOpts(fs)); err == nil {
					_ = db.Close() // fails: the power went after the Open
				}
				what := fmt.Sprintf("crash %d of %d operations into the Open", k, total)
				fs.FS.(*vfs.MemFS).ResetToSyncedState()
				for pass := range 2 {
					got, err := readDirOpts(fs.FS, "db", smallReopenOpts(fs.FS))
					if err != nil {
						t.Fatalf("%s: Open (pass %d): %v\n%s", what, pass, err, fs.lastOps())
					}
					if d := diffMaps(got, want); d != "" {
						t.Fatalf("%s: pass %d: %s\n%s", what, pass, d, fs.lastOps())
					}
				}
			}
			t.Logf("%d crash points", total)
		})
	}
}

// readDirOpts reads the whole store in dir, opened with opts.
func readDirOpts(fs vfs.FS, dir string, opts *kv.Options) (map[string]string, error) {
	db, err := kv.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	got, err := readAll(db.NewIter)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return got, err
}
