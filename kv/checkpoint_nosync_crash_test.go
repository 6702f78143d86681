package kv_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// nosyncCheckpointFixture opens, over a strict filesystem, a store with a
// small memtable and writes NoSync writes (a few Sync ones among them)
// across several memtable switches, so that its state has tables,
// immutable memtables or both, and a live WAL not synced. It returns the
// filesystem, the open DB, the changes so far and the contents.
func nosyncCheckpointFixture(t *testing.T, bgWAL bool) (*crashFS, *kv.DB, int, map[string]string) {
	t.Helper()
	fs := newCrashFS(vfs.NewStrictMem())
	db, err := kv.Open("db", &kv.Options{
		FS: fs, MemTableSize: 1 << 10, BackgroundWALWrites: bgWAL, DisableAutomaticCompactions: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	val := strings.Repeat("n", 100)
	for i := range 400 {
		k, v := fmt.Sprintf("k%04d", i%170), fmt.Sprintf("v%d.%s", i, val)
		opts := kv.NoSync
		if i%97 == 0 {
			opts = kv.Sync
		}
		must(t, db.Set([]byte(k), []byte(v), opts))
		want[k] = v
	}
	return fs, db, fs.count(), want
}

// TestCrash_CheckpointKeepsNoSyncWrites cuts the power right after a
// Checkpoint returns, and at every filesystem change during it, with
// NoSync writes in the store's WALs, in both WAL modes: once Checkpoint
// has returned the checkpoint opens with every write acknowledged before
// it, NoSync ones included (it promises them all); before, the target is
// absent or complete.
func TestCrash_CheckpointKeepsNoSyncWrites(t *testing.T) {
	for _, bgWAL := range []bool{false, true} {
		t.Run(fmt.Sprintf("BackgroundWALWrites=%t", bgWAL), func(t *testing.T) {
			fs, db, base, want := nosyncCheckpointFixture(t, bgWAL)
			must(t, db.Checkpoint("backup/ckpt"))
			total := fs.count() - base
			fs.arm(fs.count()) // the machine goes down, the store still open
			_ = db.Close()
			fs.FS.(*vfs.MemFS).ResetToSyncedState()
			checkDir(t, fs.FS, "backup/ckpt", want, "crash after the Checkpoint returned")
			complete, succeeded := 0, 0
			for k := range total {
				fs, db, base, want := nosyncCheckpointFixture(t, bgWAL)
				fs.arm(base + k)
				err := db.Checkpoint("backup/ckpt")
				_ = db.Close()
				what := fmt.Sprintf("crash %d of %d operations into the Checkpoint", k, total)
				fs.FS.(*vfs.MemFS).ResetToSyncedState()
				if err == nil {
					// Background flushes made fewer changes this time, and
					// the crash came after the Checkpoint returned.
					succeeded++
					checkDir(t, fs.FS, "backup/ckpt", want, what+" (it returned)")
					continue
				}
				if checkCheckpointDir(t, fs.FS, "backup/ckpt", want, what) {
					complete++
				}
			}
			if succeeded > total/4 {
				t.Fatalf("%d of %d crash points came after the Checkpoint returned", succeeded, total)
			}
			t.Logf("%d operations; %d crash points left the checkpoint complete, %d came after it returned",
				total, complete, succeeded)
		})
	}
}
