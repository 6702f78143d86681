package sstable

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/cockroachdb/pebble/vfs"
)

// openFile writes data to a file on disk (vfs.Default, in t's temporary
// directory) and opens a Reader over it without a block cache: reads go
// to the operating system, as a compaction's do.
func openFile(t testing.TB, data []byte) *Reader {
	t.Helper()
	name := filepath.Join(t.TempDir(), "t.sst")
	f, err := vfs.Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Clone(data)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if f, err = vfs.Default.Open(name); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(f, ReaderOptions{FileName: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// BenchmarkCompactionScan reads a table on disk (in the page cache after
// the first op) once per op as a compaction does (IterOptions.Compaction,
// no block cache); ns/entry is per entry read.
func BenchmarkCompactionScan(b *testing.B) {
	r := openFile(b, benchTables(b).ours)
	b.ResetTimer()
	n := 0
	var it Iter
	for range b.N {
		if err := r.InitIter(&it, &IterOptions{Compaction: true}); err != nil {
			b.Fatal(err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
	reportPerEntry(b, n)
}

// BenchmarkBuildFilter builds the filters of a table on disk at 4 bits per
// key per op (Reader.BuildFilter), as a store under a filter cap does.
func BenchmarkBuildFilter(b *testing.B) {
	r := openFile(b, benchTables(b).ours)
	p, err := bloompolicy.NewBitsPerKey(4)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		f, err := r.BuildFilter(p)
		if err != nil {
			b.Fatal(err)
		}
		if f.Keys() != benchEntries {
			b.Fatalf("built over %d keys, want %d", f.Keys(), benchEntries)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchEntries), "ns/entry")
}
