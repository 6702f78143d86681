package kv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// memLimit returns the size limit of d's mutable memtable.
func memLimit(d *DB) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.mem.limit
}

// fillMemTable writes 1 KiB values until d switches to a new memtable, and
// returns the limit of the one it filled.
func fillMemTable(t *testing.T, d *DB, next *int) int64 {
	t.Helper()
	d.mu.Lock()
	mem := d.mu.mem
	d.mu.Unlock()
	value := make([]byte, 1<<10)
	for {
		d.mu.Lock()
		switched := d.mu.mem != mem
		d.mu.Unlock()
		if switched {
			return mem.limit
		}
		// A write goes in while its batch fits below the limit; the
		// memtable's own overhead for the entry may take it a little past.
		if size := mem.Size(); size > mem.limit+2<<10 {
			t.Fatalf("memtable of %d bytes past its limit %d", size, mem.limit)
		}
		*next++
		if err := d.Set(evenKey(*next), value, NoSync); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMemTable_Growth checks Pebble's memtable sizes: from 256 KiB (or
// MemTableSize, if smaller) each memtable twice the last up to
// MemTableSize; a Flush of a memtable less than half full keeps the next
// one's size; reopening starts over, except for a memtable that holds
// replayed writes, which keeps MemTableSize.
func TestMemTable_Growth(t *testing.T) {
	d, fs := openMem(t, &Options{MemTableSize: 2 << 20, DisableAutomaticCompactions: true,
		MemTableStopWritesThreshold: 20})
	var n int
	var limits []int64
	for range 6 {
		limits = append(limits, fillMemTable(t, d, &n))
	}
	if want := []int64{256 << 10, 512 << 10, 1 << 20, 2 << 20, 2 << 20, 2 << 20}; !slices.Equal(limits, want) {
		t.Fatalf("memtable limits %v, want %v", limits, want)
	}

	// Little written, then a Flush: the next memtable is no larger.
	must(t, d.Flush()) // nothing to replay: the reopened store starts empty
	must(t, d.Close())
	d, err := Open("db", &Options{FS: fs, MemTableSize: 2 << 20, DisableAutomaticCompactions: true})
	must(t, err)
	if got := memLimit(d); got != 256<<10 {
		t.Errorf("after reopening an empty memtable: limit %d, want 256 KiB", got)
	}
	must(t, d.Set([]byte("a"), []byte("1"), NoSync))
	must(t, d.Flush())
	if got := memLimit(d); got != 512<<10 {
		t.Errorf("after a Flush of a nearly empty memtable: limit %d, want 512 KiB (the next size, not doubled)", got)
	}
	must(t, d.Flush())
	if got := memLimit(d); got != 512<<10 {
		t.Errorf("after a second such Flush: limit %d, want 512 KiB still", got)
	}
	// Writes left in the memtable are replayed at Open into a memtable
	// that keeps MemTableSize as its limit.
	must(t, d.Set([]byte("b"), []byte("2"), NoSync))
	must(t, d.Close())
	d, err = Open("db", &Options{FS: fs, MemTableSize: 2 << 20})
	must(t, err)
	if got := memLimit(d); got != 2<<20 {
		t.Errorf("a memtable of replayed writes: limit %d, want MemTableSize", got)
	}
	must(t, d.Close())

	// Smaller than 256 KiB: every memtable at MemTableSize.
	d, _ = openMem(t, &Options{MemTableSize: 64 << 10})
	limits = limits[:0]
	for range 3 {
		limits = append(limits, fillMemTable(t, d, &n))
	}
	if want := []int64{64 << 10, 64 << 10, 64 << 10}; !slices.Equal(limits, want) {
		t.Errorf("MemTableSize 64 KiB: limits %v, want %v", limits, want)
	}
	must(t, d.Close())
}

// TestFlush_RampMemTablesTogether checks that the small memtables a store
// starts with wait for each other and go out in one flush: with 4 MiB
// memtables, those of 256 KiB, 512 KiB and 1 MiB are not due (their
// limits add up to less than 2 MiB); the 2 MiB one makes them due, and
// all four fit in one memtable's worth. Meanwhile the store is idle
// (nothing due), and writers do not stall although more memtables wait
// than MemTableStopWritesThreshold counts: together they hold less than
// one memtable's worth. A range deletion in the second memtable covers
// keys of the first, flushed with it.
func TestFlush_RampMemTablesTogether(t *testing.T) {
	d, _ := openMem(t, &Options{MemTableSize: 4 << 20, DisableAutomaticCompactions: true,
		MemTableStopWritesThreshold: 1})
	defer func() { must(t, d.Close()) }()
	doomed := func(i int) []byte { return fmt.Appendf(nil, "doomed/%d", i) }
	for i := range 10 {
		must(t, d.Set(doomed(i), []byte("v"), NoSync))
	}
	var n int
	fillMemTable(t, d, &n)
	must(t, d.DeleteRange([]byte("doomed/"), []byte("doomed0"), NoSync))
	for range 2 {
		fillMemTable(t, d, &n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle with no flush due: %v", err)
	}
	d.mu.Lock()
	imm, due := len(d.mu.imm), d.flushDueLocked()
	d.mu.Unlock()
	if imm != 3 || due {
		t.Fatalf("after three ramp memtables: %d immutable, flush due %v; want 3, not due", imm, due)
	}
	if got := d.Metrics().Flush.Count; got != 0 {
		t.Fatalf("%d flushes before any memtable was due", got)
	}
	fillMemTable(t, d, &n)
	must(t, d.WaitIdle(context.Background()))
	d.mu.Lock()
	imm = len(d.mu.imm)
	d.mu.Unlock()
	if got := d.Metrics().Flush.Count; got != 1 || imm != 0 {
		t.Fatalf("after the fourth: %d flushes, %d immutable memtables left; want 1 flush of all four", got, imm)
	}
	// Every key written is there.
	for i := 1; i <= n; i++ {
		if _, err := d.Get(evenKey(i)); err != nil {
			t.Fatalf("key %d of %d: %v", i, n, err)
		}
	}
	for i := range 10 {
		if _, err := d.Get(doomed(i)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s, deleted by a range in the next memtable: %v, want ErrNotFound", doomed(i), err)
		}
	}
	if got := d.Metrics().WriteStalls; got != 0 {
		t.Fatalf("%d write stalls with less than one memtable's worth waiting", got)
	}
}
