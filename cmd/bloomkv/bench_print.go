package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/bloomkv/bloomkv/kv"
)

// pebbleNote says how Pebble's rows are counted.
const pebbleNote = "Pebble rows: lookups by SeekPrefixGE on an iterator opened with UseL6Filters " +
	"(Pebble's DB.Get skips L6 filters), reopened before each share of the write-heavy lookups; " +
	"SeekPrefixGE checks the filter of the table it lands on in every level, also below the one " +
	"holding a present key. Pebble counts per DB, not per level: tables = filter checks; negatives " +
	"= filter hits; false positives = filter misses less the keys found; block reads = all " +
	"block-cache accesses, index and filter blocks included. Its cache has room for two memtables " +
	"on top of --cache, since Pebble charges them to it."

func (a *app) writeBenchReport(rep *benchReport) error {
	if a.json {
		return writeJSON(a.stdout, rep)
	}
	w, p := a.stdout, rep.Params
	writeBenchHeader(w, p)
	fmt.Fprintf(w, "\nper-lookup columns: absent / present keys. reads saved = filter negatives. "+
		"FPR: absent keys, false positives / (false positives + negatives).\n")
	if err := writeTables(w, summaryTable(rep.Rows), filterTable(rep.Rows)); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nLSM the lookups met:\n")
	if err := writeTables(w, lsmTable(rep.Rows)); err != nil {
		return err
	}
	if err := writeLevelTables(w, rep.Rows); err != nil {
		return err
	}
	if err := writeGrowth(w, rep.Rows); err != nil {
		return err
	}
	if err := writeVsPebble(w, rep.VsPebble); err != nil {
		return err
	}
	if err := writeWriteModes(w, rep.WriteModes); err != nil {
		return err
	}
	if rep.Plot != "" {
		fmt.Fprintf(w, "\nplot: %s\n", rep.Plot)
	}
	if rep.Dir != "" {
		fmt.Fprintf(w, "stores kept in %s\n", rep.Dir)
	}
	_, err := fmt.Fprintf(w, "\ntotal %.1f s\n", float64(rep.Seconds))
	return err
}

// writeBenchHeader prints what the run did and where.
func writeBenchHeader(w io.Writer, p benchParams) {
	fmt.Fprintf(w, "bloomkv bench: %d keys of %d B with %d B values (%d more in the write-heavy shape); "+
		"%d absent and %d present lookups per shape; block cache %s; seed %d\n",
		p.Keys, p.KeySize, p.ValueSize, p.WriteHeavyKeys, p.Lookups, p.Lookups, fmtBytes(p.CacheBytes), p.Seed)
	fmt.Fprintf(w, "target FPR %s: bloompolicy.New builds %.2f bits/key; Pebble's bloom gets the nearest whole number, %d\n",
		fmtPercent(p.TargetFPR, 2), p.OursBitsPerKey, p.PebbleBitsPerKey)
	fmt.Fprintf(w, "stores: memtable %s, tables cut at %s, base level at most %s and 10x per level below, both engines sizing levels "+
		"from the bottom up, L0 compaction at %d tables over a key, %s blocks\n", fmtBytes(p.MemTableBytes), fmtBytes(p.TableBytes),
		fmtBytes(p.L1Bytes), kv.DefaultL0CompactionThreshold, fmtBytes(kv.DefaultBlockSize))
	fmt.Fprintf(w, "shapes, in this order on each store:\n")
	for _, s := range []string{shapeSettled, shapeWriteHeavy, shapeCompacted} {
		fmt.Fprintf(w, "  %-11s  %s\n", s, p.Shapes[s])
	}
	fmt.Fprintf(w, "machine: %s\n", p.Machine)
}

// summaryTable has a line per configuration and shape, totals over levels.
func summaryTable(rows []benchRow) *table {
	t := newTable("config", "shape", ">keys", ">ns/op", ">tables/lookup", ">block reads/lookup",
		">reads saved/lookup", ">FPR")
	for _, r := range rows {
		for i, s := range r.Shapes {
			name := r.Config
			if i > 0 {
				name = ""
			}
			t.add(name, s.Shape, fmt.Sprint(s.Keys), pair(s.Absent.NsPerOp, s.Present.NsPerOp, 0),
				pair(s.Absent.TablesPerLookup, s.Present.TablesPerLookup, 2),
				pair(s.Absent.BlockReadsPerLookup, s.Present.BlockReadsPerLookup, 2),
				pair(s.Absent.ReadsSavedPerLookup, s.Present.ReadsSavedPerLookup, 2),
				fmtPercent(float64(s.Absent.FPR), 3))
		}
	}
	return t
}

// filterTable has a line per configuration: what its filters cost once
// every shape has run (after the full compaction).
func filterTable(rows []benchRow) *table {
	t := newTable("config", ">target FPR", ">bits/key", ">filter bytes", ">keys in tables", ">load s")
	for _, r := range rows {
		t.add(r.Config, fmtPercent(float64(r.TargetFPR), 2), fmtFloat(float64(r.FilterBitsPerKey), 2),
			fmtBytes(r.FilterBytes), fmt.Sprint(r.Keys), fmtFloat(float64(r.LoadSeconds), 1))
	}
	return t
}

