package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

func TestNewPhase(t *testing.T) {
	c := lookupSnapshot{
		Total: lookupCounts{Gets: 99, TablesConsidered: 3000, FilterNegatives: 1980,
			FilterTruePositives: 1000, FilterFalsePositives: 20, BlockReads: 1020},
		Levels: []lookupCounts{
			{TablesConsidered: 2000, FilterNegatives: 1980, FilterFalsePositives: 20, BlockReads: 20},
			{}, // a level no lookup reached: left out
			{TablesConsidered: 1000, FilterTruePositives: 1000, BlockReads: 1000},
		},
	}
	p := newPhase(c, 1000, 2*time.Millisecond)
	if p.Lookups.Gets != 1000 {
		t.Errorf("gets = %d, want the 1000 passed in", p.Lookups.Gets)
	}
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"ns/op", float64(p.NsPerOp), 2000},
		{"tables/lookup", float64(p.TablesPerLookup), 3},
		{"reads saved", float64(p.ReadsSavedPerLookup), 1.98},
		{"false positives", float64(p.FalsePositivesPerLookup), 0.02},
		{"block reads", float64(p.BlockReadsPerLookup), 1.02},
		{"FPR", float64(p.FPR), 0.01},
	} {
		if math.Abs(tc.got-tc.want) > 1e-9 {
			t.Errorf("%s = %g, want %g", tc.name, tc.got, tc.want)
		}
	}
	if len(p.Levels) != 2 || p.Levels[0].Level != 0 || p.Levels[1].Level != 2 {
		t.Fatalf("levels %+v, want L0 and L2", p.Levels)
	}
	if got := float64(p.Levels[0].ReadsSavedPerLookup); got != 1.98 {
		t.Errorf("L0 reads saved = %g, want 1.98", got)
	}
	if got := p.Levels[1].FPR; !math.IsNaN(float64(got)) {
		t.Errorf("L2 FPR = %g, want none (no negative, no false positive)", got)
	}
}

func TestLookupSnapshot_Plus(t *testing.T) {
	a := lookupSnapshot{Total: lookupCounts{Gets: 5, BlockReads: 3}, Levels: []lookupCounts{{BlockReads: 1}, {BlockReads: 2}}}
	b := lookupSnapshot{Total: lookupCounts{Gets: 2, BlockReads: 1}, Levels: []lookupCounts{{BlockReads: 1}}}
	got := a.plus(b, -1)
	want := lookupSnapshot{Total: lookupCounts{Gets: 3, BlockReads: 2}, Levels: []lookupCounts{{}, {BlockReads: 2}}}
	if got.Total != want.Total || !slices.Equal(got.Levels, want.Levels) {
		t.Errorf("a - b = %+v, want %+v", got, want)
	}
	if sum := (lookupSnapshot{}).plus(a, 1); !slices.Equal(sum.Levels, a.Levels) {
		t.Errorf("0 + a = %+v, want %+v", sum, a)
	}
	if none := (lookupSnapshot{Total: a.Total}).plus(lookupSnapshot{}, -1); none.Levels != nil {
		t.Errorf("snapshots without levels gave levels %v", none.Levels)
	}
}

func TestBenchRow_Fill(t *testing.T) {
	r := benchRow{Filter: "bloomkv.bloom.v1"}
	r.fill(bench.Footprint{FilterBytes: 1250, Keys: 1000}, 0.01)
	if r.FilterBitsPerKey != 10 || r.TargetFPR != 0.01 || r.Keys != 1000 || r.FilterBytes != 1250 {
		t.Errorf("got bits/key %v, target %v, keys %d, bytes %d; want 10, 0.01, 1000, 1250",
			r.FilterBitsPerKey, r.TargetFPR, r.Keys, r.FilterBytes)
	}
	none := benchRow{Filter: filterNone}
	none.fill(bench.Footprint{Keys: 100}, 0.01)
	if !math.IsNaN(float64(none.TargetFPR)) || !math.IsNaN(float64(none.FilterBitsPerKey)) {
		t.Errorf("a store without filters got target %v, bits/key %v; want none",
			none.TargetFPR, none.FilterBitsPerKey)
	}
}

// shapes returns one result per shape with the given ns/op, absent then
// present, in order.
func shapes(ns ...jsonFloat) []shapeResult {
	names := []string{shapeSettled, shapeWriteHeavy, shapeCompacted}
	var out []shapeResult
	for i := 0; i+1 < len(ns); i += 2 {
		out = append(out, shapeResult{Shape: names[i/2], Absent: phase{NsPerOp: ns[i]}, Present: phase{NsPerOp: ns[i+1]}})
	}
	return out
}

