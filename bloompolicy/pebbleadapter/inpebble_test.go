package pebbleadapter

import (
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

func TestToPebble_TransparentInPebble(t *testing.T) {
	// Pebble's Bloom through both adapters builds the very same filters as
	// Pebble's Bloom itself, so Pebble must count exactly the same.
	l := newLSM(t, *seedFlag, 4, 5000, 5000)
	direct, bits := measureInPebble(t, l, bloom.FilterPolicy(10))
	adapted, _ := measureInPebble(t, l, ToPebble(hidden{FromPebble(bloom.FilterPolicy(10))}))
	t.Logf("direct %+v (FPR %.3f%%, %.2f bits/key), through both adapters %+v",
		direct, 100*direct.fpr(), bits, adapted)
	if adapted != direct {
		t.Errorf("through both adapters %+v, direct %+v", adapted, direct)
	}
	// Each absent key falls inside nearly every table's range, so it is
	// checked against nearly every table's filter.
	if want := int64(len(l.absent) * l.tables * 99 / 100); direct.queries() < want {
		t.Errorf("%d filter queries, want at least %d", direct.queries(), want)
	}
}

func TestPebble_FiltersFoundByName(t *testing.T) {
	testFiltersFoundByName(t, func() pebble.FilterPolicy { return bloom.FilterPolicy(10) })
}

// testFiltersFoundByName writes tables with a policy, then reopens the DB
// with a new instance of the policy registered through Levels, through
// Options.Filters only, and not at all: the filter is used in the first two
// cases only, and every lookup answers correctly in all three.
func testFiltersFoundByName(t *testing.T, newPolicy func() pebble.FilterPolicy) {
	l := newLSM(t, *seedFlag, 3, 2000, 2000)
	fs := vfs.NewMem()
	policy := newPolicy()
	db := openPebble(t, pebbleOptions(fs, policy))
	l.load(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	policy = newPolicy()
	filtersOnly := pebbleOptions(fs, nil)
	filtersOnly.Filters = map[string]pebble.FilterPolicy{policy.Name(): policy}
	for _, tc := range []struct {
		name       string
		opts       *pebble.Options
		usesFilter bool
	}{
		{"Levels", pebbleOptions(fs, policy), true},
		{"Filters", filtersOnly, true},
		{"unregistered", pebbleOptions(fs, nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openPebble(t, tc.opts)
			defer db.Close()
			checkTableFilters(t, db, policy.Name())
			absent := l.getAbsent(t, db)
			present := countFilter(db, func() { l.getPresent(t, db) })
			t.Logf("absent Gets %+v, present Gets %+v", absent, present)
			if !tc.usesFilter {
				if absent.queries() != 0 || present.queries() != 0 {
					t.Errorf("unregistered filter was queried")
				}
				return
			}
			if absent.hits == 0 || absent.fpr() > 0.05 {
				t.Errorf("filter not in use after reopen: absent Gets %+v", absent)
			}
			if present.queries() < int64(len(l.present)) {
				t.Errorf("present Gets: %d filter queries for %d keys", present.queries(), len(l.present))
			}
		})
	}
}

func TestPebble_L6FiltersOnlyWithUseL6Filters(t *testing.T) {
	l := newLSM(t, *seedFlag, 2, 1000, 1000)
	opts := pebbleOptions(vfs.NewMem(), bloom.FilterPolicy(10))
	opts.Comparer = wholeKeyPrefix()
	db := openPebble(t, opts)
	defer db.Close()
	l.load(t, db)
	if err := db.Compact([]byte("user"), []byte("user\xff"), true); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.Levels[6].NumFiles == 0 || m.Levels[0].NumFiles != 0 {
		t.Fatalf("after Compact: L0 %d tables, L6 %d tables; want all in L6",
			m.Levels[0].NumFiles, m.Levels[6].NumFiles)
	}
	checkTableFilters(t, db, opts.Levels[6].FilterPolicy.Name())

	if c := l.getAbsent(t, db); c.queries() != 0 {
		t.Errorf("Get consulted L6 filters: %+v", c)
	}
	seekAbsent := func(iterOpts *pebble.IterOptions) filterCount {
		return countFilter(db, func() {
			it, err := db.NewIter(iterOpts)
			if err != nil {
				t.Fatal(err)
			}
			defer it.Close()
			for _, k := range l.absent {
				if it.SeekPrefixGE(k) {
					t.Fatalf("SeekPrefixGE(%q) found %q", k, it.Key())
				}
			}
		})
	}
	if c := seekAbsent(&pebble.IterOptions{}); c.queries() != 0 {
		t.Errorf("SeekPrefixGE without UseL6Filters consulted L6 filters: %+v", c)
	}
	c := seekAbsent(&pebble.IterOptions{UseL6Filters: true})
	t.Logf("SeekPrefixGE with UseL6Filters: %+v", c)
	if c.queries() < int64(len(l.absent)) || c.hits == 0 {
		t.Errorf("SeekPrefixGE with UseL6Filters: %+v, want a filter query per seek", c)
	}
}

func TestPebble_GetConsultsFilterBeforeTableStart(t *testing.T) {
	db := openPebble(t, pebbleOptions(vfs.NewMem(), bloom.FilterPolicy(10)))
	defer db.Close()
	l := &lsm{present: makeKeys("m", 100), tables: 1}
	l.load(t, db)
	for _, tc := range []struct {
		key     string
		queries int64
	}{
		{"a", 1}, // before the table's smallest key: the filter is still asked
		{"z", 0}, // after its largest key: the table is not reached
	} {
		l.absent = [][]byte{[]byte(tc.key)}
		if c := l.getAbsent(t, db); c.queries() != tc.queries {
			t.Errorf("Get(%q): %d filter queries, want %d", tc.key, c.queries(), tc.queries)
		}
	}
}
