package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// TestBench_FilterMemory runs the filter-memory study on tiny stores: a
// table per mix with a row per memory, and the same tables in the
// Markdown page.
func TestBench_FilterMemory(t *testing.T) {
	page := filepath.Join(t.TempDir(), "filter-memory.md")
	out, _ := runCLI(t, 0, "bench", "--filter-memory", "--keys", "3000", "--lookups", "500",
		"--value-size", "8", "--markdown", page)
	tables := strings.Count(out, "wasted data-block reads per lookup")
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 10 && f[0] != "bits/key" {
			rows++
		}
	}
	if tables != 3 || rows != 3*len(filterMemBits) {
		t.Fatalf("%d tables, %d rows:\n%s", tables, rows, out)
	}
	f, err := vfs.Default.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	md, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(md), "| "+"2 "); !strings.Contains(string(md), "bench --filter-memory") || n < 3 {
		t.Fatalf("page (%d rows at 2 bits/key):\n%s", n, md)
	}
}
