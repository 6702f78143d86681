package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cespare/xxhash/v2"
)

// textbookBitsPerKey1pc is -log2(0.01)/ln 2: the bits per key of an ideal
// Bloom filter at a 1% false-positive rate.
var textbookBitsPerKey1pc = -math.Log2(0.01) / math.Ln2

// hashedKey returns the i-th key of a set of random-looking 16-byte keys,
// so that neighbours in key order share few prefix bytes.
func hashedKey(i int) []byte {
	return fmt.Appendf(nil, "%016x", xxhash.Sum64(binary.LittleEndian.AppendUint64(nil, uint64(i))))
}

// fortyByteEntries returns entries for the keys hashedKey(0..n-1) of about
// 40 bytes each: a 16-byte user key, its 8-byte trailer, a 13-byte value
// and 3 header bytes (a little less once prefix-compressed).
func fortyByteEntries(n int) []testEntry {
	entries := make([]testEntry, n)
	for i := range entries {
		entries[i] = testEntry{base.MakeInternalKey(hashedKey(i), 1, base.KindSet), fmt.Appendf(nil, "value-%07d", i)}
	}
	slices.SortFunc(entries, func(a, b testEntry) int { return bytes.Compare(a.key.UserKey, b.key.UserKey) })
	return entries
}

// TestFilterBlock_BitsPerKey measures the whole filter block (filters,
// lengths, offset and trailer) per key for 4 KiB blocks of ~40-byte
// entries under bloompolicy.New(0.01): it must stay within 1.15 × the
// textbook 9.585 bits per key. It also measures the false-positive rate
// that lookups of absent keys observe.
func TestFilterBlock_BitsPerKey(t *testing.T) {
	const n = 20000
	entries := fortyByteEntries(n)
	bloom := newBloom(t, 0.01)
	data := buildBytes(t, entries, WriterOptions{FilterPolicy: bloom})
	r := openTable(t, data, ReaderOptions{Filters: filters(bloom)})
	p := r.Properties()
	perBlock := float64(n) / float64(p.NumDataBlocks)
	bitsPerKey := 8 * float64(p.FilterSize) / n
	limit := 1.15 * textbookBitsPerKey1pc
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	filterBytes := 0
	for _, d := range l.Data {
		filterBytes += len(d.Filter)
	}
	overhead := 8 * float64(int(p.FilterSize)-filterBytes) / n
	t.Logf("%d keys, %.1f per block: filter block %.3f bits/key (filters %.3f, lengths+offset+trailer %.3f); limit %.3f",
		n, perBlock, bitsPerKey, bitsPerKey-overhead, overhead, limit)
	if perBlock < 90 || perBlock > 120 {
		t.Fatalf("%.1f entries per block: the entries are not ~40 bytes", perBlock)
	}
	if bitsPerKey > limit {
		t.Fatalf("filter block costs %.3f bits/key, over %.3f", bitsPerKey, limit)
	}
	if overhead > 0.2 {
		t.Fatalf("filter bookkeeping costs %.3f bits/key", overhead)
	}

	var st LookupStats
	for i := 0; i < 2*n; i++ {
		k := hashedKey(n + i)
		if _, _, found, err := r.Get(k, base.SeqNumMax, &st); found || err != nil {
			t.Fatalf("Get(%s) found=%v err=%v", k, found, err)
		}
	}
	fpr := float64(st.FilterFalsePositives) / float64(st.FilterFalsePositives+st.FilterNegatives)
	t.Logf("absent lookups: %d, observed FPR %.4f", 2*n, fpr)
	if fpr > 0.015 {
		t.Fatalf("observed FPR %.4f, target 0.01", fpr)
	}
}
