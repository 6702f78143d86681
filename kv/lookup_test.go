package kv

import (
	"fmt"
	"testing"
)

// TestLookups_AbsentKeysSkipTables looks up absent keys over several
// overlapping L0 tables: every table is considered, and the filters answer
// nearly all of them without a block read.
func TestLookups_AbsentKeysSkipTables(t *testing.T) {
	d, _ := openMem(t, &Options{DisableAutomaticCompactions: true})
	defer mustClose(t, d)
	const tables, perTable = 4, 500
	for tb := 0; tb < tables; tb++ {
		for i := 0; i < perTable; i++ {
			must(t, d.Set(fmt.Appendf(nil, "key%06d", i*tables+tb), []byte("v"), NoSync))
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	const absent = 1000
	before := d.Metrics().Lookups
	for i := 0; i < absent; i++ {
		// Between present keys, inside every table's range
		// [key000003, key001996].
		mustNotFind(t, d, fmt.Sprintf("key%06d-x", i+4))
	}
	m := d.Metrics()
	got := m.Lookups
	got.Gets -= before.Gets
	if got.Gets != absent {
		t.Fatalf("Gets = %d, want %d", got.Gets, absent)
	}
	if got.TablesConsidered != tables*absent {
		t.Fatalf("TablesConsidered = %d, want %d", got.TablesConsidered, tables*absent)
	}
	if got.FilterTruePositives != 0 {
		t.Fatalf("FilterTruePositives = %d for absent keys", got.FilterTruePositives)
	}
	if got.FilterNegatives+got.FilterFalsePositives < got.TablesConsidered {
		t.Fatalf("filters consulted %d times for %d tables", got.FilterNegatives+got.FilterFalsePositives, got.TablesConsidered)
	}
	if got.BlockReads != got.FilterFalsePositives {
		t.Fatalf("BlockReads %d != FilterFalsePositives %d", got.BlockReads, got.FilterFalsePositives)
	}
	fpr := float64(got.FilterFalsePositives) / float64(got.FilterFalsePositives+got.FilterNegatives)
	t.Logf("observed FPR %.4f over %d filter probes", fpr, got.FilterFalsePositives+got.FilterNegatives)
	if fpr > 0.03 {
		t.Fatalf("observed FPR %.4f, target 0.01", fpr)
	}
	if l0 := m.Levels[0]; l0.Lookups.TablesConsidered != got.TablesConsidered || l0.Lookups.Gets != 0 {
		t.Fatalf("L0 share %+v differs from total %+v", l0.Lookups, got)
	}
	if l0 := m.Levels[0]; l0.FilterBytes == 0 || l0.Keys != tables*perTable || l0.NumFiles != tables {
		t.Fatalf("L0 shape: %+v", l0)
	}
}

// TestLookups_PresentKeyStops counts a hit in the newest table only, and a
// key in the memtable touches no table.
func TestLookups_PresentKeyStops(t *testing.T) {
	d, _ := openMem(t, &Options{DisableAutomaticCompactions: true})
	defer mustClose(t, d)
	must(t, d.Set([]byte("a"), []byte("old"), NoSync))
	must(t, d.Set([]byte("z"), []byte("old"), NoSync))
	must(t, d.Flush())
	must(t, d.Set([]byte("a"), []byte("new"), NoSync))
	must(t, d.Set([]byte("z"), []byte("new"), NoSync))
	must(t, d.Flush())
	must(t, d.Set([]byte("m"), []byte("mem"), NoSync))
	mustGet(t, d, "m", "mem")
	if got := d.Metrics().Lookups; got.TablesConsidered != 0 || got.Gets != 1 {
		t.Fatalf("memtable hit touched tables: %+v", got)
	}
	mustGet(t, d, "a", "new")
	got := d.Metrics().Lookups
	if got.TablesConsidered != 1 || got.FilterTruePositives != 1 || got.BlockReads != 1 {
		t.Fatalf("hit in the newest table: %+v", got)
	}
}

// TestLookups_DisableFilters reads a block for every table considered.
func TestLookups_DisableFilters(t *testing.T) {
	d, _ := openMem(t, &Options{DisableFilters: true, DisableAutomaticCompactions: true})
	defer mustClose(t, d)
	for tb := 0; tb < 3; tb++ {
		must(t, d.Set([]byte("a"), nil, NoSync))
		must(t, d.Set([]byte("c"), nil, NoSync))
		must(t, d.Flush())
	}
	mustNotFind(t, d, "b")
	m := d.Metrics()
	if got := m.Lookups; got.TablesConsidered != 3 || got.BlockReads != 3 || got.FilterNegatives != 0 {
		t.Fatalf("%+v", got)
	}
	if m.Levels[0].FilterBytes != 0 {
		t.Fatalf("FilterBytes %d without filters", m.Levels[0].FilterBytes)
	}
}
