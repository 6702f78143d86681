package kv_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/cockroachdb/pebble"
)

// BenchmarkIter measures the iterator paths on a settled store of
// iterKeys keys, beside Pebble: the keys (the even ones of benchKey) are
// written in random order with NoSync writes while flushes and compactions
// run in the background; then Flush and a wait for background work to end,
// without a manual compaction, so the store keeps the shape writes leave
// (several levels, tables spread across them).
//
//   - op=seek-one: NewIter, SeekGE to a random present key, read its key
//     and value, Close; what a YCSB read through an iterator costs.
//   - op=range100: NewIter, SeekGE to a random present key, read 100 keys
//     with Next, Close.
//   - op=scan-forward, op=scan-reverse: the whole store, First..Next and
//     Last..Prev, one operation per pass (MB/s counts keys and values),
//     after an untimed pass.
//
// Each runs with two block cache sizes: cache=32MB, the benchmarks' usual
// (a quarter of the store: most seeks read a block from the file and
// decompress it), and cache=256MB, which holds the whole store once warm,
// so the figures are the iterators' own CPU cost.
//
// Both engines load their stores before the operations run, and each
// operation runs on one engine right after the other, so that the two
// figures of a pair meet the same load of a shared machine; compare runs
// with -count and benchstat -col /engine:
//
//	go test ./kv -run '^$' -bench 'Iter$' -count 3 -timeout 1h
func BenchmarkIter(b *testing.B) {
	for _, cache := range []int64{benchCacheSize, 256 << 20} {
		b.Run(fmt.Sprintf("cache=%dMB", cache>>20), func(b *testing.B) {
			engines := make([]bench.Engine, len(benchEngines))
			for k, eng := range benchEngines {
				engines[k] = loadSettled(b, openWithCache(b, eng.name, b.TempDir(), cache), iterKeys)
				b.Logf("engine=%s: tables per level %s", eng.name, bench.FormatShape(engines[k].Shape()))
			}
			for _, op := range iterOps {
				for k, eng := range benchEngines {
					e := engines[k]
					b.Run(fmt.Sprintf("op=%s/engine=%s", op.name, eng.name), func(b *testing.B) { op.run(b, e, iterKeys) })
				}
			}
			for _, e := range engines {
				if err := e.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

const iterKeys = 1_000_000

// openWithCache opens a store of the named engine in dir, on the options
// of bench_test.go but with a block cache of cache bytes, with automatic
// compactions.
func openWithCache(b *testing.B, engine, dir string, cache int64) bench.Engine {
	if engine == bench.EngineKV {
		opts := bloomkvBenchOptions(b, true)
		opts.BlockCacheSize = cache
		return openBloomkvWith(b, dir, opts)
	}
	opts := pebbleBenchOptions(true)
	opts.Cache.Unref()
	opts.Cache = pebble.NewCache(cache + 2*benchMemTable) // room for the memtables, as bench.Sizes gives
	return openPebbleWith(b, dir, opts)
}

// loadSettled loads n keys (the even ones) in random order into e, which
// runs automatic compactions, then flushes and waits for the background
// work to end.
func loadSettled(b *testing.B, e bench.Engine, n int) bench.Engine {
	writeKeys(b, e, 0, n, true, false)
	if err := e.Flush(); err != nil {
		b.Fatal(err)
	}
	if !settle(b, e, 5*time.Minute) {
		b.Logf("engine still busy five minutes after the load: tables per level %s", bench.FormatShape(e.Shape()))
	}
	return e
}

// iterOps are the operations of BenchmarkIter and BenchmarkIterCompacted
// on a store of keys keys (benchKey's even ones).
var iterOps = []struct {
	name string
	run  func(b *testing.B, e bench.Engine, keys int)
}{
	{"seek-one", func(b *testing.B, e bench.Engine, keys int) { benchSeeks(b, e, keys, 1) }},
	{"range50", func(b *testing.B, e bench.Engine, keys int) { benchSeeks(b, e, keys, 50) }},
	{"range100", func(b *testing.B, e bench.Engine, keys int) { benchSeeks(b, e, keys, 100) }},
	{"scan-forward", func(b *testing.B, e bench.Engine, keys int) { benchFullScans(b, e, keys, true) }},
	{"scan-reverse", func(b *testing.B, e bench.Engine, keys int) { benchFullScans(b, e, keys, false) }},
}

// BenchmarkIterCompacted runs the operations of BenchmarkIter on the
// compacted store of benchPrefill keys that BenchmarkGet and BenchmarkScan
// use, which the block cache holds whole once warm: the iterators' own CPU
// cost per entry and per seek, on a store that loads in seconds. range50
// is YCSB E's scan (a fresh iterator, SeekGE, about 50 entries). As
// BenchmarkIter, each operation runs on one engine right after the other:
//
//	go test ./kv -run '^$' -bench 'IterCompacted' -count 3
func BenchmarkIterCompacted(b *testing.B) {
	engines := make([]bench.Engine, len(benchEngines))
	for k, eng := range benchEngines {
		e := loadStore(b, eng.open, b.TempDir(), "compacted")
		defer func() {
			if err := e.Close(); err != nil {
				b.Error(err)
			}
		}()
		engines[k] = e
	}
	for _, op := range iterOps {
		for k, eng := range benchEngines {
			b.Run(fmt.Sprintf("op=%s/engine=%s", op.name, eng.name), func(b *testing.B) {
				op.run(b, engines[k], benchPrefill)
			})
		}
	}
}

// benchSeeks opens an iterator per operation, seeks it to a random present
// key of a store of keys keys, reads n keys from there (fewer at the end
// of the store) and closes it.
func benchSeeks(b *testing.B, e bench.Engine, keys, n int) {
	var buf seekBuffers
	cpu := startCPU()
	defer cpu.stop(b)
	for i := 0; i < b.N; i++ {
		seekOnce(b, e, &buf, i, keys, n)
	}
}

// seekBuffers are the buffers seekOnce reuses.
type seekBuffers struct{ key, sink []byte }

// seekOnce is benchSeeks' operation i.
func seekOnce(b *testing.B, e bench.Engine, buf *seekBuffers, i, keys, n int) {
	if err := seekRead(e, buf, i, keys, n); err != nil {
		b.Fatal(err)
	}
}

// seekRead opens an iterator on e, seeks to present key i of keys
// (mixed), which it must land on, reads n entries from there and closes
// the iterator.
func seekRead(e bench.Engine, buf *seekBuffers, i, keys, n int) error {
	j := mix64(uint64(i)) % uint64(keys)
	buf.key = benchKey(buf.key, 2*j, true)
	it, err := e.NewIter()
	if err != nil {
		return err
	}
	ok := it.SeekGE(buf.key)
	if !ok || string(it.Key()) != string(buf.key) {
		err = fmt.Errorf("SeekGE(%s) landed on %q (%v)", buf.key, it.Key(), it.Error())
	}
	for read := 0; err == nil && ok && read < n; read++ {
		buf.sink = append(append(buf.sink[:0], it.Key()...), it.Value()...)
		if read+1 < n {
			ok = it.Next()
		}
	}
	return errors.Join(err, it.Close())
}

// benchFullScans walks the whole store of keys keys once per operation,
// after one untimed pass that fills the block cache as far as it holds
// the store.
func benchFullScans(b *testing.B, e bench.Engine, keys int, forward bool) {
	b.SetBytes(int64(keys) * benchEntryBytes)
	fullScan(b, e, keys, forward)
	b.ResetTimer()
	cpu := startCPU()
	defer cpu.stop(b)
	for i := 0; i < b.N; i++ {
		fullScan(b, e, keys, forward)
	}
}

// cpuMeter measures the CPU time of the goroutine that runs a benchmark's
// loop, locked to its OS thread meanwhile (see threadCPU). On a shared
// machine the wall time per operation also counts the time other
// processes held the cores; cpu-ns/op does not, so it compares engines
// and builds more steadily. It leaves out background work (compactions,
// the GC's own workers), which a settled store barely has.
type cpuMeter struct {
	start int64
	ok    bool
}

// startCPU locks the goroutine to its thread and starts measuring.
func startCPU() cpuMeter {
	runtime.LockOSThread()
	ns, ok := threadCPU()
	return cpuMeter{ns, ok}
}

// stop reports cpu-ns/op and unlocks the goroutine from its thread.
func (m cpuMeter) stop(b *testing.B) {
	ns, ok := threadCPU()
	runtime.UnlockOSThread()
	if m.ok && ok {
		b.ReportMetric(float64(ns-m.start)/float64(b.N), "cpu-ns/op")
	}
}

// fullScan walks the whole store of keys keys once, forward or backward,
// and checks it saw every key.
func fullScan(b *testing.B, e bench.Engine, keys int, forward bool) {
	it, err := e.NewIter()
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	first, next := it.First, it.Next
	if !forward {
		first, next = it.Last, it.Prev
	}
	var sink []byte
	for ok := first(); ok; ok = next() {
		sink = append(append(sink[:0], it.Key()...), it.Value()...)
		n++
	}
	if err := it.Close(); err != nil {
		b.Fatal(err)
	}
	if n != keys {
		b.Fatalf("scan saw %d keys, want %d", n, keys)
	}
}

// BenchmarkPaired measures bloomkv against Pebble on a machine that other
// work shares: on the compacted store of benchPrefill keys (BenchmarkGet's
// and BenchmarkScan's), it runs each operation on the two engines in
// turn, pairSlice operations at a time, so that both meet the same load
// at every moment, and times each engine by the CPU its thread used
// (see cpuMeter). It reports bloomkv-cpu-ns/op, pebble-cpu-ns/op and
// their ratio, ratio-cpu; ns/op is the wall time of one operation on
// both engines together. The operations: Get of a present and of an
// absent key (get-present, get-absent), seek-one and range50 as
// BenchmarkIter runs them, and whole forward and reverse scans
// (scan-forward, scan-reverse; the engines alternate after each).
//
//	go test ./kv -run '^$' -bench 'Paired' -benchtime 200000x -count 3
func BenchmarkPaired(b *testing.B) {
	var engines [2]bench.Engine
	for k, eng := range benchEngines {
		engines[k] = loadStore(b, eng.open, b.TempDir(), "compacted")
		defer func() {
			if err := engines[k].Close(); err != nil {
				b.Error(err)
			}
		}()
	}
	for _, op := range pairedOps {
		b.Run("op="+op.name, func(b *testing.B) { runPaired(b, engines, op.slice, op.run) })
	}
}

// pairSlice is how many short operations BenchmarkPaired runs on one
// engine before it turns to the other: a few milliseconds' worth.
const pairSlice = 2000

// pairedOps are BenchmarkPaired's operations; run does operation i, and
// slice of them run on one engine before the other takes its turn.
var pairedOps = []struct {
	name  string
	slice int
	run   func(b *testing.B, e bench.Engine, buf *seekBuffers, i int)
}{
	{"get-present", pairSlice, func(b *testing.B, e bench.Engine, buf *seekBuffers, i int) {
		buf.key = lookupKey(buf.key, i, true)
		checkGet(b, e, buf.key, true)
	}},
	{"get-absent", pairSlice, func(b *testing.B, e bench.Engine, buf *seekBuffers, i int) {
		buf.key = lookupKey(buf.key, i, false)
		checkGet(b, e, buf.key, false)
	}},
	{"seek-one", pairSlice, func(b *testing.B, e bench.Engine, buf *seekBuffers, i int) {
		seekOnce(b, e, buf, i, benchPrefill, 1)
	}},
	{"range50", pairSlice, func(b *testing.B, e bench.Engine, buf *seekBuffers, i int) {
		seekOnce(b, e, buf, i, benchPrefill, 50)
	}},
	{"scan-forward", 1, func(b *testing.B, e bench.Engine, _ *seekBuffers, _ int) {
		fullScan(b, e, benchPrefill, true)
	}},
	{"scan-reverse", 1, func(b *testing.B, e bench.Engine, _ *seekBuffers, _ int) {
		fullScan(b, e, benchPrefill, false)
	}},
}

// runPaired runs b.N operations on each engine, alternating every slice,
// and reports each engine's CPU time per operation.
func runPaired(b *testing.B, engines [2]bench.Engine, slice int, run func(*testing.B, bench.Engine, *seekBuffers, int)) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu [2]int64
	var bufs [2]seekBuffers
	for done := 0; done < b.N; done += slice {
		n := min(slice, b.N-done)
		for k, e := range engines {
			start, ok := threadCPU()
			for i := done; i < done+n; i++ {
				run(b, e, &bufs[k], i)
			}
			end, ok2 := threadCPU()
			if !ok || !ok2 {
				b.Skip("no per-thread CPU time on this system")
			}
			cpu[k] += end - start
		}
	}
	b.ReportMetric(float64(cpu[0])/float64(b.N), "bloomkv-cpu-ns/op")
	b.ReportMetric(float64(cpu[1])/float64(b.N), "pebble-cpu-ns/op")
	b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "ratio-cpu")
}
