package main

import (
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// TestBench_FilterMemory runs the filter-memory study on tiny stores: a
// table per mix with a row per memory, every strategy measured in every
// row (bloomkv's four and Pebble's two), the Zipf rows as means over the
// rankings asked for, with their standard errors, the same tables in the
// Markdown page, and a plot with a panel per mix and a line per strategy.
func TestBench_FilterMemory(t *testing.T) {
	dir := t.TempDir()
	page, svg := filepath.Join(dir, "filter-memory.md"), filepath.Join(dir, "filter-memory.svg")
	out, _ := runCLI(t, 0, "bench", "--filter-memory", "--keys", "3000", "--lookups", "500",
		"--value-size", "8", "--markdown", page, "--plot", svg, "--zipf-rankings", "2")
	tables := strings.Count(out, "wasted data-block reads per lookup")
	rows, means := 0, 0
	for _, line := range strings.Split(out, "\n") {
		// bits, 4 strategies of two fields each, a ratio, 2 strategies, a
		// ratio; "-" in a strategy's cell marks one that did not run.
		f := strings.Fields(line)
		if len(f) == 15 && f[0] != "bits/key" && !slices.Contains(f[1:9], "-") && !slices.Contains(f[10:14], "-") {
			rows++
			if strings.Count(line, "±") == 6 { // the Zipf rows: every strategy's cell
				means++
			}
		}
	}
	if tables != 3 || rows != 3*len(filterMemBits) || means != len(filterMemBits) {
		t.Fatalf("%d tables, %d complete rows, %d of means over rankings:\n%s", tables, rows, means, out)
	}
	plot := readAll(t, svg)
	for _, want := range []string{"Lookups: absent", "Lookups: 90/10", "Lookups: zipf"} {
		if !strings.Contains(plot, want) {
			t.Errorf("plot has no panel %q", want)
		}
	}
	for _, s := range filterMemStrategies {
		if n := strings.Count(plot, ">"+string(s)+"<"); n != 3 {
			t.Errorf("plot names %s in %d legends, want 3", s, n)
		}
	}
	md := readAll(t, page)
	if n := strings.Count(md, "| "+"2 "); !strings.Contains(md, "bench --filter-memory") || n < 3 || !strings.Contains(md, "on 2 independent rankings") ||
		!strings.Contains(md, "](filter-memory.svg)") || !strings.Contains(md, "pebble+SetLevelFilters") {
		t.Fatalf("page (%d rows at 2 bits/key):\n%s", n, md)
	}
}

// readAll returns the contents of the file at path.
func readAll(t *testing.T, path string) string {
	t.Helper()
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
