package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/cockroachdb/pebble/vfs"
)

// bench --filter-memory runs the filter-memory study of internal/bench
// (bench.FilterMemStudy): wasted data-block reads per lookup against
// filter memory, for four ways of spending it and three lookup mixes.

// filterMemBits are the memories of the study, in bits per key.
var filterMemBits = []float64{2, 4, 5, 6, 8, 10, 12, 16}

// runFilterMemory runs the study and prints, per mix, a table of wasted
// reads per lookup by memory and strategy.
func (a *app) runFilterMemory(ctx context.Context, o benchOptions) error {
	c := bench.FilterMemConfig{Keys: o.keys, ValueSize: o.valueSize, Lookups: o.lookups, Bits: filterMemBits,
		Seed: o.seed, Pebble: true, ZipfRankings: o.zipfRankings}
	start := time.Now()
	res, err := bench.FilterMemStudy(ctx, c, func(r bench.FilterMemResult) {
		fmt.Fprintf(a.stderr, "%-9s %5s %4.0f bits/key: %.5f wasted reads per lookup, %.2f bits/key spent\n",
			r.Strategy, r.Mix, r.Bits, r.Wasted, r.Spent)
	})
	if err != nil {
		return err
	}
	if a.json {
		return writeJSON(a.stdout, res)
	}
	tables := filterMemTables(res)
	if err := writeFilterMemText(a.stdout, tables); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "(%d keys, %d lookups per mix and Zipf ranking, %d Zipf rankings; %s)\n", o.keys, o.lookups, o.zipfRankings,
		time.Since(start).Round(time.Second))
	if o.plot != "" {
		if err := writeFilterMemPlot(o.plot, res); err != nil {
			return err
		}
	}
	if o.markdown == "" {
		return nil
	}
	plot := ""
	if o.plot != "" {
		plot = plotLink(o.markdown, o.plot)
	}
	var b bytes.Buffer
	if err := writeFilterMemMarkdown(&b, o.command, tables, plot, o.zipfRankings, time.Now()); err != nil {
		return err
	}
	return writeFile(vfs.Default, o.markdown, &b)
}

// filterMemTable is the table of one mix.
type filterMemTable struct {
	mix bench.LookupMix
	t   *table
}

// filterMemTables arranges the results as one table per mix: a row per
// memory, the wasted reads per lookup of each strategy with the bits per
// key it spent, the traffic-aware strategy's over the best of the other
// three bloomkv ones, and inside Pebble, SetLevelFilters' over Pebble's
// own bloom filter at the same memory.
func filterMemTables(res []bench.FilterMemResult) []filterMemTable {
	type key struct {
		mix  bench.LookupMix
		bits float64
	}
	byKey := map[key]map[bench.FilterStrategy]bench.FilterMemResult{}
	for _, r := range res {
		k := key{r.Mix, r.Bits}
		if byKey[k] == nil {
			byKey[k] = map[bench.FilterStrategy]bench.FilterMemResult{}
		}
		byKey[k][r.Strategy] = r
	}
	var out []filterMemTable
	for _, m := range bench.LookupMixes {
		headers := []string{">bits/key"}
		for _, s := range bench.FilterStrategies {
			headers = append(headers, ">"+string(s))
		}
		headers = append(headers, ">traffic/best")
		for _, s := range bench.PebbleStrategies {
			headers = append(headers, ">"+string(s))
		}
		t := newTable(append(headers, ">levels/bloom")...)
		for _, bits := range filterMemBits {
			row, ok := byKey[key{m, bits}]
			if !ok {
				continue
			}
			cells := []string{fmt.Sprint(bits)}
			best := math.Inf(1)
			for _, s := range bench.FilterStrategies {
				cells = append(cells, wastedCell(row, s))
				if r, ok := row[s]; ok && s != bench.StrategyTraffic {
					best = min(best, r.Wasted)
				}
			}
			cells = append(cells, wastedRatio(row[bench.StrategyTraffic].Wasted, best))
			for _, s := range bench.PebbleStrategies {
				cells = append(cells, wastedCell(row, s))
			}
			t.add(append(cells, wastedRatio(row[bench.StrategyPebbleLevels].Wasted, row[bench.StrategyPebbleBloom].Wasted))...)
		}
		out = append(out, filterMemTable{mix: m, t: t})
	}
	return out
}

