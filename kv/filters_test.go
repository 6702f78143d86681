package kv

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/cockroachdb/pebble/vfs"
)

// twoLevelStore writes 2n keys key%08d (even numbers only, value "v"),
// every other one into L1 and the rest into L0 tables on top, under o, and
// closes the store. It returns the filesystem.
// setInOneBatch writes keys key(0..n-1), with value "v", in one batch:
// a batch goes into one memtable (a new one if it does not fit in the
// mutable one), whatever the memtables' size limits, so a flush makes one
// L0 table of it.
func setInOneBatch(t *testing.T, d *DB, n int, key func(i int) []byte) {
	t.Helper()
	b := d.NewBatch()
	for i := 0; i < n; i++ {
		if err := b.Set(key(i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Apply(b, NoSync); err != nil {
		t.Fatal(err)
	}
}

func twoLevelStore(t *testing.T, o *Options, n int) vfs.FS {
	t.Helper()
	o.DisableAutomaticCompactions = true
	o.StaticLevels = true // the compacted half in L1
	d, fs := openMem(t, o)
	for half := range 2 {
		setInOneBatch(t, d, n, func(i int) []byte { return evenKey(2*i + half) })
		if half == 0 {
			if err := d.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return fs
}

// evenKey is the ith key of twoLevelStore's: absent keys are the odd ones.
func evenKey(i int) []byte { return fmt.Appendf(nil, "key%08d", 2*i) }

// lookupAll gets every key of twoLevelStore's n and as many absent keys,
// checks the answers, and returns the metrics after, with the lookup
// counters of these lookups only.
func lookupAll(t *testing.T, d *DB, n int) Metrics {
	t.Helper()
	before := d.Metrics()
	for i := 0; i < 2*n; i++ {
		mustGet(t, d, string(evenKey(i)), "v")
		mustNotFind(t, d, fmt.Sprintf("key%08d", 2*i+1))
	}
	m := d.Metrics()
	m.Lookups = lookupDelta(m.Lookups, before.Lookups)
	for i := range m.Levels {
		m.Levels[i].Lookups = lookupDelta(m.Levels[i].Lookups, before.Levels[i].Lookups)
	}
	return m
}

// lookupDelta returns the counts of a that b does not include.
func lookupDelta(a, b LookupMetrics) LookupMetrics {
	return LookupMetrics{
		Gets:                 a.Gets - b.Gets,
		PrefixSeeks:          a.PrefixSeeks - b.PrefixSeeks,
		TablesConsidered:     a.TablesConsidered - b.TablesConsidered,
		FilterNegatives:      a.FilterNegatives - b.FilterNegatives,
		FilterTruePositives:  a.FilterTruePositives - b.FilterTruePositives,
		FilterFalsePositives: a.FilterFalsePositives - b.FilterFalsePositives,
		PrefixMatches:        a.PrefixMatches - b.PrefixMatches,
		FilterSkipped:        a.FilterSkipped - b.FilterSkipped,
		BlockReads:           a.BlockReads - b.BlockReads,
		BlockCacheMisses:     a.BlockCacheMisses - b.BlockCacheMisses,
		RangeDelChecks:       a.RangeDelChecks - b.RangeDelChecks,
	}
}

func reopen(t *testing.T, fs vfs.FS, o *Options) *DB {
	t.Helper()
	o.FS = fs
	o.DisableAutomaticCompactions = true
	d, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// bitsPerKey is a level's filter bits per key.
func bitsPerKey(l LevelMetrics) float64 { return 8 * float64(l.FilterBytes) / float64(l.Keys) }

// TestFilters_DisableFiltersOnRead reopens a store written with filters
// with DisableFilters: no lookup consults a filter, every table considered
// costs a block read, every answer stays right; reopened without it, the
// same files' filters work again.
func TestFilters_DisableFiltersOnRead(t *testing.T) {
	const n = 3000
	fs := twoLevelStore(t, &Options{}, n)
	for _, disable := range []bool{true, false} {
		d := reopen(t, fs, &Options{DisableFilters: disable})
		m := lookupAll(t, d, n)
		got := m.Lookups
		if m.Levels[0].FilterBytes == 0 || m.Levels[1].FilterBytes == 0 {
			t.Fatalf("disable=%v: the tables' filters are gone: %+v", disable, m.Levels[:2])
		}
		if disable {
			if got.FilterNegatives != 0 || got.FilterTruePositives != 0 || got.FilterFalsePositives != 0 {
				t.Errorf("filters consulted with DisableFilters: %+v", got)
			}
			if got.BlockReads != got.TablesConsidered {
				t.Errorf("DisableFilters: %d block reads for %d tables considered", got.BlockReads, got.TablesConsidered)
			}
		} else if got.FilterNegatives < n || got.BlockReads >= got.TablesConsidered {
			t.Errorf("filters unused after reopening without DisableFilters: %+v", got)
		}
		must(t, d.Close())
	}
}

// TestFilters_LevelPolicies writes L0 and L1 with their own budgets,
// checks each level's bits per key, then reopens with other budgets (and a
// policy the first run did not know): answers stay right, each table read
// with its own filter, rewritten levels take the new budgets, and a table
// whose policy the reader does not know is read without its filter.
func TestFilters_LevelPolicies(t *testing.T) {
	const n = 4000
	bloom := func(bits float64) bloompolicy.FilterPolicy {
		b, err := bloompolicy.NewBitsPerKey(bits)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fs := twoLevelStore(t, &Options{Levels: []LevelOptions{{FilterPolicy: bloom(20)}, {FilterPolicy: bloom(5)}}}, n)
	d := reopen(t, fs, &Options{})
	m := lookupAll(t, d, n)
	checkBits(t, m, map[int]float64{0: 20, 1: 5})
	must(t, d.Close())

	// Swap the budgets, and give L1 a policy of another name.
	o := &Options{Levels: []LevelOptions{{FilterPolicy: bloom(5)}, {FilterPolicy: &exactPolicy{}}}, StaticLevels: true}
	d = reopen(t, fs, o)
	m = lookupAll(t, d, n)
	for _, fp := range m.Levels[0:2] {
		if fp.Lookups.FilterNegatives == 0 {
			t.Fatalf("level's filters unused: %+v", fp.Lookups)
		}
	}
	if err := d.Compact(nil, nil); err != nil { // L0 into L1
		t.Fatal(err)
	}
	// A new L0 table over half the keys.
	setInOneBatch(t, d, n, func(i int) []byte { return evenKey(2 * i) })
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	m = lookupAll(t, d, n)
	if m.Levels[0].NumFiles != 1 || m.Levels[1].Keys != 2*n {
		t.Fatalf("after Compact: %+v", m.Levels[:2])
	}
	checkBits(t, m, map[int]float64{0: 5})
	if l1 := m.Levels[1].Lookups; l1.FilterFalsePositives != 0 || l1.FilterNegatives < 2*n-1 {
		t.Errorf("L1's exact filters: %+v", l1)
	}
	must(t, d.Close())

	// Without test.exact, L1's tables are read without their filter.
	d = reopen(t, fs, &Options{})
	m = lookupAll(t, d, n)
	if l1 := m.Levels[1].Lookups; l1.FilterNegatives+l1.FilterFalsePositives+l1.FilterTruePositives != 0 ||
		l1.BlockReads != l1.TablesConsidered || m.Levels[1].FilterBytes == 0 {
		t.Errorf("L1 of an unknown policy: %+v, filter bytes %d", l1, m.Levels[1].FilterBytes)
	}
	must(t, d.Close())
}

// checkBits checks each listed level's filter bits per key against the
// policy's nominal bits: no less, and at most one bit more (the filter
// block's lengths, trailers and rounding).
func checkBits(t *testing.T, m Metrics, want map[int]float64) {
	t.Helper()
	for level, bits := range want {
		if got := bitsPerKey(m.Levels[level]); got < bits || got > bits+1 {
			t.Errorf("L%d: %.2f filter bits per key, want %v", level, got, bits)
		}
	}
}

// TestFilters_Budget grows a store under a FilterBudget with background
// compactions: the small runs get more bits per key than the bottom level,
// the store as a whole spends about the budget, and every answer is right,
// also after reopening with no budget (the tables describe their filters).
func TestFilters_Budget(t *testing.T) {
	o := &Options{
		FilterBudget: &bloompolicy.Budget{BitsPerKey: 8},
		MemTableSize: 32 << 10, LBaseMaxBytes: 32 << 10, TargetFileSize: 16 << 10, LevelMultiplier: 4,
	}
	d, fs := openMem(t, o)
	const n = 40000
	for i := 0; i < n; i++ {
		if err := d.Set(evenKey(i*7919%n), []byte("v"), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	waitIdle(t, d)
	m := d.Metrics()
	var keys, filterBytes int64
	bottom := 0
	for l, lm := range m.Levels {
		keys += lm.Keys
		filterBytes += lm.FilterBytes
		if lm.Keys > 0 {
			bottom = l
			t.Logf("L%d: %d tables, %d keys, %.2f bits/key", l, lm.NumFiles, lm.Keys, bitsPerKey(lm))
		}
	}
	if bottom < 3 {
		t.Fatalf("the store reached only L%d", bottom)
	}
	if b, above := bitsPerKey(m.Levels[bottom]), bitsPerKey(m.Levels[bottom-1]); b >= above || b >= 8 {
		t.Errorf("bottom level L%d has %.2f bits per key, L%d %.2f", bottom, b, bottom-1, above)
	}
	if total := 8 * float64(filterBytes) / float64(keys); math.Abs(total-8) > 1 {
		t.Errorf("the store spends %.2f filter bits per key for a budget of 8", total)
	}
	must(t, d.Close())
	d = reopen(t, fs, &Options{})
	m = lookupAll(t, d, n/2)
	if m.Levels[bottom].Lookups.FilterNegatives == 0 {
		t.Errorf("bottom level's budgeted filters unused after reopening: %+v", m.Levels[bottom].Lookups)
	}
	must(t, d.Close())
}

// TestBudgetRuns checks the runs a budget sees for a flush and for a
// compaction, on a version of two L0 tables, a small L1 and a large L2.
func TestBudgetRuns(t *testing.T) {
	table := func(entries uint64) *manifest.FileMetadata {
		return &manifest.FileMetadata{NumEntries: entries, Size: entries * 100}
	}
	l0a, l0b := table(10), table(20)
	v := &manifest.Version{}
	v.Levels[0] = []*manifest.FileMetadata{l0a, l0b}
	v.Levels[1] = []*manifest.FileMetadata{table(30)}
	v.Levels[2] = []*manifest.FileMetadata{table(1000), table(1000)}
	// L1's target, 5000 bytes, is 50 entries at 100 bytes each.
	co := &compaction.Options{LBaseMaxBytes: 5000, LevelMultiplier: 10, StaticLevels: true}
	shape := compaction.NewPicker(co, nil).Shape(v, nil)
	cases := 0
	for _, tc := range []struct {
		name    string
		level   int
		moving  []*manifest.FileMetadata
		flushed int64
		want    []int64 // keys of each run
		target  int
	}{
		{"flush", 0, nil, 15, []int64{10, 20, 15, 50, 2000}, 2},
		{"L0 into L1", 1, []*manifest.FileMetadata{l0a, l0b}, 0, []int64{60, 2000}, 0},
		{"L1 into L2", 2, v.Levels[1], 0, []int64{10, 20, 50, 2030}, 3},
		{"L2 into L3", 3, v.Levels[2][:1], 0, []int64{10, 20, 50, 1000, 1000}, 4},
		// A merge within L0 writes one run of its inputs' entries (the
		// caller counts them as flushed), not an empty run that would get
		// the most bits there are.
		{"L0 into L0", 0, []*manifest.FileMetadata{l0a, l0b}, 30, []int64{30, 50, 2000}, 0},
	} {
		runs, target := budgetRuns(v, shape, tc.level, tc.moving, tc.flushed)
		var want []bloompolicy.Runs
		for _, n := range tc.want {
			want = append(want, bloompolicy.Runs{Count: 1, Keys: n})
		}
		if fmt.Sprint(runs) != fmt.Sprint(want) || target != tc.target {
			t.Errorf("%s: runs %v, target %d; want %v, %d", tc.name, runs, target, tc.want, tc.target)
		}
		lay := capRuns(v, nil, nil, 1<<20, 4096, filterBlockOverhead, &capWrite{tc.level, tc.moving, tc.flushed}, planLoad{})
		if lay.runs[lay.target].Keys == 0 {
			t.Errorf("%s: a cap sees the written run empty: runs %v, target %d", tc.name, lay.runs, lay.target)
		}
		cases++
	}
	if cases != 5 {
		t.Fatalf("%d cases ran", cases)
	}
}

// TestLookupDelta keeps lookupDelta in step with LookupMetrics: every
// counter is subtracted, so the lookups a test measures are its own.
func TestLookupDelta(t *testing.T) {
	var a LookupMetrics
	v := reflect.ValueOf(&a).Elem()
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(i + 1))
	}
	if d := lookupDelta(a, a); d != (LookupMetrics{}) {
		t.Fatalf("lookupDelta of equal metrics: %+v, want all zero", d)
	}
	if d := lookupDelta(a, LookupMetrics{}); d != a {
		t.Fatalf("lookupDelta from zero: %+v, want %+v", d, a)
	}
}
