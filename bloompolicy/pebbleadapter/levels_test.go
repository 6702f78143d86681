package pebbleadapter

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// TestLevelRuns checks the planned shape: L0 runs of a memtable each,
// none unless L0Tables asks (a settled store holds none); Pebble's base
// level and targets (the base level's LBaseMaxBytes, growing to L6's 90%
// of the data by one smoothed multiplier); each level above L6 at its
// target less half a table, L6 with the rest; and a level whose tables
// are as large as its target planned with the level below.
func TestLevelRuns(t *testing.T) {
	small := pebble.Options{LBaseMaxBytes: 1 << 20, MemTableSize: 1 << 20, Levels: make([]pebble.LevelOptions, 7)}
	for i := range small.Levels {
		small.Levels[i].TargetFileSize = 128 << 10
	}
	for _, tc := range []struct {
		name string
		opts pebble.Options
		b    LevelBudget
		want string
	}{
		// Base L3 (64 MiB, 16 MiB tables), smoothed multiplier 5.12.
		{"defaults, 10 GB", pebble.Options{}, LevelBudget{Keys: 1e8, BytesPerKey: 100},
			"[{0 41943 0 0} {0 0 0 0} {0 0 0 0} {1 587202 0 0} {1 3267286 0 0} {1 17247266 0 0} {1 78898244 0 0}]"},
		{"small store, L0 full", pebble.Options{}, LevelBudget{Keys: 1e5, BytesPerKey: 100, L0Tables: 4},
			"[{4 41943 0 0} {0 0 0 0} {0 0 0 0} {0 0 0 0} {0 0 0 0} {0 0 0 0} {1 100000 0 0}]"},
		// Base L4 (1 MiB), L5 7.9 MiB; 128 KiB tables.
		{"small tables, 1.5M keys", small, LevelBudget{Keys: 1.5e6, BytesPerKey: 46},
			"[{0 22795 0 0} {0 0 0 0} {0 0 0 0} {0 0 0 0} {1 21370 0 0} {1 173998 0 0} {1 1304630 0 0}]"},
		// L4 and L5 are one table each (32 and 64 MiB tables): L6's keys,
		// or half their targets (1 and 9.5 MiB) without an L6 filter.
		{"default tables", pebble.Options{LBaseMaxBytes: 1 << 20, MemTableSize: 1 << 20},
			LevelBudget{Keys: 1e6, BytesPerKey: 100},
			"[{0 10485 0 0} {0 0 0 0} {0 0 0 0} {0 0 0 0} {0 1000000 0 0} {0 1000000 0 0} {1 1000000 0 0}]"},
		{"options, no L6 filter", pebble.Options{L0CompactionThreshold: 2, LBaseMaxBytes: 1 << 20, MemTableSize: 1 << 20},
			LevelBudget{Keys: 1e6, BytesPerKey: 100, NoL6Filter: true, L0Tables: 2},
			"[{2 10485 0 0} {0 0 0 0} {0 0 0 0} {0 0 0 0} {1 5242 0 0} {1 48572 0 0} {0 946184 0 0}]"},
	} {
		if got := fmt.Sprint(levelRuns(&tc.opts, tc.b)); got != tc.want {
			t.Errorf("%s: runs %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestSetLevelFilters_Errors(t *testing.T) {
	for _, tc := range []struct {
		b    LevelBudget
		want string
	}{
		{LevelBudget{Keys: 0, BytesPerKey: 100, Budget: bloompolicy.Budget{BitsPerKey: 10}}, "positive key count"},
		{LevelBudget{Keys: 10, BytesPerKey: -1, Budget: bloompolicy.Budget{BitsPerKey: 10}}, "bytes per key"},
		{LevelBudget{Keys: 10, BytesPerKey: 100}, "budget sets none"},
		{LevelBudget{Keys: 10, BytesPerKey: 100, Budget: bloompolicy.Budget{BitsPerKey: 10}, L0Tables: -1}, "L0Tables is negative"},
	} {
		err := SetLevelFilters(&pebble.Options{}, tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "pebbleadapter: ") {
			t.Errorf("%+v: %v, want an error containing %q", tc.b, err, tc.want)
		}
	}
}

// TestSetLevelFilters_PebbleDB grows a real Pebble DB with the derived
// per-level policies: the tables of each level carry the bits per key of
// its policy (more in the upper levels than in L6), Gets answer right and
// use the filters, and a reopen with another budget reads every table
// correctly. With NoL6Filter, L6 tables carry no filter.
func TestSetLevelFilters_PebbleDB(t *testing.T) {
	const keys = 60000
	fs := vfs.NewMem()
	open := func(b LevelBudget) *pebble.DB {
		// Tables well below the base level's target, so that the upper
		// levels get filters of their own (see SetLevelFilters).
		opts := &pebble.Options{FS: fs, Logger: QuietLogger{}, MemTableSize: 256 << 10, LBaseMaxBytes: 256 << 10,
			Levels: make([]pebble.LevelOptions, numLevels)}
		for i := range opts.Levels {
			opts.Levels[i].TargetFileSize = 32 << 10
		}
		if err := SetLevelFilters(opts, b); err != nil {
			t.Fatal(err)
		}
		return openPebble(t, opts)
	}
	budget := LevelBudget{Budget: bloompolicy.Budget{BitsPerKey: 10}, Keys: keys, BytesPerKey: 40}
	db := open(budget)
	setLevelKeys(t, db, keys)
	bits := levelBits(t, db)
	t.Logf("filter bits per key by level: %.2f", bits)
	if bits[6] <= 0 || bits[6] >= 10 {
		t.Errorf("L6 has %.2f bits per key, want under the budget's 10", bits[6])
	}
	for level := 0; level < 6; level++ {
		if bits[level] != 0 && bits[level] <= bits[6] {
			t.Errorf("L%d has %.2f bits per key, no more than L6's %.2f", level, bits[level], bits[6])
		}
	}
	checkLevelGets(t, db, keys)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	budget.NoL6Filter = true
	db = open(budget)
	defer db.Close()
	checkLevelGets(t, db, keys)
	// Pebble's Compact stops at L5→L6: it never rewrites an L6 table that
	// nothing above overlaps, and whether L0 still holds tables at this
	// point depends on when the first DB's compactions ran. Overwriting
	// every key makes each old L6 table an input of some compaction into
	// L6, so every L6 table after Compact was written with the new policy.
	setLevelKeys(t, db, keys)
	if err := db.Compact(levelKey(0), levelKey(2*keys), true); err != nil {
		t.Fatal(err)
	}
	if bits := levelBits(t, db); bits[6] != 0 {
		t.Errorf("L6 tables carry %.2f filter bits per key with NoL6Filter", bits[6])
	}
	checkLevelGets(t, db, keys)
}

func levelKey(i int) []byte { return fmt.Appendf(nil, "key%09d", i) }

// setLevelKeys sets the even keys below 2*keys, in a scattered order, to
// "v" and flushes.
func setLevelKeys(t *testing.T, db *pebble.DB, keys int) {
	t.Helper()
	for i := 0; i < keys; i++ {
		if err := db.Set(levelKey(2*(i*7919%keys)), []byte("v"), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
}

// levelBits returns the filter bits per key of each level's tables.
func levelBits(t *testing.T, db *pebble.DB) [numLevels]float64 {
	t.Helper()
	levels, err := db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var bits [numLevels]float64
	for level, tables := range levels {
		var filterBytes, entries uint64
		for _, table := range tables {
			filterBytes += table.Properties.FilterSize
			entries += table.Properties.NumEntries
		}
		if entries > 0 {
			bits[level] = 8 * float64(filterBytes) / float64(entries)
		}
	}
	return bits
}

// checkLevelGets gets every present key (even) and as many absent ones
// (odd), and checks that filters outside L6 answered some absent lookups
// whenever data sits outside L6.
func checkLevelGets(t *testing.T, db *pebble.DB, keys int) {
	t.Helper()
	c := countFilter(db, func() {
		for i := 0; i < keys; i++ {
			v, closer, err := db.Get(levelKey(2 * i))
			if err != nil || string(v) != "v" {
				t.Fatalf("Get(%s) = %q, %v", levelKey(2*i), v, err)
			}
			closer.Close()
			if _, _, err := db.Get(levelKey(2*i + 1)); !errors.Is(err, pebble.ErrNotFound) {
				t.Fatalf("Get(%s) of an absent key: %v", levelKey(2*i+1), err)
			}
		}
	})
	m := db.Metrics()
	upper := int64(0)
	for level := 0; level < numLevels-1; level++ {
		upper += m.Levels[level].NumFiles
	}
	if upper > 0 && c.hits == 0 {
		t.Errorf("%d tables above L6, and no filter said absent", upper)
	}
}
