package pebbleadapter

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

var seedFlag = flag.Uint64("seed", 1, "seed of the randomized Pebble tests")

// lsm describes the data of a Pebble test DB: tables L0 tables whose key
// ranges all overlap (key i goes to table i mod tables), and absent keys
// that fall inside those ranges.
type lsm struct {
	present [][]byte // in insertion order; present[i] is in table i%tables
	absent  [][]byte
	tables  int
}

// newLSM draws keysPerTable×tables present keys and absent absent keys,
// all distinct, from seed.
func newLSM(t testing.TB, seed uint64, tables, keysPerTable, absent int) *lsm {
	t.Logf("seed %d (rerun with -seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	seen := make(map[string]bool)
	draw := func(n int) [][]byte {
		keys := make([][]byte, 0, n)
		for len(keys) < n {
			k := fmt.Appendf(nil, "user%016x", rng.Uint64())
			if !seen[string(k)] {
				seen[string(k)] = true
				keys = append(keys, k)
			}
		}
		return keys
	}
	l := &lsm{present: draw(tables * keysPerTable), tables: tables}
	l.absent = draw(absent)
	return l
}

// pebbleOptions returns options for a DB on fs that writes tables with
// policy at every level and keeps every flushed table in L0 (no automatic
// compactions, no write stalls), so a Get consults the filter of each one.
func pebbleOptions(fs vfs.FS, policy pebble.FilterPolicy) *pebble.Options {
	opts := &pebble.Options{
		FS:                          fs,
		Logger:                      QuietLogger{},
		DisableAutomaticCompactions: true,
		L0CompactionThreshold:       1000,
		L0StopWritesThreshold:       1000,
		Levels:                      make([]pebble.LevelOptions, 7),
	}
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = policy
	}
	return opts
}

// wholeKeyPrefix returns Pebble's default comparer with a Split, which
// Iterator.SeekPrefixGE needs, that makes the whole key the prefix.
func wholeKeyPrefix() *pebble.Comparer {
	return splitComparer(func(a []byte) int { return len(a) })
}

// splitComparer returns Pebble's default comparer with split as its
// Split: Pebble's filters then hold split's prefixes.
func splitComparer(split pebble.Split) *pebble.Comparer {
	cmp := *pebble.DefaultComparer
	cmp.Split = split
	return &cmp
}

func openPebble(t testing.TB, opts *pebble.Options) *pebble.DB {
	t.Helper()
	db, err := pebble.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// load writes l's present keys as l.tables flushed L0 tables.
func (l *lsm) load(t testing.TB, db *pebble.DB) {
	t.Helper()
	for table := 0; table < l.tables; table++ {
		b := db.NewBatch()
		for i := table; i < len(l.present); i += l.tables {
			if err := b.Set(l.present[i], []byte("v"), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if got := db.Metrics().Levels[0].NumFiles; got != int64(l.tables) {
		t.Fatalf("L0 holds %d tables, want %d", got, l.tables)
	}
}

// filterCount is the change of DB.Metrics().Filter over some lookups.
type filterCount struct {
	hits, misses int64
}

func (c filterCount) queries() int64 { return c.hits + c.misses }

// fpr is the observed false-positive rate, assuming every lookup missed.
func (c filterCount) fpr() float64 { return float64(c.misses) / float64(c.queries()) }

// countFilter returns how Pebble's filter counters moved while lookups ran.
func countFilter(db *pebble.DB, lookups func()) filterCount {
	before := db.Metrics().Filter
	lookups()
	after := db.Metrics().Filter
	return filterCount{hits: after.Hits - before.Hits, misses: after.Misses - before.Misses}
}

// getAbsent looks up every absent key, failing if one is found.
func (l *lsm) getAbsent(t testing.TB, db *pebble.DB) filterCount {
	t.Helper()
	return countFilter(db, func() {
		for _, k := range l.absent {
			if _, closer, err := db.Get(k); !errors.Is(err, pebble.ErrNotFound) {
				if err == nil {
					closer.Close()
				}
				t.Fatalf("Get(%q) of an absent key: err = %v", k, err)
			}
		}
	})
}

// getPresent looks up every present key, failing if one is missing.
func (l *lsm) getPresent(t testing.TB, db *pebble.DB) {
	t.Helper()
	for _, k := range l.present {
		v, closer, err := db.Get(k)
		if err != nil {
			t.Fatalf("Get(%q): %v", k, err)
		}
		if string(v) != "v" {
			t.Fatalf("Get(%q) = %q, want v", k, v)
		}
		closer.Close()
	}
}

// checkTableFilters fails unless every table of db records policyName, and
// returns the filter bits per key over all tables.
func checkTableFilters(t testing.TB, db *pebble.DB, policyName string) (bitsPerKey float64) {
	t.Helper()
	levels, err := db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var filterBytes, keys uint64
	for level, tables := range levels {
		for _, table := range tables {
			if got := table.Properties.FilterPolicyName; got != policyName {
				t.Errorf("L%d table %s: filter policy %q, want %q", level, table.FileNum, got, policyName)
			}
			filterBytes += table.Properties.FilterSize
			keys += table.Properties.NumEntries
		}
	}
	return 8 * float64(filterBytes) / float64(keys)
}

// measureInPebble builds l in a fresh in-memory DB whose tables carry
// policy's filters and returns the filter counts of l's absent lookups and
// the filters' bits per key.
func measureInPebble(t testing.TB, l *lsm, policy pebble.FilterPolicy) (filterCount, float64) {
	t.Helper()
	db := openPebble(t, pebbleOptions(vfs.NewMem(), policy))
	defer db.Close()
	l.load(t, db)
	bitsPerKey := checkTableFilters(t, db, policy.Name())
	c := l.getAbsent(t, db)
	if c.queries() < int64(len(l.absent)) {
		t.Fatalf("%d filter queries for %d absent Gets: filter not in use", c.queries(), len(l.absent))
	}
	return c, bitsPerKey
}
