package sstable

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sort"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// rewriteIndex returns a copy of a table whose index keys are replaced by
// newKey(i, old), with checksums and footer to match.
func rewriteIndex(t *testing.T, data []byte, newKey func(i int, old base.InternalKey) base.InternalKey) []byte {
	t.Helper()
	r := openTable(t, data, ReaderOptions{})
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	index := blockWriter{restartInterval: 1}
	for i, d := range l.Data {
		index.add(newKey(i, d.Separator).AppendEncoded(nil), appendHandle(nil, d.Handle))
	}
	out := append([]byte(nil), data[:l.Index.Offset]...)
	contents := index.finish()
	out = append(out, contents...)
	out = append(out, byte(blockTypeNone))
	out = binary.LittleEndian.AppendUint32(out, checksum(out[len(out)-len(contents)-1:]))
	ft := footer{metaindex: l.Footer.Metaindex, index: BlockHandle{l.Index.Offset, uint64(len(contents))}, version: FormatVersion}
	return append(out, ft.encode()...)
}

// TestReader_Get_ContinuesIntoNextBlock reads a table whose first index
// key, k#6, lies between the blocks (k#9 k#8 | k#5 k#3): a valid separator
// that this package's writer would not choose. A lookup of k at seq 7 lands
// on block 0, finds only newer versions there, and must go on to block 1,
// asking block 1's filter too.
func TestReader_Get_ContinuesIntoNextBlock(t *testing.T) {
	var entries []testEntry
	for _, s := range []string{"j#1,SET:j1", "k#9,SET:k9", "k#8,SET:k8", "k#5,SET:k5", "k#3,SET:k3", "l#2,SET:l2"} {
		e, err := parseEntry(s)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	for _, policy := range []string{"hashset", "always", "none"} {
		p := ddPolicy(t, policy)
		data := buildBytes(t, entries, WriterOptions{BlockSize: 40, FilterPolicy: p})
		data = rewriteIndex(t, data, func(i int, old base.InternalKey) base.InternalKey {
			if i == 0 {
				if old.String() != "k#8,SET" {
					t.Fatalf("block 0 ends at %s, want k#8,SET", old)
				}
				return base.MakeInternalKey([]byte("k"), 6, base.KindSet)
			}
			return old
		})
		r, err := openBytes(data, ReaderOptions{Filters: filters(p)})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Check(); err != nil {
			t.Fatalf("%s: the rewritten table does not check: %v", policy, err)
		}
		var st LookupStats
		v, _, found, err := r.Get([]byte("k"), 7, &st)
		if err != nil || !found || string(v) != "k5" {
			t.Fatalf("%s: Get(k, 7) = %q %v %v, want k5", policy, v, found, err)
		}
		want := LookupStats{TablesConsidered: 1, BlockReads: 2, BlockCacheMisses: 2}
		if p != nil {
			want.FilterTruePositives = 2 // both blocks hold k
		}
		if st != want {
			t.Fatalf("%s: stats %+v, want %+v", policy, st, want)
		}
		r.Close()
	}
}

// TestReader_Get_ContinuationFilterNegative is the same with no k in block
// 1 (k#9 k#8 | l#2 m#1): block 1's filter answers for the continuation.
func TestReader_Get_ContinuationFilterNegative(t *testing.T) {
	var entries []testEntry
	for _, s := range []string{"j#1,SET:j1", "k#9,SET:k9", "k#8,SET:k8", "l#2,SET:l2", "m#1,SET:m1"} {
		e, err := parseEntry(s)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	data := buildBytes(t, entries, WriterOptions{BlockSize: 40, FilterPolicy: hashSetPolicy{}})
	data = rewriteIndex(t, data, func(i int, old base.InternalKey) base.InternalKey {
		if i == 0 {
			return base.MakeInternalKey([]byte("k"), 6, base.KindSet)
		}
		return old
	})
	r := openTable(t, data, ReaderOptions{Filters: filters(hashSetPolicy{})})
	var st LookupStats
	if _, _, found, err := r.Get([]byte("k"), 7, &st); found || err != nil {
		t.Fatalf("Get(k, 7) found=%v err=%v", found, err)
	}
	if want := (LookupStats{TablesConsidered: 1, FilterTruePositives: 1, FilterNegatives: 1, BlockReads: 1, BlockCacheMisses: 1}); st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
}

// TestLowerBound compares the branch-free search with sort.Search.
func TestLowerBound(t *testing.T) {
	rng := seedRNG(t)
	for round := 0; round < 2000; round++ {
		ps := make([]uint64, rng.IntN(40))
		for i := range ps {
			ps[i] = uint64(rng.IntN(30))
		}
		slices.Sort(ps)
		p := uint64(rng.IntN(32))
		want := sort.Search(len(ps), func(i int) bool { return ps[i] >= p })
		if got := lowerBound(ps, p); got != want {
			t.Fatalf("lowerBound(%v, %d) = %d, want %d", ps, p, got, want)
		}
	}
}

// reverseComparer orders keys in reverse bytewise order and never shortens
// separators: a comparer other than the default, whose lookups take the
// index search that does not use key prefixes.
var reverseComparer = &base.Comparer{
	Compare:   func(a, b []byte) int { return bytes.Compare(b, a) },
	Separator: func(dst, a, _ []byte) []byte { return append(dst, a...) },
	Successor: func(dst, a []byte) []byte { return append(dst, a...) },
	Name:      "test.reverse",
}

// TestReader_Get_CustomComparer checks lookups and iteration under a
// reverse ordering.
func TestReader_Get_CustomComparer(t *testing.T) {
	rng := seedRNG(t)
	entries := randomEntries(rng, 200)
	slices.SortStableFunc(entries, func(a, b testEntry) int {
		return reverseComparer.Compare(a.key.UserKey, b.key.UserKey) // versions keep their order
	})
	data := buildBytes(t, entries, WriterOptions{BlockSize: 128, Comparer: reverseComparer, FilterPolicy: hashSetPolicy{}})
	r := openTable(t, data, ReaderOptions{Comparer: reverseComparer, Filters: filters(hashSetPolicy{})})
	if r.indexPrefixes != nil {
		t.Fatal("key prefixes kept under a non-bytewise comparer")
	}
	for _, e := range entries {
		for _, seq := range []base.SeqNum{base.SeqNumMax, e.key.SeqNum(), e.key.SeqNum() - 1} {
			want, wantFound := modelGet(entries, e.key.UserKey, seq)
			v, _, found, err := r.Get(e.key.UserKey, seq, nil)
			if err != nil || found != wantFound || !bytes.Equal(v, want.value) {
				t.Fatalf("Get(%s, %d) = %q %v %v", e.key.UserKey, seq, v, found, err)
			}
		}
	}
	if err := verifyIter(r, entries, true); err != nil {
		t.Fatal(err)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestReader_Get_SeqAboveMax looks keys up at sequence numbers above
// SeqNumMax, which every version is at or below: Get must return the
// newest version, as at SeqNumMax (and as memtable.MemTable.Get does).
// A sequence number that does not fit the trailer's 56 bits once sent
// the index search past the key's blocks, to "not found".
func TestReader_Get_SeqAboveMax(t *testing.T) {
	var entries []testEntry
	for i := range 20 {
		entries = append(entries, testEntry{MakeInternalKey([]byte("k"), SeqNum(100-i), KindSet), []byte{byte(i)}})
	}
	entries = append(entries, testEntry{MakeInternalKey([]byte("l"), 5, KindSet), []byte("l")})
	for _, policy := range testPolicies(t) {
		data := buildBytes(t, entries, WriterOptions{BlockSize: 1, FilterPolicy: policy})
		r := openTable(t, data, ReaderOptions{Filters: filters(policy)})
		for _, seq := range []SeqNum{SeqNumMax + 1, 1 << 60, 1<<64 - 1 - 255} {
			for _, want := range []testEntry{entries[0], entries[len(entries)-1]} {
				v, kind, found, err := r.Get(want.key.UserKey, seq, nil)
				if err != nil || !found || kind != KindSet || !bytes.Equal(v, want.value) {
					t.Errorf("%s: Get(%s, %d) = %q %v %v %v, want %q", policyName(policy), want.key.UserKey, seq, v, kind, found, err, want.value)
				}
			}
		}
	}
}
