package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cockroachdb/pebble/vfs"
)

// readCountingFile counts the reads of a table file and the bytes they
// ask for.
type readCountingFile struct {
	vfs.File
	reads, bytes atomic.Int64
}

func (f *readCountingFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads.Add(1)
	f.bytes.Add(int64(len(p)))
	return f.File.ReadAt(p, off)
}

// openCounting opens data as a table whose file counts its reads.
func openCounting(t *testing.T, data []byte, opts ReaderOptions) (*Reader, *readCountingFile) {
	t.Helper()
	fs := vfs.NewMem()
	f, err := fs.Create("t.sst")
	if err == nil {
		// A clone: under the race detector, the memory file system
		// scribbles over what it was given to write.
		_, err = f.Write(bytes.Clone(data))
	}
	if err == nil {
		err = f.Close()
	}
	var raw vfs.File
	if err == nil {
		raw, err = fs.Open("t.sst")
	}
	if err != nil {
		t.Fatal(err)
	}
	cf := &readCountingFile{File: raw}
	opts.FileName = "t.sst"
	r, err := NewReader(cf, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	cf.reads.Store(0)
	cf.bytes.Store(0)
	return r, cf
}

// scanEntries walks it over r, forward or backward, and returns the
// entries in key order and the iterator's error.
func scanEntries(t *testing.T, r *Reader, forward bool) ([]testEntry, error) {
	t.Helper()
	it, err := r.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	first, next := it.First, it.Next
	if !forward {
		first, next = it.Last, it.Prev
	}
	var got []testEntry
	for ok := first(); ok; ok = next() {
		k := it.Key()
		got = append(got, testEntry{base.InternalKey{UserKey: bytes.Clone(k.UserKey), Trailer: k.Trailer}, bytes.Clone(it.Value())})
	}
	if !forward {
		for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
			got[i], got[j] = got[j], got[i]
		}
	}
	return got, it.Close()
}

// TestIter_ScanReadahead checks that an iterator scanning over blocks the
// cache lacks, forward or backward, reads the file compactionReadahead
// bytes at a time once it has read scanReadaheadAfter blocks in a row,
// and caches every block it reads, while seeks read block by block.
func TestIter_ScanReadahead(t *testing.T) {
	entries := fortyByteEntries(20000)
	data := buildBytes(t, entries, WriterOptions{})
	for _, cached := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache=%t", cached), func(t *testing.T) {
			var opts ReaderOptions
			if cached {
				opts.Cache = NewCache(64 << 20)
			}
			r, f := openCounting(t, data, opts)
			blocks := int64(len(r.blocks))
			if r.dataEnd < 4*compactionReadahead {
				t.Fatalf("a table of %d bytes: under four windows", r.dataEnd)
			}
			scanInWindows(t, r, f, entries, true)
			if !cached {
				return
			}
			for i := range r.blocks {
				if r.cachedBlock(i) == nil {
					t.Fatalf("block %d of %d not cached after the scan", i, blocks)
				}
			}
			f.reads.Store(0)
			got, err := scanEntries(t, r, true)
			if err != nil {
				t.Fatal(err)
			}
			requireEntries(t, got, entries)
			if reads := f.reads.Load(); reads != 0 {
				t.Fatalf("a second scan, every block cached, made %d reads", reads)
			}
		})
	}
	t.Run("backward", func(t *testing.T) {
		r, f := openCounting(t, data, ReaderOptions{})
		scanInWindows(t, r, f, entries, false)
	})
	t.Run("zigzag", func(t *testing.T) {
		// Prev and Next in turn across one block boundary: every move
		// reads a block next to the last, but the direction turns each
		// time, so no window is read.
		const b = 5
		var start []byte // block b's first key
		{
			it, err := openTable(t, data, ReaderOptions{}).NewIter(nil)
			if err != nil {
				t.Fatal(err)
			}
			ok := it.First()
			for ok && it.block < b {
				ok = it.Next()
			}
			if !ok {
				t.Fatalf("no block %d: %v", b, it.Error())
			}
			start = bytes.Clone(it.Key().UserKey)
			it.Close()
		}
		r, f := openCounting(t, data, ReaderOptions{})
		it, err := r.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		if !it.SeekGE(start) || it.block != b {
			t.Fatalf("SeekGE(%q): block %d (%v)", start, it.block, it.Error())
		}
		blockBytes := int64(r.blocks[b].handle.Length + blockTrailerLen)
		for range 20 {
			if !it.Prev() || it.block != b-1 || !it.Next() || it.block != b {
				t.Fatalf("stepping across blocks %d and %d: at block %d (%v)", b-1, b, it.block, it.Error())
			}
			blockBytes += int64(r.blocks[b-1].handle.Length + r.blocks[b].handle.Length + 2*blockTrailerLen)
		}
		if got := f.bytes.Load(); got != blockBytes {
			t.Fatalf("reads of %d bytes, for blocks of %d bytes", got, blockBytes)
		}
	})
	t.Run("seeks", func(t *testing.T) {
		r, f := openCounting(t, data, ReaderOptions{})
		it, err := r.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		const seeks = 200
		var blockBytes int64
		for i := range seeks {
			j := (i * 7919) % (len(entries) - 2)
			if !it.SeekGE(entries[j].key.UserKey) || !it.Next() || !it.Next() {
				t.Fatalf("seek %d: %v", i, it.Error())
			}
			blockBytes += int64(r.blocks[it.block].handle.Length + blockTrailerLen)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		// Each seek and its two steps read one or two blocks, of about
		// the same size, never a window.
		if got := f.bytes.Load(); got > 3*blockBytes {
			t.Fatalf("%d seeks read %d bytes, for blocks of %d bytes in all", seeks, got, blockBytes)
		}
	})
}