// lsmTable has a line per configuration and shape: the levels the lookups met.
func lsmTable(rows []benchRow) *table {
	t := newTable("config", "shape", "levels")
	t.indent = "  "
	for _, r := range rows {
		for i, s := range r.Shapes {
			name := r.Config
			if i > 0 {
				name = ""
			}
			t.add(name, s.Shape, fmtShapeResult(s))
		}
	}
	return t
}

// writeLevelTables prints, for each configuration whose engine counts
// lookups per level, each shape's lookups level by level.
func writeLevelTables(w io.Writer, rows []benchRow) error {
	for _, r := range rows {
		if !countsLevels(r) {
			continue
		}
		fmt.Fprintf(w, "\nper level, %s (per lookup, absent / present keys):\n", r.Config)
		if err := levelTable(r).write(w); err != nil {
			return err
		}
	}
	return nil
}

// countsLevels reports whether any of the row's phases is broken down by level.
func countsLevels(r benchRow) bool {
	return slices.ContainsFunc(r.Shapes, func(s shapeResult) bool {
		return len(s.Absent.Levels)+len(s.Present.Levels) > 0
	})
}

// levelTable has a line per shape and level the row's lookups reached, and
// a total line per shape.
func levelTable(r benchRow) *table {
	t := newTable("shape", "level", ">tables", ">tables/lookup", ">filter negatives", ">false positives",
		">block reads", ">FPR")
	t.indent = "  "
	for _, s := range r.Shapes {
		tables := map[int]int{}
		for _, l := range s.LSM {
			tables[l.Level] = l.Tables
		}
		name := s.Shape
		for _, level := range phaseLevels(s) {
			t.add(append([]string{name, fmt.Sprintf("L%d", level), fmt.Sprint(tables[level])},
				levelRateCells(levelOf(s.Absent, level), levelOf(s.Present, level))...)...)
			name = ""
		}
		t.add(append([]string{"", "total", ""}, levelRateCells(s.Absent.lookupRates, s.Present.lookupRates)...)...)
	}
	return t
}

// levelRateCells formats levelTable's per-lookup columns from the rates of
// the absent (a) and present (p) lookups.
func levelRateCells(a, p lookupRates) []string {
	return []string{pair(a.TablesPerLookup, p.TablesPerLookup, 3),
		pair(a.ReadsSavedPerLookup, p.ReadsSavedPerLookup, 3),
		pair(a.FalsePositivesPerLookup, p.FalsePositivesPerLookup, 4),
		pair(a.BlockReadsPerLookup, p.BlockReadsPerLookup, 3), fmtPercent(float64(a.FPR), 2)}
}

// phaseLevels returns the levels either phase of s reached, in order.
func phaseLevels(s shapeResult) []int {
	var levels []int
	for _, p := range []phase{s.Absent, s.Present} {
		for _, l := range p.Levels {
			if !slices.Contains(levels, l.Level) {
				levels = append(levels, l.Level)
			}
		}
	}
	slices.Sort(levels)
	return levels
}

// levelOf returns p's share at level, zero if its lookups did not reach it.
func levelOf(p phase, level int) lookupRates {
	for _, l := range p.Levels {
		if l.Level == level {
			return l.lookupRates
		}
	}
	return ratesOf(lookupCounts{}, p.Lookups.Gets)
}

// writeGrowth prints the settled shape after each load step.
func writeGrowth(w io.Writer, rows []benchRow) error {
	t := growthTable(rows)
	if len(t.rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\ngrowth: the settled shape after each load step (tables per level: L0 first):\n")
	return t.write(w)
}

// growthTable has a line per configuration and load step.
func growthTable(rows []benchRow) *table {
	t := newTable("config", ">keys", ">size", "levels", ">tables/lookup", ">block reads/lookup",
		">reads saved/lookup")
	for _, r := range rows {
		for i, g := range r.Growth {
			name := r.Config
			if i > 0 {
				name = ""
			}
			t.add(name, fmt.Sprint(g.Keys), fmtBytes(g.storeBytes()), fmtLevelTables(g.LSM),
				pair(g.Absent.TablesPerLookup, g.Present.TablesPerLookup, 2),
				pair(g.Absent.BlockReadsPerLookup, g.Present.BlockReadsPerLookup, 2),
				pair(g.Absent.ReadsSavedPerLookup, g.Present.ReadsSavedPerLookup, 2))
		}
	}
	return t
}

// fmtLevelTables formats the tables per level from L0 to the deepest
// non-empty one: "2 1 4 0 31".
func fmtLevelTables(shape []levelShape) string {
	if len(shape) == 0 {
		return "empty"
	}
	counts := make([]any, shape[len(shape)-1].Level+1)
	for i := range counts {
		counts[i] = 0
	}
	for _, l := range shape {
		counts[l.Level] = l.Tables
	}
	return fmt.Sprint(counts...)
}

// writeVsPebble prints how Pebble is counted and the time ratios.
func writeVsPebble(w io.Writer, vs []vsPebble) error {
	if len(vs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s\n\n", pebbleNote)
	return vsPebbleTable("bloomkv ÷ Pebble, ns/op", vs).write(w)
}

// vsPebbleTable is the table of the time ratios, whose first column is
// headed first, for the terminal and the Markdown page alike.
func vsPebbleTable(first string, vs []vsPebble) *table {
	t := newTable(first, "shape", ">absent", ">present")
	for _, v := range vs {
		t.add(v.Filter, v.Shape, fmtFloat(float64(v.Absent), 2)+"x", fmtFloat(float64(v.Present), 2)+"x")
	}
	return t
}
