package sstable

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// FuzzReader opens arbitrary bytes as a table and, if that succeeds,
// iterates both ways, seeks, gets and checks. Nothing may panic, and every
// error a table's bytes cause must wrap ErrCorruption.
func FuzzReader(f *testing.F) {
	_, small := smallTable(&testing.T{}, hashSetPolicy{})
	f.Add(small)
	f.Add(buildBytes(f, nil, WriterOptions{}))
	f.Add(buildBytes(f, []testEntry{{base.MakeInternalKey([]byte("a"), 1, base.KindSet), []byte("x")}},
		WriterOptions{FilterPolicy: hashSetPolicy{}, Compression: NoCompression}))
	addGoldenSeeds(f)
	f.Fuzz(fuzzReader)
}

// addGoldenSeeds seeds f with the golden tables of testdata/golden.
func addGoldenSeeds(f *testing.F) {
	for _, g := range goldenTables {
		data, err := os.ReadFile(filepath.Join(goldenDir, g.file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzReaderUnchecked is FuzzReader with block checksums ignored, so that
// mutations reach the block decoders through the reader.
func FuzzReaderUnchecked(f *testing.F) {
	_, small := smallTable(&testing.T{}, hashSetPolicy{})
	f.Add(small)
	addGoldenSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzSkipChecksums = true
		defer func() { fuzzSkipChecksums = false }()
		fuzzReader(t, data)
	})
}

func fuzzReader(t *testing.T, data []byte) {
	{
		r, err := openBytes(data, ReaderOptions{Cache: NewCache(1 << 16), Filters: filters(hashSetPolicy{})})
		if err != nil {
			requireCorruption(t, err)
			return
		}
		defer r.Close()
		var keys [][]byte
		it, err := r.NewIter(nil, nil)
		if err != nil {
			requireCorruption(t, err)
			return
		}
		for ok := it.First(); ok && len(keys) < 1000; ok = it.Next() {
			keys = append(keys, bytes.Clone(it.Key().UserKey))
		}
		for ok := it.Last(); ok; ok = it.Prev() {
		}
		for _, k := range append(keys, []byte("a"), nil, []byte("\xff")) {
			it.SeekGE(k)
			it.SeekLT(k)
			if _, _, _, err := r.Get(k, base.SeqNumMax, nil); err != nil {
				requireCorruption(t, err)
			}
		}
		if err := it.Close(); err != nil {
			requireCorruption(t, err)
		}
		if err := r.Check(); err != nil {
			requireCorruption(t, err)
		}
		if _, err := r.Layout(); err != nil {
			requireCorruption(t, err)
		}
	}
}

func requireCorruption(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, base.ErrCorruption) && !isComparerMismatch(err) {
		t.Fatalf("error does not wrap ErrCorruption: %v", err)
	}
}

// isComparerMismatch recognizes the one error a well-formed table of
// another ordering gives.
func isComparerMismatch(err error) bool {
	return bytes.Contains([]byte(err.Error()), []byte("reader uses"))
}

// FuzzBlockIter runs every move of the block iterator over arbitrary
// block contents.
func FuzzBlockIter(f *testing.F) {
	f.Add(buildBlock(1, "a", "b"))
	f.Add(buildBlock(2, "a", "ab", "abc", "b", "bcd"))
	f.Add(buildBlock(16))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := exerciseBlock(data); err != nil && !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("error does not wrap ErrCorruption: %v", err)
		}
	})
}

// FuzzFooter decodes arbitrary footers; a footer that decodes must encode
// back to the same bytes.
func FuzzFooter(f *testing.F) {
	f.Add(footer{metaindex: BlockHandle{100, 20}, index: BlockHandle{125, 40}, version: FormatVersion}.encode())
	f.Add(make([]byte, FooterLen))
	f.Fuzz(func(t *testing.T, data []byte) {
		ft, err := decodeFooter(data)
		if err == nil && !bytes.Equal(ft.encode(), data) {
			t.Fatalf("footer %x decodes to %+v, which encodes differently", data, ft)
		}
	})
}

// FuzzHandle decodes arbitrary handles; what decodes re-encodes the same.
func FuzzHandle(f *testing.F) {
	f.Add(appendHandle(nil, BlockHandle{1 << 40, 4096}))
	f.Add([]byte{0x80, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, n := decodeHandle(data)
		if n > 0 && !bytes.Equal(appendHandle(nil, h), data[:n]) && len(data) <= 2*10 {
			// Non-minimal varints decode but encode shorter; only check the value.
			if h2, _ := decodeHandle(appendHandle(nil, h)); h2 != h {
				t.Fatalf("handle %x decodes to %v, which re-decodes to %v", data, h, h2)
			}
		}
	})
}

// FuzzProperties decodes arbitrary properties blocks.
func FuzzProperties(f *testing.F) {
	var w blockWriter
	w.restartInterval = 16
	p := Properties{NumEntries: 3, SmallestKey: []byte("a\x01\x00\x00\x00\x00\x00\x00\x00"), ComparerName: "c"}
	p.encode(&w)
	f.Add(bytes.Clone(w.finish()))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := decodeProperties(data, "test", 0); err != nil && !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("error does not wrap ErrCorruption: %v", err)
		}
	})
}

// FuzzFilterBlock decodes arbitrary filter blocks for a few block counts
// and reads every filter of those that decode.
func FuzzFilterBlock(f *testing.F) {
	w := newFilterBlockWriter(hashSetPolicy{})
	for i := 0; i < 3; i++ {
		w.addKey([]byte{byte(i)})
		w.finishFilter()
	}
	f.Add(bytes.Clone(w.finish()), 3)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		if n < 0 || n > 1<<20 {
			return
		}
		fb, err := decodeFilterBlock(data, n)
		if err != nil {
			return
		}
		total := 0
		for i := 0; i < n; i++ {
			total += len(fb.filter(i))
		}
		if 4+total > len(data) {
			t.Fatalf("filters of %d bytes in a %d-byte block", total, len(data))
		}
	})
}

// FuzzRangeDelBlock decodes arbitrary range-deletion blocks: nothing may
// panic, every error must wrap ErrCorruption, and what decodes must be
// fragmented, as the reader's searches assume.
func FuzzRangeDelBlock(f *testing.F) {
	w := blockWriter{restartInterval: DefaultBlockRestartInterval}
	for _, t := range []RangeTombstone{
		{Start: []byte("b"), End: []byte("d"), Seq: 9},
		{Start: []byte("b"), End: []byte("d"), Seq: 4},
		{Start: []byte("d"), End: []byte("f"), Seq: 7},
	} {
		w.add(t.Key().AppendEncoded(nil), t.End)
	}
	f.Add(bytes.Clone(w.finish()))
	f.Add(buildBlock(1, "a", "b"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := decodeRangeDelBlock(data, bytes.Compare, "test", 0)
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error does not wrap ErrCorruption: %v", err)
			}
			return
		}
		if err := rangedel.CheckFragmented(bytes.Compare, ts); err != nil {
			t.Fatalf("decoded tombstones are not fragmented: %v", err)
		}
	})
}
