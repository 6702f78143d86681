package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/testseed"
)

// randomEntries returns n user keys, each with 1-4 versions, in internal
// order. Keys share prefixes so prefix compression has work to do.
func randomEntries(rng *rand.Rand, n int) []testEntry {
	keys := make(map[string]bool)
	for len(keys) < n {
		k := fmt.Sprintf("key%04d", rng.IntN(4*n))
		keys[k+string(rune('a' + rng.IntN(26)))[:rng.IntN(2)]] = true
	}
	sorted := make([]string, 0, n)
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	var entries []testEntry
	for _, k := range sorted {
		seq := base.SeqNum(100 + rng.IntN(50))
		for v := rng.IntN(4); v >= 0; v-- {
			kind := base.KindSet
			if rng.IntN(5) == 0 {
				kind = base.KindDelete
			}
			val := []byte(nil)
			if kind == base.KindSet {
				val = fmt.Appendf(nil, "%s@%d/%s", k, seq, bytes.Repeat([]byte{'v'}, rng.IntN(30)))
			}
			entries = append(entries, testEntry{base.MakeInternalKey([]byte(k), seq, kind), val})
			seq -= base.SeqNum(1 + rng.IntN(20))
		}
	}
	return entries
}

// modelGet is what Get must return over entries.
// A range tombstone visible at seq that covers key and is newer than the
// point version found comes back as a RANGEDEL entry with no value, as
// Reader.Get reports it.
func modelGet(entries []testEntry, key []byte, seq base.SeqNum) (testEntry, bool) {
	var point testEntry
	found := false
	for _, e := range entries {
		if !e.isRangeDel() && bytes.Equal(e.key.UserKey, key) && e.key.Visible(seq) {
			point, found = e, true
			break
		}
	}
	var tseq base.SeqNum
	covered := false
	for _, e := range entries {
		t := e.tombstone()
		if e.isRangeDel() && e.key.Visible(seq) && t.Seq >= tseq &&
			bytes.Compare(t.Start, key) <= 0 && bytes.Compare(key, t.End) < 0 {
			tseq, covered = t.Seq, true
		}
	}
	if covered && (!found || point.key.SeqNum() < tseq) {
		return testEntry{key: base.MakeInternalKey(key, tseq, base.KindRangeDelete)}, true
	}
	return point, found
}

func seedRNG(t *testing.T) *rand.Rand {
	seed := testseed.Seed(t)
	return rand.New(rand.NewPCG(seed, seed))
}

// TestReader_Get_Model checks Get against a model at random seqnums, for
// present and absent keys, with and without filters, with small blocks so
// that versions straddle blocks.
func TestReader_Get_Model(t *testing.T) {
	rng := seedRNG(t)
	entries := randomEntries(rng, 300)
	for _, policy := range []bloompolicy.FilterPolicy{nil, hashSetPolicy{}, alwaysPolicy{}} {
		for _, blockSize := range []int{64, 512, 4096} {
			opts := WriterOptions{BlockSize: blockSize, BlockRestartInterval: 1 + rng.IntN(16), FilterPolicy: policy}
			data := buildBytes(t, entries, opts)
			r, err := openBytes(data, ReaderOptions{Cache: NewCache(1 << 20), Filters: filters(policy)})
			if err != nil {
				t.Fatal(err)
			}
			var st LookupStats
			for i := 0; i < 2000; i++ {
				key := entries[rng.IntN(len(entries))].key.UserKey
				if rng.IntN(3) == 0 {
					key = append(slices.Clone(key), 'x')
				}
				seq := base.SeqNum(rng.IntN(160))
				want, wantFound := modelGet(entries, key, seq)
				v, kind, found, err := r.Get(key, seq, &st)
				if err != nil || found != wantFound || found && (kind != want.key.Kind() || !bytes.Equal(v, want.value)) {
					t.Fatalf("policy %v block %d: Get(%s, %d) = %q %v %v %v, want %q %v %v",
						policy, blockSize, key, seq, v, kind, found, err, want.value, want.key.Kind(), wantFound)
				}
			}
			if policy == nil && st.FilterNegatives+st.FilterTruePositives+st.FilterFalsePositives != 0 {
				t.Fatalf("verdicts counted without a filter: %+v", st)
			}
			if policy != nil && st.FilterNegatives+st.FilterTruePositives+st.FilterFalsePositives < st.BlockReads {
				t.Fatalf("block reads without verdicts: %+v", st)
			}
			if err := r.Check(); err != nil {
				t.Fatal(err)
			}
			r.Close()
		}
	}
}

