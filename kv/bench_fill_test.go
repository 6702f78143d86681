package kv_test

import (
	"flag"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/bloomkv/bloomkv/kv"
)

// BenchmarkFillLarge fills a fresh store with a million keys (ten million
// with -fill10m) in random order, NoSync, with flushes and compactions
// running as it grows, on the engines and options of bench_test.go. One
// operation is one whole fill; run it with -benchtime=1x, and -v to see
// every line of the log (testing keeps only the first ten without it).
//
// Reported: keys/s and MB/s of the fill (the writes only), and, once
// background work has settled after the last write, write-amp and what a
// lookup consults. At every tenth of the fill, and once settled, the
// writes pause for fillProbes lookups of present keys and as many of
// absent ones, and a log line gives the series: sorted runs (L0 tables, or
// Pebble's L0 sublevels, plus non-empty levels below), tables per lookup,
// write-amp so far. Figures taken during the fill move with the
// compactions running at that moment; the settled ones are reported.
//
// Tables per lookup, by engine:
//   - bloomkv: Metrics().Lookups.TablesConsidered per Get, the tables
//     whose key range covered the key, each of which had its filter
//     checked (reported as tables/get-present, tables/get-absent).
//   - Pebble v1.1.5 counts no tables per lookup. Its FilterMetrics count
//     filter checks, Hits (said absent) + Misses (said maybe): one per table
//     a Get reaches on L0..L5. A Get that reaches L6 reads the table there
//     without its filter (Get never uses L6 filters), uncounted. So Pebble's
//     tables per lookup are its filter checks (reported as
//     filter-checks/get-present, filter-checks/get-absent) plus at most one
//     L6 table; sorted-runs bounds both engines from above.
//
// Write amplification, by engine: bloomkv's Metrics().WriteAmp, (WAL bytes
// + flushed + compacted bytes) / WAL bytes; Pebble's
// Metrics().Total().WriteAmp(), the same ratio over the bytes its WAL wrote.
//
// With -fillrate=R the writes are paced at R keys a second (each tenth of
// the fill on its own schedule, so the probes' pause is not made up in a
// burst): a leveled store's write amplification depends on how far its
// compactions lag behind the writes (levels over their targets take more
// data per rewrite), so engines whose writes run at different speeds are
// compared on their compaction policies at one rate they all reach.
//
// Peak heap (peak-heap-MB): the most live Go heap (as a garbage collection
// found it: /gc/heap/live:bytes) during the fill, sampled every
// heapSampleEvery, less what the engine kept on that heap for its block
// cache and memtables at the time (see startHeapSampler): what the store
// needs beyond the memory its options budget. Garbage not yet collected does not count: how much
// of it the runtime lets pile up depends on the live heap (GOGC), not on
// the engine. Pebble v1.1.5 allocates its cache and memtables outside the
// Go heap when built with cgo (pebbleManualOnHeap says which). With
// -fillheapprofile=F, F.<engine> is left holding the heap profile of the
// collection that found the peak, to see what the peak is made of.
func BenchmarkFillLarge(b *testing.B) {
	sizes := []int{1_000_000}
	if *fill10M {
		sizes = append(sizes, 10_000_000)
	}
	for _, n := range sizes {
		for _, eng := range writeEngines {
			b.Run(fmt.Sprintf("keys=%dM/engine=%s", n/1_000_000, eng.name), func(b *testing.B) {
				b.SetBytes(int64(n) * benchEntryBytes)
				for i := 0; i < b.N; i++ {
					fillLarge(b, eng.open(b, b.TempDir(), true), eng.name, n)
				}
			})
		}
	}
}

var (
	fill10M     = flag.Bool("fill10m", false, "BenchmarkFillLarge: also fill 10 million keys (minutes per engine)")
	fillMetrics = flag.Bool("fillmetrics", false, "BenchmarkFillLarge, BenchmarkOverwriteSpaceAmp: log each engine's per-level metrics once settled")
	fillRate    = flag.Int("fillrate", 0, "BenchmarkFillLarge: pace the writes at this many keys a second (0: as fast as they go)")
	fillHeap    = flag.String("fillheapprofile", "", "BenchmarkFillLarge: write a heap profile, as of the garbage collection that found each engine's peak heap, to this file name suffixed with the engine's name")
)

