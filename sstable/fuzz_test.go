package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/rangedel"
)

// FuzzReader opens arbitrary bytes as a table and, if that succeeds,
// iterates both ways, seeks, gets and checks. Nothing may panic, and every
// error a table's bytes cause must wrap ErrCorruption.
func FuzzReader(f *testing.F) {
	_, small := smallTable(f, hashSetPolicy{})
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

// FuzzReaderUnchecked is FuzzReader over tables whose checksums are made
// to match their mutated bytes (fixChecksums), so that mutations get past
// checksum verification and reach the block decoders through the reader:
// the table whose checksums are valid but whose contents lie.
func FuzzReaderUnchecked(f *testing.F) {
	_, small := smallTable(f, hashSetPolicy{})
	f.Add(small)
	addGoldenSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fixChecksums(data)
		fuzzReader(t, data)
	})
}

// fixChecksums rewrites in place the checksums of data's footer and of
// every block its handles reach (the metaindex and the index, and the
// blocks they name), to match the bytes there. Handles outside the blocks,
// and blocks that do not decode, are left alone.
func fixChecksums(data []byte) {
	if len(data) < FooterLen {
		return
	}
	dataEnd := uint64(len(data) - FooterLen)
	foot := data[dataEnd:]
	binary.LittleEndian.PutUint32(foot[footerHandlesLen+4:], checksum(foot[:footerHandlesLen+4]))
	ft, err := decodeFooter(foot)
	if err != nil {
		return
	}
	for _, h := range []BlockHandle{ft.metaindex, ft.index} {
		for _, child := range blockHandles(fixBlockChecksum(data, dataEnd, h)) {
			fixBlockChecksum(data, dataEnd, child)
		}
	}
}

// fixBlockChecksum rewrites the checksum of the block h locates in data
// and returns the block's contents, uncompressed; nil when h lies outside
// the blocks, which end at dataEnd, or the contents do not decompress.
func fixBlockChecksum(data []byte, dataEnd uint64, h BlockHandle) []byte {
	if h.Offset > dataEnd || h.Length > dataEnd-h.Offset || blockTrailerLen > dataEnd-h.Offset-h.Length {
		return nil
	}
	n := int(h.Length)
	block := data[h.Offset : h.Offset+h.Length+blockTrailerLen]
	binary.LittleEndian.PutUint32(block[n+1:], checksum(block[:n+1]))
	switch blockType(block[n]) {
	case blockTypeNone:
		return block[:n]
	case blockTypeSnappy:
		out, err := (&Reader{}).decompress(block[:n], h.Offset, nil)
		if err != nil {
			return nil
		}
		return out
	}
	return nil
}

// TestFixChecksums checks that fixChecksums lets a mutated table through
// checksum verification, so FuzzReaderUnchecked's mutations reach the
// decoders: a value changed in a data block reads back changed, where
// without the fix-up the block fails its checksum.
func TestFixChecksums(t *testing.T) {
	data := buildBytes(t, []testEntry{
		{base.MakeInternalKey([]byte("a"), 2, base.KindSet), []byte("value-AAAA")},
		{base.MakeInternalKey([]byte("b"), 1, base.KindSet), []byte("other")},
	}, WriterOptions{FilterPolicy: hashSetPolicy{}, Compression: NoCompression})
	i := bytes.Index(data, []byte("AAAA"))
	if i < 0 {
		t.Fatal("value not found in the table")
	}
	copy(data[i:], "BBBB")
	get := func() ([]byte, error) {
		r, err := openBytes(data, ReaderOptions{Filters: filters(hashSetPolicy{})})
		if err != nil {
			return nil, err
		}
		defer r.Close()
		v, _, _, err := r.Get([]byte("a"), base.SeqNumMax, nil)
		return v, err
	}
	if _, err := get(); !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("mutated table before the fix-up: %v, want a checksum error", err)
	}
	fixChecksums(data)
	if v, err := get(); err != nil || string(v) != "value-BBBB" {
		t.Fatalf("after the fix-up: %q, %v; want \"value-BBBB\"", v, err)
	}
	r, err := openBytes(data, ReaderOptions{Filters: filters(hashSetPolicy{})})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Check(); err != nil {
		t.Fatalf("Check after the fix-up: %v", err)
	}
}

// blockHandles returns the handles that are the values of a block of
// name → handle entries (metaindex, index), as far as it decodes.
func blockHandles(contents []byte) []BlockHandle {
	var it blockIter
	if contents == nil || it.init(contents, nil, "fuzz", 0) != nil {
		return nil
	}
	var hs []BlockHandle
	for ok := it.First(); ok; ok = it.Next() {
		if h, n := decodeHandle(it.val); n > 0 {
			hs = append(hs, h)
		}
	}
	return hs
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
		it, err := r.NewIter(nil)
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
		// A compaction's pass, through its readahead, and a filter
		// built from the keys, as a store under a filter cap builds.
		if err := r.InitIter(it, &IterOptions{Compaction: true}); err != nil {
			requireCorruption(t, err)
		}
		for ok, n := it.First(), 0; ok && n < 10000; ok, n = it.Next(), n+1 {
		}
		if err := it.Close(); err != nil {
			requireCorruption(t, err)
		}
		if _, err := r.BuildFilter(hashSetPolicy{}); err != nil {
			requireCorruption(t, err)
		}
		if err := r.Check(); err != nil {
			requireCorruption(t, err)
		}
		if err := r.VerifyChecksums(); err != nil {
			requireCorruption(t, err)
		}
		if _, err := r.Layout(); err != nil {
			requireCorruption(t, err)
		}
	}
}

func requireCorruption(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, base.ErrCorruption) && !errors.Is(err, ErrNewerFormat) && !isComparerMismatch(err) {
		t.Fatalf("error wraps neither ErrCorruption nor ErrNewerFormat: %v", err)
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
