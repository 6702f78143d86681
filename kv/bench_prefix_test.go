package kv_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/cockroachdb/pebble/bloom"
)

// The prefix-scan workload of internal/bench: users, each with the keys
// "user/<id>/<field>" of bench.UserFields, loaded in scattered order and
// fully compacted; then SeekPrefixGE("user/<id>/") for absent users (odd
// ids) or present ones (even ids, followed by Next through the user's
// fields). Both engines split keys with splits.User, so their
// filters hold the users' prefixes: bloomkv one filter per data block from
// bloompolicy.New(0.01), Pebble one per table from bloom.FilterPolicy(10)
// (the nearest whole number of bits), and Pebble's prefix seeks go through
// an iterator with UseL6Filters, since a full compaction puts its data in
// L6.
const (
	prefixUsers     = 100_000
	prefixTargetFPR = 0.01
)

// openPrefixStore opens a store of the prefix workload in dir, with or
// without filters, and loads and compacts it.
func openPrefixStore(b *testing.B, engine, dir string, filters bool) bench.Engine {
	var e bench.Engine
	switch engine {
	case bench.EngineKV:
		opts := bloomkvBenchOptions(b, true)
		opts.Comparer = bench.KVUserComparer
		policy, err := bloompolicy.New(prefixTargetFPR)
		if err != nil {
			b.Fatal(err)
		}
		opts.FilterPolicy, opts.DisableFilters = policy, !filters
		e = openBloomkvWith(b, dir, opts)
	case bench.EnginePebble:
		opts := pebbleBenchOptions(true)
		opts.Comparer = bench.PebbleUserComparer
		bench.WithPebbleFilter(opts, nil)
		if filters {
			bench.WithPebbleFilter(opts, bloom.FilterPolicy(benchBitsPerKey))
		}
		e = openPebbleWith(b, dir, opts)
	}
	err := bench.LoadUsers(context.Background(), e, prefixUsers, benchValueSize, benchKeys, nil)
	if err == nil {
		err = e.Compact()
	}
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkPrefixSeek runs the prefix-scan workload on each engine, with
// and without filters, for absent and present users. Besides the time per
// seek it reports the engines' counters per seek (see reportCounters):
// for bloomkv tables considered, filter negatives and false positives and
// data blocks read; for Pebble filter negatives and block-cache lookups
// (index and filter blocks included). For bloomkv with filters on absent
// users it also reports reads/fpr·tables: data blocks read per
// false-positive rate times tables considered, at most about 1 when every
// read is a filter's false positive.
func BenchmarkPrefixSeek(b *testing.B) {
	for _, engine := range []string{bench.EngineKV, bench.EnginePebble} {
		for _, filters := range []bool{true, false} {
			e := openPrefixStore(b, engine, b.TempDir(), filters)
			b.Logf("engine=%s filters=%v: tables per level %s", engine, filters, bench.FormatShape(e.Shape()))
			for _, present := range []bool{false, true} {
				name := fmt.Sprintf("present=%v/filters=%v/engine=%s", present, filters, engine)
				b.Run(name, func(b *testing.B) { benchPrefixSeeks(b, e, present) })
			}
			if err := e.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchPrefixSeeks(b *testing.B, e bench.Engine, present bool) {
	var prefix []byte
	var err error
	before := counters(e)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if prefix, err = bench.UserSeek(e, prefix, prefixUsers, 0, i, present); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after := counters(e)
	reportCounters(b, before, after)
	verdicts := after["filter-neg/op"] + after["filter-fpos/op"] - before["filter-neg/op"] - before["filter-fpos/op"]
	if tables, ok := after["tables/op"]; ok && !present && verdicts > 0 {
		reads := after["reads/op"] - before["reads/op"]
		b.ReportMetric(reads/(prefixTargetFPR*(tables-before["tables/op"])), "reads/fpr·tables")
	}
}
