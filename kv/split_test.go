package kv_test

// A user's Split that breaks its contract, or a comparer function that
// panics, gives errors: from Open, Get, a prefix seek, a flush or a
// compaction. The process survives, and the background goroutines too.

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// comparerWithSplit returns the slash comparer with split in place of its
// Split, under the same SplitName.
func comparerWithSplit(split func([]byte) int) *sstable.Comparer {
	c := itertest.SlashComparer()
	c.Split = split
	return c
}

// badOn returns a Split that cuts as SlashSplit does, but answers bad(key)
// for keys that start with "bad".
func badOn(bad func(key []byte) int) func([]byte) int {
	return func(key []byte) int {
		if bytes.HasPrefix(key, []byte("bad")) {
			return bad(key)
		}
		return itertest.SlashSplit(key)
	}
}

// TestOpen_InvalidSplit checks that Open refuses a Split that breaks its
// contract on every key, whether it returns a length outside the key, a
// prefix that is not its own prefix, or panics.
func TestOpen_InvalidSplit(t *testing.T) {
	splits := map[string]func([]byte) int{
		"len+5":  func(k []byte) int { return len(k) + 5 },
		"-1":     func(k []byte) int { return -1 },
		"len-1":  func(k []byte) int { return max(len(k)-1, 0) },
		"panics": func(k []byte) int { panic("split") },
	}
	ran := 0
	for name, split := range splits {
		_, err := kv.Open("db", &kv.Options{FS: vfs.NewMem(), Comparer: comparerWithSplit(split)})
		if !errors.Is(err, kv.ErrInvalidSplit) {
			t.Errorf("Split %s: Open: %v, want an error wrapping ErrInvalidSplit", name, err)
		}
		ran++
	}
	if ran != len(splits) {
		t.Fatalf("%d of %d Splits tried", ran, len(splits))
	}
}

// TestOpen_InvalidSplitOnTableBounds checks that Open tries the Split on
// the bounds of the store's tables, keys it holds.
func TestOpen_InvalidSplitOnTableBounds(t *testing.T) {
	fs := vfs.NewMem()
	writeFlushed(t, fs, "bad/1", "c/1")
	_, err := kv.Open("db", &kv.Options{FS: fs, Comparer: comparerWithSplit(badOn(func(k []byte) int { return len(k) + 5 }))})
	if !errors.Is(err, kv.ErrInvalidSplit) || !bytes.Contains([]byte(err.Error()), []byte("bad/1")) {
		t.Fatalf("Open over a table starting at bad/1: %v, want ErrInvalidSplit naming the key", err)
	}
}