// wastedCell formats strategy s's wasted reads per lookup (a mean over
// rankings with its standard error after "±") and the bits per key it
// spent; "-" where it did not run.
func wastedCell(row map[bench.FilterStrategy]bench.FilterMemResult, s bench.FilterStrategy) string {
	r, ok := row[s]
	switch {
	case !ok:
		return "-"
	case r.Rankings > 1:
		return fmt.Sprintf("%.4f±%.4f (%.1f)", r.Wasted, r.WastedSE, r.Spent)
	}
	return fmt.Sprintf("%.4f (%.1f)", r.Wasted, r.Spent)
}

// wastedRatio formats a over b; "-" when b is not positive.
func wastedRatio(a, b float64) string {
	if b > 0 && !math.IsInf(b, 0) {
		return fmt.Sprintf("%.2f", a/b)
	}
	return "-"
}

// filterMemTitle describes the cells of a mix's table.
func filterMemTitle(m bench.LookupMix) string {
	return fmt.Sprintf("lookups %s: wasted data-block reads per lookup (bits/key spent)", m)
}

func writeFilterMemText(w io.Writer, tables []filterMemTable) error {
	for _, ft := range tables {
		fmt.Fprintln(w, filterMemTitle(ft.mix))
		if err := ft.t.write(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return nil
}

// writeFilterMemMarkdown writes the study's page, whose Zipf figures are
// means over rankings rankings.
func writeFilterMemMarkdown(w io.Writer, command string, tables []filterMemTable, plot string, rankings int, now time.Time) error {
	fmt.Fprintf(w, "# Filter memory: wasted reads per lookup\n\n"+
		"Generated by `%s` on %s (%s). Do not edit: rerun the command.\n\n"+
		"Each store is loaded with every key twice, settled and measured (`internal/bench.FilterMemStudy`). "+
		"A wasted read is a data block read that does not hold the key looked up. Strategies: `uniform` "+
		"(the same bits per key everywhere), `no-bottom` (no bottom-level filters, their bits spread over "+
		"the levels above), `monkey` (`FilterBudget{BitsPerKey}`), `traffic` (`FilterBudget{Bytes}`: a cap "+
		"of the filter bytes Monkey's store spent, spent by the lookups served). The traffic-aware store is "+
		"a copy of Monkey's (`DB.Checkpoint`) opened under the cap and warmed up with twice the lookups "+
		"measured, of the mix measured, so that the two differ in the allocation only: two stores loaded "+
		"alike settle at shapes that differ with their background work's timing, and their wasted reads "+
		"by up to a tenth. In brackets, the filter bits per entry the store spent (held, under a cap). "+
		"`traffic/best`: the traffic-aware strategy's wasted reads over the best of the other three.\n\n"+
		"Under a Zipf law which keys are hot decides much of one store's figure: whether the hottest absent keys "+
		"are false positives of some filter is fixed once the filter is built. So the Zipf mix is measured on %d "+
		"independent rankings of the keys (`--zipf-rankings`), every strategy on the same ones, the traffic-aware "+
		"store opened and warmed up anew on each, and its cells give the mean, ± its standard error.\n\n"+
		"Pebble v1.1.5 runs on the same keys and sizes, loaded once and settled (`pebbleadapter.WaitIdle`): "+
		"`pebble-bloom` is its own `bloom.FilterPolicy(bits)` on every level, `pebble+SetLevelFilters` "+
		"`pebbleadapter.SetLevelFilters` with `Budget{BitsPerKey: bits}` (Monkey's rule for the levels' "+
		"target sizes). Pebble looks keys up with `SeekPrefixGE` and `UseL6Filters`, so every table's filter "+
		"is checked; a wasted read is a filter's \"maybe\" that did not find the key (Pebble does not count "+
		"data-block reads apart), and its iterator seeks every level, so a present key's lookup also checks "+
		"the levels below the one that holds it. `levels/bloom`: SetLevelFilters' wasted reads over "+
		"`pebble-bloom`'s.\n\n",
		command, now.UTC().Format("2006-01-02"), markdownMachine(), rankings)
	if plot != "" {
		fmt.Fprintf(w, "![wasted reads per lookup against filter memory, a panel per mix](%s)\n\n", plot)
	}
	for _, ft := range tables {
		fmt.Fprintf(w, "## %s\n\n", strings.ToUpper(filterMemTitle(ft.mix)[:1])+filterMemTitle(ft.mix)[1:])
		if err := ft.t.markdown(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return nil
}
