package sstable

import (
	"fmt"
	"testing"
)

// TestReader_EstimateDiskUsage checks the estimate against the data
// blocks' sizes: all of them for the whole range, about half for half
// the keys, one block for one key, none beyond the last key.
func TestReader_EstimateDiskUsage(t *testing.T) {
	w, fs := newMemWriter(t, WriterOptions{BlockSize: 256, Compression: NoCompression})
	const n = 1000
	for i := range n {
		if err := w.Add(MakeInternalKey([]byte(fmt.Sprintf("k%05d", i)), 1, KindSet), []byte("value-value")); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open("t.sst")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(f, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := r.Properties()
	blockSize := p.DataSize / p.NumDataBlocks
	cases := []struct {
		start, end string // "" is nil
		lo, hi     uint64
	}{
		{"", "", p.DataSize, p.DataSize},
		{"k00000", "k99999", p.DataSize, p.DataSize},
		{"k00000", "k00499", p.DataSize/2 - 2*blockSize, p.DataSize/2 + 2*blockSize},
		{"k00500", "", p.DataSize/2 - 2*blockSize, p.DataSize/2 + 2*blockSize},
		{"k00500", "k00500", 1, 2 * blockSize},
		{"z", "", 0, 0},
		{"k00600", "k00500", 0, 0},
	}
	for _, c := range cases {
		var start, end []byte
		if c.start != "" {
			start = []byte(c.start)
		}
		if c.end != "" {
			end = []byte(c.end)
		}
		got, err := r.EstimateDiskUsage(start, end)
		if err != nil {
			t.Fatal(err)
		}
		if got < c.lo || got > c.hi {
			t.Errorf("EstimateDiskUsage(%q, %q) = %d, want %d..%d (data %d B in %d blocks)",
				c.start, c.end, got, c.lo, c.hi, p.DataSize, p.NumDataBlocks)
		}
	}
	if p.NumDataBlocks < 20 {
		t.Fatalf("%d data blocks, want many", p.NumDataBlocks)
	}
}