func TestCompareWithPebble(t *testing.T) {
	rows := []benchRow{
		{Config: "bloomkv, no filter", Engine: engineKV, Filter: filterNone, Shapes: shapes(9000, 9000)},
		{Config: "bloomkv, ours", Engine: engineKV, Filter: "A", Shapes: shapes(500, 900, 100, 100)},
		{Config: "bloomkv, theirs", Engine: engineKV, Filter: "B", Shapes: shapes(400, 800)},
		{Config: "pebble, ours", Engine: enginePebble, Filter: "A", Shapes: shapes(1000, 1800, 400, 50)},
		{Config: "pebble, theirs", Engine: enginePebble, Filter: "B", Shapes: shapes(2000, 400, 1, 1)},
	}
	got := compareWithPebble(rows)
	// The write-heavy shape of "theirs" has no bloomkv counterpart.
	want := []vsPebble{{"ours", shapeSettled, 0.5, 0.5}, {"ours", shapeWriteHeavy, 0.25, 2},
		{"theirs", shapeSettled, 0.2, 2}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := compareWithPebble(rows[:3]); got != nil {
		t.Errorf("without Pebble rows: got %+v, want nothing", got)
	}
}

func TestL0Sampler(t *testing.T) {
	var s l0Sampler
	if s.summary() != nil {
		t.Error("no sample: got a summary")
	}
	s.add([]levelShape{{Level: 0, Tables: 3}, {Level: 2, Tables: 9}})
	s.add([]levelShape{{Level: 1, Tables: 4}}) // no L0 table
	s.add([]levelShape{{Level: 0, Tables: 6}})
	if got, want := *s.summary(), (tableRange{Min: 0, Mean: 3, Max: 6}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestMaxBenchValueSize: a load batch of bench.LoadBatch writes of the
// largest --value-size, as kv encodes it (a 12-byte header, then each
// write's kind, key and value with their uvarint lengths), fits
// kv.MaxBatchSize, and the bound is accepted.
func TestMaxBenchValueSize(t *testing.T) {
	uvarintLen := func(n int) int { return len(binary.AppendUvarint(nil, uint64(n))) }
	entry := 1 + uvarintLen(bench.KeySize) + bench.KeySize + uvarintLen(maxBenchValueSize) + maxBenchValueSize
	if size := 12 + bench.LoadBatch*entry; size > kv.MaxBatchSize {
		t.Fatalf("a load batch of values of %d bytes encodes to %d bytes, over kv.MaxBatchSize %d", maxBenchValueSize, size, kv.MaxBatchSize)
	}
	o := benchOptions{keys: 1, lookups: 1, fpr: 0.01, cache: 1, memtable: benchMemTableSize, tableSize: 1, l1Size: 1,
		valueSize: maxBenchValueSize}
	if err := o.check(); err != nil {
		t.Fatalf("--value-size %d: %v", maxBenchValueSize, err)
	}
}

func TestBenchOptions_Check(t *testing.T) {
	ok := benchOptions{keys: 1, lookups: 1, fpr: 0.01, cache: 1, memtable: benchMemTableSize,
		tableSize: 1, l1Size: 1}
	for _, plot := range []string{"", "p.svg", "p.png", "P.SVG"} {
		o := ok
		o.plot = plot
		if err := o.check(); err != nil {
			t.Errorf("--plot %q: %v", plot, err)
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*benchOptions)
	}{
		{"--plot p.pdf", func(o *benchOptions) { o.plot = "p.pdf" }},
		{"--plot p", func(o *benchOptions) { o.plot = "p" }},
		{"--memtable 512", func(o *benchOptions) { o.memtable = 512 }},
		{"--table-size 0", func(o *benchOptions) { o.tableSize = 0 }},
		{"--l1-size -1", func(o *benchOptions) { o.l1Size = -1 }},
		{"--rounds -1", func(o *benchOptions) { o.rounds = -1 }},
		{"--filter-memory --zipf-rankings 0", func(o *benchOptions) { o.filterMemory, o.zipfRankings = true, 0 }},
		{"--markdown no/such/dir/r.md", func(o *benchOptions) { o.markdown = "no/such/dir/r.md" }},
		{"--prefix --markdown r.md", func(o *benchOptions) { o.prefix, o.markdown = true, "r.md" }},
		{"--value-size over the batch bound", func(o *benchOptions) { o.valueSize = maxBenchValueSize + 1 }},
	} {
		o := ok
		tc.edit(&o)
		var u usageError
		if err := o.check(); !errors.As(err, &u) {
			t.Errorf("%s: got %v, want a usage error", tc.name, err)
		}
	}
}

// TestBench_PlotIntoMissingDir refuses --plot into a directory that does
// not exist before the run, as --markdown does, rather than failing after
// it with the results lost.
func TestBench_PlotIntoMissingDir(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "no", "such", "dir", "p.svg")
	for _, args := range [][]string{
		{"bench", "--keys", "1000", "--lookups", "100", "--rounds", "0", "--plot", plot},
		{"bench", "--filter-memory", "--keys", "1000", "--lookups", "100", "--zipf-rankings", "1", "--plot", plot},
	} {
		stdout, stderr := runCLI(t, 2, args...)
		if !strings.HasPrefix(stderr, "bloomkv: --plot "+plot+": ") || stdout != "" {
			t.Errorf("%q: stdout %q, stderr %q; want only a --plot usage error", args, stdout, stderr)
		}
	}
}

// TestBench_PlotWithoutPlot refuses --plot for the runs that draw none,
// rather than succeeding without writing it.
func TestBench_PlotWithoutPlot(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "p.svg")
	for _, args := range [][]string{
		{"bench", "--prefix", "--keys", "1000", "--lookups", "100", "--plot", plot},
		{"bench", "--growth", "--filter-cap-bits", "8", "--growth-from", "500", "--keys", "1000", "--lookups", "100", "--plot", plot},
	} {
		if _, stderr := runCLI(t, 2, args...); !strings.HasPrefix(stderr, "bloomkv: --plot: ") {
			t.Errorf("%q: stderr %q, want a --plot usage error", args, stderr)
		}
	}
}

// TestBench_RunsAloneRefuseIgnoredFlags gives --prefix and
// --filter-memory flags they would ignore: each is a usage error naming
// the flag, before anything runs.
func TestBench_RunsAloneRefuseIgnoredFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "stores")
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--prefix", "--filter-memory"}, "--filter-memory"},
		{[]string{"--prefix", "--growth"}, "--growth"},
		{[]string{"--filter-memory", "--dir", dir}, "--dir"},
		{[]string{"--filter-memory", "--keep"}, "--keep"},
		{[]string{"--filter-memory", "--pebble"}, "--pebble"},
		{[]string{"--filter-memory", "--memtable", "1MiB"}, "--memtable"},
		{[]string{"--filter-memory", "--fpr", "0.02"}, "--fpr"},
	} {
		args := append([]string{"bench", "--keys", "1000", "--lookups", "100"}, tc.args...)
		if _, stderr := runCLI(t, 2, args...); !strings.HasPrefix(stderr, "bloomkv: "+tc.flag+": ") {
			t.Errorf("%q: stderr %q, want a usage error naming %s", tc.args, stderr, tc.flag)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a refused bench made its --dir (%v)", err)
	}
}

