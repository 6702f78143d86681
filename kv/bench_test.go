package kv_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

// Benchmarks of bloomkv side by side with Pebble v1.1.5, on disk
// (vfs.Default in b.TempDir()), each engine a sub-benchmark
// (engine=bloomkv, engine=pebble), so benchstat can set them side by side
// (-col /engine). The engines, keys, values, loads and the idle rule are
// internal/bench's, the harness cmd/bloomkv bench uses too.
//
// Both engines get the same memtable size, block size, table size, level
// sizes, L0 compaction trigger, L0 write stall (and no slowdown before it:
// Pebble v1.1.5 has none), block cache capacity, Snappy compression
// (bench.Sizes), and a Bloom filter of 10 bits per key on every level:
// bloomkv's own (bloompolicy.NewBitsPerKey(10), one filter per data
// block), Pebble's (bloom.FilterPolicy(10), one filter per table, the only
// kind Pebble v1 has).
//
// Filters at L6: Pebble v1.1.5 writes them, but DB.Get never reads them
// (only iterators opened with IterOptions.UseL6Filters do), and these
// benchmarks call Get (bench.PebbleGet). Pebble sizes its levels from the
// bottom up, so a fully compacted store sits in L6, where every Pebble Get
// reads a data block, present key or not; bloomkv's filters work at every
// level. Gets are therefore measured on two shapes: shape=l0, where both
// engines hold the data in L0 tables (automatic compactions off while
// loading) and both use their filters, the like-for-like comparison; and
// shape=compacted, each engine's settled shape after a full compaction,
// which shows what the L6 rule costs Pebble's absent lookups.

const (
	benchValueSize  = 100
	benchPrefill    = 200_000
	benchCacheSize  = 32 << 20
	benchMemTable   = 4 << 20
	benchBitsPerKey = 10
)

// benchSizes are the sizes of the benchmarks' stores.
var benchSizes = bench.Sizes{MemTable: benchMemTable, Table: kv.DefaultTargetFileSize,
	LBase: kv.DefaultLBaseMaxBytes, Cache: benchCacheSize}

// benchEntryBytes is the size of one key and its value.
const benchEntryBytes = bench.KeySize + benchValueSize

var benchEngines = []struct {
	name string
	open func(b *testing.B, dir string, autoCompact bool) bench.Engine
}{
	{bench.EngineKV, openBloomkv},
	{bench.EnginePebble, openPebble},
}

func openBloomkv(b *testing.B, dir string, autoCompact bool) bench.Engine {
	return openBloomkvWith(b, dir, bloomkvBenchOptions(b, autoCompact))
}

