package kv_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// BenchmarkFilterBudget compares two ways of spending the same filter
// memory on the settled shape of a store of budgetKeys keys (written in
// random order in NoSync writes, with background flushes and compactions,
// no manual Compact; then Flush and a wait for background work to end):
//
//   - filter=uniform: bloompolicy.New(0.01) on every level;
//   - filter=budget: Options.FilterBudget with the bits per key that gives
//     the same total filter bytes (within 2%: one load at the uniform
//     store's bits per key, then one corrected by the difference of the
//     two stores' totals).
//
// Each is measured on two trees: tree=defaults (kv's defaults: 4 MiB
// memtable, 64 MiB L1, ratio 10) and tree=rocksdb-scaled (RocksDB's
// default shape scaled down 64 times: 1 MiB memtable and tables, 4 MiB
// L1). Per lookup it reports fp/lookup (filter false positives),
// tables/lookup and reads/lookup (data blocks), and for the store its
// filter-MB and bits/key (filter bytes, offsets and trailers included).
//
// filter=paired times both stores' Gets alternately in one loop, for a
// like-for-like time comparison on a shared machine.
//
//	go test ./kv -run '^$' -bench FilterBudget -benchtime 200000x -timeout 1h -v
func BenchmarkFilterBudget(b *testing.B) {
	for _, tree := range []struct {
		name string
		opts kv.Options
	}{
		{"defaults", kv.Options{}},
		{"rocksdb-scaled", kv.Options{MemTableSize: 1 << 20, LBaseMaxBytes: 4 << 20, TargetFileSize: 1 << 20}},
	} {
		b.Run("tree="+tree.name, func(b *testing.B) { benchFilterBudget(b, tree.opts) })
	}
}

// budgetKeys is the number of keys of BenchmarkFilterBudget's stores.
const budgetKeys = 2_000_000

func benchFilterBudget(b *testing.B, o kv.Options) {
	uniform := o
	policy, err := bloompolicy.New(kv.DefaultFilterFPR)
	if err != nil {
		b.Fatal(err)
	}
	uniform.FilterPolicy = policy
	stores := map[string]*kv.DB{"uniform": loadBudgetStore(b, uniform)}
	bits, _ := filterTotals(stores["uniform"])

	budgeted := o
	budgeted.FilterBudget = &bloompolicy.Budget{BitsPerKey: bits}
	first := loadBudgetStore(b, budgeted)
	firstBits, _ := filterTotals(first)
	if err := first.Close(); err != nil {
		b.Fatal(err)
	}
	budgeted.FilterBudget = &bloompolicy.Budget{BitsPerKey: bits + bits - firstBits}
	stores["budget"] = loadBudgetStore(b, budgeted)
	finalBits, _ := filterTotals(stores["budget"])
	b.Logf("uniform store %.3f bits/key; budget of %.3f bits/key gave %.3f, of %.3f gives %.3f",
		bits, bits, firstBits, budgeted.FilterBudget.BitsPerKey, finalBits)

	for _, name := range []string{"uniform", "budget"} {
		logShape(b, name, stores[name])
		for _, present := range []bool{false, true} {
			b.Run(fmt.Sprintf("filter=%s/present=%v", name, present), func(b *testing.B) {
				benchBudgetGets(b, stores[name], present)
			})
		}
	}
	for _, present := range []bool{false, true} {
		b.Run(fmt.Sprintf("filter=paired/present=%v", present), func(b *testing.B) {
			benchPairedGets(b, stores["uniform"], stores["budget"], present)
		})
	}
	for _, d := range stores {
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// loadBudgetStore opens a store under o in a fresh directory and writes
// budgetKeys keys in random order. It flushes after each three quarters of
// a memtable's worth of keys and waits for the background compactions
// that follow, so that the flushes and compactions happen at the same
// points of the load whatever the machine's speed, and stores of the same
// options settle in the same shape.
func loadBudgetStore(b *testing.B, o kv.Options) *kv.DB {
	o.FS = vfs.Default
	d, err := kv.Open(b.TempDir(), &o)
	if err != nil {
		b.Fatal(err)
	}
	e := &bench.KV{DB: d}
	memtable := o.MemTableSize
	if memtable == 0 {
		memtable = kv.DefaultMemTableSize
	}
	const entryBytes = benchEntryBytes + 24 // key, value, memtable overhead
	chunk := int(memtable * 3 / 4 / entryBytes)
	for lo := 0; lo < budgetKeys; lo += chunk {
		writeKeys(b, e, lo, min(lo+chunk, budgetKeys), true, false)
		if err := d.Flush(); err != nil {
			b.Fatal(err)
		}
		if !settle(b, e, 5*time.Minute) {
			b.Fatalf("store still compacting after five minutes: tables per level %s", bench.FormatShape(e.Shape()))
		}
	}
	return d
}

// filterTotals returns the store's filter bits per key and filter bytes.
func filterTotals(d *kv.DB) (bitsPerKey float64, bytes int64) {
	var keys int64
	for _, l := range d.Metrics().Levels {
		keys += l.Keys
		bytes += l.FilterBytes
	}
	return 8 * float64(bytes) / float64(keys), bytes
}

// logShape logs each level's tables, keys and filter bits per key.
func logShape(b *testing.B, name string, d *kv.DB) {
	s := ""
	for i, l := range d.Metrics().Levels {
		if l.NumFiles > 0 {
			s += fmt.Sprintf(" L%d: %d tables, %d keys, %.2f bits/key;", i, l.NumFiles, l.Keys, 8*float64(l.FilterBytes)/float64(l.Keys))
		}
	}
	b.Logf("%s:%s", name, s)
}

// benchBudgetGets looks up present or absent keys of a budget store in
// random order and reports the lookup counters per lookup and the store's
// filter memory.
func benchBudgetGets(b *testing.B, d *kv.DB, present bool) {
	e := &bench.KV{DB: d}
	var key []byte
	before := d.Metrics().Lookups
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := mix64(uint64(i)) % budgetKeys
		key = benchKey(key, 2*j+boolToUint(!present), true)
		checkGet(b, e, key, present)
	}
	b.StopTimer()
	after := d.Metrics().Lookups
	n := float64(b.N)
	b.ReportMetric(float64(after.FilterFalsePositives-before.FilterFalsePositives)/n, "fp/lookup")
	b.ReportMetric(float64(after.TablesConsidered-before.TablesConsidered)/n, "tables/lookup")
	b.ReportMetric(float64(after.BlockReads-before.BlockReads)/n, "reads/lookup")
	bits, bytes := filterTotals(d)
	b.ReportMetric(float64(bytes)/(1<<20), "filter-MB")
	b.ReportMetric(bits, "bits/key")
}

// benchPairedGets times the same lookups in the uniform and the budget
// store, alternating within each iteration so that load from other
// processes falls on both, and reports each store's time per Get and
// their ratio (budget ÷ uniform).
func benchPairedGets(b *testing.B, uniform, budget *kv.DB, present bool) {
	engines := [2]*bench.KV{{DB: uniform}, {DB: budget}}
	var spent [2]time.Duration
	var key []byte
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := mix64(uint64(i)) % budgetKeys
		key = benchKey(key, 2*j+boolToUint(!present), true)
		for k, e := range engines {
			start := time.Now()
			checkGet(b, e, key, present)
			spent[k] += time.Since(start)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "uniform-ns/get")
	b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "budget-ns/get")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "budget/uniform")
}
