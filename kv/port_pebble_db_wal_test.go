package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// ppWriteWAL writes n values of size bytes ("k%03d") to a store on fs,
// left in its WAL (Close does not flush), and returns the DB still open.
func ppWriteWAL(t *testing.T, fs vfs.FS, o *kv.Options, n, size int) *kv.DB {
	t.Helper()
	db := ldbOpen(t, fs, o)
	for i := 0; i < n; i++ {
		pbMust(t, db.Set([]byte(fmt.Sprintf("k%03d", i)), bytes.Repeat([]byte{'v'}, size), kv.NoSync))
	}
	return db
}

// ppWantValues checks that db holds the n values of ppWriteWAL.
func ppWantValues(t *testing.T, what string, db *kv.DB, n, size int) {
	t.Helper()
	for i := 0; i < n; i++ {
		v, err := db.Get([]byte(fmt.Sprintf("k%03d", i)))
		if err != nil || len(v) != size {
			t.Fatalf("%s: Get(k%03d) = %d bytes, %v", what, i, len(v), err)
		}
	}
}

// TestPortPebbleDBOpenWALReplay ports Pebble's TestOpenWALReplay: a WAL
// of about 40 KiB replayed into a memtable smaller than it (Open writes
// the replayed writes to L0 tables) and larger (Open keeps them in the
// memtable, writing no table), read-write and read-only.
func TestPortPebbleDBOpenWALReplay(t *testing.T) {
	const n, size = 40, 1 << 10
	for _, memSize := range []int64{8 << 10, 1 << 20} {
		for _, ro := range []bool{false, true} {
			fs := vfs.NewMem()
			o := &kv.Options{MemTableSize: 1 << 20}
			ldbClose(t, ppWriteWAL(t, fs, o, n, size))
			db := ldbOpen(t, fs, &kv.Options{MemTableSize: memSize, ReadOnly: ro})
			what := fmt.Sprintf("memtable %d, read-only %v", memSize, ro)
			ppWantValues(t, what, db, n, size)
			tables := ldbTables(db)
			switch {
			case memSize < n*size && !ro && tables == 0:
				t.Errorf("%s: a WAL larger than the memtable replayed without a table", what)
			case (memSize > n*size || ro) && tables != 0:
				t.Errorf("%s: replay wrote %d tables", what, tables)
			}
			ldbClose(t, db)
			db = ldbOpen(t, fs, o)
			ppWantValues(t, what+", reopened", db, n, size)
			ldbClose(t, db)
		}
	}
}

// TestPortPebbleDBOpenWALReplay2 ports Pebble's TestOpenWALReplay2: the
// store is abandoned (a crash of the process) after its memtable rotated
// for a full memtable, for a batch larger than the memtable, and for a
// flush; each time Open replays every WAL.
func TestPortPebbleDBOpenWALReplay2(t *testing.T) {
	o := &kv.Options{MemTableSize: kv.MinMemTableSize * 4, DisableAutomaticCompactions: true}
	for _, reason := range []string{"memtable full", "large batch", "flush"} {
		mem := vfs.NewStrictMem()
		fs := newCrashFS(mem)
		db := ldbOpen(t, fs, o)
		pbMust(t, db.Set([]byte("a"), []byte("1"), kv.Sync))
		switch reason {
		case "memtable full":
			for i := 0; i < 20; i++ {
				pbMust(t, db.Set([]byte(fmt.Sprintf("fill%02d", i)), bytes.Repeat([]byte{'f'}, 400), kv.NoSync))
			}
		case "large batch":
			pbMust(t, db.Set([]byte("big"), bytes.Repeat([]byte{'b'}, int(o.MemTableSize)*2), kv.NoSync))
		case "flush":
			pbMust(t, db.Flush())
		}
		pbMust(t, db.Set([]byte("z"), []byte("2"), kv.Sync))
		ppCrash(t, fs, db)
		db = ldbOpen(t, mem, o)
		pbWantGets(t, reason, db, "a=1 z=2")
		if reason == "large batch" {
			if v, err := db.Get([]byte("big")); err != nil || len(v) != int(o.MemTableSize)*2 {
				t.Errorf("%s: Get(big) = %d bytes, %v", reason, len(v), err)
			}
		}
		ldbClose(t, db)
	}
}

// ppCrash cuts fs's power, lets db go (its Close fails), and drops what
// was not synced.
func ppCrash(t *testing.T, fs *crashFS, db *kv.DB) {
	t.Helper()
	fs.arm(fs.count())
	_ = db.Close()
	fs.FS.(*vfs.MemFS).ResetToSyncedState()
}