// engineMetrics formats e's metrics table: per level, the tables, bytes
// and compaction traffic (bloomkv's Metrics.String, Pebble's
// Metrics.String).
func engineMetrics(e bench.Engine) string {
	switch e := e.(type) {
	case *bench.KV:
		return e.DB.Metrics().String()
	case *bench.Pebble:
		return e.DB.Metrics().String()
	}
	return ""
}

const (
	fillCheckpoints = 10
	fillProbes      = 5000
)

// fillLarge runs one fill of n keys into e, timed, then closes e.
func fillLarge(b *testing.B, e bench.Engine, engine string, n int) {
	b.StopTimer()
	var probe fillProbe
	var elapsed time.Duration
	heap := startHeapSampler(e, engine)
	for c := 1; c <= fillCheckpoints; c++ {
		start := time.Now()
		b.StartTimer()
		writeKeysPaced(b, e, (c-1)*n/fillCheckpoints, c*n/fillCheckpoints, *fillRate)
		b.StopTimer()
		elapsed += time.Since(start)
		probe = probeLookups(b, e, c*n/fillCheckpoints)
		b.Logf("%s %3d%%: %d keys in %v, tables per level %s, sorted runs %d, %s, write-amp %.2f",
			engine, 100*c/fillCheckpoints, c*n/fillCheckpoints, elapsed.Round(time.Millisecond),
			bench.FormatShape(e.Shape()), probe.sortedRuns, probe, e.Stats().WriteAmp)
	}
	peakHeap := heap.stop()
	if err := e.Flush(); err != nil {
		b.Fatal(err)
	}
	settleStart := time.Now()
	if !settle(b, e, 30*time.Minute) {
		b.Logf("%s: background work still running after 30 minutes", engine)
	}
	settled := time.Since(settleStart)
	st := e.Stats()
	probe = probeLookups(b, e, n)
	b.Logf("%s settled %v after the fill: tables per level %s, sorted runs %d, %s, write-amp %.2f, peak heap beyond cache and memtables %.1f MB",
		engine, settled.Round(time.Millisecond), bench.FormatShape(e.Shape()), probe.sortedRuns, probe, st.WriteAmp, float64(peakHeap)/1e6)
	if *fillMetrics {
		b.Logf("%s settled metrics:\n%s", engine, engineMetrics(e))
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "keys/s")
	b.ReportMetric(st.WriteAmp, "write-amp")
	b.ReportMetric(float64(peakHeap)/1e6, "peak-heap-MB")
	b.ReportMetric(float64(probe.sortedRuns), "sorted-runs")
	name := map[bool]string{true: "tables", false: "filter-checks"}[probe.countsTables]
	b.ReportMetric(probe.present, name+"/get-present")
	b.ReportMetric(probe.absent, name+"/get-absent")
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
}

// writeKeysPaced writes keys lo..hi-1 as writeKeys does, random, NoSync,
// at most rate keys a second from its start (unpaced when rate is 0).
func writeKeysPaced(b *testing.B, e bench.Engine, lo, hi, rate int) {
	if rate <= 0 {
		writeKeys(b, e, lo, hi, true, false)
		return
	}
	const step = 1000
	start := time.Now()
	for i := lo; i < hi; i += step {
		due := start.Add(time.Duration(float64(i-lo) / float64(rate) * float64(time.Second)))
		time.Sleep(time.Until(due))
		writeKeys(b, e, i, min(i+step, hi), true, false)
	}
}

// fillProbe is what lookups consulted at one checkpoint.
type fillProbe struct {
	present, absent float64 // tables checked per lookup
	countsTables    bool
	sortedRuns      int
}

