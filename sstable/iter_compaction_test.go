package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// scanCompaction reads r from the start with it in compaction mode
// (IterOptions.Compaction) and returns the entries read and the
// iterator's error.
func scanCompaction(t *testing.T, r *Reader, it *Iter) ([]testEntry, error) {
	t.Helper()
	if err := r.InitIter(it, &IterOptions{Compaction: true}); err != nil {
		t.Fatal(err)
	}
	var got []testEntry
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		got = append(got, testEntry{base.InternalKey{UserKey: bytes.Clone(k.UserKey), Trailer: k.Trailer}, bytes.Clone(it.Value())})
	}
	return got, it.Close()
}

// requireEntries fails the test unless got is want.
func requireEntries(t *testing.T, got, want []testEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].key.UserKey, want[i].key.UserKey) || got[i].key.Trailer != want[i].key.Trailer ||
			!bytes.Equal(got[i].value, want[i].value) {
			t.Fatalf("entry %d: %s=%q, want %s=%q", i, got[i].key, got[i].value, want[i].key, want[i].value)
		}
	}
}

// TestCompactionIter_Readahead reads tables in compaction mode, whose
// iterator reads the file compactionReadahead bytes at a time, and checks
// every entry: tables of many windows' worth of 4 KiB blocks, blocks that
// straddle windows, and blocks larger than a window (values of 1.5 and 3
// windows), with a block cache holding some of the blocks, whose reads
// skip the readahead.
func TestCompactionIter_Readahead(t *testing.T) {
	entries := fortyByteEntries(20000)
	large := make([]testEntry, 0, len(entries))
	for i, e := range entries[:600] {
		if i%97 == 5 { // incompressible: the stored block is as large
			e.value = make([]byte, compactionReadahead*(1+i%2)+compactionReadahead/2)
			rand.NewChaCha8([32]byte{byte(i)}).Read(e.value)
		}
		large = append(large, e)
	}
	for _, tc := range []struct {
		name    string
		entries []testEntry
		cached  bool
	}{
		{"small-blocks", entries, false},
		{"large-values", large, false},
		{"some-cached", entries, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := ReaderOptions{}
			if tc.cached {
				opts.Cache = NewCache(64 << 20)
			}
			r, err := openBytes(buildBytes(t, tc.entries, WriterOptions{}), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.dataEnd < 4*compactionReadahead {
				t.Fatalf("a table of %d bytes: under four windows", r.dataEnd)
			}
			largest := uint64(0)
			for i := range r.blocks {
				largest = max(largest, r.blocks[i].handle.Length)
			}
			if wantLarge := tc.name == "large-values"; wantLarge != (largest > compactionReadahead) {
				t.Fatalf("largest block %d bytes, against a window of %d", largest, compactionReadahead)
			}
			if tc.cached {
				// Every third block in the cache, read through it.
				for i := 0; i < len(r.blocks); i += 3 {
					if _, err := r.dataBlock(i, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			var it Iter
			got, err := scanCompaction(t, r, &it)
			if err != nil {
				t.Fatal(err)
			}
			requireEntries(t, got, tc.entries)
		})
	}
}

// TestCompactionIter_ReadaheadReset reads part of table a with an
// iterator in compaction mode, then table b with the same iterator (as a
// compaction's level iterator does, table after table): b's first blocks
// lie at the offsets of a's blocks read ahead, and b's entries must come
// from b's file, not from the bytes read ahead of a's.
func TestCompactionIter_ReadaheadReset(t *testing.T) {
	entries := fortyByteEntries(5000)
	other := make([]testEntry, len(entries))
	for i, e := range entries {
		other[i] = testEntry{e.key, []byte(strings.ToUpper(string(e.value)))}
	}
	a, err := openBytes(buildBytes(t, entries, WriterOptions{}), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := openBytes(buildBytes(t, other, WriterOptions{}), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.blocks[1].handle != b.blocks[1].handle {
		t.Fatalf("the tables' second blocks differ: %s and %s", a.blocks[1].handle, b.blocks[1].handle)
	}
	var it Iter
	if err := a.InitIter(&it, &IterOptions{Compaction: true}); err != nil {
		t.Fatal(err)
	}
	ok := it.First()
	for i := 0; ok && i < 10; i++ {
		ok = it.Next()
	}
	if !ok || !bytes.Equal(it.Value(), entries[10].value) {
		t.Fatalf("table a, entry 10: %q", it.Value())
	}
	got, err := scanCompaction(t, b, &it)
	if err != nil {
		t.Fatal(err)
	}
	requireEntries(t, got, other)
}

// TestCompactionIter_ReadaheadCorruptBlock flips a byte in one data block
// of a table read in compaction mode: the blocks before it, read ahead
// with it, are read whole, and the bad block is ErrCorruption at its own
// offset, though its bytes came from a read that began blocks before it.
func TestCompactionIter_ReadaheadCorruptBlock(t *testing.T) {
	entries := fortyByteEntries(5000)
	data := buildBytes(t, entries, WriterOptions{})
	clean, err := openBytes(data, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer clean.Close()
	const bad = 5 // within the first window, not its first block
	h := clean.blocks[bad].handle
	if h.Offset+h.Length+blockTrailerLen > compactionReadahead {
		t.Fatalf("block %d at %s: past the first window", bad, h)
	}
	before := 0 // the entries of the blocks before the bad one
	var it Iter
	if err := clean.InitIter(&it, &IterOptions{Compaction: true}); err != nil {
		t.Fatal(err)
	}
	for ok := it.First(); ok && it.block < bad; ok = it.Next() {
		before++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}

	data = bytes.Clone(data)
	data[h.Offset+h.Length/2] ^= 0x10
	r, err := openBytes(data, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := scanCompaction(t, r, &it)
	if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", h.Offset)) {
		t.Fatalf("scan over a bad block at %s: %v", h, err)
	}
	requireEntries(t, got, entries[:before])
}

// TestCompactionIter_ReadaheadPooled scans tables from several goroutines
// at once, closing the iterator after every pass, half of them with a new
// iterator each pass and half reusing theirs (InitIter), so that the
// readahead buffers go round the pool between them: every pass must read
// its own table's entries (and the race detector finds no buffer shared
// while in use).
func TestCompactionIter_ReadaheadPooled(t *testing.T) {
	const goroutines, passes = 4, 20
	var tables [goroutines]*Reader
	var want [goroutines][]testEntry
	entries := fortyByteEntries(3000)
	for g := range goroutines {
		for _, e := range entries {
			want[g] = append(want[g], testEntry{e.key, fmt.Appendf(nil, "%d-%s", g, e.value)})
		}
		r, err := openBytes(buildBytes(t, want[g], WriterOptions{}), ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		tables[g] = r
	}
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			var reused Iter
			for range passes {
				it := &reused
				if g%2 == 0 {
					it = new(Iter)
				}
				if err := tables[g].InitIter(it, &IterOptions{Compaction: true}); err != nil {
					errs <- err
					return
				}
				i := 0
				for ok := it.First(); ok; ok = it.Next() {
					if i >= len(want[g]) || !bytes.Equal(it.Value(), want[g][i].value) {
						errs <- fmt.Errorf("table %d, entry %d: %q", g, i, it.Value())
						it.Close()
						return
					}
					i++
				}
				if err := it.Close(); err != nil || i != len(want[g]) {
					errs <- fmt.Errorf("table %d: %d entries, %v", g, i, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range goroutines {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
