package kv_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// reopenOpts are the options of the reopen tests: a memtable that the
// tests' writes do not fill, so reopening keeps them in memory.
func reopenOpts(fs vfs.FS) *kv.Options {
	return &kv.Options{FS: fs, MemTableSize: 256 << 10, DisableAutomaticCompactions: true}
}

// countFiles returns how many WALs and tables the store's directory holds.
func countFiles(t *testing.T, fs vfs.FS) (wals, tables int) {
	t.Helper()
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		switch typ, _, _ := base.ParseFilename(n); typ {
		case base.FileTypeLog:
			wals++
		case base.FileTypeTable:
			tables++
		}
	}
	return wals, tables
}

// cycleWrites opens the store, writes n Sync writes numbered from first
// into it and want, and closes it.
func cycleWrites(t *testing.T, opts *kv.Options, want map[string]string, first, n int) {
	t.Helper()
	db, err := kv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := first; i < first+n; i++ {
		k, v := fmt.Sprintf("k%04d", i%150), fmt.Sprintf("v%d", i)
		if err := db.Set([]byte(k), []byte(v), kv.Sync); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDB_ReopenCycles opens and closes a store many times, writing a little
// each time, as a command-line tool does: the writes stay in the one WAL,
// no L0 table appears, and the metrics say so.
func TestDB_ReopenCycles(t *testing.T) {
	fs := vfs.NewMem()
	opts := reopenOpts(fs)
	want := map[string]string{}
	for cycle := range 40 {
		cycleWrites(t, opts, want, cycle*7, 7)
		if wals, tables := countFiles(t, fs); wals != 1 || tables != 0 {
			t.Fatalf("after %d cycles: %d WALs and %d tables, want 1 and 0", cycle+1, wals, tables)
		}
	}
	db, err := kv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, db)
	m := db.Metrics()
	if m.WAL.Files != 1 || m.MemTable.Count != 1 || m.MemTable.Size == 0 || m.Levels[0].NumFiles != 0 || m.Flush.Count != 0 {
		t.Fatalf("metrics after the cycles: %d WALs, %d memtables of %d B, %d L0 tables, %d flushes",
			m.WAL.Files, m.MemTable.Count, m.MemTable.Size, m.Levels[0].NumFiles, m.Flush.Count)
	}
	got, err := readAll(db.NewIter)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffMaps(got, want); d != "" {
		t.Fatalf("contents after the cycles: %s", d)
	}
	// Flushing the replayed memtable retires its WAL.
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	must(t, db.WaitIdle(context.Background())) // the cleaner deletes in the background
	if m := db.Metrics(); m.WAL.Files != 1 || m.Levels[0].NumFiles != 1 {
		t.Fatalf("after Flush: %d WALs, %d L0 tables; want 1 and 1", m.WAL.Files, m.Levels[0].NumFiles)
	}
	if wals, tables := countFiles(t, fs); wals != 1 || tables != 1 {
		t.Fatalf("after Flush: %d WAL files and %d tables, want 1 and 1", wals, tables)
	}
}

// TestDB_ReopenFlushesOnlyWhatOverflows reopens a store whose WAL holds
// more than a memtable: Open writes it as L0 tables and starts one new WAL.
func TestDB_ReopenFlushesOnlyWhatOverflows(t *testing.T) {
	fs := vfs.NewMem()
	opts := reopenOpts(fs)
	want := map[string]string{}
	cycleWrites(t, opts, want, 0, 100)
	small := *opts
	small.MemTableSize = kv.MinMemTableSize
	db, err := kv.Open("db", &small)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, db)
	if m := db.Metrics(); m.Levels[0].NumFiles == 0 || m.WAL.Files != 1 || m.MemTable.Size != 0 {
		t.Fatalf("reopened with a smaller memtable: %d L0 tables, %d WALs, memtable %d B",
			m.Levels[0].NumFiles, m.WAL.Files, m.MemTable.Size)
	}
	if wals, _ := countFiles(t, fs); wals != 1 {
		t.Fatalf("%d WAL files after the flush at Open, want 1", wals)
	}
	got, err := readAll(db.NewIter)
	if err != nil || diffMaps(got, want) != "" {
		t.Fatalf("contents: %v %s", err, diffMaps(got, want))
	}
}