// TestBench_OutputIsDirectory names an existing, empty directory as the
// --plot or --markdown file: the command is refused before it runs, with
// a usage error naming the flag, and the directory is left in place
// (creating the file over it would remove it).
func TestBench_OutputIsDirectory(t *testing.T) {
	tmp := t.TempDir()
	ran := 0
	for _, tc := range []struct {
		flag string
		args []string
	}{
		{"--plot", []string{"bench", "--keys", "1000", "--lookups", "100", "--rounds", "0", "--plot"}},
		{"--plot", []string{"bench", "--filter-memory", "--keys", "1000", "--lookups", "100", "--zipf-rankings", "1", "--plot"}},
		{"--markdown", []string{"bench", "--keys", "1000", "--lookups", "100", "--rounds", "0", "--markdown"}},
		{"--markdown", []string{"crash", "--kills", "1", "--dir", tmp, "--markdown"}},
	} {
		out := filepath.Join(tmp, fmt.Sprintf("out%d.svg", ran))
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		stdout, stderr := runCLI(t, 2, append(tc.args, out)...)
		if want := "bloomkv: " + tc.flag + " " + out + ": is a directory"; !strings.HasPrefix(stderr, want) || stdout != "" {
			t.Errorf("%q: stdout %q, stderr %q; want only %q", tc.args, stdout, stderr, want)
		}
		if st, err := os.Stat(out); err != nil || !st.IsDir() {
			t.Errorf("%q: the directory %s is gone (%v)", tc.args, out, err)
		}
		ran++
	}
	if ran != 4 {
		t.Fatalf("%d of 4 cases ran", ran)
	}
}

// TestWriteFile_RefusesDirectory checks that writeFile fails on a path
// that is a directory and leaves the directory in place.
func TestWriteFile_RefusesDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "page.md")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	err := writeFile(vfs.Default, dir, bytes.NewBufferString("page"))
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("writeFile over a directory: %v, want an error saying so", err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Errorf("writeFile removed the directory %s (%v)", dir, err)
	}
}
