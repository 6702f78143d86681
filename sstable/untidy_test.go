package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// untidyLens are key lengths at the edges of the varint widths (127/128,
// 16383/16384) and of a byte (255/256), up to kv's largest key.
var untidyLens = []int{0, 1, 2, 127, 128, 129, 255, 256, 257, 16383, 16384, 16385, 64 << 10}

// untidyKeys returns about n distinct user keys drawn from a few long
// bases of 0x00, 0xff and random bytes: prefixes of the bases at the
// lengths above and at random ones, and such prefixes followed by 0x00 or
// 0xff, so that keys are prefixes of one another and share long runs.
func untidyKeys(rng *rand.Rand, n int) [][]byte {
	var bases [][]byte
	for range 3 {
		b := make([]byte, 64<<10)
		for i := range b {
			switch rng.IntN(4) {
			case 0:
				b[i] = 0x00
			case 1:
				b[i] = 0xff
			default:
				b[i] = byte(rng.IntN(256))
			}
		}
		bases = append(bases, b)
	}
	set := map[string]bool{}
	for len(set) < n {
		b := bases[rng.IntN(len(bases))]
		l := untidyLens[rng.IntN(len(untidyLens))]
		if rng.IntN(2) == 0 {
			l = rng.IntN(600)
		}
		k := slices.Clone(b[:l])
		switch rng.IntN(4) {
		case 0:
			k = append(k, 0x00)
		case 1:
			k = append(k, 0xff)
		}
		set[string(k)] = true
	}
	keys := make([][]byte, 0, len(set))
	for k := range set {
		keys = append(keys, []byte(k))
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys
}

// untidyValue returns a value of 0 bytes, a few, about blockSize, or
// several blocks, either random (incompressible) or repetitive.
func untidyValue(rng *rand.Rand, blockSize int) []byte {
	var n int
	switch rng.IntN(10) {
	case 0:
		return nil
	case 1, 2, 3, 4, 5:
		n = rng.IntN(20)
	case 6:
		n = max(0, blockSize-8+rng.IntN(16))
	case 7, 8:
		n = rng.IntN(3 * blockSize)
	default:
		n = 64<<10 + rng.IntN(16)
	}
	v := make([]byte, n)
	if rng.IntN(2) == 0 {
		for i := range v {
			v[i] = byte(rng.IntN(256))
		}
	} else {
		for i := range v {
			v[i] = byte('a' + i%3)
		}
	}
	return v
}

// untidyEntries returns the versions of keys in internal order: most keys
// have 1 to 3, some have dozens, so that one key's versions span blocks.
func untidyEntries(rng *rand.Rand, keys [][]byte, blockSize int) []testEntry {
	var entries []testEntry
	for _, k := range keys {
		n := 1 + rng.IntN(3)
		if rng.IntN(10) == 0 {
			n = 10 + rng.IntN(40)
		}
		seq := base.SeqNum(1000)
		for range n {
			kind, val := base.KindSet, untidyValue(rng, blockSize)
			if rng.IntN(5) == 0 {
				kind, val = base.KindDelete, nil
			}
			entries = append(entries, testEntry{base.MakeInternalKey(k, seq, kind), val})
			seq -= base.SeqNum(1 + rng.IntN(20))
		}
	}
	return entries
}

// untidySplits are Splits that keep the contract on any bytes: the whole
// key, nothing, a fixed length, and everything up to the first 0x00.
var untidySplits = []*base.Comparer{
	nil,
	base.NewSplitComparer("empty", func([]byte) int { return 0 }),
	base.NewSplitComparer("first200", func(k []byte) int { return min(len(k), 200) }),
	base.NewSplitComparer("to-nul", func(k []byte) int {
		if i := bytes.IndexByte(k, 0); i >= 0 {
			return i + 1
		}
		return len(k)
	}),
}

// TestReader_UntidyKeys_Model checks Get, bounded iteration both ways and
// SeekPrefixGE against the entries written, on keys of edge lengths (up
// to 64 KiB) made of 0x00 and 0xff bytes and prefixes of one another,
// with values from empty to larger than a block, under random block sizes
// (64 B to 64 KiB), restart intervals, compression and Splits.
func TestReader_UntidyKeys_Model(t *testing.T) {
	rng := seedRNG(t)
	rounds, nkeys := 4, 60
	if testing.Short() {
		rounds, nkeys = 2, 15
	}
	for round := range rounds {
		opts := WriterOptions{
			BlockSize:            64 << rng.IntN(11),
			BlockRestartInterval: 1 + rng.IntN(32),
			Compression:          Compression(rng.IntN(2)),
			FilterPolicy:         hashSetPolicy{},
			Comparer:             untidySplits[rng.IntN(len(untidySplits))],
		}
		if opts.Comparer == nil {
			opts.Comparer = base.DefaultComparer
		}
		keys := untidyKeys(rng, nkeys)
		entries := untidyEntries(rng, keys, opts.BlockSize)
		data := buildBytes(t, entries, opts)
		r := openTable(t, data, ReaderOptions{Comparer: opts.Comparer, Filters: filters(opts.FilterPolicy)})
		what := fmt.Sprintf("round %d: block %d, restart %d, %v, split %q",
			round, opts.BlockSize, opts.BlockRestartInterval, opts.Compression, opts.Comparer.SplitName)
		if err := r.Check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		randKey := func() []byte {
			k := keys[rng.IntN(len(keys))]
			switch rng.IntN(4) {
			case 0:
				return append(slices.Clone(k), byte(rng.IntN(256)))
			case 1:
				return k[:rng.IntN(len(k)+1)]
			}
			return k
		}
		checkUntidyGets(t, what, r, entries, randKey, rng)
		checkUntidyIters(t, what, r, entries, randKey, rng)
		checkUntidyPrefixSeeks(t, what, r, opts.Comparer, entries, randKey)
		r.Close()
	}
}

func checkUntidyGets(t *testing.T, what string, r *Reader, entries []testEntry, randKey func() []byte, rng *rand.Rand) {
	t.Helper()
	for range 300 {
		key := randKey()
		seq := base.SeqNum(rng.IntN(1100))
		want, wantFound := modelGet(entries, key, seq)
		v, kind, found, err := r.Get(key, seq, nil)
		if err != nil || found != wantFound || found && (kind != want.key.Kind() || !bytes.Equal(v, want.value)) {
			t.Fatalf("%s: Get(%.40q (%d bytes), %d) = %d bytes %v %v %v, want %d bytes %v %v",
				what, key, len(key), seq, len(v), kind, found, err, len(want.value), want.key.Kind(), wantFound)
		}
	}
}

func checkUntidyIters(t *testing.T, what string, r *Reader, entries []testEntry, randKey func() []byte, rng *rand.Rand) {
	t.Helper()
	for range 20 {
		var lower, upper []byte
		if rng.IntN(2) == 0 {
			lower = randKey()
		}
		if rng.IntN(2) == 0 {
			upper = randKey()
		}
		m := newIterModel(entries, lower, upper)
		it, err := r.NewIter(&IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			t.Fatal(err)
		}
		for range 60 {
			op, got, want := m.step(rng, it, randKey)
			if got != want {
				t.Fatalf("%s: bounds [%.40q, %.40q): %.200s gave %.200s, want %.200s", what, lower, upper, op, got, want)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkUntidyPrefixSeeks checks that SeekPrefixGE and the Nexts after it
// find every entry of the seek key's prefix at or after it.
func checkUntidyPrefixSeeks(t *testing.T, what string, r *Reader, cmp *base.Comparer, entries []testEntry, randKey func() []byte) {
	t.Helper()
	for range 100 {
		key := randKey()
		prefix, err := cmp.Prefix(key)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, e := range entries {
			if bytes.Compare(e.key.UserKey, key) >= 0 && cmp.HasPrefix(e.key.UserKey, prefix) {
				want = append(want, e.key.String())
			}
		}
		it, err := r.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for ok := it.SeekPrefixGE(prefix, key); ok && cmp.HasPrefix(it.Key().UserKey, prefix); ok = it.Next() {
			got = append(got, it.Key().String())
		}
		if it.Error() != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: SeekPrefixGE(%d-byte prefix, %d-byte key): %v, %d entries, want %d",
				what, len(prefix), len(key), it.Error(), len(got), len(want))
		}
		it.Close()
	}
}