func (p fillProbe) String() string {
	name := map[bool]string{true: "tables", false: "filter checks"}[p.countsTables]
	return fmt.Sprintf("%s per lookup present %.2f absent %.2f", name, p.present, p.absent)
}

// probeLookups looks up fillProbes of the first written keys, then as many
// absent keys among them, and returns the tables checked per lookup.
func probeLookups(b *testing.B, e bench.Engine, written int) fillProbe {
	before := e.Stats()
	p := fillProbe{countsTables: before.AllTables, sortedRuns: before.SortedRuns}
	var key []byte
	for _, present := range []bool{true, false} {
		start := e.Stats().TablesChecked
		for i := 0; i < fillProbes; i++ {
			j := mix64(uint64(written)*fillProbes+uint64(i)) % uint64(written)
			key = benchKey(key, 2*j+boolToUint(!present), true)
			checkGet(b, e, key, present)
		}
		perGet := float64(e.Stats().TablesChecked-start) / fillProbes
		if present {
			p.present = perGet
		} else {
			p.absent = perGet
		}
	}
	return p
}

// heapSampleEvery is how often startHeapSampler samples.
const heapSampleEvery = 10 * time.Millisecond

// heapSampler tracks the peak of the live Go heap less the engine's
// on-heap cache and memtables (bench.Stats.OnHeap).
type heapSampler struct {
	done chan struct{}
	peak chan int64
}

// startHeapSampler samples until stop. The live heap is what the last
// garbage collection marked, so each collection's figure is set against
// the most the engine held for its cache and memtables between it and
// the collection before: blocks evicted since it marked them (the tables
// of a finished compaction) must not count as beyond the cache.
//
// With -fillheapprofile it writes a heap profile each time the peak
// grows, so the file left is the heap as the peak's collection found it.
func startHeapSampler(e bench.Engine, engine string) *heapSampler {
	h := &heapSampler{done: make(chan struct{}), peak: make(chan int64, 1)}
	go func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
		ticker := time.NewTicker(heapSampleEvery)
		defer ticker.Stop()
		var peak, held int64
		var cycles uint64
		for {
			held = max(held, e.Stats().OnHeap)
			metrics.Read(sample)
			if c := sample[1].Value.Uint64(); c != cycles {
				cycles = c
				if p := int64(sample[0].Value.Uint64()) - held; p > peak {
					peak = p
					writeHeapProfile(*fillHeap, engine)
				}
				held = e.Stats().OnHeap
			}
			select {
			case <-h.done:
				h.peak <- peak
				return
			case <-ticker.C:
			}
		}
	}()
	return h
}

// writeHeapProfile writes the heap profile of the last garbage collection
// to name + "." + engine, unless name is empty.
func writeHeapProfile(name, engine string) {
	if name == "" {
		return
	}
	f, err := os.Create(name + "." + engine)
	if err == nil {
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "heap profile: %v\n", err)
	}
}

// stop ends the sampling and returns the peak in bytes.
func (h *heapSampler) stop() int64 {
	close(h.done)
	return <-h.peak
}

