package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/splits"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// writeTable writes keys prefix000..prefix(n-1), valued "v", at sequence
// number 0 into a table at path.
func writeTable(t *testing.T, path, prefix string, n int) {
	t.Helper()
	writeTableWith(t, path, prefix, n, sstable.WriterOptions{})
}

// writeTableWith is writeTable with the writer's options.
func writeTableWith(t *testing.T, path, prefix string, n int, opts sstable.WriterOptions) {
	t.Helper()
	f, err := vfs.Default.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := sstable.NewWriter(f, opts)
	for i := range n {
		if err := w.Add(sstable.MakeInternalKey([]byte(fmt.Sprintf("%s%03d", prefix, i)), 0, sstable.KindSet), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDBIngest ingests tables into a new store, which then answers for
// their keys and counts their bytes; overlapping tables are refused.
func TestDBIngest(t *testing.T) {
	tmp := t.TempDir()
	dir := vfs.Default.PathJoin(tmp, "store")
	a, b := vfs.Default.PathJoin(tmp, "a.sst"), vfs.Default.PathJoin(tmp, "b.sst")
	writeTable(t, a, "a", 100)
	writeTable(t, b, "b", 100)
	runCLI(t, 0, "db", "ingest", "--dir", dir, a, b)
	if out, _ := runCLI(t, 0, "db", "get", "--dir", dir, "a042", "b099"); out != "a042\tv\nb099\tv\n" {
		t.Fatalf("get after ingest: %q", out)
	}
	out, _ := runCLI(t, 0, "db", "disk-usage", "--dir", dir)
	if n, err := strconv.Atoi(strings.TrimSpace(out)); err != nil || n == 0 {
		t.Fatalf("disk-usage after ingest: %q, want the tables' bytes", out)
	}
	c := vfs.Default.PathJoin(tmp, "c.sst")
	writeTable(t, c, "a0", 10) // a000..a009: inside a.sst's range
	_, stderr := runCLI(t, 1, "db", "ingest", "--dir", dir, a, c)
	if !strings.Contains(stderr, "must be sorted") || !strings.Contains(stderr, "c.sst") {
		t.Fatalf("overlapping tables: stderr %q, want the refusal naming c.sst", stderr)
	}
}

// TestDBIngest_Split checks that ingest opens the store as the other db
// commands do, under the comparer --split names: a table whose filters
// hold first-slash prefixes keeps them in a store opened with --split
// first-slash, and the store warns (on stderr) that it drops them in one
// opened without.
func TestDBIngest_Split(t *testing.T) {
	tmp := t.TempDir()
	b, err := splits.Named("first-slash")
	if err != nil {
		t.Fatal(err)
	}
	policy, err := bloompolicy.New(0.01)
	if err != nil {
		t.Fatal(err)
	}
	opts := sstable.WriterOptions{Comparer: b.Comparer(), FilterPolicy: policy}
	ran := 0
	for _, c := range []struct {
		split       []string
		wantDropped bool
	}{{[]string{"--split", "first-slash"}, false}, {nil, true}} {
		dir, table := vfs.Default.PathJoin(tmp, fmt.Sprint("store", ran)), vfs.Default.PathJoin(tmp, fmt.Sprint(ran, ".sst"))
		writeTableWith(t, table, "a/", 100, opts)
		args := append([]string{"db", "ingest", "--dir", dir}, c.split...)
		_, stderr := runCLI(t, 0, append(args, table)...)
		if dropped := strings.Contains(stderr, "its filters are dropped"); dropped != c.wantDropped {
			t.Errorf("ingest %q: stderr %q; want a warning about dropped filters: %v", c.split, stderr, c.wantDropped)
		}
		get := append([]string{"db", "get", "--dir", dir}, c.split...)
		if out, _ := runCLI(t, 0, append(get, "a/042")...); out != "a/042\tv\n" {
			t.Errorf("get after ingest %q: %q", c.split, out)
		}
		ran++
	}
	if ran != 2 {
		t.Fatalf("%d of 2 cases ran", ran)
	}
}

// TestDB_ReadsPastLeftoverTable puts in a store's directory a table file
// the store does not use, as a flush cut short by a crash leaves one
// (only a writable Open deletes it): the read commands work on the store
// and leave the file alone. A table the store uses that is damaged still
// fails the lookups that reach it.
func TestDB_ReadsPastLeftoverTable(t *testing.T) {
	tmp := t.TempDir()
	dir := vfs.Default.PathJoin(tmp, "store")
	table := vfs.Default.PathJoin(tmp, "a.sst")
	writeTable(t, table, "a", 100)
	runCLI(t, 0, "db", "ingest", "--dir", dir, table)
	runCLI(t, 0, "db", "set", "b", "1", "--dir", dir)
	leftover := vfs.Default.PathJoin(dir, "999999.sst")
	if err := os.WriteFile(leftover, []byte("half a table"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _ := runCLI(t, 0, "db", "get", "a042", "b", "--dir", dir); out != "a042\tv\nb\t1\n" {
		t.Errorf("get beside a leftover table: %q", out)
	}
	if out, _ := runCLI(t, 0, "db", "scan", "--dir", dir, "--start", "a099"); out != "a099\tv\nb\t1\n" {
		t.Errorf("scan beside a leftover table: %q", out)
	}
	runCLI(t, 0, "db", "metrics", "--dir", dir)
	if data, err := os.ReadFile(leftover); err != nil || string(data) != "half a table" {
		t.Errorf("the read commands changed the leftover table: %q, %v", data, err)
	}

	// The ingested table, the store's only one, cut short.
	names, err := filepath.Glob(vfs.Default.PathJoin(dir, "00*.sst"))
	if err != nil || len(names) != 1 {
		t.Fatalf("the store's tables: %v, %v; want one", names, err)
	}
	if err := os.Truncate(names[0], 100); err != nil {
		t.Fatal(err)
	}
	_, stderr := runCLI(t, 1, "db", "get", "a042", "--dir", dir)
	if !strings.Contains(stderr, "corruption") || !strings.Contains(stderr, filepath.Base(names[0])) {
		t.Errorf("get from a damaged table: stderr %q, want a corruption error naming %s", stderr, names[0])
	}
}
