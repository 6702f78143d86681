package kv_test

import (
	"flag"
	"fmt"
	"testing"
	"time"
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
func BenchmarkFillLarge(b *testing.B) {
	sizes := []int{1_000_000}
	if *fill10M {
		sizes = append(sizes, 10_000_000)
	}
	for _, n := range sizes {
		for _, eng := range benchEngines {
			b.Run(fmt.Sprintf("keys=%dM/engine=%s", n/1_000_000, eng.name), func(b *testing.B) {
				b.SetBytes(int64(n) * (17 + benchValueSize))
				for i := 0; i < b.N; i++ {
					fillLarge(b, eng.open(b, b.TempDir(), true), eng.name, n)
				}
			})
		}
	}
}

var fill10M = flag.Bool("fill10m", false, "BenchmarkFillLarge: also fill 10 million keys (minutes per engine)")

const (
	fillCheckpoints = 10
	fillProbes      = 5000
)

// fillLarge runs one fill of n keys into e, timed, then closes e.
func fillLarge(b *testing.B, e benchEngine, engine string, n int) {
	b.StopTimer()
	var probe fillProbe
	var elapsed time.Duration
	for c := 1; c <= fillCheckpoints; c++ {
		start := time.Now()
		b.StartTimer()
		writeKeys(b, e, (c-1)*n/fillCheckpoints, c*n/fillCheckpoints, true, false)
		b.StopTimer()
		elapsed += time.Since(start)
		probe = probeLookups(b, e, c*n/fillCheckpoints)
		b.Logf("%s %3d%%: %d keys in %v, tables per level %v, sorted runs %d, %s, write-amp %.2f",
			engine, 100*c/fillCheckpoints, c*n/fillCheckpoints, elapsed.Round(time.Millisecond),
			e.levels(), probe.sortedRuns, probe, e.fillStats().writeAmp)
	}
	if err := e.flush(); err != nil {
		b.Fatal(err)
	}
	settleStart := time.Now()
	if !waitIdle(e, 30*time.Minute) {
		b.Logf("%s: background work still running after 30 minutes", engine)
	}
	settled := time.Since(settleStart)
	st := e.fillStats()
	probe = probeLookups(b, e, n)
	b.Logf("%s settled %v after the fill: tables per level %v, sorted runs %d, %s, write-amp %.2f",
		engine, settled.Round(time.Millisecond), e.levels(), probe.sortedRuns, probe, st.writeAmp)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "keys/s")
	b.ReportMetric(st.writeAmp, "write-amp")
	b.ReportMetric(float64(probe.sortedRuns), "sorted-runs")
	name := map[bool]string{true: "tables", false: "filter-checks"}[probe.countsTables]
	b.ReportMetric(probe.present, name+"/get-present")
	b.ReportMetric(probe.absent, name+"/get-absent")
	if err := e.close(); err != nil {
		b.Fatal(err)
	}
}

// fillStats is what fillLarge reads from an engine.
type fillStats struct {
	// tablesChecked counts, over all lookups so far, the tables whose
	// filter a lookup checked (see BenchmarkFillLarge).
	tablesChecked float64
	// countsTables is true when tablesChecked counts every table a lookup
	// considered (bloomkv), false when it leaves out L6 (Pebble).
	countsTables bool
	sortedRuns   int
	writeAmp     float64
}

func (e *bloomkvEngine) fillStats() fillStats {
	m := e.db.Metrics()
	s := fillStats{tablesChecked: float64(m.Lookups.TablesConsidered), countsTables: true, writeAmp: m.WriteAmp}
	s.sortedRuns = m.Levels[0].NumFiles
	for _, l := range m.Levels[1:] {
		if l.NumFiles > 0 {
			s.sortedRuns++
		}
	}
	return s
}

func (e *pebbleEngine) fillStats() fillStats {
	m := e.db.Metrics()
	total := m.Total()
	return fillStats{
		tablesChecked: float64(m.Filter.Hits + m.Filter.Misses),
		sortedRuns:    m.ReadAmp(),
		writeAmp:      total.WriteAmp(),
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
func probeLookups(b *testing.B, e benchEngine, written int) fillProbe {
	before := e.fillStats()
	p := fillProbe{countsTables: before.countsTables, sortedRuns: before.sortedRuns}
	var key []byte
	for _, present := range []bool{true, false} {
		start := e.fillStats().tablesChecked
		for i := 0; i < fillProbes; i++ {
			j := mix64(uint64(written)*fillProbes+uint64(i)) % uint64(written)
			key = benchKey(key, 2*j+boolToUint(!present), true)
			checkGet(b, e, key, present)
		}
		perGet := (e.fillStats().tablesChecked - start) / fillProbes
		if present {
			p.present = perGet
		} else {
			p.absent = perGet
		}
	}
	return p
}
