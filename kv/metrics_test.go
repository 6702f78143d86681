package kv

import (
	"fmt"
	"strings"
	"testing"
)

// TestMetrics_String checks that the table String prints holds the
// counters of each level: a row of shape and lookups, and a row of
// compaction traffic with the level's write amplification.
func TestMetrics_String(t *testing.T) {
	d, _ := openMem(t, &Options{MemTableSize: 8 << 10, L0CompactionThreshold: 2, TargetFileSize: 16 << 10})
	defer d.Close()
	for i := range 3000 {
		if err := d.Set(fmt.Appendf(nil, "key%05d", (i*7919)%3000), []byte("value"), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
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