// scanInWindows scans r, whose file is f, forward or backward, and fails
// unless it reads entries, with a read per block for the first
// scanReadaheadAfter-1 blocks and one per readahead window after them.
func scanInWindows(t *testing.T, r *Reader, f *readCountingFile, entries []testEntry, forward bool) {
	t.Helper()
	got, err := scanEntries(t, r, forward)
	if err != nil {
		t.Fatal(err)
	}
	requireEntries(t, got, entries)
	windows := int64(r.dataEnd/compactionReadahead) + 1
	if reads := f.reads.Load(); reads > scanReadaheadAfter+windows+1 {
		t.Fatalf("a scan of %d blocks (forward %t) made %d reads, want at most %d",
			len(r.blocks), forward, reads, scanReadaheadAfter+windows+1)
	}
}

// TestIter_ScanReadaheadCorruptBlock flips a byte in a data block that a
// scan reads ahead, forward or backward: the blocks the scan passes
// before it are read whole, and the bad block is ErrCorruption at its own
// offset.
func TestIter_ScanReadaheadCorruptBlock(t *testing.T) {
	entries := fortyByteEntries(5000)
	clean := buildBytes(t, entries, WriterOptions{})
	blocks := len(openTable(t, clean, ReaderOptions{}).blocks)
	for _, forward := range []bool{true, false} {
		t.Run(fmt.Sprintf("forward=%t", forward), func(t *testing.T) {
			// Read ahead, and not the block its window was read for.
			bad := scanReadaheadAfter + 2
			if !forward {
				bad = blocks - 1 - bad
			}
			data := bytes.Clone(clean)
			r := openTable(t, data, ReaderOptions{})
			h := r.blocks[bad].handle
			// The entries of the blocks the scan passes before the bad one.
			n := 0
			it, err := r.NewIter(nil)
			if err != nil {
				t.Fatal(err)
			}
			for ok := it.First(); ok; ok = it.Next() {
				if forward && it.block < bad || !forward && it.block > bad {
					n++
				}
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			passed := entries[:n]
			if !forward {
				passed = entries[len(entries)-n:]
			}
			data[h.Offset+h.Length/2] ^= 0x10
			r, f := openCounting(t, data, ReaderOptions{})
			got, err := scanEntries(t, r, forward)
			if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", h.Offset)) {
				t.Fatalf("scan over a bad block at %s: %v", h, err)
			}
			requireEntries(t, got, passed)
			if reads := f.reads.Load(); reads != scanReadaheadAfter {
				t.Fatalf("%d reads, want %d: %d blocks alone, then the window that holds the bad block",
					reads, scanReadaheadAfter, scanReadaheadAfter-1)
			}
		})
	}
}