// BenchmarkOverwriteSpaceAmp writes overwriteKeys keys in random order
// overwriteRounds times, each round with new values, NoSync, with flushes
// and compactions running, on the engines and options of bench_test.go;
// run it with -benchtime=1x. Once background work has settled, it reports
// space-amp: the bytes of the engine's tables over the bytes they take
// after a manual compaction of everything, one copy of the live data. Also
// reported: keys/s of the writes, write-amp, and for bloomkv the times a
// writer stalled (Metrics.WriteStalls).
//
// A million keys make over 100 MB of tables (the values are random
// bytes, which Snappy does not shorten). It runs under three base-level targets
// (LBaseMaxBytes, the same on both engines), since a dynamic leveled LSM's
// space amplification depends on where the store's size falls between two
// moves of its base level:
//
//   - lbase=64MB, the benchmarks' own (kv.DefaultLBaseMaxBytes): the live
//     data is about twice LBaseMaxBytes, so L5 is the base level, one
//     level above L6, with a target of half the live data. It may hold
//     that much in newer versions above L6's whole copy before it is due,
//     and L0 up to four memtables more: any leveled LSM with this target
//     swings between 1 and about 1.6 here, 1.5 on average;
//   - lbase=16MB: L5 is the base level at a seventh to a ninth of L6 (the
//     store's size moves in that range as versions pile up and are
//     dropped), near the LevelMultiplier of 10 of a store in its steady
//     shape; the levels above L6 then hold about an eighth of it, and L0
//     a few memtables;
//   - lbase=6MB: the base level has just moved up to L4, with L4, L5 and L6
//     about 4.3 times apart: the upper levels hold about a third of L6.
func BenchmarkOverwriteSpaceAmp(b *testing.B) {
	for _, lbase := range []int64{kv.DefaultLBaseMaxBytes, 16 << 20, 6 << 20} {
		for _, eng := range overwriteEngines {
			b.Run(fmt.Sprintf("lbase=%dMB/engine=%s", lbase>>20, eng.name), func(b *testing.B) {
				b.SetBytes(int64(overwriteKeys*overwriteRounds) * benchEntryBytes)
				for i := 0; i < b.N; i++ {
					overwriteSpaceAmp(b, eng.open(b, b.TempDir(), lbase), eng.name)
				}
			})
		}
	}
}

// overwriteEngines open the engines of BenchmarkOverwriteSpaceAmp with the
// options of bench_test.go but for LBaseMaxBytes.
var overwriteEngines = []struct {
	name string
	open func(b *testing.B, dir string, lbase int64) bench.Engine
}{
	{bench.EngineKV, func(b *testing.B, dir string, lbase int64) bench.Engine {
		opts := bloomkvBenchOptions(b, true)
		opts.LBaseMaxBytes = lbase
		return openBloomkvWith(b, dir, opts)
	}},
	{bench.EnginePebble, func(b *testing.B, dir string, lbase int64) bench.Engine {
		opts := pebbleBenchOptions(true)
		opts.LBaseMaxBytes = lbase
		return openPebbleWith(b, dir, opts)
	}},
}

const (
	overwriteKeys   = 1_000_000
	overwriteRounds = 3
)

// overwriteSpaceAmp runs one overwrite workload on e, then closes e.
func overwriteSpaceAmp(b *testing.B, e bench.Engine, engine string) {
	var key, value []byte
	start := time.Now()
	for r := 0; r < overwriteRounds; r++ {
		for i := 0; i < overwriteKeys; i++ {
			key = benchKey(key, uint64(2*i), true)
			value = benchKeys.Value(value[:0], i+r*104729, benchValueSize)
			if err := e.Set(key, value, false); err != nil {
				b.Fatal(err)
			}
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if err := e.Flush(); err != nil {
		b.Fatal(err)
	}
	if !settle(b, e, 30*time.Minute) {
		b.Logf("%s: background work still running after 30 minutes", engine)
	}
	settled := e.Stats()
	levels := bench.FormatShape(e.Shape())
	if *fillMetrics {
		b.Logf("%s settled metrics:\n%s", engine, engineMetrics(e))
	}
	if err := e.Compact(); err != nil {
		b.Fatal(err)
	}
	oneCopy := e.Stats().TableBytes
	b.Logf("%s: settled tables %.1f MB in levels %s, one copy %.1f MB: space-amp %.3f, write-amp %.2f",
		engine, float64(settled.TableBytes)/1e6, levels, float64(oneCopy)/1e6,
		float64(settled.TableBytes)/float64(oneCopy), settled.WriteAmp)
	b.ReportMetric(float64(overwriteKeys*overwriteRounds)/elapsed.Seconds(), "keys/s")
	b.ReportMetric(float64(settled.TableBytes)/float64(oneCopy), "space-amp")
	b.ReportMetric(settled.WriteAmp, "write-amp")
	if be, ok := e.(*bench.KV); ok {
		b.ReportMetric(float64(be.DB.Metrics().WriteStalls), "stalls")
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
}
