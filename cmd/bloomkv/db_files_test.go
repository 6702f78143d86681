package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// writeTable writes keys prefix000..prefix(n-1), valued "v", at sequence
// number 0 into a table at path.
func writeTable(t *testing.T, path, prefix string, n int) {
	t.Helper()
	f, err := vfs.Default.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{})
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
