package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBench_CapGrowth grows a tiny store under a cap through the CLI: a
// row per doubling, the most held never above the cap (most held / cap at
// most 1), the summary saying so, and the same on the Markdown page.
func TestBench_CapGrowth(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "growth.md")
	out, _ := runCLI(t, 0, "bench", "--growth", "--filter-cap-bits", "4", "--keys", "40000", "--growth-from", "5000",
		"--value-size", "16", "--lookups", "2000", "--memtable", "64KiB", "--table-size", "64KiB", "--l1-size", "128KiB",
		"--dir", filepath.Join(dir, "stores"), "--markdown", page)
	var sizes []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.HasSuffix(f[0], "k") {
			continue
		}
		sizes = append(sizes, f[0])
		if f[3] > "1.000" || f[3] <= "0.000" {
			t.Errorf("held / cap %s:\n%s", f[3], line)
		}
	}
	if want := []string{"5k", "10k", "20k", "40k"}; !slices.Equal(sizes, want) {
		t.Fatalf("sizes %v, want %v:\n%s", sizes, want, out)
	}
	if !strings.Contains(out, "never above it") {
		t.Fatalf("no verdict:\n%s", out)
	}
	md := readAll(t, page)
	for _, want := range []string{"--filter-cap-bits 4 --growth --growth-from 5000", "| 40k |", "never above it"} {
		if !strings.Contains(md, want) {
			t.Errorf("page lacks %q:\n%s", want, md)
		}
	}
}

// TestBench_CapGrowth_BadFlags refuses a cap without --growth and a
// negative one.
func TestBench_CapGrowth_BadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--filter-cap-bits", "4"},
		{"bench", "--growth", "--filter-cap-bits", "-1"},
		{"bench", "--growth", "--filter-cap-bits", "4", "--growth-from", "0"},
	} {
		if _, stderr := runCLI(t, 2, args...); !strings.Contains(stderr, "--") {
			t.Errorf("%q: stderr %q", args, stderr)
		}
	}
}

func TestCapGrowthSteps(t *testing.T) {
	for _, tc := range []struct {
		from, keys int
		want       []int
	}{
		{1_000_000, 20_000_000, []int{1_000_000, 2_000_000, 4_000_000, 8_000_000, 16_000_000, 20_000_000}},
		{5000, 40000, []int{5000, 10000, 20000, 40000}},
		{100, 50, []int{50}},
	} {
		if got := capGrowthSteps(tc.from, tc.keys); !slices.Equal(got, tc.want) {
			t.Errorf("capGrowthSteps(%d, %d) = %v, want %v", tc.from, tc.keys, got, tc.want)
		}
	}
}