// TestReader_Iter_Model drives iterators with random bounds and moves over
// two tables and compares each position with a model. Half the rounds use
// a fresh iterator from NewIter, half one Iter that Reader.InitIter points
// at either table again and again, so nothing may carry over from its last
// table, bounds or position. The seeks find their block through the
// index's in-memory key prefixes under a bytewise comparer, and by a
// binary search of the index block under opaqueBytewise.
func TestReader_Iter_Model(t *testing.T) {
	for _, cmp := range []*base.Comparer{base.DefaultComparer, opaqueBytewise} {
		t.Run(fmt.Sprintf("prefixes=%v", cmp.Bytewise()), func(t *testing.T) { testIterModel(t, cmp) })
	}
}

// opaqueBytewise orders keys as base.DefaultComparer does, through a
// function that Comparer.Bytewise does not recognize: readers then keep
// no in-memory index key prefixes.
var opaqueBytewise = func() *base.Comparer {
	c := *base.DefaultComparer
	c.Compare = func(a, b []byte) int { return bytes.Compare(a, b) }
	return &c
}()

func testIterModel(t *testing.T, cmp *base.Comparer) {
	rng := seedRNG(t)
	var tables [2]struct {
		entries []testEntry
		r       *Reader
	}
	for i := range tables {
		tables[i].entries = randomEntries(rng, 200)
		data := buildBytes(t, tables[i].entries, WriterOptions{BlockSize: 128, BlockRestartInterval: 4, Comparer: cmp})
		tables[i].r = openTable(t, data, ReaderOptions{Comparer: cmp})
		if (tables[i].r.indexPrefixes != nil) != cmp.Bytewise() {
			t.Fatalf("index prefixes %v under a comparer with Bytewise %v", tables[i].r.indexPrefixes != nil, cmp.Bytewise())
		}
	}
	var kept Iter
	for round := 0; round < 100; round++ {
		tb := tables[rng.IntN(2)]
		randKey := func() []byte {
			k := tb.entries[rng.IntN(len(tb.entries))].key.UserKey
			if rng.IntN(2) == 0 {
				return append(slices.Clone(k), byte(rng.IntN(256)))
			}
			return k
		}
		var lower, upper []byte
		if rng.IntN(2) == 0 {
			lower = randKey()
		}
		if rng.IntN(2) == 0 {
			upper = randKey()
		}
		m := newIterModel(tb.entries, lower, upper)
		var it InternalIterator = &kept
		var err error
		if rng.IntN(2) == 0 {
			err = tb.r.InitIter(&kept, &IterOptions{LowerBound: lower, UpperBound: upper})
		} else {
			it, err = tb.r.NewIter(&IterOptions{LowerBound: lower, UpperBound: upper})
		}
		if err != nil {
			t.Fatal(err)
		}
		for step := 0; step < 100; step++ {
			op, got, want := m.step(rng, it, randKey)
			if got != want {
				t.Fatalf("round %d, bounds [%q, %q): %s gave %s, want %s", round, lower, upper, op, got, want)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// iterModel is the expected behaviour of a bounded iterator: a position in
// the entries within bounds.
type iterModel struct {
	entries []testEntry
	pos     int // -1: invalid
}

func newIterModel(all []testEntry, lower, upper []byte) *iterModel {
	var in []testEntry
	for _, e := range all {
		if (lower == nil || bytes.Compare(e.key.UserKey, lower) >= 0) && (upper == nil || bytes.Compare(e.key.UserKey, upper) < 0) {
			in = append(in, e)
		}
	}
	return &iterModel{entries: in, pos: -1}
}

// step applies one random move to it and to the model and returns the move
// and both resulting positions, formatted.
func (m *iterModel) step(rng *rand.Rand, it base.InternalIterator, randKey func() []byte) (op, got, want string) {
	n := len(m.entries)
	switch rng.IntN(6) {
	case 0:
		op, m.pos = "First", min(0, n-1)
		it.First()
	case 1:
		op, m.pos = "Last", n-1
		it.Last()
	case 2:
		op = "Next"
		if m.pos >= 0 {
			m.pos++
		}
		it.Next()
	case 3:
		op = "Prev"
		if m.pos >= 0 {
			m.pos--
		}
		it.Prev()
	case 4:
		k := randKey()
		op = fmt.Sprintf("SeekGE(%q)", k)
		m.pos = slices.IndexFunc(m.entries, func(e testEntry) bool { return bytes.Compare(e.key.UserKey, k) >= 0 })
		it.SeekGE(k)
	case 5:
		k := randKey()
		op = fmt.Sprintf("SeekLT(%q)", k)
		m.pos = -1
		for i, e := range m.entries {
			if bytes.Compare(e.key.UserKey, k) < 0 {
				m.pos = i
			}
		}
		it.SeekLT(k)
	}
	if m.pos >= n {
		m.pos = -1
	}
	want = "invalid"
	if m.pos >= 0 {
		want = fmt.Sprintf("%s=%q", m.entries[m.pos].key, m.entries[m.pos].value)
	}
	got = "invalid"
	if it.Valid() {
		got = fmt.Sprintf("%s=%q", it.Key(), it.Value())
	}
	if it.Error() != nil {
		got = it.Error().Error()
	}
	return op, got, want
}

// TestReader_Get_UnknownPolicy reads a filtered table with no policy, with
// another policy, and with its own, and gets the same answers.
func TestReader_Get_UnknownPolicy(t *testing.T) {
	rng := seedRNG(t)
	entries := randomEntries(rng, 100)
	data := buildBytes(t, entries, WriterOptions{BlockSize: 256, FilterPolicy: hashSetPolicy{}})
	for _, fs := range []map[string]bloompolicy.FilterPolicy{nil, filters(alwaysPolicy{}), filters(hashSetPolicy{})} {
		r, err := openBytes(data, ReaderOptions{Filters: fs})
		if err != nil {
			t.Fatal(err)
		}
		var st LookupStats
		for _, e := range entries {
			want, _ := modelGet(entries, e.key.UserKey, e.key.SeqNum())
			v, _, found, err := r.Get(e.key.UserKey, e.key.SeqNum(), &st)
			if err != nil || !found || !bytes.Equal(v, want.value) {
				t.Fatalf("Get(%s) = %q %v %v", e.key, v, found, err)
			}
		}
		verdicts := st.FilterNegatives + st.FilterTruePositives + st.FilterFalsePositives
		if usable := fs[hashSetPolicy{}.Name()] != nil; usable != (verdicts > 0) {
			t.Fatalf("filters %v: stats %+v", fs, st)
		}
		r.Close()
	}
}

// TestReader_ComparerMismatch refuses a table ordered by another comparer.
func TestReader_ComparerMismatch(t *testing.T) {
	data := buildBytes(t, []testEntry{{base.MakeInternalKey([]byte("a"), 1, base.KindSet), nil}}, WriterOptions{})
	other := *base.DefaultComparer
	other.Name = "other"
	_, err := openBytes(data, ReaderOptions{Comparer: &other})
	if err == nil || errors.Is(err, base.ErrCorruption) {
		t.Fatalf("got %v, want a comparer mismatch error", err)
	}
}

// TestReader_Get_AbsentAllocs checks that a lookup the filter rules out,
// and one served from the cache, allocate nothing.
func TestReader_Get_AbsentAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates, and makes sync.Pool drop the lookup's block iterator at random")
	}
	rng := seedRNG(t)
	entries := randomEntries(rng, 500)
	data := buildBytes(t, entries, WriterOptions{FilterPolicy: hashSetPolicy{}})
	r := openTable(t, data, ReaderOptions{Cache: NewCache(1 << 20), Filters: filters(hashSetPolicy{})})
	var st LookupStats
	absent, present := []byte("key0001zz"), entries[len(entries)/2].key.UserKey
	r.Get(present, base.SeqNumMax, &st) // warm the cache
	for _, key := range [][]byte{absent, present} {
		if n := testing.AllocsPerRun(100, func() { r.Get(key, base.SeqNumMax, &st) }); n != 0 {
			t.Errorf("Get(%s) allocates %v times", key, n)
		}
	}
}

// TestReader_UseAfterClose checks that an iterator refuses to move once
// closed, and that a Reader refuses a second Close.
func TestReader_UseAfterClose(t *testing.T) {
	data := buildBytes(t, []testEntry{{base.MakeInternalKey([]byte("a"), 1, base.KindSet), []byte("1")}}, WriterOptions{})
	r, err := openBytes(data, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.First() {
		t.Fatalf("First on an open iterator: %v", it.Error())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if it.First() || it.Valid() || it.Error() == nil || !strings.Contains(it.Error().Error(), "used after Close") {
		t.Fatalf("First after Close: valid %v, error %v", it.Valid(), it.Error())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err == nil || !strings.Contains(err.Error(), "already closed") {
		t.Fatalf("second Close = %v, want an already-closed error", err)
	}
}

// TestReader_MethodsAfterClose checks every method of a closed Reader
// that reads the table, and an iterator left open over it: each returns
// an error wrapping errReaderClosed, as Pebble's reader does, where they
// used to dereference the closed file. What the Reader keeps in memory
// stays readable, and a filter built before Close is not held after it,
// so its cache reservation does not outlive the Reader.
func TestReader_MethodsAfterClose(t *testing.T) {
	var entries []testEntry
	for i := range 200 {
		entries = append(entries, testEntry{base.MakeInternalKey(fmt.Appendf(nil, "k%04d", i), 1, base.KindSet), []byte("v")})
	}
	data := buildBytes(t, entries, WriterOptions{BlockSize: 256, FilterPolicy: hashSetPolicy{}})
	cache := NewCache(1 << 20)
	r, err := openBytes(data, ReaderOptions{Cache: cache, Filters: map[string]bloompolicy.FilterPolicy{hashSetPolicy{}.Name(): hashSetPolicy{}}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.First() {
		t.Fatalf("First: %v", it.Error())
	}
	built, err := r.BuildFilter(hashSetPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	wantClosed := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, errReaderClosed) || !strings.Contains(err.Error(), "t.sst") {
			t.Errorf("%s after Close = %v, want an error wrapping %q naming the file", what, err, errReaderClosed)
		}
	}
	n := 0
	for it.Next() {
		n++
	}
	if n >= len(entries)-1 {
		t.Errorf("an iterator over a closed Reader stepped over all %d keys", n)
	}
	wantClosed("an open iterator's Next", it.Error())
	if it.SeekGE([]byte("k0000")) {
		t.Error("SeekGE of a stopped iterator found a key")
	}
	wantClosed("an open iterator's Close", it.Close())
	_, _, found, err := r.Get([]byte("k0001"), base.SeqNumMax, nil)
	if found {
		t.Error("Get after Close found a key")
	}
	wantClosed("Get", err)
	_, err = r.NewIter(nil)
	wantClosed("NewIter", err)
	var fresh Iter
	wantClosed("InitIter", r.InitIter(&fresh, nil))
	wantClosed("Check", r.Check())
	wantClosed("VerifyChecksums", r.VerifyChecksums())
	_, err = r.Layout()
	wantClosed("Layout", err)
	_, err = r.LoadFilter()
	wantClosed("LoadFilter", err)
	_, err = r.BuildFilter(hashSetPolicy{})
	wantClosed("BuildFilter", err)
	_, err = r.EstimateDiskUsage([]byte("k0000"), []byte("k0100"))
	wantClosed("EstimateDiskUsage", err)
	if r.HoldFilter(built) || r.FilterHeld() {
		t.Error("HoldFilter after Close held the filter")
	}
	if m := cache.Metrics(); m.Reserved != 0 {
		t.Errorf("%d bytes still reserved in the cache after Close", m.Reserved)
	}
	if r.Properties().NumEntries != uint64(len(entries)) {
		t.Errorf("Properties after Close: %d entries", r.Properties().NumEntries)
	}
	if lo, hi := r.Bounds(); string(lo.UserKey) != "k0000" || string(hi.UserKey) != "k0199" {
		t.Errorf("Bounds after Close: %s, %s", lo, hi)
	}
}

// TestReader_VerifyChecksums checks a table of 3 MiB, in reads of up to
// verifyReadBytes: whole, it passes; with a byte flipped in a data block
// or in a block's trailer, the first of each read included, it fails
// with an error that wraps ErrCorruption and names the block's offset,
// though the table opens.
func TestReader_VerifyChecksums(t *testing.T) {
	rng := seedRNG(t)
	var entries []testEntry
	for i := range 3000 {
		v := make([]byte, 1<<10)
		for j := range v {
			v[j] = byte(rng.IntN(256)) // incompressible
		}
		entries = append(entries, testEntry{base.MakeInternalKey(fmt.Appendf(nil, "key%05d", i), 1, base.KindSet), v})
	}
	data := buildBytes(t, entries, WriterOptions{BlockSize: 16 << 10, Compression: SnappyCompression})
	r := openTable(t, data, ReaderOptions{})
	if err := r.VerifyChecksums(); err != nil {
		t.Fatalf("a whole table: %v", err)
	}
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 2*verifyReadBytes {
		t.Fatalf("a table of %d bytes takes fewer than 3 reads", len(data))
	}
	checked := 0
	for i, d := range l.Data {
		h := d.Handle
		for _, off := range []uint64{h.Offset, h.Offset + h.Length/2, h.Offset + h.Length, h.Offset + h.Length + blockTrailerLen - 1} {
			if i%7 != 0 && off != h.Offset { // every block's first byte, and all of a sample
				continue
			}
			damaged := bytes.Clone(data)
			damaged[off] ^= 0x10
			dr, err := openBytes(damaged, ReaderOptions{})
			if err != nil {
				t.Fatalf("byte %d of block %d: the table does not open: %v", off, i, err)
			}
			err = dr.VerifyChecksums()
			if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", h.Offset)) {
				t.Fatalf("byte %d of block %s: %v, want corruption at offset %d", off, h, err, h.Offset)
			}
			dr.Close()
			checked++
		}
	}
	if checked < len(l.Data) {
		t.Fatalf("%d damaged copies checked for %d blocks", checked, len(l.Data))
	}
	r.Close()
}
