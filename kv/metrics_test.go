package kv

import (
	"fmt"
	"strings"
	"testing"
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
	defer d.Close()
	d.waitCompactionsIdle()
	mustGet(t, d, "key00042", "value")
	m := d.Metrics()
	s := m.String()
	for i, l := range m.Levels {
		shape := fmt.Sprintf("L%d  %8d %10d %8d %9d %11d ", i, l.NumFiles, l.Size, l.Keys, l.FilterBytes,
			l.Lookups.TablesConsidered)
		traffic := fmt.Sprintf("L%d  %14d %6d %10d %11d %14d %6.2f\n", i,
			l.Compactions, l.Moves, l.BytesIn, l.BytesRead, l.BytesWritten, l.WriteAmp())
		if !strings.Contains(s, shape) || !strings.Contains(s, traffic) {
			t.Fatalf("L%d's rows missing:\n%q\n%q\nin\n%s", i, shape, traffic, s)
		}
	}
	if m.Levels[6].WriteAmp() == 0 { // the base level of a store this small
		t.Fatalf("no compaction into L6 to show:\n%s", s)
	}
	want := fmt.Sprintf("write-amp %.2f\n", m.WriteAmp)
	if !strings.Contains(s, want) || !strings.Contains(s, fmt.Sprintf("total gets %d, prefix seeks %d:", m.Lookups.Gets, m.Lookups.PrefixSeeks)) {
		t.Fatalf("totals missing (%q) in\n%s", want, s)
	}
}

// TestMetrics_BlockCache checks what the block cache holds: compactions
// read their inputs without caching blocks, and a Get caches its data
// block and reserves the index and filter blocks of the table it opens.
func TestMetrics_BlockCache(t *testing.T) {
	d := openMetricsStore(t)
	defer d.Close()
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