// TestPortPebbleDBTwoWALReplayCorrupt ports Pebble's
// TestTwoWALReplayCorrupt: with two WALs live, damage in the middle of
// the first one, followed by its valid records, is corruption naming it:
// Open refuses the store rather than replay the second WAL over a gap.
func TestPortPebbleDBTwoWALReplayCorrupt(t *testing.T) {
	mem := vfs.NewStrictMem()
	fs := newCrashFS(mem)
	// The first memtable fills at 256 KiB, and is flushed only once the
	// immutable ones add up to 512 KiB: 300 KiB leaves two WALs live.
	o := &kv.Options{MemTableSize: 1 << 20}
	db := ppWriteWAL(t, fs, o, 300, 1<<10)
	if n := db.Metrics().WAL.Files; n != 2 {
		t.Fatalf("%d WALs live, want 2", n)
	}
	pbMust(t, db.Set([]byte("z"), []byte("z"), kv.Sync))
	logs := pcLogs(t, mem)
	ppCrash(t, fs, db)
	first := logs[0]
	pcCorrupt(t, mem, first, 8<<10, 4)
	_, err := kv.Open("db", &kv.Options{FS: mem, MemTableSize: o.MemTableSize})
	if !errors.Is(err, kv.ErrCorruption) || !strings.Contains(err.Error(), first) {
		t.Errorf("Open with %s damaged mid-file = %v, want corruption naming it", first, err)
	}
}

// TestPortPebbleDBOpenWALReplayReadOnlySeqNums ports Pebble's
// TestOpenWALReplayReadOnlySeqNums: a read-only Open replays the WALs
// without recording anything, so the sequence numbers it saw are not
// used up; a read-write Open after it replays them again, and its new
// writes win over the replayed ones, across another reopen.
func TestPortPebbleDBOpenWALReplayReadOnlySeqNums(t *testing.T) {
	fs := vfs.NewMem()
	db := ldbOpen(t, fs, nil)
	pbMust(t, db.Set([]byte("a"), []byte("1"), kv.NoSync))
	pbMust(t, db.Flush())
	pbMust(t, db.Set([]byte("a"), []byte("2"), kv.NoSync))
	ldbClose(t, db)
	ro := ldbOpen(t, fs, &kv.Options{ReadOnly: true})
	pbWantGets(t, "read-only", ro, "a=2")
	ldbClose(t, ro)
	db = ldbOpen(t, fs, nil)
	pbWantGets(t, "read-write", db, "a=2")
	pbMust(t, db.Set([]byte("a"), []byte("3"), kv.NoSync))
	pbMust(t, db.Flush())
	pbMust(t, db.Compact([]byte("a"), []byte("a")))
	ldbClose(t, db)
	db = ldbOpen(t, fs, nil)
	defer ldbClose(t, db)
	pbWantGets(t, "reopened", db, "a=3")
}

// TestPortPebbleDBOpenWALReplayMemtableGrowth ports Pebble's
// TestOpenWALReplayMemtableGrowth: a WAL holding a batch as large as the
// memtable (larger than the first, smaller memtables after Open) replays
// without error.
func TestPortPebbleDBOpenWALReplayMemtableGrowth(t *testing.T) {
	fs := vfs.NewMem()
	o := &kv.Options{MemTableSize: 64 << 10}
	db := ldbOpen(t, fs, o)
	b := db.NewBatch()
	pbMust(t, b.Set([]byte("a"), bytes.Repeat([]byte{'a'}, int(o.MemTableSize)-128)))
	pbMust(t, db.Apply(b, kv.NoSync))
	ldbClose(t, db)
	for i := 0; i < 2; i++ {
		db = ldbOpen(t, fs, o)
		if v, err := db.Get([]byte("a")); err != nil || len(v) != int(o.MemTableSize)-128 {
			t.Fatalf("reopen %d: Get(a) = %d bytes, %v", i, len(v), err)
		}
		ldbClose(t, db)
	}
}

// TestPortPebbleDBCrashOpenCrashAfterWALCreation ports Pebble's
// TestCrashOpenCrashAfterWALCreation: a crash leaves synced writes in a
// WAL; Open replays them and creates a new WAL, and a crash right after
// that Open must not lose them (the replayed writes are in a table or
// still in a live WAL that the next Open replays).
func TestPortPebbleDBCrashOpenCrashAfterWALCreation(t *testing.T) {
	mem := vfs.NewStrictMem()
	fs := newCrashFS(mem)
	o := &kv.Options{MemTableSize: kv.MinMemTableSize}
	db := ppWriteWAL(t, fs, o, 5, 500) // over the memtable: Open writes L0
	pbMust(t, db.Set([]byte("z"), []byte("z"), kv.Sync))
	ppCrash(t, fs, db)
	for i := 0; i < 3; i++ {
		fs = newCrashFS(mem)
		db = ldbOpen(t, fs, o)
		ppWantValues(t, fmt.Sprintf("open %d", i), db, 5, 500)
		pbWantGets(t, fmt.Sprintf("open %d", i), db, "z=z")
		ppCrash(t, fs, db)
	}
}