// reopenCrashFixture builds, over a strict filesystem, a store closed
// after Sync writes and reopened: its memtable is the replayed one, which
// then takes more Sync writes. It returns the filesystem, the open DB, the
// number of filesystem changes so far, and the contents.
func reopenCrashFixture(t *testing.T) (*crashFS, *kv.DB, int, map[string]string) {
	t.Helper()
	fs := newCrashFS(vfs.NewStrictMem())
	opts := reopenOpts(fs)
	want := map[string]string{}
	cycleWrites(t, opts, want, 0, 60)
	cycleWrites(t, opts, want, 60, 30)
	db, err := kv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 90; i < 120; i++ {
		k, v := fmt.Sprintf("k%04d", i%150), fmt.Sprintf("v%d", i)
		if err := db.Set([]byte(k), []byte(v), kv.Sync); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	if m := db.Metrics(); m.Levels[0].NumFiles != 0 || m.WAL.Files != 1 {
		t.Fatalf("fixture: %d L0 tables and %d WALs, want the replayed memtable alone", m.Levels[0].NumFiles, m.WAL.Files)
	}
	return fs, db, fs.count(), want
}

// crashAndCheck completes a crash of fs and checks, over two reopens, that
// the store holds one of wants.
func crashAndCheck(t *testing.T, fs *crashFS, what string, wants ...map[string]string) {
	t.Helper()
	mem := fs.FS.(*vfs.MemFS)
	mem.ResetToSyncedState()
	for pass := range 2 {
		db, err := kv.Open("db", reopenOpts(mem))
		if err != nil {
			t.Fatalf("%s: Open (pass %d): %v\nfilesystem operations:\n%s", what, pass, err, fs.lastOps())
		}
		got, err := readAll(db.NewIter)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("%s: pass %d: %v", what, pass, err)
		}
		ok := false
		for _, w := range wants {
			ok = ok || diffMaps(got, w) == ""
		}
		if !ok {
			t.Fatalf("%s: pass %d: contents differ: %s\nfilesystem operations:\n%s",
				what, pass, diffMaps(got, wants[len(wants)-1]), fs.lastOps())
		}
	}
}

// TestCrash_FlushOfReplayedMemTable cuts the power at every filesystem
// change of a Flush of a memtable recovered at Open (and continued): the
// store holds every Sync write whatever the point, its WALs and MANIFEST
// agree on sequence numbers, and it reopens twice the same.
func TestCrash_FlushOfReplayedMemTable(t *testing.T) {
	fs, db, base, want := reopenCrashFixture(t)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if m := db.Metrics(); m.Flush.Count != 1 || m.Levels[0].NumFiles != 1 || m.WAL.Files != 1 {
		t.Fatalf("after Flush: %d flushes, %d L0 tables, %d WALs", m.Flush.Count, m.Levels[0].NumFiles, m.WAL.Files)
	}
	total := fs.count() - base
	must(t, db.Close())
	for k := range total {
		fs, db, base, want := reopenCrashFixture(t)
		fs.arm(base + k)
		_ = db.Flush() // fails when the power goes during it
		_ = db.Close() // fails after the power went
		crashAndCheck(t, fs, fmt.Sprintf("crash %d of %d operations into the Flush", k, total), want)
	}
	crashAndCheck(t, fs, "no crash", want)
}

// TestCrash_ReopenWithReplayedMemTable cuts the power at every filesystem
// change of a Close, a reopen that replays the memtable and continues its
// WAL, Sync writes, a Close and another reopen. The store holds every
// write acknowledged before the crash, and at most the one in flight more.
func TestCrash_ReopenWithReplayedMemTable(t *testing.T) {
	run := func(fs *crashFS, db *kv.DB, want map[string]string) []map[string]string {
		states := []map[string]string{maps.Clone(want)}
		if db.Close() != nil {
			return states
		}
		for cycle := range 2 {
			db, err := kv.Open("db", reopenOpts(fs))
			if err != nil {
				return states
			}
			for i := range 10 {
				k, v := fmt.Sprintf("k%04d", i), fmt.Sprintf("c%d.%d", cycle, i)
				next := maps.Clone(states[len(states)-1])
				next[k] = v
				states = append(states, next)
				if db.Set([]byte(k), []byte(v), kv.Sync) != nil {
					_ = db.Close() // fails, with the power off
					return states
				}
			}
			if db.Close() != nil {
				return states
			}
		}
		return states
	}
	fs, db, base, want := reopenCrashFixture(t)
	run(fs, db, want)
	total := fs.count() - base
	for k := range total {
		fs, db, base, want := reopenCrashFixture(t)
		fs.arm(base + k)
		states := run(fs, db, want)
		// The last state is the write in flight at the crash, if any: it
		// may or may not have reached the disk.
		wants := states[max(0, len(states)-2):]
		crashAndCheck(t, fs, fmt.Sprintf("crash %d of %d operations into the reopens", k, total), wants...)
	}
}