// openBloomkvWith opens a bloomkv store in dir with opts.
func openBloomkvWith(b *testing.B, dir string, opts *kv.Options) *bench.KV {
	e, err := bench.OpenKV(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// bloomkvBenchOptions returns the options of the benchmarks' bloomkv
// stores (see the top of this file).
func bloomkvBenchOptions(b *testing.B, autoCompact bool) *kv.Options {
	policy, err := bloompolicy.NewBitsPerKey(benchBitsPerKey)
	if err != nil {
		b.Fatal(err)
	}
	opts := benchSizes.KVOptions()
	opts.FilterPolicy = policy
	opts.DisableAutomaticCompactions = !autoCompact
	return opts
}

func openPebble(b *testing.B, dir string, autoCompact bool) bench.Engine {
	return openPebbleWith(b, dir, pebbleBenchOptions(autoCompact))
}

// openPebbleWith opens a Pebble store in dir with opts, whose Cache it
// takes over; lookups go through DB.Get.
func openPebbleWith(b *testing.B, dir string, opts *pebble.Options) *bench.Pebble {
	e, err := bench.OpenPebble(dir, opts, bench.PebbleGet)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// pebbleBenchOptions returns the options of the benchmarks' Pebble stores
// (see the top of this file), with a cache of their own.
func pebbleBenchOptions(autoCompact bool) *pebble.Options {
	opts := benchSizes.PebbleOptions()
	bench.WithPebbleFilter(opts, bloom.FilterPolicy(benchBitsPerKey))
	opts.DisableAutomaticCompactions = !autoCompact
	return opts
}

// counters returns the lookup counters the benchmarks report per
// operation, under the names where both engines mean the same: Pebble
// counts no tables considered and no data-block reads apart, and its block
// cache lookups include index and filter blocks, which bloomkv keeps out
// of its cache.
func counters(e bench.Engine) map[string]float64 {
	c := e.Counters()
	m := map[string]float64{
		"filter-neg/op": float64(c.Total.FilterNegatives),
		"cache-gets/op": float64(c.CacheGets),
		"cache-miss/op": float64(c.CacheMisses),
	}
	if e.Name() == bench.EngineKV {
		m["tables/op"] = float64(c.Total.TablesConsidered)
		m["reads/op"] = float64(c.Total.BlockReads)
		m["filter-fpos/op"] = float64(c.Total.FilterFalsePositives)
	}
	return m
}

// --- workloads ---

// settle waits until e's background work is done (bench's idle rule), for
// at most limit, and reports whether it is.
func settle(b *testing.B, e bench.Engine, limit time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	err := e.WaitIdle(ctx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		b.Fatal(err)
	}
	return err == nil
}

// benchKeys generates the benchmarks' keys and values.
var benchKeys = bench.NewKeyGen(0)

// benchKey writes key i of a store into buf. With random, even i are the
// loaded keys (bench.KeyGen's present key i/2) and odd ones absent keys,
// spread among them; without, key i in sequential order.
func benchKey(buf []byte, i uint64, random bool) []byte {
	switch {
	case !random:
		return benchKeys.Sequential(buf[:0], int(i))
	case i%2 == 0:
		return benchKeys.Present(buf[:0], int(i/2))
	}
	return benchKeys.Absent(buf[:0], int(i/2))
}

// mix64 is bench.Mix64, which orders the benchmarks' lookups (and the
// prefix tests' seeks).
func mix64(x uint64) uint64 { return bench.Mix64(x) }

// benchValue returns a fresh value of key i, for the tests that write one
// at a time; the benchmarks reuse a buffer (benchKeys.Value).
func benchValue(i uint64) []byte { return benchKeys.Value(nil, int(i), benchValueSize) }

// writeKeys writes keys lo..hi-1 of a store (benchKey(2*i), the value of
// key i) into e.
func writeKeys(b *testing.B, e bench.Engine, lo, hi int, random, sync bool) {
	var key, value []byte
	for i := lo; i < hi; i++ {
		key = benchKey(key, uint64(2*i), random)
		value = benchKeys.Value(value[:0], i, benchValueSize)
		if err := e.Set(key, value, sync); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCounters reports the change of each counter per operation.
func reportCounters(b *testing.B, before, after map[string]float64) {
	for name, v := range after {
		b.ReportMetric((v-before[name])/float64(b.N), name)
	}
}

// BenchmarkFill writes fresh stores, one key per operation, in random or
// sequential key order, with Sync or NoSync. Flushes and compactions run
// in the background as the store grows.
func BenchmarkFill(b *testing.B) {
	for _, order := range []string{"random", "sequential"} {
		for _, sync := range []bool{false, true} {
			for _, eng := range benchEngines {
				name := fmt.Sprintf("order=%s/sync=%v/engine=%s", order, sync, eng.name)
				b.Run(name, func(b *testing.B) {
					e := eng.open(b, b.TempDir(), true)
					b.SetBytes(benchEntryBytes)
					b.ResetTimer()
					writeKeys(b, e, 0, b.N, order == "random", sync)
					b.StopTimer()
					if err := e.Close(); err != nil {
						b.Fatal(err)
					}
				})
			}
		}
	}
}

// loadStore opens a store in dir and loads benchPrefill keys (the even
// ones) in random order, then settles it into shape: "l0" flushes with
// compactions off; "compacted" compacts everything and waits for
// background work to end.
func loadStore(b *testing.B, open func(*testing.B, string, bool) bench.Engine, dir, shape string) bench.Engine {
	e := open(b, dir, shape == "compacted")
	writeKeys(b, e, 0, benchPrefill, true, false)
	if err := e.Flush(); err != nil {
		b.Fatal(err)
	}
	if shape == "compacted" {
		if err := e.Compact(); err != nil {
			b.Fatal(err)
		}
		if !settle(b, e, time.Minute) {
			b.Logf("engine still busy a minute after a full compaction: tables per level %s", bench.FormatShape(e.Shape()))
		}
	}
	return e
}

// BenchmarkGet looks up present and absent keys, in random order, in a
// store of benchPrefill keys, in each shape (see the top of this file).
// Besides time it reports, per lookup, the counters each engine keeps:
// tables considered, data blocks read, filter negatives, block cache
// lookups and misses.
func BenchmarkGet(b *testing.B) {
	for _, shape := range []string{"l0", "compacted"} {
		for _, eng := range benchEngines {
			e := loadStore(b, eng.open, b.TempDir(), shape)
			b.Logf("shape=%s engine=%s: tables per level %s", shape, eng.name, bench.FormatShape(e.Shape()))
			for _, present := range []bool{true, false} {
				name := fmt.Sprintf("shape=%s/present=%v/engine=%s", shape, present, eng.name)
				b.Run(name, func(b *testing.B) { benchGets(b, e, present) })
			}
			if err := e.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchGets(b *testing.B, e bench.Engine, present bool) {
	var key []byte
	before := counters(e)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key = lookupKey(key, i, present)
		checkGet(b, e, key, present)
	}
	b.StopTimer()
	reportCounters(b, before, counters(e))
}

// lookupKey returns the key of lookup i, a present or an absent one of
// the benchPrefill loaded, in an order that mixes them.
func lookupKey(buf []byte, i int, present bool) []byte {
	j := mix64(uint64(i)) % benchPrefill
	return benchKey(buf, 2*j+boolToUint(!present), true)
}

// checkGet looks key up in e and fails b on an error or a wrong answer.
func checkGet(b *testing.B, e bench.Engine, key []byte, present bool) {
	if err := bench.CheckGet(e, key, present, benchValueSize); err != nil {
		b.Fatal(err)
	}
}

func boolToUint(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// BenchmarkSeekReaders reads present keys of a compacted store from 1,
// 2, 4, 8 or 16 goroutines at once, each doing its share of b.N reads:
// how reads scale with readers. A read is what YCSB's driver does for
// one: a new iterator, SeekGE to the key, and Close. Compare a row's
// ns/op (wall time over all the readers' reads) with the readers=1 row
// of its engine; only a machine with as many cores as readers shows
// what shared state costs them.
func BenchmarkSeekReaders(b *testing.B) {
	for _, eng := range benchEngines {
		e := loadStore(b, eng.open, b.TempDir(), "compacted")
		for _, readers := range []int{1, 2, 4, 8, 16} {
			b.Run(fmt.Sprintf("readers=%d/engine=%s", readers, eng.name), func(b *testing.B) {
				seekFromReaders(b, e, readers)
			})
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// seekFromReaders reads b.N present keys from readers goroutines, reader
// r taking the reads i ≡ r (mod readers), each through a new iterator
// (seekRead, one entry).
func seekFromReaders(b *testing.B, e bench.Engine, readers int) {
	var wg sync.WaitGroup
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf seekBuffers
			for i := r; i < b.N; i += readers {
				if err := seekRead(e, &buf, i, benchPrefill, 1); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkScan iterates over a whole compacted store of benchPrefill keys.
func BenchmarkScan(b *testing.B) {
	for _, eng := range benchEngines {
		e := loadStore(b, eng.open, b.TempDir(), "compacted")
		b.Run("engine="+eng.name, func(b *testing.B) {
			b.SetBytes(benchPrefill * benchEntryBytes)
			for i := 0; i < b.N; i++ {
				n, err := bench.Scan(e, true)
				if err != nil {
					b.Fatal(err)
				}
				if n != benchPrefill {
					b.Fatalf("scan saw %d keys, want %d", n, benchPrefill)
				}
			}
		})
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