// writeFlushed writes keys into a store at "db" on fs, flushed to a table
// under the slash comparer, and closes it.
func writeFlushed(t *testing.T, fs vfs.FS, keys ...string) {
	t.Helper()
	db, err := kv.Open("db", &kv.Options{FS: fs, Comparer: itertest.SlashComparer()})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := db.Set([]byte(k), []byte("v-"+k), kv.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// brokenLater returns a Split that cuts as SlashSplit does until *broken
// is set, and then as badOn(bad) does: keys that start with "bad" pass the
// write's check and meet the broken Split later.
func brokenLater(broken *atomic.Bool, bad func(key []byte) int) func([]byte) int {
	after := badOn(bad)
	return func(key []byte) int {
		if broken.Load() {
			return after(key)
		}
		return itertest.SlashSplit(key)
	}
}

// TestSplit_OutOfRange_Write checks that a write of a key the Split cuts
// outside fails with ErrInvalidSplit and applies nothing of its batch,
// and that the store goes on serving other writes and reads.
func TestSplit_OutOfRange_Write(t *testing.T) {
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem(), Comparer: comparerWithSplit(badOn(func(k []byte) int { return len(k) + 5 }))})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("bad/1"), []byte("v"), kv.NoSync); !errors.Is(err, kv.ErrInvalidSplit) {
		t.Fatalf("Set(bad/1): %v, want ErrInvalidSplit", err)
	}
	b := db.NewBatch()
	b.Set([]byte("a/1"), []byte("v"))
	b.Set([]byte("bad/2"), []byte("v"))
	if err := db.Apply(b, kv.NoSync); !errors.Is(err, kv.ErrInvalidSplit) {
		t.Fatalf("Apply of a batch holding bad/2: %v, want ErrInvalidSplit", err)
	}
	if _, err := db.Get([]byte("a/1")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("Get(a/1) after the refused batch: %v, want ErrNotFound", err)
	}
	if err := db.Set([]byte("a/1"), []byte("w"), kv.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get([]byte("a/1")); err != nil || string(v) != "w" {
		t.Fatalf("Get(a/1) = %q, %v", v, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSplit_OutOfRange_GetAndSeek checks that a Split that passes Open's
// samples but returns a length outside some keys makes Get and
// SeekPrefixGE of those keys fail with ErrInvalidSplit, while other keys
// read as ever.
func TestSplit_OutOfRange_GetAndSeek(t *testing.T) {
	for _, bad := range []func([]byte) int{
		func(k []byte) int { return len(k) + 5 },
		func(k []byte) int { return -1 },
	} {
		fs := vfs.NewMem()
		writeFlushed(t, fs, "a/1", "bad/2", "c/1")
		db, err := kv.Open("db", &kv.Options{FS: fs, Comparer: comparerWithSplit(badOn(bad))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Get([]byte("bad/2")); !errors.Is(err, kv.ErrInvalidSplit) {
			t.Errorf("Get(bad/2): %v, want ErrInvalidSplit", err)
		}
		if v, err := db.Get([]byte("c/1")); err != nil || string(v) != "v-c/1" {
			t.Errorf("Get(c/1) = %q, %v", v, err)
		}
		it, err := db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		if it.SeekPrefixGE([]byte("bad/2")) || !errors.Is(it.Error(), kv.ErrInvalidSplit) {
			t.Errorf("SeekPrefixGE(bad/2): valid=%v err=%v, want ErrInvalidSplit", it.Valid(), it.Error())
		}
		it.Close()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		// A prefix seek that meets the bad key on its way (in the
		// memtable, which has no filter) stops with the error.
		var broken atomic.Bool
		db, err = kv.Open("db", &kv.Options{FS: fs, Comparer: comparerWithSplit(brokenLater(&broken, bad))})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Set([]byte("bad/3"), nil, kv.NoSync); err != nil {
			t.Fatal(err)
		}
		broken.Store(true)
		it, _ = db.NewIter(nil)
		if it.SeekPrefixGE([]byte("b")) || !errors.Is(it.Error(), kv.ErrInvalidSplit) {
			t.Errorf("SeekPrefixGE(b) over bad/3: valid=%v key=%q err=%v, want ErrInvalidSplit", it.Valid(), it.Key(), it.Error())
		}
		it.Close()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSplit_OutOfRange_Flush checks that a flush meeting a key the Split
// cuts outside fails with ErrInvalidSplit, that writes then stop with that
// error, and that Close reports it: the background flush survives it.
func TestSplit_OutOfRange_Flush(t *testing.T) {
	var broken atomic.Bool
	split := brokenLater(&broken, func(k []byte) int { return len(k) + 5 })
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem(), Comparer: comparerWithSplit(split), MemTableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("bad/1"), []byte("v"), kv.NoSync); err != nil {
		t.Fatal(err)
	}
	broken.Store(true)
	if err := db.Flush(); !errors.Is(err, kv.ErrInvalidSplit) {
		t.Fatalf("Flush: %v, want ErrInvalidSplit", err)
	}
	checkWritesStop(t, db, kv.ErrInvalidSplit)
}

// checkWritesStop checks that writes fail with target once the memtable
// fills, and that Close reports it.
func checkWritesStop(t *testing.T, db *kv.DB, target error) {
	t.Helper()
	var err error
	for i := 0; i < 10000 && err == nil; i++ {
		err = db.Set([]byte(fmt.Sprintf("a/%05d", i)), make([]byte, 100), kv.NoSync)
	}
	if !errors.Is(err, target) {
		t.Errorf("writes after the failed flush: %v, want %v", err, target)
	}
	if err := db.Close(); !errors.Is(err, target) {
		t.Errorf("Close: %v, want %v", err, target)
	}
}

// TestComparer_Panic_Background checks that a Split or Separator that
// panics in a background flush or compaction becomes an error wrapping
// compaction.ErrCallbackPanic that stops writes, not a dead process.
func TestComparer_Panic_Background(t *testing.T) {
	var broken atomic.Bool
	cases := map[string]func(c *sstable.Comparer){
		"Split": func(c *sstable.Comparer) {
			c.Split = brokenLater(&broken, func([]byte) int { panic("split") })
		},
		"Compare": func(c *sstable.Comparer) {
			cmp := c.Compare
			c.Compare = func(a, b []byte) int {
				if broken.Load() && (bytes.HasPrefix(a, []byte("bad")) || bytes.HasPrefix(b, []byte("bad"))) {
					panic("compare")
				}
				return cmp(a, b)
			}
		},
		"Separator": func(c *sstable.Comparer) {
			sep := c.Separator
			c.Separator = func(dst, a, b []byte) []byte {
				if bytes.HasPrefix(b, []byte("bad")) {
					panic("separator")
				}
				return sep(dst, a, b)
			}
		},
	}
	ran := 0
	for name, spoil := range cases {
		c := itertest.SlashComparer()
		spoil(c)
		broken.Store(false)
		db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem(), Comparer: c, MemTableSize: 64 << 10, BlockSize: 64})
		if err != nil {
			t.Fatalf("%s: Open: %v", name, err)
		}
		for _, k := range []string{"a/1", "a/2", "a/3", "bad/1"} {
			if err := db.Set([]byte(k), make([]byte, 100), kv.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		broken.Store(true)
		if err := db.Flush(); !errors.Is(err, compaction.ErrCallbackPanic) {
			t.Errorf("%s: Flush: %v, want ErrCallbackPanic", name, err)
		}
		checkWritesStop(t, db, compaction.ErrCallbackPanic)
		ran++
	}
	if ran != len(cases) {
		t.Fatalf("%d of %d cases ran", ran, len(cases))
	}
}

// TestSplit_OutOfRange_Compaction checks that a compaction meeting a key
// the Split cuts outside fails with ErrInvalidSplit and stops writes.
func TestSplit_OutOfRange_Compaction(t *testing.T) {
	fs := vfs.NewMem()
	writeFlushed(t, fs, "a/1", "bad/2", "c/1")
	writeFlushed(t, fs, "a/2", "c/2")
	db, err := kv.Open("db", &kv.Options{FS: fs, Comparer: comparerWithSplit(badOn(func(k []byte) int { return -1 })), MemTableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); !errors.Is(err, kv.ErrInvalidSplit) {
		t.Fatalf("Compact: %v, want ErrInvalidSplit", err)
	}
	checkWritesStop(t, db, kv.ErrInvalidSplit)
}

// TestIterator_PrefixNextSplitFailsCounted: a prefix-mode Next that reads
// a block, then meets a key its Split breaks on (ending prefix mode with
// ErrInvalidSplit), still counts that block read in the DB's lookup
// metrics, as every prefix-mode move does; it was left pending, and lost
// at Close.
func TestIterator_PrefixNextSplitFailsCounted(t *testing.T) {
	var broken atomic.Bool
	cmp := comparerWithSplit(func(k []byte) int {
		if broken.Load() && string(k) == "bad/2" {
			return len(k) + 5
		}
		return itertest.SlashSplit(k)
	})
	fs := vfs.NewMem()
	o := &kv.Options{FS: fs, Comparer: cmp, BlockSize: 1, DisableFilters: true} // a block a key
	db, err := kv.Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"bad/1", "bad/2", "bad/3"} {
		if err := db.Set([]byte(k), []byte("v"), kv.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	broken.Store(true)
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	before := db.Metrics().Lookups.BlockReads
	if !it.SeekPrefixGE([]byte("bad/1")) {
		t.Fatalf("SeekPrefixGE: %v", it.Error())
	}
	seekReads := db.Metrics().Lookups.BlockReads - before
	if it.Next() || !errors.Is(it.Error(), kv.ErrInvalidSplit) {
		t.Fatalf("Next onto bad/2: valid %v, error %v; want ErrInvalidSplit", it.Valid(), it.Error())
	}
	it.Close()
	if got := db.Metrics().Lookups.BlockReads - before; seekReads != 1 || got != 2 {
		t.Fatalf("block reads: %d for the seek, %d with the Next; want 1 and 2", seekReads, got)
	}
}
