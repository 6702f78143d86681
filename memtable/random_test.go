package memtable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/testseed"
)

type entry struct {
	key   base.InternalKey
	value []byte
}

// model is the MemTable's specification: a sorted slice.
type model []entry

func (md model) get(userKey []byte, seq base.SeqNum) (entry, bool) {
	for _, e := range md {
		if bytes.Equal(e.key.UserKey, userKey) && e.key.Visible(seq) {
			return e, true
		}
	}
	return entry{}, false
}

// within returns the entries whose user keys lie in [lower, upper).
func (md model) within(lower, upper []byte) model {
	var out model
	for _, e := range md {
		if (lower == nil || bytes.Compare(e.key.UserKey, lower) >= 0) && (upper == nil || bytes.Compare(e.key.UserKey, upper) < 0) {
			out = append(out, e)
		}
	}
	return out
}

func randomKey(rng *rand.Rand) []byte {
	k := make([]byte, rng.IntN(4))
	for i := range k {
		k[i] = 'a' + byte(rng.IntN(4))
	}
	return k
}

// wrappedBytewise orders keys as bytes.Compare does, through a function
// of its own, so that the memtable does not take it for bytewise: its
// nodes carry no key prefixes unless abbreviate is given as its
// AbbreviatedKey.
func wrappedBytewise(abbreviate func([]byte) uint64) *Comparer {
	return &Comparer{Compare: func(a, b []byte) int { return bytes.Compare(a, b) }, AbbreviatedKey: abbreviate, Name: "wrapped"}
}

// firstByte summarizes a key by its first byte alone: many keys share a
// summary, so searches fall through to the keys often.
func firstByte(k []byte) uint64 {
	if len(k) == 0 {
		return 0
	}
	return uint64(k[0]) + 1
}

// TestMemTable_RandomAgainstModel checks the table against the model
// under the default (bytewise) comparer, under a comparer that orders
// the same way but that the table cannot summarize keys for, and under
// one whose AbbreviatedKey summarizes them coarsely.
func TestMemTable_RandomAgainstModel(t *testing.T) {
	for _, c := range []struct {
		name string
		cmp  *Comparer
	}{
		{"bytewise", nil},
		{"unabbreviated", wrappedBytewise(nil)},
		{"abbreviated", wrappedBytewise(firstByte)},
	} {
		t.Run(c.name, func(t *testing.T) { testRandomAgainstModel(t, c.cmp) })
	}
}

func testRandomAgainstModel(t *testing.T, cmp *Comparer) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	m := New(cmp)
	var md model
	n := 3000
	if testing.Short() {
		n = 500
	}
	seqs := rng.Perm(n)
	for i := range n {
		kind := base.Kind(rng.IntN(2))
		key := base.MakeInternalKey(randomKey(rng), base.SeqNum(seqs[i]+1), kind)
		value := randomKey(rng)
		m.Add(key, value)
		md = append(md, entry{key.Clone(), value})
		if i%(n/5) == 0 || i == n-1 {
			slices.SortFunc(md, func(a, b entry) int { return base.InternalCompare(bytes.Compare, a.key, b.key) })
			checkModel(t, rng, m, md, n)
		}
	}
}

func checkModel(t *testing.T, rng *rand.Rand, m *MemTable, md model, n int) {
	t.Helper()
	if m.Len() != len(md) {
		t.Fatalf("Len = %d, want %d", m.Len(), len(md))
	}
	for range 300 {
		k, seq := randomKey(rng), base.SeqNum(rng.IntN(n+2))
		v, kind, found := m.Get(k, seq)
		want, wantFound := md.get(k, seq)
		if found != wantFound || (found && (kind != want.key.Kind() || !bytes.Equal(v, want.value))) {
			t.Fatalf("Get(%q, %d) = %q, %s, %v; want %s %q", k, seq, v, kind, found, want.key, want.value)
		}
	}
	for range 30 {
		var lower, upper []byte
		if rng.IntN(2) == 0 {
			lower = randomKey(rng)
		}
		if rng.IntN(2) == 0 {
			upper = randomKey(rng)
		}
		checkIterOps(t, rng, m.NewIter(lower, upper), md.within(lower, upper), func() []byte { return randomKey(rng) })
	}
}

// checkIterOps drives it with random operations, seeking to keys from
// seekKey, tracking the expected position in want (-1: invalid).
func checkIterOps(t *testing.T, rng *rand.Rand, it base.InternalIterator, want model, seekKey func() []byte) {
	t.Helper()
	pos := -1
	for range 60 {
		var ok bool
		var op string
		switch r := rng.IntN(10); {
		case r == 0:
			op, ok, pos = "First", it.First(), 0
		case r == 1:
			op, ok, pos = "Last", it.Last(), len(want)-1
		case r == 2:
			k := seekKey()
			op, ok = fmt.Sprintf("SeekGE %.40q", k), it.SeekGE(k)
			pos = slices.IndexFunc(want, func(e entry) bool { return bytes.Compare(e.key.UserKey, k) >= 0 })
		case r == 3:
			k := seekKey()
			op, ok, pos = fmt.Sprintf("SeekLT %.40q", k), it.SeekLT(k), -1
			for i, e := range want {
				if bytes.Compare(e.key.UserKey, k) < 0 {
					pos = i
				}
			}
		case r < 7:
			op, ok = "Next", it.Next()
			if pos >= 0 {
				pos++
			}
		default:
			op, ok = "Prev", it.Prev()
			if pos >= 0 {
				pos--
			}
		}
		if pos >= len(want) {
			pos = -1
		}
		if ok != (pos >= 0) || ok != it.Valid() {
			t.Fatalf("%s: ok=%v valid=%v, want position %d of %d", op, ok, it.Valid(), pos, len(want))
		}
		if ok && (base.InternalCompare(bytes.Compare, it.Key(), want[pos].key) != 0 || !bytes.Equal(it.Value(), want[pos].value)) {
			t.Fatalf("%s: at %s, want %s", op, it.Key(), want[pos].key)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMemTable_AscendingRunsAgainstModel adds keys in sorted runs of random
// lengths, the shape Add's splice hint speeds up, mixed with single keys
// out of order and repeats of a key just added (refused), and checks the
// table against the model.
func TestMemTable_AscendingRunsAgainstModel(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	m := New(nil)
	var md model
	cmp := func(a, b entry) int { return base.InternalCompare(bytes.Compare, a.key, b.key) }
	seq := base.SeqNum(0)
	for round := range 40 {
		run := make([]entry, 1+rng.IntN(60))
		for i := range run {
			seq++
			run[i] = entry{base.MakeInternalKey(randomKey(rng), seq, base.Kind(rng.IntN(2))), randomKey(rng)}
		}
		if rng.IntN(4) > 0 {
			slices.SortFunc(run, cmp)
		}
		for _, e := range run {
			if err := m.Add(e.key, e.value); err != nil {
				t.Fatalf("Add(%s): %v", e.key, err)
			}
			md = append(md, e)
			if rng.IntN(8) == 0 {
				if err := m.Add(e.key, nil); !errors.Is(err, ErrDuplicateKey) {
					t.Fatalf("second Add(%s) = %v, want ErrDuplicateKey", e.key, err)
				}
			}
		}
		if round%8 == 7 {
			slices.SortFunc(md, cmp)
			checkModel(t, rng, m, md, int(seq))
		}
	}
}
