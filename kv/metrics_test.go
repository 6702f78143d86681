package kv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/compaction"
	"github.com/cockroachdb/pebble/vfs"
)

// openMetricsStore opens a store of small memtables and tables on a
// memory filesystem and flushes 3000 keys, "key00000" to "key02999", into
// it in a scattered order, each with the value "value".
func openMetricsStore(t *testing.T) *DB {
	t.Helper()
	d, _ := openMem(t, &Options{MemTableSize: 8 << 10, L0CompactionThreshold: 2, TargetFileSize: 16 << 10})
	for i := range 3000 {
		if err := d.Set(fmt.Appendf(nil, "key%05d", (i*7919)%3000), []byte("value"), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestMetrics_String checks that the table String prints holds the
// counters of each level: a row of shape and lookups, and a row of
// compaction traffic with the level's write amplification.
func TestMetrics_String(t *testing.T) {
	d := openMetricsStore(t)
	defer mustClose(t, d)
	waitIdle(t, d)
	mustGet(t, d, "key00042", "value")
	m := d.Metrics()
	s := m.String()
	for i, l := range m.Levels {
		shape := fmt.Sprintf("L%d  %8d %10d %8d %9d %11d ", i, l.NumFiles, l.Size, l.Keys, l.FilterBytes,
			l.Lookups.TablesConsidered)
		traffic := fmt.Sprintf("L%d  %14d %6d %10d %11d %14d %6.2f %10d %11d\n", i,
			l.Compactions, l.Moves, l.BytesIn, l.BytesRead, l.BytesWritten, l.WriteAmp(),
			l.BytesFlushed, l.BytesCompacted)
		if !strings.Contains(s, shape) || !strings.Contains(s, traffic) {
			t.Fatalf("L%d's rows missing:\n%q\n%q\nin\n%s", i, shape, traffic, s)
		}
	}
	if m.Levels[6].WriteAmp() == 0 { // the base level of a store this small
		t.Fatalf("no compaction into L6 to show:\n%s", s)
	}
	if want := fmt.Sprintf("compactions %d (%d multi-level; ", m.Compact.Count, m.Compact.MultiLevelCount); !strings.Contains(s, want) {
		t.Fatalf("compaction totals missing (%q) in\n%s", want, s)
	}
	want := fmt.Sprintf("write-amp %.2f\n", m.WriteAmp)
	if !strings.Contains(s, want) || !strings.Contains(s, fmt.Sprintf("total gets %d, prefix seeks %d:", m.Lookups.Gets, m.Lookups.PrefixSeeks)) {
		t.Fatalf("totals missing (%q) in\n%s", want, s)
	}
}

// TestMetrics_BytesFlushedCompacted checks that each level's BytesWritten
// splits into what flushes and compactions wrote there, that the splits
// sum to the totals of Flush and Compact, and that the totals add up to
// the store's write amplification, once flushes and compactions have run.
func TestMetrics_BytesFlushedCompacted(t *testing.T) {
	d := openMetricsStore(t)
	defer mustClose(t, d)
	waitIdle(t, d)
	m := d.Metrics()
	if m.Flush.Count == 0 || m.Compact.Count == 0 {
		t.Fatalf("%d flushes and %d compactions, want some of each:\n%s", m.Flush.Count, m.Compact.Count, m)
	}
	var flushed, compacted int64
	for i, l := range m.Levels {
		if l.BytesFlushed+l.BytesCompacted != l.BytesWritten {
			t.Errorf("L%d: flushed %d + compacted %d != written %d", i, l.BytesFlushed, l.BytesCompacted, l.BytesWritten)
		}
		if i > 0 && l.BytesFlushed != 0 {
			t.Errorf("L%d: flushed %d: flushes write L0 only", i, l.BytesFlushed)
		}
		flushed += l.BytesFlushed
		compacted += l.BytesCompacted
	}
	if flushed == 0 || flushed != m.Flush.BytesWritten || compacted == 0 || compacted != m.Compact.BytesWritten {
		t.Fatalf("levels: flushed %d, compacted %d; totals: flushed %d, compacted %d",
			flushed, compacted, m.Flush.BytesWritten, m.Compact.BytesWritten)
	}
	want := float64(m.WAL.BytesIn+flushed+compacted) / float64(m.WAL.BytesIn)
	if m.WriteAmp != want {
		t.Fatalf("write-amp %v, want %v from the levels' bytes", m.WriteAmp, want)
	}
}

// TestMetrics_BlockCache checks what the block cache holds: compactions
// read their inputs without caching blocks, and a Get caches its data
// block and reserves the index and filter blocks of the table it opens.
func TestMetrics_BlockCache(t *testing.T) {
	d := openMetricsStore(t)
	defer mustClose(t, d)
	if err := d.Compact([]byte("key"), []byte("kez")); err != nil {
		t.Fatal(err)
	}
	m := d.Metrics()
	if m.Compact.Count == 0 {
		t.Fatal("no compaction ran")
	}
	if m.BlockCache.Count != 0 || m.BlockCache.Misses == 0 {
		t.Fatalf("after compactions: block cache %+v, want lookups and no block", m.BlockCache)
	}
	mustGet(t, d, "key00042", "value")
	m = d.Metrics()
	if c := m.BlockCache; c.Count != 1 || c.Reserved == 0 || c.Size <= c.Reserved {
		t.Fatalf("after a Get: block cache %+v, want one block and a reservation", c)
	}
	if s := m.String(); !strings.Contains(s, fmt.Sprintf("%d B reserved by open tables", m.BlockCache.Reserved)) {
		t.Fatalf("reservation missing in\n%s", s)
	}
}

// TestMetrics_MultiLevelCount runs, one at a time, the compactions the
// picker chooses for a store whose L1 tables, once L0 is compacted into
// L1, lie over dense L2 tables and sparser L3 ones (as in kv_test's
// TestCrash_MultiLevelCompactions), so that some carry on into L3: each
// compaction but a move adds one to Compact.Count and to its output
// level's Compactions, and a multi-level one also to
// Compact.MultiLevelCount.
func TestMetrics_MultiLevelCount(t *testing.T) {
	d, _ := openMem(t, &Options{StaticLevels: true, LBaseMaxBytes: 4 << 10, TargetFileSize: 1 << 10,
		BlockSize: 256, L0CompactionThreshold: 2, DisableAutomaticCompactions: true})
	defer mustClose(t, d)
	rng := rand.New(rand.NewPCG(1, 2))
	flushRounds := func(n int) {
		for range 2 {
			for i := range n {
				k := fmt.Appendf(nil, "b%04d", rng.IntN(3000))
				if err := d.Set(k, overwriteValue(0, i, 20+rng.IntN(60)), NoSync); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// L1's target of 1 byte sends every table on down; L2's target decides
	// whether they stop there (100 KiB) or go on to L3 (300 B).
	for _, l2 := range []struct{ writes, bytes int }{{350, 300}, {170, 100 << 10}} {
		flushRounds(l2.writes)
		co := *d.compactOpts
		co.LBaseMaxBytes, co.LevelMultiplier = 1, l2.bytes
		runPicks(t, d, compaction.NewPicker(&co, d.cmp), func(*compaction.Compaction, Metrics, Metrics) {})
	}
	flushRounds(60)
	multi := 0
	runPicks(t, d, d.picker, func(c *compaction.Compaction, before, after Metrics) {
		count, multiLevel := int64(1), int64(0)
		if c.TrivialMove() {
			count = 0
		}
		if len(c.Middle) > 0 {
			multi++
			multiLevel = 1
		}
		out := c.OutputLevel
		if after.Compact.Count-before.Compact.Count != count ||
			after.Compact.MultiLevelCount-before.Compact.MultiLevelCount != multiLevel ||
			after.Levels[out].Compactions-before.Levels[out].Compactions != count {
			t.Fatalf("compaction %s: Count %d -> %d, MultiLevelCount %d -> %d, L%d compactions %d -> %d",
				c, before.Compact.Count, after.Compact.Count, before.Compact.MultiLevelCount,
				after.Compact.MultiLevelCount, out, before.Levels[out].Compactions, after.Levels[out].Compactions)
		}
	})
	m := d.Metrics()
	t.Logf("%d compactions, %d of them multi-level:\n%s", m.Compact.Count, m.Compact.MultiLevelCount, m)
	if multi == 0 || m.Compact.MultiLevelCount != int64(multi) {
		t.Fatalf("%d multi-level compactions ran, MultiLevelCount %d", multi, m.Compact.MultiLevelCount)
	}
}

// runPicks runs, one at a time, the compactions p picks on d's current
// version until it picks none, and calls check with the metrics before
// and after each. d's own compactions must be off.
func runPicks(t *testing.T, d *DB, p *compaction.Picker, check func(c *compaction.Compaction, before, after Metrics)) {
	t.Helper()
	for {
		d.mu.Lock()
		c := p.Pick(d.mu.versions.current, nil)
		d.mu.Unlock()
		if c == nil {
			return
		}
		before := d.Metrics()
		d.mu.Lock()
		err := d.runManualLocked(c)
		d.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		check(c, before, d.Metrics())
	}
}

// TestMetrics_WriteStallsCountsStalls holds a flush back while a writer
// fills more memtables than may wait for it, and wakes the stalled writer
// meanwhile (WaitIdle calls whose context ends, as any background step
// does): WriteStalls counts the stall once, as the listener hears of it
// once, however often the writer woke and waited on.
func TestMetrics_WriteStallsCountsStalls(t *testing.T) {
	gate := newGateFS(vfs.NewMem(), 0)
	var c eventCounts
	d, err := Open("db", &Options{FS: gate, MemTableSize: 16 << 10, EventListener: c.listener()})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, d)
	done := make(chan error, 1)
	go func() {
		for i := range 1000 {
			if err := d.Set(fmt.Appendf(nil, "k%04d", i), make([]byte, 100), NoSync); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	c.waitCount(t, "WriteStallBegin", 1)
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		if err := d.WaitIdle(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitIdle during the stall: %v", err)
		}
		cancel()
	}
	gate.open()
	if err := waitFor(t, done, 30*time.Second, "the stalled writer"); err != nil {
		t.Fatal(err)
	}
	d.waitEvents()
	if stalls, began := d.Metrics().WriteStalls, c.get("WriteStallBegin"); stalls != int64(began) {
		t.Fatalf("WriteStalls %d, the listener heard of %d stalls", stalls, began)
	}
}
