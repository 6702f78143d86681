package kv

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/cockroachdb/pebble/vfs"
)

// BenchmarkGet_FilterCap compares Get under a cap on filter memory
// (FilterBudget{Bytes}) with Get under Monkey's budget at the same bits per
// key (FilterBudget{BitsPerKey: 10}), for present and absent keys, on
// settled in-memory stores of 200k keys. Run with -count N: each round
// measures the four cases one after the other, so rounds alternate the
// budgets.
func BenchmarkGet_FilterCap(b *testing.B) {
	const keys = 200_000
	budgets := []struct {
		name   string
		budget bloompolicy.Budget
	}{
		{"monkey", bloompolicy.Budget{BitsPerKey: 10}},
		{"cap", bloompolicy.Budget{Bytes: 10 * keys / 8}},
	}
	for _, bu := range budgets {
		d := filterCapBenchDB(b, bu.name, bu.budget, keys)
		for _, present := range []bool{true, false} {
			name := fmt.Sprintf("budget=%s/present=%v", bu.name, present)
			b.Run(name, func(b *testing.B) {
				odd := 1 // absent keys are odd
				if present {
					odd = 0
				}
				before := d.Metrics().Lookups.BlockReads
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					k := capKey(2*((i*7919)%keys) + odd)
					_, err := d.Get(k)
					if present != (err == nil) || (err != nil && !errors.Is(err, ErrNotFound)) {
						b.Fatalf("key %x: %v", k, err)
					}
				}
				b.ReportMetric(float64(d.Metrics().Lookups.BlockReads-before)/float64(b.N), "reads/op")
			})
		}
	}
}

var filterCapBenchDBs sync.Map // name → *DB, kept for the process

// filterCapBenchDB returns a settled store of keys keys under budget,
// built once per process.
func filterCapBenchDB(b *testing.B, name string, budget bloompolicy.Budget, keys int) *DB {
	if d, ok := filterCapBenchDBs.Load(name); ok {
		return d.(*DB)
	}
	d, err := Open("db", &Options{FS: vfs.NewMem(), FilterBudget: &budget, MemTableSize: 256 << 10,
		TargetFileSize: 256 << 10, LBaseMaxBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 32)
	for i := range keys {
		if err := d.Set(capKey(2*((i*7919)%keys)), val, NoSync); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		b.Fatal(err)
	}
	waitIdle(b, d) // compactions and the cap's filter passes
	filterCapBenchDBs.Store(name, d)
	return d
}
