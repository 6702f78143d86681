package sstable

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// openSeqTable writes n keys "k000".. at sequence number seq, across
// several blocks, and a range tombstone [x, z), to t.sst of a new MemFS,
// and opens it with opts.
func openSeqTable(t *testing.T, seq SeqNum, opts ReaderOptions) (*Reader, error) {
	t.Helper()
	w, fs := newMemWriter(t, WriterOptions{BlockSize: 64})
	for i := range 40 {
		if err := w.Add(MakeInternalKey([]byte(fmt.Sprintf("k%03d", i)), seq, KindSet), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AddRangeDel(RangeTombstone{Start: []byte("x"), End: []byte("z"), Seq: seq}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open("t.sst")
	if err != nil {
		t.Fatal(err)
	}
	return NewReader(f, opts)
}

// TestReader_GlobalSeqNum checks that a table written at sequence number 0
// and read with a global one shows it everywhere: keys forward and
// backward, Get's visibility, range tombstones, bounds, properties, and
// that Check still passes.
func TestReader_GlobalSeqNum(t *testing.T) {
	const g = 77
	r, err := openSeqTable(t, 0, ReaderOptions{GlobalSeqNum: g})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	it, err := r.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if it.Key().SeqNum() != g {
			t.Fatalf("forward: key %s, want seqnum %d", it.Key(), g)
		}
		n++
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		if it.Key().SeqNum() != g {
			t.Fatalf("backward: key %s, want seqnum %d", it.Key(), g)
		}
		n++
	}
	if ok := it.SeekGE([]byte("k020")); !ok || it.Key().SeqNum() != g {
		t.Fatalf("SeekGE: %v %s", ok, it.Key())
	}
	it.Close()
	if n != 80 {
		t.Fatalf("%d keys visited, want 80", n)
	}
	if _, _, found, err := r.Get([]byte("k010"), g-1, nil); err != nil || found {
		t.Fatalf("Get below the global seqnum: found %v, err %v; want not found", found, err)
	}
	if _, kind, found, err := r.Get([]byte("k010"), g, nil); err != nil || !found || kind != KindSet {
		t.Fatalf("Get at the global seqnum: found %v kind %v err %v", found, kind, err)
	}
	if ts := r.RangeDels(); len(ts) != 1 || ts[0].Seq != g {
		t.Fatalf("range tombstones %v, want one at seqnum %d", ts, g)
	}
	smallest, largest := r.Bounds()
	p := r.Properties()
	if smallest.SeqNum() != g || p.SmallestSeqNum != g || p.LargestSeqNum != g {
		t.Fatalf("bounds %s-%s, properties seqnums %d-%d; want %d", smallest, largest, p.SmallestSeqNum, p.LargestSeqNum, g)
	}
	if err := r.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

// TestReader_GlobalSeqNum_Refused checks that a table written with
// sequence numbers of its own cannot take a global one.
func TestReader_GlobalSeqNum_Refused(t *testing.T) {
	_, err := openSeqTable(t, 5, ReaderOptions{GlobalSeqNum: 9})
	if err == nil || !strings.Contains(err.Error(), "global sequence number") {
		t.Fatalf("err = %v, want a refusal naming the global sequence number", err)
	}
	if r, err := openSeqTable(t, 5, ReaderOptions{}); err != nil {
		t.Fatal(err)
	} else {
		if _, _, found, _ := r.Get([]byte("k001"), base.SeqNumMax, nil); !found {
			t.Fatal("k001 missing without a global seqnum")
		}
		r.Close()
	}
}

// TestReader_GlobalSeqNum_AboveMax: a global sequence number above
// SeqNumMax, which a key's trailer cannot hold, is refused rather than
// wrapped into another.
func TestReader_GlobalSeqNum_AboveMax(t *testing.T) {
	for _, g := range []SeqNum{SeqNumMax + 1, 1 << 60, math.MaxUint64} {
		r, err := openSeqTable(t, 0, ReaderOptions{GlobalSeqNum: g})
		if err == nil {
			r.Close()
			t.Fatalf("global sequence number %d: opened", g)
		}
		if !strings.Contains(err.Error(), "above the largest") {
			t.Fatalf("global sequence number %d: %v, want a refusal naming the largest", g, err)
		}
	}
	r, err := openSeqTable(t, 0, ReaderOptions{GlobalSeqNum: SeqNumMax})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, _, found, _ := r.Get([]byte("k001"), SeqNumMax, nil); !found {
		t.Fatal("k001 missing at global sequence number SeqNumMax")
	}
}

// FuzzReaderGlobalSeqNum opens arbitrary bytes as a table with a global
// sequence number: a table written at 0 shows it on every key and bounds,
// any other is refused; damage is corruption, never a panic. The index
// estimate is asked too.
func FuzzReaderGlobalSeqNum(f *testing.F) {
	var entries []testEntry
	for i := range 40 {
		entries = append(entries, testEntry{MakeInternalKey([]byte(fmt.Sprintf("k%03d", i)), 0, KindSet), []byte("v")})
	}
	f.Add(buildBytes(f, entries, WriterOptions{BlockSize: 64, Compression: NoCompression}))
	f.Add(buildBytes(f, entries[:1], WriterOptions{}))
	addGoldenSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		const g = 9
		r, err := openBytes(data, ReaderOptions{GlobalSeqNum: g})
		if err != nil {
			if !strings.Contains(err.Error(), "global sequence number") {
				requireCorruption(t, err)
			}
			return
		}
		defer r.Close()
		it, err := r.NewIter(nil)
		if err != nil {
			requireCorruption(t, err)
			return
		}
		for ok := it.First(); ok; ok = it.Next() {
			if it.Key().SeqNum() != g {
				t.Fatalf("key %s without the global seqnum", it.Key())
			}
		}
		if err := it.Close(); err != nil {
			requireCorruption(t, err)
		}
		if _, err := r.EstimateDiskUsage([]byte("a"), []byte("z")); err != nil {
			requireCorruption(t, err)
		}
		if err := r.Check(); err != nil {
			requireCorruption(t, err)
		}
	})
}
