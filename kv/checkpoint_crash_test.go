package kv_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// fileOpsFixture builds, over a strict filesystem that can lose power, a
// store with L0 tables and Sync writes in its WAL, and a synced table
// ext/t.sst to ingest, whose keys overlap the store's. It returns the
// filesystem, the open DB, the number of filesystem changes so far, the
// store's contents and the table's.
func fileOpsFixture(t *testing.T) (*crashFS, *kv.DB, int, map[string]string, map[string]string) {
	t.Helper()
	fs := newCrashFS(vfs.NewStrictMem())
	db, err := kv.Open("db", reopenOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range 120 {
		k, v := fmt.Sprintf("k%04d", i%90), fmt.Sprintf("v%d", i)
		if err := db.Set([]byte(k), []byte(v), kv.Sync); err != nil {
			t.Fatal(err)
		}
		want[k] = v
		if i == 80 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	ext := keyRange("k", 50, 70, "ing")
	writeExternal(t, fs, "ext/t.sst", ext, sstable.WriterOptions{})
	for _, dir := range []string{"", "ext"} {
		syncMemDir(t, fs, dir)
	}
	return fs, db, fs.count(), want, ext
}

// checkCheckpointDir checks, after a crash, that dir is absent or holds
// want whole, and that its temporary directory, if any, is no store
// (no CURRENT) or holds want whole too.
func checkCheckpointDir(t *testing.T, fs vfs.FS, dir string, want map[string]string, what string) (complete bool) {
	t.Helper()
	for _, d := range []string{dir, dir + ".checkpoint-tmp"} {
		if _, err := fs.Stat(d); errors.Is(err, os.ErrNotExist) {
			continue
		}
		got, err := readDir(fs, d)
		switch {
		case d != dir && errors.Is(err, kv.ErrDBDoesNotExist):
			continue // an interrupted temporary directory: no CURRENT
		case err != nil:
			t.Fatalf("%s: %s exists but does not open: %v", what, d, err)
		case diffMaps(got, want) != "":
			t.Fatalf("%s: %s: %s", what, d, diffMaps(got, want))
		}
		complete = complete || d == dir
	}
	return complete
}

// TestCrash_Checkpoint cuts the power at every filesystem change of a
// Checkpoint: the store keeps its contents, and the checkpoint directory
// is either absent or complete, its temporary one no store or complete.
func TestCrash_Checkpoint(t *testing.T) {
	fs, db, base, want := checkpointCrashFixture(t)
	if err := db.Checkpoint("ckpt"); err != nil {
		t.Fatal(err)
	}
	total := fs.count() - base
	db.Close()
	fs.FS.(*vfs.MemFS).ResetToSyncedState()
	if !checkCheckpointDir(t, fs.FS, "ckpt", want, "no crash") {
		t.Fatal("no crash: the checkpoint is missing")
	}
	complete := 0
	for k := range total {
		fs, db, base, want := checkpointCrashFixture(t)
		fs.arm(base + k)
		err := db.Checkpoint("ckpt")
		db.Close()
		what := fmt.Sprintf("crash %d of %d operations into the Checkpoint", k, total)
		if err == nil {
			t.Fatalf("%s: Checkpoint succeeded", what)
		}
		crashAndCheck(t, fs, what, want)
		if checkCheckpointDir(t, fs.FS, "ckpt", want, what) {
			complete++
		}
	}
	if total < 10 {
		t.Fatalf("Checkpoint made %d filesystem changes, fewer than its files", total)
	}
	t.Logf("%d crash points; the checkpoint was complete after %d (crashes once it was renamed)", total, complete)
}

// checkpointCrashFixture is fileOpsFixture without the table to ingest.
func checkpointCrashFixture(t *testing.T) (*crashFS, *kv.DB, int, map[string]string) {
	fs, db, base, want, _ := fileOpsFixture(t)
	return fs, db, base, want
}

// TestCrash_Ingest cuts the power at every filesystem change of an
// Ingest (its flush included): the reopened store holds its contents
// before the Ingest or after it, never a mix, and a write after the
// reopen shadows the ingested keys. Without a crash it holds them after.
func TestCrash_Ingest(t *testing.T) {
	fs, db, base, want, ext := fileOpsFixture(t)
	after := maps.Clone(want)
	maps.Copy(after, ext)
	if err := db.Ingest([]string{"ext/t.sst"}); err != nil {
		t.Fatal(err)
	}
	total := fs.count() - base
	db.Close()
	crashAndCheck(t, fs, "no crash", after)
	sawBefore, sawAfter := 0, 0
	for k := range total {
		fs, db, base, want, _ := fileOpsFixture(t)
		fs.arm(base + k)
		db.Ingest([]string{"ext/t.sst"})
		db.Close()
		what := fmt.Sprintf("crash %d of %d operations into the Ingest", k, total)
		crashAndCheck(t, fs, what, want, after)
		mem := fs.FS.(*vfs.MemFS)
		db, err := kv.Open("db", reopenOpts(mem))
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAll(db.NewIter)
		if err != nil {
			t.Fatal(err)
		}
		if diffMaps(got, after) == "" {
			sawAfter++
		} else {
			sawBefore++
		}
		if err := db.Set([]byte("k0060"), []byte("later"), kv.NoSync); err != nil {
			t.Fatal(err)
		}
		if v, err := db.Get([]byte("k0060")); err != nil || string(v) != "later" {
			t.Fatalf("%s: after the reopen, Get(k0060) = %q, %v; want the later write", what, v, err)
		}
		db.Close()
	}
	// The last change is the MANIFEST's sync: every crash comes before.
	if sawBefore == 0 {
		t.Fatalf("%d crash points, none left the store as before the Ingest", total)
	}
	t.Logf("%d crash points: %d before, %d after", total, sawBefore, sawAfter)
}
