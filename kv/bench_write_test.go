package kv_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/bench"
)

// Benchmarks of the write path, bloomkv beside Pebble v1.1.5 on the
// engines and options of bench_test.go, plus a third engine,
// engine=bloomkv-bgwal: bloomkv with Options.BackgroundWALWrites, whose
// NoSync writes reach the OS from a background goroutine as Pebble's do
// (engine=bloomkv keeps the default promise: an acknowledged NoSync write
// is in the OS). Each fills a fresh store with b.N keys (benchKey(2i)
// and the value of key i), flushes and compactions running in the
// background; one operation is one key written.

// writeEngines are the engines the write benchmarks compare.
var writeEngines = append(benchEngines[:len(benchEngines):len(benchEngines)], struct {
	name string
	open func(b *testing.B, dir string, autoCompact bool) bench.Engine
}{"bloomkv-bgwal", openBloomkvBackgroundWAL})

// openBloomkvBackgroundWAL opens a bloomkv store with the benchmarks'
// options and BackgroundWALWrites.
func openBloomkvBackgroundWAL(b *testing.B, dir string, autoCompact bool) bench.Engine {
	opts := bloomkvBenchOptions(b, autoCompact)
	opts.BackgroundWALWrites = true
	return openBloomkvWith(b, dir, opts)
}

// applyBatch writes keys lo..hi-1 (as writeKeys does) into e in one
// batch.
func applyBatch(e bench.Engine, lo, hi int, random, sync bool) error {
	var key, value []byte
	return e.Apply(func(set func(key, value []byte) error) error {
		for i := lo; i < hi; i++ {
			key = benchKey(key, uint64(2*i), random)
			value = benchKeys.Value(value[:0], i, benchValueSize)
			if err := set(key, value); err != nil {
				return err
			}
		}
		return nil
	}, sync)
}

// runFill runs fill on a fresh store of each write engine, timing the
// writes only.
func runFill(b *testing.B, name string, engines []string, fill func(b *testing.B, e bench.Engine)) {
	for _, eng := range writeEngines {
		if !slices.Contains(engines, eng.name) {
			continue
		}
		b.Run(fmt.Sprintf("%s/engine=%s", name, eng.name), func(b *testing.B) {
			e := eng.open(b, b.TempDir(), true)
			b.SetBytes(benchEntryBytes)
			b.ResetTimer()
			fill(b, e)
			b.StopTimer()
			if be, ok := e.(*bench.KV); ok {
				m := be.DB.Metrics()
				b.ReportMetric(float64(m.WAL.Syncs)/float64(b.N), "syncs/op")
				b.ReportMetric(float64(m.WAL.Writes)/float64(b.N), "groups/op")
				b.ReportMetric(float64(m.WriteStalls), "stalls")
			}
			if err := e.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

var allWriteEngines = []string{"bloomkv", "bloomkv-bgwal", "pebble"}

// BenchmarkWriteFill writes one key per Set, NoSync, in random or
// sequential order.
func BenchmarkWriteFill(b *testing.B) {
	for _, order := range []string{"random", "sequential"} {
		runFill(b, "order="+order, allWriteEngines, func(b *testing.B, e bench.Engine) {
			writeKeys(b, e, 0, b.N, order == "random", false)
		})
	}
}

// BenchmarkWriteFillBatch writes batches of 1000 keys, NoSync, in random
// order (the last batch may be shorter).
func BenchmarkWriteFillBatch(b *testing.B) {
	const batchKeys = 1000
	runFill(b, "order=random/batch=1000", allWriteEngines, func(b *testing.B, e bench.Engine) {
		for lo := 0; lo < b.N; lo += batchKeys {
			if err := applyBatch(e, lo, min(lo+batchKeys, b.N), true, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWriteFillSync writes one key per Set, Sync, in random order,
// from 1, 8 or 16 goroutines at once, each writing its share of the keys.
// syncs/op shows how many writers share an fsync (bloomkv only). At 16
// writers it is YCSB F's shape at 16 threads, which the fsync cycle
// bounds, not the cores.
func BenchmarkWriteFillSync(b *testing.B) {
	for _, writers := range []int{1, 8, 16} {
		runFill(b, fmt.Sprintf("writers=%d", writers), []string{"bloomkv", "pebble"}, func(b *testing.B, e bench.Engine) {
			setFromWriters(b, e, writers, 1)
		})
	}
}

// BenchmarkWriteFillSyncShare writes as BenchmarkWriteFillSync does, from
// 8 goroutines, one write in 2, 10 or 50 of each Sync and the others
// NoSync: a NoSync write then waits for the Sync writes before it to be
// synced, since it is published after them.
func BenchmarkWriteFillSyncShare(b *testing.B) {
	for _, every := range []int{2, 10, 50} {
		runFill(b, fmt.Sprintf("writers=8/sync=1in%d", every), []string{"bloomkv", "pebble"}, func(b *testing.B, e bench.Engine) {
			setFromWriters(b, e, 8, every)
		})
	}
}
